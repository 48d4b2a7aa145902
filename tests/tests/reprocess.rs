//! `faultline reprocess`: bulk re-analysis at low priority, idempotent, with
//! a summary of changed verdicts; the original runs keep their results.

use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use faultline_tests::{TestDb, oom_log, wait_terminal, wait_until};
use serde_json::Value;
use uuid::Uuid;

/// Seeds `n` events received over the last hour, each with a finished run
/// of `status` and `category`.
async fn seed(db: &TestDb, n: i32, status: &str, category: &str) {
    sqlx::query(
        "WITH e AS (
             INSERT INTO failure_events (id, dedup_key, source, log_name, received_at)
             SELECT gen_random_uuid(), 'past:' || $3 || ':' || g, 'cli', 'past-' || g || '.log',
                    now() - interval '1 hour' + make_interval(secs => g)
             FROM generate_series(1, $1) g RETURNING id, received_at)
         INSERT INTO analysis_runs (id, event_id, status, priority, max_iterations, max_attempts,
                                    category, confidence, result, created_at, finished_at)
         SELECT gen_random_uuid(), e.id, $2, 10, 5, 5, $3, 0.9,
                jsonb_build_object('category', $3, 'root_cause', 'seeded'), e.received_at, e.received_at
         FROM e",
    )
    .bind(n)
    .bind(status)
    .bind(category)
    .execute(&db.pool)
    .await
    .unwrap();
}

async fn scalar(db: &TestDb, sql: &str) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_string()))
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

fn window() -> (String, String) {
    let now = Utc::now();
    (
        (now - chrono::Duration::days(1)).to_rfc3339_opts(SecondsFormat::Secs, true),
        (now + chrono::Duration::minutes(1)).to_rfc3339_opts(SecondsFormat::Secs, true),
    )
}

#[tokio::test]
async fn a_live_failure_overtakes_a_reprocess_of_a_thousand_events() {
    let db = TestDb::new().await;
    seed(&db, 1000, "completed", "INFRA_ERROR").await;
    let (since, until) = window();
    let args = ["reprocess", "--since", &since, "--until", &until];

    let dry = db.cli_ok(&[&args[..], &["--dry-run"]].concat(), &[]);
    assert!(dry.contains("would enqueue 1000"), "{dry}");
    assert_eq!(
        scalar(&db, "SELECT count(*) FROM analysis_runs").await,
        1000
    );
    assert_eq!(
        scalar(&db, "SELECT count(*) FROM reprocess_batches").await,
        0
    );
    assert_eq!(
        scalar(&db, "SELECT count(*) FROM apalis.jobs").await,
        0,
        "dry run creates nothing"
    );

    let out = db.cli_ok(&args, &[]);
    assert!(out.contains("enqueued 1000 new"), "{out}");
    assert_eq!(
        scalar(&db, "SELECT count(*) FROM analysis_runs WHERE reprocess_batch IS NOT NULL AND priority = 1 AND reprocess_of IS NOT NULL").await,
        1000
    );
    assert_eq!(
        scalar(&db, "SELECT count(*) FROM apalis.jobs WHERE priority = 1").await,
        1000
    );
    // The same reprocess again: same batch, no new run, no new task.
    let again = db.cli_ok(&args, &[]);
    assert!(
        again.contains("enqueued 0 new re-analyses (1000 in the batch)"),
        "{again}"
    );
    assert_eq!(
        scalar(&db, "SELECT count(*) FROM analysis_runs").await,
        2000
    );
    assert_eq!(scalar(&db, "SELECT count(*) FROM apalis.jobs").await, 1000);

    // A worker with modest concurrency starts on the batch…
    let _worker = db.worker("w1", &[("FAULTLINE_WORKER_CONCURRENCY", "2")]);
    let batch_done = "SELECT count(*) FROM analysis_runs WHERE reprocess_batch IS NOT NULL
                      AND status IN ('completed', 'needs_review', 'failed')";
    wait_until(Duration::from_secs(60), || async {
        (scalar(&db, batch_done).await >= 10).then_some(())
    })
    .await;
    // …then a live failure arrives, and finishes while the batch still runs.
    let live = db.enqueue(&db.write("oom.log", oom_log()), &[]);
    assert_eq!(
        wait_terminal(&db.pool, live, Duration::from_secs(60)).await,
        "completed"
    );
    let finished = scalar(&db, batch_done).await;
    assert!(
        finished < 1000,
        "the live run finished first ({finished}/1000 reprocessed)"
    );
    // The originals keep their results.
    assert_eq!(
        scalar(&db, "SELECT count(*) FROM analysis_runs WHERE reprocess_batch IS NULL AND status = 'completed' AND result ->> 'root_cause' = 'seeded'").await,
        1000
    );
}

#[tokio::test]
async fn reprocess_summarises_changed_verdicts_and_refuses_bad_input() {
    let db = TestDb::new().await;
    seed(&db, 3, "completed", "CODE_ERROR").await;
    seed(&db, 2, "needs_review", "TEST_FAILURE").await;
    let (since, until) = window();

    let bad = db.cli(&["reprocess", "--since", &until, "--until", &since], &[]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("must be before --until"));
    let bad = db.cli(
        &["reprocess", "--since", "last week", "--until", "today"],
        &[],
    );
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--since: \"last week\" is not a time"));
    let bad = db.cli(
        &[
            "reprocess",
            "--since",
            &since,
            "--until",
            &until,
            "--status",
            "running",
        ],
        &[],
    );
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--status"));
    assert_eq!(
        scalar(&db, "SELECT count(*) FROM reprocess_batches").await,
        0
    );

    let args = [
        "reprocess",
        "--since",
        &since,
        "--until",
        &until,
        "--category",
        "CODE_ERROR",
    ];
    let dry = db.cli_ok(&[&args[..], &["--dry-run", "--json"]].concat(), &[]);
    let dry: Value = serde_json::from_str(&dry).unwrap();
    assert_eq!(dry["would_enqueue"], 3, "only the CODE_ERROR events");

    let _worker = db.worker("w1", &[]);
    let out = db.cli_ok(
        &[&args[..], &["--wait", "--timeout", "2m", "--json"]].concat(),
        &[],
    );
    let summary: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["runs"], 3, "{summary}");
    assert_eq!(summary["finished"], 3);
    // Seeded runs have no log: the re-analysis cannot confirm CODE_ERROR.
    assert_eq!(summary["changed"], 3, "{summary}");
    assert_eq!(summary["by_category"]["CODE_ERROR"]["changed"], 3);
    let outcomes = summary["by_outcome"].as_object().unwrap();
    assert_eq!(
        outcomes.values().map(|v| v.as_i64().unwrap()).sum::<i64>(),
        3
    );
    assert!(
        outcomes.keys().all(|k| k.starts_with("completed -> ")),
        "{summary}"
    );

    // `reprocess status` reports the same batch by id.
    let batch: Uuid = summary["batch"]["id"].as_str().unwrap().parse().unwrap();
    let status = db.cli_ok(&["reprocess", "status", &batch.to_string()], &[]);
    assert!(
        status.contains("3/3 finished, 3 verdict(s) changed"),
        "{status}"
    );
    // Reprocessed runs do not notify anyone.
    assert_eq!(
        scalar(&db, "SELECT count(*) FROM notification_outbox").await,
        0
    );
}

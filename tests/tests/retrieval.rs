//! Retrieval beyond the knowledge base, against real Postgres and real
//! workers: the error library's text tier, failure history per job and
//! test, and context-aware routing of the tools by category.

use std::time::Duration;

use faultline_shared::queue::Broker;
use faultline_shared::storage::{
    self,
    events::NewEvent,
    history::{self, HistoryError, NewOutcome},
    runs::RunLimits,
    similar,
};
use faultline_tests::{TestDb, oom_log, wait_terminal};
use serde_json::Value;
use uuid::Uuid;

const LIMITS: RunLimits = RunLimits {
    max_iterations: 5,
    max_attempts: 5,
    priority: 10,
    shadowed: false,
};

/// The journal's actions, in order.
async fn actions(db: &TestDb, run: Uuid) -> Vec<String> {
    sqlx::query_scalar("SELECT action FROM run_steps WHERE run_id = $1 ORDER BY iteration")
        .bind(run)
        .fetch_all(&db.pool)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failure_with_another_fingerprint_but_similar_text_is_found_by_trigrams() {
    let db = TestDb::new().await;
    let worker = db.worker("w", &[]);
    let first = db.enqueue(&db.write("heap.log", oom_log()), &[]);
    assert_eq!(
        wait_terminal(&db.pool, first, Duration::from_secs(60)).await,
        "completed"
    );
    // A human confirmed the first analysis in review.
    sqlx::query(
        "INSERT INTO review_items (id, run_id, reason, status) VALUES ($1, $2, 'spot check', 'resolved')",
    )
    .bind(Uuid::now_v7())
    .bind(first)
    .execute(&db.pool)
    .await
    .unwrap();

    // Same failure, different wording of the heap error: another fingerprint.
    let variant = oom_log().replace(
        "java.lang.OutOfMemoryError: Java heap space",
        "java.lang.OutOfMemoryError: Java heap space (requested array exceeds VM limit)",
    );
    let second = db.enqueue(&db.write("heap2.log", variant), &[]);
    wait_terminal(&db.pool, second, Duration::from_secs(60)).await;
    drop(worker);

    let fingerprints: Vec<Option<String>> =
        sqlx::query_scalar("SELECT fingerprint FROM analysis_runs WHERE id = ANY($1)")
            .bind([first, second])
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_ne!(fingerprints[0], fingerprints[1], "the fingerprints differ");
    let obs = db.observation(second, "similar_failures").await;
    let matches = obs["matches"].as_array().unwrap();
    assert_eq!(matches.len(), 1, "{obs:#}");
    let m = &matches[0];
    assert_eq!(m["run_id"], first.to_string());
    assert_eq!(m["tier"], "trigram");
    assert_eq!(m["source"], "analysis");
    assert_eq!(m["category"], "INFRA_ERROR");
    assert_eq!(m["human_confirmed"], true);
    assert!(m["root_cause"].as_str().unwrap().contains("heap"), "{m}");
    let score = m["score"].as_f64().unwrap();
    assert!((0.3..1.0).contains(&score), "{score}");
    let trace = db.cli_ok(&["trace", &second.to_string()], &[]);
    assert!(
        trace.contains(&format!(
            "INFRA_ERROR {first} (trigram, {score:.2}, confirmed)"
        )),
        "{trace}"
    );

    // The full-text tier finds it by shared words, where trigrams are too few.
    let text = "heap space exhausted while the executor was running unrelated words here";
    assert!(
        similar::by_trigram(&db.pool, text, &[second], 5)
            .await
            .unwrap()
            .is_empty()
    );
    let found = similar::by_fulltext(&db.pool, text, &[second], 5)
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].run_id, first);
    assert!(found[0].score > 0.0 && found[0].score < 1.0);
    // Tiers never list a run twice, nor the run itself.
    let all = similar::tiered(
        &db.pool,
        &[second],
        fingerprints[1].as_deref().unwrap(),
        Some(text),
        5,
    )
    .await
    .unwrap();
    assert_eq!(all.len(), 1);
}

fn event(key: &str, job: &str, test: &str, commit: &str) -> NewEvent {
    NewEvent {
        dedup_key: key.into(),
        source: "jenkins".into(),
        job_name: Some(job.into()),
        test_name: Some(test.into()),
        commit_sha: Some(commit.into()),
        ..NewEvent::default()
    }
}

fn pass(key: &str, job: &str, test: &str, commit: &str) -> NewOutcome {
    NewOutcome {
        dedup_key: key.into(),
        source: "jenkins".into(),
        job_name: Some(job.into()),
        test_name: Some(test.into()),
        commit_sha: Some(commit.into()),
        outcome: "success".into(),
        ..NewOutcome::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn history_counts_streaks_and_flakiness_from_failures_and_passes() {
    let db = TestDb::new().await;
    let (job, test) = ("ledger-api", "BatchTest.case7");
    let ingest = |key: &'static str, commit: &'static str| {
        let pool = db.pool.clone();
        async move {
            storage::ingest(
                &pool,
                &Broker::Postgres,
                &event(key, job, test, commit),
                &b"boom"[..],
                LIMITS,
            )
            .await
            .unwrap()
        }
    };
    ingest("f1", "c1").await;
    assert!(
        history::record_outcome(&db.pool, &pass("p1", job, test, "c1"))
            .await
            .unwrap()
    );
    history::record_outcome(&db.pool, &pass("p2", job, test, "c2"))
        .await
        .unwrap();
    ingest("f3", "c3").await;
    ingest("f4", "c4").await;
    // Another job's failure is not this job's history.
    storage::ingest(
        &db.pool,
        &Broker::Postgres,
        &event("other", "billing", test, "c4"),
        &b"x"[..],
        LIMITS,
    )
    .await
    .unwrap();
    // A redelivered pass is recorded once.
    assert!(
        !history::record_outcome(&db.pool, &pass("p2", job, test, "c2"))
            .await
            .unwrap()
    );

    let h = history::history(&db.pool, Some(job), Some(test), 10)
        .await
        .unwrap();
    assert_eq!((h.failures, h.passes), (3, 2));
    assert_eq!(h.consecutive_failures, 2, "c3 and c4 since the pass on c2");
    assert_eq!(h.last_passing_commit.as_deref(), Some("c2"));
    assert!(h.flaky, "c1 both passed and failed");
    assert_eq!(h.flaky_commits, vec!["c1".to_string()]);
    let first_received: chrono::DateTime<chrono::Utc> =
        sqlx::query_scalar("SELECT received_at FROM failure_events WHERE dedup_key = 'f1'")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(h.first_seen, Some(first_received));
    let order: Vec<(&str, Option<&str>)> = h
        .recent
        .iter()
        .map(|o| (o.outcome.as_str(), o.commit_sha.as_deref()))
        .collect();
    assert_eq!(
        order,
        vec![
            ("failure", Some("c4")),
            ("failure", Some("c3")),
            ("success", Some("c2")),
            ("success", Some("c1")),
            ("failure", Some("c1")),
        ]
    );
    // By test alone, the other job's failure counts too.
    let by_test = history::history(&db.pool, None, Some(test), 10)
        .await
        .unwrap();
    assert_eq!(by_test.failures, 4);

    // Bad input gets a precise error and stores nothing.
    let nobody = NewOutcome {
        dedup_key: "n".into(),
        source: "cli".into(),
        outcome: "success".into(),
        ..NewOutcome::default()
    };
    assert!(matches!(
        history::record_outcome(&db.pool, &nobody).await,
        Err(HistoryError::NoSubject)
    ));
    let mut odd = pass("odd", job, test, "c5");
    odd.outcome = "skipped".into();
    assert!(matches!(
        history::record_outcome(&db.pool, &odd).await,
        Err(HistoryError::BadOutcome(o)) if o == "skipped"
    ));
    assert!(matches!(
        history::history(&db.pool, None, None, 10).await,
        Err(HistoryError::NoSubject)
    ));
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM ci_outcomes")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(stored, 2);
}

/// A Go test failure the classifier files as TEST_FAILURE.
const GO_TEST_LOG: &str = "\
=== RUN   TestCreateUser
--- FAIL: TestCreateUser (0.01s)
    user_test.go:42: got status 500, want 201
    user_test.go:57: got 0 users, want 1
FAIL\tgithub.com/acme/api/internal/users\t0.231s
";

#[tokio::test(flavor = "multi_thread")]
async fn routing_follows_the_category_infra_reads_no_code_and_tests_read_their_history() {
    let db = TestDb::new().await;
    // The test passed on this commit before: flaky.
    history::record_outcome(
        &db.pool,
        &NewOutcome {
            dedup_key: "pass".into(),
            source: "cli".into(),
            job_name: Some("api".into()),
            test_name: Some("TestCreateUser".into()),
            outcome: "success".into(),
            ..NewOutcome::default()
        },
    )
    .await
    .unwrap();
    let _worker = db.worker("w", &[]);
    let infra = db.enqueue(&db.write("oom.log", oom_log()), &[]);
    let test = db
        .cli_ok(
            &[
                "enqueue",
                db.write("go.log", GO_TEST_LOG).to_str().unwrap(),
                "--job",
                "api",
                "--test",
                "TestCreateUser",
            ],
            &[],
        )
        .parse::<Uuid>()
        .unwrap();
    wait_terminal(&db.pool, infra, Duration::from_secs(60)).await;
    wait_terminal(&db.pool, test, Duration::from_secs(60)).await;

    let infra_actions = actions(&db, infra).await;
    assert_eq!(
        infra_actions,
        [
            "log_excerpt",
            "search_knowledge",
            "similar_failures",
            "final_answer"
        ],
        "infra: knowledge base and error library only"
    );
    // TODO(github_file, github_blame, github_commits, github_search): once the
    // GitHub tools are in the tool belt, configure them against a fake GitHub
    // here and assert that the infra run never calls them while a code error
    // with weak retrieval does (the table's rule is unit-tested in
    // worker/src/agent/routing.rs).
    assert!(infra_actions.iter().all(|a| !a.starts_with("github_")));

    let test_actions = actions(&db, test).await;
    assert_eq!(
        test_actions[..2],
        ["log_excerpt", "failure_history"],
        "a test failure consults its history first: {test_actions:?}"
    );
    let h = db.observation(test, "failure_history").await;
    assert_eq!(h["job"], "api");
    assert_eq!(h["history"]["failures"], 1);
    assert_eq!(h["history"]["passes"], 1);
    assert_eq!(h["history"]["consecutive_failures"], 1);
}

/// A Gradle build that could not resolve a download host: an INFRA_ERROR
/// like a heap OOM, sharing only build-tool words with one.
const DNS_LOG: &str = "\
Started by GitHub push
Checking out Revision 9b1d0e4
> Task :compileJava
Provisioning a Java toolchain (languageVersion=17) from https://api.foojay.io
java.net.UnknownHostException: api.foojay.io: Temporary failure in name resolution while downloading the Java toolchain
> Task :compileJava FAILED
FAILURE: Build failed with an exception.
BUILD FAILED in 41s
";

/// The run's final answer (`analysis_runs.result`).
async fn result(db: &TestDb, run: Uuid) -> Value {
    sqlx::query_scalar("SELECT result FROM analysis_runs WHERE id = $1")
        .bind(run)
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

/// Analyses `log` end to end and returns the run once it is terminal.
async fn analyse(db: &TestDb, name: &str, log: &str) -> Uuid {
    let run = db.enqueue(&db.write(name, log), &[]);
    let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    assert!(
        ["completed", "needs_review"].contains(&status.as_str()),
        "{name}: {status}"
    );
    run
}

/// Whether the answer cites `run` or counts it as retrieval strength.
fn relies_on(answer: &Value, run: Uuid) -> (bool, bool) {
    let id = run.to_string();
    let cited = answer["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["quote"] == id);
    let counted = answer["confidence_parts"]["retrieval_from"]
        .as_array()
        .unwrap_or_else(|| panic!("no retrieval_from in {answer:#}"))
        .iter()
        .any(|s| s["run_id"] == id);
    (cited, counted)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unrelated_past_failure_below_the_relevance_floor_is_neither_cited_nor_counted() {
    let db = TestDb::new().await;
    let _worker = db.worker("w", &[]);
    let dns = analyse(&db, "dns.log", DNS_LOG).await;
    // Same category as the OOM: only relevance can tell them apart.
    assert_eq!(result(&db, dns).await["category"], "INFRA_ERROR");
    let oom = analyse(&db, "oom.log", &oom_log()).await;

    let obs = db.observation(oom, "similar_failures").await;
    let dns_id = dns.to_string();
    assert!(
        obs["matches"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["run_id"] != dns_id),
        "{obs:#}"
    );
    // Still listed, for transparency, with its weak full-text score.
    let below = obs["below_relevance_floor"].as_array().unwrap();
    let listed = below
        .iter()
        .find(|m| m["run_id"] == dns_id)
        .unwrap_or_else(|| panic!("{obs:#}"));
    assert_eq!(listed["tier"], "fulltext");
    assert!(listed["score"].as_f64().unwrap() < 0.3, "{listed}");

    let answer = result(&db, oom).await;
    assert_eq!(answer["category"], "INFRA_ERROR");
    assert_eq!(relies_on(&answer, dns), (false, false), "{answer:#}");
    let trace = db.cli_ok(&["trace", &oom.to_string()], &[]);
    assert!(trace.contains("below relevance floor"), "{trace}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_genuinely_similar_past_failure_is_still_cited_and_counted() {
    let db = TestDb::new().await;
    let _worker = db.worker("w", &[]);
    let stamp = |log: String, at: &str| -> String {
        log.lines()
            .map(|l| format!("{at} {l}\n"))
            .collect::<String>()
    };
    // The same heap OOM yesterday, in another module's task and executor.
    let past = stamp(
        oom_log()
            .replace(":test", ":integrationTest")
            .replace("Gradle Test Executor 1", "Gradle Test Executor 7")
            .replace("BatchTest", "LedgerIT"),
        "2026-11-23T02:14:09.512Z",
    );
    let past = analyse(&db, "past.log", &past).await;
    let dns = analyse(&db, "dns.log", DNS_LOG).await;
    let now = analyse(
        &db,
        "now.log",
        &stamp(oom_log(), "2026-11-24T09:41:57.004Z"),
    )
    .await;

    let obs = db.observation(now, "similar_failures").await;
    let past_id = past.to_string();
    let m = obs["matches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["run_id"] == past_id)
        .unwrap_or_else(|| panic!("{obs:#}"));
    assert_eq!(m["category"], "INFRA_ERROR");
    // The unrelated one is set apart, not mixed in.
    assert!(
        obs["below_relevance_floor"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["run_id"] == dns.to_string()),
        "{obs:#}"
    );
    let answer = result(&db, now).await;
    assert_eq!(relies_on(&answer, past), (true, true), "{answer:#}");
    assert_eq!(relies_on(&answer, dns), (false, false), "{answer:#}");
}

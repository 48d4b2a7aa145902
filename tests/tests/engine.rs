//! Acceptance tests of the durable engine: real binaries, real Postgres.

use std::time::Duration;

use faultline_tests::{TestDb, oom_log, run_state, wait_terminal, wait_until};
use nix::sys::signal::Signal;
use uuid::Uuid;

async fn tool_counts(db: &TestDb, run: Uuid) -> Vec<(i32, String, i64)> {
    faultline_shared::storage::steps::tool_execution_counts(&db.pool, run)
        .await
        .unwrap()
}

async fn journal(db: &TestDb, run: Uuid) -> Vec<(i32, String, String)> {
    sqlx::query_as(
        "SELECT iteration, action, worker_id FROM run_steps WHERE run_id = $1 ORDER BY iteration",
    )
    .bind(run)
    .fetch_all(&db.pool)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn crash_resume() {
    let db = TestDb::new().await;
    let log = db.write("oom.log", oom_log());
    let run = db.enqueue(&log, &[]);
    // Each step lingers before its commit, so the kill lands mid-iteration.
    let mut first = db.worker("first", &[("FAULTLINE_CHAOS_STEP_DELAY_MS", "600")]);
    wait_until(Duration::from_secs(60), || async {
        (run_state(&db.pool, run).await.1 >= 2).then_some(())
    })
    .await;
    first.kill9();
    let (status, committed_before_kill) = run_state(&db.pool, run).await;
    assert!(
        !["completed", "needs_review", "failed"].contains(&status.as_str()),
        "run finished before the kill"
    );
    let counts_at_kill = tool_counts(&db, run).await;

    let _second = db.worker("second", &[]);
    let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    assert!(
        status == "completed" || status == "needs_review",
        "run ended {status}"
    );

    let steps = journal(&db, run).await;
    let (_, iterations) = run_state(&db.pool, run).await;
    assert!(
        iterations >= 4,
        "a run of at least 4 iterations, got {iterations}"
    );
    let numbers: Vec<i32> = steps.iter().map(|s| s.0).collect();
    assert_eq!(
        numbers,
        (1..=iterations).collect::<Vec<_>>(),
        "exactly one journal row per iteration"
    );
    for (iteration, _, worker) in &steps {
        let expected = if *iteration <= committed_before_kill {
            "first"
        } else {
            "second"
        };
        assert_eq!(
            worker, expected,
            "iteration {iteration} committed by {worker}"
        );
    }
    // No journaled tool call ran again: every iteration committed before the
    // kill still has exactly the executions it had then (one each).
    let counts = tool_counts(&db, run).await;
    for (iteration, tool, n) in &counts {
        if *iteration <= committed_before_kill {
            assert_eq!(
                *n, 1,
                "tool {tool} of journaled iteration {iteration} executed {n} times"
            );
            assert!(counts_at_kill.contains(&(*iteration, tool.clone(), 1)));
        } else {
            // Only the call in flight at the crash may repeat.
            assert!(*n <= 2, "iteration {iteration} executed {n} times");
        }
    }
}

/// With the default settings (a 10 s lease), a run held by a worker that is
/// `kill -9`ed resumes on another worker within 5 s: Postgres drops the dead
/// process's session lock at once, and the reconciler takes its runs over
/// after the session grace, long before their leases would have expired.
#[tokio::test(flavor = "multi_thread")]
async fn a_killed_worker_s_run_resumes_within_five_seconds_with_default_settings() {
    let db = TestDb::new().await;
    let log = db.write("oom.log", oom_log());
    let run = db.enqueue(&log, &[]);
    // The first worker sits inside its first step, holding the lease.
    let mut first = db.worker_with_defaults("first", &[("FAULTLINE_CHAOS_STEP_DELAY_MS", "60000")]);
    first.wait_holding_a_step().await;
    let second = db.worker_with_defaults("second", &[]);
    second.http_base().await;
    let lease_expires = db.lease_expires_at(run, "first").await;
    let killed_at = db.now().await;
    first.kill9();
    let resumed_at = db.committed_at(run, 1).await;
    let resume = (resumed_at - killed_at).num_milliseconds();
    assert!(resume <= 5_000, "resumed {resume} ms after the kill");
    assert!(
        resumed_at < lease_expires,
        "resumed at {resumed_at}, not before the dead worker's lease expired at {lease_expires}"
    );
    let attempts = faultline_shared::storage::steps::list_attempts(&db.pool, run)
        .await
        .unwrap();
    assert!(
        attempts.iter().any(|a| a.error.contains("worker gone")),
        "take-over by the ended session recorded: {attempts:?}"
    );
    assert!(
        wait_terminal(&db.pool, run, Duration::from_secs(60)).await != "failed",
        "the run completes on the second worker"
    );
}

/// A worker restarted under the same id (a container keeps its hostname)
/// takes back at once what its killed predecessor held: it expires those
/// leases before it claims anything, instead of waiting for them to
/// expire (its new session lock makes the old session look alive).
#[tokio::test(flavor = "multi_thread")]
async fn a_worker_restarted_with_its_id_resumes_its_predecessor_s_runs_at_once() {
    let db = TestDb::new().await;
    let run = db.enqueue(&db.write("oom.log", oom_log()), &[]);
    // A lease far longer than any start-up: resuming before it expires
    // shows the restarted worker did not wait for it, however slow the
    // machine.
    let mut before = db.worker_with_defaults(
        "same",
        &[
            ("FAULTLINE_CHAOS_STEP_DELAY_MS", "60000"),
            ("FAULTLINE_LEASE_TTL_MS", "60000"),
        ],
    );
    before.wait_holding_a_step().await;
    let lease_expires = db.lease_expires_at(run, "same").await;
    before.kill9();
    let after = db.worker_with_defaults("same", &[("FAULTLINE_LEASE_TTL_MS", "60000")]);
    // Counted from the restarted worker being up, not from the kill: a
    // loaded machine can take seconds to start a process, which is not
    // what this measures.
    after.http_base().await;
    let up_at = db.now().await;
    let resumed_at = db.committed_at(run, 1).await;
    let resume = (resumed_at - up_at).num_milliseconds();
    // Well under the 60 s lease: a worker that waited for it would take
    // a minute; a loaded 2-core machine has taken 6 s to do it at once.
    assert!(
        resume <= 20_000,
        "resumed {resume} ms after the restarted worker was up"
    );
    assert!(
        resumed_at < lease_expires,
        "resumed at {resumed_at}, not before the killed predecessor's lease expired at {lease_expires}"
    );
    assert!(
        wait_terminal(&db.pool, run, Duration::from_secs(60)).await != "failed",
        "the run completes on the restarted worker"
    );
    let repeated: i64 = sqlx::query_scalar(
        "SELECT count(*) - count(DISTINCT iteration) FROM tool_invocations WHERE run_id = $1",
    )
    .bind(run)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert!(repeated <= 1, "only the killed step may repeat: {repeated}");
}

/// A resumed run does not queue behind runs waiting for a slot.
#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_run_goes_ahead_of_the_backlog() {
    let db = TestDb::new().await;
    let resume = faultline_tests::a_resumed_run_goes_ahead_of_the_backlog(&db, &[]).await;
    assert!(
        resume <= Duration::from_secs(6),
        "resumed {resume:?} after the kill"
    );
}

/// A worker whose database goes away for a while (a restart, a failover)
/// takes step tasks again as soon as it is back, not when its consumer's
/// backoff (0.5, 1, 2, 4, 8 s …) next comes round: after a 10 s outage
/// that would be about 5 s later.
#[tokio::test(flavor = "multi_thread")]
async fn a_worker_consumes_again_as_soon_as_its_database_is_back() {
    use sqlx::Connection;
    let db = TestDb::new().await;
    let w = db.worker_with_defaults("w", &[]);
    w.http_base().await;
    let mut admin = sqlx::PgConnection::connect(&faultline_tests::admin_url())
        .await
        .unwrap();
    let allow = |on: bool| {
        sqlx::AssertSqlSafe(format!("ALTER DATABASE {} ALLOW_CONNECTIONS {on}", db.name))
    };
    sqlx::query(allow(false)).execute(&mut admin).await.unwrap();
    sqlx::query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1")
        .bind(&db.name)
        .execute(&mut admin)
        .await
        .unwrap();
    wait_until(Duration::from_secs(30), || async {
        w.stderr().contains("step consumer failed").then_some(())
    })
    .await;
    // The outage itself: the consumer fails again at about 0.5, 1.5, 3.5
    // and 7.5 s, so the backoff's next restart is at about 15.5 s.
    tokio::time::sleep(Duration::from_secs(10)).await;
    sqlx::query(allow(true)).execute(&mut admin).await.unwrap();
    let back = std::time::Instant::now();
    let run = db.enqueue(&db.write("oom.log", oom_log()), &[]);
    wait_until(Duration::from_secs(30), || async {
        (run_state(&db.pool, run).await.1 >= 1).then_some(())
    })
    .await;
    let first_step = back.elapsed();
    assert!(
        first_step <= Duration::from_secs(4),
        "first step {first_step:?} after the database came back"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn stale_worker_is_fenced() {
    let db = TestDb::new().await;
    let log = db.write("oom.log", oom_log());
    let run = db.enqueue(&log, &[]);
    let stale = db.worker("stale", &[("FAULTLINE_CHAOS_STEP_DELAY_MS", "2500")]);
    // Freeze the worker mid-step, holding the lease: its tool has run and it
    // is about to commit (the chaos delay sits between the two).
    stale.wait_holding_a_step().await;
    stale.signal(Signal::SIGSTOP);

    // Its lease expires, another worker takes over and finishes the run.
    let _fresh = db.worker("fresh", &[]);
    wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    let before = journal(&db, run).await;

    // The stale worker wakes up and tries to commit: it must be fenced.
    stale.signal(Signal::SIGCONT);
    let fenced = wait_until(Duration::from_secs(20), || async {
        let err = stale.stderr();
        if err.contains("commit fenced") {
            Some(true)
        } else {
            err.contains("lease lost").then_some(false)
        }
    })
    .await;
    let after = journal(&db, run).await;
    assert_eq!(before, after, "the stale worker changed the journal");
    assert!(
        after.iter().all(|(_, _, w)| w == "fresh"),
        "a stale write landed: {after:?}"
    );
    // The stale worker did execute its tool (it was mid-step), but its
    // result never landed. The tool is local (it reads our database), so its
    // call is audited by the commit attempt, fenced or not; a step abandoned
    // on a lost lease leaves no audit unless its commit was already on the
    // wire when the loss was noticed.
    let stale_calls: Vec<(String, Option<bool>)> = sqlx::query_as(
        "SELECT tool, ok FROM tool_invocations WHERE run_id = $1 AND worker_id = 'stale'",
    )
    .bind(run)
    .fetch_all(&db.pool)
    .await
    .unwrap();
    let audited = vec![("log_excerpt".to_string(), Some(true))];
    if fenced {
        assert_eq!(stale_calls, audited);
    } else {
        assert!(
            stale_calls.is_empty() || stale_calls == audited,
            "{stale_calls:?}"
        );
    }
    let attempts = faultline_shared::storage::steps::list_attempts(&db.pool, run)
        .await
        .unwrap();
    assert!(
        attempts.iter().any(|a| a.error.contains("lease expired")),
        "takeover recorded: {attempts:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn retry_backoff_is_persisted() {
    let db = TestDb::new().await;
    let log = db.write("oom.log", oom_log());
    let run = db.enqueue(&log, &[("FAULTLINE_MAX_ATTEMPTS", "4")]);
    // Every tool call outlives its timeout: a transient failure, every time.
    let failing = [
        ("FAULTLINE_CHAOS_TOOL_DELAY_MS", "300"),
        ("FAULTLINE_TOOL_TIMEOUT_MS", "50"),
        ("FAULTLINE_RETRY_BASE_MS", "400"),
    ];
    let mut first = db.worker("first", &failing);
    wait_until(Duration::from_secs(30), || async {
        let (status, _) = run_state(&db.pool, run).await;
        let attempts: i32 = sqlx::query_scalar("SELECT attempts FROM analysis_runs WHERE id = $1")
            .bind(run)
            .fetch_one(&db.pool)
            .await
            .unwrap();
        (attempts == 2 && status == "retry_wait").then_some(())
    })
    .await;
    first.kill9();

    let _second = db.worker("second", &failing);
    let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    assert_eq!(status, "failed");

    let attempts = faultline_shared::storage::steps::list_attempts(&db.pool, run)
        .await
        .unwrap();
    assert_eq!(
        attempts.iter().map(|a| a.attempt).collect::<Vec<_>>(),
        vec![1, 2, 3, 4]
    );
    assert!(
        attempts
            .iter()
            .all(|a| a.transient && a.error.contains("timed out")),
        "{attempts:?}"
    );
    assert_eq!(attempts[0].worker_id.as_deref(), Some("first"));
    assert_eq!(
        attempts[2].worker_id.as_deref(),
        Some("second"),
        "attempt 3 ran after the restart"
    );
    let delays: Vec<f64> = attempts[..3]
        .iter()
        .map(|a| {
            (a.next_attempt_at.expect("retry scheduled") - a.failed_at).num_milliseconds() as f64
        })
        .collect();
    for (k, d) in delays.iter().enumerate() {
        let floor = 400.0 * 2f64.powi(k as i32);
        assert!(
            *d >= floor - 5.0 && *d <= floor * 1.25 + 50.0,
            "delay {k} = {d} ms, expected {floor}..{}",
            floor * 1.25
        );
    }
    assert!(
        delays[0] < delays[1] && delays[1] < delays[2],
        "delays grow across the restart: {delays:?}"
    );
    assert!(
        attempts[3].next_attempt_at.is_none(),
        "no retry after the last attempt"
    );
    // Each retry really waited for its scheduled time.
    for pair in attempts.windows(2) {
        assert!(
            pair[1].failed_at >= pair[0].next_attempt_at.unwrap(),
            "attempt {} started early",
            pair[1].attempt
        );
    }

    let (reason, review): (Option<String>, Option<String>) = sqlx::query_as(
        "SELECT r.failure_reason, i.reason FROM analysis_runs r LEFT JOIN review_items i ON i.run_id = r.id WHERE r.id = $1",
    )
    .bind(run)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert!(reason.unwrap().contains("after 4 attempt(s)"));
    assert!(
        review
            .expect("dead-lettered into the review queue")
            .starts_with("failed")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn duplicate_event_makes_one_run() {
    let db = TestDb::new().await;
    let log = db.write("oom.log", oom_log());
    let path = log.to_str().unwrap().to_string();
    // Concurrent submissions of the same build, and a redelivery of the same log.
    let handles: Vec<_> = (0..6)
        .map(|_| {
            let (url, path) = (db.url.clone(), path.clone());
            std::thread::spawn(move || {
                let out = std::process::Command::new(faultline_tests::bin("faultline"))
                    .args(["enqueue", &path, "--job", "ledger", "--build", "42"])
                    .env("DATABASE_URL", url)
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                String::from_utf8(out.stdout).unwrap().trim().to_string()
            })
        })
        .collect();
    let ids: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(
        ids.iter().all(|id| id == &ids[0]),
        "different runs: {ids:?}"
    );
    let again = db.cli_ok(&["enqueue", &path, "--job", "ledger", "--build", "42"], &[]);
    assert_eq!(again, ids[0]);

    let (events, runs, tasks): (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM failure_events), (SELECT count(*) FROM analysis_runs),
                (SELECT count(*) FROM apalis.jobs WHERE job_type = 'faultline-steps')",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!((events, runs, tasks), (1, 1, 1));

    // Without job and build, the same log content is the same event.
    let a = db.enqueue(&db.write("a.log", "fatal: unable to access repo\n"), &[]);
    let b = db.enqueue(&db.write("b.log", "fatal: unable to access repo\n"), &[]);
    assert_eq!(a, b);
}

#[tokio::test(flavor = "multi_thread")]
async fn low_confidence_goes_to_review() {
    let db = TestDb::new().await;
    let _worker = db.worker("w", &[]);
    let vague = db.write(
        "vague.log",
        "Running make check\nchecking things...\nsomething went wrong, see above\nmake: *** [Makefile:42: check] Error 2\n",
    );
    let out = db.cli(
        &[
            "analyze",
            vague.to_str().unwrap(),
            "--json",
            "--timeout",
            "60",
        ],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "needs review exits 2: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run: Uuid = status["run"]["id"].as_str().unwrap().parse().unwrap();
    assert_eq!(status["run"]["status"], "needs_review");
    assert!(status["run"]["confidence"].as_f64().unwrap() < 0.85);

    // The review item was written with the final state, and is listed.
    let items: serde_json::Value =
        serde_json::from_str(&db.cli_ok(&["review", "list", "--json"], &[])).unwrap();
    let item = items
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["run_id"] == run.to_string())
        .expect("in the review queue");
    assert_eq!(item["status"], "open");
    assert!(item["reason"].as_str().unwrap().contains("low confidence"));

    // Its trace shows every iteration: thought, action, observation.
    let trace: serde_json::Value =
        serde_json::from_str(&db.cli_ok(&["trace", &run.to_string(), "--json"], &[])).unwrap();
    let steps = trace["steps"].as_array().unwrap();
    assert!(steps.len() >= 2);
    for s in steps {
        assert!(!s["thought"].as_str().unwrap().is_empty());
        assert!(s["action"].is_string() && s["observation"].is_object());
    }
    let last = steps.last().unwrap();
    assert_eq!(last["action"], "final_answer");
    assert_eq!(last["observation"]["verdict"], "review");
    let human = db.cli_ok(&["trace", &run.to_string()], &[]);
    assert!(human.contains("thought:") && human.contains("observation:"));

    // A clear failure is trusted and does not go to review.
    let clear = db.write("oom.log", oom_log());
    let out = db.cli(
        &[
            "analyze",
            clear.to_str().unwrap(),
            "--json",
            "--timeout",
            "60",
        ],
        &[],
    );
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["run"]["status"], "completed", "{status:#}");
    assert_eq!(status["run"]["category"], "INFRA_ERROR");
    assert!(status["review"].is_null());
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_finishes_in_flight_steps_and_exits() {
    let db = TestDb::new().await;
    let run = db.enqueue(&db.write("oom.log", oom_log()), &[]);
    let mut worker = db.worker("w", &[("FAULTLINE_CHAOS_STEP_DELAY_MS", "800")]);
    wait_until(Duration::from_secs(30), || async {
        let owner: Option<String> =
            sqlx::query_scalar("SELECT lease_owner FROM analysis_runs WHERE id = $1")
                .bind(run)
                .fetch_one(&db.pool)
                .await
                .unwrap();
        owner.is_some().then_some(())
    })
    .await;
    let (_, before) = run_state(&db.pool, run).await;
    worker.signal(Signal::SIGTERM);
    let status = worker
        .wait_exit(Duration::from_secs(20))
        .await
        .expect("worker exits");
    assert!(status.success(), "worker exit status {status}");
    // The in-flight iteration was finished and committed, not abandoned.
    let (state, after) = run_state(&db.pool, run).await;
    assert_eq!(after, before + 1, "in-flight step committed before exit");
    assert_eq!(state, "queued", "nothing holds the run after shutdown");
}

/// The queue rows of a run's step tasks: (iteration, status).
async fn queued_steps(db: &TestDb, run: Uuid) -> Vec<(i64, String)> {
    sqlx::query_as(
        "SELECT (convert_from(job, 'UTF8')::jsonb ->> 'iteration')::bigint AS iteration, status
         FROM apalis.jobs WHERE convert_from(job, 'UTF8')::jsonb ->> 'run_id' = $1
         ORDER BY 1",
    )
    .bind(run.to_string())
    .fetch_all(&db.pool)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_live_run_continues_on_its_worker_and_a_bulk_run_goes_back_to_the_queue() {
    let db = TestDb::new().await;
    let live_log = db.write("live.log", oom_log());
    let bulk_log = db.write("bulk.log", format!("nightly\n{}", oom_log()));
    let live = db.enqueue(&live_log, &[]);
    let bulk: Uuid = db
        .cli_ok(&["enqueue", "--bulk", bulk_log.to_str().unwrap()], &[])
        .parse()
        .unwrap();
    let _worker = db.worker("w", &[]);
    for run in [live, bulk] {
        let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
        assert_eq!(status, "completed", "run {run}");
    }
    let (_, live_iterations) = run_state(&db.pool, live).await;
    let (_, bulk_iterations) = run_state(&db.pool, bulk).await;
    assert!(live_iterations >= 3 && bulk_iterations >= 3);

    // Live: every later step's task was taken by the worker that queued it,
    // so only the first step ever went through the queue.
    let live_tasks = queued_steps(&db, live).await;
    assert_eq!(live_tasks.len(), 1, "{live_tasks:?}");
    assert_eq!(live_tasks[0].0, 1);
    // Bulk: each step was fetched from the queue, so live work can overtake it.
    let bulk_tasks = queued_steps(&db, bulk).await;
    assert_eq!(
        bulk_tasks.iter().map(|t| t.0).collect::<Vec<_>>(),
        (1..=i64::from(bulk_iterations)).collect::<Vec<_>>(),
        "{bulk_tasks:?}"
    );
    // Either way each iteration was committed exactly once.
    for run in [live, bulk] {
        let steps = journal(&db, run).await;
        let (_, n) = run_state(&db.pool, run).await;
        assert_eq!(
            steps.iter().map(|s| s.0).collect::<Vec<_>>(),
            (1..=n).collect::<Vec<_>>()
        );
    }
}

//! The Redis broker: Postgres stays the truth (I6), duplicates are harmless,
//! and bulk work has its own queue.

use std::time::Duration;

use faultline_tests::{TestDb, oom_log, wait_terminal};

/// Environment of a worker or CLI on the Redis broker, isolated by namespace.
fn redis_env(namespace: &str) -> Vec<(&'static str, String)> {
    vec![
        ("QUEUE_BACKEND", "redis".into()),
        ("FAULTLINE_REDIS_NAMESPACE", namespace.into()),
        ("FAULTLINE_REQUEUE_AFTER_MS", "500".into()),
    ]
}

fn refs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// The test Redis (`REDIS_URL`, default the local one).
fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

async fn redis_conn() -> redis::aio::MultiplexedConnection {
    let url = redis_url();
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .expect("connect to the test Redis (REDIS_URL)")
}

/// Deletes every key of `namespace`: what FLUSHALL does to our queues.
async fn wipe(namespace: &str) -> usize {
    let url = redis_url();
    faultline_tests::wipe_redis_namespace(&url, namespace)
        .await
        .unwrap()
}

/// Tasks waiting on the live queue (apalis-redis parks new tasks in the
/// scheduled set until a fetch promotes them to the active list).
async fn live_tasks(namespace: &str) -> i64 {
    let mut conn = redis_conn().await;
    let active: i64 = redis::cmd("LLEN")
        .arg(format!("{namespace}-steps-live:active"))
        .query_async(&mut conn)
        .await
        .unwrap();
    let scheduled: i64 = redis::cmd("ZCARD")
        .arg(format!("{namespace}-steps-live:scheduled"))
        .query_async(&mut conn)
        .await
        .unwrap();
    active + scheduled
}

fn namespace(db: &TestDb) -> String {
    db.name.replace('_', "-")
}

#[tokio::test(flavor = "multi_thread")]
async fn runs_complete_on_the_redis_broker() {
    let db = TestDb::new().await;
    let ns = namespace(&db);
    let env = redis_env(&ns);
    let run = db.enqueue(&db.write("oom.log", oom_log()), &refs(&env));
    // The step task went to Redis, not to the Postgres queue.
    let pg_tasks: i64 = sqlx::query_scalar("SELECT count(*) FROM apalis.jobs")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(pg_tasks, 0);
    assert_eq!(live_tasks(&ns).await, 1);
    // The queue-depth gauge reads the broker's queue, not the empty Postgres one.
    let serve = db.serve(&refs(&env)).await;
    let metrics = reqwest::get(format!("{}/metrics", serve.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let depth = |priority: &str| {
        metrics
            .lines()
            .find(|l| {
                l.starts_with("faultline_queue_depth{")
                    && l.contains(&format!("priority=\"{priority}\""))
                    && l.contains("state=\"ready\"")
            })
            .and_then(|l| l.rsplit_once(' '))
            .map(|(_, v)| v.to_string())
    };
    assert_eq!(depth("10").as_deref(), Some("1"), "{metrics}");
    assert_eq!(depth("1").as_deref(), Some("0"), "{metrics}");
    assert!(metrics.contains("faultline_scrape_error 0"), "{metrics}");

    let _w = db.worker("w", &refs(&env));
    let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    assert!(
        status == "completed" || status == "needs_review",
        "{status}"
    );
    let steps: i64 = sqlx::query_scalar("SELECT count(*) FROM run_steps WHERE run_id = $1")
        .bind(run)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert!(steps >= 2, "{steps} steps");
    wipe(&ns).await;
}

/// I6: Redis loses everything (FLUSHALL, restart without persistence)
/// while runs are queued; the reconciler re-enqueues them from Postgres.
#[tokio::test(flavor = "multi_thread")]
async fn wiping_redis_loses_no_run() {
    let db = TestDb::new().await;
    let ns = namespace(&db);
    let env = redis_env(&ns);
    let runs: Vec<_> = (0..3)
        .map(|i| {
            db.enqueue(
                &db.write(&format!("oom{i}.log"), format!("{}\nrun {i}\n", oom_log())),
                &refs(&env),
            )
        })
        .collect();
    assert!(wipe(&ns).await > 0, "the pushes reached Redis");

    let w = db.worker("w", &refs(&env));
    for run in &runs {
        let status = wait_terminal(&db.pool, *run, Duration::from_secs(60)).await;
        assert!(
            status == "completed" || status == "needs_review",
            "{status}"
        );
    }
    assert!(
        w.stderr().contains("re-pushed steps missing from Redis"),
        "{}",
        w.stderr()
    );
    wipe(&ns).await;
}

/// A step pushed twice (the committer and the reconciler racing) runs once.
#[tokio::test(flavor = "multi_thread")]
async fn duplicate_step_tasks_are_harmless() {
    use faultline_shared::{
        queue::{Pending, redis::RedisBroker},
        types::StepTask,
    };
    let db = TestDb::new().await;
    let ns = namespace(&db);
    let env = redis_env(&ns);
    let run = db.enqueue(&db.write("oom.log", oom_log()), &refs(&env));
    let url = redis_url();
    let broker = RedisBroker::connect(&url, &ns).await.unwrap();
    let first = Pending {
        step: StepTask {
            run_id: run,
            iteration: 1,
            attempt: 0,
        },
        priority: faultline_shared::queue::PRIORITY_LIVE,
        run_at: None,
    };
    // Same idempotency key: Redis keeps one task.
    broker.push(&[first.clone(), first.clone()]).await.unwrap();
    assert_eq!(
        broker
            .ensure_queued(std::slice::from_ref(&first))
            .await
            .unwrap(),
        0
    );
    assert_eq!(live_tasks(&ns).await, 1, "one task per idempotency key");
    let mut conn = redis_conn().await;
    // Force a true duplicate past the key, as after a partial Redis loss.
    let _: () = redis::cmd("DEL")
        .arg(format!("{ns}-steps-live:idempotency:{}", first.step.key()))
        .query_async(&mut conn)
        .await
        .unwrap();
    broker.push(std::slice::from_ref(&first)).await.unwrap();
    assert_eq!(live_tasks(&ns).await, 2);

    let w = db.worker("w", &refs(&env));
    wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    let (rows, distinct): (i64, i64) = sqlx::query_as(
        "SELECT count(*), count(DISTINCT iteration) FROM run_steps WHERE run_id = $1",
    )
    .bind(run)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(rows, distinct, "one checkpoint per iteration");
    let tools_iteration_1: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM tool_invocations WHERE run_id = $1 AND iteration = 1",
    )
    .bind(run)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(
        tools_iteration_1, 1,
        "the duplicate did not execute the step again"
    );
    drop(w);
    wipe(&ns).await;
}

/// A resumed run goes to the head of the live queue, not behind the runs
/// waiting for a slot (apalis-redis pushes at the tail).
#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_run_goes_ahead_of_the_backlog() {
    let db = TestDb::new().await;
    let ns = namespace(&db);
    let env = redis_env(&ns);
    let resume = faultline_tests::a_resumed_run_goes_ahead_of_the_backlog(&db, &refs(&env)).await;
    assert!(
        resume <= Duration::from_secs(6),
        "resumed {resume:?} after the kill"
    );
    wipe(&ns).await;
}

/// A nightly backlog on the bulk queue does not delay a live analysis.
#[tokio::test(flavor = "multi_thread")]
async fn bulk_backlog_does_not_delay_live_runs() {
    let db = TestDb::new().await;
    let ns = namespace(&db);
    let env = redis_env(&ns);
    let mut bulk_env = refs(&env);
    let bulk: Vec<_> = (0..12)
        .map(|i| {
            let path = db.write(
                &format!("bulk{i}.log"),
                format!("{}\nbulk {i}\n", oom_log()),
            );
            db.cli_ok(&["enqueue", "--bulk", path.to_str().unwrap()], &bulk_env)
        })
        .collect();
    let live = db.enqueue(&db.write("live.log", oom_log()), &refs(&env));
    // Every step is slow: the bulk backlog alone takes 12 runs x >= 3 steps x 300 ms / 1 slot.
    bulk_env.push(("FAULTLINE_CHAOS_STEP_DELAY_MS", "300"));
    bulk_env.push(("FAULTLINE_WORKER_CONCURRENCY", "2"));
    bulk_env.push(("FAULTLINE_BULK_CONCURRENCY", "1"));
    let _w = db.worker("w", &bulk_env);
    wait_terminal(&db.pool, live, Duration::from_secs(60)).await;
    let open_bulk: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM analysis_runs WHERE priority < 10 AND status NOT IN ('completed', 'needs_review', 'failed')",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert!(
        open_bulk >= 8,
        "the live run waited behind the bulk backlog: only {open_bulk} of {} bulk runs still open",
        bulk.len()
    );
    wipe(&ns).await;
}

/// A task a killed worker had fetched keeps the status "Pending" while it
/// sits in no list: the reconciler must push it again, not trust the status.
#[tokio::test(flavor = "multi_thread")]
async fn a_task_in_no_list_is_pushed_again() {
    use faultline_shared::queue::{PRIORITY_LIVE, Pending, redis::RedisBroker};
    let db = TestDb::new().await;
    let ns = namespace(&db);
    let env = redis_env(&ns);
    let run = db.enqueue(&db.write("oom.log", oom_log()), &refs(&env));
    let url = redis_url();
    let broker = RedisBroker::connect(&url, &ns).await.unwrap();
    let step = Pending {
        step: faultline_shared::types::StepTask {
            run_id: run,
            iteration: 1,
            attempt: 0,
        },
        priority: PRIORITY_LIVE,
        run_at: None,
    };
    assert_eq!(
        broker
            .ensure_queued(std::slice::from_ref(&step))
            .await
            .unwrap(),
        0
    );
    // Take the task out of every list, leaving its metadata as it was.
    let mut conn = redis_conn().await;
    let _: () = redis::cmd("DEL")
        .arg(format!("{ns}-steps-live:scheduled"))
        .arg(format!("{ns}-steps-live:active"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(live_tasks(&ns).await, 0);
    assert_eq!(
        broker
            .ensure_queued(std::slice::from_ref(&step))
            .await
            .unwrap(),
        1
    );
    assert_eq!(live_tasks(&ns).await, 1);
    wipe(&ns).await;
}

/// Issue 14, finding 5: a task that is not JSON and a task without
/// metadata, written straight into the live queue while a worker runs, are
/// dead-lettered with their reasons; the consumer does not stall, and a
/// live run queued behind them completes in seconds.
#[tokio::test(flavor = "multi_thread")]
async fn malformed_tasks_are_dead_lettered_and_the_live_queue_goes_on() {
    let db = TestDb::new().await;
    let ns = namespace(&db);
    let env = redis_env(&ns);
    let w = db.worker("w", &refs(&env));
    // The worker's consumers are registered before the bad tasks land.
    let queue = format!("{ns}-steps-live");
    faultline_tests::wait_until(Duration::from_secs(30), || async {
        let mut conn = redis_conn().await;
        let workers: i64 = redis::cmd("ZCARD")
            .arg(format!("{queue}:workers"))
            .query_async(&mut conn)
            .await
            .unwrap();
        (workers > 0).then_some(())
    })
    .await;
    let mut conn = redis_conn().await;
    // Task ids as apalis makes them (ULIDs).
    let step = faultline_shared::types::StepTask {
        run_id: uuid::Uuid::nil(),
        iteration: 1,
        attempt: 0,
    };
    let not_json = faultline_shared::queue::step_job(&step).0;
    let no_meta = faultline_shared::queue::step_job(&step).0;
    // Metadata that looks numeric or textual but that apalis cannot read.
    let huge_attempts = faultline_shared::queue::step_job(&step).0;
    let not_utf8 = faultline_shared::queue::step_job(&step).0;
    let valid_step =
        r#"{"run_id":"00000000-0000-0000-0000-000000000000","iteration":1,"attempt":0}"#;
    for (id, field, value) in [
        (&huge_attempts, "attempts", &b"4294967296"[..]),
        (&not_utf8, "locked_by", &b"\xff\xfe"[..]),
    ] {
        let _: () = redis::pipe()
            .hset(format!("{queue}:data"), id, valid_step)
            .hset_multiple(
                format!("{queue}:meta:{id}"),
                &[
                    ("attempts", &b"0"[..]),
                    ("max_attempts", &b"3"[..]),
                    ("status", &b"Pending"[..]),
                ],
            )
            .hset(format!("{queue}:meta:{id}"), field, value)
            .rpush(format!("{queue}:active"), id)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    let _: () = redis::pipe()
        .hset(format!("{queue}:data"), &not_json, "{\"run_id\": oops")
        .hset_multiple(
            format!("{queue}:meta:{not_json}"),
            &[
                ("attempts", "0"),
                ("max_attempts", "3"),
                ("status", "Pending"),
            ],
        )
        .hset(
            format!("{queue}:data"),
            &no_meta,
            r#"{"run_id":"00000000-0000-0000-0000-000000000000","iteration":1,"attempt":0}"#,
        )
        .rpush(format!("{queue}:active"), &not_json)
        .rpush(format!("{queue}:active"), &no_meta)
        .query_async(&mut conn)
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let run = db.enqueue(&db.write("oom.log", oom_log()), &refs(&env));
    let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    let took = started.elapsed();
    assert!(
        status == "completed" || status == "needs_review",
        "{status}\n{}",
        w.stderr()
    );
    assert!(
        took < Duration::from_secs(15),
        "the live run took {took:?} behind two malformed tasks\n{}",
        w.stderr()
    );
    // The handler dead-letters the undecodable task next to the live run.
    // (A deadline loop like `wait_until`'s, to show the worker's log on failure.)
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let dead: Vec<String> = loop {
        let dead: Vec<String> = redis::cmd("LRANGE")
            .arg(format!("{ns}-steps-dead-letter"))
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await
            .unwrap();
        if dead.len() >= 4 || std::time::Instant::now() > deadline {
            break dead;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    let reasons: Vec<serde_json::Value> = dead
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert!(
        reasons.iter().any(|r| r["reason"]
            .as_str()
            .unwrap_or("")
            .contains("not a step task")),
        "{dead:?}\n{}",
        w.stderr()
    );
    assert!(
        reasons.iter().any(|r| r["id"] == no_meta.as_str()
            && r["reason"]
                .as_str()
                .unwrap_or("")
                .contains("attempts missing")),
        "{dead:?}"
    );
    for (id, why) in [
        (&huge_attempts, "attempts missing or not a number"),
        (&not_utf8, "not ASCII"),
    ] {
        assert!(
            reasons.iter().any(|r| r["id"] == id.as_str()
                && r["reason"].as_str().unwrap_or("").contains(why)),
            "{id}: {why}: {dead:?}"
        );
    }
    // The task without metadata failed one fetch; the consumer went on at once.
    assert!(
        w.stderr().contains("malformed step task dead-lettered")
            && w.stderr()
                .contains("step consumer failed on a malformed task; restarting"),
        "{}",
        w.stderr()
    );
    eprintln!("live run behind two malformed tasks: {took:?}");
    drop(w);
    wipe(&ns).await;
}

/// The dead-letter list keeps its newest `DEAD_LETTER_CAP` entries: a full
/// list loses its oldest one per new dead letter, from the handler's path
/// and from the quarantine script alike, and what is dropped is counted.
#[tokio::test(flavor = "multi_thread")]
async fn the_dead_letter_list_keeps_its_newest_entries_and_counts_what_it_drops() {
    use faultline_shared::queue::redis::{DEAD_LETTER_CAP, RedisBroker};
    let metrics = faultline_shared::metrics::install("faultline-tests");
    let ns = format!("dead-letter-{}", uuid::Uuid::new_v4().simple());
    let url = redis_url();
    let broker = RedisBroker::connect(&url, &ns).await.unwrap();
    let list = broker.dead_letter_list();
    let mut conn = redis_conn().await;
    let old: Vec<String> = (0..DEAD_LETTER_CAP).map(|i| format!("old {i}")).collect();
    let _: i64 = redis::cmd("RPUSH")
        .arg(&list)
        .arg(&old)
        .query_async(&mut conn)
        .await
        .unwrap();
    // Length, oldest and newest entry.
    async fn ends(list: &str) -> (i64, String, String) {
        redis::pipe()
            .llen(list)
            .lindex(list, 0)
            .lindex(list, -1)
            .query_async(&mut redis_conn().await)
            .await
            .unwrap()
    }

    broker
        .dead_letter(broker.live_config(), "not a step task: test", b"{oops")
        .await
        .unwrap();
    let (len, first, last) = ends(&list).await;
    assert_eq!((len, first.as_str()), (DEAD_LETTER_CAP, "old 1"));
    assert!(last.contains("not a step task: test"), "{last}");

    // A task whose id is no ULID, quarantined by the script.
    let _: i64 = redis::cmd("RPUSH")
        .arg(format!("{ns}-steps-live:active"))
        .arg("not-a-ulid")
        .query_async(&mut conn)
        .await
        .unwrap();
    let found = broker.quarantine().await.unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    let (len, first, last) = ends(&list).await;
    assert_eq!((len, first.as_str()), (DEAD_LETTER_CAP, "old 2"));
    assert!(last.contains("task id is not a ULID"), "{last}");

    let rendered = metrics.render();
    assert!(
        rendered
            .lines()
            .any(|l| l == "faultline_redis_dead_letters_dropped_total 2"),
        "{rendered}"
    );
    wipe(&ns).await;
}

/// The broker is a handle passed to each storage call, not a process-wide
/// setting: in one process, an ingest given the Postgres broker queues its
/// first step in `apalis.jobs`, and one given a Redis broker queues it in
/// Redis only.
#[tokio::test(flavor = "multi_thread")]
async fn each_ingest_queues_its_first_step_on_the_broker_it_is_given() {
    use faultline_shared::{
        queue::{Broker, redis::RedisBroker},
        storage::{self, events::NewEvent, runs::RunLimits},
    };
    let db = TestDb::new().await;
    let ns = namespace(&db);
    let url = redis_url();
    let redis = Broker::Redis(Box::new(RedisBroker::connect(&url, &ns).await.unwrap()));
    let limits = RunLimits {
        max_iterations: 3,
        max_attempts: 3,
        priority: faultline_shared::queue::PRIORITY_LIVE,
        shadowed: false,
    };
    let event = |key: &str| NewEvent {
        dedup_key: key.into(),
        source: "test".into(),
        ..NewEvent::default()
    };
    let pg_tasks = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM apalis.jobs")
            .fetch_one(&db.pool)
            .await
            .unwrap()
    };

    storage::ingest(
        &db.pool,
        &Broker::Postgres,
        &event("pg"),
        &b"boom"[..],
        limits,
    )
    .await
    .unwrap();
    assert_eq!((pg_tasks().await, live_tasks(&ns).await), (1, 0));

    storage::ingest(&db.pool, &redis, &event("redis"), &b"boom"[..], limits)
        .await
        .unwrap();
    assert_eq!(
        (pg_tasks().await, live_tasks(&ns).await),
        (1, 1),
        "the Redis handle's step went to Redis only"
    );
    wipe(&ns).await;
}

//! `faultline-bench`: the engine's own overhead, measured on this machine.
//!
//! By default it runs the whole matrix: this machine's `pgbench -N` TPS as
//! the ceiling, then, for each broker (`BENCH_BACKENDS`, default
//! `postgres,redis`) and each number of worker processes
//! (`BENCH_WORKER_SET`, default `1,2,4,8`), itself as a child
//! (`BENCH_MODE=one`) measuring the steps below; it prints one table.
//! A child keeps the total concurrency constant (`BENCH_CONCURRENCY_TOTAL`,
//! default 16) so the rows compare process counts, not slot counts.
//!
//! One child:
//! 0. Enqueue: the burst's runs enqueued one by one (runs/s).
//! 1. Unloaded: runs analysed one at a time by W real `faultline-worker`
//!    processes (heuristic reasoner, no network): the interval between
//!    consecutive checkpoints of a run (queue hop + claim + step + commit).
//! 2. Loaded: a backlog of N runs, enqueued while the workers are stopped,
//!    then drained: checkpointed steps per second (first claim to last
//!    commit) and the engine's time per step outside the tool.
//! 3. Step commit: the checkpoint transaction alone (`commit_step`: fenced
//!    run update + journal row + next-task push), C concurrent committers.
//!
//! Uses a fresh database on the server of DATABASE_URL and drops it after.
//!
//! `BENCH_MODE=latency` measures the engine at real model latency instead
//! (see `bench/latency.rs`).

use std::{
    process::{Child, Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::Context;
use faultline_shared::config::{ExposeSecret as _, Source};
use faultline_shared::{
    Settings, StepRecord, StepTask, db, queue,
    storage::{
        self,
        events::NewEvent,
        runs::{self, Checkpoint, Next, RunLimits},
    },
};
use hdrhistogram::Histogram;
use serde_json::json;
use sqlx::{Connection, PgConnection, PgPool};

#[path = "bench/latency.rs"]
mod latency;
#[path = "bench/matrix.rs"]
mod matrix;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match std::env::var("BENCH_MODE").as_deref() {
        Ok("one") => {}
        Ok("latency") => return latency::run().await,
        _ => return matrix::run().await,
    }
    let runs = env_or("BENCH_RUNS", 2000);
    let workers = env_or("BENCH_WORKERS", 2);
    let concurrency = env_or("BENCH_CONCURRENCY", 16);
    let commits = env_or("BENCH_COMMITS", 3000);
    let committers = env_or("BENCH_COMMITTERS", 8);

    let base = Settings::from_env()?;
    let url = base.database_url.expose_secret().to_string();
    let (server, _) = url
        .rsplit_once('/')
        .context("DATABASE_URL has no database part")?;
    let name = format!("faultline_bench_{}", std::process::id());
    let admin = format!("{server}/postgres");
    let mut conn = PgConnection::connect(&admin)
        .await
        .context("connect to the Postgres server")?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut conn)
        .await?;
    let bench_url = format!("{server}/{name}");
    let result = bench(&bench_url, runs, workers, concurrency, commits, committers).await;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
    )))
    .execute(&mut conn)
    .await?;
    result
}

async fn bench(
    url: &str,
    runs: usize,
    workers: usize,
    concurrency: usize,
    commits: usize,
    committers: usize,
) -> anyhow::Result<()> {
    let mut env = Source::env();
    env.set("DATABASE_URL", url);
    let settings = Settings::load(&env)?;
    let pool = db::connect(&settings, (committers + 4) as u32).await?;
    db::migrate(&pool).await?;
    let broker = queue::connect(&settings).await?;
    println!(
        "faultline-bench on {}, broker {}",
        machine(),
        settings.queue_backend.as_str()
    );

    let bin = std::env::current_exe()?
        .parent()
        .context("bin dir")?
        .join("faultline-worker");
    // The fleet's connections must fit the server (docs/operations.md: N x
    // FAULTLINE_DB_POOL_SIZE): 8 workers at the default 16 would ask for
    // 128 of a server configured for 100, and fail on "too many clients".
    let max_connections: String = sqlx::query_scalar("SHOW max_connections")
        .fetch_one(&pool)
        .await?;
    let budget = (max_connections
        .parse::<usize>()
        .unwrap_or(100)
        .saturating_sub(20)
        / workers)
        .clamp(3, settings.db_pool_size as usize);
    let spawn_workers = || -> anyhow::Result<Vec<Child>> {
        (0..workers)
            .map(|i| {
                Command::new(&bin)
                    .env("DATABASE_URL", url)
                    .env("QUEUE_BACKEND", settings.queue_backend.as_str())
                    .env("FAULTLINE_REDIS_NAMESPACE", &settings.redis_namespace)
                    .env("FAULTLINE_WORKER_ID", format!("bench-{i}"))
                    .env("FAULTLINE_WORKER_CONCURRENCY", concurrency.to_string())
                    .env("FAULTLINE_DB_POOL_SIZE", budget.to_string())
                    .env("RUST_LOG", "warn")
                    .env("WORKER_HTTP_ADDR", "127.0.0.1:0")
                    .stdout(Stdio::null())
                    .stderr(Stdio::inherit())
                    .spawn()
                    .with_context(|| format!("start {}", bin.display()))
            })
            .collect()
    };
    let stop = |children: &mut Vec<Child>| {
        for c in children.drain(..) {
            let mut c = c;
            let _ = c.kill();
            let _ = c.wait();
        }
    };
    let mut children = spawn_workers()?;
    let limits = RunLimits {
        max_iterations: 5,
        max_attempts: 5,
        priority: 10,
        shadowed: false,
    };

    // 1. Unloaded: one run at a time, so each hop is the engine's own latency.
    let singles = 20;
    for i in 0..singles {
        let event = NewEvent {
            dedup_key: format!("single:{i}"),
            source: "bench".into(),
            ..NewEvent::default()
        };
        storage::ingest(&pool, &broker, &event, sample_log(i).as_bytes(), limits).await?;
        wait_all_finished(&pool).await?;
    }
    let totals: Vec<f64> = sqlx::query_scalar(
        "SELECT extract(epoch FROM finished_at - created_at)::float8 * 1000 FROM analysis_runs",
    )
    .fetch_all(&pool)
    .await?;
    let single_gaps = checkpoint_intervals(&pool).await?;
    println!("\nunloaded: {singles} runs one after another ({workers} workers idle otherwise)");
    report("  whole analysis, enqueue to final commit", &totals);
    report(
        "  interval between consecutive checkpoints (queue hop + claim + step + commit)",
        &single_gaps,
    );
    sqlx::query("TRUNCATE run_steps, run_attempts, tool_invocations, review_items, analysis_runs, event_log_chunks, failure_events CASCADE")
        .execute(&pool)
        .await?;

    // 2. Loaded: a backlog of runs enqueued with the workers stopped, then
    // drained, so the enqueuer does not compete with the workers for the CPU.
    stop(&mut children);
    let enqueue_started = Instant::now();
    for i in 0..runs {
        let log = sample_log(i);
        let event = NewEvent {
            dedup_key: format!("bench:{i}"),
            source: "bench".into(),
            ..NewEvent::default()
        };
        storage::ingest(&pool, &broker, &event, log.as_bytes(), limits).await?;
    }
    let enqueue_secs = enqueue_started.elapsed().as_secs_f64();
    println!(
        "\nenqueue: {runs} runs (event + log + run + first step task) one by one in {enqueue_secs:.2} s = {:.0} runs/s",
        runs as f64 / enqueue_secs
    );
    // Planner statistics as a running deployment has them (autovacuum
    // analyses a table within its first minute; this database is seconds old).
    sqlx::query("ANALYZE").execute(&pool).await?;
    children = spawn_workers()?;
    wait_all_finished(&pool).await?;
    stop(&mut children);
    let (steps, span): (i64, f64) = sqlx::query_as(
        "SELECT count(*), extract(epoch FROM max(s.created_at) - min(r.started_at))::float8
         FROM run_steps s JOIN analysis_runs r ON r.id = s.run_id",
    )
    .fetch_one(&pool)
    .await?;
    let outcomes = runs::count_by_status(&pool).await?;
    println!(
        "\nloaded: a backlog of {runs} runs, {workers} worker processes x concurrency {concurrency}, heuristic reasoner"
    );
    println!("  outcomes: {outcomes:?}");
    println!(
        "  {steps} checkpointed steps in {span:.2} s (first claim to last commit) = {:.0} steps/s",
        steps as f64 / span
    );
    let engine: Vec<f64> = sqlx::query_scalar("SELECT (step_ms - tool_ms)::float8 FROM run_steps")
        .fetch_all(&pool)
        .await?;
    report(
        "  engine time per step outside the tool (claim, journal, decide, verify)",
        &engine,
    );
    let gaps = checkpoint_intervals(&pool).await?;
    report(
        "  interval between consecutive checkpoints of a run (includes queueing behind the burst)",
        &gaps,
    );

    // 3. The checkpoint transaction alone.
    let commit = commit_latency(&pool, &broker, commits, committers).await?;
    if settings.queue_backend == faultline_shared::config::QueueBackend::Redis {
        faultline_tests::wipe_redis_namespace(
            settings.redis_url.expose_secret(),
            &settings.redis_namespace,
        )
        .await?;
    }
    // One machine-readable line for the matrix.
    println!(
        "BENCH_RESULT {}",
        json!({
            "backend": settings.queue_backend.as_str(), "workers": workers, "concurrency": concurrency,
            "steps": steps, "steps_per_s": steps as f64 / span, "enqueue_per_s": runs as f64 / enqueue_secs,
            "interval_p99_ms": quantiles(&gaps).2, "commit_p50_ms": commit.0, "commit_p99_ms": commit.2,
            "commits_per_s": commit.3,
        })
    );
    Ok(())
}

/// Waits until no run is open (10 minutes at most).
async fn wait_all_finished(pool: &PgPool) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let open: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM analysis_runs WHERE status NOT IN ('completed', 'needs_review', 'failed')",
        )
        .fetch_one(pool)
        .await?;
        if open == 0 {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "runs did not finish within 10 minutes"
        );
        // Timings come from the database's timestamps, not from this poll.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Milliseconds between consecutive checkpoints of each run.
async fn checkpoint_intervals(pool: &PgPool) -> anyhow::Result<Vec<f64>> {
    let gaps: Vec<Option<f64>> = sqlx::query_scalar(
        "SELECT extract(epoch FROM created_at - lag(created_at) OVER (PARTITION BY run_id ORDER BY iteration))::float8 * 1000
         FROM run_steps",
    )
    .fetch_all(pool)
    .await?;
    Ok(gaps.into_iter().flatten().collect())
}

/// Claims and commits iterations directly, `committers` at a time.
/// Returns (p50, p90, p99) in ms and commits/s.
async fn commit_latency(
    pool: &PgPool,
    broker: &queue::Broker,
    commits: usize,
    committers: usize,
) -> anyhow::Result<(f64, f64, f64, f64)> {
    let per_run = 5;
    let limits = RunLimits {
        max_iterations: 50,
        max_attempts: 5,
        priority: 10,
        shadowed: false,
    };
    let runs_needed = commits.div_ceil(per_run);
    let mut run_ids = Vec::new();
    for i in 0..runs_needed {
        let event = NewEvent {
            dedup_key: format!("commit:{i}"),
            source: "bench".into(),
            ..NewEvent::default()
        };
        run_ids.push(
            storage::ingest(pool, broker, &event, &b"x"[..], limits)
                .await?
                .run_id,
        );
    }
    let run_ids = Arc::new(run_ids);
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..committers)
        .map(|_| {
            let (pool, broker, run_ids, next) = (pool.clone(), broker.clone(), run_ids.clone(), next.clone());
            tokio::spawn(async move {
                let mut samples = Vec::new();
                let observation = json!({"lines": [{"n": 1, "text": "error: something failed"}], "total_lines": 1});
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= run_ids.len() {
                        return anyhow::Ok(samples);
                    }
                    for iteration in 1..=per_run as i32 {
                        let task = StepTask { run_id: run_ids[i], iteration, attempt: 0 };
                        let lease = runs::claim(&pool, &task, "bench", Duration::from_secs(30)).await?.context("claim")?.lease;
                        let record = StepRecord {
                            iteration,
                            thought: "bench".into(),
                            action: "log_excerpt".into(),
                            action_input: json!({}),
                            observation: observation.clone(),
                            is_final: false,
                            ..Default::default()
                        };
                        let cp = Checkpoint { record: &record, attempt: 0, worker_id: "bench", tool_ms: 0, step_ms: 0, fingerprint: None, failure_text: None, tool_audit: None, arm: "heuristic", prompt_version: None };
                        let t = Instant::now();
                        runs::commit_step(&pool, &broker, &lease, &cp, &Next::Continue, None).await?;
                        samples.push(t.elapsed().as_secs_f64() * 1000.0);
                    }
                }
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await??);
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "\nstep commit (fenced run update + journal row + next-task push; Redis: push after the commit):"
    );
    let rate = all.len() as f64 / secs;
    println!(
        "  {} commits by {committers} concurrent committers in {secs:.2} s = {rate:.0} commits/s",
        all.len(),
    );
    report("  commit latency", &all);
    let (p50, p90, p99) = quantiles(&all);
    Ok((p50, p90, p99, rate))
}

/// (p50, p90, p99) of millisecond samples.
fn quantiles(ms: &[f64]) -> (f64, f64, f64) {
    let mut h = Histogram::<u64>::new(3).unwrap();
    for v in ms {
        let _ = h.record((v * 1000.0).max(1.0) as u64);
    }
    let q = |p: f64| h.value_at_quantile(p) as f64 / 1000.0;
    (q(0.5), q(0.9), q(0.99))
}

fn report(label: &str, ms: &[f64]) {
    let mut h = Histogram::<u64>::new(3).unwrap();
    for v in ms {
        let _ = h.record((v * 1000.0).max(1.0) as u64);
    }
    let q = |p: f64| h.value_at_quantile(p) as f64 / 1000.0;
    println!(
        "{label}: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms (n={})",
        q(0.5),
        q(0.9),
        q(0.99),
        h.max() as f64 / 1000.0,
        h.len()
    );
}

fn sample_log(i: usize) -> String {
    let failures = [
        "java.lang.OutOfMemoryError: Java heap space",
        "ModuleNotFoundError: No module named 'yaml'",
        "error[E0308]: mismatched types",
        "AssertionError: expected 3, got 4",
        "curl: (6) Could not resolve host: registry.example.com",
    ];
    let mut log = String::new();
    for n in 0..200 {
        log.push_str(&format!("[{n:04}] compiling module_{n} ... ok\n"));
    }
    log.push_str(failures[i % failures.len()]);
    log.push_str(&format!("\nbuild {i} failed\n"));
    log
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .next()
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| format!("{:.0} GiB", kb as f64 / 1048576.0))
        .unwrap_or_default();
    format!("{cpu}, {cores} cores, {mem} RAM")
}

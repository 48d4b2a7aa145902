//! `faultline-chaos`: the invariants under fire. N worker processes analyse
//! R runs of at least 4 iterations each with a fake OpenAI-compatible model
//! (latency added per call) while one random worker is SIGKILLed and
//! restarted every K ms, Postgres is restarted once, and (Redis broker)
//! Redis loses all its contents once. Then it checks:
//!
//! - I1: every run is terminal;
//! - I2: exactly one journal row per committed iteration;
//! - I3: no model request and no tool call for an iteration after that
//!   iteration was journaled (the fake model counts requests per run and
//!   iteration; only a call in flight at a kill may repeat);
//! - I4: resume time after each kill (kill to the next commit of every run
//!   the killed worker held): p50 / p99 / max.
//!
//! Prints a summary table; exits non-zero when an invariant broke.
//! Settings (environment): CHAOS_RUNS (300), CHAOS_WORKERS (4),
//! CHAOS_CONCURRENCY (8), CHAOS_KILL_EVERY_MS (2000), CHAOS_LLM_DELAY_MS (500: runs last long enough for the kills to land mid-analysis),
//! CHAOS_PG_RESTART (1: try `pg_ctlcluster`, skipped with a reason when not
//! permitted), CHAOS_REDIS_WIPE (`flushall` | `namespace` | `none`),
//! CHAOS_TIMEOUT_SECS (900), QUEUE_BACKEND, REDIS_URL, DATABASE_URL.

use std::{
    collections::HashMap,
    process::{Child, Command, Stdio},
    time::{Duration, Instant, SystemTime},
};

use anyhow::{Context, bail};
use chrono::{DateTime, Utc};
use faultline_shared::config::{ExposeSecret as _, Source};
use faultline_shared::{
    Settings,
    config::QueueBackend,
    db, queue,
    storage::{self, events::NewEvent, runs::RunLimits},
};
use faultline_tests::four_step_model::{self, FourStepModel};
use hdrhistogram::Histogram;
use sqlx::{Connection, PgConnection, PgPool, postgres::PgPoolOptions};
use uuid::Uuid;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let base = Settings::from_env()?;
    let url = base.database_url.expose_secret().to_string();
    let (server, _) = url
        .rsplit_once('/')
        .context("DATABASE_URL has no database part")?;
    let name = format!("faultline_chaos_{}", std::process::id());
    let admin = format!("{server}/postgres");
    let mut conn = PgConnection::connect(&admin)
        .await
        .context("connect to the Postgres server")?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut conn)
        .await?;
    conn.close().await.ok();
    let chaos_url = format!("{server}/{name}");
    let result = chaos(&chaos_url).await;
    // Postgres may just have restarted: retry the clean-up connection briefly.
    for _ in 0..50 {
        if let Ok(mut conn) = PgConnection::connect(&admin).await {
            let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
            )))
            .execute(&mut conn)
            .await;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    result
}

/// The worker processes, SIGKILLed when dropped (also on an early error).
struct Procs(Vec<(String, Child)>);

impl Drop for Procs {
    fn drop(&mut self) {
        for (_, child) in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[derive(Clone)]
struct Kill {
    at: DateTime<Utc>,
    /// (run, iterations committed) of every run the killed worker held.
    held: Vec<(Uuid, i32)>,
}

async fn chaos(url: &str) -> anyhow::Result<()> {
    let runs: usize = env_or("CHAOS_RUNS", 300);
    let workers: usize = env_or("CHAOS_WORKERS", 4);
    let concurrency: usize = env_or("CHAOS_CONCURRENCY", 8);
    let kill_every = Duration::from_millis(env_or("CHAOS_KILL_EVERY_MS", 2000));
    let llm_delay = Duration::from_millis(env_or("CHAOS_LLM_DELAY_MS", 500));
    let pg_restart: bool = env_or("CHAOS_PG_RESTART", 1) == 1;
    let wipe: String = env_or("CHAOS_REDIS_WIPE", "flushall".to_string());
    let timeout = Duration::from_secs(env_or("CHAOS_TIMEOUT_SECS", 900));

    let mut env = Source::env();
    env.set("DATABASE_URL", url);
    let settings = Settings::load(&env)?;
    let backend = settings.queue_backend;
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .acquire_timeout(Duration::from_secs(5))
        .connect(url)
        .await?;
    db::migrate(&pool).await?;
    let broker = queue::connect(&settings).await?;
    if backend == QueueBackend::Redis {
        wipe_redis(&settings, "namespace").await?;
    }

    // The fake model.
    let (addr, fake) = FourStepModel::start(llm_delay, "chaos-").await?;

    println!(
        "faultline-chaos: backend {}, {runs} runs, {workers} workers x {concurrency}, kill every {kill_every:?}, model latency {llm_delay:?}, lease settings (lease {:?}, reconcile every {:?}, session grace {:?})",
        backend.as_str(),
        settings.lease_ttl,
        settings.reconcile_interval,
        settings.session_grace
    );
    let limits = RunLimits {
        max_iterations: 6,
        max_attempts: 10,
        priority: queue::PRIORITY_LIVE,
        shadowed: false,
    };
    let log = faultline_tests::oom_log();
    for i in 0..runs {
        let event = NewEvent {
            dedup_key: format!("chaos:{i}"),
            source: "chaos".into(),
            job_name: Some(format!("chaos-{i}")),
            ..NewEvent::default()
        };
        storage::ingest(&pool, &broker, &event, log.as_bytes(), limits).await?;
    }

    let bin = std::env::current_exe()?
        .parent()
        .context("bin dir")?
        .join("faultline-worker");
    let model_env = four_step_model::worker_env(addr);
    let spawn = |slot: usize, generation: usize| -> anyhow::Result<(String, Child)> {
        let id = format!("chaos-w{slot}-g{generation}");
        let child = Command::new(&bin)
            .env("DATABASE_URL", url)
            .env("FAULTLINE_WORKER_ID", &id)
            .env("FAULTLINE_WORKER_CONCURRENCY", concurrency.to_string())
            // Lease, reconcile, poll, heartbeat and retry settings are the
            // product's defaults unless the environment sets them: the
            // resume times are what a user gets.
            .envs(model_env.iter().map(|(k, v)| (k, v)))
            .env("LLM_TIMEOUT_MS", "10000")
            .env("RUST_LOG", "error")
            // Several workers on one host: each takes a free port for /metrics.
            .env("WORKER_HTTP_ADDR", "127.0.0.1:0")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("start {}", bin.display()))?;
        Ok((id, child))
    };
    let mut procs = Procs(
        (0..workers)
            .map(|slot| spawn(slot, 0))
            .collect::<anyhow::Result<_>>()?,
    );
    let mut generation = 1;

    let started = Instant::now();
    let mut kills: Vec<Kill> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut pg_restarted = !pg_restart;
    // Just before Postgres restarted, and when it accepted statements again.
    let mut pg_down: Option<DateTime<Utc>> = None;
    let mut pg_back: Option<DateTime<Utc>> = None;
    let mut redis_wiped = backend != QueueBackend::Redis || wipe == "none";
    if !pg_restart {
        notes.push("Postgres restart: skipped (CHAOS_PG_RESTART=0)".into());
    }
    if backend == QueueBackend::Redis && wipe == "none" {
        notes.push("Redis wipe: skipped (CHAOS_REDIS_WIPE=none)".into());
    }
    let mut next_kill = Instant::now() + kill_every;
    let finished = loop {
        let open = open_runs(&pool).await;
        let done = open.map(|n| runs as i64 - n).unwrap_or(0);
        if open == Some(0) {
            break true;
        }
        if started.elapsed() > timeout {
            break false;
        }
        // The wipe first: runs finish in a burst after the Postgres restart,
        // and the wipe must land while most runs still have steps queued.
        if !pg_restarted && done as usize >= runs * 4 / 10 {
            pg_restarted = true;
            pg_down = back_at(&pool).await;
            notes.push(restart_postgres());
            pg_back = back_at(&pool).await;
        }
        if !redis_wiped && done as usize >= runs * 2 / 10 {
            redis_wiped = true;
            wipe_redis(&settings, &wipe).await?;
            notes.push(format!("Redis wipe ({wipe}) after {done} runs finished"));
        }
        if Instant::now() >= next_kill {
            next_kill += kill_every;
            let slot = rand_index(procs.0.len());
            let (id, mut child) = procs.0.swap_remove(slot);
            let _ = child.kill();
            let _ = child.wait();
            if let Ok(kill) = held_by(&pool, &id).await {
                kills.push(kill);
            }
            procs.0.push(spawn(slot, generation)?);
            generation += 1;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let wall = started.elapsed();
    drop(procs);
    if !finished {
        println!("TIMEOUT after {wall:?}");
    }

    // Checks.
    let mut failures = Vec::new();
    let statuses: Vec<(String, i64)> = sqlx::query_as(
        "SELECT status, count(*) FROM analysis_runs GROUP BY status ORDER BY status",
    )
    .fetch_all(&pool)
    .await?;
    let open: i64 = statuses
        .iter()
        .filter(|(s, _)| !["completed", "needs_review", "failed"].contains(&s.as_str()))
        .map(|(_, n)| n)
        .sum();
    if open > 0 {
        failures.push(format!("I1: {open} runs not terminal"));
    }
    let (bad_journals, short_runs): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE n <> r.iteration OR n <> distinct_n OR max_i <> r.iteration),
                count(*) FILTER (WHERE r.iteration < 4)
         FROM analysis_runs r
         LEFT JOIN LATERAL (SELECT count(*) AS n, count(DISTINCT iteration) AS distinct_n,
                                   coalesce(max(iteration), 0) AS max_i
                            FROM run_steps s WHERE s.run_id = r.id) j ON true",
    )
    .fetch_one(&pool)
    .await?;
    if bad_journals > 0 {
        failures.push(format!(
            "I2: {bad_journals} runs whose journal is not exactly 1..=iteration"
        ));
    }
    let commits: Vec<(String, i32, DateTime<Utc>)> = sqlx::query_as(
        "SELECT e.job_name, s.iteration, s.created_at FROM run_steps s
         JOIN analysis_runs r ON r.id = s.run_id JOIN failure_events e ON e.id = r.event_id",
    )
    .fetch_all(&pool)
    .await?;
    let committed: HashMap<(String, usize), DateTime<Utc>> = commits
        .into_iter()
        .map(|(job, it, at)| ((job, it as usize), at))
        .collect();
    let seen = fake.seen();
    let requests: usize = seen.values().map(Vec::len).sum();
    let repeated_in_flight: usize = seen.values().map(|v| v.len() - 1).sum();
    let after_journal = seen
        .iter()
        .filter(|(key, times)| {
            committed
                .get(*key)
                .is_some_and(|at| times.iter().any(|t| t > at))
        })
        .count();
    if after_journal > 0 {
        failures.push(format!(
            "I3: {after_journal} model calls repeated after their iteration was journaled"
        ));
    }
    let tools_after: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM tool_invocations t
         JOIN run_steps s ON s.run_id = t.run_id AND s.iteration = t.iteration
         WHERE t.started_at > s.created_at",
    )
    .fetch_one(&pool)
    .await?;
    if tools_after > 0 {
        failures.push(format!(
            "I3: {tools_after} tool calls repeated after their iteration was journaled"
        ));
    }
    let resumes = resume_times(&pool, &kills).await?;
    let takeovers = takeover_times(&pool, &kills).await?;
    let held: usize = kills.iter().map(|k| k.held.len()).sum();
    let steps: i64 = sqlx::query_scalar("SELECT count(*) FROM run_steps")
        .fetch_one(&pool)
        .await?;

    println!("\n| check | result |\n|---|---|");
    println!("| backend | {} |", backend.as_str());
    println!(
        "| runs | {runs} ({}), {short_runs} with < 4 iterations |",
        statuses
            .iter()
            .map(|(s, n)| format!("{s} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "| wall time | {:.1} s, {steps} checkpointed steps |",
        wall.as_secs_f64()
    );
    println!(
        "| kills | {} SIGKILLs, {held} in-flight runs held by the killed workers |",
        kills.len()
    );
    for note in &notes {
        println!("| event | {note} |");
    }
    println!("| I1 every run terminal | {} |", ok(open == 0));
    println!(
        "| I2 one checkpoint per iteration | {} |",
        ok(bad_journals == 0)
    );
    println!(
        "| I3 no journaled call repeated | {} ({requests} model calls, {repeated_in_flight} repeats of calls in flight at a kill, {tools_after} tool calls after their checkpoint) |",
        ok(after_journal == 0 && tools_after == 0)
    );
    println!(
        "| I4 resume after kill | {} |",
        summary(&resumes)
            .map(|(p50, p99, max)| format!(
                "p50 {p50:.2} s, p99 {p99:.2} s, max {max:.2} s (n={})",
                resumes.len()
            ))
            .unwrap_or_else(|| "no run was held by a killed worker".into())
    );
    // A kill shortly before the Postgres restart (its take-over not done
    // yet) or after it, within the quiet time in which only workers gone
    // before the restart are taken over, waits for the restart or that
    // time: shown apart, so the restart does not hide the usual resume.
    if let (Some(down), Some(back)) = (pg_down, pg_back) {
        let near = |k: &&Kill| k.at >= down - BEFORE_RESTART && k.at < back + AFTER_RESTART;
        let (after, others): (Vec<Kill>, Vec<Kill>) = kills.iter().cloned().partition(|k| near(&k));
        for (label, part) in [
            ("outside the restart", others),
            ("from 5 s before to 10 s after the Postgres restart", after),
        ] {
            let times = resume_times(&pool, &part).await?;
            if let Some((p50, p99, max)) = summary(&times) {
                println!(
                    "| I4 resume, kills {label} | p50 {p50:.2} s, p99 {p99:.2} s, max {max:.2} s (n={}) |",
                    times.len()
                );
            }
        }
    }
    if let Some((p50, p99, max)) = summary(&takeovers) {
        println!(
            "| I4 taken over after kill | p50 {p50:.2} s, p99 {p99:.2} s, max {max:.2} s (n={}) |",
            takeovers.len()
        );
    }
    if short_runs > 0 {
        failures.push(format!(
            "{short_runs} runs ended with fewer than 4 iterations"
        ));
    }
    if !finished {
        failures.push(format!("runs still open after {timeout:?}"));
    }
    if backend == QueueBackend::Redis {
        // Leave the Redis server as we found it (the queues' bookkeeping keys).
        wipe_redis(&settings, "namespace").await?;
    }
    if failures.is_empty() {
        println!("\nchaos: all invariants held");
        Ok(())
    } else {
        bail!("chaos: invariants broken: {}", failures.join("; "))
    }
}

fn ok(b: bool) -> &'static str {
    if b { "ok" } else { "FAILED" }
}

fn rand_index(n: usize) -> usize {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as usize)
        .unwrap_or(0);
    nanos % n.max(1)
}

async fn open_runs(pool: &PgPool) -> Option<i64> {
    sqlx::query_scalar(
        "SELECT count(*) FROM analysis_runs WHERE status NOT IN ('completed', 'needs_review', 'failed')",
    )
    .fetch_one(pool)
    .await
    .ok()
}

/// How long before and after a Postgres restart a kill counts as near it.
const BEFORE_RESTART: chrono::TimeDelta = chrono::TimeDelta::seconds(5);
const AFTER_RESTART: chrono::TimeDelta = chrono::TimeDelta::seconds(10);

/// The database's clock once it answers again (after a restart).
async fn back_at(pool: &PgPool) -> Option<DateTime<Utc>> {
    for _ in 0..300 {
        if let Ok(at) = sqlx::query_scalar("SELECT now()").fetch_one(pool).await {
            return Some(at);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// The runs `worker` held when it was killed (its leases are still in place).
async fn held_by(pool: &PgPool, worker: &str) -> sqlx::Result<Kill> {
    let rows: Vec<(DateTime<Utc>, Uuid, i32)> = sqlx::query_as(
        "SELECT now(), id, iteration FROM analysis_runs WHERE lease_owner = $1 AND status = 'running'",
    )
    .bind(worker)
    .fetch_all(pool)
    .await?;
    let at = match rows.first() {
        Some(r) => r.0,
        None => sqlx::query_scalar("SELECT now()").fetch_one(pool).await?,
    };
    Ok(Kill {
        at,
        held: rows.into_iter().map(|(_, id, it)| (id, it)).collect(),
    })
}

/// Seconds from each kill to the next commit of every run the worker held.
async fn resume_times(pool: &PgPool, kills: &[Kill]) -> sqlx::Result<Vec<f64>> {
    since_kill(
        pool,
        kills,
        "SELECT min(created_at) FROM run_steps WHERE run_id = $1 AND iteration > $2",
    )
    .await
}

/// Seconds from each kill to the take-over of every run the worker held
/// (the attempt the reconciler recorded for it).
async fn takeover_times(pool: &PgPool, kills: &[Kill]) -> sqlx::Result<Vec<f64>> {
    since_kill(
        pool,
        kills,
        "SELECT min(failed_at) FROM run_attempts WHERE run_id = $1 AND iteration > $2 AND worker_id IS NULL",
    )
    .await
}

async fn since_kill(pool: &PgPool, kills: &[Kill], sql: &'static str) -> sqlx::Result<Vec<f64>> {
    let mut out = Vec::new();
    for kill in kills {
        for (run, iteration) in &kill.held {
            let next: Option<DateTime<Utc>> = sqlx::query_scalar(sql)
                .bind(run)
                .bind(iteration)
                .fetch_one(pool)
                .await?;
            if let Some(next) = next {
                out.push((next - kill.at).num_milliseconds().max(0) as f64 / 1000.0);
            }
        }
    }
    Ok(out)
}

fn summary(seconds: &[f64]) -> Option<(f64, f64, f64)> {
    if seconds.is_empty() {
        return None;
    }
    let mut h = Histogram::<u64>::new(3).unwrap();
    for s in seconds {
        let _ = h.record((s * 1000.0).max(1.0) as u64);
    }
    let q = |p: f64| h.value_at_quantile(p) as f64 / 1000.0;
    Some((q(0.5), q(0.99), h.max() as f64 / 1000.0))
}

/// Restarts the local Postgres cluster once; returns what happened.
fn restart_postgres() -> String {
    let clusters = Command::new("pg_lsclusters").arg("--no-header").output();
    let Some((version, cluster)) = clusters.ok().and_then(|o| {
        let text = String::from_utf8_lossy(&o.stdout).to_string();
        let mut parts = text.split_whitespace();
        Some((parts.next()?.to_string(), parts.next()?.to_string()))
    }) else {
        return "Postgres restart: skipped (pg_lsclusters found no local cluster)".into();
    };
    let started = Instant::now();
    match Command::new("pg_ctlcluster")
        .args([&version, &cluster, "restart", "-m", "fast"])
        .output()
    {
        Ok(o) if o.status.success() => format!(
            "Postgres restart: pg_ctlcluster {version} {cluster} restart took {:.1} s",
            started.elapsed().as_secs_f64()
        ),
        Ok(o) => format!(
            "Postgres restart: skipped (pg_ctlcluster failed: {})",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => format!("Postgres restart: skipped (pg_ctlcluster: {e})"),
    }
}

/// Loses Redis's contents: FLUSHALL, or only this namespace's keys (so
/// parallel tests on one Redis do not wipe each other).
async fn wipe_redis(settings: &Settings, how: &str) -> anyhow::Result<()> {
    match how {
        "flushall" => {
            let client = redis::Client::open(settings.redis_url.expose_secret())?;
            let mut conn = client.get_multiplexed_async_connection().await?;
            redis::cmd("FLUSHALL").query_async::<()>(&mut conn).await?
        }
        "namespace" => {
            faultline_tests::wipe_redis_namespace(
                settings.redis_url.expose_secret(),
                &settings.redis_namespace,
            )
            .await?;
        }
        _ => {}
    }
    Ok(())
}

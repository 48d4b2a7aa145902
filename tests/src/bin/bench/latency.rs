//! `BENCH_MODE=latency` (`make bench-latency`): the engine at real model
//! latency. A fake OpenAI-compatible model answers every call after
//! `BENCH_MODEL_LATENCY_MS` (2,000); each configuration of
//! `BENCH_LATENCY_SET` (`1x64,1x256,1x1000,4x250`: worker processes x
//! slots) gets a fresh database with `BENCH_RUNS_PER_SLOT` (4) runs per
//! slot of four model-calling iterations each, its workers start, and the
//! backlog drains. Reported per configuration:
//!
//! - steps/s and efficiency: steps/s ÷ (slots ÷ latency), the share of the
//!   ideal a perfect engine would reach, from the first claim to the last
//!   commit (as `make bench` counts; the workers' start-up is printed);
//! - model calls made twice (nothing crashes here, so it must be 0);
//! - peak Postgres connections per worker (pg_stat_activity, sampled every
//!   100 ms, by each worker's application_name) against its budget;
//! - worker peak RSS (VmHWM) and the memory per in-flight run above an idle
//!   worker's;
//! - step overhead: a commit to the next model call of the same run, p50/p99.
//!
//! Workers run with the product's defaults, except concurrency.

use std::{
    collections::HashMap,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::Context;
use chrono::{DateTime, Utc};
use faultline_shared::{
    Settings,
    config::{ExposeSecret as _, Source},
    db, queue,
    storage::{self, events::NewEvent, runs::RunLimits},
};
use faultline_tests::four_step_model::{self, FourStepModel};
use hdrhistogram::Histogram;
use sqlx::{Connection, PgConnection, PgPool};

struct Config {
    workers: usize,
    slots: usize,
}

struct Row {
    config: Config,
    runs: usize,
    steps: i64,
    wall: f64,
    open: i64,
    twice: usize,
    peak_connections: i64,
    peak_rss_kib: u64,
    overhead: Option<(f64, f64)>,
    /// The pool-wait probe's mean and p99 (a bucket's upper bound), in ms.
    pool_wait: Option<(f64, f64)>,
}

fn configs() -> anyhow::Result<Vec<Config>> {
    std::env::var("BENCH_LATENCY_SET")
        .unwrap_or_else(|_| "1x64,1x256,1x1000,4x250".into())
        .split(',')
        .map(|c| {
            let (w, s) = c
                .trim()
                .split_once('x')
                .context("BENCH_LATENCY_SET: WORKERSxSLOTS, comma separated")?;
            Ok(Config {
                workers: w.parse()?,
                slots: s.parse()?,
            })
        })
        .collect()
}

pub async fn run() -> anyhow::Result<()> {
    let latency = Duration::from_millis(super::env_or("BENCH_MODEL_LATENCY_MS", 2000) as u64);
    let per_slot = super::env_or("BENCH_RUNS_PER_SLOT", 4);
    let base = Settings::from_env()?;
    let url = base.database_url.expose_secret().to_string();
    let (server, _) = url
        .rsplit_once('/')
        .context("DATABASE_URL has no database part")?;
    let admin = format!("{server}/postgres");
    let mut conn = PgConnection::connect(&admin)
        .await
        .context("connect to the Postgres server")?;
    let max_connections: String = sqlx::query_scalar("SHOW max_connections")
        .fetch_one(&mut conn)
        .await?;
    println!(
        "faultline-bench latency on {}, broker {}, model latency {latency:?}, {per_slot} runs of 4 model calls per slot, Postgres max_connections={max_connections}, worker connection budget FAULTLINE_DB_POOL_SIZE={}",
        super::machine(),
        base.queue_backend.as_str(),
        base.db_pool_size,
    );
    let mut rows = Vec::new();
    let mut idle_rss = None;
    for config in configs()? {
        let name = format!("faultline_latency_{}_{}", std::process::id(), rows.len());
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut conn)
            .await?;
        let db_url = format!("{server}/{name}");
        let row = one(&db_url, config, latency, per_slot, &mut idle_rss).await;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
        )))
        .execute(&mut conn)
        .await?;
        rows.push(row?);
    }
    print_table(&rows, latency, idle_rss.unwrap_or(0), base.db_pool_size);
    Ok(())
}

async fn one(
    url: &str,
    config: Config,
    latency: Duration,
    per_slot: usize,
    idle_rss: &mut Option<u64>,
) -> anyhow::Result<Row> {
    let mut env = Source::env();
    env.set("DATABASE_URL", url);
    let settings = Settings::load(&env)?;
    let pool = db::connect(&settings, 4).await?;
    db::migrate(&pool).await?;
    let broker = queue::connect(&settings).await?;
    let (addr, model) = FourStepModel::start(latency, "bench-").await?;
    let ports: Vec<u16> = (0..config.workers.max(1))
        .map(|_| free_port())
        .collect::<anyhow::Result<_>>()?;
    let spawn = |i: usize| -> anyhow::Result<Child> {
        Command::new(
            std::env::current_exe()?
                .parent()
                .context("bin dir")?
                .join("faultline-worker"),
        )
        .env("DATABASE_URL", format!("{url}?application_name=bench-w{i}"))
        .env("FAULTLINE_WORKER_ID", format!("bench-w{i}"))
        .env("FAULTLINE_WORKER_CONCURRENCY", config.slots.to_string())
        .envs(four_step_model::worker_env(addr))
        .env("LLM_TIMEOUT_MS", "60000")
        .env(
            "RUST_LOG",
            std::env::var("BENCH_WORKER_LOG").unwrap_or_else(|_| "error".into()),
        )
        .env("WORKER_HTTP_ADDR", format!("127.0.0.1:{}", ports[i]))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .context("start faultline-worker")
    };
    if idle_rss.is_none() {
        // A worker with nothing to do: the base of the per-run memory.
        let mut idle = spawn(0)?;
        tokio::time::sleep(Duration::from_secs(2)).await;
        *idle_rss = Some(rss_kib(idle.id(), "VmRSS"));
        let _ = idle.kill();
        let _ = idle.wait();
    }

    let runs = config.workers * config.slots * per_slot;
    let limits = RunLimits {
        max_iterations: 6,
        max_attempts: 5,
        priority: queue::PRIORITY_LIVE,
        shadowed: false,
    };
    let log = faultline_tests::oom_log();
    for i in 0..runs {
        let event = NewEvent {
            dedup_key: format!("latency:{i}"),
            source: "bench".into(),
            job_name: Some(format!("bench-{i}")),
            ..NewEvent::default()
        };
        storage::ingest(&pool, &broker, &event, log.as_bytes(), limits).await?;
    }
    sqlx::query("ANALYZE").execute(&pool).await?;

    let started = Instant::now();
    let cpu_before = machine_cpu();
    let mut children: Vec<Child> = (0..config.workers)
        .map(spawn)
        .collect::<anyhow::Result<_>>()?;
    let mut peak_connections = 0;
    let mut peak_rss_kib = 0;
    let deadline = Duration::from_secs(60) + latency * (per_slot as u32 * 4 * 10);
    // Open runs are counted every 500 ms (a scan of analysis_runs: Postgres
    // CPU the engine shares), connections and RSS every 100 ms. The end is
    // found a little later, which changes no figure: they run from the
    // first claim to the last commit.
    let mut sample = 0u64;
    let open = loop {
        if sample.is_multiple_of(5) {
            let open = open_runs(&pool).await?;
            if open == 0 || started.elapsed() > deadline {
                break open;
            }
        }
        sample += 1;
        peak_connections = peak_connections.max(connections_per_worker(&pool).await?);
        for c in &children {
            peak_rss_kib = peak_rss_kib.max(rss_kib(c.id(), "VmHWM"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let wall = started.elapsed().as_secs_f64();
    let cpu = machine_cpu().map(|(busy, all)| {
        let (b0, a0) = cpu_before.unwrap_or_default();
        (busy - b0, all - a0)
    });
    let mut pool_wait = Vec::new();
    for port in &ports {
        if let Ok(page) = scrape(*port).await {
            pool_wait.push(page);
        }
    }
    for c in &mut children {
        let _ = c.kill();
        let _ = c.wait();
    }
    // As `make bench` does: first claim to last commit, so the workers'
    // start-up (printed) is not counted as the engine's time.
    let (steps, span): (i64, f64) = sqlx::query_as(
        "SELECT count(*), extract(epoch FROM max(s.created_at) - min(r.started_at))::float8
         FROM run_steps s JOIN analysis_runs r ON r.id = s.run_id",
    )
    .fetch_one(&pool)
    .await?;
    println!(
        "  {} x {}: first claim {:.2} s after the workers were started, last commit {span:.1} s after that",
        config.workers,
        config.slots,
        wall - span
    );
    if let Some((busy, all)) = cpu {
        // Jiffies of all cores: busy share, and CPU seconds per step.
        let hz = 100.0; // USER_HZ
        println!(
            "  machine CPU while the workers ran (Postgres, workers, this fake model): {:.0} % busy, {:.2} ms of CPU per step",
            100.0 * busy as f64 / all.max(1) as f64,
            busy as f64 / hz * 1000.0 / steps.max(1) as f64
        );
    }
    let wall = span;
    let seen = model.seen();
    let twice = seen.values().map(|v| v.len() - 1).sum();
    Ok(Row {
        runs,
        steps,
        wall,
        open,
        twice,
        peak_connections,
        peak_rss_kib,
        overhead: overhead(&pool, &seen, latency, config.workers * config.slots, span).await?,
        pool_wait: pool_wait_quantiles(&pool_wait),
        config,
    })
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

async fn scrape(port: u16) -> anyhow::Result<String> {
    Ok(reqwest::get(format!("http://127.0.0.1:{port}/metrics"))
        .await?
        .text()
        .await?)
}

/// The workers' `faultline_db_pool_wait_seconds`: mean and p99 in ms.
fn pool_wait_quantiles(pages: &[String]) -> Option<(f64, f64)> {
    let name = "faultline_db_pool_wait_seconds";
    let sum: f64 = pages
        .iter()
        .map(|p| faultline_tests::metric_sample(p, &format!("{name}_sum"), &[]))
        .sum();
    let count: f64 = pages
        .iter()
        .map(|p| faultline_tests::metric_sample(p, &format!("{name}_count"), &[]))
        .sum();
    if count == 0.0 {
        return None;
    }
    let mut buckets: Vec<(f64, f64)> = Vec::new();
    for page in pages {
        for line in page
            .lines()
            .filter(|l| l.starts_with(&format!("{name}_bucket{{")))
        {
            let le = line
                .split("le=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(f64::INFINITY);
            let n: f64 = line
                .rsplit(' ')
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0);
            match buckets.iter_mut().find(|(b, _)| *b == le) {
                Some(b) => b.1 += n,
                None => buckets.push((le, n)),
            }
        }
    }
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let p99 = buckets
        .iter()
        .find(|(_, n)| *n >= 0.99 * count)
        .map_or(f64::INFINITY, |(le, _)| *le);
    Some((sum / count * 1000.0, p99 * 1000.0))
}

async fn open_runs(pool: &PgPool) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT count(*) FROM analysis_runs WHERE status NOT IN ('completed', 'needs_review', 'failed')",
    )
    .fetch_one(pool)
    .await
}

/// The most connections any one worker has open now.
async fn connections_per_worker(pool: &PgPool) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT coalesce(max(n), 0) FROM (
             SELECT count(*) AS n FROM pg_stat_activity
             WHERE datname = current_database() AND application_name LIKE 'bench-w%'
             GROUP BY application_name) per_worker",
    )
    .fetch_one(pool)
    .await
}

/// The machine's CPU time so far from /proc/stat, in jiffies: (busy, all).
fn machine_cpu() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    let all: u64 = fields.iter().take(8).sum();
    // idle and iowait
    let idle = fields.get(3)? + fields.get(4)?;
    Some((all - idle, all))
}

/// A field of /proc/PID/status in KiB (0 once the process is gone).
fn rss_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Commit of iteration k to the model call of iteration k + 1 of the same
/// run: the engine's time between two model calls (p50, p99 in ms).
async fn overhead(
    pool: &PgPool,
    seen: &HashMap<(String, usize), Vec<DateTime<Utc>>>,
    latency: Duration,
    slots: usize,
    span: f64,
) -> sqlx::Result<Option<(f64, f64)>> {
    let commits: Vec<(String, i32, DateTime<Utc>)> = sqlx::query_as(
        "SELECT e.job_name, s.iteration, s.created_at FROM run_steps s
         JOIN analysis_runs r ON r.id = s.run_id JOIN failure_events e ON e.id = r.event_id",
    )
    .fetch_all(pool)
    .await?;
    let mut h = Histogram::<u64>::new(3).expect("histogram");
    let mut reply = Histogram::<u64>::new(3).expect("histogram");
    let micros = |d: chrono::TimeDelta| d.num_microseconds().unwrap_or(0).max(1) as u64;
    // Slot time (slots x span) not spent waiting on the model, split into
    // a reply's way to its commit, a commit's way to the next call of the
    // same run, and the rest (a slot between two runs, the ramp, the tail).
    let (mut to_commit, mut to_next, mut in_model) = (0f64, 0f64, 0f64);
    let secs = |d: chrono::TimeDelta| d.num_microseconds().unwrap_or(0) as f64 / 1e6;
    let mut by_iteration: HashMap<i32, Histogram<u64>> = HashMap::new();
    for (job, iteration, committed) in commits {
        if let Some(call) = seen
            .get(&(job.clone(), iteration as usize))
            .and_then(|t| t.last())
        {
            let _ = reply.record(micros(committed - *call));
            let _ = by_iteration
                .entry(iteration)
                .or_insert_with(|| Histogram::new(3).expect("histogram"))
                .record(micros(committed - *call));
            in_model += latency.as_secs_f64();
            to_commit += (secs(committed - *call) - latency.as_secs_f64()).max(0.0);
        }
        if let Some(next) = seen
            .get(&(job, iteration as usize + 1))
            .and_then(|t| t.first())
        {
            let _ = h.record(micros(*next - committed));
            to_next += secs(*next - committed).max(0.0);
        }
    }
    // The slot time outside any run: before a slot's first run (the
    // ramp: the first `slots` claims), after its last (the tail: the last
    // `slots` finishes), and between two runs of a slot (the rest).
    let runs: Vec<(String, DateTime<Utc>, DateTime<Utc>)> = sqlx::query_as(
        "SELECT e.job_name, r.started_at, r.finished_at FROM analysis_runs r
         JOIN failure_events e ON e.id = r.event_id
         WHERE r.started_at IS NOT NULL AND r.finished_at IS NOT NULL",
    )
    .fetch_all(pool)
    .await?;
    let in_runs: f64 = runs.iter().map(|(_, s, f)| secs(*f - *s)).sum();
    let to_first_call: f64 = runs
        .iter()
        .filter_map(|(job, started, _)| {
            let call = seen.get(&(job.clone(), 1))?.first()?;
            Some(secs(*call - *started).max(0.0))
        })
        .sum();
    let mut starts: Vec<DateTime<Utc>> = runs.iter().map(|r| r.1).collect();
    let mut ends: Vec<DateTime<Utc>> = runs.iter().map(|r| r.2).collect();
    starts.sort();
    ends.sort();
    let (ramp, tail) = match (starts.first(), ends.last()) {
        (Some(first), Some(last)) => (
            starts.iter().take(slots).map(|s| secs(*s - *first)).sum(),
            ends.iter()
                .rev()
                .take(slots)
                .map(|e| secs(*last - *e))
                .sum(),
        ),
        _ => (0.0, 0.0),
    };
    let total = slots as f64 * span;
    let pct = |x: f64| 100.0 * x / total;
    println!(
        "  slot time: {:.1} % waiting on the model, {:.1} % reply to commit, {:.1} % commit to the next call, {:.1} % claim to the first call, {:.1} % the rest of the runs; outside runs: ramp {:.1} %, tail {:.1} %, between runs {:.1} %",
        pct(in_model),
        pct(to_commit),
        pct(to_next),
        pct(to_first_call),
        pct(in_runs - in_model - to_commit - to_next - to_first_call),
        pct(ramp),
        pct(tail),
        pct(total - in_runs - ramp - tail)
    );
    let parts: Vec<(i32, f64, f64, f64, f64)> = sqlx::query_as(
        "SELECT iteration, percentile_cont(0.5) WITHIN GROUP (ORDER BY step_ms)::float8,
                percentile_cont(0.5) WITHIN GROUP (ORDER BY tool_ms)::float8,
                percentile_cont(0.5) WITHIN GROUP (ORDER BY (llm->>'latency_ms')::float8)::float8,
                percentile_cont(0.99) WITHIN GROUP (ORDER BY (llm->>'latency_ms')::float8)::float8
         FROM run_steps GROUP BY iteration ORDER BY iteration",
    )
    .fetch_all(pool)
    .await?;
    for (iteration, step, tool, call, call_p99) in parts {
        println!(
            "  journal, iteration {iteration}: step p50 {step:.0} ms, tool p50 {tool:.0} ms, model call (as the worker saw it) p50 {call:.0} ms, p99 {call_p99:.0} ms"
        );
    }
    if h.is_empty() {
        return Ok(None);
    }
    let q = |h: &Histogram<u64>, p: f64| h.value_at_quantile(p) as f64 / 1000.0;
    let mut iterations: Vec<_> = by_iteration.iter().collect();
    iterations.sort_by_key(|(i, _)| **i);
    println!(
        "  model call received to its commit: p50 {:.0} ms, p99 {:.0} ms (by iteration, p50 / p99: {})",
        q(&reply, 0.5),
        q(&reply, 0.99),
        iterations
            .iter()
            .map(|(i, h)| format!("{i}: {:.0} / {:.0}", q(h, 0.5), q(h, 0.99)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(Some((q(&h, 0.5), q(&h, 0.99))))
}

fn print_table(rows: &[Row], latency: Duration, idle_rss_kib: u64, budget: u32) {
    println!(
        "\n| workers x slots | runs | steps | first claim to last commit | steps/s | efficiency | model calls made twice | peak connections per worker (budget {budget}) | pool wait mean / p99 | worker peak RSS | per in-flight run | step overhead p50 / p99 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        let slots = (r.config.workers * r.config.slots) as f64;
        let rate = r.steps as f64 / r.wall;
        let efficiency = rate / (slots / latency.as_secs_f64());
        let per_run = r.peak_rss_kib.saturating_sub(idle_rss_kib) as f64 / r.config.slots as f64;
        let open = if r.open > 0 {
            format!(" ({} runs not terminal)", r.open)
        } else {
            String::new()
        };
        println!(
            "| {} x {} | {} | {}{open} | {:.1} s | {rate:.0} | {:.0} % | {} | {} | {} | {:.0} MiB | {per_run:.0} KiB | {} |",
            r.config.workers,
            r.config.slots,
            r.runs,
            r.steps,
            r.wall,
            efficiency * 100.0,
            r.twice,
            r.peak_connections,
            r.pool_wait
                .map(|(mean, p99)| format!("{mean:.1} / ≤ {p99:.0} ms"))
                .unwrap_or_else(|| "-".into()),
            r.peak_rss_kib as f64 / 1024.0,
            r.overhead
                .map(|(p50, p99)| format!("{p50:.0} / {p99:.0} ms"))
                .unwrap_or_else(|| "-".into()),
        );
    }
    println!("\nidle worker RSS: {:.0} MiB", idle_rss_kib as f64 / 1024.0);
}

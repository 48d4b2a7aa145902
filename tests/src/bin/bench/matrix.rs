//! The benchmark matrix: the `pgbench -N` ceiling, then one child
//! `faultline-bench` per (broker, worker processes), summarised in a table.

use std::process::Command;

use anyhow::{Context, bail};
use faultline_shared::config::ExposeSecret as _;
use serde_json::Value;

fn list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

pub async fn run() -> anyhow::Result<()> {
    let backends = list("BENCH_BACKENDS", "postgres,redis");
    let worker_set: Vec<usize> = list("BENCH_WORKER_SET", "1,2,4,8")
        .iter()
        .map(|w| {
            w.parse()
                .context("BENCH_WORKER_SET: numbers, comma separated")
        })
        .collect::<anyhow::Result<_>>()?;
    let total: usize = super::env_or("BENCH_CONCURRENCY_TOTAL", 16);
    println!("faultline-bench matrix on {}", super::machine());
    println!("load average at start: {}", load_average());
    let ceiling = match pgbench().await {
        Ok(tps) => {
            println!("pgbench -N (scale 1, 8 clients, 2 threads, 10 s): {tps:.0} TPS");
            Some(tps)
        }
        Err(e) => {
            println!("pgbench ceiling skipped: {e:#}");
            None
        }
    };
    let me = std::env::current_exe()?;
    let mut rows = Vec::new();
    for backend in &backends {
        for &workers in &worker_set {
            let concurrency = (total / workers).max(2);
            let out = Command::new(&me)
                .env("BENCH_MODE", "one")
                .env("QUEUE_BACKEND", backend)
                .env(
                    "FAULTLINE_REDIS_NAMESPACE",
                    format!("bench-{}-{workers}", std::process::id()),
                )
                .env("BENCH_WORKERS", workers.to_string())
                .env("BENCH_CONCURRENCY", concurrency.to_string())
                .output()
                .context("run the benchmark child")?;
            let stdout = String::from_utf8_lossy(&out.stdout);
            if !out.status.success() {
                bail!(
                    "benchmark {backend} x {workers} failed:\n{stdout}\n{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            if std::env::var("BENCH_VERBOSE").is_ok() {
                println!("{stdout}");
            }
            let result: Value = stdout
                .lines()
                .find_map(|l| l.strip_prefix("BENCH_RESULT "))
                .context("the child printed no BENCH_RESULT")
                .and_then(|j| Ok(serde_json::from_str(j)?))?;
            println!(
                "  {backend} x {workers}: {:.0} steps/s",
                result["steps_per_s"].as_f64().unwrap_or(0.0)
            );
            rows.push(result);
        }
    }
    println!(
        "\n| broker | worker processes x slots | checkpointed steps/s | vs pgbench -N | checkpoint interval p99 | step commit p50 / p99 (8 committers) | enqueue runs/s |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        let f = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
        let ratio = ceiling
            .map(|c| format!("{:.1} %", 100.0 * f("steps_per_s") / c))
            .unwrap_or_else(|| "n/a".into());
        println!(
            "| {} | {} x {} | {:.0} | {ratio} | {:.0} ms | {:.1} / {:.1} ms | {:.0} |",
            r["backend"].as_str().unwrap_or("?"),
            r["workers"],
            r["concurrency"],
            f("steps_per_s"),
            f("interval_p99_ms"),
            f("commit_p50_ms"),
            f("commit_p99_ms"),
            f("enqueue_per_s"),
        );
    }
    println!("load average at end: {}", load_average());
    Ok(())
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// This machine's Postgres ceiling: `pgbench -N` (no updates of the small
/// tables, so no artificial contention) on a scratch database.
async fn pgbench() -> anyhow::Result<f64> {
    let settings = faultline_shared::Settings::from_env()?;
    let url = settings.database_url.expose_secret();
    let (server, _) = url
        .rsplit_once('/')
        .context("DATABASE_URL has no database")?;
    let name = format!("faultline_pgbench_{}", std::process::id());
    let admin = format!("{server}/postgres");
    let scratch = format!("{server}/{name}");
    let psql = |sql: String| {
        Command::new("psql")
            .args([admin.as_str(), "-qc", &sql])
            .output()
    };
    psql(format!("CREATE DATABASE {name}")).context("psql")?;
    let result = (|| {
        let init = Command::new("pgbench")
            .args(["-i", "-q", "-s", "1", &scratch])
            .output()
            .context("pgbench is not installed")?;
        if !init.status.success() {
            bail!("pgbench -i: {}", String::from_utf8_lossy(&init.stderr));
        }
        let run = Command::new("pgbench")
            .args(["-N", "-c", "8", "-j", "2", "-T", "10", &scratch])
            .output()?;
        let out = String::from_utf8_lossy(&run.stdout);
        out.lines()
            .find_map(|l| l.strip_prefix("tps = "))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .with_context(|| format!("no tps in pgbench output: {out}"))
    })();
    let _ = psql(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
    result
}

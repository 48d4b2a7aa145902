//! The chaos suite, short: `faultline-chaos` with few runs and frequent
//! kills, once per broker. The binary checks I1–I4 itself and exits non-zero
//! when one breaks. Postgres is not restarted here (other tests share the
//! server) and Redis loses only this test's keys; `make chaos` does both for real.

use std::process::Command;

use faultline_tests::{admin_url, bin};

fn chaos(backend: &str) -> String {
    let namespace = format!("chaos-{}", uuid::Uuid::new_v4().simple());
    let out = Command::new(bin("faultline-chaos"))
        .env("DATABASE_URL", admin_url())
        .env("QUEUE_BACKEND", backend)
        .env("FAULTLINE_REDIS_NAMESPACE", &namespace)
        .env("CHAOS_RUNS", "16")
        .env("CHAOS_WORKERS", "3")
        .env("CHAOS_CONCURRENCY", "3")
        .env("CHAOS_KILL_EVERY_MS", "800")
        .env("CHAOS_LLM_DELAY_MS", "150")
        .env("CHAOS_PG_RESTART", "0")
        .env("CHAOS_REDIS_WIPE", "namespace")
        .env("CHAOS_TIMEOUT_SECS", "240")
        .output()
        .expect("run faultline-chaos");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "chaos ({backend}) failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("all invariants held"), "{stdout}");
    // The suite really killed workers that were holding runs.
    let kills = stdout
        .lines()
        .find(|l| l.starts_with("| kills |"))
        .expect("kill line");
    assert!(!kills.contains("| 0 SIGKILLs"), "{kills}");
    stdout
}

#[test]
fn chaos_short_postgres() {
    chaos("postgres");
}

#[test]
fn chaos_short_redis() {
    let out = chaos("redis");
    assert!(out.contains("Redis wipe (namespace)"), "{out}");
}

//! Logs of any size and any bytes: streamed excerpts and chunked storage.

use std::{
    io::{BufWriter, Read, Write},
    time::Duration,
};

use faultline_shared::storage::events::StoredLogReader;
use faultline_tests::{TestDb, bin, wait_terminal};
use nix::sys::resource::{UsageWho, getrusage};
use sha2::{Digest, Sha256};

#[test]
fn excerpt_streams_big_logs() {
    let dir = std::env::temp_dir().join(format!("faultline-big-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("big.log");
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(&path).unwrap());
    let target: u64 = 200 * 1024 * 1024;
    let (mut written, mut n) = (0u64, 0u64);
    while written < target {
        n += 1;
        let line = if n == 1_000_000 {
            "error[E0425]: cannot find value `ledger_total` in this scope\n".to_string()
        } else {
            format!(
                "[{n:09}] Compiling crate_{} v0.{}.0 ... ok, 0 warnings\n",
                n % 997,
                n % 13
            )
        };
        out.write_all(line.as_bytes()).unwrap();
        written += line.len() as u64;
    }
    out.flush().unwrap();
    drop(out);
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size >= target);

    let output = std::process::Command::new(bin("faultline"))
        .arg("excerpt")
        .arg(&path)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains("error[E0425]: cannot find value `ledger_total` in this scope"),
        "missed the error:\n{stdout}"
    );
    assert!(stdout.lines().count() <= 40, "excerpt is bounded");

    // Peak resident memory of the excerpt process (the only child of this test process).
    let peak_kib = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap().max_rss();
    let peak_mib = peak_kib as f64 / 1024.0;
    assert!(
        peak_mib < 64.0,
        "peak RSS {peak_mib:.1} MiB for a {} MiB log",
        size >> 20
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn stored_logs_keep_every_byte_and_stream_in_chunks() {
    let db = TestDb::new().await;
    // ~3.5 MiB spanning four 1 MiB chunks, with invalid UTF-8 and the failure in the third chunk.
    let mut log: Vec<u8> = Vec::new();
    let mut i = 0;
    while log.len() < 2_400_000 {
        log.extend_from_slice(format!("step {i}: downloading artifact ").as_bytes());
        log.extend_from_slice(&[0xff, 0xfe]);
        log.extend_from_slice(format!(" part {i}\n").as_bytes());
        i += 1;
    }
    log.extend_from_slice(b"E: Failed to fetch http://deb.example.org/pool/main/libssl3.deb  Could not resolve 'deb.example.org'\n");
    log.extend_from_slice(&[0xc3, 0x28, b'\n']);
    while log.len() < 3_600_000 {
        log.extend_from_slice(b"cleanup: removing temporary files\n");
    }
    let path = db.write("bytes.log", &log);
    let run = db.enqueue(&path, &[]);

    let (event_id, bytes, sha): (uuid::Uuid, i64, String) = sqlx::query_as(
        "SELECT e.id, e.log_bytes, e.log_sha256 FROM failure_events e JOIN analysis_runs r ON r.event_id = e.id WHERE r.id = $1",
    )
    .bind(run)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(bytes as usize, log.len());
    assert_eq!(sha, faultline_shared::hex(&Sha256::digest(&log)));
    let chunks: i64 =
        sqlx::query_scalar("SELECT count(*) FROM event_log_chunks WHERE event_id = $1")
            .bind(event_id)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(chunks, 4);

    // Reading it back streams the exact bytes.
    let (pool, handle) = (db.pool.clone(), tokio::runtime::Handle::current());
    let back = tokio::task::spawn_blocking(move || {
        let mut out = Vec::new();
        StoredLogReader::new(pool, event_id, handle)
            .read_to_end(&mut out)
            .unwrap();
        out
    })
    .await
    .unwrap();
    assert!(back == log, "stored log differs from the original");

    // The worker's excerpt tool finds the failure in the middle chunk.
    let _worker = db.worker("w", &[]);
    wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    let observation: serde_json::Value =
        sqlx::query_scalar("SELECT observation FROM run_steps WHERE run_id = $1 AND iteration = 1")
            .bind(run)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert!(
        observation
            .to_string()
            .contains("Could not resolve 'deb.example.org'"),
        "{observation:#}"
    );
    assert_eq!(observation["total_bytes"].as_u64(), Some(log.len() as u64));
}

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
    let observation = db.observation(run, "log_excerpt").await;
    assert!(
        observation
            .to_string()
            .contains("Could not resolve 'deb.example.org'"),
        "{observation:#}"
    );
    assert_eq!(observation["total_bytes"].as_u64(), Some(log.len() as u64));
}

/// Peak resident memory of this test process (nextest runs each test in a
/// process of its own), from `/proc`.
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib / 1024.0
}

#[tokio::test(flavor = "multi_thread")]
async fn one_huge_line_is_bounded_in_every_excerpt_mode_and_in_the_error_library() {
    let db = TestDb::new().await;
    // A log that ends in one 100 MiB line, written in pieces (this process
    // never holds it) and stored by `faultline enqueue` (a child process).
    let path = db.dir.join("huge-line.log");
    {
        let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(&path).unwrap());
        out.write_all(b"Running tests\nError: the generator printed this line and never stopped ")
            .unwrap();
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..100 {
            out.write_all(&chunk).unwrap();
        }
        out.flush().unwrap();
    }
    let size = std::fs::metadata(&path).unwrap().len();
    let run = db.enqueue(&path, &[]);
    std::fs::remove_file(&path).unwrap();
    let event_id: uuid::Uuid =
        sqlx::query_scalar("SELECT event_id FROM analysis_runs WHERE id = $1")
            .bind(run)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    let before = peak_rss_mib();

    let belt = faultline_worker::tools::ToolBelt::standard(Duration::from_secs(120), None);
    let ctx = faultline_worker::tools::ToolContext {
        pool: db.pool.clone(),
        run_id: run,
        event_id,
        twin: None,
    };
    for mode in ["tail", "failure"] {
        let observation = belt
            .call(&ctx, "log_excerpt", &serde_json::json!({"mode": mode}))
            .await
            .unwrap();
        let shown = observation.to_string().len();
        assert!(shown < 64 * 1024, "{mode}: a {shown}-byte observation");
        assert_eq!(observation["total_bytes"].as_u64(), Some(size));
        assert_eq!(observation["total_lines"].as_u64(), Some(2));
        for line in observation["error_lines"].as_array().unwrap() {
            assert!(
                line.as_str().unwrap().len() <= 4096,
                "{mode}: an error line over 4 KiB"
            );
        }
    }
    let peak = peak_rss_mib();
    assert!(
        peak < before + 48.0,
        "peak RSS {peak:.0} MiB (was {before:.0} MiB before reading a 100 MiB line)"
    );

    // The whole run: every journal row and the error library's text stay small.
    let _worker = db.worker("w", &[]);
    let status = wait_terminal(&db.pool, run, Duration::from_secs(120)).await;
    assert_ne!(status, "failed");
    let biggest: i64 = sqlx::query_scalar(
        "SELECT max(octet_length(observation::text) + octet_length(action_input::text))::bigint FROM run_steps WHERE run_id = $1",
    )
    .bind(run)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert!(biggest < 1024 * 1024, "a {biggest}-byte journal row");
    let text: Option<i64> = sqlx::query_scalar(
        "SELECT octet_length(failure_text)::bigint FROM run_failure_texts WHERE run_id = $1",
    )
    .bind(run)
    .fetch_optional(&db.pool)
    .await
    .unwrap();
    assert!(
        text.unwrap_or(0) <= 4096 + 32,
        "failure text of {text:?} bytes"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_log_with_nul_bytes_is_analysed_and_its_lines_shown() {
    let db = TestDb::new().await;
    let mut log = b"Setting up the build\n\0\0\0 binary junk \0 from a core dump\n".to_vec();
    log.extend_from_slice(
        b"E: Failed to fetch http://deb.example.org/pool/main/libssl3.deb  Could not resolve 'deb.example.org'\0\n",
    );
    log.extend_from_slice(
        b"The command \"sudo apt-get install -y libssl3\" failed and exited with 100\n",
    );
    let run = db.enqueue(&db.write("nul.log", &log), &[]);
    let _worker = db.worker("w", &[]);
    let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    let error: Option<String> =
        sqlx::query_scalar("SELECT last_error FROM analysis_runs WHERE id = $1")
            .bind(run)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert!(
        status == "completed" || status == "needs_review",
        "{status}: {error:?}"
    );
    let observation = db.observation(run, "log_excerpt").await;
    let shown = observation.to_string();
    assert!(
        shown.contains("Could not resolve 'deb.example.org'\u{2400}"),
        "{observation:#}"
    );
}

/// CPU seconds (user + system) the children of this process used so far.
fn children_cpu() -> f64 {
    let u = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap();
    let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    secs(u.user_time()) + secs(u.system_time())
}

#[test]
fn binary_junk_excerpts_within_a_small_factor_of_text_speed() {
    let dir = std::env::temp_dir().join(format!("faultline-junk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // 5 MB of pseudo-random bytes (a core dump, an image, a wrong encoding)
    // and 5 MB of ordinary build output.
    let mut junk = Vec::with_capacity(5_000_000);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while junk.len() < 5_000_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        junk.extend_from_slice(&x.to_le_bytes());
    }
    let mut text = Vec::with_capacity(5_100_000);
    let mut n = 0;
    while text.len() < 5_000_000 {
        n += 1;
        text.extend_from_slice(
            format!(
                "[{n:07}] Compiling crate_{} v0.{}.0 ... ok, 0 warnings\n",
                n % 997,
                n % 13
            )
            .as_bytes(),
        );
    }
    text.extend_from_slice(b"error[E0425]: cannot find value `total` in this scope\n");
    let excerpt_cpu = |name: &str, bytes: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let before = children_cpu();
        let out = std::process::Command::new(bin("faultline"))
            .arg("excerpt")
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        children_cpu() - before
    };
    let text_cpu = excerpt_cpu("text.log", &text);
    let junk_cpu = excerpt_cpu("junk.bin", &junk);
    std::fs::remove_dir_all(&dir).unwrap();
    // Was ≈ 13 s (0.4 MB/s: every regex fell back to the PikeVM on the
    // first non-ASCII byte); now a few times the text's time.
    assert!(
        junk_cpu < 1.0 + 8.0 * text_cpu,
        "5 MB of junk took {junk_cpu:.2} s of CPU, 5 MB of text {text_cpu:.2} s"
    );
}

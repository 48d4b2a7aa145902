//! What an unauthenticated client can make `faultline serve` hold: per-route
//! body limits, head and body read timeouts, a minimum body rate, a cap on
//! requests in flight that health checks are outside of. Driven over raw
//! TCP, as a hostile client would.

use std::time::{Duration, Instant};

use faultline_tests::TestDb;
use reqwest::StatusCode;
use serde_json::json;
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use crate::*;

const MIB: usize = 1024 * 1024;

/// `VmRSS` of a process, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

/// Opens a connection and sends a request head announcing `length` bytes.
pub(crate) async fn head(server: &Server, path: &str, length: usize, extra: &str) -> TcpStream {
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: faultline\r\ncontent-type: application/json\r\n\
         x-github-event: workflow_run\r\nx-github-delivery: slow\r\n{extra}content-length: {length}\r\n\r\n"
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s
}

/// Writes up to `n` bytes of filler; stops quietly when the server hangs up.
async fn fill(s: &mut TcpStream, n: usize) -> usize {
    let chunk = vec![b' '; 64 * 1024];
    let mut sent = 0;
    while sent < n {
        match s.write_all(&chunk[..chunk.len().min(n - sent)]).await {
            Ok(()) => sent += chunk.len().min(n - sent),
            Err(_) => break,
        }
    }
    sent
}

/// `n` webhook requests from 127.0.0.1 that announce a body and send one
/// byte of it: each holds an in-flight slot while its socket stays open.
pub(crate) async fn unfinished_requests(server: &Server, n: usize) -> Vec<TcpStream> {
    let mut held = Vec::new();
    for _ in 0..n {
        let mut s = head(server, "/webhooks/github", 1000, "").await;
        s.write_all(b"{").await.unwrap();
        held.push(s);
    }
    held
}

/// The status code of the response on `s`, `None` if it closes without one.
pub(crate) async fn status_of(s: &mut (impl AsyncRead + Unpin)) -> Option<u16> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n") {
        match s.read(&mut byte).await {
            Ok(1) => buf.push(byte[0]),
            _ => return None,
        }
    }
    std::str::from_utf8(&buf)
        .ok()?
        .split(' ')
        .nth(1)?
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread")]
async fn slow_clients_holding_big_unsigned_bodies_do_not_grow_the_server() {
    let db = TestDb::new().await;
    // 20 slow clients from one address: above its default in-flight share.
    let server = Server::start(
        &db,
        &[
            ("FAULTLINE_MAX_IN_FLIGHT_PER_CLIENT", "32"),
            ("FAULTLINE_MIN_BODY_RATE_GRACE", "60s"),
        ],
    )
    .await;
    let pid = server.child.id().unwrap();
    assert_eq!(send(server.get("/healthz")).await.0, StatusCode::OK);
    let before = rss(pid);
    // 20 clients announce 24 MiB each, send up to 8 MiB and keep the socket open.
    let mut clients = Vec::new();
    for _ in 0..20 {
        clients.push(tokio::spawn({
            let addr = server.addr().to_string();
            async move {
                let mut s = TcpStream::connect(&addr).await.unwrap();
                let head = format!(
                    "POST /webhooks/github HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
                     x-github-event: workflow_run\r\nx-github-delivery: d\r\ncontent-length: {}\r\n\r\n",
                    24 * MIB
                );
                s.write_all(head.as_bytes()).await.unwrap();
                fill(&mut s, 8 * MIB).await;
                s
            }
        }));
    }
    let mut held = Vec::new();
    for c in clients {
        held.push(c.await.unwrap());
    }
    let peak = (0..10).map(|_| rss(pid)).max().unwrap();
    let grown = peak.saturating_sub(before);
    eprintln!(
        "VmRSS {} MiB before, {} MiB with 20 slow clients (+{} MiB)",
        before / MIB as u64,
        peak / MIB as u64,
        grown / MIB as u64
    );
    assert!(
        grown < 64 * MIB as u64,
        "the server grew by {} MiB",
        grown / MIB as u64
    );
    drop(held);
    assert_eq!(send(server.get("/healthz")).await.0, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oversize_webhook_body_gets_413_before_it_is_all_read() {
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let mut github = head(&server, "/webhooks/github", 24 * MIB, "").await;
    fill(&mut github, 2 * MIB).await;
    let status = tokio::time::timeout(Duration::from_secs(10), status_of(&mut github))
        .await
        .expect("an answer before the body is complete");
    assert_eq!(status, Some(413));

    // Jenkins authenticates by token before reading the body (so it keeps
    // the API's limit: a notification may carry log lines): a wrong token
    // is refused before the body is read.
    let mut jenkins = head(
        &server,
        "/webhooks/jenkins",
        24 * MIB,
        "x-faultline-token: wrong\r\n",
    )
    .await;
    fill(&mut jenkins, 2 * MIB).await;
    let status = tokio::time::timeout(Duration::from_secs(10), status_of(&mut jenkins))
        .await
        .expect("an answer before the body is complete");
    assert_eq!(status, Some(401));

    // The REST API still takes a large log upload from a token holder.
    let admin = db.cli_ok(
        &["token", "create", "--role", "admin", "--name", "ops"],
        &[],
    );
    let log = format!("{}\nBUILD FAILED\n", "compiling ...\n".repeat(5 * MIB / 14));
    let (status, body) = send(
        server
            .post("/api/v1/analyses")
            .bearer_auth(&admin)
            .json(&json!({"log": log})),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_half_sent_head_or_a_stalled_body_is_closed_within_its_timeout() {
    let db = TestDb::new().await;
    let server = Server::start(
        &db,
        &[
            ("FAULTLINE_HEADER_READ_TIMEOUT", "1s"),
            ("FAULTLINE_BODY_READ_TIMEOUT", "1s"),
        ],
    )
    .await;
    // A half-sent head, a socket that sends nothing, one byte, or the
    // HTTP/2 preface and silence: each is closed within the head timeout
    // (the silent ones held a connection slot forever before).
    for sent in [
        &b"POST /webhooks/github HTTP/1.1\r\nhost: x\r\n"[..],
        b"",
        b"P",
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    ] {
        let mut s = TcpStream::connect(server.addr()).await.unwrap();
        s.write_all(sent).await.unwrap();
        let started = Instant::now();
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut rest)).await;
        let shown = String::from_utf8_lossy(sent);
        assert!(closed.is_ok(), "{shown:?} is still open after 10s");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{shown:?}: {:?}",
            started.elapsed()
        );
    }

    let mut s = head(&server, "/webhooks/github", 1000, "").await;
    s.write_all(b"{\"action\":").await.unwrap();
    let started = Instant::now();
    let status = tokio::time::timeout(Duration::from_secs(10), status_of(&mut s))
        .await
        .expect("a stalled body is answered within 10s");
    assert_eq!(status, Some(408));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_slower_than_the_minimum_rate_gets_408_long_before_the_request_timeout() {
    let db = TestDb::new().await;
    let server = Server::start(
        &db,
        &[
            ("FAULTLINE_MIN_BODY_RATE", "100"),
            ("FAULTLINE_MIN_BODY_RATE_GRACE", "1s"),
            ("FAULTLINE_REQUEST_TIMEOUT", "30s"),
        ],
    )
    .await;
    // One byte every 300 ms: never a pause long enough for the body read
    // timeout (15 s), so before only the request timeout (30 s) ended it.
    let mut trickle = head(&server, "/webhooks/github", 1000, "").await;
    let (mut reader, mut writer) = trickle.split();
    let started = Instant::now();
    let drip = async {
        loop {
            if writer.write_all(b" ").await.is_err() {
                std::future::pending::<()>().await;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    };
    let status = tokio::select! {
        status = status_of(&mut reader) => status,
        () = drip => unreachable!(),
        () = tokio::time::sleep(Duration::from_secs(10)) => panic!("no answer within 10s"),
    };
    assert_eq!(status, Some(408));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    // 150 bytes every 500 ms is well above the rate: the body is read
    // whole, past the grace period, and the (unsigned) delivery gets 401.
    let mut steady = head(&server, "/webhooks/github", 600, "").await;
    for _ in 0..4 {
        steady.write_all(&[b' '; 150]).await.unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let status = tokio::time::timeout(Duration::from_secs(10), status_of(&mut steady))
        .await
        .expect("an answer");
    assert_eq!(status, Some(401));
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_past_the_in_flight_cap_get_503_at_once_while_health_checks_answer() {
    let db = TestDb::new().await;
    let server = Server::start(
        &db,
        &[
            ("FAULTLINE_MAX_IN_FLIGHT", "2"),
            ("FAULTLINE_MIN_BODY_RATE_GRACE", "60s"),
            // Each request and refusal in serve.log, printed on failure.
            ("RUST_LOG", "warn,faultline_producer=debug,tower_http=debug"),
        ],
    )
    .await;
    // Two requests whose bodies never finish hold both slots.
    let held = unfinished_requests(&server, 2).await;
    let api = || async { send(server.get("/api/v1/review")).await.0 };
    wait_for_status(
        Duration::from_secs(10),
        StatusCode::SERVICE_UNAVAILABLE,
        api,
    )
    .await;
    // The load balancer's checks are outside the cap.
    assert_eq!(send(server.get("/healthz")).await.0, StatusCode::OK);
    assert_eq!(send(server.get("/readyz")).await.0, StatusCode::OK);
    drop(held);
    wait_for_status(Duration::from_secs(10), StatusCode::UNAUTHORIZED, api).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_past_the_request_timeout_gets_a_408_problem() {
    let db = TestDb::new().await;
    let server = Server::start(
        &db,
        &[
            ("FAULTLINE_REQUEST_TIMEOUT", "1s"),
            ("FAULTLINE_MIN_BODY_RATE_GRACE", "60s"),
        ],
    )
    .await;
    // One byte of a 1000-byte body, then nothing: only the whole-request
    // timeout (1 s; the body read timeout is 15 s) ends it.
    let mut held = head(&server, "/webhooks/github", 1000, "").await;
    held.write_all(b" ").await.unwrap();
    let started = Instant::now();
    let mut response = Vec::new();
    let mut byte = [0u8; 1];
    let read_head = async {
        while !response.ends_with(b"\r\n\r\n") {
            match held.read(&mut byte).await {
                Ok(1) => response.push(byte[0]),
                _ => break,
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read_head)
        .await
        .expect("an answer within 10s");
    let head = String::from_utf8_lossy(&response).to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 408"), "{head}");
    assert!(
        head.contains("content-type: application/problem+json"),
        "the timeout's answer is a problem like every error: {head}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

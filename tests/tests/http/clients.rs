//! Per-client limits of `faultline serve`: one address cannot take more than
//! its share of connections or requests in flight while another is served
//! (127.0.0.1 and 127.0.0.2, both loopback on Linux; a trusted proxy has no
//! connection share), and behind a trusted
//! proxy each `X-Forwarded-For` client has its own wrong-token budget.

use std::{net::IpAddr, time::Duration};

use faultline_tests::{TestDb, wait_until};
use reqwest::StatusCode;
use tokio::{
    io::AsyncWriteExt,
    net::{TcpSocket, TcpStream},
};

use crate::{
    limits::{status_of, unfinished_requests},
    *,
};

/// A raw connection to `server` from the loopback address `local`.
async fn connect_from(server: &Server, local: &str) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{local}:0").parse().unwrap()).unwrap();
    socket
        .connect(server.addr().parse().unwrap())
        .await
        .unwrap()
}

/// The status of `GET /healthz` on `s` (kept open), `None` if it was closed.
async fn health_on(s: &mut TcpStream) -> Option<u16> {
    s.write_all(b"GET /healthz HTTP/1.1\r\nhost: faultline\r\n\r\n")
        .await
        .ok()?;
    tokio::time::timeout(Duration::from_secs(5), status_of(s))
        .await
        .expect("an answer or a close within 5s")
}

/// An HTTP client whose connections come from `local`.
fn client_from(local: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(local.parse::<IpAddr>().unwrap())
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn one_address_over_its_connection_share_is_closed_while_another_is_served() {
    let db = TestDb::new().await;
    let server = Server::start(
        &db,
        &[
            ("FAULTLINE_MAX_CONNECTIONS_PER_CLIENT", "3"),
            ("FAULTLINE_HEADER_READ_TIMEOUT", "60s"),
            ("FAULTLINE_TRUSTED_PROXIES", "127.0.0.3"),
        ],
    )
    .await;
    // Three kept-alive connections, each answered once: all accepted.
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut s = connect_from(&server, "127.0.0.1").await;
        assert_eq!(health_on(&mut s).await, Some(200));
        held.push(s);
    }
    let mut fourth = connect_from(&server, "127.0.0.1").await;
    assert_eq!(health_on(&mut fourth).await, None, "closed at once");
    let mut other = connect_from(&server, "127.0.0.2").await;
    assert_eq!(health_on(&mut other).await, Some(200));
    // A trusted proxy carries many clients: it has no connection share.
    let mut proxy = Vec::new();
    for _ in 0..4 {
        let mut s = connect_from(&server, "127.0.0.3").await;
        assert_eq!(health_on(&mut s).await, Some(200));
        proxy.push(s);
    }
    // One closes: the address gets a connection again.
    held.pop();
    wait_until(Duration::from_secs(10), || async {
        let mut s = connect_from(&server, "127.0.0.1").await;
        health_on(&mut s).await.map(|_| ())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn one_address_over_its_in_flight_share_gets_503_while_another_is_served() {
    let db = TestDb::new().await;
    let server = Server::start(
        &db,
        &[
            ("FAULTLINE_MAX_IN_FLIGHT_PER_CLIENT", "2"),
            ("FAULTLINE_MIN_BODY_RATE_GRACE", "60s"),
            // The held bodies outlast the waits below on a loaded machine.
            ("FAULTLINE_BODY_READ_TIMEOUT", "120s"),
            // Each refusal and connection end in serve.log, printed on failure.
            ("RUST_LOG", "warn,faultline_producer=debug,tower_http=debug"),
        ],
    )
    .await;
    // Two requests from 127.0.0.1 whose bodies never finish, both read
    // before the first probe: a probe in flight while the server reads the
    // second head would have that one refused instead, and the address
    // would never be over its share (a loaded machine showed it).
    let held = unfinished_requests(&server, 2).await;
    wait_until(Duration::from_secs(30), || async {
        let log = std::fs::read_to_string(&server.log).unwrap_or_default();
        let started = log
            .lines()
            .filter(|l| {
                // Field by field: the log may colour them.
                ["POST", "/webhooks/github", "started processing request"]
                    .iter()
                    .all(|w| l.contains(w))
            })
            .count();
        (started >= 2).then_some(())
    })
    .await;
    let (one, two) = (client_from("127.0.0.1"), client_from("127.0.0.2"));
    let url = format!("http://{}/api/v1/review", server.addr());
    // Once both are in flight (the server reads their heads when it gets
    // to them), the address is refused; a failure lists what it got.
    wait_for_status(
        Duration::from_secs(30),
        StatusCode::SERVICE_UNAVAILABLE,
        || async { send(one.get(&url)).await.0 },
    )
    .await;
    let resp = one.get(&url).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(resp.headers()["retry-after"], "1");
    assert_eq!(send(two.get(&url)).await.0, StatusCode::UNAUTHORIZED);
    drop(held);
    wait_for_status(
        Duration::from_secs(10),
        StatusCode::UNAUTHORIZED,
        || async { send(one.get(&url)).await.0 },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn behind_a_trusted_proxy_each_forwarded_client_has_its_own_token_budget() {
    let db = TestDb::new().await;
    let proxied = Server::start(
        &db,
        &[
            ("FAULTLINE_TRUSTED_PROXIES", "127.0.0.1/32"),
            ("FAULTLINE_AUTH_MAX_FAILURES", "2"),
        ],
    )
    .await;
    let guess = |server: &Server, forwarded: &str| {
        send(
            server
                .get("/api/v1/review")
                .bearer_auth("flt_wrong")
                .header("x-forwarded-for", forwarded),
        )
    };
    for _ in 0..2 {
        assert_eq!(
            guess(&proxied, "203.0.113.7").await.0,
            StatusCode::UNAUTHORIZED
        );
    }
    assert_eq!(
        guess(&proxied, "203.0.113.7").await.0,
        StatusCode::TOO_MANY_REQUESTS
    );
    // What the client writes left of the proxy's entry does not help it.
    assert_eq!(
        guess(&proxied, "198.51.100.1, 203.0.113.7").await.0,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(
        guess(&proxied, "203.0.113.8").await.0,
        StatusCode::UNAUTHORIZED
    );
    // IPv6 clients are one client per /64.
    for ip in ["2001:db8:1:2::1", "2001:db8:1:2::2"] {
        assert_eq!(guess(&proxied, ip).await.0, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(
        guess(&proxied, "2001:db8:1:2:ffff::9").await.0,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(
        guess(&proxied, "2001:db8:1:3::1").await.0,
        StatusCode::UNAUTHORIZED
    );

    // Without the setting the header is ignored: one peer, one budget.
    let direct = Server::start(&db, &[("FAULTLINE_AUTH_MAX_FAILURES", "2")]).await;
    for ip in ["203.0.113.7", "203.0.113.8"] {
        assert_eq!(guess(&direct, ip).await.0, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(
        guess(&direct, "203.0.113.9").await.0,
        StatusCode::TOO_MANY_REQUESTS
    );
}

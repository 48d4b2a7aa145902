//! Issue 14, finding 5: `REDIS_URL` carries Redis AUTH/ACL credentials and
//! `rediss://` (TLS). Each test starts its own `redis-server` on a free
//! port (skipped with a message if the binary is not on PATH): a wrong
//! password is a clear start-up error, the right one works, and no
//! password ever shows in the worker's or the CLI's output.

use std::{
    net::TcpListener,
    path::Path,
    process::{Child, Command, Stdio},
    time::Duration,
};

use faultline_tests::{TestDb, oom_log, wait_terminal, wait_until};

/// A `redis-server` of this test; killed when dropped.
struct RedisServer {
    child: Child,
    port: u16,
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `redis-server` with `args` on a free port (`--port`, or
/// `--tls-port` when `tls`), without persistence, and waits until it
/// accepts connections. `None` when there is no `redis-server`.
async fn redis_server(dir: &Path, tls: bool, args: &[&str]) -> Option<RedisServer> {
    let port = free_port();
    let port_args = if tls {
        vec![
            "--port".to_string(),
            "0".into(),
            "--tls-port".into(),
            port.to_string(),
        ]
    } else {
        vec!["--port".to_string(), port.to_string()]
    };
    let child = Command::new("redis-server")
        .args(&port_args)
        .args(["--save", "", "--appendonly", "no", "--bind", "127.0.0.1"])
        .args(["--dir", dir.to_str().unwrap()])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(child) = child else {
        eprintln!("redis-server is not on PATH: skipped");
        return None;
    };
    let server = RedisServer { child, port };
    wait_until(Duration::from_secs(10), || async {
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()
            .map(drop)
    })
    .await;
    Some(server)
}

fn redis_env(url: &str) -> Vec<(&'static str, String)> {
    vec![
        ("QUEUE_BACKEND", "redis".into()),
        ("REDIS_URL", url.into()),
        ("FAULTLINE_REQUEUE_AFTER_MS", "500".into()),
    ]
}

fn refs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// A wrong password stops the worker and the CLI at start with a clear
/// error that does not show it; an ACL user's password lets a run complete.
#[tokio::test(flavor = "multi_thread")]
async fn redis_credentials_come_from_redis_url_and_never_show() {
    let db = TestDb::new().await;
    let Some(redis) = redis_server(
        &db.dir,
        false,
        &[
            "--requirepass",
            "default-pass-4711",
            "--user",
            "faultline",
            "on",
            ">acl-pass-0815",
            "~*",
            "&*",
            "+@all",
        ],
    )
    .await
    else {
        return;
    };
    let port = redis.port;

    let wrong = redis_env(&format!(
        "redis://faultline:wrong-pass-1234@127.0.0.1:{port}"
    ));
    let mut w = db.worker("wrong", &refs(&wrong));
    let exit = w.wait_exit(Duration::from_secs(30)).await;
    assert!(exit.is_some_and(|s| !s.success()), "{}", w.stderr());
    let log = w.stderr();
    assert!(
        log.contains("failed to connect the queue broker")
            && log.contains("Password authentication failed"),
        "{log}"
    );
    assert!(!log.contains("wrong-pass-1234"), "{log}");
    let path = db.write("oom.log", oom_log());
    let out = db.cli(&["enqueue", path.to_str().unwrap()], &refs(&wrong));
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{shown}");
    assert!(!shown.contains("wrong-pass-1234"), "{shown}");

    let right = redis_env(&format!(
        "redis://faultline:acl-pass-0815@127.0.0.1:{port}/0"
    ));
    let run = db.enqueue(&path, &refs(&right));
    let w = db.worker("right", &refs(&right));
    let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    assert!(
        status == "completed" || status == "needs_review",
        "{status}\n{}",
        w.stderr()
    );
    assert!(!w.stderr().contains("acl-pass-0815"), "{}", w.stderr());
}

/// `rediss://` with a server certificate signed by a CA the worker trusts
/// (`SSL_CERT_FILE`, read by rustls-native-certs).
#[tokio::test(flavor = "multi_thread")]
async fn a_rediss_url_speaks_tls_to_redis() {
    let db = TestDb::new().await;
    let dir = db.dir.clone();
    let openssl = |args: &[&str]| {
        Command::new("openssl")
            .args(args)
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let made = openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=faultline test CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
    ]) && openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        "redis.key",
        "-out",
        "redis.csr",
    ]) && std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").is_ok()
        && openssl(&[
            "x509",
            "-req",
            "-in",
            "redis.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            "san.ext",
            "-out",
            "redis.pem",
        ]);
    if !made {
        eprintln!("openssl could not make a certificate: skipped");
        return;
    }
    let file = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let (cert, key, ca) = (file("redis.pem"), file("redis.key"), file("ca.pem"));
    let Some(redis) = redis_server(
        &dir,
        true,
        &[
            "--tls-cert-file",
            &cert,
            "--tls-key-file",
            &key,
            "--tls-ca-cert-file",
            &ca,
            "--tls-auth-clients",
            "no",
            "--requirepass",
            "tls-pass-2024",
        ],
    )
    .await
    else {
        return;
    };
    let mut env = redis_env(&format!("rediss://:tls-pass-2024@127.0.0.1:{}", redis.port));
    env.push(("SSL_CERT_FILE", ca.clone()));
    let path = db.write("oom.log", oom_log());
    let run = db.enqueue(&path, &refs(&env));
    let w = db.worker("tls", &refs(&env));
    let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    assert!(
        status == "completed" || status == "needs_review",
        "{status}\n{}",
        w.stderr()
    );
    assert!(!w.stderr().contains("tls-pass-2024"), "{}", w.stderr());

    // Plain redis:// to the TLS port is refused at start, not hung.
    let plain = redis_env(&format!("redis://:tls-pass-2024@127.0.0.1:{}", redis.port));
    let mut w = db.worker("plain", &refs(&plain));
    let exit = w.wait_exit(Duration::from_secs(30)).await;
    assert!(exit.is_some_and(|s| !s.success()), "{}", w.stderr());
}

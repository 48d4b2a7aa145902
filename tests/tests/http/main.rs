//! Acceptance tests of `faultline serve`: the real binary on a free port,
//! against a fresh database, driven over HTTP with real-shaped payloads
//! (fixtures in `tests/fixtures/http/`).
//!
//! - `github`: signatures, deliveries, redelivery, ignored events.
//! - `jenkins`: Notification plugin builds, phases, inline logs.
//! - `fetch`: the worker fetches a webhook event's log (GitHub redirect, Jenkins console).
//! - `baseline`: it also fetches the last green log of the job, and the excerpt uses it.
//! - `paths`: hostile build URLs and repository names reach no other API path.
//! - `api`: `/api/v1/analyses` with token roles; bad input; health and shutdown.
//! - `limits`: body limits, read timeouts, the minimum body rate and the
//!   in-flight cap (health checks outside it), over raw TCP.
//! - `clients`: per-client connection and in-flight caps, trusted proxies.
//! - `openapi`: the OpenAPI 3.1 document, validated; every operation routed.
//! - `schemathesis`: the API fuzzed by schemathesis, for each token role.
//!
//! This file holds the shared harness ([`Server`] and small helpers).

mod api;
mod baseline;
mod clients;
mod fetch;
mod github;
mod jenkins;
mod limits;
mod openapi;
mod paths;
mod schemathesis;

use std::{io::Read, path::Path};

use faultline_shared::storage::events::StoredLogReader;
use faultline_tests::TestDb;
use hmac::{Hmac, Mac};
use reqwest::{RequestBuilder, StatusCode};
use serde_json::Value;
use sha2::Sha256;
use uuid::Uuid;

pub const GITHUB_SECRET: &str = "gh-secret-for-tests";
pub const JENKINS_TOKEN: &str = "jenkins-token-for-tests";

/// A running `faultline serve`; killed when dropped.
pub struct Server {
    pub child: tokio::process::Child,
    base: String,
    http: reqwest::Client,
    log: std::path::PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        if std::thread::panicking() {
            faultline_tests::print_log_ends(&self.log);
        }
    }
}

impl Server {
    /// Starts the server on port 0 (with both webhook secrets set).
    pub async fn start(db: &TestDb, env: &[(&str, &str)]) -> Server {
        let mut vars = vec![
            ("GITHUB_WEBHOOK_SECRET", GITHUB_SECRET),
            ("JENKINS_WEBHOOK_TOKEN", JENKINS_TOKEN),
        ];
        vars.extend(env.iter().copied());
        let serve = db.serve(&vars).await;
        Server {
            child: serve.child,
            base: serve.base,
            http: reqwest::Client::new(),
            log: serve.log,
        }
    }

    /// `127.0.0.1:PORT`, for raw TCP clients.
    pub fn addr(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    pub fn post(&self, path: &str) -> RequestBuilder {
        self.http.post(format!("{}{path}", self.base))
    }

    pub fn get(&self, path: &str) -> RequestBuilder {
        self.http.get(format!("{}{path}", self.base))
    }

    /// A GitHub delivery of `body`, signed with `key` (`None`: unsigned).
    pub async fn github(
        &self,
        event: &str,
        delivery: &str,
        body: &[u8],
        key: Option<&str>,
    ) -> (StatusCode, Value) {
        let mut req = self
            .post("/webhooks/github")
            .header("content-type", "application/json")
            .header("user-agent", "GitHub-Hookshot/8e03811")
            .header("x-github-event", event)
            .header("x-github-delivery", delivery)
            .header("x-github-hook-id", "109948940")
            .body(body.to_vec());
        if let Some(key) = key {
            req = req.header("x-hub-signature-256", sign(body, key));
        }
        send(req).await
    }

    pub async fn jenkins(&self, body: &Value) -> (StatusCode, Value) {
        send(
            self.post("/webhooks/jenkins")
                .header("x-faultline-token", JENKINS_TOKEN)
                .json(body),
        )
        .await
    }
}

pub async fn send(req: RequestBuilder) -> (StatusCode, Value) {
    let resp = req.send().await.expect("request sent");
    let status = resp.status();
    let text = resp.text().await.unwrap();
    let body = serde_json::from_str(&text)
        .unwrap_or_else(|_| panic!("non-JSON body ({status}): {text:?}"));
    (status, body)
}

/// Probes until one answers `want`; past `deadline` it panics with the
/// statuses seen (so a flake says which wait failed and what it got).
pub async fn wait_for_status<F, Fut>(deadline: std::time::Duration, want: StatusCode, mut probe: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = StatusCode>,
{
    let end = tokio::time::Instant::now() + deadline;
    let mut seen: Vec<(StatusCode, usize)> = Vec::new();
    loop {
        let status = probe().await;
        if status == want {
            return;
        }
        match seen.last_mut() {
            Some((last, n)) if *last == status => *n += 1,
            _ => seen.push((status, 1)),
        }
        if tokio::time::Instant::now() >= end {
            panic!(
                "no {want} within {deadline:?}; answers seen, in order (status, times): {seen:?}"
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}

pub fn sign(body: &[u8], key: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).unwrap();
    mac.update(body);
    format!(
        "sha256={}",
        faultline_shared::hex(&mac.finalize().into_bytes())
    )
}

pub fn fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/http")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

pub fn bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec_pretty(v).unwrap()
}

pub async fn count(db: &TestDb, table: &str) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

pub async fn stored_log(db: &TestDb, event_id: Uuid) -> String {
    let (pool, handle) = (db.pool.clone(), tokio::runtime::Handle::current());
    tokio::task::spawn_blocking(move || {
        let mut out = String::new();
        StoredLogReader::new(pool, event_id, handle)
            .read_to_string(&mut out)
            .unwrap();
        out
    })
    .await
    .unwrap()
}

pub fn id(v: &Value, field: &str) -> Uuid {
    v[field]
        .as_str()
        .unwrap_or_else(|| panic!("no {field} in {v}"))
        .parse()
        .unwrap()
}

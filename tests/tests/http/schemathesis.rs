//! Schemathesis (the PyPI package, as it is) against a real `faultline
//! serve` on a scratch database with analyses and review items in it
//! (issue 33): every operation of the OpenAPI document with generated and
//! mutated inputs, and stateful sequences along the links it infers
//! (submit → read → trace and events; list → claim → resolve / dismiss),
//! once per token role. Checks: no 5xx, documented status codes, content
//! types, headers and response bodies that conform to the document, and
//! no response slower than 1 s. Each run is bounded in time; its summary
//! is printed.

use std::time::Duration;

use faultline_tests::{TestDb, oom_log, wait_terminal};
use reqwest::StatusCode;
use serde_json::json;
use uuid::Uuid;

use crate::{JENKINS_TOKEN, Server, send};

use super::openapi::pytool;

const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,\
                      response_headers_conformance,response_schema_conformance";

/// Runs schemathesis for `seconds` with `token`; returns (passed, summary).
fn schemathesis(base: &str, token: &str, seconds: u32) -> (bool, String) {
    let out = std::process::Command::new(pytool("schemathesis"))
        .args(["run", &format!("{base}/api/v1/openapi.json")])
        .args(["--checks", CHECKS, "--max-response-time", "1"])
        .args(["--max-time", &seconds.to_string(), "--workers", "1"])
        .args(["--max-examples", "50", "--seed", "20261126"])
        .args(["-H", &format!("Authorization: Bearer {token}")])
        .args(["-H", &format!("X-Faultline-Token: {JENKINS_TOKEN}")])
        .env("NO_COLOR", "1")
        .env("SCHEMATHESIS_TELEMETRY", "false")
        .output()
        .expect("schemathesis runs");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    (out.status.success(), text)
}

/// The run's summary (from its SUMMARY line), or all of it when it failed.
fn summary(passed: bool, text: &str) -> &str {
    match text.find("SUMMARY") {
        Some(at) if passed => &text[at..],
        _ => text,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn schemathesis_finds_no_failure_in_any_operation_for_any_role() {
    let db = TestDb::new().await;
    // One client sends every request: the wrong-token throttle would
    // answer it 429 after a few generated tokens.
    let server = Server::start(&db, &[("FAULTLINE_AUTH_MAX_FAILURES", "1000000")]).await;
    let _worker = db.worker("st", &[]);
    let admin = db.token("admin", "st-admin");
    // Data for the links to reach: an analysis that completes and one that
    // goes to review.
    let ambiguous = std::fs::read_to_string(db.write_sample("ambiguous.log")).unwrap();
    let mut runs = Vec::new();
    for log in [oom_log(), ambiguous] {
        let (status, body) = send(
            server
                .post("/api/v1/analyses")
                .bearer_auth(&admin)
                .json(&json!({"log": log, "job": "st"})),
        )
        .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        runs.push(body["run_id"].as_str().unwrap().parse::<Uuid>().unwrap());
    }
    for run in &runs {
        wait_terminal(&db.pool, *run, Duration::from_secs(60)).await;
    }
    let items: i64 = sqlx::query_scalar("SELECT count(*) FROM review_items")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert!(items >= 1, "a review item for the links to reach");

    let base = format!("http://{}", server.addr());
    let mut failed = Vec::new();
    for (role, seconds) in [("admin", 60), ("reviewer", 15), ("ingest", 15)] {
        let token = if role == "admin" {
            admin.clone()
        } else {
            db.token(role, &format!("st-{role}"))
        };
        let (passed, text) = schemathesis(&base, &token, seconds);
        println!(
            "== schemathesis, role {role}, {seconds} s, checks {CHECKS} and no response over 1 s:\n{}",
            summary(passed, &text)
        );
        if !passed {
            failed.push(role);
        }
    }
    assert!(
        failed.is_empty(),
        "schemathesis failed for {failed:?} (output above)"
    );
}

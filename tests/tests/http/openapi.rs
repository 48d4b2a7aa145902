//! The OpenAPI document (`GET /api/v1/openapi.json`, issue 33): served
//! without a token, valid OpenAPI 3.1 by a validator nobody here wrote
//! (`openapi-spec-validator` from PyPI, installed by `scripts/pytools.sh`),
//! and every operation in it is a route of the running server whose errors
//! are RFC 9457 problems with a documented status. The reverse (no route
//! outside the document) is `faultline-producer`'s unit test
//! `every_route_outside_the_console_is_in_the_document`.

use std::path::PathBuf;

use faultline_tests::TestDb;
use reqwest::StatusCode;
use serde_json::Value;
use uuid::Uuid;

use crate::Server;

/// A tool of `scripts/pytools.txt`, installed by `scripts/pytools.sh`.
pub fn pytool(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/pytools/bin")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing: run `bash scripts/pytools.sh` (make test does)",
        path.display()
    );
    path
}

async fn document(server: &Server) -> Value {
    let resp = server.get("/api/v1/openapi.json").send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "application/json");
    resp.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_document_is_served_without_a_token_and_validates_as_openapi_3_1() {
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let doc = document(&server).await;
    assert_eq!(doc["openapi"], "3.1.0");
    let schemes = doc["components"]["securitySchemes"].as_object().unwrap();
    assert_eq!(schemes["token"]["scheme"], "bearer", "{schemes:?}");
    assert!(doc["components"]["schemas"]["Problem"]["properties"]["title"].is_object());

    let file = tempfile_with(&doc);
    let out = std::process::Command::new(pytool("openapi-spec-validator"))
        .arg(&file)
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "openapi-spec-validator: {said}");
    assert!(said.contains("OK"), "{said}");

    // What `faultline openapi` prints is what the server serves.
    let printed = db.cli_ok(&["openapi"], &[]);
    assert_eq!(serde_json::from_str::<Value>(&printed).unwrap(), doc);
}

fn tempfile_with(doc: &Value) -> PathBuf {
    let path = std::env::temp_dir().join(format!("openapi-{}.json", Uuid::now_v7()));
    std::fs::write(&path, serde_json::to_vec(doc).unwrap()).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn every_documented_operation_is_routed_and_answers_a_documented_problem() {
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let doc = document(&server).await;
    let mut operations = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        let concrete = path.replace("{id}", &Uuid::now_v7().to_string());
        for (method, op) in item.as_object().unwrap() {
            let req = match method.as_str() {
                "get" => server.get(&concrete),
                "post" => server
                    .post(&concrete)
                    .header("content-type", "application/json")
                    .body("{}"),
                other => panic!("{path}: undocumented method kind {other}"),
            };
            operations += 1;
            // No credential: every protected operation refuses, every open
            // one answers; none falls through to the router's 404 or 405.
            let resp = req.send().await.unwrap();
            let status = resp.status();
            let content_type = resp.headers()["content-type"].to_str().unwrap().to_string();
            let text = resp.text().await.unwrap();
            let documented = op["responses"].as_object().unwrap();
            assert!(
                documented.contains_key(status.as_str()),
                "{method} {path}: {status} is not documented ({:?}): {text}",
                documented.keys()
            );
            if status.is_client_error() || status.is_server_error() {
                assert_eq!(content_type, "application/problem+json", "{method} {path}");
                let problem: Value = serde_json::from_str(&text).unwrap();
                assert_eq!(
                    problem["status"],
                    status.as_u16(),
                    "{method} {path}: {problem}"
                );
                assert!(
                    problem["type"]
                        .as_str()
                        .unwrap()
                        .starts_with("urn:faultline:problem:"),
                    "{problem}"
                );
                assert_ne!(
                    problem["detail"], "no such endpoint",
                    "{method} {path} is not routed"
                );
                assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
                let protected = op["security"].is_array();
                assert!(
                    !protected || status == StatusCode::UNAUTHORIZED,
                    "{method} {path} without a credential: {status} {problem}"
                );
            } else {
                assert!(
                    op["security"].is_null(),
                    "{method} {path} answered {status} without a credential"
                );
            }
        }
    }
    assert!(operations >= 16, "{operations} operations");
}

//! `/api/v1/analyses`, bad input of every endpoint, health, readiness and shutdown.

use std::time::Duration;

use faultline_tests::{TestDb, oom_log, wait_terminal, wait_until};
use reqwest::StatusCode;
use serde_json::json;
use uuid::Uuid;

use crate::*;

#[tokio::test(flavor = "multi_thread")]
async fn the_analyses_api_checks_token_roles_and_serves_status_and_trace() {
    let db = TestDb::new().await;
    let token = |role: &str| {
        db.cli_ok(
            &[
                "token",
                "create",
                "--role",
                role,
                "--name",
                &format!("{role}-bot"),
            ],
            &[],
        )
    };
    let (ingest, reviewer, admin) = (token("ingest"), token("reviewer"), token("admin"));
    let dup = db.cli(
        &["token", "create", "--role", "admin", "--name", "admin-bot"],
        &[],
    );
    assert!(String::from_utf8_lossy(&dup.stderr).contains("already exists"));
    let stored: Vec<String> = sqlx::query_scalar("SELECT token_sha256 FROM api_tokens")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    assert!(
        stored
            .iter()
            .all(|h| h.len() == 64 && *h != ingest && *h != reviewer && *h != admin)
    );

    let server = Server::start(&db, &[]).await;
    let body = json!({"log": oom_log(), "job": "ledger-api", "build": 812, "test": "BatchTest", "repository": "octo-org/ledger-api", "commit": "3f2a9c1"});
    let create = |token: Option<&str>| {
        let req = server
            .post("/api/v1/analyses")
            .header("idempotency-key", "ledger-api-812")
            .json(&body);
        match token {
            Some(t) => req.bearer_auth(t),
            None => req,
        }
    };
    assert_eq!(send(create(None)).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(
        send(create(Some("flt_not-a-token"))).await.0,
        StatusCode::UNAUTHORIZED
    );
    let (status, err) = send(create(Some(&reviewer))).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{err}");
    let (status, created) = send(create(Some(&ingest))).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{created}");
    let run_id = id(&created, "run_id");
    let (_, again) = send(create(Some(&admin))).await;
    assert_eq!(
        (id(&again, "run_id"), again["created"].clone()),
        (run_id, json!(false)),
        "same Idempotency-Key, same run"
    );

    let analysis = format!("/api/v1/analyses/{run_id}");
    assert_eq!(
        send(server.get(&analysis)).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        send(server.get(&analysis).bearer_auth(&ingest)).await.0,
        StatusCode::FORBIDDEN
    );
    let (status, got) = send(server.get(&analysis).bearer_auth(&reviewer)).await;
    assert_eq!(status, StatusCode::OK, "{got}");
    assert_eq!(
        (
            got["status"].as_str().unwrap(),
            got["event"]["dedup_key"].as_str().unwrap()
        ),
        ("queued", "api:ledger-api-812")
    );
    assert_eq!(got["event"]["build_number"], "812");

    // Once a worker has analysed it, the result and the journal are served.
    let _worker = db.worker("w", &[]);
    let end = wait_terminal(&db.pool, run_id, Duration::from_secs(60)).await;
    let (_, got) = send(server.get(&analysis).bearer_auth(&admin)).await;
    assert_eq!(got["status"], end.as_str());
    assert!(got["result"]["category"].is_string(), "{got}");
    let (status, trace) = send(
        server
            .get(&format!("{analysis}/trace"))
            .bearer_auth(&reviewer),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let steps = trace["steps"].as_array().unwrap();
    assert!(steps.len() >= 2 && steps[0]["iteration"] == 1, "{trace}");
    assert!(trace["failed_attempts"].is_array());

    let unknown = format!("/api/v1/analyses/{}", Uuid::now_v7());
    let (status, err) = send(server.get(&unknown).bearer_auth(&admin)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(err["title"], "not found", "{err}");
    assert!(
        err["detail"].as_str().unwrap().ends_with("not found"),
        "{err}"
    );
    assert_eq!(
        send(server.get(&format!("{unknown}/trace")).bearer_auth(&admin))
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        send(
            server
                .get("/api/v1/analyses/not-a-uuid")
                .bearer_auth(&admin)
        )
        .await
        .0,
        StatusCode::BAD_REQUEST
    );

    // A revoked token stops working at once.
    db.cli_ok(&["token", "revoke", "reviewer-bot"], &[]);
    assert_eq!(
        send(server.get(&analysis).bearer_auth(&reviewer)).await.0,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_gets_413_415_or_400_naming_the_field_and_stores_nothing() {
    let db = TestDb::new().await;
    let admin = db.cli_ok(
        &["token", "create", "--role", "admin", "--name", "ops"],
        &[],
    );
    let server = Server::start(&db, &[("FAULTLINE_MAX_BODY_BYTES", "4096")]).await;
    let api = || server.post("/api/v1/analyses").bearer_auth(&admin);
    let raw = |body: &str| {
        api()
            .header("content-type", "application/json")
            .body(body.to_string())
    };

    let (status, err) = send(api().json(&json!({"log": "x".repeat(8192)}))).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{err}");
    let (status, err) = send(
        api()
            .header("content-type", "text/plain")
            .body("BUILD FAILED"),
    )
    .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{err}");
    let cases = [
        (
            r#"{"log": "BUILD FAILED", "job": "api""#,
            "malformed JSON",
            "line 1 column",
        ),
        (
            r#"{"log": 42}"#,
            "invalid request body",
            "log: invalid type: integer `42`",
        ),
        (
            r#"{"log": "BUILD FAILED", "bulid": 7}"#,
            "invalid request body",
            "unknown field `bulid`",
        ),
        (
            r#"{"log": "BUILD FAILED", "build": 8.5}"#,
            "invalid request body",
            "build: invalid type: floating point `8.5`, expected a build number",
        ),
        (
            r#"{"job": "api"}"#,
            "invalid request body",
            "missing field `log`",
        ),
        (
            r#"{"log_url": "ftp://ci/log.txt"}"#,
            "invalid request body",
            "log_url:",
        ),
    ];
    for (body, error, detail) in cases {
        let (status, err) = send(raw(body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {err}");
        assert_eq!(err["title"], error, "{body}: {err}");
        assert_eq!(err["status"], 400, "{body}: {err}");
        assert!(
            err["detail"].as_str().unwrap().contains(detail),
            "{body}: {err}"
        );
    }

    // Webhooks: a signed delivery whose field has the wrong type names the field.
    let mut run = fixture("github-workflow-run-failure.json");
    run["workflow_run"]["id"] = json!("30433642");
    for nested in ["repository", "head_repository", "actor", "triggering_actor"] {
        run["workflow_run"].as_object_mut().unwrap().remove(nested);
    }
    run["repository"] = json!({"full_name": "o/r", "url": "https://api.github.com/repos/o/r"});
    run.as_object_mut()
        .unwrap()
        .retain(|k, _| ["action", "workflow_run", "repository"].contains(&k.as_str()));
    let small = bytes(&run);
    assert!(small.len() < 4096, "{}", small.len());
    let (status, err) = server
        .github("workflow_run", "bad-1", &small, Some(GITHUB_SECRET))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert!(
        err["detail"]
            .as_str()
            .unwrap()
            .starts_with("workflow_run.id: invalid type"),
        "{err}"
    );
    let big = bytes(&fixture("github-workflow-run-failure.json"));
    assert_eq!(
        server
            .github("workflow_run", "bad-2", &big, Some(GITHUB_SECRET))
            .await
            .0,
        StatusCode::PAYLOAD_TOO_LARGE
    );
    let (status, _) = send(
        server
            .post("/webhooks/jenkins")
            .header("x-faultline-token", JENKINS_TOKEN)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("payload=%7B%7D"),
    )
    .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let (status, err) = send(
        server
            .post("/webhooks/jenkins")
            .header("x-faultline-token", JENKINS_TOKEN)
            .json(&json!({"name": "x", "build": {"phase": "COMPLETED"}})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        err["detail"]
            .as_str()
            .unwrap()
            .contains("build: missing field `number`"),
        "{err}"
    );

    let (status, err) = send(server.get("/nowhere")).await;
    assert_eq!(
        (status, err["detail"].as_str().unwrap()),
        (StatusCode::NOT_FOUND, "no such endpoint")
    );
    assert_eq!(count(&db, "failure_events").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn readiness_follows_the_database_and_sigterm_stops_the_server() {
    let db = TestDb::new().await;
    let mut server = Server::start(&db, &[]).await;
    assert_eq!(
        send(server.get("/healthz")).await,
        (StatusCode::OK, json!({"status": "ok"}))
    );
    assert_eq!(send(server.get("/readyz")).await.0, StatusCode::OK);

    // A webhook whose secret is not configured is unavailable, not open.
    let bare = TestDb::new().await;
    let unconfigured = Server::start(
        &bare,
        &[("GITHUB_WEBHOOK_SECRET", ""), ("JENKINS_WEBHOOK_TOKEN", "")],
    )
    .await;
    let (status, err) = send(unconfigured.post("/webhooks/jenkins").json(&json!({}))).await;
    assert_eq!(
        (status, err["detail"].as_str().unwrap()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "JENKINS_WEBHOOK_TOKEN is not configured"
        )
    );
    drop(unconfigured);

    // The database goes away: not ready, still alive.
    let mut admin =
        <sqlx::PgConnection as sqlx::Connection>::connect(&faultline_tests::admin_url())
            .await
            .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE {} WITH (FORCE)",
        db.name
    )))
    .execute(&mut admin)
    .await
    .unwrap();
    let (status, err) = send(server.get("/readyz")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{err}");
    assert!(
        err["detail"].as_str().unwrap().starts_with("database"),
        "{err}"
    );
    assert_eq!(send(server.get("/healthz")).await.0, StatusCode::OK);

    let pid = nix::unistd::Pid::from_raw(server.child.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let child = &mut server.child;
    let exit = wait_until(Duration::from_secs(10), || {
        let status = child.try_wait().ok().flatten();
        async move { status }
    })
    .await;
    assert!(exit.success(), "serve exited with {exit}");
}

#[tokio::test(flavor = "multi_thread")]
async fn nul_characters_overlong_fields_and_huge_durations_are_400s_not_500s() {
    let db = TestDb::new().await;
    let admin = db.cli_ok(
        &["token", "create", "--role", "admin", "--name", "ops"],
        &[],
    );
    let server = Server::start(&db, &[]).await;
    let cases = [
        (
            json!({"log": "BUILD FAILED", "job": "api\u{0}"}),
            "job: contains a NUL character",
        ),
        (
            json!({"log": "BUILD FAILED", "repository": "o/r\u{0}"}),
            "repository: contains a NUL character",
        ),
        (
            json!({"log": "BUILD FAILED", "job": "j".repeat(8000)}),
            "job: is 8000 bytes long",
        ),
    ];
    for (body, detail) in cases {
        let (status, err) = send(
            server
                .post("/api/v1/analyses")
                .bearer_auth(&admin)
                .json(&body),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
        assert!(err["detail"].as_str().unwrap().starts_with(detail), "{err}");
    }
    assert_eq!(count(&db, "failure_events").await, 0);
    let (status, err) = send(
        server
            .get("/api/v1/review?older_than=99999999999999999999")
            .bearer_auth(&admin),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert!(
        err["detail"].as_str().unwrap().contains("older_than"),
        "{err}"
    );
    // Found by schemathesis: a NUL in a review filter was a 500 (Postgres
    // text cannot hold one); it is a 400 naming the parameter, and a blank
    // value is no filter.
    for (query, field) in [("job=g%2F%00x", "job"), ("repository=%00", "repository")] {
        let (status, err) = send(
            server
                .get(&format!("/api/v1/review?{query}"))
                .bearer_auth(&admin),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {err}");
        assert_eq!(err["field"], field, "{err}");
        assert!(err["detail"].as_str().unwrap().contains("NUL"), "{err}");
    }
    let (status, listed) = send(
        server
            .get("/api/v1/review?category=&older_than=&status=&job=")
            .bearer_auth(&admin),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    // The same for a decision's text (read before the item is looked up).
    let item = Uuid::now_v7();
    for (action, body, field) in [
        (
            "resolve",
            json!({"action": "correct", "fix": "retry\u{0}"}),
            "fix",
        ),
        ("resolve", json!({"comment": "ok\u{0}"}), "comment"),
        ("dismiss", json!({"comment": "\u{0}"}), "comment"),
    ] {
        let (status, err) = send(
            server
                .post(&format!("/api/v1/review/{item}/{action}"))
                .bearer_auth(&admin)
                .json(&body),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{action} {body}: {err}");
        assert_eq!(err["field"], field, "{err}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_idempotency_key_belongs_to_the_token_that_used_it() {
    let db = TestDb::new().await;
    let alice = db.cli_ok(
        &["token", "create", "--role", "ingest", "--name", "alice"],
        &[],
    );
    let mallory = db.cli_ok(
        &["token", "create", "--role", "ingest", "--name", "mallory"],
        &[],
    );
    let server = Server::start(&db, &[]).await;
    let submit = |token: &str, log: &str| {
        server
            .post("/api/v1/analyses")
            .bearer_auth(token)
            .header("idempotency-key", "build-812")
            .json(&json!({"log": log}))
    };
    // Mallory claims the key first; Alice's submission must not get her run.
    let (status, squat) = send(submit(&mallory, "nothing to see")).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{squat}");
    let (status, first) = send(submit(&alice, "error: boom\nBUILD FAILED")).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{first}");
    assert_eq!(first["created"], true, "{first}");
    assert_ne!(first["run_id"], squat["run_id"]);
    // Alice's retry with the same key is still idempotent.
    let (_, again) = send(submit(&alice, "error: boom\nBUILD FAILED")).await;
    assert_eq!(
        (again["run_id"].clone(), again["created"].clone()),
        (first["run_id"].clone(), json!(false))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_key_only_the_identical_submission_is_the_same_run() {
    let db = TestDb::new().await;
    let alice = db.cli_ok(
        &["token", "create", "--role", "ingest", "--name", "alice"],
        &[],
    );
    let bob = db.cli_ok(
        &["token", "create", "--role", "ingest", "--name", "bob"],
        &[],
    );
    let server = Server::start(&db, &[]).await;
    let submit = |token: &str, job: &str| {
        server
            .post("/api/v1/analyses")
            .bearer_auth(token)
            .json(&json!({"log": "error: boom\nBUILD FAILED", "job": job, "build": 7}))
    };
    let (status, first) = send(submit(&alice, "api")).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{first}");
    // The same log under another job is another failure: Bob gets his own
    // run (it used to be Alice's, with her job).
    let (status, other) = send(submit(&bob, "web")).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{other}");
    assert_eq!(other["created"], true, "{other}");
    assert_ne!(other["run_id"], first["run_id"]);
    let job: String = sqlx::query_scalar(
        "SELECT e.job_name FROM analysis_runs r JOIN failure_events e ON e.id = r.event_id WHERE r.id = $1::uuid",
    )
    .bind(other["run_id"].as_str().unwrap())
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(job, "web");
    // The identical submission is the same analysis, whoever sends it.
    let (_, again) = send(submit(&bob, "api")).await;
    assert_eq!(
        (again["run_id"].clone(), again["created"].clone()),
        (first["run_id"].clone(), json!(false))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_token_gets_401_like_a_revoked_one_and_token_list_shows_expiry() {
    let db = TestDb::new().await;
    let short = db.cli_ok(
        &[
            "token",
            "create",
            "--role",
            "reviewer",
            "--name",
            "short",
            "--expires-in",
            "2s",
        ],
        &[],
    );
    let long = db.cli_ok(
        &[
            "token",
            "create",
            "--role",
            "reviewer",
            "--name",
            "long",
            "--expires-in",
            "30d",
        ],
        &[],
    );
    let bad = db.cli(
        &[
            "token",
            "create",
            "--role",
            "reviewer",
            "--name",
            "x",
            "--expires-in",
            "soon",
        ],
        &[],
    );
    assert_eq!(bad.status.code(), Some(2), "a clap usage error");
    let server = Server::start(&db, &[]).await;
    let list = || server.get("/api/v1/review").bearer_auth(&short);
    let (status, body) = send(list()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, err) = wait_until(Duration::from_secs(15), || async {
        let (status, err) = send(list()).await;
        (status != StatusCode::OK).then_some((status, err))
    })
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{err}");
    assert_eq!(err["detail"], "unknown, revoked or expired API token");
    assert_eq!(
        send(server.get("/api/v1/review").bearer_auth(&long))
            .await
            .0,
        StatusCode::OK
    );
    let listed = db.cli_ok(&["token", "list"], &[]);
    let line = |name: &str| {
        listed
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} in {listed}"))
            .to_string()
    };
    assert!(line("short").contains("expired "), "{listed}");
    assert!(line("long").contains("active, expires "), "{listed}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_presenting_too_many_wrong_tokens_gets_429_with_retry_after() {
    let db = TestDb::new().await;
    let admin = db.cli_ok(
        &["token", "create", "--role", "admin", "--name", "ops"],
        &[],
    );
    let server = Server::start(&db, &[("FAULTLINE_AUTH_MAX_FAILURES", "3")]).await;
    let review = |token: &str| server.get("/api/v1/review").bearer_auth(token);
    // No token at all is not a guess and does not count.
    for _ in 0..5 {
        assert_eq!(
            send(server.get("/api/v1/review")).await.0,
            StatusCode::UNAUTHORIZED
        );
    }
    assert_eq!(send(review(&admin)).await.0, StatusCode::OK);
    for guess in ["flt_1", "flt_2"] {
        assert_eq!(send(review(guess)).await.0, StatusCode::UNAUTHORIZED);
    }
    // Wrong Jenkins tokens count too.
    let (status, _) = send(
        server
            .post("/webhooks/jenkins")
            .header("x-faultline-token", "guess")
            .json(&json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // Past the limit every token check from this address is refused, the
    // right token included (a right guess must not show while blocked).
    for token in ["flt_4", admin.as_str()] {
        let resp = review(token).send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
        let retry: u64 = resp.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=60).contains(&retry), "{retry}");
    }
}

/// `FAULTLINE_ALLOWED_REPOSITORIES` / `FAULTLINE_ALLOWED_JENKINS_JOBS`: a
/// submission naming a repository or job outside them is a 403 naming the
/// field, and nothing is stored; inside them (any spelling GitHub or
/// Jenkins would read as the same), or naming neither, it is accepted. A
/// bad list stops the binary at start, naming the variable.
#[tokio::test(flavor = "multi_thread")]
async fn a_submission_outside_the_allow_list_is_refused_naming_the_field() {
    let db = TestDb::new().await;
    let bad = db.cli(
        &["token", "list"],
        &[("FAULTLINE_ALLOWED_REPOSITORIES", "octo-org")],
    );
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && stderr.contains("FAULTLINE_ALLOWED_REPOSITORIES"),
        "{stderr}"
    );
    let ingest = db.token("ingest", "ci");
    let server = Server::start(
        &db,
        &[
            ("FAULTLINE_ALLOWED_REPOSITORIES", "octo-org/*, acme/ledger"),
            (
                "FAULTLINE_ALLOWED_JENKINS_JOBS",
                "team-a/, platform/ledger-api",
            ),
        ],
    )
    .await;
    let submit = |fields: serde_json::Value| {
        let mut body = json!({"log": oom_log()});
        body.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        server
            .post("/api/v1/analyses")
            .bearer_auth(&ingest)
            .json(&body)
    };
    for (fields, field, named) in [
        (
            json!({"repository": "acme/secrets"}),
            "repository",
            "acme/secrets",
        ),
        (
            json!({"repository": "https://github.com/acme/secrets.git"}),
            "repository",
            "acme/secrets",
        ),
        (
            json!({"repository": "octo/repo/../../acme/secrets"}),
            "repository",
            "not a GitHub owner/name",
        ),
        (
            json!({"repository": "octo-org/ledger-api", "job": "deploy-prod"}),
            "job",
            "deploy-prod",
        ),
        (
            json!({"job": "platform/ledger-api-v2"}),
            "job",
            "platform/ledger-api-v2",
        ),
        (
            json!({"job": "team-a/../deploy-prod"}),
            "job",
            "not a Jenkins job name",
        ),
    ] {
        let (status, err) = send(submit(fields.clone())).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{fields}: {err}");
        let detail = err["detail"].as_str().unwrap_or_default();
        assert!(
            detail.starts_with(&format!("{field}: ")) && detail.contains(named),
            "{fields}: {err}"
        );
    }
    assert_eq!(
        count(&db, "failure_events").await,
        0,
        "a refused submission was stored"
    );
    for fields in [
        json!({"repository": "https://github.com/Octo-Org/Ledger-API.git", "job": "Team-A/ledger-api"}),
        json!({"repository": "acme/ledger", "job": "platform/ledger-api", "build": 7}),
        json!({"test": "BatchTest"}),
    ] {
        let (status, created) = send(submit(fields.clone())).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{fields}: {created}");
    }
}

//! `POST /webhooks/jenkins`.

use faultline_tests::TestDb;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_jenkins_notification_starts_one_run_per_build_with_its_inline_log() {
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let completed = fixture("jenkins-completed-failure.json");
    let (status, first) = server.jenkins(&completed).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{first}");
    assert_eq!(first["created"], true);
    let event_id = id(&first, "event_id");
    assert_eq!(
        stored_log(&db, event_id).await,
        completed["build"]["log"].as_str().unwrap()
    );

    // FINALIZED of the same build is the same event, delivered with a bearer token this time.
    let mut finalized = completed.clone();
    finalized["build"]["phase"] = json!("FINALIZED");
    let (status, second) = send(
        server
            .post("/webhooks/jenkins")
            .bearer_auth(JENKINS_TOKEN)
            .json(&finalized),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{second}");
    assert_eq!(
        (second["run_id"].clone(), second["created"].clone()),
        (first["run_id"].clone(), json!(false))
    );

    let (key, job, build, payload): (String, String, String, Value) = sqlx::query_as(
        "SELECT dedup_key, job_name, build_number, payload FROM failure_events WHERE id = $1",
    )
    .bind(event_id)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(key, "jenkins:https://ci.example.com/job/ledger-api/#812");
    assert_eq!((job.as_str(), build.as_str()), ("ledger-api", "812"));
    assert!(
        payload["jenkins"].get("log").is_none() && payload.to_string().len() < 1000,
        "no log copy in the payload"
    );

    // Without an inline log the worker gets the console URL.
    let mut no_log = completed.clone();
    no_log["build"]["number"] = json!(813);
    no_log["build"]["full_url"] = json!("https://ci.example.com/job/ledger-api/813/");
    no_log["build"].as_object_mut().unwrap().remove("log");
    let (status, third) = server.jenkins(&no_log).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{third}");
    let payload: Value = sqlx::query_scalar("SELECT payload FROM failure_events WHERE id = $1")
        .bind(id(&third, "event_id"))
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(
        payload["jenkins"]["console_url"],
        "https://ci.example.com/job/ledger-api/813/consoleText"
    );

    // Not finished, or not failed: ignored. No or wrong token: 401.
    let mut started = completed.clone();
    started["build"]["phase"] = json!("STARTED");
    let (status, body) = server.jenkins(&started).await;
    assert_eq!(
        (status, body["ignored"].as_str().unwrap()),
        (
            StatusCode::ACCEPTED,
            "build phase \"STARTED\" is not analysed (only COMPLETED and FINALIZED)"
        )
    );
    let mut aborted = completed.clone();
    aborted["build"]["status"] = json!("ABORTED");
    let (_, body) = server.jenkins(&aborted).await;
    assert_eq!(
        body["ignored"],
        "build status \"ABORTED\" is neither a failure (FAILURE, UNSTABLE) nor a pass (SUCCESS)"
    );
    // A pass is history, with its branch, once for both phases; no run.
    let mut success = completed.clone();
    success["build"]["status"] = json!("SUCCESS");
    success["build"]["number"] = json!(814);
    success["build"]["full_url"] = json!("https://ci.example.com/job/ledger-api/814/");
    success["build"]["scm"]["branch"] = json!("origin/main");
    for (phase, created) in [("COMPLETED", true), ("FINALIZED", false)] {
        success["build"]["phase"] = json!(phase);
        let (status, body) = server.jenkins(&success).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        assert_eq!(
            (body["recorded"].as_str(), body["created"].as_bool()),
            (Some("success"), Some(created)),
            "{phase}: {body}"
        );
    }
    let (job, build, branch): (String, String, Option<String>) =
        sqlx::query_as("SELECT job_name, build_number, branch FROM ci_outcomes")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(
        (job.as_str(), build.as_str(), branch.as_deref()),
        ("ledger-api", "814", Some("main"))
    );
    let (status, _) = send(server.post("/webhooks/jenkins").json(&completed)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = send(
        server
            .post("/webhooks/jenkins")
            .header("x-faultline-token", "guess")
            .json(&completed),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(count(&db, "failure_events").await, 2);
    assert_eq!(count(&db, "analysis_runs").await, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_overlong_build_url_or_a_nul_in_a_field_is_a_400_naming_it() {
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let mut long = fixture("jenkins-completed-failure.json");
    long["build"]["full_url"] = json!(format!(
        "https://ci.example.com/job/{}/812/",
        "x".repeat(8000)
    ));
    let (status, err) = server.jenkins(&long).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert!(
        err["detail"]
            .as_str()
            .unwrap()
            .starts_with("build.full_url: "),
        "{err}"
    );
    let mut nul = fixture("jenkins-completed-failure.json");
    nul["name"] = json!("ledger\u{0}api");
    let (status, err) = server.jenkins(&nul).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert_eq!(err["detail"], "name: contains a NUL character");
    assert_eq!(count(&db, "failure_events").await, 0);
}

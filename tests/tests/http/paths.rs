//! Issue 14, findings 1 and 10 (worker side): an event already stored with
//! a hostile Jenkins build URL or GitHub repository name (inserted straight
//! into the database, past any check at ingest) makes the worker call no
//! other API path: the Jenkins credentials go only to a build's console,
//! the GitHub token only under `/repos/<owner>/<name>/`, and the run
//! records why it could not fetch instead of retrying.

use std::time::Duration;

use faultline_shared::{
    queue::Broker,
    storage::{self, events::NewEvent, runs::RunLimits},
};
use faultline_tests::{TestDb, fakes::GITHUB_TOKEN, oom_log, wait_terminal, wait_until};
use serde_json::json;
use uuid::Uuid;
use wiremock::{Mock, MockServer, ResponseTemplate, matchers::any};

const LIMITS: RunLimits = RunLimits {
    max_iterations: 5,
    max_attempts: 5,
    priority: 10,
    shadowed: false,
};

/// What a hijacked request would read: it must never reach a stored log.
const LEAK: &str = "<credentials><secret>hunter2</secret></credentials>";

/// A server answering every request with [`LEAK`], recording each one.
async fn answers_everything() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_body_string(LEAK))
        .mount(&server)
        .await;
    server
}

async fn failure_reason(db: &TestDb, run: Uuid) -> String {
    sqlx::query_scalar::<_, Option<String>>(
        "SELECT failure_reason FROM analysis_runs WHERE id = $1",
    )
    .bind(run)
    .fetch_one(&db.pool)
    .await
    .unwrap()
    .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_jenkins_build_url_cannot_send_the_credentials_to_another_page() {
    let db = TestDb::new().await;
    let jenkins = answers_everything().await;
    let root = format!("{}/", jenkins.uri());
    let hostile = [
        format!("{root}credentials/store/system/domain/_/api/json?depth=2#/consoleText"),
        format!("{root}job/ledger-api/config.xml#/consoleText"),
        format!("{root}manage/script#/consoleText"),
        format!("{root}job/ledger-api/812/../../../credentials/812/consoleText"),
        format!("{root}job/ledger-api/%2e%2e/%2e%2e/credentials/812/consoleText"),
        format!("{root}job/ledger-api/812/consoleText?depth=2"),
    ];
    let mut runs = Vec::new();
    for (i, console_url) in hostile.iter().enumerate() {
        let event = NewEvent {
            dedup_key: format!("jenkins:hostile#{i}"),
            source: "jenkins".into(),
            job_name: Some("ledger-api".into()),
            build_number: Some("812".into()),
            payload: json!({"jenkins": {
                "job_url": "job/ledger-api/", "console_url": console_url,
                "phase": "COMPLETED", "status": "FAILURE", "log_inline": false}}),
            ..NewEvent::default()
        };
        let ingested = storage::ingest(&db.pool, &Broker::Postgres, &event, &b""[..], LIMITS)
            .await
            .unwrap();
        runs.push((console_url, ingested));
    }
    let worker = db.worker(
        "w1",
        &[
            ("JENKINS_URL", root.as_str()),
            ("JENKINS_USER", "ci-bot"),
            ("JENKINS_API_TOKEN", "11aa22bb"),
        ],
    );
    for (console_url, ingested) in &runs {
        let status = wait_terminal(&db.pool, ingested.run_id, Duration::from_secs(60)).await;
        let reason = failure_reason(&db, ingested.run_id).await;
        assert_eq!(
            status,
            "failed",
            "{console_url}: {reason}\n{}",
            worker.stderr()
        );
        assert!(
            reason.contains("log unavailable") && reason.contains("is not a Jenkins build URL"),
            "{console_url}: {reason}"
        );
        let fetched: i64 =
            sqlx::query_scalar("SELECT count(*) FROM log_fetches WHERE event_id = $1")
                .bind(ingested.event_id)
                .fetch_one(&db.pool)
                .await
                .unwrap();
        assert_eq!(fetched, 0, "{console_url}: a page was stored as the log");
    }
    let requests = jenkins.received_requests().await.unwrap();
    assert!(
        requests.is_empty(),
        "the worker asked Jenkins for {:?}",
        requests
            .iter()
            .map(|r| r.url.to_string())
            .collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_climbing_repository_name_reaches_no_other_github_path() {
    let db = TestDb::new().await;
    let github = answers_everything().await;
    let repo = "octo/repo/../../../user/repos";
    let sha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
    let github_payload = json!({"github": {
        "kind": "workflow_job", "repository": repo, "job_id": 399444496, "run_id": 30433642,
        "job_name": "build", "head_branch": "main", "workflow_id": 1}});
    // Without a log: the worker would fetch it from GitHub.
    let fetch = NewEvent {
        dedup_key: "github:hostile:fetch".into(),
        source: "github".into(),
        repository: Some(repo.into()),
        commit_sha: Some(sha.into()),
        payload: github_payload.clone(),
        ..NewEvent::default()
    };
    let fetch = storage::ingest(&db.pool, &Broker::Postgres, &fetch, &b""[..], LIMITS)
        .await
        .unwrap();
    // With its log: analysed, then notified with a check run on the commit.
    let notify = NewEvent {
        dedup_key: "github:hostile:notify".into(),
        source: "github".into(),
        repository: Some(repo.into()),
        commit_sha: Some(sha.into()),
        payload: github_payload,
        ..NewEvent::default()
    };
    let notify = storage::ingest(
        &db.pool,
        &Broker::Postgres,
        &notify,
        oom_log().as_bytes(),
        LIMITS,
    )
    .await
    .unwrap();
    let api = github.uri();
    let worker = db.worker(
        "w1",
        &[
            ("GITHUB_TOKEN", GITHUB_TOKEN),
            ("GITHUB_API_URL", api.as_str()),
            ("NOTIFY_ON_REVIEW", "true"),
            ("NOTIFY_MAX_ATTEMPTS", "2"),
            ("NOTIFY_RETRY_BASE", "100ms"),
            ("NOTIFY_RETRY_MAX", "1s"),
            ("NOTIFY_POLL_INTERVAL", "100ms"),
        ],
    );

    let status = wait_terminal(&db.pool, fetch.run_id, Duration::from_secs(60)).await;
    let reason = failure_reason(&db, fetch.run_id).await;
    assert_eq!(status, "failed", "{reason}\n{}", worker.stderr());
    assert!(
        reason.contains("log unavailable") && reason.contains("is not an owner/name repository"),
        "{reason}"
    );

    let status = wait_terminal(&db.pool, notify.run_id, Duration::from_secs(60)).await;
    assert!(
        status == "completed" || status == "needs_review",
        "{status}"
    );
    let (outbox, error): (String, Option<String>) = wait_until(Duration::from_secs(30), || async {
        sqlx::query_as::<_, (String, Option<String>)>(
            "SELECT status, last_error FROM notification_outbox WHERE run_id = $1",
        )
        .bind(notify.run_id)
        .fetch_optional(&db.pool)
        .await
        .unwrap()
        .filter(|(status, _)| status == "dead")
    })
    .await;
    assert_eq!(outbox, "dead");
    let error = error.unwrap_or_default();
    assert!(error.contains("is not owner/name"), "{error}");

    let requests = github.received_requests().await.unwrap();
    assert!(
        requests.is_empty(),
        "the worker called GitHub at {:?}",
        requests
            .iter()
            .map(|r| r.url.path().to_string())
            .collect::<Vec<_>>()
    );
}

/// `FAULTLINE_ALLOWED_REPOSITORIES` / `FAULTLINE_ALLOWED_JENKINS_JOBS` in
/// the worker, which holds the credentials: a GitHub delivery and a Jenkins
/// notification outside the lists (stored as a webhook would store them,
/// or as `enqueue` or reprocessing would) fetch nothing; each run fails
/// with the reason recorded, and no request reaches GitHub or Jenkins.
#[tokio::test(flavor = "multi_thread")]
async fn events_outside_the_allow_list_reach_neither_github_nor_jenkins() {
    let db = TestDb::new().await;
    let github = answers_everything().await;
    let jenkins = answers_everything().await;
    let root = format!("{}/", jenkins.uri());
    let github_event = NewEvent {
        dedup_key: "github:outside".into(),
        source: "github".into(),
        repository: Some("acme/secrets".into()),
        commit_sha: Some("ec26c3e57ca3a959ca5aad62de7213c562f8c821".into()),
        payload: json!({"github": {
            "kind": "workflow_job", "repository": "acme/secrets", "job_id": 399444496,
            "run_id": 30433642, "job_name": "build", "head_branch": "main", "workflow_id": 1}}),
        ..NewEvent::default()
    };
    let jenkins_event = NewEvent {
        dedup_key: "jenkins:outside".into(),
        source: "jenkins".into(),
        job_name: Some("deploy-prod".into()),
        build_number: Some("812".into()),
        payload: json!({"jenkins": {
            "job_url": "job/deploy-prod/", "console_url": format!("{root}job/deploy-prod/812/"),
            "phase": "COMPLETED", "status": "FAILURE", "log_inline": false}}),
        ..NewEvent::default()
    };
    let mut runs = Vec::new();
    for (event, list) in [
        (github_event, "FAULTLINE_ALLOWED_REPOSITORIES"),
        (jenkins_event, "FAULTLINE_ALLOWED_JENKINS_JOBS"),
    ] {
        let ingested = storage::ingest(&db.pool, &Broker::Postgres, &event, &b""[..], LIMITS)
            .await
            .unwrap();
        runs.push((ingested.run_id, list));
    }
    let api = github.uri();
    let worker = db.worker(
        "w1",
        &[
            ("GITHUB_TOKEN", GITHUB_TOKEN),
            ("GITHUB_API_URL", api.as_str()),
            ("JENKINS_URL", root.as_str()),
            ("JENKINS_USER", "ci-bot"),
            ("JENKINS_API_TOKEN", "11aa22bb"),
            ("FAULTLINE_ALLOWED_REPOSITORIES", "octo-org/*"),
            ("FAULTLINE_ALLOWED_JENKINS_JOBS", "team-a/, ledger-api"),
        ],
    );
    for (run, list) in runs {
        let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
        let reason = failure_reason(&db, run).await;
        assert_eq!(status, "failed", "{reason}\n{}", worker.stderr());
        assert!(
            reason.contains("log unavailable: out of scope:") && reason.contains(list),
            "{reason}"
        );
    }
    for server in [&github, &jenkins] {
        let requests = server.received_requests().await.unwrap();
        assert!(
            requests.is_empty(),
            "the worker called {:?}",
            requests
                .iter()
                .map(|r| r.url.to_string())
                .collect::<Vec<_>>()
        );
    }
}

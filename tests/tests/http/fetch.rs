//! Issue 5: a webhook event arrives without its log and the worker fetches
//! it (GitHub Actions through the 302 to log storage, Jenkins consoleText)
//! before the first iteration, once, and the run is analysed from it.

use std::time::{Duration, UNIX_EPOCH};

use faultline_tests::{TestDb, fakes::*, oom_log, wait_terminal, wait_until};
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;
use wiremock::{
    Mock, MockServer, ResponseTemplate,
    matchers::{method, path, query_param},
};

use crate::*;

const JOB_ID: u64 = 399444496;
const RUN_ID: u64 = 30433642;

/// Log storage that the logs endpoint redirects to, serving `log`.
async fn blob_storage(log: &str) -> (MockServer, Scripted) {
    let blob = MockServer::start().await;
    let served = Scripted::new(vec![
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/plain")
            .insert_header("x-ms-blob-type", "BlockBlob")
            .set_body_string(log),
    ]);
    Mock::given(method("GET"))
        .and(path(format!("/actions-results/job-logs/{JOB_ID}.txt")))
        .respond_with(served.clone())
        .mount(&blob)
        .await;
    (blob, served)
}

/// GitHub's answer to the logs endpoint: 302 to a signed storage URL.
fn redirect_to(blob: &MockServer) -> ResponseTemplate {
    ResponseTemplate::new(302).insert_header(
        "location",
        format!(
            "{}/actions-results/job-logs/{JOB_ID}.txt?sv=2021-12-02&se=2026-11-22T07%3A10%3A00Z&sig=c2lnbmF0dXJl",
            blob.uri()
        )
        .as_str(),
    )
}

async fn mount_job_logs(gh: &MockServer, script: &Scripted) {
    Mock::given(method("GET"))
        .and(path(format!("/repos/{REPO}/actions/jobs/{JOB_ID}/logs")))
        .respond_with(script.clone())
        .mount(gh)
        .await;
}

fn worker_env(gh: &MockServer) -> Vec<(&'static str, String)> {
    vec![
        ("GITHUB_TOKEN", GITHUB_TOKEN.to_string()),
        ("GITHUB_API_URL", gh.uri()),
    ]
}

fn env_refs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// Delivers the timed-out `workflow_job` fixture; returns (run, event).
async fn deliver_job(server: &Server, delivery: &str) -> (Uuid, Uuid) {
    let job = bytes(&fixture("github-workflow-job-timed-out.json"));
    let (status, body) = server
        .github("workflow_job", delivery, &job, Some(GITHUB_SECRET))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    (id(&body, "run_id"), id(&body, "event_id"))
}

async fn run_row(db: &TestDb, run: Uuid) -> (String, Option<String>, Option<String>) {
    sqlx::query_as("SELECT status, category, failure_reason FROM analysis_runs WHERE id = $1")
        .bind(run)
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workflow_job_is_analysed_from_the_log_github_redirects_to() {
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let log = actions_log(&oom_log());
    let (blob, served) = blob_storage(&log).await;
    let gh = MockServer::start().await;
    let logs = Scripted::new(vec![redirect_to(&blob)]);
    mount_job_logs(&gh, &logs).await;

    let (run, event) = deliver_job(&server, "d-job-1").await;
    let env = worker_env(&gh);
    let worker = db.worker("w1", &env_refs(&env));
    let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    let (_, category, reason) = run_row(&db, run).await;
    assert_eq!(status, "completed", "{reason:?}\n{}", worker.stderr());
    assert_eq!(
        category.as_deref(),
        Some("INFRA_ERROR"),
        "not UNKNOWN from an empty log"
    );

    assert_eq!(stored_log(&db, event).await, log);
    let (source, bytes, detail): (String, i64, Value) =
        sqlx::query_as("SELECT source, bytes, detail FROM log_fetches WHERE event_id = $1")
            .bind(event)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!((source.as_str(), bytes), ("github", log.len() as i64));
    assert!(
        !detail.to_string().contains("sig="),
        "signed storage URLs are not recorded: {detail}"
    );
    assert_eq!((logs.count(), served.count()), (1, 1));
    let api_headers = &logs.hits.lock().unwrap()[0].1;
    assert_eq!(
        api_headers["authorization"],
        format!("Bearer {GITHUB_TOKEN}").as_str()
    );
    let blob_headers = &served.hits.lock().unwrap()[0].1;
    assert!(
        blob_headers.get("authorization").is_none(),
        "the token must not follow the redirect to log storage"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limited_log_fetch_is_retried_after_the_reset() {
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let (blob, _) = blob_storage(&actions_log(&oom_log())).await;
    let gh = MockServer::start().await;
    let reset = epoch_in(1);
    let logs = Scripted::new(vec![github_rate_limited(reset), redirect_to(&blob)]);
    mount_job_logs(&gh, &logs).await;

    let (run, _) = deliver_job(&server, "d-job-2").await;
    let env = worker_env(&gh);
    let worker = db.worker("w1", &env_refs(&env));
    let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    let (_, category, reason) = run_row(&db, run).await;
    assert_eq!(status, "completed", "{reason:?}\n{}", worker.stderr());
    assert_eq!(category.as_deref(), Some("INFRA_ERROR"));
    assert_eq!(logs.count(), 2);
    assert!(
        logs.at(1) >= UNIX_EPOCH + Duration::from_secs(reset),
        "retried before x-ratelimit-reset"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_log_sends_the_run_to_review_with_the_reason() {
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let gh = MockServer::start().await;
    let logs = Scripted::new(vec![github_error(404, "Not Found")]);
    mount_job_logs(&gh, &logs).await;

    let (run, event) = deliver_job(&server, "d-job-3").await;
    let env = worker_env(&gh);
    let _worker = db.worker("w1", &env_refs(&env));
    let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    assert_eq!(status, "failed");
    let (_, _, reason) = run_row(&db, run).await;
    let reason = reason.unwrap();
    assert!(
        reason.contains("log unavailable") && reason.contains("404 Not Found"),
        "{reason}"
    );
    let review: String = sqlx::query_scalar("SELECT reason FROM review_items WHERE run_id = $1")
        .bind(run)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert!(review.contains("log unavailable"), "{review}");
    // Permanent: asked once, not retried; the event is kept.
    assert_eq!(logs.count(), 1);
    assert_eq!(
        count(&db, &format!("failure_events WHERE id = '{event}'")).await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workflow_run_is_analysed_from_its_failed_jobs_logs() {
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let (blob, _) = blob_storage(&actions_log(&oom_log())).await;
    let gh = MockServer::start().await;
    let job = |id: u64, name: &str, conclusion: &str| {
        json!({"id": id, "run_id": RUN_ID, "run_attempt": 1, "status": "completed", "conclusion": conclusion,
               "name": name, "head_sha": SHA, "workflow_name": "CI", "steps": [],
               "url": format!("https://api.github.com/repos/{REPO}/actions/jobs/{id}")})
    };
    Mock::given(method("GET"))
        .and(path(format!("/repos/{REPO}/actions/runs/{RUN_ID}/jobs")))
        .and(query_param("filter", "latest"))
        .respond_with(github_json(json!({"total_count": 2, "jobs": [
            job(399444400, "lint", "success"),
            job(JOB_ID, "integration-tests (postgres 15)", "failure")]})))
        .expect(1)
        .mount(&gh)
        .await;
    let logs = Scripted::new(vec![redirect_to(&blob)]);
    mount_job_logs(&gh, &logs).await;

    let body = bytes(&fixture("github-workflow-run-failure.json"));
    let (status, created) = server
        .github("workflow_run", "d-run-1", &body, Some(GITHUB_SECRET))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{created}");
    let (run, event) = (id(&created, "run_id"), id(&created, "event_id"));
    let env = worker_env(&gh);
    let worker = db.worker("w1", &env_refs(&env));
    let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    assert_eq!(status, "completed", "{}", worker.stderr());
    let stored = stored_log(&db, event).await;
    assert!(
        stored.starts_with("##[group]faultline: log of job \"integration-tests (postgres 15)\""),
        "{}",
        &stored[..200.min(stored.len())]
    );
    assert!(!stored.contains("\"lint\""), "only failed jobs are fetched");
    assert_eq!(logs.count(), 1);
    assert_eq!(run_row(&db, run).await.1.as_deref(), Some("INFRA_ERROR"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_run_does_not_fetch_its_log_again() {
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let (blob, _) = blob_storage(&actions_log(&oom_log())).await;
    let gh = MockServer::start().await;
    let logs = Scripted::new(vec![redirect_to(&blob)]);
    mount_job_logs(&gh, &logs).await;
    let (run, event) = deliver_job(&server, "d-job-4").await;

    // The first worker fetches, then hangs before committing its iteration and dies.
    let mut env = worker_env(&gh);
    env.push(("FAULTLINE_CHAOS_STEP_DELAY_MS", "60000".into()));
    let mut first = db.worker("w1", &env_refs(&env));
    wait_until(Duration::from_secs(30), || async {
        let fetched: i64 =
            sqlx::query_scalar("SELECT count(*) FROM log_fetches WHERE event_id = $1")
                .bind(event)
                .fetch_one(&db.pool)
                .await
                .unwrap();
        (fetched == 1).then_some(())
    })
    .await;
    first.kill9();

    let env = worker_env(&gh);
    let second = db.worker("w2", &env_refs(&env));
    let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    assert_eq!(status, "completed", "{}", second.stderr());
    assert_eq!(logs.count(), 1, "the resumed run fetched the log again");
    let attempts: i64 = sqlx::query_scalar("SELECT count(*) FROM run_attempts WHERE run_id = $1")
        .bind(run)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert!(
        attempts >= 1,
        "the first iteration was retried after the crash"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_jenkins_build_without_an_inline_log_is_analysed_from_its_capped_console() {
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    // ~3.4 MB of console, streamed in chunks; the failure is at the very end.
    let mut lines: Vec<String> = (0..80_000)
        .map(|i| format!("[Pipeline] echo building module {i} ok\n"))
        .collect();
    lines.extend(oom_log().lines().map(|l| format!("{l}\n")));
    lines.push("Finished: FAILURE\n".into());
    let chunks: Vec<String> = lines.chunks(2_000).map(|c| c.concat()).collect();
    let total: usize = chunks.iter().map(String::len).sum();
    let jenkins = FakeJenkins::start("ledger-api", 813, "ci-bot", "11aa22bb", chunks).await;

    let mut notification = fixture("jenkins-completed-failure.json");
    notification["build"]["number"] = json!(813);
    notification["build"]["full_url"] = json!("https://ci.example.com/job/ledger-api/813/");
    notification["build"].as_object_mut().unwrap().remove("log");
    let (status, created) = server.jenkins(&notification).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{created}");
    let (run, event) = (id(&created, "run_id"), id(&created, "event_id"));

    let cap = 2 * 1024 * 1024;
    let worker = db.worker(
        "w1",
        &[
            ("JENKINS_URL", jenkins.url.as_str()),
            ("JENKINS_USER", "ci-bot"),
            ("JENKINS_API_TOKEN", "11aa22bb"),
            ("FAULTLINE_LOG_FETCH_MAX_BYTES", &cap.to_string()),
        ],
    );
    let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    assert_eq!(status, "completed", "{}", worker.stderr());
    assert_eq!(run_row(&db, run).await.1.as_deref(), Some("INFRA_ERROR"));
    assert_eq!(jenkins.count(), 1);

    let (bytes, truncated, detail): (i64, bool, Value) =
        sqlx::query_as("SELECT bytes, truncated, detail FROM log_fetches WHERE event_id = $1")
            .bind(event)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert!(truncated);
    assert_eq!(detail["bytes_read"], total);
    assert_eq!(
        detail["console_url"],
        format!("{}job/ledger-api/813/consoleText", jenkins.url),
        "the console is read from JENKINS_URL, not the host in the notification"
    );
    // Head and tail kept within the cap (give or take one 1 MiB chunk).
    assert!(bytes as usize <= cap + (1 << 20) + 200, "{bytes}");
    let stored = stored_log(&db, event).await;
    assert_eq!(stored.len() as i64, bytes);
    assert!(stored.starts_with("[Pipeline] echo building module 0 ok\n"));
    assert!(stored.contains("bytes cut from the middle of this log"));
    assert!(stored.ends_with("BUILD FAILED in 2m 13s\nFinished: FAILURE\n"));
}

/// Submits `log_url` to the API; returns the run.
async fn submit_log_url(db: &TestDb, server: &Server, url: &str) -> Uuid {
    let token = db.cli_ok(
        &["token", "create", "--role", "ingest", "--name", "ci"],
        &[],
    );
    let (status, body) = send(
        server
            .post("/api/v1/analyses")
            .bearer_auth(token)
            .json(&json!({"log_url": url, "job": "integration-tests", "repository": REPO})),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    id(&body, "run_id")
}

#[tokio::test(flavor = "multi_thread")]
async fn an_api_log_url_naming_a_github_job_is_fetched_and_analysed() {
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let (blob, served) = blob_storage(&actions_log(&oom_log())).await;
    let gh = MockServer::start().await;
    let logs = Scripted::new(vec![redirect_to(&blob)]);
    mount_job_logs(&gh, &logs).await;

    let url = format!("https://github.com/{REPO}/actions/runs/{RUN_ID}/job/{JOB_ID}");
    let run = submit_log_url(&db, &server, &url).await;
    let env = worker_env(&gh);
    let worker = db.worker("w1", &env_refs(&env));
    let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    let (_, category, reason) = run_row(&db, run).await;
    assert_eq!(status, "completed", "{reason:?}\n{}", worker.stderr());
    assert_eq!(
        category.as_deref(),
        Some("INFRA_ERROR"),
        "analysed from the fetched log, not an empty one"
    );
    assert_eq!((logs.count(), served.count()), (1, 1));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_api_log_url_on_any_other_host_is_not_fetched_and_the_run_goes_to_review() {
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let elsewhere = MockServer::start().await;
    let hits = Scripted::new(vec![ResponseTemplate::new(200).set_body_string(oom_log())]);
    Mock::given(method("GET"))
        .respond_with(hits.clone())
        .mount(&elsewhere)
        .await;
    let gh = MockServer::start().await;

    let run = submit_log_url(&db, &server, &format!("{}/build.log", elsewhere.uri())).await;
    let env = worker_env(&gh);
    let _worker = db.worker("w1", &env_refs(&env));
    let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    assert_eq!(status, "failed");
    let reason = run_row(&db, run).await.2.unwrap();
    assert!(
        reason.contains("log unavailable") && reason.contains("is not fetched"),
        "{reason}"
    );
    let review: String = sqlx::query_scalar("SELECT reason FROM review_items WHERE run_id = $1")
        .bind(run)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert!(review.contains("is not fetched"), "{review}");
    assert_eq!(
        hits.count(),
        0,
        "the worker reached a host it is not configured for"
    );
}

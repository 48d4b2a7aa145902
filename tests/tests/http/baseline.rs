//! Issue 13: before the first iteration of a GitHub or Jenkins failure the
//! worker fetches the last green log of the same job (once, stored like the
//! failure's own log) and the excerpt leaves out the lines it also printed;
//! without a green build the run goes on with the plain excerpt.
//!
//! The logs are the pass/fail pairs of `tests/fixtures/baseline/`: each
//! failing log also prints, near its failure footer, an error-looking line
//! that the green build prints too (a coverage or metrics upload that
//! failed), which the plain excerpt picks.

use std::{io::Read, path::Path, time::Duration};

use faultline_shared::{
    diagnose,
    logs::{self, ExcerptOptions},
    storage::events::{LogKind, StoredLogReader},
};
use faultline_tests::{TestDb, fakes::*, wait_terminal, wait_until};
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;
use wiremock::{
    Mock, MockServer, ResponseTemplate,
    matchers::{method, path, query_param},
};

use crate::*;

/// The failed job of the `workflow_job` fixture, and its run.
const JOB_ID: u64 = 399444496;
const RUN_ID: u64 = 30433642;
const JOB_NAME: &str = "integration-tests (postgres 15)";
const WORKFLOW_ID: u64 = 159038;
/// The last green run of the workflow on `main`, and its twin of the job.
const GREEN_RUN: u64 = 30431170;
const GREEN_JOB: u64 = 399430011;

const GITHUB_FAILURE: &str = "Received: 41.99";
const GITHUB_NOISE: &str = "Failed to upload coverage";
const JENKINS_FAILURE: &str = "expected: <42.00> but was: <41.99>";
const JENKINS_NOISE: &str = "could not upload build metrics";

fn log_fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/baseline")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

/// The plain excerpt (no baseline) of a log, as the tool computes it.
fn plain_excerpt(log: &str) -> String {
    let opts = ExcerptOptions {
        max_lines: diagnose::EXCERPT_LINES,
        ..ExcerptOptions::default()
    };
    let ex = logs::excerpt_reader(log.as_bytes(), &opts).unwrap();
    // What the diagnosis reads (the hand-set ranking's choice).
    ex.read_lines()
        .iter()
        .map(|l| format!("{}\n", l.text))
        .collect()
}

/// Replies counted per endpoint.
struct Github {
    server: MockServer,
    red_log: Scripted,
    run: Scripted,
    green_runs: Scripted,
    green_jobs: Scripted,
    green_log: Scripted,
}

/// A job's log in storage, served once per request.
async fn blob(storage: &MockServer, job: u64, log: &str) {
    Mock::given(method("GET"))
        .and(path(format!("/actions-results/job-logs/{job}.txt")))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/plain")
                .insert_header("x-ms-blob-type", "BlockBlob")
                .set_body_string(log),
        )
        .mount(storage)
        .await;
}

/// GitHub's answer to a logs endpoint: 302 to a signed storage URL.
fn redirect(storage: &MockServer, job: u64) -> ResponseTemplate {
    ResponseTemplate::new(302).insert_header(
        "location",
        format!(
            "{}/actions-results/job-logs/{job}.txt?sv=2021-12-02&se=2026-11-22T07%3A10%3A00Z&sig=c2lnbmF0dXJl",
            storage.uri()
        )
        .as_str(),
    )
}

/// A run as `GET /repos/{o}/{r}/actions/runs/{id}` and the runs lists
/// return it (the fields a client reads, and a few more).
fn run_json(id: u64, number: u64, sha: &str, conclusion: &str) -> Value {
    json!({
        "id": id, "name": "CI", "node_id": "WFR_kwLOA1b2c84B0xyz", "head_branch": "main",
        "head_sha": sha, "path": ".github/workflows/ci.yml", "display_title": "CI",
        "run_number": number, "event": "push", "status": "completed", "conclusion": conclusion,
        "workflow_id": WORKFLOW_ID, "check_suite_id": 18002943223u64, "run_attempt": 1,
        "url": format!("https://api.github.com/repos/{REPO}/actions/runs/{id}"),
        "html_url": format!("https://github.com/{REPO}/actions/runs/{id}"),
        "jobs_url": format!("https://api.github.com/repos/{REPO}/actions/runs/{id}/jobs"),
        "logs_url": format!("https://api.github.com/repos/{REPO}/actions/runs/{id}/logs"),
        "workflow_url": format!("https://api.github.com/repos/{REPO}/actions/workflows/{WORKFLOW_ID}"),
        "created_at": "2026-11-20T08:10:00Z", "updated_at": "2026-11-20T08:14:41Z",
    })
}

fn job_json(id: u64, run: u64, name: &str, conclusion: &str) -> Value {
    json!({
        "id": id, "run_id": run, "run_attempt": 1, "workflow_name": "CI", "head_branch": "main",
        "head_sha": "9b8e7d6c5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d", "status": "completed",
        "conclusion": conclusion, "name": name, "steps": [], "labels": ["ubuntu-latest"],
        "url": format!("https://api.github.com/repos/{REPO}/actions/jobs/{id}"),
        "html_url": format!("https://github.com/{REPO}/actions/runs/{run}/job/{id}"),
        "started_at": "2026-11-20T08:10:05Z", "completed_at": "2026-11-20T08:14:40Z",
    })
}

/// A fake GitHub whose workflow has a green run on `main` (or none).
async fn github(red: &str, green: Option<&str>) -> Github {
    github_slow(red, green, Duration::ZERO).await
}

/// [`github`], the search for the green run answering after `delay`.
async fn github_slow(red: &str, green: Option<&str>, delay: Duration) -> Github {
    let storage = MockServer::start().await;
    let server = MockServer::start().await;
    blob(&storage, JOB_ID, red).await;
    let g = Github {
        red_log: Scripted::new(vec![redirect(&storage, JOB_ID)]),
        run: Scripted::new(vec![github_json(run_json(RUN_ID, 812, SHA, "failure"))]),
        green_runs: Scripted::new(vec![
            github_json(match green {
                Some(_) => json!({"total_count": 1, "workflow_runs": [
                run_json(GREEN_RUN, 811, "9b8e7d6c5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d", "success")]}),
                None => json!({"total_count": 0, "workflow_runs": []}),
            })
            .set_delay(delay),
        ]),
        green_jobs: Scripted::new(vec![github_json(json!({"total_count": 2, "jobs": [
            job_json(GREEN_JOB - 1, GREEN_RUN, "lint", "success"),
            job_json(GREEN_JOB, GREEN_RUN, JOB_NAME, "success")]}))]),
        green_log: Scripted::new(vec![redirect(&storage, GREEN_JOB)]),
        server,
    };
    if let Some(green) = green {
        blob(&storage, GREEN_JOB, green).await;
    }
    let mounts = [
        (
            format!("/repos/{REPO}/actions/jobs/{JOB_ID}/logs"),
            &g.red_log,
        ),
        (format!("/repos/{REPO}/actions/runs/{RUN_ID}"), &g.run),
        (
            format!("/repos/{REPO}/actions/runs/{GREEN_RUN}/jobs"),
            &g.green_jobs,
        ),
        (
            format!("/repos/{REPO}/actions/jobs/{GREEN_JOB}/logs"),
            &g.green_log,
        ),
    ];
    for (p, script) in mounts {
        Mock::given(method("GET"))
            .and(path(p))
            .respond_with(script.clone())
            .mount(&g.server)
            .await;
    }
    Mock::given(method("GET"))
        .and(path(format!(
            "/repos/{REPO}/actions/workflows/{WORKFLOW_ID}/runs"
        )))
        .and(query_param("branch", "main"))
        .and(query_param("status", "success"))
        .and(query_param("per_page", "1"))
        .respond_with(g.green_runs.clone())
        .mount(&g.server)
        .await;
    g
}

impl Github {
    /// Requests for the baseline: the green run, its jobs, the green log.
    fn green_asks(&self) -> (usize, usize, usize) {
        (
            self.green_runs.count(),
            self.green_jobs.count(),
            self.green_log.count(),
        )
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("GITHUB_TOKEN", GITHUB_TOKEN.to_string()),
            ("GITHUB_API_URL", self.server.uri()),
        ]
    }
}

fn env_refs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// Delivers the `workflow_job` fixture; returns (run, event).
async fn deliver_job(server: &Server, delivery: &str) -> (Uuid, Uuid) {
    let job = bytes(&fixture("github-workflow-job-timed-out.json"));
    let (status, body) = server
        .github("workflow_job", delivery, &job, Some(GITHUB_SECRET))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    (id(&body, "run_id"), id(&body, "event_id"))
}

/// The run's status once it ended; never `failed` for want of a baseline.
async fn finished(db: &TestDb, run: Uuid, stderr: impl Fn() -> String) {
    let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    let reason: Option<String> =
        sqlx::query_scalar("SELECT failure_reason FROM analysis_runs WHERE id = $1")
            .bind(run)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert!(
        status == "completed" || status == "needs_review",
        "{status}: {reason:?}\n{}",
        stderr()
    );
}

/// The text of an observation's excerpt lines.
fn lines(observation: &Value) -> String {
    observation["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| format!("{}\n", l["text"].as_str().unwrap()))
        .collect()
}

/// The event's baseline row: (source, bytes, reason, detail).
async fn baseline_row(db: &TestDb, event: Uuid) -> (String, Option<i64>, Option<String>, Value) {
    sqlx::query_as("SELECT source, bytes, reason, detail FROM baseline_fetches WHERE event_id = $1")
        .bind(event)
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

async fn stored_baseline(db: &TestDb, event: Uuid) -> String {
    let (pool, handle) = (db.pool.clone(), tokio::runtime::Handle::current());
    tokio::task::spawn_blocking(move || {
        let mut out = String::new();
        StoredLogReader::of(LogKind::Baseline, pool, event, handle)
            .read_to_string(&mut out)
            .unwrap();
        out
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_github_failure_is_excerpted_against_the_last_green_run_of_its_job() {
    let (red, green) = (
        log_fixture("github-red.log"),
        log_fixture("github-green.log"),
    );
    let plain = plain_excerpt(&red);
    assert!(
        plain.contains(GITHUB_NOISE),
        "the plain excerpt picks the noise:\n{plain}"
    );

    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let gh = github(&red, Some(&green)).await;
    let (run, event) = deliver_job(&server, "d-baseline-1").await;
    let env = gh.env();
    let worker = db.worker("w1", &env_refs(&env));
    finished(&db, run, || worker.stderr()).await;

    let (source, bytes, reason, detail) = baseline_row(&db, event).await;
    assert_eq!(source, "github");
    assert_eq!(bytes, Some(green.len() as i64), "{reason:?}");
    assert_eq!(detail["run_id"], GREEN_RUN);
    assert_eq!(detail["workflow_id"], WORKFLOW_ID);
    assert_eq!(detail["jobs"][0]["id"], GREEN_JOB);
    assert!(!detail.to_string().contains("sig="), "{detail}");
    assert_eq!(stored_baseline(&db, event).await, green);
    assert_eq!(
        stored_log(&db, event).await,
        red,
        "the failure's own log is untouched"
    );
    // The job delivery has no workflow id: the run names it. Each asked once.
    let counts = [
        gh.red_log.count(),
        gh.run.count(),
        gh.green_runs.count(),
        gh.green_jobs.count(),
        gh.green_log.count(),
    ];
    assert_eq!(counts, [1; 5]);
    let authorization = gh.green_runs.hits.lock().unwrap()[0].1["authorization"].clone();
    assert_eq!(authorization, format!("Bearer {GITHUB_TOKEN}").as_str());

    let observation = db.observation(run, "log_excerpt").await;
    let text = lines(&observation);
    assert!(text.contains(GITHUB_FAILURE), "{text}");
    assert!(text.contains("FAIL src/ledger.test.js"), "{text}");
    assert!(!text.contains(GITHUB_NOISE), "{text}");
    let note = observation["baseline"].as_str().unwrap();
    assert!(
        note.starts_with("last green log") && note.contains(&GREEN_RUN.to_string()),
        "{note}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_github_failure_without_a_green_run_gets_the_plain_excerpt() {
    let red = log_fixture("github-red.log");
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let gh = github(&red, None).await;
    let (run, event) = deliver_job(&server, "d-baseline-2").await;
    let env = gh.env();
    let worker = db.worker("w1", &env_refs(&env));
    finished(&db, run, || worker.stderr()).await;

    let (source, bytes, reason, _) = baseline_row(&db, event).await;
    let reason = reason.unwrap();
    assert_eq!((source.as_str(), bytes), ("github", None));
    assert!(
        reason.contains("has no successful run on branch main"),
        "{reason}"
    );
    assert_eq!(stored_baseline(&db, event).await, "");
    assert_eq!((gh.green_runs.count(), gh.green_jobs.count()), (1, 0));

    let observation = db.observation(run, "log_excerpt").await;
    assert_eq!(observation["baseline"], format!("none ({reason})"));
    let text = lines(&observation);
    assert!(text.contains(GITHUB_NOISE), "the plain excerpt: {text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_run_does_not_fetch_the_baseline_again() {
    let (red, green) = (
        log_fixture("github-red.log"),
        log_fixture("github-green.log"),
    );
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let gh = github(&red, Some(&green)).await;
    let (run, event) = deliver_job(&server, "d-baseline-3").await;

    // The first worker fetches both logs, then hangs in its first tool call and dies.
    let mut env = gh.env();
    env.push(("FAULTLINE_CHAOS_STEP_DELAY_MS", "60000".into()));
    let mut first = db.worker("w1", &env_refs(&env));
    wait_until(Duration::from_secs(30), || async {
        let fetched: i64 =
            sqlx::query_scalar("SELECT count(*) FROM baseline_fetches WHERE event_id = $1")
                .bind(event)
                .fetch_one(&db.pool)
                .await
                .unwrap();
        (fetched == 1).then_some(())
    })
    .await;
    first.kill9();

    let env = gh.env();
    let second = db.worker("w2", &env_refs(&env));
    finished(&db, run, || second.stderr()).await;
    assert_eq!(
        gh.green_asks(),
        (1, 1, 1),
        "the resumed run fetched the baseline again"
    );
    let attempts: i64 = sqlx::query_scalar("SELECT count(*) FROM run_attempts WHERE run_id = $1")
        .bind(run)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert!(
        attempts >= 1,
        "the first iteration was retried after the crash"
    );
    let text = lines(&db.observation(run, "log_excerpt").await);
    assert!(
        text.contains(GITHUB_FAILURE) && !text.contains(GITHUB_NOISE),
        "the resumed run uses the stored baseline: {text}"
    );
}

/// Two runs of one event at once (a live run and its shadow start
/// together): the green log is fetched once, by whichever run takes the
/// event's baseline lock first; the other waits for it and uses what it
/// stored, without a clash on the chunks (a retried step).
#[tokio::test(flavor = "multi_thread")]
async fn two_runs_of_one_event_fetch_the_baseline_once() {
    use faultline_shared::{
        queue::{AfterCommit, Broker, PRIORITY_LIVE},
        storage::runs::{self, RunLimits},
    };
    let (red, green) = (
        log_fixture("github-red.log"),
        log_fixture("github-green.log"),
    );
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    // Slow enough that both runs are inside their baseline fetch at once.
    let gh = github_slow(&red, Some(&green), Duration::from_millis(1500)).await;
    let (first, event) = deliver_job(&server, "d-baseline-twins").await;
    let mut tx = db.pool.begin().await.unwrap();
    let broker = Broker::Postgres;
    let mut after = AfterCommit::new(&broker);
    let limits = RunLimits {
        max_iterations: 6,
        max_attempts: 5,
        priority: PRIORITY_LIVE,
        shadowed: false,
    };
    let second = runs::create_in_tx(&mut tx, &mut after, event, limits)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    after.flush().await;

    let mut env = gh.env();
    env.push(("FAULTLINE_WORKER_CONCURRENCY", "4".into()));
    let worker = db.worker("w1", &env_refs(&env));
    for run in [first, second] {
        finished(&db, run, || worker.stderr()).await;
    }
    assert_eq!(
        gh.green_asks(),
        (1, 1, 1),
        "the green log was fetched more than once"
    );
    let retried: i64 =
        sqlx::query_scalar("SELECT count(*) FROM run_attempts WHERE run_id = ANY($1)")
            .bind(vec![first, second])
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(retried, 0, "a run retried its first step");
    assert_eq!(stored_baseline(&db, event).await, green);
    for run in [first, second] {
        let text = lines(&db.observation(run, "log_excerpt").await);
        assert!(
            text.contains(GITHUB_FAILURE) && !text.contains(GITHUB_NOISE),
            "{run}: {text}"
        );
    }
}

/// Delivers a Jenkins failure of build 813 without an inline log.
async fn deliver_jenkins(server: &Server) -> (Uuid, Uuid) {
    let mut notification = fixture("jenkins-completed-failure.json");
    notification["build"]["number"] = json!(813);
    notification["build"]["full_url"] = json!("https://ci.example.com/job/ledger-api/813/");
    notification["build"].as_object_mut().unwrap().remove("log");
    let (status, created) = server.jenkins(&notification).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{created}");
    (id(&created, "run_id"), id(&created, "event_id"))
}

async fn jenkins(green: Option<String>) -> FakeJenkins {
    let red = log_fixture("jenkins-red.log");
    // Streamed in a few chunks, as Jenkins does.
    let chunks = red
        .split_inclusive('\n')
        .collect::<Vec<_>>()
        .chunks(16)
        .map(|c| c.concat())
        .collect();
    FakeJenkins::start_with_green("ledger-api", 813, "ci-bot", "11aa22bb", chunks, green).await
}

fn jenkins_env(jenkins: &FakeJenkins) -> Vec<(&'static str, String)> {
    vec![
        ("JENKINS_URL", jenkins.url.clone()),
        ("JENKINS_USER", "ci-bot".into()),
        ("JENKINS_API_TOKEN", "11aa22bb".into()),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn a_jenkins_failure_is_excerpted_against_the_last_successful_build() {
    let (red, green) = (
        log_fixture("jenkins-red.log"),
        log_fixture("jenkins-green.log"),
    );
    let plain = plain_excerpt(&red);
    assert!(
        plain.contains(JENKINS_NOISE),
        "the plain excerpt picks the noise:\n{plain}"
    );

    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let jenkins = jenkins(Some(green.clone())).await;
    let (run, event) = deliver_jenkins(&server).await;
    let env = jenkins_env(&jenkins);
    let worker = db.worker("w1", &env_refs(&env));
    finished(&db, run, || worker.stderr()).await;

    let (source, bytes, reason, detail) = baseline_row(&db, event).await;
    assert_eq!(
        (source.as_str(), bytes),
        ("jenkins", Some(green.len() as i64)),
        "{reason:?}"
    );
    assert_eq!(
        detail["console_url"],
        format!(
            "{}job/ledger-api/lastSuccessfulBuild/consoleText",
            jenkins.url
        ),
        "read under JENKINS_URL, not the host in the notification"
    );
    assert_eq!(stored_baseline(&db, event).await, green);
    assert_eq!((jenkins.count(), jenkins.green_count()), (1, 1));

    let observation = db.observation(run, "log_excerpt").await;
    let text = lines(&observation);
    assert!(text.contains(JENKINS_FAILURE), "{text}");
    assert!(!text.contains(JENKINS_NOISE), "{text}");
    assert!(
        observation["baseline"]
            .as_str()
            .unwrap()
            .contains("lastSuccessfulBuild"),
        "{observation:#}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_jenkins_job_that_never_passed_gets_the_plain_excerpt() {
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let jenkins = jenkins(None).await;
    let (run, event) = deliver_jenkins(&server).await;
    let env = jenkins_env(&jenkins);
    let worker = db.worker("w1", &env_refs(&env));
    finished(&db, run, || worker.stderr()).await;

    let (_, bytes, reason, _) = baseline_row(&db, event).await;
    let reason = reason.unwrap();
    assert_eq!(bytes, None);
    assert!(
        reason.contains("has no successful build") && reason.contains("404"),
        "{reason}"
    );
    assert_eq!(jenkins.green_count(), 1, "a 404 is not retried");
    let observation = db.observation(run, "log_excerpt").await;
    assert_eq!(observation["baseline"], format!("none ({reason})"));
    let text = lines(&observation);
    assert!(text.contains(JENKINS_NOISE), "the plain excerpt: {text}");
}

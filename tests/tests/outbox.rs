//! Outbox notifications: written with the final checkpoint, delivered by the
//! worker with retries scheduled in Postgres, signed, deduplicable, and
//! never re-sent to a target that already accepted them.

use std::time::Duration;

use faultline_shared::storage::{self, events::NewEvent};
use faultline_tests::{TestDb, fakes::FakeChecks, oom_log, wait_terminal, wait_until};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use uuid::Uuid;
use wiremock::{
    Mock, MockServer, ResponseTemplate,
    matchers::{header, method, path, path_regex},
};

const SECRET: &str = "notify-secret-for-tests";

/// Fast retries so three attempts take well under a second.
const FAST_NOTIFY: &[(&str, &str)] = &[
    ("NOTIFY_WEBHOOK_SECRET", SECRET),
    ("NOTIFY_RETRY_BASE", "100ms"),
    ("NOTIFY_RETRY_MAX", "1s"),
    ("NOTIFY_POLL_INTERVAL", "100ms"),
];

#[derive(sqlx::FromRow, Debug)]
struct Outbox {
    id: Uuid,
    status: String,
    attempts: i32,
    delivered_to: Vec<String>,
    last_error: Option<String>,
}

async fn outbox_row(db: &TestDb, run: Uuid) -> Option<Outbox> {
    sqlx::query_as(
        "SELECT id, status, attempts, delivered_to, last_error FROM notification_outbox WHERE run_id = $1",
    )
    .bind(run)
    .fetch_optional(&db.pool)
    .await
    .unwrap()
}

async fn wait_outbox(db: &TestDb, run: Uuid, status: &str) -> Outbox {
    wait_until(Duration::from_secs(30), || async {
        outbox_row(db, run).await.filter(|o| o.status == status)
    })
    .await
}

/// A GitHub Actions failure of `repository` (an OOM log, commit
/// [`HEAD_SHA`]), stored as the webhook handler stores it; its run.
async fn github_failure(db: &TestDb, repository: &str) -> Uuid {
    github_failure_with(db, repository, &oom_log()).await
}

/// A GitHub Actions failure of `repository` with `log`; its run.
async fn github_failure_with(db: &TestDb, repository: &str, log: &str) -> Uuid {
    let event = NewEvent {
        dedup_key: format!("github:delivery:{repository}"),
        source: "github".into(),
        job_name: Some("CI / build".into()),
        repository: Some(repository.into()),
        commit_sha: Some(HEAD_SHA.into()),
        ..NewEvent::default()
    };
    db.ingest(&event, log.as_bytes(), 5).await
}

/// The failed commit of [`github_failure`].
const HEAD_SHA: &str = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";

fn verify(body: &[u8], signature: &str) -> bool {
    let Some(hex) = signature.strip_prefix("sha256=") else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(body);
    faultline_shared::hex(&mac.finalize().into_bytes()) == hex
}

#[tokio::test]
async fn a_webhook_that_fails_twice_gets_the_notification_exactly_once_on_the_third_attempt() {
    let db = TestDb::new().await;
    let hook = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/hook"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(2)
        .with_priority(1)
        .mount(&hook)
        .await;
    Mock::given(method("POST"))
        .and(path("/hook"))
        .and(header("content-type", "application/json"))
        .respond_with(ResponseTemplate::new(204))
        .with_priority(2)
        .mount(&hook)
        .await;
    let url = format!("{}/hook", hook.uri());
    let mut env = FAST_NOTIFY.to_vec();
    env.push(("NOTIFY_WEBHOOK_URL", &url));
    let _worker = db.worker("w1", &env);

    let run = db.enqueue(&db.write("oom.log", oom_log()), &[]);
    assert_eq!(
        wait_terminal(&db.pool, run, Duration::from_secs(60)).await,
        "completed"
    );
    let row = wait_outbox(&db, run, "delivered").await;
    assert_eq!(row.attempts, 3, "{row:?}");
    assert_eq!(row.delivered_to, ["webhook"]);
    assert!(row.last_error.is_none());

    let requests = hook.received_requests().await.unwrap();
    assert_eq!(
        requests.len(),
        3,
        "two failures, one success, nothing after"
    );
    for r in &requests {
        assert_eq!(
            r.headers["x-faultline-delivery"],
            row.id.to_string().as_str()
        );
        assert_eq!(r.headers["x-faultline-event"], "analysis.completed");
        let sig = r.headers["x-faultline-signature"].to_str().unwrap();
        assert!(verify(&r.body, sig), "signature {sig} must verify");
        assert!(!verify(b"{}", sig));
    }
    assert_eq!(
        requests[0].body, requests[2].body,
        "every retry sends the same bytes"
    );
    let body: Value = serde_json::from_slice(&requests[2].body).unwrap();
    assert_eq!(body["run_id"], run.to_string());
    assert_eq!(body["delivery_id"], row.id.to_string());
    assert_eq!(body["category"], "INFRA_ERROR");
    assert_eq!(body["failure"]["log_name"], "oom.log");
}

#[tokio::test]
async fn github_gets_a_check_run_once_while_a_broken_webhook_is_dead_lettered() {
    let db = TestDb::new().await;
    let fake = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/hook"))
        .respond_with(ResponseTemplate::new(500).set_body_string("down"))
        .mount(&fake)
        .await;
    let checks = FakeChecks::default();
    Mock::given(path_regex("^/repos/octo-org/octo-repo/"))
        .and(header("authorization", "Bearer ghs_test_token"))
        .and(header("accept", "application/vnd.github+json"))
        .respond_with(checks.clone())
        .mount(&fake)
        .await;
    let url = format!("{}/hook", fake.uri());
    let mut env = FAST_NOTIFY.to_vec();
    env.extend([
        ("NOTIFY_WEBHOOK_URL", url.as_str()),
        ("GITHUB_TOKEN", "ghs_test_token"),
        ("NOTIFY_ON_REVIEW", "true"),
        ("NOTIFY_MAX_ATTEMPTS", "2"),
    ]);
    let github_api = fake.uri();
    env.push(("GITHUB_API_URL", &github_api));
    let _worker = db.worker("w1", &env);

    let run = github_failure(&db, "octo-org/octo-repo").await;
    wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    let row = wait_outbox(&db, run, "dead").await;
    assert_eq!(row.attempts, 2, "{row:?}");
    assert_eq!(
        row.delivered_to,
        ["github"],
        "GitHub accepted it on the first attempt"
    );
    assert!(row.last_error.unwrap().contains("webhook answered 500"));

    let requests = fake.received_requests().await.unwrap();
    let created: Vec<_> = requests
        .iter()
        .filter(|r| r.method.as_str() == "POST" && r.url.path().ends_with("/check-runs"))
        .collect();
    assert_eq!(created.len(), 1, "never re-sent to a target that has it");
    let body: Value = serde_json::from_slice(&created[0].body).unwrap();
    assert_eq!(body["head_sha"], HEAD_SHA);
    assert_eq!(body["external_id"], row.id.to_string());
    assert_eq!(body["status"], "completed");
    assert_eq!(checks.runs().len(), 1);
    let hook = requests.iter().filter(|r| r.url.path() == "/hook").count();
    assert_eq!(hook, 2, "the webhook was tried twice");
}

#[tokio::test]
async fn a_repository_outside_the_allow_list_gets_no_check_run() {
    let db = TestDb::new().await;
    let fake = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": 4})))
        .mount(&fake)
        .await;
    let (hook, api) = (format!("{}/hook", fake.uri()), fake.uri());
    let mut env = FAST_NOTIFY.to_vec();
    env.extend([
        ("NOTIFY_WEBHOOK_URL", hook.as_str()),
        ("GITHUB_TOKEN", "ghs_test_token"),
        ("GITHUB_API_URL", api.as_str()),
        ("FAULTLINE_ALLOWED_REPOSITORIES", "octo-org/allowed"),
    ]);
    let _worker = db.worker("w1", &env);
    // A GitHub failure of another repository that did not come through the
    // API (the API would have refused it): `enqueue`, or reprocessing.
    let run = github_failure(&db, "octo-org/secrets").await;
    wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    let row = wait_outbox(&db, run, "delivered").await;
    assert_eq!(row.delivered_to, ["webhook"], "{row:?}");
    let requests = fake.received_requests().await.unwrap();
    let paths: Vec<&str> = requests.iter().map(|r| r.url.path()).collect();
    assert_eq!(paths, ["/hook"], "the token wrote nothing to GitHub");
}

#[tokio::test]
async fn needs_review_runs_are_not_notified_unless_configured() {
    let db = TestDb::new().await;
    let hook = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&hook)
        .await;
    let url = format!("{}/hook", hook.uri());
    let mut env = FAST_NOTIFY.to_vec();
    env.push(("NOTIFY_WEBHOOK_URL", &url));
    let _worker = db.worker("w1", &env);
    let run = db.enqueue(&db.write_sample("ambiguous.log"), &[]);
    assert_eq!(
        wait_terminal(&db.pool, run, Duration::from_secs(60)).await,
        "needs_review"
    );
    let row = wait_outbox(&db, run, "skipped").await;
    assert_eq!(row.attempts, 0);
    assert!(hook.received_requests().await.unwrap().is_empty());
}

/// A type-check step of `n` errors (tsc's format, written for this test),
/// each in its own file and line, as GitHub Actions prints it.
fn type_errors(n: usize) -> String {
    let mut log = String::from("##[group]Run npm run typecheck\n> tsc -p .\n##[endgroup]\n");
    for i in 0..n {
        log.push_str(&format!(
            "src/module{i}.ts({},5): error TS2322: Type 'string' is not assignable to type 'number'.\n",
            i + 3
        ));
    }
    log.push_str(&format!(
        "Found {n} errors.\n##[error]Process completed with exit code 2.\n"
    ));
    log
}

/// A worker whose notifier writes check runs to `checks` (served by a
/// fresh fake GitHub), with fast retries.
async fn checks_worker(db: &TestDb, checks: &FakeChecks) -> (MockServer, faultline_tests::Worker) {
    let fake = MockServer::start().await;
    Mock::given(path_regex("^/repos/octo-org/octo-repo/"))
        .and(header("authorization", "Bearer ghs_test_token"))
        .respond_with(checks.clone())
        .mount(&fake)
        .await;
    let api = fake.uri();
    let mut env = FAST_NOTIFY.to_vec();
    env.extend([
        ("GITHUB_TOKEN", "ghs_test_token"),
        ("NOTIFY_ON_REVIEW", "true"),
    ]);
    env.push(("GITHUB_API_URL", &api));
    let worker = db.worker("w1", &env);
    (fake, worker)
}

#[tokio::test]
async fn a_hundred_and_twenty_diagnostics_become_annotations_in_three_requests() {
    let db = TestDb::new().await;
    let checks = FakeChecks::default();
    let (_fake, _worker) = checks_worker(&db, &checks).await;
    let run = github_failure_with(&db, "octo-org/octo-repo", &type_errors(120)).await;
    wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    let row = wait_outbox(&db, run, "delivered").await;
    assert_eq!(row.attempts, 1, "{row:?}");

    let writes: Vec<(String, usize)> = checks
        .writes()
        .into_iter()
        .map(|(m, _, n)| (m, n))
        .collect();
    assert_eq!(
        writes,
        [
            ("POST".to_string(), 50),
            ("PATCH".to_string(), 50),
            ("PATCH".to_string(), 20)
        ],
        "GitHub takes 50 annotations per request"
    );
    let runs = checks.runs();
    assert_eq!(runs.len(), 1);
    let lines: Vec<(String, u64)> = runs[0]
        .annotations
        .iter()
        .map(|a| {
            (
                a["path"].as_str().unwrap().to_string(),
                a["start_line"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, u64)> = (0..120)
        .map(|i| (format!("src/module{i}.ts"), i as u64 + 3))
        .collect();
    assert_eq!(lines, want, "every error once, in log order");
    assert_eq!(runs[0].annotations[0]["annotation_level"], "failure");
    assert_eq!(runs[0].annotations[0]["title"], "tsc TS2322");
    assert!(
        runs[0].output["title"]
            .as_str()
            .unwrap()
            .contains("CODE_ERROR"),
        "{:?}",
        runs[0].output
    );
}

#[tokio::test]
async fn annotations_are_sent_once_when_github_loses_an_answer() {
    let db = TestDb::new().await;
    let checks = FakeChecks::default();
    // GitHub takes the first PATCH, but its answer is lost (502): the next
    // attempt finds the check run by its external id, sees 100 annotations
    // and sends only the last 20.
    checks.fail_write(1, true);
    let (_fake, _worker) = checks_worker(&db, &checks).await;
    let run = github_failure_with(&db, "octo-org/octo-repo", &type_errors(120)).await;
    wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    let row = wait_outbox(&db, run, "delivered").await;
    assert_eq!(row.attempts, 2, "{row:?}");

    let runs = checks.runs();
    assert_eq!(runs.len(), 1, "one check run, never a second");
    assert_eq!(
        runs[0].annotations.len(),
        120,
        "no annotation twice, none lost"
    );
    assert_eq!(
        runs[0].external_id.as_deref(),
        Some(row.id.to_string().as_str())
    );
    let writes: Vec<(String, usize)> = checks
        .writes()
        .into_iter()
        .map(|(m, _, n)| (m, n))
        .collect();
    assert_eq!(
        writes,
        [
            ("POST".to_string(), 50),
            ("PATCH".to_string(), 50),
            ("PATCH".to_string(), 20)
        ]
    );
}

/// A failure of job `CI / build` of octo-org/octo-repo on `commit` (build
/// `build`), analysed to the end; its run's result.
async fn build_fails(db: &TestDb, commit: &str, build: &str) -> Value {
    job_fails(db, "CI / build", commit, build).await
}

async fn build_passes(db: &TestDb, commit: &str, build: &str) {
    job_passes(db, "CI / build", commit, build).await
}

/// `event`, whose log is three type errors in `src/module0.ts` …
/// `src/module2.ts`, ingested and analysed to the end; its run's result.
async fn analysed(db: &TestDb, event: &NewEvent) -> Value {
    let run = db.ingest(event, type_errors(3).as_bytes(), 8).await;
    finished_result(db, run).await
}

/// Records `outcome`, which must be new to the history.
async fn recorded(db: &TestDb, outcome: &storage::history::NewOutcome) {
    assert!(
        storage::history::record_outcome(&db.pool, outcome)
            .await
            .unwrap()
    );
}

/// The result of run `run` once it has finished.
async fn finished_result(db: &TestDb, run: Uuid) -> Value {
    wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    let (result,): (Option<Value>,) =
        sqlx::query_as("SELECT result FROM analysis_runs WHERE id = $1")
            .bind(run)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    result.expect("a finished run has a result")
}

#[tokio::test]
async fn the_origin_of_each_failure_is_decided_from_the_jobs_history_and_named_on_the_check_run() {
    const A: &str = "aaaaaaa111111111111111111111111111111111";
    const B: &str = "bbbbbbb222222222222222222222222222222222";
    const C: &str = "ccccccc333333333333333333333333333333333";
    let db = TestDb::new().await;
    let checks = FakeChecks::default();
    let (_fake, _worker) = checks_worker(&db, &checks).await;

    // Green on A, then red on B: this change. A job of the same name in
    // another repository failed in between: not this job's history.
    build_passes(&db, A, "1").await;
    let elsewhere = storage::history::NewOutcome {
        dedup_key: "github:delivery:origin-elsewhere".into(),
        source: "github".into(),
        job_name: Some("CI / build".into()),
        repository: Some("octo-org/other".into()),
        commit_sha: Some("ddddddd444444444444444444444444444444444".into()),
        build_number: Some("90".into()),
        outcome: "failure".into(),
        ..storage::history::NewOutcome::default()
    };
    recorded(&db, &elsewhere).await;
    let first = build_fails(&db, B, "2").await;
    assert_eq!(first["origin"], "this_change", "{first:#}");
    let why = first["origin_evidence"][0].as_str().unwrap();
    assert!(why.contains("passed on aaaaaaa"), "{why}");

    // Red again on C without a pass in between: already failing since B.
    let second = build_fails(&db, C, "3").await;
    assert_eq!(second["origin"], "already_failing", "{second:#}");
    let why = second["origin_evidence"][0].as_str().unwrap();
    assert!(
        why.contains("build 2, commit bbbbbbb") && why.contains("last passed on aaaaaaa"),
        "{why}"
    );

    // A re-run of C passes, another fails: flaky on C.
    build_passes(&db, C, "4").await;
    let third = build_fails(&db, C, "5").await;
    assert_eq!(third["origin"], "flaky", "{third:#}");
    assert!(
        third["origin_evidence"][0]
            .as_str()
            .unwrap()
            .contains("this commit (ccccccc)")
    );

    // The check runs say it first, in their titles and summaries.
    let titles = wait_until(Duration::from_secs(30), || async {
        let runs = checks.runs();
        (runs.len() == 3).then(|| {
            runs.iter()
                .map(|r| {
                    (
                        r.head_sha.clone(),
                        r.output["title"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect::<Vec<_>>()
        })
    })
    .await;
    let by = |sha: &str, n: usize| {
        titles
            .iter()
            .filter(|(s, _)| s == sha)
            .nth(n)
            .unwrap()
            .1
            .clone()
    };
    assert!(
        by(B, 0).starts_with("this change: CODE_ERROR"),
        "{titles:?}"
    );
    assert!(
        titles
            .iter()
            .any(|(s, t)| s == C && t.starts_with("already failing: ")),
        "{titles:?}"
    );
    assert!(
        titles
            .iter()
            .any(|(s, t)| s == C && t.starts_with("flaky: ")),
        "{titles:?}"
    );
    let summary = checks.runs()[0].output["summary"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        summary.starts_with("**Origin:** this change — "),
        "{summary}"
    );
}

#[tokio::test]
async fn slack_gets_a_block_kit_message_once_after_a_429() {
    let db = TestDb::new().await;
    let slack = MockServer::start().await;
    let replies = faultline_tests::fakes::Scripted::new(vec![
        // Slack's rate limit: plain text and a Retry-After.
        ResponseTemplate::new(429)
            .insert_header("retry-after", "1")
            .set_body_string("rate_limited"),
        ResponseTemplate::new(200).set_body_string("ok"),
    ]);
    Mock::given(method("POST"))
        .and(path("/services/T0001/B0001/XXXXXXXX"))
        .respond_with(replies.clone())
        .mount(&slack)
        .await;
    let url = format!("{}/services/T0001/B0001/XXXXXXXX", slack.uri());
    let mut env = FAST_NOTIFY.to_vec();
    env.extend([
        ("NOTIFY_SLACK_WEBHOOK_URL", url.as_str()),
        ("NOTIFY_CONSOLE_URL", "https://faultline.example/"),
        ("NOTIFY_ON_REVIEW", "true"),
    ]);
    let _worker = db.worker("w1", &env);
    let run = github_failure_with(&db, "octo-org/octo-repo", &type_errors(2)).await;
    wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    let row = wait_outbox(&db, run, "delivered").await;
    assert_eq!(
        (row.attempts, row.delivered_to.clone()),
        (2, vec!["slack".to_string()]),
        "{row:?}"
    );

    let requests = slack.received_requests().await.unwrap();
    assert_eq!(
        requests.len(),
        2,
        "the 429 was retried once, then never again"
    );
    assert_eq!(
        requests[0].body, requests[1].body,
        "the same message both times"
    );
    let body: Value = serde_json::from_slice(&requests[1].body).unwrap();
    assert!(
        body["text"].as_str().unwrap().contains("CODE_ERROR"),
        "{body:#}"
    );
    let blocks = body["blocks"].as_array().unwrap();
    assert_eq!(blocks[0]["type"], "header");
    assert!(
        blocks[0]["text"]["text"]
            .as_str()
            .unwrap()
            .contains("CODE_ERROR"),
        "{body:#}"
    );
    let fields: Vec<&str> = blocks[1]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["text"].as_str().unwrap())
        .collect();
    assert!(
        fields.iter().any(|f| f.starts_with("*Origin*\n")),
        "{fields:?}"
    );
    assert!(
        fields.contains(&"*Repository*\nocto-org/octo-repo"),
        "{fields:?}"
    );
    let button = blocks
        .iter()
        .find(|b| b["type"] == "actions")
        .expect("a link to the console");
    assert_eq!(
        button["elements"][0]["url"],
        format!("https://faultline.example/ui/analyses/{run}")
    );
}

/// The failing file's owners, from the repository's CODEOWNERS at the
/// failed commit (the last matching entry wins), on the check run and in
/// the Slack message; a repository without CODEOWNERS gets neither line.
#[tokio::test]
async fn the_owners_of_the_failing_file_are_named_on_the_check_run_and_in_slack() {
    let db = TestDb::new().await;
    let checks = FakeChecks::default();
    let fake = MockServer::start().await;
    let codeowners = "* @octo-org/everyone\n/src/ @octo-org/frontend @lena\n*.md @octo-org/docs\n";
    Mock::given(method("GET"))
        .and(path(
            "/repos/octo-org/octo-repo/contents/.github/CODEOWNERS",
        ))
        .and(wiremock::matchers::query_param("ref", HEAD_SHA))
        .respond_with(faultline_tests::fakes::github_json(
            faultline_tests::fakes::contents(".github/CODEOWNERS", codeowners),
        ))
        .with_priority(1)
        .mount(&fake)
        .await;
    Mock::given(path_regex("^/repos/octo-org/(octo-repo|no-owners)/"))
        .and(header("authorization", "Bearer ghs_test_token"))
        .respond_with(checks.clone())
        .mount(&fake)
        .await;
    let slack = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/services/T0001/B0001/XXXXXXXX"))
        .respond_with(ResponseTemplate::new(200).set_body_string("ok"))
        .mount(&slack)
        .await;
    let api = fake.uri();
    let url = format!("{}/services/T0001/B0001/XXXXXXXX", slack.uri());
    let mut env = FAST_NOTIFY.to_vec();
    env.extend([
        ("GITHUB_TOKEN", "ghs_test_token"),
        ("NOTIFY_ON_REVIEW", "true"),
        ("NOTIFY_SLACK_WEBHOOK_URL", url.as_str()),
        ("GITHUB_API_URL", api.as_str()),
    ]);
    let _worker = db.worker("w1", &env);

    let owned = github_failure_with(&db, "octo-org/octo-repo", &type_errors(2)).await;
    wait_terminal(&db.pool, owned, Duration::from_secs(60)).await;
    let row = wait_outbox(&db, owned, "delivered").await;
    assert_eq!(row.attempts, 1, "{row:?}");
    let unowned = github_failure_with(&db, "octo-org/no-owners", &type_errors(2)).await;
    wait_terminal(&db.pool, unowned, Duration::from_secs(60)).await;
    wait_outbox(&db, unowned, "delivered").await;

    let want = "@octo-org/frontend, @lena (CODEOWNERS line 2)";
    let runs = checks.runs();
    assert_eq!(runs.len(), 2, "one check run per failure");
    let summary = |i: usize| runs[i].output["summary"].as_str().unwrap().to_string();
    // Named, not mentioned (as in the pull-request comment).
    let named = "@\u{200b}octo-org/frontend, @\u{200b}lena (CODEOWNERS line 2)";
    assert!(
        summary(0).contains(&format!("**Owners of `src/module0.ts`:** {named}")),
        "{}",
        summary(0)
    );
    assert!(!summary(1).contains("Owners"), "{}", summary(1));

    let messages: Vec<Value> = slack
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    assert_eq!(messages.len(), 2);
    let owners_block = |m: &Value| {
        m["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b["text"]["text"].as_str())
            .find(|t| t.starts_with("*Owners of"))
            .map(str::to_string)
    };
    let of_repo = |repo: &str| {
        messages
            .iter()
            .find(|m| m.to_string().contains(repo))
            .unwrap_or_else(|| panic!("a message about {repo}: {messages:?}"))
    };
    assert_eq!(
        owners_block(of_repo("octo-org/octo-repo")).as_deref(),
        Some(format!("*Owners of `src/module0.ts`*\n{want}").as_str())
    );
    assert_eq!(owners_block(of_repo("octo-org/no-owners")), None);
}

#[tokio::test]
async fn a_check_run_whose_creation_answer_was_lost_is_not_created_twice() {
    let db = TestDb::new().await;
    let checks = FakeChecks::default();
    // GitHub creates the check run (with 50 annotations) but the answer is
    // lost: the next attempt finds it by external id and only adds the rest.
    checks.fail_write(0, true);
    let (_fake, _worker) = checks_worker(&db, &checks).await;
    let run = github_failure_with(&db, "octo-org/octo-repo", &type_errors(120)).await;
    wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    let row = wait_outbox(&db, run, "delivered").await;
    assert_eq!(row.attempts, 2, "{row:?}");
    let runs = checks.runs();
    assert_eq!(runs.len(), 1, "one check run, never a second");
    assert_eq!(runs[0].annotations.len(), 120);
    let writes: Vec<(String, usize)> = checks
        .writes()
        .into_iter()
        .map(|(m, _, n)| (m, n))
        .collect();
    assert_eq!(
        writes,
        [
            ("POST".to_string(), 50),
            ("PATCH".to_string(), 50),
            ("PATCH".to_string(), 20)
        ]
    );
}

/// GitHub's pull requests of a commit and their files, as it pages them
/// (`per_page`, `page`): commit → open pull request → paths. A commit it
/// does not know answers 404 (`Not Found`), like GitHub's.
#[derive(Clone, Default)]
struct FakePulls {
    /// Commit → (pull request, its files).
    pulls: std::collections::HashMap<String, (u64, Vec<String>)>,
    /// File pages served, per pull request.
    pages: std::sync::Arc<std::sync::Mutex<Vec<(u64, usize)>>>,
    /// Pushed commit (no pull request) → the commits since `base`: (base, files).
    pushes: std::collections::HashMap<String, (String, Vec<String>)>,
}

impl wiremock::Respond for FakePulls {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        use faultline_tests::fakes::{github_error, github_json};
        let parts: Vec<&str> = request.url.path().trim_matches('/').split('/').collect();
        let query = |k: &str| {
            request
                .url
                .query_pairs()
                .find(|(n, _)| n == k)
                .and_then(|(_, v)| v.parse::<usize>().ok())
        };
        match &parts[..] {
            ["repos", _, _, "commits", sha, "pulls"] => match self.pulls.get(*sha) {
                Some((n, _)) => github_json(json!([{
                    "number": n, "state": "open", "head": {"sha": sha},
                    "html_url": format!("https://github.com/octo-org/octo-repo/pull/{n}"),
                }])),
                None if self.pushes.contains_key(*sha) => github_json(json!([])),
                None => github_error(404, "Not Found"),
            },
            ["repos", _, _, "compare", range] => {
                let (base, head) = range.split_once("...").unwrap();
                match self.pushes.get(head).filter(|(b, _)| b == base) {
                    Some((_, files)) => github_json(json!({
                        "status": "ahead", "ahead_by": 2, "behind_by": 0,
                        "files": files.iter().map(|f| json!({"filename": f, "status": "modified"})).collect::<Vec<_>>(),
                    })),
                    None => github_error(404, "Not Found"),
                }
            }
            ["repos", _, _, "pulls", n, "files"] => {
                let n: u64 = n.parse().unwrap();
                let Some((_, files)) = self.pulls.values().find(|(p, _)| *p == n) else {
                    return github_error(404, "Not Found");
                };
                let per_page = query("per_page").unwrap_or(30).min(100);
                let page = query("page").unwrap_or(1);
                self.pages.lock().unwrap().push((n, page));
                let listed: Vec<Value> = files
                    .iter()
                    .skip((page - 1) * per_page)
                    .take(per_page)
                    .map(|f| json!({"filename": f, "status": "modified", "additions": 1, "deletions": 1, "changes": 2}))
                    .collect();
                github_json(Value::Array(listed))
            }
            _ => github_error(404, "Not Found"),
        }
    }
}

/// A failure of `CI / build` on `branch` whose change is to land on
/// `main`, stored as the producer stores a GitHub delivery; its result.
async fn branch_fails(db: &TestDb, branch: &str, commit: &str, build: &str) -> Value {
    let event = NewEvent {
        dedup_key: format!("github:delivery:branch-{build}"),
        source: "github".into(),
        job_name: Some("CI / build".into()),
        build_number: Some(build.into()),
        repository: Some("octo-org/octo-repo".into()),
        commit_sha: Some(commit.into()),
        payload: json!({"github": {"head_branch": branch, "target_branch": "main"}}),
        ..NewEvent::default()
    };
    analysed(db, &event).await
}

async fn main_passes(db: &TestDb, commit: &str, build: &str) {
    let outcome = storage::history::NewOutcome {
        dedup_key: format!("github:delivery:branch-pass-{build}"),
        source: "github".into(),
        job_name: Some("CI / build".into()),
        repository: Some("octo-org/octo-repo".into()),
        commit_sha: Some(commit.into()),
        build_number: Some(build.into()),
        branch: Some("main".into()),
        outcome: "success".into(),
        ..storage::history::NewOutcome::default()
    };
    recorded(db, &outcome).await;
}

/// Issue 32 item 1: "already failing" is failing on the branch the change
/// is to land on. A pull request whose base is red since an earlier build
/// is already failing, named there; a pull request whose own earlier
/// commit failed while its base is green is this change.
#[tokio::test]
async fn already_failing_means_failing_on_the_target_branch() {
    let sha = |c: char| c.to_string().repeat(40);
    let db = TestDb::new().await;
    let checks = FakeChecks::default();
    let (_fake, _worker) = checks_worker(&db, &checks).await;

    main_passes(&db, &sha('a'), "1").await;
    let red = branch_fails(&db, "main", &sha('b'), "2").await;
    assert_eq!(red["origin"], "this_change", "{red:#}");
    // The pull request fails the same way while main is red.
    let pr = branch_fails(&db, "feature", &sha('c'), "3").await;
    assert_eq!(pr["origin"], "already_failing", "{pr:#}");
    let why = pr["origin_evidence"][0].as_str().unwrap();
    assert!(
        why.starts_with("job `CI / build` on `main` was failing before this change: since build 2, commit bbbbbbb")
            && why.ends_with("last passed on aaaaaaa"),
        "{why}"
    );
    // main is green again; the pull request fails on two commits in a
    // row: its own change, not main's.
    main_passes(&db, &sha('d'), "4").await;
    let first = branch_fails(&db, "feature", &sha('e'), "5").await;
    assert_eq!(first["origin"], "this_change", "{first:#}");
    let again = branch_fails(&db, "feature", &sha('f'), "6").await;
    assert_eq!(again["origin"], "this_change", "{again:#}");
    // The history read says which branch the failure ran on.
    let (observation,): (Value,) = sqlx::query_as(
        "SELECT s.observation FROM run_steps s JOIN analysis_runs r ON r.id = s.run_id
         JOIN failure_events e ON e.id = r.event_id
         WHERE e.build_number = '6' AND s.action = 'failure_history'",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(observation["branch"], "feature", "{observation:#}");
    assert_eq!(observation["target"]["branch"], "main");
    assert_eq!(observation["target"]["history"]["passes"], 2);
    assert_eq!(observation["target"]["history"]["failures"], 1);
}

/// A Jenkins multibranch build of `job` (named after its branch, as
/// multibranch pipelines name them) on `commit` that failed; its result.
async fn jenkins_branch_fails(
    db: &TestDb,
    job: &str,
    target: Option<&str>,
    commit: &str,
    build: &str,
) -> Value {
    let event = NewEvent {
        dedup_key: format!("jenkins:https://ci.example.com/job/shop/job/{job}/#{build}"),
        source: "jenkins".into(),
        job_name: Some(job.into()),
        build_number: Some(build.into()),
        repository: Some("https://git.example.com/acme/shop.git".into()),
        commit_sha: Some(commit.into()),
        payload: json!({"jenkins": {"branch": job, "target_branch": target, "status": "FAILURE"}}),
        ..NewEvent::default()
    };
    analysed(db, &event).await
}

/// Issue 32 item 1, Jenkins: a multibranch pipeline's pull-request job
/// (`PR-7`, target `main` from CHANGE_TARGET) is already failing when the
/// `main` job has been failing since an earlier build.
#[tokio::test]
async fn a_jenkins_pull_request_job_is_already_failing_when_the_target_branch_job_is() {
    let sha = |c: char| c.to_string().repeat(40);
    let db = TestDb::new().await;
    let checks = FakeChecks::default();
    let (_fake, _worker) = checks_worker(&db, &checks).await;
    let pass = storage::history::NewOutcome {
        dedup_key: "jenkins:https://ci.example.com/job/shop/job/main/#40".into(),
        source: "jenkins".into(),
        job_name: Some("main".into()),
        repository: Some("https://git.example.com/acme/shop.git".into()),
        commit_sha: Some(sha('a')),
        build_number: Some("40".into()),
        branch: Some("main".into()),
        outcome: "success".into(),
        ..storage::history::NewOutcome::default()
    };
    recorded(&db, &pass).await;
    let main = jenkins_branch_fails(&db, "main", None, &sha('b'), "41").await;
    assert_eq!(main["origin"], "this_change", "{main:#}");
    let pr = jenkins_branch_fails(&db, "PR-7", Some("main"), &sha('c'), "1").await;
    assert_eq!(pr["origin"], "already_failing", "{pr:#}");
    let why = pr["origin_evidence"][0].as_str().unwrap();
    assert!(
        why.starts_with(
            "the target branch's job `main` was failing before this change: since build 41, \
             commit bbbbbbb"
        ) && why.ends_with("last passed on aaaaaaa"),
        "{why}"
    );
}

/// A GitHub failure of job `job` on `commit` whose log is three type
/// errors in `src/module0.ts` … `src/module2.ts`; its result.
async fn job_fails(db: &TestDb, job: &str, commit: &str, build: &str) -> Value {
    let event = NewEvent {
        dedup_key: format!("github:delivery:change-{job}-{build}"),
        source: "github".into(),
        job_name: Some(job.into()),
        build_number: Some(build.into()),
        repository: Some("octo-org/octo-repo".into()),
        commit_sha: Some(commit.into()),
        ..NewEvent::default()
    };
    analysed(db, &event).await
}

async fn job_passes(db: &TestDb, job: &str, commit: &str, build: &str) {
    let outcome = storage::history::NewOutcome {
        dedup_key: format!("github:delivery:change-pass-{job}-{build}"),
        source: "github".into(),
        job_name: Some(job.into()),
        repository: Some("octo-org/octo-repo".into()),
        commit_sha: Some(commit.into()),
        build_number: Some(build.into()),
        outcome: "success".into(),
        ..storage::history::NewOutcome::default()
    };
    recorded(db, &outcome).await;
}

/// Issue 32 item 1: `this_change` names the files the pull request
/// touched that the failure names; with no pass on record, such a file
/// makes it `this_change` all the same; a change of 10,000 files is read
/// as its first thousand (ten pages), and a commit GitHub does not know
/// leaves a recorded fallback.
#[tokio::test]
async fn this_change_names_the_touched_files_the_failure_names_and_a_huge_change_is_read_bounded() {
    const A: &str = "aaaaaaa111111111111111111111111111111111";
    const B: &str = "bbbbbbb222222222222222222222222222222222";
    const D: &str = "ddddddd444444444444444444444444444444444";
    const E: &str = "eeeeeee555555555555555555555555555555555";
    const F: &str = "fffffff666666666666666666666666666666666";
    let db = TestDb::new().await;
    let mut pulls = FakePulls::default();
    pulls
        .pulls
        .insert(F.into(), (14, vec!["shop/pricing.py".into()]));
    const G: &str = "0a0a0a0777777777777777777777777777777777";
    pulls.pushes.insert(
        G.into(),
        (
            A.into(),
            vec!["docs/guide.md".into(), "src/module2.ts".into()],
        ),
    );
    pulls.pulls.insert(
        B.into(),
        (12, vec!["README.md".into(), "src/module1.ts".into()]),
    );
    let huge: Vec<String> = (0..10_000).map(|i| format!("gen/part{i}.ts")).collect();
    pulls.pulls.insert(D.into(), (13, huge));
    let fake = MockServer::start().await;
    Mock::given(path_regex(
        r"^/repos/octo-org/octo-repo/(commits/[0-9a-f]+/pulls|pulls/\d+/files|compare/[0-9a-f]+\.\.\.[0-9a-f]+)$",
    ))
    .and(header("authorization", "Bearer ghs_test_token"))
    .respond_with(pulls.clone())
    .with_priority(1)
    .mount(&fake)
    .await;
    let checks = FakeChecks::default();
    Mock::given(path_regex("^/repos/octo-org/octo-repo/"))
        .respond_with(checks.clone())
        .mount(&fake)
        .await;
    let api = fake.uri();
    let mut env = FAST_NOTIFY.to_vec();
    env.extend([
        ("GITHUB_TOKEN", "ghs_test_token"),
        ("GITHUB_API_URL", api.as_str()),
    ]);
    let _worker = db.worker("w1", &env);

    // Green on A, red on B, whose pull request touched src/module1.ts.
    job_passes(&db, "CI / build", A, "1").await;
    let result = job_fails(&db, "CI / build", B, "2").await;
    assert_eq!(result["origin"], "this_change", "{result:#}");
    let why: Vec<&str> = result["origin_evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(why[0].contains("passed on aaaaaaa"), "{why:?}");
    assert_eq!(
        why.get(1).copied(),
        Some(
            "the change (pull request #12, 2 files) touched `src/module1.ts`, which the failure names"
        ),
        "{why:?}"
    );

    // A job with no pass on record: the touched file decides all the same.
    let result = job_fails(&db, "CI / typecheck", B, "3").await;
    assert_eq!(result["origin"], "this_change", "{result:#}");
    let why = result["origin_evidence"][0].as_str().unwrap();
    assert!(
        why.contains("no pass on record")
            && why.contains("pull request #12")
            && why.contains("`src/module1.ts`"),
        "{why}"
    );

    // 10,000 files: ten pages of a hundred, and it says so.
    job_passes(&db, "CI / lint", A, "4").await;
    let result = job_fails(&db, "CI / lint", D, "5").await;
    assert_eq!(result["origin"], "this_change", "{result:#}");
    assert_eq!(
        result["origin_evidence"][1],
        "the change (pull request #13, 1000 files read of more) touched none of the files the failure names",
        "{result:#}"
    );
    let pages: Vec<usize> = pulls
        .pages
        .lock()
        .unwrap()
        .iter()
        .filter(|(n, _)| *n == 13)
        .map(|(_, p)| *p)
        .collect();
    assert_eq!(pages, (1..=10).collect::<Vec<_>>(), "bounded at ten pages");

    // A commit GitHub does not know: the fallback is recorded, the history
    // still decides.
    job_passes(&db, "CI / docs", A, "6").await;
    let result = job_fails(&db, "CI / docs", E, "7").await;
    assert_eq!(result["origin"], "this_change", "{result:#}");
    let why = result["origin_evidence"][1].as_str().unwrap();
    assert!(
        why.starts_with("the change's files were not read (commit eeeeeee)") && why.contains("404"),
        "{why}"
    );
    // A push with no pull request: its change is every commit since the
    // job last passed (GitHub's compare), not only the pushed commit.
    job_passes(&db, "CI / push", A, "9").await;
    let result = job_fails(&db, "CI / push", G, "10").await;
    assert_eq!(result["origin"], "this_change", "{result:#}");
    assert_eq!(
        result["origin_evidence"][1],
        "the change (the commits since aaaaaaa, the job's last pass, 2 files) touched \
         `src/module2.ts`, which the failure names",
        "{result:#}"
    );

    // A file the change touched that only a stack frame names (the report
    // names the test file): the frame is the failure's too.
    let event = NewEvent {
        dedup_key: "github:delivery:change-frames".into(),
        source: "github".into(),
        job_name: Some("CI / unit".into()),
        build_number: Some("8".into()),
        repository: Some("octo-org/octo-repo".into()),
        commit_sha: Some(F.into()),
        ..NewEvent::default()
    };
    let log = "##[group]Run pytest -q\npytest -q\n##[endgroup]\n\
        =================================== FAILURES ===================================\n\
        __________________________________ test_total __________________________________\n\
        Traceback (most recent call last):\n\
          File \"/home/runner/work/octo-repo/octo-repo/tests/test_cart.py\", line 8, in test_total\n\
            assert cart.total() == 3\n\
          File \"/home/runner/work/octo-repo/octo-repo/shop/pricing.py\", line 41, in total\n\
            return sum(p.price for p in self.items) / self.count\n\
        ZeroDivisionError: division by zero\n\
        =========================== short test summary info ============================\n\
        FAILED tests/test_cart.py::test_total - ZeroDivisionError: division by zero\n\
        ============================== 1 failed in 0.12s ===============================\n\
        ##[error]Process completed with exit code 1.\n";
    let run = db.ingest(&event, log.as_bytes(), 8).await;
    let result = finished_result(&db, run).await;
    assert_eq!(result["origin"], "this_change", "{result:#}");
    let why = result["origin_evidence"][0].as_str().unwrap();
    assert!(
        why.contains("pull request #14") && why.contains("`shop/pricing.py`"),
        "{why}"
    );

    // Journaled with the history, like any tool call.
    let (observation,): (Value,) = sqlx::query_as(
        "SELECT s.observation FROM run_steps s JOIN analysis_runs r ON r.id = s.run_id
         JOIN failure_events e ON e.id = r.event_id
         WHERE e.job_name = 'CI / lint' AND s.action = 'failure_history'",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    let change = &observation["change"];
    assert_eq!(
        change["files"].as_array().map(Vec::len),
        Some(1000),
        "{change}"
    );
    assert_eq!(change["truncated"], true);
}

/// Jenkins: the build's changes (its JSON's `changeSets`, as a Pipeline
/// with a Git SCM reports them) name the touched file the failure names;
/// a build whose JSON Jenkins does not have (404) leaves a recorded
/// fallback.
#[tokio::test]
async fn a_jenkins_build_s_change_sets_name_the_touched_file() {
    const REPOSITORY: &str = "https://github.com/octo/app.git";
    let db = TestDb::new().await;
    let jenkins = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/job/team/job/app/42/api/json"))
        .and(header(
            "authorization",
            "Basic ZmF1bHRsaW5lOmplbmtpbnMtdG9rZW4tZm9yLXRlc3Rz",
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "_class": "org.jenkinsci.plugins.workflow.job.WorkflowRun",
            "changeSets": [{
                "_class": "hudson.plugins.git.GitChangeSetList",
                "items": [
                    {"_class": "hudson.plugins.git.GitChangeSet",
                     "commitId": "ccccccc333333333333333333333333333333333",
                     "affectedPaths": ["docs/setup.md", "src/module2.ts"]},
                    {"_class": "hudson.plugins.git.GitChangeSet",
                     "commitId": "ccccccc333333333333333333333333333333334",
                     "affectedPaths": ["src/module2.ts"]}
                ]
            }]
        })))
        .mount(&jenkins)
        .await;
    let url = format!("{}/", jenkins.uri());
    let mut env = FAST_NOTIFY.to_vec();
    env.extend([
        ("JENKINS_URL", url.as_str()),
        ("JENKINS_USER", "faultline"),
        ("JENKINS_API_TOKEN", "jenkins-token-for-tests"),
    ]);
    let _worker = db.worker("w1", &env);
    // Both jobs passed before.
    for job in ["app", "lib"] {
        let pass = storage::history::NewOutcome {
            dedup_key: format!("jenkins:job/team/job/{job}/#40"),
            source: "jenkins".into(),
            job_name: Some(format!("team/{job}")),
            repository: Some(REPOSITORY.into()),
            commit_sha: Some("aaaaaaa111111111111111111111111111111111".into()),
            build_number: Some("40".into()),
            outcome: "success".into(),
            ..storage::history::NewOutcome::default()
        };
        recorded(&db, &pass).await;
    }
    let fails = |job: &str, build: &str, commit: &str| NewEvent {
        dedup_key: format!("jenkins:job/team/job/{job}/#{build}"),
        source: "jenkins".into(),
        job_name: Some(format!("team/{job}")),
        build_number: Some(build.into()),
        repository: Some(REPOSITORY.into()),
        commit_sha: Some(commit.into()),
        payload: json!({"jenkins": {"job_url": format!("job/team/job/{job}/"), "phase": "COMPLETED", "status": "FAILURE"}}),
        ..NewEvent::default()
    };
    let run = db
        .ingest(
            &fails("app", "42", "ccccccc333333333333333333333333333333334"),
            type_errors(3).as_bytes(),
            8,
        )
        .await;
    let got = finished_result(&db, run).await;
    assert_eq!(got["origin"], "this_change", "{got:#}");
    assert_eq!(
        got["origin_evidence"][1],
        "the change (build 42, 2 files) touched `src/module2.ts`, which the failure names",
        "{got:#}"
    );
    let run = db
        .ingest(
            &fails("lib", "43", "ddddddd444444444444444444444444444444444"),
            type_errors(3).as_bytes(),
            8,
        )
        .await;
    let got = finished_result(&db, run).await;
    let why = got["origin_evidence"][1].as_str().unwrap_or_default();
    assert!(
        why.starts_with("the change's files were not read (build 43)") && why.contains("404"),
        "{got:#}"
    );
}

/// Issue 32 item 1: the same failure (same fingerprint) in unrelated
/// repositories at the same time is the infrastructure's, whatever its
/// category: one other repository is not enough, two are.
#[tokio::test]
async fn the_same_failure_in_two_other_repositories_at_the_same_time_is_infrastructure() {
    let db = TestDb::new().await;
    let _worker = db.worker("w1", FAST_NOTIFY);
    let log = "##[group]Run npm ci\n\
               npm ERR! code ETARGET\n\
               npm ERR! notarget No matching version found for shop-client@^4.2.0.\n\
               npm ERR! notarget In most cases you or one of your dependencies are requesting\n\
               npm ERR! notarget a package version that doesn't exist.\n\
               ##[error]Process completed with exit code 1.\n";
    let mut origins = Vec::new();
    for repo in ["octo-org/shop", "octo-org/till", "octo-org/octo-repo"] {
        let event = NewEvent {
            dedup_key: format!("github:delivery:spread-{repo}"),
            source: "github".into(),
            job_name: Some("CI / install".into()),
            repository: Some(repo.into()),
            commit_sha: Some(HEAD_SHA.into()),
            ..NewEvent::default()
        };
        let run = db.ingest(&event, log.as_bytes(), 8).await;
        origins.push(finished_result(&db, run).await);
    }
    assert_eq!(
        origins[2]["category"], "DEPENDENCY_ERROR",
        "{:#}",
        origins[2]
    );
    assert_ne!(origins[1]["origin"], "infrastructure", "{:#}", origins[1]);
    assert_eq!(origins[2]["origin"], "infrastructure", "{:#}", origins[2]);
    let why = origins[2]["origin_evidence"][0].as_str().unwrap();
    assert!(
        why.starts_with(
            "the same failure (same fingerprint) failed in 2 other repositories within 60 minutes"
        ),
        "{why}"
    );
}

//! Re-running what is transient (issue 32 item 5), against a fake GitHub
//! that keeps workflow runs' attempts as GitHub does ("re-run failed jobs"
//! makes attempt n + 1 of the same run id) and a fake Jenkins that queues
//! builds with parameters.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use faultline_shared::storage::{events::NewEvent, reruns::Rerun};
use faultline_tests::{TestDb, fakes::FakeChecks, oom_log, wait_until};
use serde_json::{Value, json};
use uuid::Uuid;
use wiremock::{
    Mock, MockServer, Request, Respond, ResponseTemplate,
    matchers::{header, method, path, path_regex},
};

const REPO: &str = "octo/app";
const SHA: &str = "1f3c5e7a9b2d4f6081a3c5e7092b4d6f8a1c3e50";
const TOKEN: &str = "ghs_rerun_token";

/// GitHub's workflow runs: each "re-run failed jobs" request adds an attempt.
#[derive(Clone, Default)]
struct FakeRuns(Arc<Mutex<RunsState>>);

#[derive(Default)]
struct RunsState {
    /// Per run id: re-run requests received.
    reruns: BTreeMap<u64, usize>,
    /// Per run id: re-runs started (requests answered 201).
    started: BTreeMap<u64, usize>,
    /// Answers to give instead of 201 (status, message), per run id.
    refuse: BTreeMap<u64, (u16, String)>,
    /// The first re-run request of a run is answered this late.
    slow_first: Option<Duration>,
    /// Runs whose other jobs are still running.
    in_progress: std::collections::BTreeSet<u64>,
}

impl FakeRuns {
    fn reruns(&self, run: u64) -> usize {
        self.0
            .lock()
            .unwrap()
            .reruns
            .get(&run)
            .copied()
            .unwrap_or(0)
    }
}

impl Respond for FakeRuns {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut st = self.0.lock().unwrap();
        let parts: Vec<&str> = request.url.path().trim_matches('/').split('/').collect();
        let Some(run) = parts.get(5).and_then(|r| r.parse::<u64>().ok()) else {
            return ResponseTemplate::new(404).set_body_json(json!({"message": "Not Found"}));
        };
        match (request.method.as_str(), parts.get(6).copied()) {
            ("POST", Some("rerun-failed-jobs")) => {
                let n = {
                    let n = st.reruns.entry(run).or_default();
                    *n += 1;
                    *n
                };
                if let Some((status, message)) = st.refuse.get(&run) {
                    return ResponseTemplate::new(*status).set_body_json(json!({
                        "message": message,
                        "documentation_url": "https://docs.github.com/rest/actions/workflow-runs#re-run-failed-jobs-from-a-workflow-run",
                    }));
                }
                *st.started.entry(run).or_default() += 1;
                let reply = ResponseTemplate::new(201).set_body_json(json!({}));
                match st.slow_first.take() {
                    Some(delay) if n == 1 => reply.set_delay(delay),
                    _ => reply,
                }
            }
            ("GET", None) => ResponseTemplate::new(200).set_body_json(json!({
                "id": run, "name": "CI",
                "status": if st.in_progress.contains(&run) { "in_progress" } else { "completed" },
                "conclusion": if st.in_progress.contains(&run) { Value::Null } else { json!("failure") },
                "run_attempt": 1 + st.started.get(&run).copied().unwrap_or(0),
                "head_sha": SHA,
            })),
            _ => ResponseTemplate::new(404).set_body_json(json!({"message": "Not Found"})),
        }
    }
}

/// A failed GitHub Actions job of workflow run `run_id` (attempt `attempt`).
fn github_event(job: &str, run_id: u64, attempt: u64) -> NewEvent {
    NewEvent {
        dedup_key: format!("github:job:{job}:{run_id}:{attempt}"),
        source: "github".into(),
        job_name: Some(job.into()),
        repository: Some(REPO.into()),
        commit_sha: Some(SHA.into()),
        payload: json!({"github": {"repository": REPO, "head_sha": SHA, "head_branch": "main",
                                   "run_id": run_id, "run_attempt": attempt}}),
        ..NewEvent::default()
    }
}

fn assertion_log() -> String {
    "##[group]Run pytest\npytest -q\n##[endgroup]\n\
     E       assert 3 == 4\n\ntests/test_total.py:12: AssertionError\n\
     FAILED tests/test_total.py::test_total - assert 3 == 4\n\
     ========================= 1 failed, 20 passed in 0.31s =========================\n\
     ##[error]Process completed with exit code 1.\n"
        .into()
}

async fn reruns(db: &TestDb) -> Vec<Rerun> {
    let runs: Vec<Uuid> = sqlx::query_scalar("SELECT id FROM analysis_runs")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    faultline_shared::storage::reruns::of_runs(&db.pool, &runs)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_transient_failure_is_re_run_once_across_a_kill_and_never_again() {
    let db = TestDb::new().await;
    let runs = FakeRuns::default();
    runs.0.lock().unwrap().slow_first = Some(Duration::from_secs(30));
    runs.0
        .lock()
        .unwrap()
        .refuse
        .insert(778, (403, "This workflow is already running".into()));
    let fake = MockServer::start().await;
    Mock::given(path_regex("/check-runs"))
        .respond_with(FakeChecks::default())
        .mount(&fake)
        .await;
    Mock::given(path_regex(r"^/repos/octo/app/actions/runs/\d+"))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(runs.clone())
        .mount(&fake)
        .await;
    let api = fake.uri();
    let env = [
        ("GITHUB_TOKEN", TOKEN),
        ("GITHUB_API_URL", api.as_str()),
        ("NOTIFY_RERUN_REPOSITORIES", REPO),
        ("NOTIFY_TIMEOUT", "10s"),
        ("NOTIFY_RETRY_BASE", "100ms"),
        ("NOTIFY_RETRY_MAX", "1s"),
        ("NOTIFY_POLL_INTERVAL", "100ms"),
    ];

    // An out-of-memory kill: infrastructure. The re-run request reaches
    // GitHub, and the worker dies before the answer comes.
    let mut first = db.worker("w1", &env);
    let oom = db
        .ingest(&github_event("CI / build", 777, 1), oom_log().as_bytes(), 8)
        .await;
    wait_until(Duration::from_secs(60), || async {
        (runs.reruns(777) == 1).then_some(())
    })
    .await;
    first.kill9();
    let journal = reruns(&db).await;
    assert_eq!(journal.len(), 1, "{journal:?}");
    assert_eq!(
        journal[0].state, "requested",
        "journaled before it was sent"
    );
    assert_eq!(journal[0].origin, "infrastructure");
    // The dead deliverer's lock lapses (as it would, later).
    sqlx::query("UPDATE notification_outbox SET locked_until = now() WHERE run_id = $1")
        .bind(oom)
        .execute(&db.pool)
        .await
        .unwrap();

    // Another worker finds the request journaled and unanswered, sees the
    // new attempt on GitHub, and does not ask again.
    let _second = db.worker("w2", &env);
    db.wait_delivered(oom).await;
    let journal = reruns(&db).await;
    assert_eq!(journal[0].state, "done", "{journal:?}");
    assert!(
        journal[0]
            .detail
            .as_deref()
            .is_some_and(|d| d.contains("found attempt 2")),
        "{journal:?}"
    );
    assert_eq!(journal[0].tries, 1);
    assert_eq!(runs.reruns(777), 1, "re-run once across the kill");

    // The re-run fails the same way: attempt 2 of the same run is not
    // re-run again.
    let again = db
        .ingest(&github_event("CI / build", 777, 2), oom_log().as_bytes(), 8)
        .await;
    db.wait_delivered(again).await;
    assert_eq!(runs.reruns(777), 1, "never twice for one failure");

    // GitHub refuses: recorded, never retried.
    let refused = db
        .ingest(&github_event("CI / e2e", 778, 1), oom_log().as_bytes(), 8)
        .await;
    db.wait_delivered(refused).await;
    let journal = reruns(&db).await;
    let r = journal.iter().find(|r| r.run_id == refused).unwrap();
    assert_eq!(
        (r.state.as_str(), r.http_status),
        ("refused", Some(403)),
        "{r:?}"
    );
    assert!(r.detail.as_deref().unwrap().contains("already running"));
    assert_eq!(runs.reruns(778), 1);
    // `status` and `trace` say what was asked and what the CI system said.
    let out = |args: &[&str]| String::from_utf8(db.cli(args, &[]).stdout).unwrap();
    let status = out(&["status", &refused.to_string()]);
    assert!(
        status.contains("re-run:     refused (origin infrastructure")
            && status.contains("HTTP 403")
            && status.contains("already running"),
        "{status}"
    );
    let status = out(&["status", &oom.to_string()]);
    assert!(
        status.contains("re-run:     done (origin infrastructure")
            && status.contains("found attempt 2"),
        "{status}"
    );
    let trace = out(&["trace", &oom.to_string()]);
    assert!(
        trace.contains("re-run asked of the CI system: done"),
        "{trace}"
    );
    let json: Value =
        serde_json::from_str(&out(&["status", &refused.to_string(), "--json"])).unwrap();
    assert_eq!(json["reruns"][0]["state"], "refused", "{json:#}");
    assert_eq!(json["reruns"][0]["http_status"], 403, "{json:#}");

    // GitHub re-runs a run's failed jobs once the run has finished: while
    // its other jobs run, the delivery waits (retried), then asks.
    runs.0.lock().unwrap().in_progress.insert(780);
    let waiting = db
        .ingest(&github_event("CI / lint", 780, 1), oom_log().as_bytes(), 8)
        .await;
    wait_until(Duration::from_secs(60), || async {
        let attempts: Option<i32> =
            sqlx::query_scalar("SELECT attempts FROM notification_outbox WHERE run_id = $1")
                .bind(waiting)
                .fetch_optional(&db.pool)
                .await
                .unwrap();
        attempts.filter(|a| *a >= 2).map(|_| ())
    })
    .await;
    assert_eq!(runs.reruns(780), 0, "not while the run is in progress");
    runs.0.lock().unwrap().in_progress.remove(&780);
    db.wait_delivered(waiting).await;
    assert_eq!(runs.reruns(780), 1);

    // A failed assertion is nobody's machine: nothing is re-run.
    let test = db
        .ingest(
            &github_event("CI / test", 779, 1),
            assertion_log().as_bytes(),
            8,
        )
        .await;
    db.wait_delivered(test).await;
    assert_eq!(runs.reruns(779), 0);
    assert_eq!(reruns(&db).await.len(), 3);
}

/// One trigger request Jenkins received: path, authorization, body.
type Trigger = (String, Option<String>, String);

/// Jenkins queues builds with parameters: what it received.
#[derive(Clone, Default)]
struct FakeQueue(Arc<Mutex<Vec<Trigger>>>);

impl Respond for FakeQueue {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let auth = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        self.0.lock().unwrap().push((
            request.url.path().to_string(),
            auth,
            String::from_utf8_lossy(&request.body).into_owned(),
        ));
        ResponseTemplate::new(201).insert_header("location", "http://jenkins/queue/item/12/")
    }
}

#[tokio::test]
async fn a_jenkins_infrastructure_failure_is_rebuilt_with_its_parameters() {
    let db = TestDb::new().await;
    let queue = FakeQueue::default();
    let jenkins = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/job/team/job/app/buildWithParameters"))
        .respond_with(queue.clone())
        .mount(&jenkins)
        .await;
    let url = format!("{}/", jenkins.uri());
    let env = [
        ("JENKINS_URL", url.as_str()),
        ("JENKINS_USER", "faultline"),
        ("JENKINS_API_TOKEN", "jenkins-token-for-tests"),
        ("NOTIFY_RERUN_REPOSITORIES", REPO),
        ("NOTIFY_RETRY_BASE", "100ms"),
        ("NOTIFY_POLL_INTERVAL", "100ms"),
    ];
    let _worker = db.worker("w1", &env);
    let event = NewEvent {
        dedup_key: "jenkins:job/team/job/app/#41".into(),
        source: "jenkins".into(),
        job_name: Some("team/app".into()),
        build_number: Some("41".into()),
        repository: Some("https://github.com/octo/app.git".into()),
        commit_sha: Some(SHA.into()),
        payload: json!({"jenkins": {"job_url": "job/team/job/app/", "phase": "COMPLETED",
                                    "status": "FAILURE",
                                    "parameters": {"TARGET": "linux", "NIGHTLY": "false"}}}),
        ..NewEvent::default()
    };
    let run = db.ingest(&event, oom_log().as_bytes(), 8).await;
    db.wait_delivered(run).await;
    let got = queue.0.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "{got:?}");
    let (_, auth, body) = &got[0];
    assert!(auth.as_deref().is_some_and(|a| a.starts_with("Basic ")));
    let form: Vec<(String, String)> = reqwest::Url::parse(&format!("http://form/?{body}"))
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    assert_eq!(
        form,
        [
            ("NIGHTLY".to_string(), "false".to_string()),
            ("TARGET".to_string(), "linux".to_string())
        ]
    );
    let journal = reruns(&db).await;
    assert_eq!(journal.len(), 1);
    assert_eq!(journal[0].key, format!("jenkins:team/app:commit:{SHA}"));
    assert_eq!(
        (journal[0].state.as_str(), journal[0].http_status),
        ("done", Some(201))
    );
}

/// A re-run GitHub never answers (502 on every attempt): once the notifier
/// gives up on the delivery, the journal says `unanswered`, with the last
/// error, instead of `requested` for ever.
#[tokio::test]
async fn a_re_run_that_is_never_answered_is_unanswered_once_the_delivery_gives_up() {
    let db = TestDb::new().await;
    let runs = FakeRuns::default();
    runs.0
        .lock()
        .unwrap()
        .refuse
        .insert(781, (502, "Server Error".into()));
    let fake = MockServer::start().await;
    Mock::given(path_regex("/check-runs"))
        .respond_with(FakeChecks::default())
        .mount(&fake)
        .await;
    Mock::given(path_regex(r"^/repos/octo/app/actions/runs/\d+"))
        .respond_with(runs.clone())
        .mount(&fake)
        .await;
    let api = fake.uri();
    let env = [
        ("GITHUB_TOKEN", TOKEN),
        ("GITHUB_API_URL", api.as_str()),
        ("NOTIFY_RERUN_REPOSITORIES", REPO),
        ("NOTIFY_MAX_ATTEMPTS", "2"),
        ("NOTIFY_RETRY_BASE", "100ms"),
        ("NOTIFY_RETRY_MAX", "1s"),
        ("NOTIFY_POLL_INTERVAL", "100ms"),
    ];
    let _worker = db.worker("w1", &env);
    let run = db
        .ingest(&github_event("CI / build", 781, 1), oom_log().as_bytes(), 8)
        .await;
    let journal = wait_until(Duration::from_secs(60), || async {
        let journal = reruns(&db).await;
        let answered = journal.first().is_some_and(|r| r.state != "requested");
        answered.then_some(journal)
    })
    .await;
    let status: String =
        sqlx::query_scalar("SELECT status::text FROM notification_outbox WHERE run_id = $1")
            .bind(run)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(status, "dead");
    assert_eq!(runs.reruns(781), 2, "asked once per attempt, then given up");
    let r = &journal[0];
    assert_eq!(r.state, "unanswered", "{r:?}");
    let detail = r.detail.as_deref().unwrap_or_default();
    assert!(
        detail.starts_with("no answer after 2 attempts") && detail.contains("502"),
        "{r:?}"
    );
}

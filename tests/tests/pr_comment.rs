//! One pull-request comment per pull request, edited in place (issue 32
//! item 2), against a fake GitHub that keeps issue comments as GitHub does.

use std::time::Duration;

use faultline_shared::storage::{events::NewEvent, pr_comments};
use faultline_tests::{
    TestDb,
    fakes::{FakeChecks, FakeIssues},
    oom_log, wait_until,
};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use uuid::Uuid;
use wiremock::{
    Mock, MockServer,
    matchers::{header, path_regex},
};

const REPO: &str = "octo/app";
const HEAD: &str = "1f3c5e7a9b2d4f6081a3c5e7092b4d6f8a1c3e50";
const LATER: &str = "2a4c6e8b0d1f3a5c7e9b1d3f5a7c9e1b3d5f7a90";
const TOKEN: &str = "ghs_comment_token";
const HOOK_SECRET: &str = "gh-hook-secret-for-tests";

/// A fake GitHub (issue comments, check runs) and a worker writing PR
/// comments for [`REPO`] to it, with fast retries.
async fn comment_worker(db: &TestDb, issues: &FakeIssues) -> (MockServer, faultline_tests::Worker) {
    comment_worker_with(db, issues, &[]).await
}

/// [`comment_worker`] with more variables.
async fn comment_worker_with(
    db: &TestDb,
    issues: &FakeIssues,
    more: &[(&str, &str)],
) -> (MockServer, faultline_tests::Worker) {
    let fake = MockServer::start().await;
    Mock::given(path_regex("/check-runs"))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(FakeChecks::default())
        .mount(&fake)
        .await;
    Mock::given(path_regex(
        "^/repos/octo/app/(issues|commits/[0-9a-f]+/pulls)",
    ))
    .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
    .respond_with(issues.clone())
    .mount(&fake)
    .await;
    let api = fake.uri();
    let env = [
        ("GITHUB_TOKEN", TOKEN),
        ("GITHUB_API_URL", api.as_str()),
        ("NOTIFY_GITHUB_PR_COMMENTS", REPO),
        ("NOTIFY_CONSOLE_URL", "https://faultline.example.com"),
        ("NOTIFY_RETRY_BASE", "100ms"),
        ("NOTIFY_RETRY_MAX", "1s"),
        ("NOTIFY_POLL_INTERVAL", "100ms"),
    ];
    let env: Vec<(&str, &str)> = env.iter().chain(more).copied().collect();
    let worker = db.worker("w1", &env);
    (fake, worker)
}

/// A failed GitHub Actions job `job` of commit `sha`, stored as the webhook
/// handler stores it (`pulls`: the pull requests the delivery named); its run.
async fn failed_job(db: &TestDb, job: &str, sha: &str, pulls: &[u64], log: &str) -> Uuid {
    let event = NewEvent {
        dedup_key: format!("github:delivery:{job}:{sha}"),
        source: "github".into(),
        job_name: Some(job.into()),
        repository: Some(REPO.into()),
        commit_sha: Some(sha.into()),
        payload: json!({"github": {"repository": REPO, "head_sha": sha,
                                   "head_branch": "feature", "pull_requests": pulls}}),
        ..NewEvent::default()
    };
    db.ingest(&event, log.as_bytes(), 8).await
}

fn assertion_log(test: &str) -> String {
    format!(
        "##[group]Run pytest\npytest -q\n##[endgroup]\n\
         =================================== FAILURES ===================================\n\
         ________________________________ {test} ________________________________\n\
         \n    def {test}():\n>       assert total([1, 2]) == 4\nE       assert 3 == 4\n\
         \ntests/test_total.py:12: AssertionError\n\
         =========================== short test summary info ============================\n\
         FAILED tests/test_total.py::{test} - assert 3 == 4\n\
         ========================= 1 failed, 20 passed in 0.31s =========================\n\
         ##[error]Process completed with exit code 1.\n"
    )
}

/// The comment row once it is clean (written) with `writes` ≥ `min_writes`.
async fn wait_written(db: &TestDb, pr: i64, min_writes: i32) -> pr_comments::PrComment {
    wait_until(Duration::from_secs(30), || async {
        pr_comments::get(&db.pool, REPO, pr)
            .await
            .unwrap()
            .filter(|c| !c.dirty && c.writes >= min_writes)
    })
    .await
}

/// Faultline's comments on pull request `pr`.
fn ours(issues: &FakeIssues, pr: u64) -> Vec<faultline_tests::fakes::IssueComment> {
    issues
        .comments()
        .into_iter()
        .filter(|c| c.issue == pr && c.body.starts_with("<!-- faultline:pr-comment -->"))
        .collect()
}

/// The JSON of a webhook's answer, which must be 202 Accepted.
async fn accepted(resp: reqwest::Response) -> Value {
    assert_eq!(resp.status(), 202);
    resp.json().await.unwrap()
}

/// A signed `workflow_run` delivery that passed on `sha` of branch `feature`.
async fn green_run(base: &str, sha: &str, pr: u64) -> Value {
    let body = json!({
        "action": "completed",
        "workflow_run": {
            "id": 30433700, "name": "CI", "workflow_id": 161335, "run_number": 12, "run_attempt": 1,
            "head_sha": sha, "head_branch": "feature", "conclusion": "success", "status": "completed",
            "logs_url": "https://api.github.com/repos/octo/app/actions/runs/30433700/logs",
            "html_url": "https://github.com/octo/app/actions/runs/30433700",
            "pull_requests": [{"id": 1, "number": pr, "url": format!("https://api.github.com/repos/octo/app/pulls/{pr}"),
                               "head": {"ref": "feature", "sha": sha}, "base": {"ref": "main", "sha": HEAD}}],
        },
        "repository": {"full_name": REPO, "url": "https://api.github.com/repos/octo/app"},
    });
    let bytes = serde_json::to_vec(&body).unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(HOOK_SECRET.as_bytes()).unwrap();
    mac.update(&bytes);
    let signature = format!(
        "sha256={}",
        faultline_shared::hex(&mac.finalize().into_bytes())
    );
    let resp = reqwest::Client::new()
        .post(format!("{base}/webhooks/github"))
        .header("content-type", "application/json")
        .header("x-github-event", "workflow_run")
        .header("x-github-delivery", "0b0b0b0b-cc78-11e3-81ab-4c9367dc0958")
        .header("x-hub-signature-256", signature)
        .body(bytes)
        .send()
        .await
        .unwrap();
    accepted(resp).await
}

#[tokio::test]
async fn three_failed_jobs_share_one_comment_updated_in_place_until_a_later_run_passes() {
    let db = TestDb::new().await;
    let issues = FakeIssues::default();
    // Jobs of a workflow_job delivery name no pull request: GitHub's
    // commit → pull requests look-up does.
    issues.open_pull(HEAD, 7);
    // The last matching line names the owners.
    issues.file(
        ".github/CODEOWNERS",
        "# owners\n*.py @octo/python\ntests/ @octo/qa\n",
    );
    let (_fake, _worker) = comment_worker(&db, &issues).await;

    let build = failed_job(&db, "CI / build", HEAD, &[7], &oom_log()).await;
    db.wait_delivered(build).await;
    let first = wait_written(&db, 7, 1).await;
    let tests_a = failed_job(
        &db,
        "CI / test (3.11)",
        HEAD,
        &[],
        &assertion_log("test_total"),
    )
    .await;
    let tests_b = failed_job(
        &db,
        "CI / test (3.12)",
        HEAD,
        &[],
        &assertion_log("test_total"),
    )
    .await;
    for run in [tests_a, tests_b] {
        db.wait_delivered(run).await;
    }
    wait_until(Duration::from_secs(30), || async {
        let c = ours(&issues, 7);
        let body = c.first().map(|c| c.body.clone()).unwrap_or_default();
        (body.contains("3 failed jobs")).then_some(())
    })
    .await;
    let comments = ours(&issues, 7);
    assert_eq!(comments.len(), 1, "one comment per pull request");
    assert_eq!(
        issues.write_count("POST"),
        1,
        "created once, then edited: {:?}",
        issues.writes()
    );
    assert!(issues.write_count("PATCH") >= 1);
    let body = &comments[0].body;
    for job in ["CI / build", "CI / test (3.11)", "CI / test (3.12)"] {
        assert!(
            body.contains(&format!("`{job}`")),
            "{job} missing from:\n{body}"
        );
    }
    // The two test jobs failed the same way: one section for both.
    assert!(body.contains("2 distinct failures"), "{body}");
    assert!(body.contains("<details><summary>"), "{body}");
    assert!(
        body.contains("INFRA_ERROR") && body.contains("TEST_FAILURE"),
        "{body}"
    );
    assert!(
        body.contains("`test_total`"),
        "the failing test is named:\n{body}"
    );
    assert!(
        body.contains("https://faultline.example.com/ui/analyses/"),
        "{body}"
    );
    assert_eq!(first.comment_id, Some(comments[0].id as i64));

    // A later commit of the pull request passes: the comment says so.
    let serve = db.serve(&[("GITHUB_WEBHOOK_SECRET", HOOK_SECRET)]).await;
    let answer = green_run(&serve.base, LATER, 7).await;
    assert_eq!(answer["recorded"], "success", "{answer}");
    wait_until(Duration::from_secs(30), || async {
        ours(&issues, 7)
            .first()
            .filter(|c| c.body.contains("A later run passed"))
            .map(|_| ())
    })
    .await;
    let comments = ours(&issues, 7);
    assert_eq!(comments.len(), 1);
    assert!(comments[0].body.contains("2a4c6e8"), "{}", comments[0].body);
    if std::env::var_os("FAULTLINE_SHOW_COMMENT").is_some() {
        eprintln!("{}", comments[0].body);
    }
    assert_eq!(issues.write_count("POST"), 1, "still the same comment");
}

#[tokio::test]
async fn a_lost_answer_a_human_edit_a_reaction_and_a_deleted_comment_never_make_a_second_comment() {
    let db = TestDb::new().await;
    let issues = FakeIssues::default();
    issues.comment_as_someone(7, "Looks good to me");
    // A 10 MB CODEOWNERS: GitHub ignores it, so does the comment.
    issues.file("CODEOWNERS", &"* @octo/everyone\n".repeat(10 << 16));
    // The first POST creates the comment, but its answer is lost: the
    // retry finds it by its marker instead of posting another.
    issues.fail_write(0, true);
    let (_fake, _worker) = comment_worker(&db, &issues).await;

    let a = failed_job(&db, "CI / build", HEAD, &[7], &oom_log()).await;
    db.wait_delivered(a).await;
    let row = wait_written(&db, 7, 1).await;
    assert_eq!(ours(&issues, 7).len(), 1);
    assert_eq!(
        issues.comments().len(),
        2,
        "the person's comment is left alone"
    );
    assert_eq!(issues.write_count("POST"), 1, "{:?}", issues.writes());
    let id = ours(&issues, 7)[0].id;
    assert_eq!(row.comment_id, Some(id as i64));

    // Someone edits ours and reacts 👎: the next job rewrites it, counts
    // the edit, and records the reaction.
    issues.edit(id, "I replaced this text");
    issues.react(id, false);
    let b = failed_job(&db, "CI / lint", HEAD, &[7], &assertion_log("test_lint")).await;
    db.wait_delivered(b).await;
    let row = wait_written(&db, 7, 2).await;
    assert_eq!((row.human_edits, row.thumbs_down, row.thumbs_up), (1, 1, 0));
    // The 👎 is feedback on each analysis the comment shows.
    for run in [a, b] {
        assert_eq!(votes(&db, run).await, [("a-developer".to_string(), false)]);
    }
    let comments = ours(&issues, 7);
    assert_eq!(comments.len(), 1);
    assert!(
        comments[0].body.contains("`CI / lint`"),
        "{}",
        comments[0].body
    );

    // Someone deletes it: the next job posts it again, once.
    issues.delete(id);
    let c = failed_job(&db, "CI / docs", HEAD, &[7], &oom_log()).await;
    db.wait_delivered(c).await;
    let row = wait_written(&db, 7, 3).await;
    assert_eq!(row.recreated, 1);
    let comments = ours(&issues, 7);
    assert_eq!(comments.len(), 1);
    assert_ne!(comments[0].id, id);
    assert_eq!(issues.write_count("POST"), 2);
    assert!(
        comments[0].body.contains("3 failed jobs"),
        "{}",
        comments[0].body
    );

    // A commit with no open pull request: delivered, no comment anywhere.
    let lone = failed_job(&db, "CI / build", LATER, &[], &oom_log()).await;
    db.wait_delivered(lone).await;
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM pr_comments")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(n, 1);
}

const JENKINS_TOKEN: &str = "jenkins-token-for-tests";

/// A Jenkins Notification plugin delivery of build `number` of the
/// multibranch job `PR-7` (`CHANGE_ID` 7) of the repository `scm` at
/// `sha`, with `status` and an inline `log`; the server's answer.
async fn jenkins_build(
    base: &str,
    scm: &str,
    status: &str,
    number: u64,
    sha: &str,
    log: &str,
) -> Value {
    let body = json!({
        "name": "PR-7", "url": "job/app/job/PR-7/",
        "build": {
            "full_url": format!("https://ci.example.com/job/app/job/PR-7/{number}/"),
            "number": number, "phase": "COMPLETED", "status": status,
            "scm": {"url": scm, "branch": "PR-7", "commit": sha},
            "parameters": {"CHANGE_ID": "7", "CHANGE_TARGET": "main"},
            "log": log,
        },
    });
    let resp = reqwest::Client::new()
        .post(format!("{base}/webhooks/jenkins"))
        .header("x-faultline-token", JENKINS_TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    accepted(resp).await
}

/// A multibranch pipeline's pull-request build on Jenkins, of a GitHub
/// repository, is one more job of the pull request's comment (the
/// pull request from `CHANGE_ID`, the repository from the SCM's clone
/// URL on the configured GitHub); a build of the same path on another
/// forge is not; a later Jenkins build that passes says so in it.
#[tokio::test]
async fn a_jenkins_build_of_the_pull_request_joins_its_comment_and_its_later_pass_says_so() {
    let db = TestDb::new().await;
    let issues = FakeIssues::default();
    let (fake, _worker) = comment_worker(&db, &issues).await;
    let api = fake.uri();
    let serve = db
        .serve(&[
            ("JENKINS_WEBHOOK_TOKEN", JENKINS_TOKEN),
            ("GITHUB_API_URL", api.as_str()),
        ])
        .await;
    let actions = failed_job(&db, "CI / build", HEAD, &[7], &oom_log()).await;
    db.wait_delivered(actions).await;
    wait_written(&db, 7, 1).await;

    let scm = format!("{api}/octo/app.git");
    let log = "+ make test\nFAIL: test_total (tests.test_total.TotalTest)\n\
               AssertionError: 3 != 4\nRan 20 tests in 0.3s\nFAILED (failures=1)\n\
               script returned exit code 1\n";
    let answer = jenkins_build(&serve.base, &scm, "FAILURE", 3, HEAD, log).await;
    let run: Uuid = answer["run_id"].as_str().unwrap().parse().unwrap();
    db.wait_delivered(run).await;
    wait_until(Duration::from_secs(30), || async {
        let body = ours(&issues, 7).first().map(|c| c.body.clone())?;
        body.contains("2 failed jobs").then_some(())
    })
    .await;
    let comments = ours(&issues, 7);
    assert_eq!(comments.len(), 1, "one comment per pull request");
    assert!(
        comments[0].body.contains("`PR-7`") && comments[0].body.contains("`CI / build`"),
        "{}",
        comments[0].body
    );
    assert_eq!(issues.write_count("POST"), 1, "{:?}", issues.writes());

    // The same path on another forge is another repository.
    let before = wait_written(&db, 7, 2).await;
    let elsewhere = jenkins_build(
        &serve.base,
        "https://git.example.com/octo/app.git",
        "FAILURE",
        4,
        HEAD,
        log,
    )
    .await;
    let run: Uuid = elsewhere["run_id"].as_str().unwrap().parse().unwrap();
    db.wait_delivered(run).await;
    let after = pr_comments::get(&db.pool, REPO, 7).await.unwrap().unwrap();
    assert_eq!(after.version, before.version, "not marked for writing");

    let passed = jenkins_build(&serve.base, &scm, "SUCCESS", 5, LATER, "").await;
    assert_eq!(passed["recorded"], "success", "{passed}");
    wait_until(Duration::from_secs(30), || async {
        ours(&issues, 7)
            .first()
            .filter(|c| c.body.contains("A later run passed") && c.body.contains("2a4c6e8"))
            .map(|_| ())
    })
    .await;
    assert_eq!(ours(&issues, 7).len(), 1);
    assert_eq!(issues.write_count("POST"), 1, "still the same comment");
}

/// A run's reaction votes: (login, helpful), by login.
async fn votes(db: &TestDb, run: Uuid) -> Vec<(String, bool)> {
    sqlx::query_as(
        "SELECT actor, helpful FROM analysis_feedback
         WHERE run_id = $1 AND source = 'reaction' ORDER BY actor",
    )
    .bind(run)
    .fetch_all(&db.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn reactions_given_after_the_last_write_are_read_by_the_sweep_without_editing_the_comment() {
    let db = TestDb::new().await;
    let issues = FakeIssues::default();
    let (_fake, worker) =
        comment_worker_with(&db, &issues, &[("NOTIFY_REACTION_SWEEP", "300ms")]).await;
    let a = failed_job(&db, "CI / build", HEAD, &[7], &oom_log()).await;
    db.wait_delivered(a).await;
    wait_written(&db, 7, 1).await;
    let id = ours(&issues, 7)[0].id;
    let reactions = format!("/repos/octo/app/issues/comments/{id}/reactions");

    // No job finishes after these: only the sweep can see them.
    issues.react_as(id, "dev-one", false);
    issues.react_as(id, "dev-two", true);
    let want = vec![
        ("dev-one".to_string(), false),
        ("dev-two".to_string(), true),
    ];
    wait_until(Duration::from_secs(30), || async {
        (votes(&db, a).await == want).then_some(())
    })
    .await;
    let row = pr_comments::get(&db.pool, REPO, 7).await.unwrap().unwrap();
    assert_eq!((row.thumbs_up, row.thumbs_down), (1, 1));
    assert!(issues.reads().contains(&reactions), "{:?}", issues.reads());
    assert_eq!(
        issues.write_count("PATCH"),
        0,
        "read only: {:?}",
        issues.writes()
    );
    assert_eq!(issues.write_count("POST"), 1);

    // /metrics: the votes by category and origin, and the not-helpful rate.
    let metrics = reqwest::get(format!("{}/metrics", worker.http_base().await))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let sample = |name: &str, labels: &[&str]| {
        metrics
            .lines()
            .find(|l| l.starts_with(name) && labels.iter().all(|x| l.contains(x)))
            .and_then(|l| l.rsplit(' ').next())
            .map(str::to_string)
    };
    let infra = "category=\"INFRA_ERROR\"";
    let votes_of = |verdict: &str| {
        sample(
            "faultline_feedback_votes{",
            &[infra, &format!("verdict=\"{verdict}\"")],
        )
    };
    assert_eq!(votes_of("not_helpful").as_deref(), Some("1"), "{metrics}");
    assert_eq!(votes_of("helpful").as_deref(), Some("1"), "{metrics}");
    assert_eq!(
        sample("faultline_feedback_not_helpful_ratio{", &[infra]).as_deref(),
        Some("0.5"),
        "{metrics}"
    );

    // A reaction taken back is no longer a vote.
    issues.unreact(id, "dev-two");
    wait_until(Duration::from_secs(30), || async {
        (votes(&db, a).await == want[..1]).then_some(())
    })
    .await;

    // A comment someone deleted is not posted again by the sweep; its
    // votes stay as last read.
    issues.delete(id);
    let before = issues.reads().len();
    wait_until(Duration::from_secs(30), || async {
        (issues.reads().len() > before + 1).then_some(())
    })
    .await;
    assert_eq!(issues.write_count("POST"), 1, "{:?}", issues.writes());
    assert_eq!(votes(&db, a).await, want[..1]);
}

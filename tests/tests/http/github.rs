//! `POST /webhooks/github`.

use faultline_tests::TestDb;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::*;

#[tokio::test(flavor = "multi_thread")]
async fn signed_github_failures_start_one_run_per_delivery() {
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let run = bytes(&fixture("github-workflow-run-failure.json"));
    let delivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958";

    let (status, first) = server
        .github("workflow_run", delivery, &run, Some(GITHUB_SECRET))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{first}");
    assert_eq!(first["created"], true);
    let (run_id, event_id) = (id(&first, "run_id"), id(&first, "event_id"));

    // A redelivery (same X-GitHub-Delivery) answers the same run and stores nothing new.
    let (status, again) = server
        .github("workflow_run", delivery, &run, Some(GITHUB_SECRET))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(
        (id(&again, "run_id"), again["created"].clone()),
        (run_id, json!(false))
    );

    let (dedup_key, source, repo, sha, log_bytes, payload): (String, String, String, String, i64, Value) =
        sqlx::query_as(
            "SELECT dedup_key, source, repository, commit_sha, log_bytes, payload FROM failure_events WHERE id = $1",
        )
        .bind(event_id)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(dedup_key, format!("github:delivery:{delivery}"));
    assert_eq!(
        (source.as_str(), repo.as_str()),
        ("github", "octo-org/ledger-api")
    );
    assert_eq!(sha, "3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39");
    assert_eq!(
        log_bytes, 0,
        "logs are fetched by the worker, not in the request"
    );
    let gh = &payload["github"];
    assert_eq!(
        gh["logs_url"],
        "https://api.github.com/repos/octo-org/ledger-api/actions/runs/30433642/logs"
    );
    assert_eq!(
        (gh["run_id"].clone(), gh["run_attempt"].clone()),
        (json!(30433642), json!(1))
    );
    assert_eq!(gh["workflow_name"], "CI");
    let status: String = sqlx::query_scalar("SELECT status FROM analysis_runs WHERE id = $1")
        .bind(run_id)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(status, "queued");
    assert_eq!(
        count(&db, "apalis.jobs WHERE job_type = 'faultline-steps'").await,
        1
    );

    // A timed-out job is analysed too; the payload names the job's own log and failed step.
    let job = bytes(&fixture("github-workflow-job-timed-out.json"));
    let (status, created) = server
        .github(
            "workflow_job",
            "9b1c2f10-cc79-11e3-8c2e-1f6a1b2c3d4e",
            &job,
            Some(GITHUB_SECRET),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{created}");
    let payload: Value = sqlx::query_scalar("SELECT payload FROM failure_events WHERE id = $1")
        .bind(id(&created, "event_id"))
        .fetch_one(&db.pool)
        .await
        .unwrap();
    let gh = &payload["github"];
    assert_eq!(
        gh["logs_url"],
        "https://api.github.com/repos/octo-org/ledger-api/actions/jobs/399444496/logs"
    );
    assert_eq!(gh["failed_steps"], json!(["Run integration tests"]));
    assert_eq!(gh["job_name"], "integration-tests (postgres 15)");
    assert_eq!(count(&db, "analysis_runs").await, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn github_deliveries_without_a_valid_signature_are_refused_and_store_nothing() {
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let body = bytes(&fixture("github-workflow-run-failure.json"));
    let mut tampered = body.clone();
    tampered.extend_from_slice(b" ");
    let signature = sign(&body, GITHUB_SECRET);
    let cases: Vec<(&str, &[u8], Option<String>)> = vec![
        ("missing", &body, None),
        ("wrong key", &body, Some(sign(&body, "not-the-secret"))),
        ("tampered body", &tampered, Some(signature.clone())),
        (
            "sha1 scheme",
            &body,
            Some(signature.replace("sha256=", "sha1=")),
        ),
        ("not hex", &body, Some("sha256=zz".into())),
    ];
    for (case, body, signature) in cases {
        let mut req = server
            .post("/webhooks/github")
            .header("content-type", "application/json")
            .header("x-github-event", "workflow_run")
            .header("x-github-delivery", format!("d-{case}"))
            .body(body.to_vec());
        if let Some(s) = signature {
            req = req.header("x-hub-signature-256", s);
        }
        let (status, err) = send(req).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{case}: {err}");
        assert!(
            err["title"] == "unauthorized" && err["status"] == 401,
            "{case}: {err}"
        );
    }
    assert_eq!(count(&db, "failure_events").await, 0);
    assert_eq!(count(&db, "analysis_runs").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn github_deliveries_that_are_not_failures_are_ignored_with_the_reason() {
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let (status, pong) = server
        .github(
            "ping",
            "p-1",
            &bytes(&fixture("github-ping.json")),
            Some(GITHUB_SECRET),
        )
        .await;
    assert_eq!((status, pong), (StatusCode::OK, json!({"pong": true})));

    let run = fixture("github-workflow-run-failure.json");
    let job = fixture("github-workflow-job-timed-out.json");
    let with = |mut v: Value, pointer: &str, value: Value| {
        *v.pointer_mut(pointer).unwrap() = value;
        v
    };
    let cases = [
        (
            "push",
            run.clone(),
            "event \"push\" is not analysed (only workflow_run and workflow_job)",
        ),
        (
            "workflow_run",
            with(run.clone(), "/action", json!("requested")),
            "workflow_run action \"requested\" is not analysed (only \"completed\")",
        ),
        (
            "workflow_run",
            with(run.clone(), "/workflow_run/conclusion", json!("cancelled")),
            "workflow_run conclusion \"cancelled\" is not a failure (only \"failure\" and \"timed_out\")",
        ),
        (
            "workflow_job",
            with(job.clone(), "/action", json!("in_progress")),
            "workflow_job action \"in_progress\" is not analysed",
        ),
        (
            "workflow_job",
            with(job.clone(), "/workflow_job/conclusion", Value::Null),
            "workflow_job conclusion \"null\" is not a failure",
        ),
    ];
    for (i, (event, payload, reason)) in cases.into_iter().enumerate() {
        let (status, body) = server
            .github(
                event,
                &format!("i-{i}"),
                &bytes(&payload),
                Some(GITHUB_SECRET),
            )
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        let ignored = body["ignored"].as_str().unwrap_or_else(|| panic!("{body}"));
        assert!(
            ignored.starts_with(reason),
            "{ignored:?} should start with {reason:?}"
        );
    }
    assert_eq!(count(&db, "failure_events").await, 0);
    assert_eq!(count(&db, "analysis_runs").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_successful_github_job_is_recorded_as_a_pass_in_the_history_without_a_run() {
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let mut job = fixture("github-workflow-job-timed-out.json");
    *job.pointer_mut("/workflow_job/conclusion").unwrap() = json!("success");
    for _ in 0..2 {
        let (status, body) = server
            .github("workflow_job", "pass-1", &bytes(&job), Some(GITHUB_SECRET))
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        assert_eq!(body["recorded"], "success");
    }
    assert_eq!(
        count(&db, "analysis_runs").await,
        0,
        "a pass starts no analysis"
    );
    assert_eq!(
        count(&db, "ci_outcomes").await,
        1,
        "a redelivery records nothing new"
    );
    // The pass is filed under the same job name a failure of that job gets.
    let (status, failed) = server
        .github(
            "workflow_job",
            "fail-1",
            &bytes(&fixture("github-workflow-job-timed-out.json")),
            Some(GITHUB_SECRET),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{failed}");
    let (failure_job, pass_job): (String, String) = sqlx::query_as(
        "SELECT (SELECT job_name FROM failure_events), (SELECT job_name FROM ci_outcomes)",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(failure_job, pass_job);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signed_body_replayed_under_new_delivery_ids_is_one_run() {
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let run = bytes(&fixture("github-workflow-run-failure.json"));
    let mut runs = Vec::new();
    for (i, delivery) in ["replay-1", "replay-2", "replay-3"].into_iter().enumerate() {
        let (status, body) = server
            .github("workflow_run", delivery, &run, Some(GITHUB_SECRET))
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        assert_eq!(body["created"], i == 0, "{delivery}: {body}");
        runs.push(id(&body, "run_id"));
    }
    assert!(runs.iter().all(|r| *r == runs[0]), "{runs:?}");
    assert_eq!(count(&db, "failure_events").await, 1);
    assert_eq!(count(&db, "analysis_runs").await, 1);

    // A re-run of the workflow (the next attempt) is a new failure.
    let mut rerun = fixture("github-workflow-run-failure.json");
    rerun["workflow_run"]["run_attempt"] = json!(2);
    let (status, body) = server
        .github(
            "workflow_run",
            "replay-4",
            &bytes(&rerun),
            Some(GITHUB_SECRET),
        )
        .await;
    assert_eq!(
        (status, body["created"].clone()),
        (StatusCode::ACCEPTED, json!(true))
    );

    // A pass replayed under new ids is one pass.
    let mut pass = fixture("github-workflow-job-timed-out.json");
    pass["workflow_job"]["conclusion"] = json!("success");
    for delivery in ["pass-a", "pass-b"] {
        let (status, body) = server
            .github("workflow_job", delivery, &bytes(&pass), Some(GITHUB_SECRET))
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    }
    assert_eq!(count(&db, "ci_outcomes").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_repository_that_is_not_owner_slash_name_or_an_overlong_delivery_is_refused() {
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    for (i, bad) in [
        "octo/repo/../../../user/repos",
        "octo-org/..",
        "octo org/ledger-api",
        "octo-org/ledger-api?per_page=1",
    ]
    .into_iter()
    .enumerate()
    {
        let mut run = fixture("github-workflow-run-failure.json");
        run["repository"]["full_name"] = json!(bad);
        let (status, err) = server
            .github(
                "workflow_run",
                &format!("repo-{i}"),
                &bytes(&run),
                Some(GITHUB_SECRET),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {err}");
        assert!(
            err["detail"]
                .as_str()
                .unwrap()
                .starts_with("repository.full_name: "),
            "{err}"
        );
    }
    let run = bytes(&fixture("github-workflow-run-failure.json"));
    let (status, err) = server
        .github("workflow_run", &"7".repeat(4000), &run, Some(GITHUB_SECRET))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert!(
        err["detail"]
            .as_str()
            .unwrap()
            .starts_with("X-GitHub-Delivery: "),
        "{err}"
    );
    let mut nul = fixture("github-workflow-run-failure.json");
    nul["workflow_run"]["head_branch"] = json!("main\u{0}");
    let (status, err) = server
        .github("workflow_run", "nul-1", &bytes(&nul), Some(GITHUB_SECRET))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert_eq!(err["detail"], "head_branch: contains a NUL character");
    assert_eq!(count(&db, "failure_events").await, 0);
}

/// Issue 32: a failure is stored with its branch and the branch its change
/// is to land on (the pull request's base, else the repository's default
/// branch), and a pass with its branch: "already failing" is read there.
#[tokio::test(flavor = "multi_thread")]
async fn a_failure_keeps_its_branch_and_its_target_and_a_pass_its_branch() {
    let db = TestDb::new().await;
    let server = Server::start(&db, &[]).await;
    let mut run = fixture("github-workflow-run-failure.json");
    run["workflow_run"]["head_branch"] = json!("fix/ledger");
    run["workflow_run"]["pull_requests"] = json!([{
        "url": "https://api.github.com/repos/octo-org/ledger-api/pulls/12",
        "id": 1200, "number": 12,
        "head": {"ref": "fix/ledger", "sha": "3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39",
                 "repo": {"id": 1, "url": "https://api.github.com/repos/octo-org/ledger-api", "name": "ledger-api"}},
        "base": {"ref": "release/2.x", "sha": "0123456789abcdef0123456789abcdef01234567",
                 "repo": {"id": 1, "url": "https://api.github.com/repos/octo-org/ledger-api", "name": "ledger-api"}}
    }]);
    let (status, body) = server
        .github(
            "workflow_run",
            "branch-1",
            &bytes(&run),
            Some(GITHUB_SECRET),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    // A job's delivery names no pull request: the default branch.
    let mut job = fixture("github-workflow-job-timed-out.json");
    job["workflow_job"]["head_branch"] = json!("spike");
    job["repository"]["default_branch"] = json!("trunk");
    let (status, body) = server
        .github(
            "workflow_job",
            "branch-2",
            &bytes(&job),
            Some(GITHUB_SECRET),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let stored: Vec<(Option<String>, Value)> = sqlx::query_as(
        "SELECT branch, payload #> '{github,target_branch}' FROM failure_events ORDER BY received_at",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(
        stored,
        vec![
            (Some("fix/ledger".into()), json!("release/2.x")),
            (Some("spike".into()), json!("trunk")),
        ]
    );
    job["workflow_job"]["conclusion"] = json!("success");
    let (status, body) = server
        .github(
            "workflow_job",
            "branch-3",
            &bytes(&job),
            Some(GITHUB_SECRET),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let branch: Option<String> = sqlx::query_scalar("SELECT branch FROM ci_outcomes")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(branch.as_deref(), Some("spike"));
}

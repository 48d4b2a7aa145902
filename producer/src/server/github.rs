//! `POST /webhooks/github`: GitHub Actions failures.
//!
//! The body is authenticated first (`X-Hub-Signature-256`, HMAC-SHA256 with
//! `GITHUB_WEBHOOK_SECRET`, compared in constant time); nothing is parsed or
//! stored before that. `workflow_run` and `workflow_job` deliveries with
//! action `completed` and conclusion `failure` or `timed_out` become an event
//! (dedup key `github:delivery:<X-GitHub-Delivery>`) with an **empty** log:
//! the worker fetches the log through the GitHub API using what
//! [`GithubTarget`] stores in the event's payload (under `"github"`).
//! Conclusion `success` is recorded as a pass in the failure history
//! (`ci_outcomes`), with no run.

use anyhow::Context;
use axum::{
    Json,
    body::Bytes,
    extract::{State, rejection::BytesRejection},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use faultline_shared::{
    config::Secret,
    storage::{
        events::NewEvent,
        history::{self, NewOutcome},
    },
};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::Sha256;

use super::{AppState, error::AppError, header_str, ignored, require_json, store};

/// Conclusions that start an analysis.
const FAILED: [&str; 2] = ["failure", "timed_out"];
/// The conclusion recorded as a pass in the failure history (no analysis).
const PASSED: &str = "success";

pub async fn webhook(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, AppError> {
    let secret = state
        .config
        .github_secret
        .as_ref()
        .ok_or(AppError::NotConfigured("GITHUB_WEBHOOK_SECRET"))?;
    let body = body?;
    verify_signature(&headers, &body, secret)?;
    require_json(&headers)?;
    let event = header_str(&headers, "x-github-event")
        .ok_or_else(|| AppError::bad_request("missing header", "X-GitHub-Event"))?;
    if event == "ping" {
        return Ok((StatusCode::OK, Json(json!({"pong": true}))).into_response());
    }
    let delivery = header_str(&headers, "x-github-delivery")
        .ok_or_else(|| AppError::bad_request("missing header", "X-GitHub-Delivery"))?;
    let target = match event {
        "workflow_run" => Json::<WorkflowRunEvent>::from_bytes(&body)?.0.target(),
        "workflow_job" => Json::<WorkflowJobEvent>::from_bytes(&body)?.0.target(),
        other => {
            return Ok(ignored(format!(
                "event {other:?} is not analysed (only workflow_run and workflow_job)"
            )));
        }
    };
    if target.action != "completed" {
        return Ok(ignored(format!(
            "{event} action {:?} is not analysed (only \"completed\")",
            target.action
        )));
    }
    let conclusion = target.conclusion.as_deref().unwrap_or("null");
    if conclusion == PASSED {
        return record_pass(&state, &target, delivery).await;
    }
    if !FAILED.contains(&conclusion) {
        return Ok(ignored(format!(
            "{event} conclusion {conclusion:?} is not a failure (only \"failure\" and \"timed_out\")"
        )));
    }
    let event = NewEvent {
        dedup_key: format!("github:delivery:{delivery}"),
        source: "github".into(),
        job_name: Some(target.job_label()),
        build_number: Some(target.run_id.to_string()),
        repository: Some(target.repository.clone()),
        commit_sha: Some(target.head_sha.clone()),
        payload: json!({"github": target, "delivery": delivery}),
        ..NewEvent::default()
    };
    store(&state, &event, b"").await
}

/// A passing run or job starts no analysis but is history: without passes,
/// a failure cannot be told flaky (passed and failed on one commit) from broken.
async fn record_pass(
    state: &AppState,
    target: &GithubTarget,
    delivery: &str,
) -> Result<Response, AppError> {
    let outcome = NewOutcome {
        dedup_key: format!("github:delivery:{delivery}"),
        source: "github".into(),
        job_name: Some(target.job_label()),
        repository: Some(target.repository.clone()),
        commit_sha: Some(target.head_sha.clone()),
        build_number: Some(target.run_id.to_string()),
        outcome: PASSED.into(),
        ..NewOutcome::default()
    };
    let created = history::record_outcome(&state.pool, &outcome)
        .await
        .context("failed to record the outcome")?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"recorded": PASSED, "created": created})),
    )
        .into_response())
}

/// Checks `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(body, secret)>`.
pub fn verify_signature(headers: &HeaderMap, body: &[u8], secret: &Secret) -> Result<(), AppError> {
    let header = header_str(headers, "x-hub-signature-256")
        .ok_or(AppError::Unauthorized("missing X-Hub-Signature-256"))?;
    let signature = header
        .strip_prefix("sha256=")
        .and_then(decode_hex)
        .ok_or(AppError::Unauthorized("malformed X-Hub-Signature-256"))?;
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.expose().as_bytes())
        .map_err(|e| AppError::Internal(anyhow::anyhow!("HMAC key rejected: {e}")))?;
    mac.update(body);
    mac.verify_slice(&signature)
        .map_err(|_| AppError::Unauthorized("X-Hub-Signature-256 does not match the body"))
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// What the worker needs to fetch a failed run's or job's log from GitHub.
#[derive(Debug, Serialize)]
pub struct GithubTarget {
    /// `workflow_run` or `workflow_job`.
    pub kind: &'static str,
    #[serde(skip)]
    pub action: String,
    pub conclusion: Option<String>,
    /// `owner/name`.
    pub repository: String,
    /// The repository's API URL (`https://api.github.com/repos/owner/name`, or GHES).
    pub repository_api_url: String,
    pub run_id: u64,
    pub run_attempt: Option<u64>,
    pub run_number: Option<u64>,
    pub workflow_name: String,
    /// The workflow's id (`workflow_run` deliveries carry it; for a job the
    /// worker reads it from the run): where its last green run is looked up.
    pub workflow_id: Option<u64>,
    pub job_id: Option<u64>,
    pub job_name: Option<String>,
    /// Steps of a job that ended `failure` or `timed_out`.
    pub failed_steps: Vec<String>,
    pub head_sha: String,
    pub head_branch: Option<String>,
    /// API URL of the log (a zip for a run, plain text for a job).
    pub logs_url: String,
    pub html_url: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Repository {
    full_name: String,
    url: String,
}

/// A `workflow_run` delivery (only the fields we use; GitHub sends many more).
#[derive(Debug, Deserialize)]
struct WorkflowRunEvent {
    action: String,
    workflow_run: WorkflowRun,
    repository: Repository,
}

#[derive(Debug, Deserialize)]
struct WorkflowRun {
    id: u64,
    name: Option<String>,
    workflow_id: Option<u64>,
    run_number: Option<u64>,
    run_attempt: Option<u64>,
    head_sha: String,
    head_branch: Option<String>,
    conclusion: Option<String>,
    logs_url: String,
    html_url: Option<String>,
}

impl GithubTarget {
    /// The job's name in the failure history: `workflow / job`, or the workflow.
    fn job_label(&self) -> String {
        match &self.job_name {
            Some(job) => format!("{} / {job}", self.workflow_name),
            None => self.workflow_name.clone(),
        }
    }
}

impl WorkflowRunEvent {
    fn target(self) -> GithubTarget {
        let run = self.workflow_run;
        GithubTarget {
            kind: "workflow_run",
            action: self.action,
            conclusion: run.conclusion,
            repository: self.repository.full_name,
            repository_api_url: self.repository.url,
            run_id: run.id,
            run_attempt: run.run_attempt,
            run_number: run.run_number,
            workflow_name: run.name.unwrap_or_else(|| "workflow".into()),
            workflow_id: run.workflow_id,
            job_id: None,
            job_name: None,
            failed_steps: Vec::new(),
            head_sha: run.head_sha,
            head_branch: run.head_branch,
            logs_url: run.logs_url,
            html_url: run.html_url,
        }
    }
}

/// A `workflow_job` delivery.
#[derive(Debug, Deserialize)]
struct WorkflowJobEvent {
    action: String,
    workflow_job: WorkflowJob,
    repository: Repository,
}

#[derive(Debug, Deserialize)]
struct WorkflowJob {
    id: u64,
    run_id: u64,
    run_attempt: Option<u64>,
    name: String,
    workflow_name: Option<String>,
    head_sha: String,
    head_branch: Option<String>,
    conclusion: Option<String>,
    html_url: Option<String>,
    #[serde(default)]
    steps: Vec<JobStep>,
}

#[derive(Debug, Deserialize)]
struct JobStep {
    name: String,
    conclusion: Option<String>,
}

impl WorkflowJobEvent {
    fn target(self) -> GithubTarget {
        let job = self.workflow_job;
        let logs_url = format!("{}/actions/jobs/{}/logs", self.repository.url, job.id);
        GithubTarget {
            kind: "workflow_job",
            action: self.action,
            conclusion: job.conclusion,
            repository: self.repository.full_name,
            repository_api_url: self.repository.url,
            run_id: job.run_id,
            run_attempt: job.run_attempt,
            run_number: None,
            workflow_name: job.workflow_name.unwrap_or_else(|| "workflow".into()),
            workflow_id: None,
            job_id: Some(job.id),
            job_name: Some(job.name),
            failed_steps: job
                .steps
                .into_iter()
                .filter(|s| s.conclusion.as_deref().is_some_and(|c| FAILED.contains(&c)))
                .map(|s| s.name)
                .collect(),
            head_sha: job.head_sha,
            head_branch: job.head_branch,
            logs_url,
            html_url: job.html_url,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn signed(body: &[u8], key: &str) -> HeaderMap {
        let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).unwrap();
        mac.update(body);
        let hex = faultline_shared::hex(&mac.finalize().into_bytes());
        let mut h = HeaderMap::new();
        h.insert(
            "x-hub-signature-256",
            HeaderValue::from_str(&format!("sha256={hex}")).unwrap(),
        );
        h
    }

    #[test]
    fn only_the_right_key_over_the_exact_body_verifies() {
        let secret = Secret::new("It's a Secret to Everybody");
        let body = b"Hello, World!";
        assert!(verify_signature(&signed(body, secret.expose()), body, &secret).is_ok());
        assert!(verify_signature(&signed(body, "other"), body, &secret).is_err());
        assert!(
            verify_signature(&signed(body, secret.expose()), b"Hello, World", &secret).is_err()
        );
        assert!(verify_signature(&HeaderMap::new(), body, &secret).is_err());
    }

    #[test]
    fn githubs_documented_example_signature_verifies() {
        // From GitHub's "Validating webhook deliveries" documentation.
        let mut h = HeaderMap::new();
        h.insert(
            "x-hub-signature-256",
            HeaderValue::from_static(
                "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
            ),
        );
        let secret = Secret::new("It's a Secret to Everybody");
        assert!(verify_signature(&h, b"Hello, World!", &secret).is_ok());
    }

    #[test]
    fn hex_decoding_rejects_odd_or_non_hex_input() {
        assert_eq!(decode_hex("0aff"), Some(vec![0x0a, 0xff]));
        assert_eq!(decode_hex("0af"), None);
        assert_eq!(decode_hex("zz"), None);
        assert_eq!(decode_hex("é1"), None);
    }
}

//! Sending one notification to each target: the signed generic webhook and
//! a GitHub check run. Each call is one HTTP request; retries are the
//! outbox's job (schedule in Postgres), never a loop here.

use faultline_shared::storage::{events::EventRow, runs::RunRow};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use uuid::Uuid;

use faultline_shared::{
    RunStatus, Specifics,
    config::{ExposeSecret, SecretString},
    hex,
};

pub const WEBHOOK: &str = "webhook";
pub const GITHUB: &str = "github";

/// `sha256=<hex HMAC-SHA256(body, secret)>`, the `X-Faultline-Signature` value.
pub fn signature(body: &[u8], secret: &SecretString) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.expose_secret().as_bytes())
        .expect("HMAC accepts keys of any length");
    mac.update(body);
    format!("sha256={}", hex(&mac.finalize().into_bytes()))
}

/// The webhook body: the run's verdict and the event it analysed. Built from
/// data that no longer changes, so every retry sends the same bytes.
pub fn payload(delivery: Uuid, kind: &str, run: &RunRow, event: Option<&EventRow>) -> Value {
    let result = run.result.clone().unwrap_or(Value::Null);
    json!({
        "delivery_id": delivery,
        "event": format!("analysis.{kind}"),
        "run_id": run.id,
        "status": run.status,
        "category": run.category,
        "confidence": run.confidence,
        "root_cause": result["root_cause"],
        "fix": result["fix"],
        "evidence": result["evidence"],
        // What the log names: failing tests, first diagnostic, unresolved
        // packages, failed step (`{}` when it names nothing).
        "specifics": result.get("specifics").cloned().unwrap_or_else(|| json!({})),
        "finished_at": run.finished_at,
        "failure": event.map(|e| json!({
            "source": e.source, "job": e.job_name, "build": e.build_number, "test": e.test_name,
            "repository": e.repository, "commit": e.commit_sha, "log_name": e.log_name,
        })),
    })
}

/// POSTs the signed body to the webhook; `Err` carries why it failed.
pub async fn webhook(
    http: &reqwest::Client,
    url: &str,
    secret: &SecretString,
    delivery: Uuid,
    kind: &str,
    body: &[u8],
) -> Result<(), String> {
    let resp = http
        .post(url)
        .header("content-type", "application/json")
        .header("user-agent", "faultline-notify")
        .header("x-faultline-delivery", delivery.to_string())
        .header("x-faultline-event", format!("analysis.{kind}"))
        .header("x-faultline-signature", signature(body, secret))
        .body(body.to_vec())
        .send()
        .await
        .map_err(|e| format!("webhook: {e}"))?;
    check(resp, "webhook").await
}

/// Creates a completed check run named `faultline` on the failed commit
/// (`POST /repos/{owner}/{repo}/check-runs`; needs a GitHub App token with
/// `checks: write`). `external_id` carries the delivery id.
pub async fn github_check_run(
    http: &reqwest::Client,
    api: &str,
    token: &SecretString,
    delivery: Uuid,
    repository: &str,
    head_sha: &str,
    run: &RunRow,
) -> Result<(), String> {
    let result = run.result.clone().unwrap_or(Value::Null);
    let category = run.category.map_or("UNKNOWN", |c| c.as_str());
    let confidence = run.confidence.unwrap_or(0.0);
    let mut summary = format!(
        "**Root cause:** {}\n\n**Fix:** {}\n",
        result["root_cause"].as_str().unwrap_or("-"),
        result["fix"].as_str().unwrap_or("-")
    );
    let specifics: Specifics =
        serde_json::from_value(result["specifics"].clone()).unwrap_or_default();
    if !specifics.is_empty() {
        summary.push_str("\n**What the log names:**\n");
        for (label, text) in specifics.lines() {
            summary.push_str(&format!("- {label}: {text}\n"));
        }
    }
    if run.status == RunStatus::NeedsReview {
        summary.push_str("\nConfidence is low: this analysis waits for human review.\n");
    }
    let body = json!({
        "name": "faultline",
        "head_sha": head_sha,
        "status": "completed",
        "conclusion": "neutral",
        "external_id": delivery.to_string(),
        "output": {
            "title": format!("{category} (confidence {confidence:.2})"),
            "summary": summary,
        },
    });
    let url = check_runs_url(api, repository)?;
    let resp = http
        .post(url)
        .bearer_auth(token.expose_secret())
        .header("accept", "application/vnd.github+json")
        .header("x-github-api-version", "2022-11-28")
        .header("user-agent", "faultline-notify")
        .json(&body)
        .send()
        .await
        .map_err(|e| format!("github: {e}"))?;
    check(resp, "github").await
}

/// `{api}/repos/{owner}/{name}/check-runs`, each segment percent-encoded:
/// a stored repository name that is not exactly `owner/name` (issue 14:
/// `octo/repo/../../../user/repos`) reaches no other API path.
fn check_runs_url(api: &str, repository: &str) -> Result<reqwest::Url, String> {
    let (owner, name) = crate::sources::github::full_name(repository).ok_or_else(|| {
        format!("github: repository {repository:?} is not owner/name, so no check run is created")
    })?;
    let mut url =
        reqwest::Url::parse(api).map_err(|e| format!("github: GITHUB_API_URL {api:?}: {e}"))?;
    url.path_segments_mut()
        .map_err(|()| format!("github: GITHUB_API_URL {api:?} is not an http(s) URL"))?
        .pop_if_empty()
        .extend(["repos", &owner, &name, "check-runs"]);
    Ok(url)
}

async fn check(resp: reqwest::Response, target: &str) -> Result<(), String> {
    let status = resp.status();
    if status.is_success() {
        return Ok(());
    }
    let text = resp.text().await.unwrap_or_default();
    let text: String = text.chars().take(200).collect();
    Err(format!("{target} answered {status}: {text}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_runs_stay_under_the_repository() {
        assert_eq!(
            check_runs_url("https://ghe.example.com/api/v3/", "octo-org/ledger-api")
                .unwrap()
                .as_str(),
            "https://ghe.example.com/api/v3/repos/octo-org/ledger-api/check-runs"
        );
        for bad in [
            "octo/repo/../../../user/repos",
            "octo/repo/x",
            "octo/..",
            "octo/repo?x=1",
            "octo",
        ] {
            let err = check_runs_url("https://api.github.com", bad).unwrap_err();
            assert!(err.contains("is not owner/name"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_signature_is_hmac_sha256_of_the_body() {
        // The same construction GitHub documents for X-Hub-Signature-256.
        let secret = SecretString::from("It's a Secret to Everybody");
        assert_eq!(
            signature(b"Hello, World!", &secret),
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
        );
    }
}

//! `POST /webhooks/github`: GitHub Actions failures.
//!
//! The body is authenticated first (`X-Hub-Signature-256`, HMAC-SHA256 with
//! `GITHUB_WEBHOOK_SECRET`, compared in constant time); nothing is parsed or
//! stored before that. `workflow_run` and `workflow_job` deliveries with
//! action `completed` and conclusion `failure` or `timed_out` become an event
//! (dedup key `github:delivery:<X-GitHub-Delivery>`, and a second one from
//! what the signature covers — repository, run or job id, attempt — since the
//! delivery id is not signed) with an **empty** log:
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
use faultline_producer::payload::github::{self, Delivery, GithubTarget, PASSED};
use faultline_shared::{
    config::{ExposeSecret, SecretString},
    storage::{
        events::NewEvent,
        history::{self, NewOutcome},
        pr_comments,
    },
};
use hmac::{Hmac, Mac};
use serde_json::json;
use sha2::Sha256;

use super::{
    AppState, error::AppError, header_str, ignored, openapi, recorded, require_json, store,
};

/// A GitHub webhook delivery: `workflow_run` (completed with a failure)
/// and `workflow_job` are analysed, `ping` and other events are
/// acknowledged and ignored.
#[utoipa::path(
    post,
    operation_id = "github_webhook",
    path = "/webhooks/github",
    tag = "webhooks",
    security(("github_signature" = [])),
    params(
        ("X-GitHub-Event" = String, Header, description = "The event's name."),
        ("X-GitHub-Delivery" = String, Header, description = "The delivery's id (a redelivery answers the same run)."),
    ),
    request_body(content = Object, description = "The event payload as GitHub sends it.", content_type = "application/json"),
    responses(
        (status = 200, description = "A `ping` event, answered.", body = super::openapi::Pong),
        (status = 202, description = "A failure stored and queued (or already known), a passing run recorded, or a delivery ignored with the reason.", body = super::openapi::Delivery),
        (status = 400, description = "A missing header, malformed JSON or a payload that does not read as the event."),
        (status = 401, description = "A missing or wrong signature."),
        (status = 413, description = "The body is over FAULTLINE_WEBHOOK_MAX_BODY_BYTES."),
        (status = 415, description = "The body is not `application/json`."),
        (status = 429, description = "Too many wrong signatures from this client; see Retry-After."),
    ),
)]
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
        return Ok(pong());
    }
    let delivery = header_str(&headers, "x-github-delivery")
        .ok_or_else(|| AppError::bad_request("missing header", "X-GitHub-Delivery"))?;
    let delivery = github::check_delivery(delivery)?;
    let target = match github::parse(event, &body)? {
        Delivery::Ping => return Ok(pong()),
        Delivery::Ignored(reason) => return Ok(ignored(reason)),
        Delivery::Passed(target) => return record_pass(&state, &target, delivery).await,
        Delivery::Failed(target) => target,
    };
    let event = NewEvent {
        dedup_key: format!("github:delivery:{delivery}"),
        content_key: Some(target.signed_key()),
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
    tracing::debug!(%delivery, "pass recorded");
    let outcome = NewOutcome {
        // What the signature covers, so a replay under new delivery ids is one pass.
        dedup_key: target.signed_key(),
        source: "github".into(),
        job_name: Some(target.job_label()),
        repository: Some(target.repository.clone()),
        commit_sha: Some(target.head_sha.clone()),
        build_number: Some(target.run_id.to_string()),
        branch: target.head_branch.clone(),
        outcome: PASSED.into(),
        ..NewOutcome::default()
    };
    let created = history::record_outcome(&state.pool, &outcome)
        .await
        .context("failed to record the outcome")?;
    // A pull request's Faultline comment that shows an older commit's
    // failures says that a later run passed (written by a worker).
    let pulls: Vec<i64> = target.pull_requests.iter().map(|n| *n as i64).collect();
    pr_comments::mark_passed(
        &state.pool,
        &target.repository,
        &pulls,
        target.head_branch.as_deref(),
        &target.head_sha,
        &target.job_label(),
    )
    .await
    .context("failed to mark the pull request's comment")?;
    Ok(recorded(created))
}

fn pong() -> Response {
    (StatusCode::OK, Json(openapi::Pong { pong: true })).into_response()
}

/// Checks `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(body, secret)>`.
pub fn verify_signature(
    headers: &HeaderMap,
    body: &[u8],
    secret: &SecretString,
) -> Result<(), AppError> {
    let header = header_str(headers, "x-hub-signature-256")
        .ok_or(AppError::Unauthorized("missing X-Hub-Signature-256"))?;
    let signature = header
        .strip_prefix("sha256=")
        .and_then(decode_hex)
        .ok_or(AppError::Unauthorized("malformed X-Hub-Signature-256"))?;
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.expose_secret().as_bytes())
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
        let secret = SecretString::from("It's a Secret to Everybody");
        let body = b"Hello, World!";
        assert!(verify_signature(&signed(body, secret.expose_secret()), body, &secret).is_ok());
        assert!(verify_signature(&signed(body, "other"), body, &secret).is_err());
        assert!(
            verify_signature(
                &signed(body, secret.expose_secret()),
                b"Hello, World",
                &secret
            )
            .is_err()
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
        let secret = SecretString::from("It's a Secret to Everybody");
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

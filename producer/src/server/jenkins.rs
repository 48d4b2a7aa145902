//! `POST /webhooks/jenkins`: Jenkins Notification plugin deliveries.
//!
//! Authenticated by `JENKINS_WEBHOOK_TOKEN` (`X-Faultline-Token` or
//! `Authorization: Bearer`). A build in phase `COMPLETED` or `FINALIZED` with
//! status `FAILURE` or `UNSTABLE` becomes an event with dedup key
//! `jenkins:<job url>#<number>`, so the two phases of one build make one run.
//! An inline console log (`build.log`) is stored as the event's log; without
//! one the log stays empty and the worker fetches `console_url` (payload
//! under `"jenkins"`). A build that passed (`SUCCESS`) is recorded in the
//! failure history (`ci_outcomes`, with its branch), with no run. The body
//! is parsed by [`jenkins::parse`].

use anyhow::Context;
use axum::{
    body::Bytes,
    extract::{FromRequest, Request, State},
    response::Response,
};
use faultline_producer::payload::jenkins::{self, Notification, PassedBuild};
use faultline_shared::storage::{events::NewEvent, history, pr_comments};

use super::{AppState, auth, error::AppError, ignored, recorded, require_json, store};

/// A Jenkins Notification plugin build event: a finished, failed build is
/// analysed (its log fetched from Jenkins, or the lines the event carries);
/// a finished, passing build is recorded as history; other phases and
/// results are acknowledged and ignored.
#[utoipa::path(
    post,
    operation_id = "jenkins_webhook",
    path = "/webhooks/jenkins",
    tag = "webhooks",
    security(("jenkins_token" = [])),
    request_body(content = Object, description = "The Notification plugin's JSON.", content_type = "application/json"),
    responses(
        (status = 202, description = "Stored and queued (or already known), a pass recorded in the history, or ignored with the reason.", body = super::openapi::Delivery),
        (status = 400, description = "Malformed JSON or a payload that does not read as a build notification."),
        (status = 401, description = "A missing or wrong token."),
        (status = 413, description = "The body is over FAULTLINE_MAX_BODY_BYTES."),
        (status = 415, description = "The body is not `application/json`."),
        (status = 429, description = "Too many wrong tokens from this client; see Retry-After."),
    ),
)]
pub async fn webhook(
    State(state): State<AppState>,
    request: Request,
) -> Result<Response, AppError> {
    let token = state
        .config
        .jenkins_token
        .as_ref()
        .ok_or(AppError::NotConfigured("JENKINS_WEBHOOK_TOKEN"))?;
    // Authenticate before reading (and buffering) the body; wrong tokens
    // count against the client's address.
    let ip = auth::client_ip(request.extensions());
    auth::check_throttle(&state, ip)?;
    if let Err(e) = auth::check_shared_token(request.headers(), token) {
        if request.headers().contains_key("x-faultline-token")
            || request
                .headers()
                .contains_key(axum::http::header::AUTHORIZATION)
        {
            auth::record_failure(&state, ip);
        }
        return Err(e);
    }
    require_json(request.headers())?;
    let body = Bytes::from_request(request, &state).await?;
    let mut build = match jenkins::parse(&body)? {
        Notification::Ignored(reason) => return Ok(ignored(reason)),
        Notification::Passed(build) => return record_pass(&state, build).await,
        Notification::Failed(build) => build,
    };
    build.tie_to_github(&state.config.github_web());
    let (dedup_key, log_name) = (build.dedup_key(), build.log_name());
    let event = NewEvent {
        dedup_key,
        source: "jenkins".into(),
        job_name: Some(build.job_name),
        build_number: Some(build.number.to_string()),
        repository: build.repository,
        commit_sha: build.commit,
        log_name: Some(log_name),
        // The log itself goes to the chunk store, never into the payload.
        payload: build.payload,
        ..NewEvent::default()
    };
    store(&state, &event, build.log.as_bytes()).await
}

/// A passing build starts no analysis but is history (with its branch):
/// without passes a Jenkins failure could never be told new with its
/// change, flaky, or failing since an earlier build.
async fn record_pass(state: &AppState, build: PassedBuild) -> Result<Response, AppError> {
    let outcome = history::NewOutcome {
        dedup_key: build.dedup_key(),
        source: "jenkins".into(),
        job_name: Some(build.job_name.clone()),
        repository: build.repository.clone(),
        commit_sha: build.commit.clone(),
        build_number: Some(build.number.to_string()),
        branch: build.branch.clone(),
        outcome: faultline_producer::payload::github::PASSED.into(),
        ..history::NewOutcome::default()
    };
    let created = history::record_outcome(&state.pool, &outcome)
        .await
        .context("failed to record the outcome")?;
    // A pull request's Faultline comment that shows an older commit's
    // failures says that a later build passed, as for GitHub's runs.
    if let (Some(repository), Some(sha)) = (
        build.github_repository(&state.config.github_web()),
        outcome.commit_sha.as_deref(),
    ) {
        let pulls: Vec<i64> = build.pull_request.into_iter().collect();
        pr_comments::mark_passed(
            &state.pool,
            &repository,
            &pulls,
            build.branch.as_deref(),
            sha,
            &build.job_name,
        )
        .await
        .context("failed to mark the pull request's comment")?;
    }
    Ok(recorded(created))
}

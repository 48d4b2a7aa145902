//! `POST /webhooks/jenkins`: Jenkins Notification plugin deliveries.
//!
//! Authenticated by `JENKINS_WEBHOOK_TOKEN` (`X-Faultline-Token` or
//! `Authorization: Bearer`). A build in phase `COMPLETED` or `FINALIZED` with
//! status `FAILURE` or `UNSTABLE` becomes an event with dedup key
//! `jenkins:<job url>#<number>`, so the two phases of one build make one run.
//! An inline console log (`build.log`) is stored as the event's log; without
//! one the log stays empty and the worker fetches `console_url` (payload
//! under `"jenkins"`).

use axum::{
    Json,
    body::Bytes,
    extract::{FromRequest, Request, State},
    response::Response,
};
use faultline_shared::storage::events::NewEvent;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{AppState, auth, error::AppError, ignored, require_json, store};

const PHASES: [&str; 2] = ["COMPLETED", "FINALIZED"];
const FAILED: [&str; 2] = ["FAILURE", "UNSTABLE"];

/// The Notification plugin's JSON (only the fields we use).
#[derive(Debug, Deserialize)]
struct Notification {
    name: String,
    url: Option<String>,
    build: Build,
}

#[derive(Debug, Deserialize)]
struct Build {
    full_url: Option<String>,
    number: u64,
    phase: String,
    status: Option<String>,
    scm: Option<Scm>,
    log: Option<String>,
    parameters: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Scm {
    url: Option<String>,
    branch: Option<String>,
    commit: Option<String>,
}

pub async fn webhook(
    State(state): State<AppState>,
    request: Request,
) -> Result<Response, AppError> {
    let token = state
        .config
        .jenkins_token
        .as_ref()
        .ok_or(AppError::NotConfigured("JENKINS_WEBHOOK_TOKEN"))?;
    // Authenticate before reading (and buffering) the body.
    auth::check_shared_token(request.headers(), token)?;
    require_json(request.headers())?;
    let body = Bytes::from_request(request, &state).await?;
    let Json(n) = Json::<Notification>::from_bytes(&body)?;
    let build = &n.build;
    if !PHASES.contains(&build.phase.as_str()) {
        return Ok(ignored(format!(
            "build phase {:?} is not analysed (only COMPLETED and FINALIZED)",
            build.phase
        )));
    }
    let status = build.status.as_deref().unwrap_or("null");
    if !FAILED.contains(&status) {
        return Ok(ignored(format!(
            "build status {status:?} is not a failure (only FAILURE and UNSTABLE)"
        )));
    }
    let job = job_id(&n);
    let scm = build.scm.as_ref();
    let log = build.log.as_deref().unwrap_or("");
    let console_url = build.full_url.as_ref().map(|u| {
        let sep = if u.ends_with('/') { "" } else { "/" };
        format!("{u}{sep}consoleText")
    });
    let event = NewEvent {
        dedup_key: format!("jenkins:{job}#{}", build.number),
        source: "jenkins".into(),
        job_name: Some(n.name.clone()),
        build_number: Some(build.number.to_string()),
        repository: scm.and_then(|s| s.url.clone()),
        commit_sha: scm.and_then(|s| s.commit.clone()),
        log_name: Some(format!("{}#{}", n.name, build.number)),
        // The log itself goes to the chunk store, never into the payload.
        payload: json!({"jenkins": {
            "job_url": job,
            "build_url": build.full_url,
            "console_url": console_url,
            "phase": build.phase,
            "status": status,
            "branch": scm.and_then(|s| s.branch.as_deref()),
            "parameters": build.parameters,
            "log_inline": !log.is_empty(),
        }}),
        ..NewEvent::default()
    };
    store(&state, &event, log.as_bytes()).await
}

/// The job's identity: its absolute URL (the build's `full_url` without the
/// trailing build number) when known, else the relative `url`, else the name.
fn job_id(n: &Notification) -> String {
    let number = n.build.number.to_string();
    let from_full = n.build.full_url.as_deref().and_then(|full| {
        full.trim_end_matches('/')
            .strip_suffix(number.as_str())
            .filter(|job| job.ends_with('/'))
            .map(str::to_string)
    });
    from_full
        .or_else(|| n.url.clone().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| n.name.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notification(full_url: Option<&str>, url: Option<&str>) -> Notification {
        serde_json::from_value(json!({
            "name": "ledger-api",
            "url": url,
            "build": {"full_url": full_url, "number": 812, "phase": "COMPLETED", "status": "FAILURE"}
        }))
        .unwrap()
    }

    #[test]
    fn the_job_is_identified_by_its_absolute_url_when_known() {
        let n = notification(
            Some("https://ci.example.com/job/ledger-api/812/"),
            Some("job/ledger-api/"),
        );
        assert_eq!(job_id(&n), "https://ci.example.com/job/ledger-api/");
        let n = notification(None, Some("job/ledger-api/"));
        assert_eq!(job_id(&n), "job/ledger-api/");
        let n = notification(None, None);
        assert_eq!(job_id(&n), "ledger-api");
        // A build number that is only a suffix of the last segment is not stripped.
        let n = notification(Some("https://ci.example.com/job/x1812/"), None);
        assert_eq!(job_id(&n), "ledger-api");
    }
}

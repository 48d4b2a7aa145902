//! `/api/v1/analyses`: submit a log (or a URL to one) and read the analysis
//! and its trace. Bearer tokens: `ingest` submits, `reviewer` reads, `admin`
//! does both (see `auth.rs`).

use axum::{
    Json,
    extract::{
        Path, Query, State,
        rejection::{JsonRejection, PathRejection, QueryRejection},
    },
    http::{HeaderMap, Uri},
    response::Response,
};
use faultline_shared::{
    RunStatus,
    config::AllowList,
    hex,
    storage::{
        events::{self, NewEvent},
        review, runs, steps,
    },
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::{
    AppState,
    auth::{Ingester, Reader},
    error::AppError,
    header_str, ingest,
    openapi::Accepted,
    store, stored,
};

/// `POST /api/v1/analyses` body: exactly one of `log` and `log_url`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateAnalysis {
    /// The failed build's log, as text (not empty).
    log: Option<String>,
    /// An absolute http(s) URL the worker fetches the log from.
    log_url: Option<String>,
    /// The CI job's name (checked against FAULTLINE_ALLOWED_JOBS).
    job: Option<String>,
    build: Option<BuildNumber>,
    /// The failing test, when one is known.
    test: Option<String>,
    /// `owner/name` (checked against FAULTLINE_ALLOWED_REPOSITORIES).
    repository: Option<String>,
    /// The commit SHA the build ran on.
    commit: Option<String>,
}

/// CI systems send build numbers as numbers or as strings.
#[derive(Debug)]
struct BuildNumber(String);

impl utoipa::PartialSchema for BuildNumber {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
        OneOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(Type::String))
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .minimum(Some(0)),
            )
            .description(Some(
                "The build number, as a string or a non-negative integer.",
            ))
            .into()
    }
}

impl ToSchema for BuildNumber {}

impl<'de> Deserialize<'de> for BuildNumber {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = BuildNumber;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a build number (a string or a non-negative integer)")
            }
            fn visit_u64<E>(self, n: u64) -> Result<BuildNumber, E> {
                Ok(BuildNumber(n.to_string()))
            }
            fn visit_str<E>(self, s: &str) -> Result<BuildNumber, E> {
                Ok(BuildNumber(s.to_string()))
            }
        }
        d.deserialize_any(Visitor)
    }
}

const MAX_IDEMPOTENCY_KEY: usize = 255;

/// Submits a failed build's log (or a URL to it) for analysis. The same
/// submission (or the same `Idempotency-Key` from the same token) answers
/// the run it already made, with `created: false`.
#[utoipa::path(
    post,
    operation_id = "create_analysis",
    path = "/api/v1/analyses",
    tag = "analyses",
    security(("token" = [])),
    params(("Idempotency-Key" = Option<String>, Header, description = "1 to 255 characters; a retry with the same key answers the same run.")),
    request_body = CreateAnalysis,
    responses(
        (status = 202, description = "Stored and queued (or already known).", body = Accepted,
            headers(("Location" = String, description = "The analysis: /api/v1/analyses/{run_id}."))),
        (status = 400, description = "Malformed body, both or neither of `log` and `log_url`, a bad field or header."),
        (status = 403, description = "The token's role may not submit, or the repository or job is outside the allow-list."),
        (status = 413, description = "The body is over FAULTLINE_MAX_BODY_BYTES."),
        (status = 415, description = "The body is not `application/json`."),
    ),
)]
pub async fn create(
    Ingester(caller): Ingester,
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Json<CreateAnalysis>, JsonRejection>,
) -> Result<Response, AppError> {
    let Json(req) = body?;
    check_fields(&req)?;
    check_allowed(&state.allowed, &req)?;
    let (log, log_url) = log_or_url(req.log, req.log_url)?;
    let build = req.build.map(|b| b.0);
    let log_sha256 = hex(&Sha256::digest(log.as_bytes()));
    // What was submitted, so a key's other users can be told apart.
    let submission = hex(&Sha256::digest(
        json!([
            log_sha256,
            log_url,
            req.job,
            build,
            req.test,
            req.repository,
            req.commit
        ])
        .to_string()
        .as_bytes(),
    ));
    let key = header_str(&headers, "idempotency-key")
        .map(check_idempotency_key)
        .transpose()?;
    let dedup_key = match key {
        Some(key) => format!("api:{key}"),
        // Without a key, only the identical submission is the same analysis:
        // the same log under another job, build or repository is not, and no
        // caller gets a run made for other metadata.
        None => format!("api:submission:{submission}"),
    };
    let mut event = NewEvent {
        dedup_key,
        source: "api".into(),
        job_name: req.job,
        build_number: build,
        test_name: req.test,
        repository: req.repository,
        commit_sha: req.commit,
        payload: json!({"api": {
            "log_url": log_url,
            "submitted_by": caller.name,
            "submission_sha256": submission,
        }}),
        ..NewEvent::default()
    };
    let ingested = ingest(&state, &event, log.as_bytes()).await?;
    let Some(key) = key.filter(|_| !ingested.created) else {
        return Ok(stored(&event, ingested));
    };
    // An idempotency key is its token's own: the run another token made under
    // the same key is answered only for the identical submission. Otherwise
    // this token gets its own event under a key scoped to it, so no token can
    // claim a key another will use and hand it the wrong run.
    let theirs = events::payload(&state.pool, ingested.event_id)
        .await?
        .unwrap_or_default();
    let same_caller = theirs["api"]["submitted_by"] == caller.name.as_str();
    let same_submission = theirs["api"]["submission_sha256"] == submission.as_str();
    if same_caller || same_submission {
        return Ok(stored(&event, ingested));
    }
    event.dedup_key = format!("api:token:{}:{key}", caller.id);
    store(&state, &event, log.as_bytes()).await
}

/// The submitted log, or the URL to fetch it from: exactly one of them.
fn log_or_url(
    log: Option<String>,
    url: Option<String>,
) -> Result<(String, Option<String>), AppError> {
    let bad = |detail: &str| Err(AppError::bad_request("invalid request body", detail));
    match (log, url) {
        (Some(_), Some(_)) => bad("send either `log` or `log_url`, not both"),
        (None, None) => bad("missing field `log` (or `log_url`)"),
        (Some(log), None) if log.is_empty() => bad("log: is empty"),
        (log, url) => Ok((log.unwrap_or_default(), url.map(check_url).transpose()?)),
    }
}

/// Refuses a field with a NUL character (Postgres text cannot hold one; the
/// request is refused, not altered) or longer than its column's index allows.
fn check_fields(req: &CreateAnalysis) -> Result<(), AppError> {
    use faultline_producer::payload::{MAX_NAME, MAX_URL, check_opt};
    check_opt("job", req.job.as_deref(), MAX_NAME)?;
    check_opt("test", req.test.as_deref(), MAX_NAME)?;
    check_opt("build", req.build.as_ref().map(|b| b.0.as_str()), 255)?;
    check_opt("repository", req.repository.as_deref(), MAX_URL)?;
    check_opt("commit", req.commit.as_deref(), 255)?;
    check_opt("log_url", req.log_url.as_deref(), MAX_URL)?;
    Ok(())
}

/// Refuses (403, naming the field) a submission whose repository or job is
/// outside the operator's allow-list: the worker would read it with its own
/// credentials. Unset lists allow anything.
fn check_allowed(allowed: &AllowList, req: &CreateAnalysis) -> Result<(), AppError> {
    if let Some(repository) = &req.repository {
        allowed
            .check_repository(repository)
            .map_err(|why| AppError::Forbidden(format!("repository: {why}")))?;
    }
    if let Some(job) = &req.job {
        allowed
            .check_job(job)
            .map_err(|why| AppError::Forbidden(format!("job: {why}")))?;
    }
    Ok(())
}

/// A log URL must be absolute http(s): the worker fetches it later.
fn check_url(url: String) -> Result<String, AppError> {
    let ok = url
        .parse::<Uri>()
        .is_ok_and(|u| matches!(u.scheme_str(), Some("http" | "https")) && u.authority().is_some());
    if ok {
        Ok(url)
    } else {
        Err(AppError::bad_request(
            "invalid request body",
            format!("log_url: {url:?} is not an absolute http(s) URL"),
        ))
    }
}

fn check_idempotency_key(key: &str) -> Result<&str, AppError> {
    let key = key.trim();
    if key.is_empty() || key.len() > MAX_IDEMPOTENCY_KEY {
        return Err(AppError::bad_request(
            "invalid header",
            format!("Idempotency-Key must be 1..={MAX_IDEMPOTENCY_KEY} characters"),
        ));
    }
    Ok(key)
}

/// One analysis: its status and result, the event it analyses, its review
/// item if it has one, and the run's own record.
#[derive(Debug, Serialize, ToSchema)]
pub struct Analysis {
    id: Uuid,
    status: RunStatus,
    /// The verdict (category, confidence, root cause, fix, evidence, …) once
    /// the run has one; docs/usage.md lists its fields.
    result: Option<Value>,
    review: Option<review::ReviewRow>,
    event: Option<events::EventRow>,
    run: runs::RunRow,
}

/// The path parameter of one analysis.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct AnalysisId {
    /// The analysis (run) id, as `POST /api/v1/analyses` answered it.
    #[allow(dead_code)]
    id: Uuid,
}

/// Reads one analysis: status, result, event and review item.
#[utoipa::path(
    get,
    operation_id = "get_analysis",
    path = "/api/v1/analyses/{id}",
    tag = "analyses",
    security(("token" = [])),
    params(AnalysisId),
    responses(
        (status = 200, description = "The analysis.", body = Analysis),
        (status = 400, description = "The id is not a UUID."),
        (status = 403, description = "The token's role may not read analyses."),
        (status = 404, description = "No such analysis."),
    ),
)]
pub async fn get(
    _: Reader,
    State(state): State<AppState>,
    id: Result<Path<Uuid>, PathRejection>,
) -> Result<Json<Analysis>, AppError> {
    let Path(id) = id?;
    let run = find_run(&state, id).await?;
    let event = events::get(&state.pool, run.event_id).await?;
    let review = review::for_run(&state.pool, id).await?;
    Ok(Json(Analysis {
        id: run.id,
        status: run.status,
        result: run.result.clone(),
        review,
        event,
        run,
    }))
}

/// Every journaled iteration of an analysis and every failed attempt.
#[derive(Debug, Serialize, ToSchema)]
pub struct Trace {
    id: Uuid,
    status: RunStatus,
    steps: Vec<steps::StepRow>,
    failed_attempts: Vec<steps::AttemptRow>,
}

/// Reads an analysis' trace: every journaled iteration (thought, tool
/// call, observation) and every failed attempt.
#[utoipa::path(
    get,
    operation_id = "get_trace",
    path = "/api/v1/analyses/{id}/trace",
    tag = "analyses",
    security(("token" = [])),
    params(AnalysisId),
    responses(
        (status = 200, description = "The trace.", body = Trace),
        (status = 400, description = "The id is not a UUID."),
        (status = 403, description = "The token's role may not read analyses."),
        (status = 404, description = "No such analysis."),
    ),
)]
pub async fn trace(
    _: Reader,
    State(state): State<AppState>,
    id: Result<Path<Uuid>, PathRejection>,
) -> Result<Json<Trace>, AppError> {
    let Path(id) = id?;
    let run = find_run(&state, id).await?;
    let journal = steps::list(&state.pool, id).await?;
    let attempts = steps::list_attempts(&state.pool, id).await?;
    Ok(Json(Trace {
        id: run.id,
        status: run.status,
        steps: journal,
        failed_attempts: attempts,
    }))
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// Where to resume when the client cannot send `Last-Event-ID`: an
    /// iteration number, or `verdict`.
    last_event_id: Option<String>,
}

/// `GET /api/v1/analyses/{id}/events`: server-sent events, one `iteration`
/// per committed iteration (id: its number; data: the journal row as JSON)
/// and one `verdict` (id `verdict`) when the run is terminal; resumable
/// with `Last-Event-ID` (or `?last_event_id=`); after `verdict`: 204, which
/// stops an EventSource. Fed by the commits' notifications (LISTEN/NOTIFY),
/// not by polling.
#[utoipa::path(
    get,
    operation_id = "stream_events",
    path = "/api/v1/analyses/{id}/events",
    tag = "analyses",
    security(("token" = [])),
    params(
        AnalysisId,
        EventsQuery,
        ("Last-Event-ID" = Option<String>, Header, description = "Resume after this event: an iteration number, or `verdict`."),
    ),
    responses(
        (status = 200, description = "Server-sent events: `iteration` (data: a StepRow) per committed iteration, then `verdict`.", content_type = "text/event-stream", body = super::openapi::StreamEvent),
        (status = 204, description = "The `verdict` was already sent: nothing more will come."),
        (status = 400, description = "The id is not a UUID, or the resume point is not an iteration number or `verdict`."),
        (status = 403, description = "The token's role may not read analyses."),
        (status = 404, description = "No such analysis."),
    ),
)]
pub async fn events(
    _: Reader,
    State(state): State<AppState>,
    id: Result<Path<Uuid>, PathRejection>,
    headers: axum::http::HeaderMap,
    query: Result<Query<EventsQuery>, QueryRejection>,
) -> Result<axum::response::Response, AppError> {
    let Path(id) = id?;
    let Query(q) = query?;
    let resume = super::console::live::last_event_id(&headers, q.last_event_id.as_deref())
        .map_err(|e| AppError::bad_request("invalid header", e))?;
    find_run(&state, id).await?;
    if resume == super::console::live::Resume::Done {
        // Everything was sent; 204 tells an EventSource to stop reconnecting.
        return Ok(axum::response::IntoResponse::into_response(
            axum::http::StatusCode::NO_CONTENT,
        ));
    }
    let sse = super::console::live::run_events(&state, id, resume, |s| {
        serde_json::to_string(s).unwrap_or_default()
    })
    .await?;
    Ok(axum::response::IntoResponse::into_response(sse))
}

async fn find_run(state: &AppState, id: Uuid) -> Result<runs::RunRow, AppError> {
    runs::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("analysis {id} not found")))
}

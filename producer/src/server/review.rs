//! `/api/v1/review/...`: the review queue over HTTP, for tokens with role
//! `reviewer` (or `admin`). The token's name is who the audit trail records;
//! only the claimant may close an item, an admin may close any.
//!
//! | request | does |
//! |---|---|
//! | `GET /api/v1/review?status=&category=&min_confidence=&max_confidence=&older_than=&newer_than=&job=&repository=&limit=` | list |
//! | `POST /api/v1/review/claim` (body: the same filters, optional) | claim the oldest matching open item |
//! | `POST /api/v1/review/{id}/claim` | claim one item |
//! | `POST /api/v1/review/{id}/resolve` `{"action": "accept" \| "correct", "category", "root_cause", "fix", "comment"}` | resolve |
//! | `POST /api/v1/review/{id}/dismiss` `{"comment"}` | dismiss |
//! | `GET /api/v1/review/{id}` | the item, its run's answer and its audit trail |

use axum::{
    Json,
    body::Bytes,
    extract::{
        Path, Query, State,
        rejection::{BytesRejection, JsonRejection, PathRejection, QueryRejection},
    },
};
use faultline_shared::storage::{
    resolution::{self, Decision},
    review::{self, Actor, Filter, ReviewError, Via},
    runs,
};
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{AppState, auth::Reviewer, error::AppError};

/// Filters of a listing or a claim-next (all optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterParams {
    status: Option<String>,
    category: Option<String>,
    min_confidence: Option<f32>,
    max_confidence: Option<f32>,
    older_than: Option<String>,
    newer_than: Option<String>,
    job: Option<String>,
    repository: Option<String>,
    limit: Option<i64>,
}

impl FilterParams {
    fn filter(&self) -> Result<Filter, AppError> {
        Filter::parse(
            self.status.as_deref(),
            self.category.as_deref(),
            self.min_confidence,
            self.max_confidence,
            self.older_than.as_deref(),
            self.newer_than.as_deref(),
        )
        .map(|mut f| {
            let given = |v: &Option<String>| {
                v.as_deref()
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
                    .map(str::to_string)
            };
            f.job = given(&self.job);
            f.repository = given(&self.repository);
            f
        })
        .map_err(|e| AppError::bad_request("invalid filter", e))
    }
}

/// An optional JSON body: empty means all defaults.
fn optional_json<T: Default + serde::de::DeserializeOwned>(body: &Bytes) -> Result<T, AppError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    Ok(Json::<T>::from_bytes(body)?.0)
}

fn actor(caller: &Reviewer) -> Actor {
    Actor {
        name: caller.0.name.clone(),
        via: Via::Api,
        admin: caller.is_admin(),
    }
}

impl From<ReviewError> for AppError {
    fn from(e: ReviewError) -> Self {
        match e {
            ReviewError::NotFound(_) => AppError::NotFound(e.to_string()),
            ReviewError::Invalid(detail) => AppError::bad_request("invalid request body", detail),
            ReviewError::Database(db) => db.into(),
            other => AppError::Conflict(other.to_string()),
        }
    }
}

pub async fn list(
    _: Reviewer,
    State(state): State<AppState>,
    params: Result<Query<FilterParams>, QueryRejection>,
) -> Result<Json<Value>, AppError> {
    let Query(params) = params?;
    let limit = params.limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(AppError::bad_request(
            "invalid filter",
            format!("limit: {limit} is outside 1..=1000"),
        ));
    }
    let items = review::list(&state.pool, &params.filter()?, limit).await?;
    Ok(Json(json!({"items": items})))
}

pub async fn claim_next(
    caller: Reviewer,
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, AppError> {
    let params: FilterParams = optional_json(&body?)?;
    let item = review::claim_next(
        &state.pool,
        &actor(&caller),
        state.review_claim_ttl,
        &params.filter()?,
    )
    .await?
    .ok_or_else(|| AppError::NotFound("no open review item matches".into()))?;
    Ok(Json(json!({"item": item})))
}

pub async fn claim(
    caller: Reviewer,
    State(state): State<AppState>,
    id: Result<Path<Uuid>, PathRejection>,
) -> Result<Json<Value>, AppError> {
    let Path(id) = id?;
    let item = review::claim(&state.pool, id, &actor(&caller), state.review_claim_ttl).await?;
    Ok(Json(json!({"item": item})))
}

/// `POST /api/v1/review/{id}/resolve` body. `action` defaults to `correct`
/// when a field is given, else `accept`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResolveBody {
    action: Option<String>,
    category: Option<String>,
    root_cause: Option<String>,
    fix: Option<String>,
    comment: Option<String>,
}

pub async fn resolve(
    caller: Reviewer,
    State(state): State<AppState>,
    id: Result<Path<Uuid>, PathRejection>,
    body: Result<Json<ResolveBody>, JsonRejection>,
) -> Result<Json<Value>, AppError> {
    let Path(id) = id?;
    let Json(body) = body?;
    let given = body.category.is_some() || body.root_cause.is_some() || body.fix.is_some();
    let accept = match body.action.as_deref() {
        None => !given,
        Some("accept") => true,
        Some("correct") => false,
        Some(other) => {
            return Err(AppError::bad_request(
                "invalid request body",
                format!("action: {other:?} is not \"accept\" or \"correct\""),
            ));
        }
    };
    let decision = Decision {
        accept,
        category: body.category,
        root_cause: body.root_cause,
        fix: body.fix,
        comment: body.comment,
    };
    let resolved = resolution::resolve(&state.pool, id, &actor(&caller), &decision).await?;
    Ok(Json(json!(resolved)))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DismissBody {
    comment: Option<String>,
}

pub async fn dismiss(
    caller: Reviewer,
    State(state): State<AppState>,
    id: Result<Path<Uuid>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, AppError> {
    let Path(id) = id?;
    let body: DismissBody = optional_json(&body?)?;
    let item =
        resolution::dismiss(&state.pool, id, &actor(&caller), body.comment.as_deref()).await?;
    Ok(Json(json!({"item": item})))
}

pub async fn show(
    _: Reviewer,
    State(state): State<AppState>,
    id: Result<Path<Uuid>, PathRejection>,
) -> Result<Json<Value>, AppError> {
    let Path(id) = id?;
    let mut conn = state.pool.acquire().await?;
    let item = review::get(&mut conn, id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("review item {id} not found")))?;
    drop(conn);
    let run = runs::get(&state.pool, item.run_id).await?;
    let audit = review::audit(&state.pool, id).await?;
    Ok(Json(json!({
        "item": item,
        "result": run.as_ref().and_then(|r| r.result.clone()),
        "fingerprint": run.and_then(|r| r.fingerprint),
        "audit": audit,
    })))
}

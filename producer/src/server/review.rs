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
    resolution::{self, Decision, Resolved},
    review::{self, Actor, AuditRow, Filter, ReviewError, ReviewRow, Via},
    runs,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::{AppState, auth::Reviewer, error::AppError};

/// Filters of a listing or a claim-next (all optional).
#[derive(Debug, Default, Deserialize, IntoParams, ToSchema)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct FilterParams {
    /// Comma-separated statuses (`open`, `claimed`, `resolved`, `dismissed`); default `open,claimed`.
    status: Option<String>,
    /// Comma-separated categories (`CODE_ERROR`, …).
    category: Option<String>,
    #[schema(minimum = 0.0, maximum = 1.0)]
    #[param(minimum = 0.0, maximum = 1.0)]
    min_confidence: Option<f32>,
    #[schema(minimum = 0.0, maximum = 1.0)]
    #[param(minimum = 0.0, maximum = 1.0)]
    max_confidence: Option<f32>,
    /// Only items at least this old: a duration such as `30m`, `12h` or `7d`.
    older_than: Option<String>,
    /// Only items at most this old (same form as `older_than`).
    newer_than: Option<String>,
    /// The job's name, exactly.
    job: Option<String>,
    /// The repository, exactly.
    repository: Option<String>,
    /// At most this many items (default 100; listing only).
    #[schema(minimum = 1, maximum = 1000)]
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<i64>,
}

/// The path parameter of one review item.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ItemId {
    /// The review item's id.
    #[allow(dead_code)]
    id: Uuid,
}

/// A listing of review items.
#[derive(Debug, Serialize, ToSchema)]
pub struct Items {
    items: Vec<ReviewRow>,
}

/// One review item, as it is after the request.
#[derive(Debug, Serialize, ToSchema)]
pub struct Item {
    item: ReviewRow,
}

/// One review item with its run's answer and its audit trail.
#[derive(Debug, Serialize, ToSchema)]
pub struct ItemDetail {
    item: ReviewRow,
    /// The run's verdict, as `GET /api/v1/analyses/{id}` shows it.
    result: Option<Value>,
    fingerprint: Option<String>,
    audit: Vec<AuditRow>,
}

/// A parameter's value; blank is no value (as a form's empty field).
fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

impl FilterParams {
    /// The filter; a blank value is no filter.
    fn filter(&self) -> Result<Filter, AppError> {
        Filter::parse(
            given(&self.status),
            given(&self.category),
            self.min_confidence,
            self.max_confidence,
            given(&self.older_than),
            given(&self.newer_than),
        )
        .and_then(|f| f.matching(self.job.as_deref(), self.repository.as_deref()))
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

/// Postgres text cannot hold a NUL character: a field with one is refused,
/// naming it, rather than failing the statement.
fn no_nul(fields: &[(&str, &Option<String>)]) -> Result<(), AppError> {
    match fields
        .iter()
        .find(|(_, v)| v.as_deref().is_some_and(|v| v.contains('\0')))
    {
        Some((name, _)) => Err(AppError::bad_request(
            "invalid request body",
            format!("{name}: contains a NUL character"),
        )),
        None => Ok(()),
    }
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

/// Lists review items matching the filters, oldest first.
#[utoipa::path(
    get,
    operation_id = "list_review_items",
    path = "/api/v1/review",
    tag = "review",
    security(("token" = [])),
    params(FilterParams),
    responses(
        (status = 200, description = "The matching items.", body = Items),
        (status = 400, description = "A filter that does not parse, or an unknown parameter."),
        (status = 403, description = "The token's role may not review."),
    ),
)]
pub async fn list(
    _: Reviewer,
    State(state): State<AppState>,
    params: Result<Query<FilterParams>, QueryRejection>,
) -> Result<Json<Items>, AppError> {
    let Query(params) = params?;
    let limit = params.limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(AppError::bad_request(
            "invalid filter",
            format!("limit: {limit} is outside 1..=1000"),
        ));
    }
    let items = review::list(&state.pool, &params.filter()?, limit).await?;
    Ok(Json(Items { items }))
}

/// Claims the oldest open item matching the filters (the body, optional;
/// `limit` is ignored).
#[utoipa::path(
    post,
    operation_id = "claim_next_review_item",
    path = "/api/v1/review/claim",
    tag = "review",
    security(("token" = [])),
    request_body(content = Option<FilterParams>, description = "Filters; an empty body matches every open item."),
    responses(
        (status = 200, description = "The claimed item.", body = Item),
        (status = 400, description = "A filter that does not parse, or an unknown field."),
        (status = 403, description = "The token's role may not review."),
        (status = 404, description = "No open item matches."),
    ),
)]
pub async fn claim_next(
    caller: Reviewer,
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Item>, AppError> {
    let params: FilterParams = optional_json(&body?)?;
    let item = review::claim_next(
        &state.pool,
        &actor(&caller),
        state.review_claim_ttl,
        &params.filter()?,
    )
    .await?
    .ok_or_else(|| AppError::NotFound("no open review item matches".into()))?;
    Ok(Json(Item { item }))
}

/// Claims one item (for FAULTLINE_REVIEW_CLAIM_TTL; claiming it again renews).
#[utoipa::path(
    post,
    operation_id = "claim_review_item",
    path = "/api/v1/review/{id}/claim",
    tag = "review",
    security(("token" = [])),
    params(ItemId),
    responses(
        (status = 200, description = "The claimed item.", body = Item),
        (status = 400, description = "The id is not a UUID."),
        (status = 403, description = "The token's role may not review."),
        (status = 404, description = "No such item."),
        (status = 409, description = "Claimed by someone else, or already closed."),
    ),
)]
pub async fn claim(
    caller: Reviewer,
    State(state): State<AppState>,
    id: Result<Path<Uuid>, PathRejection>,
) -> Result<Json<Item>, AppError> {
    let Path(id) = id?;
    let item = review::claim(&state.pool, id, &actor(&caller), state.review_claim_ttl).await?;
    Ok(Json(Item { item }))
}

/// `POST /api/v1/review/{id}/resolve` body. `action` defaults to `correct`
/// when a field is given, else `accept`.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResolveAction {
    Accept,
    Correct,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveBody {
    /// `accept` (the answer stands) or `correct` (the fields below replace
    /// it); default `correct` when a field is given, else `accept`.
    action: Option<ResolveAction>,
    /// The corrected category (`CODE_ERROR`, …).
    category: Option<String>,
    root_cause: Option<String>,
    fix: Option<String>,
    comment: Option<String>,
}

/// Resolves a claimed item: accepts the answer or corrects it (a
/// correction with a fingerprint teaches the error library).
#[utoipa::path(
    post,
    operation_id = "resolve_review_item",
    path = "/api/v1/review/{id}/resolve",
    tag = "review",
    security(("token" = [])),
    params(ItemId),
    request_body = ResolveBody,
    responses(
        (status = 200, description = "The resolved item, and the error-library entry it made.", body = Resolved),
        (status = 400, description = "Malformed body, an unknown action or category."),
        (status = 403, description = "The token's role may not review."),
        (status = 404, description = "No such item."),
        (status = 409, description = "Not claimed by this token (an admin may close any), the claim expired, or already closed."),
        (status = 415, description = "The body is not `application/json`."),
    ),
)]
pub async fn resolve(
    caller: Reviewer,
    State(state): State<AppState>,
    id: Result<Path<Uuid>, PathRejection>,
    body: Result<Json<ResolveBody>, JsonRejection>,
) -> Result<Json<Resolved>, AppError> {
    let Path(id) = id?;
    let Json(body) = body?;
    no_nul(&[
        ("category", &body.category),
        ("root_cause", &body.root_cause),
        ("fix", &body.fix),
        ("comment", &body.comment),
    ])?;
    let given = body.category.is_some() || body.root_cause.is_some() || body.fix.is_some();
    let accept = match body.action {
        None => !given,
        Some(ResolveAction::Accept) => true,
        Some(ResolveAction::Correct) => false,
    };
    let decision = Decision {
        accept,
        category: body.category,
        root_cause: body.root_cause,
        fix: body.fix,
        comment: body.comment,
    };
    let resolved = resolution::resolve(&state.pool, id, &actor(&caller), &decision).await?;
    Ok(Json(resolved))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DismissBody {
    comment: Option<String>,
}

/// Dismisses a claimed item (not a failure worth an answer).
#[utoipa::path(
    post,
    operation_id = "dismiss_review_item",
    path = "/api/v1/review/{id}/dismiss",
    tag = "review",
    security(("token" = [])),
    params(ItemId),
    request_body(content = Option<DismissBody>, description = "An optional comment; the body may be empty."),
    responses(
        (status = 200, description = "The dismissed item.", body = Item),
        (status = 400, description = "Malformed body or an unknown field."),
        (status = 403, description = "The token's role may not review."),
        (status = 404, description = "No such item."),
        (status = 409, description = "Not claimed by this token (an admin may close any), the claim expired, or already closed."),
    ),
)]
pub async fn dismiss(
    caller: Reviewer,
    State(state): State<AppState>,
    id: Result<Path<Uuid>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Item>, AppError> {
    let Path(id) = id?;
    let body: DismissBody = optional_json(&body?)?;
    no_nul(&[("comment", &body.comment)])?;
    let item =
        resolution::dismiss(&state.pool, id, &actor(&caller), body.comment.as_deref()).await?;
    Ok(Json(Item { item }))
}

/// Reads one item with its run's answer and its audit trail.
#[utoipa::path(
    get,
    operation_id = "get_review_item",
    path = "/api/v1/review/{id}",
    tag = "review",
    security(("token" = [])),
    params(ItemId),
    responses(
        (status = 200, description = "The item.", body = ItemDetail),
        (status = 400, description = "The id is not a UUID."),
        (status = 403, description = "The token's role may not review."),
        (status = 404, description = "No such item."),
    ),
)]
pub async fn show(
    _: Reviewer,
    State(state): State<AppState>,
    id: Result<Path<Uuid>, PathRejection>,
) -> Result<Json<ItemDetail>, AppError> {
    let Path(id) = id?;
    let mut conn = state.pool.acquire().await?;
    let item = review::get(&mut conn, id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("review item {id} not found")))?;
    drop(conn);
    let run = runs::get(&state.pool, item.run_id).await?;
    let audit = review::audit(&state.pool, id).await?;
    Ok(Json(ItemDetail {
        item,
        result: run.as_ref().and_then(|r| r.result.clone()),
        fingerprint: run.and_then(|r| r.fingerprint),
        audit,
    }))
}

//! The one error type of every handler. Its body is always an RFC 9457
//! problem (`application/problem+json`, [`Problem`]): `type` (a URN naming
//! the kind of problem, `urn:faultline:problem:<slug>`), `title` (the same
//! for every problem of that type), `status`, `detail` (this occurrence:
//! where and why) and `field` (the request field, parameter or header at
//! fault, when one is).

use axum::{
    Json,
    extract::rejection::{BytesRejection, JsonRejection, PathRejection, QueryRejection},
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use faultline_producer::payload::PayloadError;
use serde::Serialize;

/// The media type of every error body (RFC 9457).
pub const PROBLEM_JSON: &str = "application/problem+json";

/// An error body (RFC 9457 problem details).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(example = json!({
    "type": "urn:faultline:problem:invalid-request-body",
    "title": "invalid request body",
    "status": 400,
    "detail": "log_url: \"ftp://x\" is not an absolute http(s) URL",
    "field": "log_url"
}))]
pub struct Problem {
    /// What kind of problem: `urn:faultline:problem:<slug>` (docs/usage.md lists them).
    #[serde(rename = "type")]
    pub kind: String,
    /// A short summary of the kind of problem; the same for every occurrence.
    pub title: String,
    /// The HTTP status code.
    pub status: u16,
    /// This occurrence: what was wrong, and where.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The request field (a JSON path such as `build.number`), query or path
    /// parameter, or header at fault.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// 400: the request is malformed; `detail` names the field or position.
    #[error("{error}")]
    BadRequest { error: &'static str, detail: String },
    /// 401: no credential, or not a valid one.
    #[error("unauthorized")]
    Unauthorized(&'static str),
    /// 403: a valid token whose role does not allow this.
    #[error("forbidden")]
    Forbidden(String),
    /// 404.
    #[error("{0}")]
    NotFound(String),
    /// 409: the resource is in a state that refuses this (claimed by someone
    /// else, claim expired, already closed).
    #[error("conflict")]
    Conflict(String),
    /// 405: the path exists, the method does not.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// 413: the body is larger than `FAULTLINE_MAX_BODY_BYTES`.
    #[error("request body too large")]
    PayloadTooLarge(String),
    /// 408: the body stopped arriving (`FAULTLINE_BODY_READ_TIMEOUT`).
    #[error("request timeout")]
    RequestTimeout(String),
    /// 429: too many wrong tokens from this client; retry after the duration.
    #[error("too many failed authentication attempts")]
    TooManyAttempts(std::time::Duration),
    /// 415: the body is not `application/json`.
    #[error("unsupported content type")]
    UnsupportedMediaType(String),
    /// 503: the endpoint needs a secret that is not configured.
    #[error("{0} is not configured")]
    NotConfigured(&'static str),
    /// 503: a dependency (the database) does not answer.
    #[error("unavailable")]
    Unavailable(String),
    /// 500: logged in full; the caller only learns that it happened.
    #[error("internal error")]
    Internal(anyhow::Error),
}

impl From<anyhow::Error> for AppError {
    fn from(e: anyhow::Error) -> Self {
        AppError::Internal(e)
    }
}

impl AppError {
    pub fn bad_request(error: &'static str, detail: impl Into<String>) -> Self {
        AppError::BadRequest {
            error,
            detail: detail.into(),
        }
    }

    fn status(&self) -> StatusCode {
        match self {
            AppError::BadRequest { .. } => StatusCode::BAD_REQUEST,
            AppError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            AppError::Forbidden(_) => StatusCode::FORBIDDEN,
            AppError::NotFound(_) => StatusCode::NOT_FOUND,
            AppError::Conflict(_) => StatusCode::CONFLICT,
            AppError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            AppError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            AppError::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            AppError::TooManyAttempts(_) => StatusCode::TOO_MANY_REQUESTS,
            AppError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            AppError::NotConfigured(_) | AppError::Unavailable(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            AppError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The problem type's slug and title (the same for every occurrence).
    fn kind(&self) -> (String, &'static str) {
        let title = match self {
            AppError::BadRequest { error, .. } => error,
            AppError::Unauthorized(_) => "unauthorized",
            AppError::Forbidden(_) => "forbidden",
            AppError::NotFound(_) => "not found",
            AppError::Conflict(_) => "conflict",
            AppError::MethodNotAllowed => "method not allowed",
            AppError::PayloadTooLarge(_) => "request body too large",
            AppError::RequestTimeout(_) => "request timeout",
            AppError::TooManyAttempts(_) => "too many failed authentication attempts",
            AppError::UnsupportedMediaType(_) => "unsupported content type",
            AppError::NotConfigured(_) => "not configured",
            AppError::Unavailable(_) => "unavailable",
            AppError::Internal(_) => "internal error",
        };
        (title.replace(' ', "-").to_lowercase(), title)
    }

    fn detail(&self) -> Option<String> {
        match self {
            AppError::BadRequest { detail, .. }
            | AppError::PayloadTooLarge(detail)
            | AppError::RequestTimeout(detail)
            | AppError::UnsupportedMediaType(detail)
            | AppError::Forbidden(detail)
            | AppError::Conflict(detail)
            | AppError::NotFound(detail)
            | AppError::Unavailable(detail) => Some(detail.clone()),
            AppError::Unauthorized(why) => Some((*why).to_string()),
            AppError::TooManyAttempts(wait) => {
                Some(format!("retry in {}s", retry_after_secs(*wait)))
            }
            AppError::NotConfigured(_) => Some(self.to_string()),
            AppError::MethodNotAllowed | AppError::Internal(_) => None,
        }
    }

    /// The problem this error is, as the client reads it.
    pub fn problem(&self) -> Problem {
        let (slug, title) = self.kind();
        let detail = self.detail();
        let field = match self {
            AppError::BadRequest {
                error: "missing header",
                detail,
            } => Some(detail.clone()),
            AppError::BadRequest { .. } | AppError::Forbidden(_) => {
                detail.as_deref().and_then(field_of)
            }
            _ => None,
        };
        Problem {
            kind: format!("urn:faultline:problem:{slug}"),
            title: title.to_string(),
            status: self.status().as_u16(),
            detail,
            field,
        }
    }
}

/// The field a detail names: serde's `path.to[0].field: message` and
/// `missing field `x``/`unknown field `x``, and this server's own
/// `field: message`.
fn field_of(detail: &str) -> Option<String> {
    for marker in ["missing field `", "unknown field `"] {
        if let Some(at) = detail.find(marker) {
            let rest = &detail[at + marker.len()..];
            return rest.split('`').next().map(str::to_string);
        }
    }
    let (head, _) = detail.split_once(": ")?;
    let path_like = !head.is_empty()
        && head.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && head
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']' | '-'));
    path_like.then(|| head.to_string())
}

impl From<sqlx::Error> for AppError {
    fn from(e: sqlx::Error) -> Self {
        AppError::Internal(anyhow::Error::new(e).context("database error"))
    }
}

impl From<JsonRejection> for AppError {
    fn from(rejection: JsonRejection) -> Self {
        match rejection {
            JsonRejection::MissingJsonContentType(r) => {
                AppError::UnsupportedMediaType(r.body_text())
            }
            JsonRejection::JsonDataError(r) => AppError::bad_request(
                "invalid request body",
                strip_prefix(
                    r.body_text(),
                    "Failed to deserialize the JSON body into the target type: ",
                ),
            ),
            JsonRejection::JsonSyntaxError(r) => AppError::bad_request(
                "malformed JSON",
                strip_prefix(r.body_text(), "Failed to parse the request body as JSON: "),
            ),
            JsonRejection::BytesRejection(r) => r.into(),
            other => AppError::bad_request("invalid request body", other.body_text()),
        }
    }
}

impl From<PayloadError> for AppError {
    fn from(e: PayloadError) -> Self {
        match e {
            PayloadError::Syntax(detail) => AppError::bad_request("malformed JSON", detail),
            other => AppError::bad_request("invalid request body", other.to_string()),
        }
    }
}

impl From<BytesRejection> for AppError {
    fn from(rejection: BytesRejection) -> Self {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            AppError::PayloadTooLarge(rejection.body_text())
        } else if timed_out(&rejection) {
            AppError::RequestTimeout("the request body stopped arriving".into())
        } else {
            AppError::bad_request("unreadable request body", rejection.body_text())
        }
    }
}

impl From<QueryRejection> for AppError {
    fn from(rejection: QueryRejection) -> Self {
        AppError::bad_request(
            "invalid query parameter",
            strip_prefix(
                rejection.body_text(),
                "Failed to deserialize query string: ",
            ),
        )
    }
}

impl From<PathRejection> for AppError {
    fn from(rejection: PathRejection) -> Self {
        AppError::bad_request("invalid path parameter", rejection.body_text())
    }
}

/// Whole seconds to wait, rounded up (never 0).
fn retry_after_secs(wait: std::time::Duration) -> u64 {
    wait.as_secs_f64().ceil().max(1.0) as u64
}

/// True when reading the body failed because `RequestBodyTimeoutLayer` gave up.
fn timed_out(rejection: &BytesRejection) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(rejection);
    while let Some(e) = cause {
        if e.is::<tower_http::timeout::TimeoutError>() {
            return true;
        }
        cause = e.source();
    }
    false
}

/// Keeps serde's own message (`build.number: invalid type … at line 1 column 40`).
fn strip_prefix(text: String, prefix: &str) -> String {
    text.strip_prefix(prefix)
        .map(str::to_string)
        .unwrap_or(text)
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = self.status();
        if let AppError::Internal(e) = &self {
            tracing::error!(error = format!("{e:#}"), "request failed");
        }
        let mut response = (status, Json(self.problem())).into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        if let AppError::TooManyAttempts(wait) = self {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, retry_after_secs(wait).into());
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_at_fault_is_read_from_the_detail() {
        assert_eq!(
            field_of(
                "build.number: invalid type: map, expected a build number at line 1 column 20"
            )
            .as_deref(),
            Some("build.number")
        );
        assert_eq!(
            field_of("missing field `log` (or `log_url`)").as_deref(),
            Some("log")
        );
        assert_eq!(
            field_of("unknown field `lgo`, expected one of `log`, `log_url`").as_deref(),
            Some("lgo")
        );
        assert_eq!(
            field_of("limit: 0 is outside 1..=1000").as_deref(),
            Some("limit")
        );
        assert_eq!(field_of("send either `log` or `log_url`, not both"), None);
        assert_eq!(field_of("expected value at line 1 column 1"), None);
    }

    #[test]
    fn every_error_is_a_problem_with_a_constant_title_per_type() {
        let p = AppError::NotFound("analysis 1 not found".into()).problem();
        assert_eq!(p.kind, "urn:faultline:problem:not-found");
        assert_eq!((p.title.as_str(), p.status), ("not found", 404));
        assert_eq!(p.detail.as_deref(), Some("analysis 1 not found"));
        let p = AppError::bad_request("missing header", "X-GitHub-Event").problem();
        assert_eq!(p.field.as_deref(), Some("X-GitHub-Event"));
        let p = AppError::NotConfigured("GITHUB_WEBHOOK_SECRET").problem();
        assert_eq!(p.title, "not configured");
        assert_eq!(
            p.detail.as_deref(),
            Some("GITHUB_WEBHOOK_SECRET is not configured")
        );
        let json = serde_json::to_value(AppError::MethodNotAllowed.problem()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"type": "urn:faultline:problem:method-not-allowed", "title": "method not allowed", "status": 405})
        );
    }
}

//! The one error type of every handler. Its body is always JSON:
//! `{"error": "<what went wrong>", "detail": <where / why, or null>}`.

use axum::{
    Json,
    extract::rejection::{BytesRejection, JsonRejection, PathRejection, QueryRejection},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use faultline_producer::payload::PayloadError;
use serde_json::{Value, json};

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

    fn detail(&self) -> Value {
        match self {
            AppError::BadRequest { detail, .. }
            | AppError::PayloadTooLarge(detail)
            | AppError::RequestTimeout(detail)
            | AppError::UnsupportedMediaType(detail)
            | AppError::Forbidden(detail)
            | AppError::Conflict(detail)
            | AppError::Unavailable(detail) => Value::String(detail.clone()),
            AppError::Unauthorized(why) => Value::String((*why).to_string()),
            AppError::TooManyAttempts(wait) => {
                Value::String(format!("retry in {}s", retry_after_secs(*wait)))
            }
            AppError::NotConfigured(_)
            | AppError::NotFound(_)
            | AppError::MethodNotAllowed
            | AppError::Internal(_) => Value::Null,
        }
    }
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
        let body = json!({"error": self.to_string(), "detail": self.detail()});
        let mut response = (status, Json(body)).into_response();
        if let AppError::TooManyAttempts(wait) = self {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, retry_after_secs(wait).into());
        }
        response
    }
}

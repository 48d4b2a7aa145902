//! The worker's small HTTP port (`WORKER_HTTP_ADDR`): liveness, readiness
//! and Prometheus metrics. Workers take work from the queue, not from HTTP,
//! so this port only exists for the orchestrator and the metrics scraper.

use std::{net::SocketAddr, time::Duration};

use axum::{
    Json, Router,
    extract::State,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use faultline_shared::{
    metrics::{self, PrometheusHandle},
    queue::Broker,
    storage::tasks,
};
use serde_json::json;
use sqlx::PgPool;
use tokio::{net::TcpListener, sync::watch};

#[derive(Clone)]
pub struct HttpState {
    pub pool: PgPool,
    /// Where the queue depth gauges are read.
    pub broker: Broker,
    pub metrics: PrometheusHandle,
    /// True once SIGTERM arrived: the worker drains and reports not ready.
    pub shutdown: watch::Receiver<bool>,
}

/// `WORKER_HTTP_ADDR`: where to listen, or `None` for `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpAddr(pub Option<SocketAddr>);

/// Parses `WORKER_HTTP_ADDR`: an address (port 0 picks a free one) or `off`.
pub fn parse_addr(value: &str) -> Result<HttpAddr, String> {
    match value.trim() {
        "off" | "" => Ok(HttpAddr(None)),
        v => v.parse().map(|a| HttpAddr(Some(a))).map_err(|e| {
            format!(
                "WORKER_HTTP_ADDR must be HOST:PORT (e.g. 0.0.0.0:9464) or `off`, got {v:?}: {e}"
            )
        }),
    }
}

pub fn router(state: HttpState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(prometheus))
        .with_state(state)
}

/// Serves `listener` until the process ends (metrics stay scrapeable while
/// the worker drains).
pub async fn serve(listener: TcpListener, state: HttpState) -> std::io::Result<()> {
    axum::serve(listener, router(state)).await
}

/// Liveness: the process answers.
async fn healthz() -> Json<serde_json::Value> {
    Json(json!({"status": "ok"}))
}

/// Readiness: not draining, and the database and the step queue table
/// answer within 2 s (the same read the queue-depth gauge makes).
async fn readyz(State(state): State<HttpState>) -> Response {
    if *state.shutdown.borrow() {
        return unavailable("draining: shutdown requested".into());
    }
    match tokio::time::timeout(Duration::from_secs(2), tasks::queue_depth(&state.pool)).await {
        Ok(Ok(_)) => Json(json!({"status": "ready"})).into_response(),
        Ok(Err(e)) => unavailable(format!("database or queue: {e}")),
        Err(_) => unavailable("database or queue: no answer within 2s".into()),
    }
}

fn unavailable(reason: String) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(json!({"status": "unavailable", "error": reason})),
    )
        .into_response()
}

async fn prometheus(State(state): State<HttpState>) -> Response {
    let body = metrics::render(&state.metrics, &state.pool, &state.broker).await;
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::parse_addr;

    #[test]
    fn http_addr_is_an_address_or_off() {
        assert_eq!(parse_addr("off").unwrap().0, None);
        assert_eq!(
            parse_addr("127.0.0.1:0").unwrap().0,
            Some("127.0.0.1:0".parse().unwrap())
        );
        let err = parse_addr("localhost").unwrap_err();
        assert!(
            err.contains("WORKER_HTTP_ADDR") && err.contains("localhost"),
            "{err}"
        );
    }
}

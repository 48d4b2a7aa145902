//! `faultline serve`: the producer's HTTP server (axum).
//!
//! # Layout
//! - `config` — [`ServerConfig`] (from the library crate), read once at
//!   start; secrets stay `SecretString`s.
//! - `error` — `AppError`, the one error type; every error body is an
//!   RFC 9457 problem (`application/problem+json`).
//! - `openapi` — the OpenAPI 3.1 document (`GET /api/v1/openapi.json`),
//!   derived from the handlers: every non-console route is registered with it.
//! - `auth` — API tokens with roles, the Jenkins shared token.
//! - `github`, `jenkins` — the CI webhooks.
//! - `api` — `/api/v1/analyses`.
//! - `review` — `/api/v1/review/...`: list, claim, resolve, dismiss (audited).
//! - `listen` — the accept loop: head read timeout, connection caps, client address.
//! - `client` — who the client is (trusted proxies), per-client caps.
//! - `body_rate` — the minimum request body rate (408 below).
//! - `throttle` — wrong tokens per client: 429 past the limit.
//! - `console` — the review console under `/ui/` (HTML, sessions, live updates).
//!
//! What a client can make the server hold is bounded: webhook bodies by
//! `FAULTLINE_WEBHOOK_MAX_BODY_BYTES` (other routes by
//! `FAULTLINE_MAX_BODY_BYTES`), heads and bodies by read timeouts and a
//! minimum body rate, a whole request by `FAULTLINE_REQUEST_TIMEOUT`,
//! requests in flight by `FAULTLINE_MAX_IN_FLIGHT` (503 beyond) and
//! `FAULTLINE_MAX_IN_FLIGHT_PER_CLIENT`, connections by
//! `FAULTLINE_MAX_CONNECTIONS` and `FAULTLINE_MAX_CONNECTIONS_PER_CLIENT`.
//! `/healthz` and `/readyz` are outside the in-flight caps, so a load
//! balancer's check still answers while they are full.
//!
//! Every accepted request writes only to Postgres: event + log + run + first
//! step task, in one transaction (`storage::ingest`).

mod api;
mod auth;
mod body_rate;
mod client;
pub mod console;
mod error;
mod github;
mod jenkins;
mod listen;
pub mod openapi;
mod review;
mod throttle;

use std::{future::Future, net::SocketAddr, sync::Arc, time::Duration};

use anyhow::Context;
use axum::{
    BoxError, Extension, Json, Router,
    error_handling::HandleErrorLayer,
    extract::{DefaultBodyLimit, State},
    http::{HeaderMap, StatusCode, header},
    middleware,
    response::{IntoResponse, Response},
};
use faultline_shared::{
    Settings,
    config::{AllowList, Source},
    db,
    queue::{Broker, PRIORITY_LIVE},
    storage::{self, Ingested, events::NewEvent, runs::RunLimits},
};
use sqlx::{Connection, PgPool};
use tokio::net::TcpListener;
use tower::{ServiceBuilder, limit::GlobalConcurrencyLimitLayer, load_shed::LoadShedLayer};
use tower_http::{timeout::RequestBodyTimeoutLayer, trace::TraceLayer};
use utoipa::OpenApi;
use utoipa_axum::{router::OpenApiRouter, routes};

pub use faultline_producer::config;

use self::{config::ServerConfig, error::AppError};

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub pool: PgPool,
    /// Where new runs' first step tasks go.
    pub broker: Broker,
    /// Bounds copied onto every run created here.
    pub limits: RunLimits,
    pub config: Arc<ServerConfig>,
    /// `REVIEW_CLAIM_TTL`: how long a review claim holds.
    pub review_claim_ttl: Duration,
    /// Wrong API or Jenkins tokens per client (429 past the limit).
    pub auth_throttle: Arc<throttle::AuthThrottle>,
    /// `FAULTLINE_ALLOWED_REPOSITORIES` / `_JENKINS_JOBS`: API submissions
    /// outside them are refused (403).
    pub allowed: AllowList,
    /// The console's live updates (one LISTEN per process).
    pub live: Arc<console::live::Hub>,
}

/// Reads the server's settings from `env`, connects, binds, prints
/// `listening on http://ADDR` and serves until SIGTERM or SIGINT.
pub async fn serve(
    env: &Source,
    settings: &Settings,
    broker: Broker,
    bind: Option<SocketAddr>,
) -> anyhow::Result<()> {
    let mut config = ServerConfig::load(env).context("invalid configuration")?;
    if let Some(bind) = bind {
        config.bind = bind;
    }
    if config.github_secret.is_none() {
        tracing::warn!("GITHUB_WEBHOOK_SECRET is not set: /webhooks/github answers 503");
    }
    if config.jenkins_token.is_none() {
        tracing::warn!("JENKINS_WEBHOOK_TOKEN is not set: /webhooks/jenkins answers 503");
    }
    faultline_shared::metrics::install(METRICS_SERVICE);
    let pool = db::connect(settings, config.db_connections).await?;
    let listener = TcpListener::bind(config.bind)
        .await
        .with_context(|| format!("failed to bind {}", config.bind))?;
    let addr = listener.local_addr()?;
    let state = AppState {
        pool: pool.clone(),
        broker,
        limits: RunLimits {
            max_iterations: settings.max_iterations,
            max_attempts: settings.max_attempts,
            priority: PRIORITY_LIVE,
            shadowed: settings.shadow_reasoner.is_some(),
        },
        auth_throttle: Arc::new(throttle::AuthThrottle::new(
            config.auth_max_failures,
            config.auth_failure_window,
        )),
        config: Arc::new(config),
        live: console::live::Hub::start(pool.clone()),
        review_claim_ttl: settings.review_claim_ttl,
        allowed: settings.allowed.clone(),
    };
    println!("listening on http://{addr}");
    tracing::info!(%addr, "serving");
    run(listener, state, shutdown_signal()).await?;
    pool.close().await;
    tracing::info!("stopped");
    Ok(())
}

/// Serves `listener` until `shutdown` resolves, then lets in-flight requests finish.
pub async fn run(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let limits = listen::ConnLimits {
        header_read_timeout: state.config.header_read_timeout,
        max_connections: state.config.max_connections,
        max_connections_per_client: state.config.max_connections_per_client,
        trusted_proxies: Arc::new(state.config.trusted_proxies.clone()),
    };
    // Open event streams end when shutdown starts, so the graceful
    // shutdown waits only for ordinary requests.
    let hub = state.live.clone();
    let shutdown = async move {
        shutdown.await;
        hub.close();
    };
    listen::serve(listener, router(state), limits, shutdown).await;
    Ok(())
}

pub fn router(state: AppState) -> Router {
    let config = state.config.clone();
    let webhook_body = DefaultBodyLimit::max(config.webhook_max_body_bytes);
    let min_body_rate = body_rate::MinBodyRate {
        bytes_per_sec: config.min_body_rate,
        grace: config.min_body_rate_grace,
    };
    // Outermost first: shed what is over the client's in-flight share, then
    // over the global cap, before any work; then bound the whole request,
    // the body's average rate and each wait for the body.
    let guard = ServiceBuilder::new()
        .layer(middleware::from_fn_with_state(
            client::PerClient::new(config.max_in_flight_per_client),
            client::in_flight,
        ))
        // The caps' refusals are problems like every error: the request
        // timeout a 408, a shed request a 503.
        .layer(HandleErrorLayer::new(|e: BoxError| async move {
            if e.is::<tower::timeout::error::Elapsed>() {
                AppError::RequestTimeout(
                    "the request took longer than FAULTLINE_REQUEST_TIMEOUT".into(),
                )
            } else {
                AppError::Unavailable("too many requests in flight; retry shortly".into())
            }
        }))
        .layer(LoadShedLayer::new())
        .layer(GlobalConcurrencyLimitLayer::new(config.max_in_flight))
        .layer(tower::timeout::TimeoutLayer::new(config.request_timeout))
        .layer(middleware::from_fn_with_state(
            min_body_rate,
            body_rate::enforce,
        ))
        .layer(RequestBodyTimeoutLayer::new(config.body_read_timeout));
    let (api, _) = api_routes(webhook_body).split_for_parts();
    let doc = openapi::Document(
        openapi_document()
            .to_json()
            .expect("the OpenAPI document serialises")
            .into(),
    );
    let guarded = api
        .merge(console::routes())
        .fallback(|| async { AppError::NotFound("no such endpoint".into()) })
        .method_not_allowed_fallback(|| async { AppError::MethodNotAllowed })
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
        .layer(guard);
    // Health checks are answered outside the caps: they cost nothing (the
    // readiness ping has its own 2 s bound), and a full server is alive.
    let (health, _) = health_routes().split_for_parts();
    health
        .method_not_allowed_fallback(|| async { AppError::MethodNotAllowed })
        .merge(guarded)
        .layer(Extension(doc))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// The health checks: answered outside the caps (see [`router`]).
fn health_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(healthz))
        .routes(routes!(readyz))
}

/// Every route outside the console, each with its operation in the
/// document (`openapi.rs`); `webhook_body` bounds the webhooks' bodies.
fn api_routes(webhook_body: DefaultBodyLimit) -> OpenApiRouter<AppState> {
    let (schemas, paths, github) = routes!(github::webhook);
    OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .routes(routes!(prometheus))
        .routes((schemas, paths, github.layer(webhook_body)))
        // Authenticated by token before the body is read: the API's limit
        // (a notification may carry log lines).
        .routes(routes!(jenkins::webhook))
        .routes(routes!(api::create))
        .routes(routes!(api::get))
        .routes(routes!(api::trace))
        .routes(routes!(api::events))
        .routes(routes!(review::list))
        .routes(routes!(review::claim_next))
        .routes(routes!(review::show))
        .routes(routes!(review::claim))
        .routes(routes!(review::resolve))
        .routes(routes!(review::dismiss))
        .routes(routes!(openapi::document))
}

/// The OpenAPI document of every route outside the console, health checks
/// included (`faultline openapi` prints it).
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    let mut doc = api_routes(DefaultBodyLimit::disable()).into_openapi();
    doc.merge(health_routes().into_openapi());
    openapi::complete(&mut doc);
    doc
}

/// Resolves on the first SIGTERM or SIGINT.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutdown requested; finishing in-flight requests");
}

/// Liveness: the process answers.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "operations",
    responses((status = 200, description = "`ok`: the process answers.", body = openapi::Health)),
)]
async fn healthz() -> Json<openapi::Health> {
    Json(openapi::Health {
        status: "ok".into(),
    })
}

/// Readiness: the database answers within 2 s.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "operations",
    responses(
        (status = 200, description = "`ready`: the database answers.", body = openapi::Health),
        (status = 503, description = "The database does not answer (within 2 s)."),
    ),
)]
async fn readyz(State(state): State<AppState>) -> Result<Json<openapi::Health>, AppError> {
    let ping = async {
        let mut conn = state.pool.acquire().await?;
        conn.ping().await
    };
    match tokio::time::timeout(Duration::from_secs(2), ping).await {
        Ok(Ok(())) => Ok(Json(openapi::Health {
            status: "ready".into(),
        })),
        Ok(Err(e)) => Err(AppError::Unavailable(format!("database: {e}"))),
        Err(_) => Err(AppError::Unavailable(
            "database: no answer within 2s".into(),
        )),
    }
}

/// The `service` label of this process' metrics.
const METRICS_SERVICE: &str = "faultline-producer";

/// Prometheus text format: this process' counters, plus queue depth and the
/// review backlog read from Postgres now.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    responses((status = 200, description = "Prometheus text exposition format 0.0.4.", content_type = "text/plain", body = String)),
)]
async fn prometheus(State(state): State<AppState>) -> Response {
    let handle = faultline_shared::metrics::install(METRICS_SERVICE);
    let body = faultline_shared::metrics::render(&handle, &state.pool, &state.broker).await;
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}

/// Stores an accepted event (+ log, run, first step) and answers 202 with
/// the run; a known dedup key answers the existing run with `created: false`.
async fn store(state: &AppState, event: &NewEvent, log: &[u8]) -> Result<Response, AppError> {
    let ingested = ingest(state, event, log).await?;
    Ok(stored(event, ingested))
}

/// Stores an accepted event (+ log, run, first step), or finds the known one.
async fn ingest(state: &AppState, event: &NewEvent, log: &[u8]) -> Result<Ingested, AppError> {
    let ingested = storage::ingest(&state.pool, &state.broker, event, log, state.limits)
        .await
        .context("failed to store the event")?;
    faultline_shared::metrics::ingested(&event.source, ingested.created);
    Ok(ingested)
}

/// 202 with the run (`created: false` for a known event).
fn stored(event: &NewEvent, ingested: Ingested) -> Response {
    tracing::info!(
        run_id = %ingested.run_id,
        source = %event.source,
        created = ingested.created,
        "event accepted"
    );
    let location = format!("/api/v1/analyses/{}", ingested.run_id);
    let body = openapi::Delivery::Accepted(openapi::Accepted {
        run_id: ingested.run_id,
        event_id: ingested.event_id,
        created: ingested.created,
    });
    (
        StatusCode::ACCEPTED,
        [(header::LOCATION, location)],
        Json(body),
    )
        .into_response()
}

/// 202 for a well-formed delivery that is not analysed, with the precise reason.
/// The answer to a delivery recorded as history (a pass): no run.
fn recorded(created: bool) -> Response {
    (
        StatusCode::ACCEPTED,
        Json(openapi::Delivery::Recorded(openapi::Recorded {
            recorded: faultline_producer::payload::github::PASSED.into(),
            created,
        })),
    )
        .into_response()
}

fn ignored(reason: String) -> Response {
    tracing::debug!(%reason, "delivery ignored");
    (
        StatusCode::ACCEPTED,
        Json(openapi::Delivery::Ignored(openapi::Ignored {
            ignored: reason,
        })),
    )
        .into_response()
}

/// A header as text, if present and visible ASCII.
fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// 415 unless `Content-Type` is `application/json` (or `application/*+json`).
fn require_json(headers: &HeaderMap) -> Result<(), AppError> {
    let content_type = header_str(headers, header::CONTENT_TYPE.as_str()).unwrap_or("");
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let json = essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"));
    if json {
        Ok(())
    } else {
        Err(AppError::UnsupportedMediaType(format!(
            "expected `Content-Type: application/json`, got {content_type:?}"
        )))
    }
}

//! Clients of the CI systems a failure came from: the GitHub REST/GraphQL
//! API and Jenkins. The tools read source, blame, history and console text
//! through them, and [`fetch`] stores a webhook event's log before its first
//! iteration (issue 5: logs are fetched by the worker, never in the request),
//! then [`baseline`] the last green log of the same job (issue 13).
//!
//! Every call retries transient failures in-process ([`crate::http`]); a
//! server's rate-limit block is recorded in Postgres ([`Gate`]) so every
//! worker waits for the reset instead of spending refused requests.

pub mod baseline;
pub mod codeowners;
pub mod fetch;
pub mod github;
pub mod jenkins;
pub mod jenkins_path;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use faultline_shared::{
    config::{AllowList, ConfigError, Source, de, variables},
    storage::ratelimit,
};
use reqwest::StatusCode;
use serde::Deserialize;
use sqlx::PgPool;

use crate::http::{RetryHint, RetryPolicy};

/// The CI clients the environment configures, and the log-fetch bounds.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct SourcesConfig {
    /// `GITHUB_*`, read as their own group.
    #[serde(skip)]
    pub github: Option<github::GithubConfig>,
    /// `JENKINS_*`, read as their own group.
    #[serde(skip)]
    pub jenkins: Option<jenkins::JenkinsConfig>,
    /// `FAULTLINE_LOG_FETCH_MAX_BYTES`: longest fetched log stored (at least 1).
    #[serde(
        rename = "FAULTLINE_LOG_FETCH_MAX_BYTES",
        deserialize_with = "de::parsed"
    )]
    pub fetch_max_bytes: u64,
    /// `FAULTLINE_LOG_FETCH_TIMEOUT_MS`: bound on one whole log fetch.
    #[serde(
        rename = "FAULTLINE_LOG_FETCH_TIMEOUT_MS",
        deserialize_with = "de::millis"
    )]
    pub fetch_timeout: Duration,
}

impl Default for SourcesConfig {
    fn default() -> Self {
        Self {
            github: None,
            jenkins: None,
            fetch_max_bytes: 256 << 20,
            fetch_timeout: Duration::from_millis(300_000),
        }
    }
}

impl SourcesConfig {
    pub fn load(source: &Source) -> Result<Self, ConfigError> {
        let fetch: Self = source.load("")?;
        Ok(Self {
            github: github::GithubConfig::load(source)?,
            jenkins: jenkins::JenkinsConfig::load(source)?,
            fetch_max_bytes: fetch.fetch_max_bytes.max(1),
            ..fetch
        })
    }

    /// The variables [`SourcesConfig::load`] reads.
    pub fn variables() -> Vec<String> {
        [
            variables::<SourcesConfig>(""),
            github::GithubConfig::variables(),
            jenkins::JenkinsConfig::variables(),
        ]
        .concat()
    }

    /// The clients and the log fetcher, sharing `pool` for the rate-limit
    /// gate; both clients refuse anything outside `allowed` (the
    /// `Settings`' `FAULTLINE_ALLOWED_REPOSITORIES` / `_JENKINS_JOBS`).
    pub fn build(self, pool: &PgPool, allowed: &AllowList) -> fetch::LogFetcher {
        fetch::LogFetcher {
            github: self.github.map(|c| {
                let client = github::GithubClient::new(c, pool.clone(), allowed.clone());
                std::sync::Arc::new(client)
            }),
            jenkins: self.jenkins.map(|c| {
                let client = jenkins::JenkinsClient::new(c, pool.clone(), allowed.clone());
                std::sync::Arc::new(client)
            }),
            max_bytes: self.fetch_max_bytes,
            timeout: self.fetch_timeout,
        }
    }
}

/// Why a call to GitHub or Jenkins produced nothing usable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApiError {
    /// Worth retrying: 429, 5xx, a rate-limit block, timeouts, resets.
    #[error("{message}")]
    Transient {
        message: String,
        retry_after: Option<Duration>,
    },
    /// 404 or 410: the file, job, build or log does not exist (any more).
    #[error("{message}")]
    NotFound { status: u16, message: String },
    /// Retrying will not help: bad credentials, no access, a rejected
    /// query, a reply we cannot read.
    #[error("{message}")]
    Permanent {
        status: Option<u16>,
        message: String,
    },
}

/// Retry as the server said: a transient error not before its
/// `Retry-After`; a missing thing or a refusal never.
impl From<ApiError> for crate::failure::Failure {
    fn from(e: ApiError) -> Self {
        use crate::failure::Failure;
        match e {
            ApiError::Transient {
                message,
                retry_after,
            } => Failure::transient(message).not_before(retry_after),
            ApiError::NotFound { message, .. } | ApiError::Permanent { message, .. } => {
                Failure::permanent(message)
            }
        }
    }
}

impl RetryHint for ApiError {
    fn is_transient(&self) -> bool {
        matches!(self, ApiError::Transient { .. })
    }
    fn retry_after(&self) -> Option<Duration> {
        match self {
            ApiError::Transient { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
    fn describe(&self) -> String {
        self.to_string()
    }
}

impl ApiError {
    fn transient(message: String) -> Self {
        ApiError::Transient {
            message,
            retry_after: None,
        }
    }
}

/// A failed send (no response): transient unless the request itself was bad.
fn send_error(service: &str, url: &str, e: &reqwest::Error) -> ApiError {
    if e.is_builder() || e.is_redirect() {
        ApiError::Permanent {
            status: None,
            message: format!("{service} request to {url} is invalid: {e}"),
        }
    } else {
        ApiError::transient(format!("{service} request to {url} failed: {e}"))
    }
}

/// The error a non-success status stands for. `detail` is the server's own
/// message (GitHub's JSON `message`, or the start of the body).
fn status_error(
    service: &str,
    url: &str,
    status: StatusCode,
    retry_after: Option<Duration>,
    detail: &str,
) -> ApiError {
    let message = format!("{service} answered {status} for {url}: {detail}");
    match status.as_u16() {
        404 | 410 => ApiError::NotFound {
            status: status.as_u16(),
            message,
        },
        401 => ApiError::Permanent {
            status: Some(401),
            message: format!("{service} rejected the credentials (401 {detail}) for {url}"),
        },
        408 | 429 | 500..=599 => ApiError::Transient {
            message,
            retry_after,
        },
        code => ApiError::Permanent {
            status: Some(code),
            message,
        },
    }
}

/// Reads at most `cap` bytes of a body (error replies are only quoted).
async fn read_at_most(mut resp: reqwest::Response, cap: usize) -> String {
    let mut out = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        let take = (cap - out.len()).min(chunk.len());
        out.extend_from_slice(&chunk[..take]);
        if out.len() >= cap {
            break;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An outbound API's rate-limit block, shared by all workers through
/// `api_rate_limits`: before each request a worker waits out a block (up
/// to `max_wait`; longer, the call fails transiently and the step retries
/// durably).
#[derive(Clone)]
pub struct Gate {
    pub pool: PgPool,
    /// `github` or `jenkins`.
    pub api: &'static str,
    pub max_wait: Duration,
}

impl Gate {
    /// Waits until the API is open again.
    async fn pass(&self) -> Result<(), ApiError> {
        let blocked = ratelimit::api_blocked_for(&self.pool, self.api)
            .await
            .map_err(|e| {
                ApiError::transient(format!("reading the {} rate limit: {e}", self.api))
            })?;
        match blocked {
            None => Ok(()),
            Some(wait) if wait <= self.max_wait => {
                tokio::time::sleep(wait).await;
                Ok(())
            }
            Some(wait) => Err(ApiError::Transient {
                message: format!(
                    "{} rate limit exhausted for another {}s (blocked for all workers)",
                    self.api,
                    wait.as_secs()
                ),
                retry_after: Some(wait),
            }),
        }
    }

    /// Blocks the API for every worker until `until` (Unix seconds).
    async fn block(&self, until: f64, reason: &str) {
        if let Err(e) = ratelimit::block_api(&self.pool, self.api, until, reason).await {
            tracing::warn!(api = self.api, error = %e, "could not record the rate-limit block");
        }
    }
}

/// Seconds since the Unix epoch.
fn now_epoch() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

/// Retry settings of the CI clients, with the gate's longest wait as the
/// longest server floor worth waiting for in-process.
fn policy(gate: &Gate) -> RetryPolicy {
    RetryPolicy {
        base: Duration::from_millis(500),
        max_delay: Duration::from_secs(10),
        retries: 3,
        max_wait: Some(gate.max_wait),
    }
}

/// An HTTP client for a CI API: a connect timeout and a per-read timeout,
/// but no whole-request timeout, because logs stream for as long as they
/// are (callers bound the whole call).
fn client(read_timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(read_timeout.min(Duration::from_secs(10)))
        .read_timeout(read_timeout)
        .user_agent(concat!("faultline-worker/", env!("CARGO_PKG_VERSION")))
        .build()
        .expect("a reqwest client with timeouts always builds")
}

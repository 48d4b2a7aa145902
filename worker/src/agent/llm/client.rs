//! HTTP calls to the model. Transient failures (429, 5xx, timeouts, resets)
//! are retried in-process with exponential backoff and jitter (backon),
//! honouring `Retry-After` as a floor; permanent ones (400/401/403/404/422)
//! are returned at once. A call that stays transient becomes a durable step
//! retry in the engine.

use std::time::{Duration, Instant};

use faultline_shared::config::ExposeSecret;
use serde_json::Value;

use super::{
    config::{LlmConfig, Provider},
    limit::SharedLimit,
};
use crate::{
    failure::Failure,
    http::{self, RetryPolicy, snippet},
};

/// A successful call: the parsed body (or the raw text if it is not JSON).
#[derive(Debug, Clone)]
pub struct Response {
    pub body: Result<Value, String>,
    pub latency_ms: u64,
    pub attempts: usize,
}

pub fn http_client(cfg: &LlmConfig) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(cfg.timeout)
        .connect_timeout(cfg.timeout.min(Duration::from_secs(10)))
        .build()
        .expect("a reqwest client with timeouts always builds")
}

/// POSTs `body` to the provider, retrying transient failures; every
/// attempt first takes a permit of the shared rate limit.
pub async fn call(
    http: &reqwest::Client,
    cfg: &LlmConfig,
    limit: Option<&SharedLimit>,
    body: &Value,
) -> Result<Response, Failure> {
    let url = format!("{}{}", cfg.base_url, super::wire::path(cfg.provider));
    let started = Instant::now();
    let policy = RetryPolicy {
        base: cfg.retry_base,
        max_delay: Duration::from_secs(60),
        retries: cfg.retries,
        max_wait: None,
    };
    let (result, attempts) = http::retrying(policy, "llm", || async {
        let permit = match limit {
            Some(l) => Some(l.acquire().await?),
            None => None,
        };
        let result = once(http, cfg, &url, body).await;
        if let (Some(l), Some(p)) = (limit, permit) {
            l.release(p).await;
        }
        result
    })
    .await;
    let result = result?;
    Ok(Response {
        body: result,
        latency_ms: started.elapsed().as_millis() as u64,
        attempts,
    })
}

async fn once(
    http: &reqwest::Client,
    cfg: &LlmConfig,
    url: &str,
    body: &Value,
) -> Result<Result<Value, String>, Failure> {
    let mut req = http.post(url).json(body);
    if let Some(key) = &cfg.api_key {
        req = match cfg.provider {
            Provider::OpenAi => req.bearer_auth(key.expose_secret()),
            Provider::Anthropic => req.header("x-api-key", key.expose_secret()),
        };
    }
    if cfg.provider == Provider::Anthropic {
        req = req.header("anthropic-version", "2023-06-01");
    }
    let resp = req
        .send()
        .await
        .map_err(|e| Failure::transient(format!("request to {url} failed: {e}")))?;
    let status = resp.status();
    let retry_after = http::retry_after(resp.headers());
    let text = resp
        .text()
        .await
        .map_err(|e| Failure::transient(format!("reading the reply from {url} failed: {e}")))?;
    if status.is_success() {
        return Ok(serde_json::from_str(&text).map_err(|_| snippet(&text)));
    }
    let message = format!("{} from {url}: {}", status, snippet(&text));
    if status.as_u16() == 429 || status.as_u16() == 408 || status.is_server_error() {
        Err(Failure::transient(message).not_before(retry_after))
    } else {
        Err(Failure::permanent(message))
    }
}

//! Retry plumbing shared by every outbound HTTP client of the worker (LLM
//! providers, GitHub, Jenkins), so they all back off the same way: in-process
//! retries with exponential backoff and jitter (backon), the server's
//! `Retry-After` (or rate-limit reset) as a floor. A call that stays
//! transient becomes a durable step retry in the engine (I5).

use std::{future::Future, time::Duration};

use backon::{ExponentialBuilder, Retryable};
use reqwest::header::HeaderMap;

/// What the retry loop needs to know about a failed attempt.
pub trait RetryHint {
    /// Worth trying again (429, 5xx, timeouts, resets).
    fn is_transient(&self) -> bool;
    /// The earliest time the server accepts another attempt.
    fn retry_after(&self) -> Option<Duration>;
    /// For the retry log line.
    fn describe(&self) -> String;
}

/// How many times, and how patiently, one call is retried in-process.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// First delay; doubles per retry, with jitter.
    pub base: Duration,
    /// Cap on one computed delay.
    pub max_delay: Duration,
    pub retries: usize,
    /// A server floor longer than this is not waited for in-process: the
    /// error is returned so the step retries durably instead of holding a
    /// worker slot (and its tool timeout) hostage. `None`: always wait.
    pub max_wait: Option<Duration>,
}

/// Runs `op` until it succeeds, fails permanently, or the retries are spent.
/// Returns the result and the number of attempts made.
pub async fn retrying<T, E, F, Fut>(
    policy: RetryPolicy,
    what: &str,
    mut op: F,
) -> (Result<T, E>, usize)
where
    E: RetryHint,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut attempts = 0usize;
    let backoff = ExponentialBuilder::default()
        .with_min_delay(policy.base)
        .with_max_delay(policy.max_delay)
        .with_max_times(policy.retries)
        .with_jitter();
    let result = (|| {
        attempts += 1;
        op()
    })
    .retry(backoff)
    .when(|e: &E| {
        e.is_transient()
            && match (e.retry_after(), policy.max_wait) {
                (Some(after), Some(max)) => after <= max,
                _ => true,
            }
    })
    // The server's floor: never retry sooner than it asked.
    .adjust(|e, delay| match (e.retry_after(), delay) {
        (Some(after), Some(d)) => Some(d.max(after)),
        (_, d) => d,
    })
    .notify(|e, delay| tracing::warn!(call = what, error = %e.describe(), ?delay, "call failed; retrying"))
    .await;
    (result, attempts)
}

/// `Retry-After` in seconds (HTTP dates are rare from APIs and ignored),
/// clamped to five minutes.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|secs| Duration::from_secs_f64(secs.clamp(0.0, 300.0)))
}

/// The start of a response body, for error messages.
pub fn snippet(text: &str) -> String {
    let t = text.trim();
    match t.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &t[..i]),
        None => t.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[derive(Debug)]
    struct Busy(Option<Duration>);
    impl RetryHint for Busy {
        fn is_transient(&self) -> bool {
            true
        }
        fn retry_after(&self) -> Option<Duration> {
            self.0
        }
        fn describe(&self) -> String {
            "busy".into()
        }
    }

    fn policy(max_wait: Option<Duration>) -> RetryPolicy {
        RetryPolicy {
            base: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
            retries: 3,
            max_wait,
        }
    }

    #[tokio::test]
    async fn transient_failures_are_retried_until_the_budget_is_spent() {
        let (result, attempts) =
            retrying(policy(None), "t", || async { Err::<(), _>(Busy(None)) }).await;
        assert!(result.is_err());
        assert_eq!(attempts, 4);
    }

    #[tokio::test]
    async fn a_floor_beyond_max_wait_is_left_to_the_durable_retry() {
        let (result, attempts) = retrying(policy(Some(Duration::from_secs(1))), "t", || async {
            Err::<(), _>(Busy(Some(Duration::from_secs(3600))))
        })
        .await;
        assert!(result.is_err());
        assert_eq!(attempts, 1);
    }

    #[test]
    fn retry_after_is_read_in_seconds_and_clamped() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after", HeaderValue::from_static("99999"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(300)));
    }
}

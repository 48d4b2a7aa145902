//! The one failure type of a step: whatever failed (the database, a log
//! fetch, a model call, a reasoner), the engine needs only to know whether
//! to retry the step (with the Postgres-held backoff, I5; not before the
//! server's own `Retry-After` when it gave one) or to give up, and the
//! operator needs the whole cause chain in the run's `failure_reason` and
//! the logs.

use std::{error::Error as StdError, fmt, time::Duration};

use crate::http::RetryHint;

/// Whether a failed step is worth trying again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Worth retrying (timeouts, resets, 429/5xx, a lost connection), not
    /// before `not_before` when the server said so.
    Later { not_before: Option<Duration> },
    /// Will not get better by retrying (bad credentials, a refused request,
    /// a log that is gone, a reply that cannot be used).
    Never,
}

/// Why a step (or a part of it) failed.
#[derive(Debug)]
pub struct Failure {
    message: String,
    retry: Retry,
    source: Option<Box<dyn StdError + Send + Sync + 'static>>,
}

impl Failure {
    /// A failure worth retrying.
    pub fn transient(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            retry: Retry::Later { not_before: None },
            source: None,
        }
    }

    /// A failure retrying will not fix.
    pub fn permanent(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            retry: Retry::Never,
            source: None,
        }
    }

    /// Keeps `source` as the cause (shown by [`Self::chain`]).
    pub fn caused_by(mut self, source: impl StdError + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// The earliest retry the server accepts (a transient failure only).
    pub fn not_before(mut self, after: Option<Duration>) -> Self {
        if let Retry::Later { not_before } = &mut self.retry {
            *not_before = after;
        }
        self
    }

    /// Puts `what` in front of the message (`"LLM call failed: …"`).
    pub fn context(mut self, what: impl fmt::Display) -> Self {
        self.message = format!("{what}: {}", self.message);
        self
    }

    pub fn retry(&self) -> Retry {
        self.retry
    }

    /// How long the server asked us to wait before retrying, if it did.
    pub fn wait(&self) -> Option<Duration> {
        match self.retry {
            Retry::Later { not_before } => not_before,
            Retry::Never => None,
        }
    }

    pub fn is_transient(&self) -> bool {
        matches!(self.retry, Retry::Later { .. })
    }

    /// The message and every cause after it, `: `-separated: what a run's
    /// `failure_reason` and the step's log line record.
    pub fn chain(&self) -> String {
        let mut out = self.message.clone();
        let mut cause = self
            .source
            .as_deref()
            .map(|e| e as &(dyn StdError + 'static));
        while let Some(e) = cause {
            out.push_str(": ");
            out.push_str(&e.to_string());
            cause = e.source();
        }
        out
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for Failure {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn StdError + 'static))
    }
}

/// A database error is transient exactly when the storage layer says so
/// (lost connections, serialization failures, pool timeouts).
impl From<sqlx::Error> for Failure {
    fn from(e: sqlx::Error) -> Self {
        let failure = if faultline_shared::storage::is_transient(&e) {
            Failure::transient("database")
        } else {
            Failure::permanent("database")
        };
        failure.caused_by(e)
    }
}

impl RetryHint for Failure {
    fn is_transient(&self) -> bool {
        Failure::is_transient(self)
    }
    fn retry_after(&self) -> Option<Duration> {
        self.wait()
    }
    fn describe(&self) -> String {
        self.chain()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn the_chain_shows_every_cause() {
        let io = std::io::Error::other("connection reset");
        let f = Failure::transient("fetching the log")
            .caused_by(Outer(io))
            .context("step 3");
        assert_eq!(
            f.chain(),
            "step 3: fetching the log: outer: connection reset"
        );
        assert_eq!(f.to_string(), "step 3: fetching the log");
        assert!(f.is_transient());
    }

    #[test]
    fn a_database_error_keeps_its_cause_and_its_class() {
        let f = Failure::from(sqlx::Error::PoolTimedOut);
        assert!(f.is_transient());
        assert!(f.chain().starts_with("database: "), "{}", f.chain());
        assert!(f.source().is_some());
        let f = Failure::from(sqlx::Error::RowNotFound);
        assert!(!f.is_transient());
    }

    #[test]
    fn only_a_transient_failure_has_an_earliest_retry() {
        let wait = Some(Duration::from_secs(30));
        assert_eq!(
            Failure::transient("429").not_before(wait).retry(),
            Retry::Later { not_before: wait }
        );
        assert_eq!(
            Failure::permanent("401").not_before(wait).retry(),
            Retry::Never
        );
    }
}

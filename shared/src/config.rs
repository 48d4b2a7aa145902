//! Typed settings, read once at start from `FAULTLINE_*` environment
//! variables (documented in the README's configuration table).

use std::{fmt, time::Duration};

/// A value that must never be printed (database URLs carry passwords).
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }
    /// The secret itself; call only where it is handed to a client.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Everything the producer and the workers need to agree on.
#[derive(Debug, Clone)]
pub struct Settings {
    pub database_url: Secret,
    /// Hard bound on ReAct iterations per run (I7).
    pub max_iterations: i32,
    /// Attempts per iteration before the run is dead-lettered (I5).
    pub max_attempts: i32,
    /// First retry delay; doubles per attempt, with up to 25 % jitter.
    pub retry_base: Duration,
    /// Cap on one retry delay.
    pub retry_max: Duration,
    /// How long a claimed run stays leased without renewal (I4).
    pub lease_ttl: Duration,
    /// How often a worker looks for runs whose lease expired.
    pub reconcile_interval: Duration,
    /// Poll fallback for the step queue (LISTEN/NOTIFY wakes workers first).
    pub poll_interval: Duration,
    /// Queue heartbeat; tasks fetched by a worker silent for 2 beats return to the queue.
    pub queue_heartbeat: Duration,
    /// Concurrent steps per worker process.
    pub worker_concurrency: usize,
    /// Timeout of one tool call.
    pub tool_timeout: Duration,
    /// How long SIGTERM waits for in-flight steps before releasing them.
    pub shutdown_grace: Duration,
    /// Confidence routing thresholds (DESIGN.md).
    pub thresholds: Thresholds,
    /// Test and chaos knobs, off by default.
    pub chaos: Chaos,
}

#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    /// At or above: the answer is trusted and auto-notified.
    pub auto: f32,
    /// Between `self_correct` and `auto`: human review.
    pub review: f32,
    /// Between this and `review`: the reasoner self-corrects once, then review.
    pub self_correct: f32,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            auto: 0.85,
            review: 0.65,
            self_correct: 0.50,
        }
    }
}

/// Fault injection for crash and retry tests; every knob is off unless set.
#[derive(Debug, Clone, Default)]
pub struct Chaos {
    /// `FAULTLINE_CHAOS_STEP_DELAY_MS`: sleep inside each step, before its commit.
    pub step_delay: Option<Duration>,
    /// `FAULTLINE_CHAOS_TOOL_DELAY_MS`: sleep inside each tool call (so the tool timeout can fire).
    pub tool_delay: Option<Duration>,
}

/// A setting that could not be parsed.
#[derive(Debug, thiserror::Error)]
#[error("invalid value {value:?} for {name}: {reason}")]
pub struct ConfigError {
    pub name: &'static str,
    pub value: String,
    pub reason: String,
}

pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/faultline";

impl Settings {
    /// Reads the settings from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the settings through `lookup` (the environment, or a map in tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let env = Env(&lookup);
        let thresholds = Thresholds {
            auto: env.parse("FAULTLINE_CONFIDENCE_AUTO", 0.85)?,
            review: env.parse("FAULTLINE_CONFIDENCE_REVIEW", 0.65)?,
            self_correct: env.parse("FAULTLINE_CONFIDENCE_SELF_CORRECT", 0.50)?,
        };
        let settings = Self {
            database_url: Secret::new(
                lookup("DATABASE_URL").unwrap_or_else(|| DEFAULT_DATABASE_URL.to_string()),
            ),
            max_iterations: env.parse("FAULTLINE_MAX_ITERATIONS", 5)?,
            max_attempts: env.parse("FAULTLINE_MAX_ATTEMPTS", 5)?,
            retry_base: env.millis("FAULTLINE_RETRY_BASE_MS", 2_000)?,
            retry_max: env.millis("FAULTLINE_RETRY_MAX_MS", 300_000)?,
            lease_ttl: env.millis("FAULTLINE_LEASE_TTL_MS", 10_000)?,
            reconcile_interval: env.millis("FAULTLINE_RECONCILE_INTERVAL_MS", 2_000)?,
            poll_interval: env.millis("FAULTLINE_POLL_INTERVAL_MS", 1_000)?,
            queue_heartbeat: Duration::from_secs(env.parse("FAULTLINE_QUEUE_HEARTBEAT_SECS", 3)?),
            worker_concurrency: env.parse("FAULTLINE_WORKER_CONCURRENCY", 8)?,
            tool_timeout: env.millis("FAULTLINE_TOOL_TIMEOUT_MS", 30_000)?,
            shutdown_grace: env.millis("FAULTLINE_SHUTDOWN_GRACE_MS", 20_000)?,
            thresholds,
            chaos: Chaos {
                step_delay: env.optional_millis("FAULTLINE_CHAOS_STEP_DELAY_MS")?,
                tool_delay: env.optional_millis("FAULTLINE_CHAOS_TOOL_DELAY_MS")?,
            },
        };
        settings.validate()?;
        Ok(settings)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let bad = |name, value: String, reason: &str| {
            Err(ConfigError {
                name,
                value,
                reason: reason.to_string(),
            })
        };
        if !(1..=50).contains(&self.max_iterations) {
            return bad(
                "FAULTLINE_MAX_ITERATIONS",
                self.max_iterations.to_string(),
                "must be 1..=50",
            );
        }
        if self.max_attempts < 1 {
            return bad(
                "FAULTLINE_MAX_ATTEMPTS",
                self.max_attempts.to_string(),
                "must be >= 1",
            );
        }
        if self.worker_concurrency == 0 {
            return bad("FAULTLINE_WORKER_CONCURRENCY", "0".into(), "must be >= 1");
        }
        if self.lease_ttl < Duration::from_millis(300) {
            return bad(
                "FAULTLINE_LEASE_TTL_MS",
                format!("{:?}", self.lease_ttl),
                "must be >= 300",
            );
        }
        if self.queue_heartbeat.is_zero() {
            return bad("FAULTLINE_QUEUE_HEARTBEAT_SECS", "0".into(), "must be >= 1");
        }
        let t = self.thresholds;
        if !(0.0 <= t.self_correct
            && t.self_correct <= t.review
            && t.review <= t.auto
            && t.auto <= 1.0)
        {
            return bad(
                "FAULTLINE_CONFIDENCE_*",
                format!("{t:?}"),
                "need 0 <= self_correct <= review <= auto <= 1",
            );
        }
        Ok(())
    }
}

struct Env<'a, F: Fn(&str) -> Option<String>>(&'a F);

impl<F: Fn(&str) -> Option<String>> Env<'_, F> {
    fn parse<T: std::str::FromStr>(&self, name: &'static str, default: T) -> Result<T, ConfigError>
    where
        T::Err: fmt::Display,
    {
        match (self.0)(name) {
            None => Ok(default),
            Some(v) if v.trim().is_empty() => Ok(default),
            Some(v) => v.trim().parse().map_err(|e: T::Err| ConfigError {
                name,
                value: v.clone(),
                reason: e.to_string(),
            }),
        }
    }

    fn millis(&self, name: &'static str, default: u64) -> Result<Duration, ConfigError> {
        self.parse(name, default).map(Duration::from_millis)
    }

    fn optional_millis(&self, name: &'static str) -> Result<Option<Duration>, ConfigError> {
        let ms: u64 = self.parse(name, 0)?;
        Ok((ms > 0).then(|| Duration::from_millis(ms)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(pairs: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults_apply_when_nothing_is_set() {
        let s = settings(&[]).unwrap();
        assert_eq!(s.max_iterations, 5);
        assert_eq!(s.database_url.expose(), DEFAULT_DATABASE_URL);
        assert!(s.chaos.step_delay.is_none());
    }

    #[test]
    fn a_bad_number_names_the_variable() {
        let err = settings(&[("FAULTLINE_MAX_ATTEMPTS", "lots")]).unwrap_err();
        assert_eq!(err.name, "FAULTLINE_MAX_ATTEMPTS");
        assert!(err.to_string().contains("lots"));
    }

    #[test]
    fn secrets_do_not_print() {
        let s = settings(&[("DATABASE_URL", "postgres://u:hunter2@h/db")]).unwrap();
        assert!(!format!("{s:?}").contains("hunter2"));
    }

    #[test]
    fn thresholds_must_be_ordered() {
        assert!(settings(&[("FAULTLINE_CONFIDENCE_AUTO", "0.3")]).is_err());
    }
}

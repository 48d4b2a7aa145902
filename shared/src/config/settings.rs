//! [`Settings`]: what the producer and the workers need to agree on. Each
//! field's serde name is its variable; the defaults are `Default`.

use std::{collections::BTreeMap, time::Duration};

use secrecy::SecretString;
use serde::{Deserialize, Deserializer, de::Error as _};

use crate::rollout::ShadowReasoner;

use super::{AllowList, ConfigError, Source, de, parse_duration, variables};

pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/faultline";
pub const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379";
pub const DEFAULT_TOOL_RATE_LIMITS: &str = "github_search=10/1m";

/// Everything the producer and the workers need to agree on.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct Settings {
    #[serde(rename = "DATABASE_URL", deserialize_with = "de::secret")]
    pub database_url: SecretString,
    /// `QUEUE_BACKEND`: where step tasks travel (Postgres is always the truth).
    #[serde(rename = "QUEUE_BACKEND", deserialize_with = "de::parsed")]
    pub queue_backend: QueueBackend,
    /// `REDIS_URL`: the broker when `queue_backend` is `redis`.
    #[serde(rename = "REDIS_URL", deserialize_with = "de::secret")]
    pub redis_url: SecretString,
    /// `FAULTLINE_REDIS_NAMESPACE`: prefix of the Redis queue keys, so
    /// several deployments (or tests) can share one Redis.
    #[serde(rename = "FAULTLINE_REDIS_NAMESPACE", deserialize_with = "de::parsed")]
    pub redis_namespace: String,
    /// Redis broker only: a run queued this long whose step task is not
    /// waiting in Redis is pushed again (covers the commit/push gap and a
    /// wiped Redis, I6).
    #[serde(rename = "FAULTLINE_REQUEUE_AFTER_MS", deserialize_with = "de::millis")]
    pub requeue_after: Duration,
    /// Hard bound on ReAct iterations per run (I7).
    #[serde(rename = "FAULTLINE_MAX_ITERATIONS", deserialize_with = "de::parsed")]
    pub max_iterations: i32,
    /// Attempts per iteration before the run is dead-lettered (I5).
    #[serde(rename = "FAULTLINE_MAX_ATTEMPTS", deserialize_with = "de::parsed")]
    pub max_attempts: i32,
    /// First retry delay; doubles per attempt, with up to 25 % jitter.
    #[serde(rename = "FAULTLINE_RETRY_BASE_MS", deserialize_with = "de::millis")]
    pub retry_base: Duration,
    /// Cap on one retry delay.
    #[serde(rename = "FAULTLINE_RETRY_MAX_MS", deserialize_with = "de::millis")]
    pub retry_max: Duration,
    /// How long a claimed run stays leased without renewal (I4).
    #[serde(rename = "FAULTLINE_LEASE_TTL_MS", deserialize_with = "de::millis")]
    pub lease_ttl: Duration,
    /// How often a worker looks for runs whose holder died or whose lease
    /// expired.
    #[serde(
        rename = "FAULTLINE_RECONCILE_INTERVAL_MS",
        deserialize_with = "de::millis"
    )]
    pub reconcile_interval: Duration,
    /// How long a worker's session lock must be missing before its runs are
    /// taken over (a reconnecting worker gets it back sooner).
    #[serde(rename = "FAULTLINE_SESSION_GRACE_MS", deserialize_with = "de::millis")]
    pub session_grace: Duration,
    /// Poll fallback for the step queue (LISTEN/NOTIFY wakes workers first).
    #[serde(rename = "FAULTLINE_POLL_INTERVAL_MS", deserialize_with = "de::millis")]
    pub poll_interval: Duration,
    /// Queue heartbeat; tasks fetched by a worker silent for 2 beats return to the queue.
    #[serde(
        rename = "FAULTLINE_QUEUE_HEARTBEAT_SECS",
        deserialize_with = "de::secs"
    )]
    pub queue_heartbeat: Duration,
    /// Concurrent steps per worker process.
    #[serde(
        rename = "FAULTLINE_WORKER_CONCURRENCY",
        deserialize_with = "de::parsed"
    )]
    pub worker_concurrency: usize,
    /// Database connections a worker opens in all, whatever its concurrency:
    /// one for its lease renewals and session lock, the rest its pool (a
    /// step holds one only for a statement, never while it waits on a model
    /// or a tool's HTTP call).
    #[serde(rename = "FAULTLINE_DB_POOL_SIZE", deserialize_with = "de::parsed")]
    pub db_pool_size: u32,
    /// `FAULTLINE_BULK_CONCURRENCY` (Redis broker): slots of the bulk queue
    /// per worker, on top of the live ones; unset (or 0): a quarter of them,
    /// at least 1.
    #[serde(
        rename = "FAULTLINE_BULK_CONCURRENCY",
        deserialize_with = "zero_is_unset"
    )]
    pub bulk_concurrency: Option<usize>,
    /// Timeout of one tool call.
    #[serde(rename = "FAULTLINE_TOOL_TIMEOUT_MS", deserialize_with = "de::millis")]
    pub tool_timeout: Duration,
    /// `TOOL_RATE_LIMITS`: calls per window allowed to a tool across all
    /// workers (`github_search=10/1m,...`; `none` for no limits). Default:
    /// GitHub's own code-search limit, so workers wait instead of being refused.
    #[serde(rename = "TOOL_RATE_LIMITS", deserialize_with = "rate_limits")]
    pub tool_rate_limits: BTreeMap<String, RateLimit>,
    /// `TOOL_RATE_LIMIT_MAX_WAIT_MS`: the longest a call waits for its
    /// tool's limit in-process; past it the step is retried later (durably).
    #[serde(
        rename = "TOOL_RATE_LIMIT_MAX_WAIT_MS",
        deserialize_with = "de::millis"
    )]
    pub tool_rate_limit_max_wait: Duration,
    /// How long SIGTERM waits for in-flight steps before releasing them.
    #[serde(
        rename = "FAULTLINE_SHUTDOWN_GRACE_MS",
        deserialize_with = "de::millis"
    )]
    pub shutdown_grace: Duration,
    /// `REVIEW_CLAIM_TTL`: how long a reviewer's claim holds before the item
    /// returns to the queue (checked in the queries, no background job).
    #[serde(rename = "REVIEW_CLAIM_TTL", deserialize_with = "de::humane")]
    pub review_claim_ttl: Duration,
    /// `FAULTLINE_SHADOW_REASONER` (`off` by default): every live run gets
    /// a shadow run of the other reasoner on the same event (bulk priority,
    /// never notified, never reviewed) and, when both finish, a comparison
    /// row. Read by the producer, which creates the shadow run with the
    /// live one, and by the workers, which check they can run it.
    #[serde(rename = "FAULTLINE_SHADOW_REASONER", deserialize_with = "shadow")]
    pub shadow_reasoner: Option<ShadowReasoner>,
    /// Confidence routing thresholds (DESIGN.md); read as their own group.
    #[serde(skip)]
    pub thresholds: Thresholds,
    /// `FAULTLINE_ALLOWED_REPOSITORIES`, `FAULTLINE_ALLOWED_JENKINS_JOBS`:
    /// the repositories and Jenkins jobs analysed at all (unset: any); read
    /// as their own group.
    #[serde(skip)]
    pub allowed: AllowList,
    /// Test and chaos knobs, off by default; read as their own group.
    #[serde(skip)]
    pub chaos: Chaos,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            database_url: DEFAULT_DATABASE_URL.into(),
            queue_backend: QueueBackend::Postgres,
            redis_url: DEFAULT_REDIS_URL.into(),
            redis_namespace: "faultline".into(),
            requeue_after: Duration::from_millis(10_000),
            max_iterations: 5,
            max_attempts: 5,
            retry_base: Duration::from_millis(2_000),
            retry_max: Duration::from_millis(300_000),
            lease_ttl: Duration::from_millis(10_000),
            reconcile_interval: Duration::from_millis(1_000),
            session_grace: Duration::from_millis(1_000),
            poll_interval: Duration::from_millis(1_000),
            queue_heartbeat: Duration::from_secs(3),
            worker_concurrency: 8,
            db_pool_size: 16,
            bulk_concurrency: None,
            tool_timeout: Duration::from_millis(30_000),
            tool_rate_limits: parse_rate_limits(DEFAULT_TOOL_RATE_LIMITS)
                .expect("the default tool rate limits parse"),
            tool_rate_limit_max_wait: Duration::from_millis(60_000),
            shutdown_grace: Duration::from_millis(20_000),
            review_claim_ttl: Duration::from_secs(30 * 60),
            shadow_reasoner: None,
            thresholds: Thresholds::default(),
            allowed: AllowList::default(),
            chaos: Chaos::default(),
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(default)]
pub struct Thresholds {
    /// At or above: the answer is trusted and auto-notified.
    #[serde(rename = "FAULTLINE_CONFIDENCE_AUTO", deserialize_with = "de::parsed")]
    pub auto: f32,
    /// Between `self_correct` and `auto`: human review.
    #[serde(
        rename = "FAULTLINE_CONFIDENCE_REVIEW",
        deserialize_with = "de::parsed"
    )]
    pub review: f32,
    /// Between this and `review`: the reasoner self-corrects once, then review.
    #[serde(
        rename = "FAULTLINE_CONFIDENCE_SELF_CORRECT",
        deserialize_with = "de::parsed"
    )]
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
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Chaos {
    /// `FAULTLINE_CHAOS_STEP_DELAY_MS`: sleep inside each step, before its commit.
    #[serde(
        rename = "FAULTLINE_CHAOS_STEP_DELAY_MS",
        deserialize_with = "de::millis_or_off"
    )]
    pub step_delay: Option<Duration>,
    /// `FAULTLINE_CHAOS_TOOL_DELAY_MS`: sleep inside each tool call (so the tool timeout can fire).
    #[serde(
        rename = "FAULTLINE_CHAOS_TOOL_DELAY_MS",
        deserialize_with = "de::millis_or_off"
    )]
    pub tool_delay: Option<Duration>,
}

/// Which broker carries step tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueBackend {
    /// apalis-postgres: the next step is pushed inside the checkpoint transaction.
    #[default]
    Postgres,
    /// apalis-redis: pushed right after the checkpoint commits; the reconciler covers the gap.
    Redis,
}

impl QueueBackend {
    pub fn as_str(self) -> &'static str {
        match self {
            QueueBackend::Postgres => "postgres",
            QueueBackend::Redis => "redis",
        }
    }
}

impl std::str::FromStr for QueueBackend {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "postgres" | "pg" => Ok(QueueBackend::Postgres),
            "redis" => Ok(QueueBackend::Redis),
            _ => Err("expected postgres or redis".into()),
        }
    }
}

/// At most `calls` within any `window`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub calls: i64,
    pub window: Duration,
}

/// Parses `name=CALLS[/WINDOW]` pairs separated by commas (the window is a
/// [`parse_duration`], one minute when left out); `none` means no limits.
pub fn parse_rate_limits(text: &str) -> Result<BTreeMap<String, RateLimit>, String> {
    let mut limits = BTreeMap::new();
    if text.trim().eq_ignore_ascii_case("none") {
        return Ok(limits);
    }
    for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, rate) = pair.split_once('=').ok_or_else(|| {
            format!("{pair:?} is not NAME=CALLS/WINDOW (like github_search=10/1m)")
        })?;
        let (calls, window) = rate.split_once('/').unwrap_or((rate, "1m"));
        let calls: i64 = calls
            .trim()
            .parse()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| format!("{pair:?}: calls must be a whole number >= 1"))?;
        let window = parse_duration(window).map_err(|e| format!("{pair:?}: {e}"))?;
        limits.insert(name.trim().to_string(), RateLimit { calls, window });
    }
    Ok(limits)
}

fn rate_limits<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, RateLimit>, D::Error> {
    parse_rate_limits(&String::deserialize(d)?).map_err(D::Error::custom)
}

fn shadow<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ShadowReasoner>, D::Error> {
    let text = String::deserialize(d)?;
    match text.trim() {
        "off" | "none" => Ok(None),
        other => other.parse().map(Some).map_err(D::Error::custom),
    }
}

fn zero_is_unset<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    de::parsed(d).map(|n: usize| (n > 0).then_some(n))
}

impl Settings {
    /// Reads the settings from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::load(&Source::env())
    }

    /// Reads the settings from `source`, then checks they fit together.
    pub fn load(source: &Source) -> Result<Self, ConfigError> {
        let settings = Self {
            thresholds: source.load("")?,
            allowed: source.load("")?,
            chaos: source.load("")?,
            ..source.load("")?
        };
        settings.validate()?;
        Ok(settings)
    }

    /// The variables [`Settings::load`] reads.
    pub fn variables() -> Vec<String> {
        [
            variables::<Settings>(""),
            variables::<Thresholds>(""),
            variables::<AllowList>(""),
            variables::<Chaos>(""),
        ]
        .concat()
    }

    /// Slots of the Redis bulk queue per worker process.
    pub fn bulk_concurrency(&self) -> usize {
        self.bulk_concurrency
            .unwrap_or(self.worker_concurrency / 4)
            .max(1)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let bad = |name, value: String, reason: &str| Err(ConfigError::new(name, value, reason));
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
        if self.db_pool_size < 3 {
            return bad(
                "FAULTLINE_DB_POOL_SIZE",
                self.db_pool_size.to_string(),
                "must be >= 3",
            );
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ALLOWED_JENKINS_JOBS, ALLOWED_REPOSITORIES, ExposeSecret};

    fn settings(pairs: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        Settings::load(&pairs.iter().copied().collect())
    }

    #[test]
    fn defaults_apply_when_nothing_is_set() {
        let s = settings(&[]).unwrap();
        assert_eq!(s.max_iterations, 5);
        assert_eq!(s.database_url.expose_secret(), DEFAULT_DATABASE_URL);
        assert!(s.chaos.step_delay.is_none());
    }

    #[test]
    fn a_bad_number_names_the_variable() {
        let err = settings(&[("FAULTLINE_MAX_ATTEMPTS", "lots")]).unwrap_err();
        assert_eq!(err.name, "FAULTLINE_MAX_ATTEMPTS");
        assert!(err.to_string().contains("lots"));
    }

    #[test]
    fn integers_are_not_read_through_floats() {
        for (name, value) in [
            ("FAULTLINE_MAX_ATTEMPTS", "2.5"),
            ("FAULTLINE_RETRY_BASE_MS", "1e3"),
            ("FAULTLINE_QUEUE_HEARTBEAT_SECS", "3.0"),
        ] {
            let err = settings(&[(name, value)]).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("invalid value \"{value}\" for {name}: invalid digit found in string")
            );
        }
        let s = settings(&[
            ("FAULTLINE_RETRY_MAX_MS", " 9007199254740993 "),
            ("FAULTLINE_QUEUE_HEARTBEAT_SECS", "7"),
            ("FAULTLINE_CHAOS_TOOL_DELAY_MS", "0"),
            ("FAULTLINE_CHAOS_STEP_DELAY_MS", "15"),
            ("FAULTLINE_BULK_CONCURRENCY", "0"),
        ])
        .unwrap();
        // 2^53 + 1: a float would have rounded it.
        assert_eq!(s.retry_max, Duration::from_millis(9_007_199_254_740_993));
        assert_eq!(s.queue_heartbeat, Duration::from_secs(7));
        assert_eq!(s.chaos.tool_delay, None);
        assert_eq!(s.chaos.step_delay, Some(Duration::from_millis(15)));
        assert_eq!((s.bulk_concurrency, s.bulk_concurrency()), (None, 2));
    }

    #[test]
    fn blank_is_unset() {
        let s = settings(&[
            ("REDIS_URL", " "),
            ("FAULTLINE_MAX_ITERATIONS", ""),
            ("REVIEW_CLAIM_TTL", "\t"),
        ])
        .unwrap();
        assert_eq!(s.redis_url.expose_secret(), DEFAULT_REDIS_URL);
        assert_eq!(s.max_iterations, 5);
        assert_eq!(s.review_claim_ttl, Duration::from_secs(1800));
    }

    #[test]
    fn secrets_do_not_print() {
        let s = settings(&[("DATABASE_URL", "postgres://u:hunter2@h/db")]).unwrap();
        assert!(!format!("{s:?}").contains("hunter2"));
    }

    #[test]
    fn queue_backend_is_checked() {
        assert_eq!(settings(&[]).unwrap().queue_backend, QueueBackend::Postgres);
        let s = settings(&[("QUEUE_BACKEND", "Redis")]).unwrap();
        assert_eq!(s.queue_backend, QueueBackend::Redis);
        let err = settings(&[("QUEUE_BACKEND", "kafka")]).unwrap_err();
        assert_eq!(err.name, "QUEUE_BACKEND");
    }

    #[test]
    fn durations_take_units_and_name_bad_ones() {
        let err = settings(&[("REVIEW_CLAIM_TTL", "soon")]).unwrap_err();
        assert_eq!(err.name, "REVIEW_CLAIM_TTL");
        assert_eq!(
            settings(&[]).unwrap().review_claim_ttl,
            Duration::from_secs(1800)
        );
    }

    #[test]
    fn tool_rate_limits_parse_and_name_bad_ones() {
        let limits = settings(&[]).unwrap().tool_rate_limits;
        assert_eq!(
            limits["github_search"],
            RateLimit {
                calls: 10,
                window: Duration::from_secs(60)
            }
        );
        let s =
            settings(&[("TOOL_RATE_LIMITS", "github_file=100/30s, jenkins_console=5")]).unwrap();
        assert_eq!(s.tool_rate_limits.len(), 2);
        assert_eq!(
            s.tool_rate_limits["github_file"].window,
            Duration::from_secs(30)
        );
        assert_eq!(s.tool_rate_limits["jenkins_console"].calls, 5);
        assert!(
            settings(&[("TOOL_RATE_LIMITS", "none")])
                .unwrap()
                .tool_rate_limits
                .is_empty()
        );
        for bad in [
            "github_file",
            "github_file=0/1m",
            "github_file=ten",
            "github_file=3/soon",
        ] {
            let err = settings(&[("TOOL_RATE_LIMITS", bad)]).unwrap_err();
            assert_eq!(err.name, "TOOL_RATE_LIMITS", "{bad}");
        }
    }

    #[test]
    fn the_allow_list_is_read_with_the_settings() {
        assert_eq!(settings(&[]).unwrap().allowed, AllowList::default());
        let s = settings(&[(ALLOWED_REPOSITORIES, "octo-org/*")]).unwrap();
        assert!(!s.allowed.allows_repository("acme", "secrets"));
        let err = settings(&[(ALLOWED_JENKINS_JOBS, "a//b")]).unwrap_err();
        assert_eq!(err.name, ALLOWED_JENKINS_JOBS);
    }

    #[test]
    fn thresholds_must_be_ordered() {
        assert!(settings(&[("FAULTLINE_CONFIDENCE_AUTO", "0.3")]).is_err());
        let s = settings(&[("FAULTLINE_CONFIDENCE_SELF_CORRECT", " 0.4 ")]).unwrap();
        assert_eq!(s.thresholds.self_correct, 0.4);
    }

    #[test]
    fn every_group_is_listed_once() {
        let vars = Settings::variables();
        for name in [
            "DATABASE_URL",
            "FAULTLINE_CONFIDENCE_AUTO",
            ALLOWED_REPOSITORIES,
            ALLOWED_JENKINS_JOBS,
            "FAULTLINE_CHAOS_TOOL_DELAY_MS",
            "REVIEW_CLAIM_TTL",
        ] {
            assert_eq!(vars.iter().filter(|v| *v == name).count(), 1, "{name}");
        }
        assert!(!vars.iter().any(|v| v == "thresholds" || v == "allowed"));
    }
}

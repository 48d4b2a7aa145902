//! Typed settings, read once at start from `FAULTLINE_*` environment
//! variables (documented in the README's configuration table).

mod allowed;

use std::{collections::BTreeMap, fmt, time::Duration};

pub use allowed::{
    ALLOWED_JENKINS_JOBS, ALLOWED_REPOSITORIES, AllowList, parse_repo, valid_job_name,
};

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
    /// `QUEUE_BACKEND`: where step tasks travel (Postgres is always the truth).
    pub queue_backend: QueueBackend,
    /// `REDIS_URL`: the broker when `queue_backend` is `redis`.
    pub redis_url: Secret,
    /// `FAULTLINE_REDIS_NAMESPACE`: prefix of the Redis queue keys, so
    /// several deployments (or tests) can share one Redis.
    pub redis_namespace: String,
    /// Redis broker only: a run queued this long whose step task is not
    /// waiting in Redis is pushed again (covers the commit/push gap and a
    /// wiped Redis, I6).
    pub requeue_after: Duration,
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
    /// `FAULTLINE_BULK_CONCURRENCY` (Redis broker): slots of the bulk queue
    /// per worker, on top of the live ones; unset: a quarter of them, at least 1.
    pub bulk_concurrency: Option<usize>,
    /// Timeout of one tool call.
    pub tool_timeout: Duration,
    /// `TOOL_RATE_LIMITS`: calls per window allowed to a tool across all
    /// workers (`github_search=10/1m,...`; `none` for no limits). Default:
    /// GitHub's own code-search limit, so workers wait instead of being refused.
    pub tool_rate_limits: BTreeMap<String, RateLimit>,
    /// `TOOL_RATE_LIMIT_MAX_WAIT_MS`: the longest a call waits for its
    /// tool's limit in-process; past it the step is retried later (durably).
    pub tool_rate_limit_max_wait: Duration,
    /// How long SIGTERM waits for in-flight steps before releasing them.
    pub shutdown_grace: Duration,
    /// Confidence routing thresholds (DESIGN.md).
    pub thresholds: Thresholds,
    /// `REVIEW_CLAIM_TTL`: how long a reviewer's claim holds before the item
    /// returns to the queue (checked in the queries, no background job).
    pub review_claim_ttl: Duration,
    /// `FAULTLINE_ALLOWED_REPOSITORIES`, `FAULTLINE_ALLOWED_JENKINS_JOBS`:
    /// the repositories and Jenkins jobs analysed at all (unset: any).
    pub allowed: AllowList,
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

pub const DEFAULT_TOOL_RATE_LIMITS: &str = "github_search=10/1m";

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

pub const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379";

/// Fault injection for crash and retry tests; every knob is off unless set.
#[derive(Debug, Clone, Default)]
pub struct Chaos {
    /// `FAULTLINE_CHAOS_STEP_DELAY_MS`: sleep inside each step, before its commit.
    pub step_delay: Option<Duration>,
    /// `FAULTLINE_CHAOS_TOOL_DELAY_MS`: sleep inside each tool call (so the tool timeout can fire).
    pub tool_delay: Option<Duration>,
}

/// The `user:password@` part of a URL (`scheme://userinfo@host/…`), as a
/// byte range of `url`, if it has one. Read the way URL parsers read special
/// schemes: any run of `/` or `\` after `scheme:` (`https:/u:p@h`,
/// `https:\\u:p@h` carry credentials too).
fn userinfo(url: &str) -> Option<std::ops::Range<usize>> {
    let scheme_end = url.find(':')?;
    if !url[..scheme_end]
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
    {
        return None;
    }
    let after = &url[scheme_end + 1..];
    let start = scheme_end + 1 + (after.len() - after.trim_start_matches(['/', '\\']).len());
    let authority_end = url[start..]
        .find(['/', '\\', '?', '#'])
        .map_or(url.len(), |i| start + i);
    let at = url[start..authority_end].rfind('@')? + start;
    Some(start..at)
}

/// Refuses a URL with credentials in it (`https://user:token@host/`): they
/// would show wherever the URL is shown (start-up log, `log_fetches`, the
/// journal, the model's prompt, the trace API). Each service has its own
/// variables for credentials. The error shows the URL without them.
pub fn no_credentials(name: &'static str, url: &str) -> Result<(), ConfigError> {
    match userinfo(url) {
        Some(range) => Err(ConfigError {
            name,
            value: format!("{}***{}", &url[..range.start], &url[range.end..]),
            reason: format!(
                "must not carry credentials (user:password@); {}",
                match name {
                    "JENKINS_URL" => "set JENKINS_USER and JENKINS_API_TOKEN",
                    "GITHUB_API_URL" => "set GITHUB_TOKEN",
                    _ => "put the secret in its own variable",
                }
            ),
        }),
        None => Ok(()),
    }
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
            queue_backend: env.parse("QUEUE_BACKEND", QueueBackend::Postgres)?,
            redis_url: Secret::new(
                lookup("REDIS_URL")
                    .filter(|u| !u.trim().is_empty())
                    .unwrap_or_else(|| DEFAULT_REDIS_URL.to_string()),
            ),
            redis_namespace: env.parse("FAULTLINE_REDIS_NAMESPACE", "faultline".to_string())?,
            requeue_after: env.millis("FAULTLINE_REQUEUE_AFTER_MS", 10_000)?,
            max_iterations: env.parse("FAULTLINE_MAX_ITERATIONS", 5)?,
            max_attempts: env.parse("FAULTLINE_MAX_ATTEMPTS", 5)?,
            retry_base: env.millis("FAULTLINE_RETRY_BASE_MS", 2_000)?,
            retry_max: env.millis("FAULTLINE_RETRY_MAX_MS", 300_000)?,
            lease_ttl: env.millis("FAULTLINE_LEASE_TTL_MS", 10_000)?,
            reconcile_interval: env.millis("FAULTLINE_RECONCILE_INTERVAL_MS", 2_000)?,
            poll_interval: env.millis("FAULTLINE_POLL_INTERVAL_MS", 1_000)?,
            queue_heartbeat: Duration::from_secs(env.parse("FAULTLINE_QUEUE_HEARTBEAT_SECS", 3)?),
            worker_concurrency: env.parse("FAULTLINE_WORKER_CONCURRENCY", 8)?,
            bulk_concurrency: Some(env.parse("FAULTLINE_BULK_CONCURRENCY", 0)?).filter(|&n| n > 0),
            tool_timeout: env.millis("FAULTLINE_TOOL_TIMEOUT_MS", 30_000)?,
            tool_rate_limits: parse_rate_limits(
                &lookup("TOOL_RATE_LIMITS")
                    .filter(|v| !v.trim().is_empty())
                    .unwrap_or_else(|| DEFAULT_TOOL_RATE_LIMITS.to_string()),
            )
            .map_err(|reason| ConfigError {
                name: "TOOL_RATE_LIMITS",
                value: lookup("TOOL_RATE_LIMITS").unwrap_or_default(),
                reason,
            })?,
            tool_rate_limit_max_wait: env.millis("TOOL_RATE_LIMIT_MAX_WAIT_MS", 60_000)?,
            shutdown_grace: env.millis("FAULTLINE_SHUTDOWN_GRACE_MS", 20_000)?,
            thresholds,
            review_claim_ttl: env.duration("REVIEW_CLAIM_TTL", Duration::from_secs(30 * 60))?,
            allowed: AllowList::from_lookup(&lookup)?,
            chaos: Chaos {
                step_delay: env.optional_millis("FAULTLINE_CHAOS_STEP_DELAY_MS")?,
                tool_delay: env.optional_millis("FAULTLINE_CHAOS_TOOL_DELAY_MS")?,
            },
        };
        settings.validate()?;
        Ok(settings)
    }

    /// Slots of the Redis bulk queue per worker process.
    pub fn bulk_concurrency(&self) -> usize {
        self.bulk_concurrency
            .unwrap_or(self.worker_concurrency / 4)
            .max(1)
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

/// A positive duration: a number with a unit `ms`, `s`, `m`, `h` or `d`
/// (`90s`, `30m`, `2h`, `7d`); a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let n: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (like 90s, 30m, 2h, 7d)"))?;
    let secs = match unit.trim() {
        "" | "s" => n,
        "ms" => n / 1000.0,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        "d" => n * 86_400.0,
        other => {
            return Err(format!(
                "unknown unit {other:?} in {text:?} (use ms, s, m, h or d)"
            ));
        }
    };
    if !(secs > 0.0 && secs.is_finite()) {
        return Err(format!("{text:?} must be a positive duration"));
    }
    // Beyond this, a duration overflows `Duration` (a panic) or Postgres' interval.
    const MAX_SECS: f64 = 100.0 * 365.0 * 86_400.0;
    if secs > MAX_SECS {
        return Err(format!("{text:?} is too long (at most 100 years)"));
    }
    Ok(Duration::from_secs_f64(secs))
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

    fn duration(&self, name: &'static str, default: Duration) -> Result<Duration, ConfigError> {
        match (self.0)(name) {
            Some(v) if !v.trim().is_empty() => parse_duration(&v).map_err(|reason| ConfigError {
                name,
                value: v.clone(),
                reason,
            }),
            _ => Ok(default),
        }
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
    fn credentials_in_urls_are_refused_without_showing_them() {
        let err = no_credentials("JENKINS_URL", "https://bot:s3cret@ci.example.com/").unwrap_err();
        let shown = err.to_string();
        assert!(
            !shown.contains("s3cret") && !shown.contains("bot"),
            "{shown}"
        );
        assert!(shown.contains("JENKINS_API_TOKEN"), "{shown}");
        assert!(no_credentials("GITHUB_API_URL", "https://api.github.com/x@y").is_ok());
        assert!(no_credentials("NOTIFY_WEBHOOK_URL", "https://token@hooks.example/").is_err());
        // What a URL parser still reads as user and password.
        assert!(no_credentials("JENKINS_URL", "https:/bot:pw@ci/").is_err());
        assert!(no_credentials("JENKINS_URL", "https:\\\\bot:pw@ci/").is_err());
        assert!(no_credentials("JENKINS_URL", "https://ci.example.com:8443/jenkins/").is_ok());
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
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2d"), Ok(Duration::from_secs(172_800)));
        assert!(parse_duration("99999999999999999999").is_err());
        assert!(parse_duration("36500d").is_ok() && parse_duration("36501d").is_err());
        assert!(parse_duration("0s").is_err());
        assert!(
            parse_duration("5 weeks")
                .unwrap_err()
                .contains("unknown unit")
        );
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
    }
}

//! Typed settings, read once at start from environment variables
//! (docs/configuration.md is the reference table).
//!
//! Every binary reads its settings the same way: one [`Source`] (the
//! process environment, or a map in tests) and [`Source::load`], which
//! deserializes a serde struct whose field names are the variables' names.
//! The names a loader reads are therefore its structs' own field names
//! ([`variables`]), and a test checks them against the reference.
//!
//! # Layout
//! - `source` — [`Source`] (blank means unset) and the loader.
//! - `de` — readers for `#[serde(deserialize_with)]`: the units
//!   (`_MS` integer milliseconds, `_SECS` integer seconds, humane `30m`),
//!   secrets, values parsed with `FromStr`.
//! - `duration` — [`parse_duration`], the humane durations.
//! - `settings` — [`Settings`], what the producer and the workers share.
//! - `allowed` — [`AllowList`], the repositories and Jenkins jobs analysed.

mod allowed;
pub mod de;
mod duration;
mod settings;
mod source;

pub use allowed::{
    ALLOWED_JENKINS_JOBS, ALLOWED_REPOSITORIES, AllowList, RepositoryList, parse_repo,
    valid_job_name,
};
pub use duration::parse_duration;
/// Secrets (tokens, keys, URLs with passwords) never print: `Debug` shows
/// `[REDACTED]`; `expose_secret()` only where one is handed to a client.
pub use secrecy::{ExposeSecret, SecretString};
pub use settings::{
    Chaos, DEFAULT_DATABASE_URL, DEFAULT_REDIS_URL, DEFAULT_TOOL_RATE_LIMITS, QueueBackend,
    RateLimit, Settings, Thresholds, parse_rate_limits,
};
pub use source::{Source, variables};

/// A setting that could not be parsed.
#[derive(Debug, thiserror::Error)]
#[error("invalid value {value:?} for {name}: {reason}")]
pub struct ConfigError {
    /// The variable, `FAULTLINE_MAX_ATTEMPTS`.
    pub name: String,
    pub value: String,
    pub reason: String,
}

impl ConfigError {
    pub fn new(
        name: impl Into<String>,
        value: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
            reason: reason.into(),
        }
    }
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
        Some(range) => Err(ConfigError::new(
            name,
            format!("{}***{}", &url[..range.start], &url[range.end..]),
            format!(
                "must not carry credentials (user:password@); {}",
                match name {
                    "JENKINS_URL" => "set JENKINS_USER and JENKINS_API_TOKEN",
                    "GITHUB_API_URL" => "set GITHUB_TOKEN",
                    _ => "put the secret in its own variable",
                }
            ),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}

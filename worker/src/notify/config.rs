//! Notification settings, read once from the environment. Secrets (the
//! webhook's HMAC key, the GitHub token) are [`Secret`]s and never print.

use std::time::Duration;

use faultline_shared::config::{AllowList, ConfigError, Secret, no_credentials, parse_duration};

#[derive(Debug, Clone)]
pub struct NotifyConfig {
    /// `NOTIFY_WEBHOOK_URL` + `NOTIFY_WEBHOOK_SECRET`: a generic webhook,
    /// signed `X-Faultline-Signature: sha256=<HMAC-SHA256(body)>`.
    pub webhook: Option<(String, Secret)>,
    /// `GITHUB_TOKEN` (+ `GITHUB_API_URL`): a check run on the failed commit,
    /// for events that came from GitHub.
    pub github: Option<(String, Secret)>,
    /// `NOTIFY_ON_REVIEW`: also notify runs that ended in the review queue.
    pub on_review: bool,
    /// `NOTIFY_MAX_ATTEMPTS`: attempts before a notification is dead.
    pub max_attempts: i32,
    /// `NOTIFY_RETRY_BASE` / `NOTIFY_RETRY_MAX`: backoff base and cap.
    pub retry_base: Duration,
    pub retry_max: Duration,
    /// `NOTIFY_TIMEOUT`: one HTTP request.
    pub timeout: Duration,
    /// `NOTIFY_POLL_INTERVAL`: how often due retries are looked for (run
    /// completions wake the loop at once).
    pub poll_interval: Duration,
    /// `FAULTLINE_ALLOWED_REPOSITORIES`: check runs are written only there
    /// (the worker sets it from its `Settings`; unset allows any).
    pub allowed: AllowList,
}

impl NotifyConfig {
    /// `None` when no target is configured (nothing to deliver to).
    pub fn from_env() -> Result<Option<Self>, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, ConfigError> {
        let get = |name: &str| {
            lookup(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let bad = |name: &'static str, value: &str, reason: &str| ConfigError {
            name,
            value: value.to_string(),
            reason: reason.to_string(),
        };
        let duration = |name: &'static str, default: &str| {
            let v = get(name).unwrap_or_else(|| default.to_string());
            parse_duration(&v).map_err(|e| bad(name, &v, &e))
        };
        if let Some(url) = get("NOTIFY_WEBHOOK_URL") {
            no_credentials("NOTIFY_WEBHOOK_URL", &url)?;
        }
        let webhook = match (get("NOTIFY_WEBHOOK_URL"), get("NOTIFY_WEBHOOK_SECRET")) {
            (None, _) => None,
            (Some(url), _) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                return Err(bad("NOTIFY_WEBHOOK_URL", &url, "must be an http(s) URL"));
            }
            (Some(_), None) => {
                return Err(bad(
                    "NOTIFY_WEBHOOK_SECRET",
                    "",
                    "is required with NOTIFY_WEBHOOK_URL (deliveries are signed)",
                ));
            }
            (Some(url), Some(secret)) => Some((url, Secret::new(secret))),
        };
        let github = match get("GITHUB_TOKEN") {
            None => None,
            Some(token) => {
                let api = get("GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".into());
                no_credentials("GITHUB_API_URL", &api)?;
                Some((api.trim_end_matches('/').to_string(), Secret::new(token)))
            }
        };
        if webhook.is_none() && github.is_none() {
            return Ok(None);
        }
        let on_review = match get("NOTIFY_ON_REVIEW").as_deref() {
            None | Some("false" | "0" | "no") => false,
            Some("true" | "1" | "yes") => true,
            Some(other) => return Err(bad("NOTIFY_ON_REVIEW", other, "must be true or false")),
        };
        let attempts = get("NOTIFY_MAX_ATTEMPTS").unwrap_or_else(|| "8".into());
        let max_attempts = match attempts.parse::<i32>() {
            Ok(n) if n >= 1 => n,
            _ => {
                return Err(bad(
                    "NOTIFY_MAX_ATTEMPTS",
                    &attempts,
                    "must be an integer >= 1",
                ));
            }
        };
        Ok(Some(Self {
            webhook,
            github,
            on_review,
            max_attempts,
            retry_base: duration("NOTIFY_RETRY_BASE", "2s")?,
            retry_max: duration("NOTIFY_RETRY_MAX", "10m")?,
            timeout: duration("NOTIFY_TIMEOUT", "10s")?,
            poll_interval: duration("NOTIFY_POLL_INTERVAL", "1s")?,
            allowed: AllowList::default(),
        }))
    }

    /// Run outcomes that are notified.
    pub fn kinds(&self) -> Vec<&'static str> {
        if self.on_review {
            vec!["completed", "needs_review"]
        } else {
            vec!["completed"]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(pairs: &[(&str, &str)]) -> Result<Option<NotifyConfig>, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        NotifyConfig::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn nothing_configured_means_no_delivery_loop() {
        assert!(config(&[]).unwrap().is_none());
    }

    #[test]
    fn a_webhook_needs_a_secret_and_secrets_do_not_print() {
        let err = config(&[("NOTIFY_WEBHOOK_URL", "http://x/hook")]).unwrap_err();
        assert_eq!(err.name, "NOTIFY_WEBHOOK_SECRET");
        let c = config(&[
            ("NOTIFY_WEBHOOK_URL", "http://x/hook"),
            ("NOTIFY_WEBHOOK_SECRET", "hunter2"),
            ("GITHUB_TOKEN", "ghp_hunter3"),
            ("NOTIFY_ON_REVIEW", "true"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(c.kinds(), ["completed", "needs_review"]);
        assert_eq!(c.github.as_ref().unwrap().0, "https://api.github.com");
        let shown = format!("{c:?}");
        assert!(!shown.contains("hunter"), "{shown}");
        let err = config(&[("GITHUB_TOKEN", "t"), ("NOTIFY_MAX_ATTEMPTS", "0")]).unwrap_err();
        assert_eq!(err.name, "NOTIFY_MAX_ATTEMPTS");
    }

    #[test]
    fn urls_with_credentials_are_refused_without_showing_them() {
        for (name, pairs) in [
            (
                "NOTIFY_WEBHOOK_URL",
                [
                    ("NOTIFY_WEBHOOK_URL", "https://u:hunter2@hooks.example/x"),
                    ("NOTIFY_WEBHOOK_SECRET", "s"),
                ],
            ),
            (
                "GITHUB_API_URL",
                [
                    ("GITHUB_TOKEN", "t"),
                    (
                        "GITHUB_API_URL",
                        "https://x-access-token:hunter2@ghe.example/api/v3",
                    ),
                ],
            ),
        ] {
            let err = config(&pairs).unwrap_err();
            assert_eq!(err.name, name);
            assert!(!err.to_string().contains("hunter2"), "{err}");
        }
    }
}

//! Notification settings, read once at start. Secrets (the webhook's HMAC
//! key, the GitHub token) are [`SecretString`]s and never print.

use std::time::Duration;

use faultline_shared::config::{
    AllowList, ConfigError, ExposeSecret, RepositoryList, SecretString, Source, de, no_credentials,
    variables,
};
use serde::{Deserialize, Deserializer, de::Error as _};

use crate::sources::jenkins::JenkinsConfig;

#[derive(Debug, Clone)]
pub struct NotifyConfig {
    /// `NOTIFY_WEBHOOK_URL` + `NOTIFY_WEBHOOK_SECRET`: a generic webhook,
    /// signed `X-Faultline-Signature: sha256=<HMAC-SHA256(body)>`.
    pub webhook: Option<(String, SecretString)>,
    /// `GITHUB_TOKEN` (+ `GITHUB_API_URL`): a check run on the failed commit,
    /// for events that came from GitHub.
    pub github: Option<(String, SecretString)>,
    /// `NOTIFY_GITHUB_PR_COMMENTS`: repositories (`owner/name`, `owner/*`)
    /// whose pull requests get one Faultline comment, edited in place, with
    /// every failed job of the head commit. Needs `GITHUB_TOKEN`
    /// (`issues: write` or `pull_requests: write`).
    pub pr_comments: RepositoryList,
    /// `NOTIFY_RERUN_REPOSITORIES`: repositories (`owner/name`, `owner/*`;
    /// a Jenkins build by the repository its SCM names) whose failed jobs
    /// are re-run once when the verdict is `infrastructure` or `flaky` with
    /// confidence ≥ `NOTIFY_RERUN_MIN_CONFIDENCE` (default 0.7). GitHub
    /// needs `GITHUB_TOKEN` (`actions: write`); Jenkins `JENKINS_URL` and
    /// its credentials.
    pub reruns: RepositoryList,
    pub rerun_min_confidence: f32,
    /// `JENKINS_*`: where Jenkins re-runs are requested.
    pub jenkins: Option<JenkinsConfig>,
    /// `NOTIFY_SLACK_WEBHOOK_URL`: a Slack incoming webhook (Block Kit).
    /// The URL is the credential, so it never prints.
    pub slack: Option<SecretString>,
    /// `NOTIFY_CONSOLE_URL`: the review console's public base URL, for
    /// links to an analysis (`{base}/ui/analyses/{id}`); none without it.
    pub console_url: Option<String>,
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
    /// `NOTIFY_REACTION_SWEEP`: how often the 👍 / 👎 of recent
    /// pull-request comments are read (GitHub sends no webhook for them),
    /// and how long one comment's stay unread before it is read again.
    pub reaction_sweep: Duration,
    /// `FAULTLINE_ALLOWED_REPOSITORIES`: check runs are written only there
    /// (the worker sets it from its `Settings`; unset allows any).
    pub allowed: AllowList,
}

/// Where notifications go; read first: without a target nothing else is.
/// Every value is trimmed.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Targets {
    #[serde(rename = "NOTIFY_WEBHOOK_URL", deserialize_with = "de::parsed_some")]
    webhook_url: Option<String>,
    #[serde(
        rename = "NOTIFY_WEBHOOK_SECRET",
        deserialize_with = "de::trimmed_secret_some"
    )]
    webhook_secret: Option<SecretString>,
    #[serde(rename = "GITHUB_TOKEN", deserialize_with = "de::trimmed_secret_some")]
    github_token: Option<SecretString>,
    /// Default: `https://api.github.com`.
    #[serde(rename = "GITHUB_API_URL", deserialize_with = "de::parsed_some")]
    github_api_url: Option<String>,
    #[serde(
        rename = "NOTIFY_SLACK_WEBHOOK_URL",
        deserialize_with = "de::trimmed_secret_some"
    )]
    slack_webhook_url: Option<SecretString>,
    #[serde(rename = "NOTIFY_CONSOLE_URL", deserialize_with = "de::parsed_some")]
    console_url: Option<String>,
    #[serde(
        rename = "NOTIFY_GITHUB_PR_COMMENTS",
        deserialize_with = "de::parsed_some"
    )]
    pr_comments: Option<String>,
    #[serde(
        rename = "NOTIFY_RERUN_REPOSITORIES",
        deserialize_with = "de::parsed_some"
    )]
    reruns: Option<String>,
}

/// How notifications are delivered.
#[derive(Deserialize)]
#[serde(default)]
struct Delivery {
    #[serde(rename = "NOTIFY_ON_REVIEW", deserialize_with = "true_or_false")]
    on_review: bool,
    #[serde(rename = "NOTIFY_MAX_ATTEMPTS", deserialize_with = "attempts")]
    max_attempts: i32,
    #[serde(rename = "NOTIFY_RETRY_BASE", deserialize_with = "de::humane")]
    retry_base: Duration,
    #[serde(rename = "NOTIFY_RETRY_MAX", deserialize_with = "de::humane")]
    retry_max: Duration,
    #[serde(rename = "NOTIFY_TIMEOUT", deserialize_with = "de::humane")]
    timeout: Duration,
    #[serde(rename = "NOTIFY_POLL_INTERVAL", deserialize_with = "de::humane")]
    poll_interval: Duration,
    #[serde(rename = "NOTIFY_REACTION_SWEEP", deserialize_with = "de::humane")]
    reaction_sweep: Duration,
    #[serde(rename = "NOTIFY_RERUN_MIN_CONFIDENCE", deserialize_with = "share")]
    rerun_min_confidence: f32,
}

impl Default for Delivery {
    fn default() -> Self {
        Self {
            on_review: false,
            max_attempts: 8,
            retry_base: Duration::from_secs(2),
            retry_max: Duration::from_secs(10 * 60),
            timeout: Duration::from_secs(10),
            poll_interval: Duration::from_secs(1),
            reaction_sweep: Duration::from_secs(15 * 60),
            rerun_min_confidence: 0.7,
        }
    }
}

fn true_or_false<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    match String::deserialize(d)?.trim() {
        "false" | "0" | "no" => Ok(false),
        "true" | "1" | "yes" => Ok(true),
        _ => Err(D::Error::custom("must be true or false")),
    }
}

fn share<'de, D: Deserializer<'de>>(d: D) -> Result<f32, D::Error> {
    match String::deserialize(d)?.trim().parse::<f32>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(D::Error::custom("must be a number from 0 to 1")),
    }
}

fn attempts<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    match String::deserialize(d)?.trim().parse::<i32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(D::Error::custom("must be an integer >= 1")),
    }
}

impl NotifyConfig {
    /// `None` when no target is configured (nothing to deliver to).
    pub fn load(source: &Source) -> Result<Option<Self>, ConfigError> {
        let targets: Targets = source.load("")?;
        if let Some(url) = &targets.webhook_url {
            no_credentials("NOTIFY_WEBHOOK_URL", url)?;
        }
        let webhook = match (targets.webhook_url, targets.webhook_secret) {
            (None, _) => None,
            (Some(url), _) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                return Err(ConfigError::new(
                    "NOTIFY_WEBHOOK_URL",
                    url,
                    "must be an http(s) URL",
                ));
            }
            (Some(_), None) => {
                return Err(ConfigError::new(
                    "NOTIFY_WEBHOOK_SECRET",
                    "",
                    "is required with NOTIFY_WEBHOOK_URL (deliveries are signed)",
                ));
            }
            (Some(url), Some(secret)) => Some((url, secret)),
        };
        let github = match targets.github_token {
            None => None,
            Some(token) => {
                let api = targets
                    .github_api_url
                    .unwrap_or_else(|| "https://api.github.com".into());
                no_credentials("GITHUB_API_URL", &api)?;
                Some((api.trim_end_matches('/').to_string(), token))
            }
        };
        let slack = match targets.slack_webhook_url {
            Some(url)
                if !(url.expose_secret().starts_with("https://")
                    || url.expose_secret().starts_with("http://")) =>
            {
                // The URL is the secret: the error does not show it.
                return Err(ConfigError::new(
                    "NOTIFY_SLACK_WEBHOOK_URL",
                    "",
                    "must be an http(s) URL (https://hooks.slack.com/services/…)",
                ));
            }
            other => other,
        };
        let console_url = match targets.console_url {
            Some(url) if !(url.starts_with("https://") || url.starts_with("http://")) => {
                return Err(ConfigError::new(
                    "NOTIFY_CONSOLE_URL",
                    url,
                    "must be an http(s) URL",
                ));
            }
            other => other.map(|u| u.trim_end_matches('/').to_string()),
        };
        let pr_comments = match &targets.pr_comments {
            None => RepositoryList::default(),
            Some(text) => RepositoryList::parse(text)
                .map_err(|why| ConfigError::new("NOTIFY_GITHUB_PR_COMMENTS", text, &why))?,
        };
        if !pr_comments.is_empty() && github.is_none() {
            return Err(ConfigError::new(
                "NOTIFY_GITHUB_PR_COMMENTS",
                targets.pr_comments.as_deref().unwrap_or(""),
                "needs GITHUB_TOKEN (the comment is written with it)",
            ));
        }
        let reruns = match &targets.reruns {
            None => RepositoryList::default(),
            Some(text) => RepositoryList::parse(text)
                .map_err(|why| ConfigError::new("NOTIFY_RERUN_REPOSITORIES", text, &why))?,
        };
        let jenkins = if reruns.is_empty() {
            None
        } else {
            JenkinsConfig::load(source)?
        };
        if !reruns.is_empty() && github.is_none() && jenkins.is_none() {
            return Err(ConfigError::new(
                "NOTIFY_RERUN_REPOSITORIES",
                targets.reruns.as_deref().unwrap_or(""),
                "needs GITHUB_TOKEN or JENKINS_URL (the re-run is requested with them)",
            ));
        }
        if webhook.is_none() && github.is_none() && slack.is_none() && jenkins.is_none() {
            return Ok(None);
        }
        let delivery: Delivery = source.load("")?;
        Ok(Some(Self {
            webhook,
            github,
            pr_comments,
            reruns,
            rerun_min_confidence: delivery.rerun_min_confidence,
            jenkins,
            slack,
            console_url,
            on_review: delivery.on_review,
            max_attempts: delivery.max_attempts,
            retry_base: delivery.retry_base,
            retry_max: delivery.retry_max,
            timeout: delivery.timeout,
            poll_interval: delivery.poll_interval,
            reaction_sweep: delivery.reaction_sweep,
            allowed: AllowList::default(),
        }))
    }

    /// The variables [`NotifyConfig::load`] reads.
    pub fn variables() -> Vec<String> {
        [variables::<Targets>(""), variables::<Delivery>("")].concat()
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

    fn config(pairs: &[(&str, &str)]) -> Result<Option<NotifyConfig>, ConfigError> {
        NotifyConfig::load(&pairs.iter().copied().collect())
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
    fn pull_request_comments_are_opt_in_per_repository_and_need_the_token() {
        let c = config(&[
            ("GITHUB_TOKEN", "ghs_x"),
            ("NOTIFY_GITHUB_PR_COMMENTS", "octo/app, tools/*"),
        ])
        .unwrap()
        .unwrap();
        assert!(c.pr_comments.contains("octo/app"));
        assert!(c.pr_comments.contains("tools/lint"));
        assert!(!c.pr_comments.contains("octo/other"));
        let c = config(&[("GITHUB_TOKEN", "ghs_x")]).unwrap().unwrap();
        assert!(c.pr_comments.is_empty());
        let err = config(&[("NOTIFY_GITHUB_PR_COMMENTS", "octo/app")]).unwrap_err();
        assert!(err.to_string().contains("GITHUB_TOKEN"), "{err}");
        let err =
            config(&[("GITHUB_TOKEN", "t"), ("NOTIFY_GITHUB_PR_COMMENTS", "octo")]).unwrap_err();
        assert!(
            err.to_string().contains("NOTIFY_GITHUB_PR_COMMENTS"),
            "{err}"
        );
    }

    #[test]
    fn a_slack_webhook_alone_is_a_target_and_its_url_never_prints() {
        let url = "https://hooks.slack.com/services/T000/B000/hunter2";
        let c = config(&[
            ("NOTIFY_SLACK_WEBHOOK_URL", url),
            ("NOTIFY_CONSOLE_URL", "https://faultline.example/"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(c.slack.as_ref().unwrap().expose_secret(), url);
        assert_eq!(c.console_url.as_deref(), Some("https://faultline.example"));
        assert!(!format!("{c:?}").contains("hunter2"));
        let err = config(&[("NOTIFY_SLACK_WEBHOOK_URL", "hooks.slack.com/hunter2")]).unwrap_err();
        assert_eq!(err.name, "NOTIFY_SLACK_WEBHOOK_URL");
        assert!(!err.to_string().contains("hunter2"), "{err}");
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

    #[test]
    fn values_are_trimmed_and_delivery_settings_are_read_only_with_a_target() {
        // Nothing to deliver to: a bad delivery setting does not stop the worker.
        assert!(config(&[("NOTIFY_MAX_ATTEMPTS", "0")]).unwrap().is_none());
        let c = config(&[
            ("GITHUB_TOKEN", "  ghp_x \n"),
            ("GITHUB_API_URL", " https://ghe.example/api/v3/ "),
            ("NOTIFY_RETRY_MAX", "1.5h"),
            ("NOTIFY_MAX_ATTEMPTS", " 3 "),
        ])
        .unwrap()
        .unwrap();
        let (api, token) = c.github.as_ref().unwrap();
        assert_eq!(api, "https://ghe.example/api/v3");
        assert_eq!(token.expose_secret(), "ghp_x");
        assert_eq!(c.retry_max, Duration::from_secs(5400));
        assert_eq!((c.max_attempts, c.on_review), (3, false));
        assert_eq!(c.timeout, Duration::from_secs(10));
        let err = config(&[("GITHUB_TOKEN", "t"), ("NOTIFY_ON_REVIEW", "maybe")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid value \"maybe\" for NOTIFY_ON_REVIEW: must be true or false"
        );
        let err = config(&[("GITHUB_TOKEN", "t"), ("NOTIFY_MAX_ATTEMPTS", "2.0")]).unwrap_err();
        assert_eq!(err.name, "NOTIFY_MAX_ATTEMPTS");
    }
}

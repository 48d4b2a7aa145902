//! Settings of `faultline serve`, read once at start by the shared loader
//! (`faultline_shared::config::Source`). Webhook secrets are
//! [`SecretString`]s: they never appear in logs or `Debug`.

use std::{net::SocketAddr, time::Duration};

use faultline_shared::config::{ConfigError, SecretString, Source, de, variables};
use serde::{Deserialize, Deserializer, de::Error as _};

use crate::proxies::TrustedProxies;

/// Default `FAULTLINE_MAX_BODY_BYTES`: 25 MiB, room for a large inline log.
pub const DEFAULT_MAX_BODY_BYTES: usize = 25 * 1024 * 1024;
/// Default `FAULTLINE_WEBHOOK_MAX_BODY_BYTES`: 1 MiB. A GitHub delivery is a
/// few tens of KiB; a Jenkins notification with its inline log tail is small too.
pub const DEFAULT_WEBHOOK_MAX_BODY_BYTES: usize = 1024 * 1024;

/// Each field's serde name is its variable; every count must be > 0.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct ServerConfig {
    /// `FAULTLINE_BIND` (or `--bind`): where to listen; port 0 picks a free port.
    #[serde(rename = "FAULTLINE_BIND", deserialize_with = "de::parsed")]
    pub bind: SocketAddr,
    /// `FAULTLINE_MAX_BODY_BYTES`: larger request bodies get 413. The REST
    /// API takes a whole log, so its limit is large.
    #[serde(rename = "FAULTLINE_MAX_BODY_BYTES", deserialize_with = "de::positive")]
    pub max_body_bytes: usize,
    /// `FAULTLINE_WEBHOOK_MAX_BODY_BYTES`: the webhooks' own, smaller limit
    /// (never above `max_body_bytes`). GitHub's signature can only be checked
    /// once the body is read, so this bounds what an unsigned request costs.
    #[serde(
        rename = "FAULTLINE_WEBHOOK_MAX_BODY_BYTES",
        deserialize_with = "de::positive"
    )]
    pub webhook_max_body_bytes: usize,
    /// `FAULTLINE_HEADER_READ_TIMEOUT`: a request head must arrive within this
    /// (else the connection is closed), so half-sent heads do not pile up.
    #[serde(
        rename = "FAULTLINE_HEADER_READ_TIMEOUT",
        deserialize_with = "de::humane"
    )]
    pub header_read_timeout: Duration,
    /// `FAULTLINE_BODY_READ_TIMEOUT`: the longest wait for the next piece of
    /// a body (408 after it).
    #[serde(
        rename = "FAULTLINE_BODY_READ_TIMEOUT",
        deserialize_with = "de::humane"
    )]
    pub body_read_timeout: Duration,
    /// `FAULTLINE_REQUEST_TIMEOUT`: the longest a request may take, body and
    /// handler together (408), so a body dripped slowly cannot hold a slot.
    #[serde(rename = "FAULTLINE_REQUEST_TIMEOUT", deserialize_with = "de::humane")]
    pub request_timeout: Duration,
    /// `FAULTLINE_MAX_IN_FLIGHT`: requests handled at once; more get 503 at once.
    #[serde(rename = "FAULTLINE_MAX_IN_FLIGHT", deserialize_with = "de::positive")]
    pub max_in_flight: usize,
    /// `FAULTLINE_MAX_CONNECTIONS`: open connections; more wait in the
    /// listen backlog until one closes.
    #[serde(
        rename = "FAULTLINE_MAX_CONNECTIONS",
        deserialize_with = "de::positive"
    )]
    pub max_connections: usize,
    /// `FAULTLINE_MAX_IN_FLIGHT_PER_CLIENT`: requests of one client (IPv4
    /// address or IPv6 /64) handled at once; more get 503 with `Retry-After`.
    /// 16 of the 256: a client needs 16 addresses to fill the server.
    #[serde(
        rename = "FAULTLINE_MAX_IN_FLIGHT_PER_CLIENT",
        deserialize_with = "de::positive"
    )]
    pub max_in_flight_per_client: usize,
    /// `FAULTLINE_MAX_CONNECTIONS_PER_CLIENT`: open connections of one client
    /// (trusted proxies exempt); more are closed at once. 32 of the 1,024:
    /// twice its in-flight share, room for idle keep-alive connections.
    #[serde(
        rename = "FAULTLINE_MAX_CONNECTIONS_PER_CLIENT",
        deserialize_with = "de::positive"
    )]
    pub max_connections_per_client: usize,
    /// `FAULTLINE_MIN_BODY_RATE`: bytes/s a request body must average, after
    /// `min_body_rate_grace` of waiting for it (408 below). 240 as Kestrel.
    #[serde(rename = "FAULTLINE_MIN_BODY_RATE", deserialize_with = "de::positive")]
    pub min_body_rate: u64,
    /// `FAULTLINE_MIN_BODY_RATE_GRACE`: how long a body may arrive at any rate.
    #[serde(
        rename = "FAULTLINE_MIN_BODY_RATE_GRACE",
        deserialize_with = "de::humane"
    )]
    pub min_body_rate_grace: Duration,
    /// `FAULTLINE_TRUSTED_PROXIES`: comma-separated addresses or CIDRs of
    /// reverse proxies; from them the client is the right-most untrusted
    /// `X-Forwarded-For` address. Unset: the header is ignored.
    #[serde(rename = "FAULTLINE_TRUSTED_PROXIES", deserialize_with = "proxies")]
    pub trusted_proxies: TrustedProxies,
    /// `FAULTLINE_AUTH_MAX_FAILURES`: wrong API or Jenkins tokens one client
    /// address may present per `auth_failure_window` before it gets 429
    /// (beyond `u32::MAX`: `u32::MAX`).
    #[serde(
        rename = "FAULTLINE_AUTH_MAX_FAILURES",
        deserialize_with = "saturating_u32"
    )]
    pub auth_max_failures: u32,
    /// `FAULTLINE_AUTH_FAILURE_WINDOW`: the window of `auth_max_failures`.
    #[serde(
        rename = "FAULTLINE_AUTH_FAILURE_WINDOW",
        deserialize_with = "de::humane"
    )]
    pub auth_failure_window: Duration,
    /// `FAULTLINE_HTTP_DB_CONNECTIONS`: Postgres pool size of the server.
    #[serde(
        rename = "FAULTLINE_HTTP_DB_CONNECTIONS",
        deserialize_with = "de::positive"
    )]
    pub db_connections: u32,
    /// `GITHUB_WEBHOOK_SECRET`: HMAC key of `X-Hub-Signature-256`; unset
    /// disables `/webhooks/github` (503).
    #[serde(rename = "GITHUB_WEBHOOK_SECRET", deserialize_with = "de::secret_some")]
    pub github_secret: Option<SecretString>,
    /// `JENKINS_WEBHOOK_TOKEN`: shared token of `/webhooks/jenkins`; unset
    /// disables it (503).
    #[serde(rename = "JENKINS_WEBHOOK_TOKEN", deserialize_with = "de::secret_some")]
    pub jenkins_token: Option<SecretString>,
    /// `FAULTLINE_PUBLIC_URL`: where users reach the server (the console's
    /// links and the `Secure` flag of its cookie when it is https).
    #[serde(rename = "FAULTLINE_PUBLIC_URL", deserialize_with = "public_url")]
    pub public_url: Option<String>,
    /// `GITHUB_API_URL`: the GitHub the workers write to (default
    /// `https://api.github.com`). A Jenkins build whose SCM is a repository
    /// there is tied to it: its pull request's comment, its check run.
    #[serde(rename = "GITHUB_API_URL", deserialize_with = "public_url")]
    pub github_api_url: Option<String>,
    /// `FAULTLINE_CONSOLE_SESSION_TTL`: how long a console sign-in lasts.
    #[serde(
        rename = "FAULTLINE_CONSOLE_SESSION_TTL",
        deserialize_with = "de::humane"
    )]
    pub console_session_ttl: Duration,
    /// `REVIEW_SLA`: items waiting longer are highlighted in the console.
    #[serde(rename = "REVIEW_SLA", deserialize_with = "de::humane")]
    pub review_sla: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            webhook_max_body_bytes: DEFAULT_WEBHOOK_MAX_BODY_BYTES,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(15),
            request_timeout: Duration::from_secs(60),
            max_in_flight: 256,
            max_connections: 1024,
            max_in_flight_per_client: 16,
            max_connections_per_client: 32,
            min_body_rate: 240,
            min_body_rate_grace: Duration::from_secs(5),
            trusted_proxies: TrustedProxies::default(),
            auth_max_failures: 10,
            auth_failure_window: Duration::from_secs(60),
            db_connections: 16,
            github_secret: None,
            jenkins_token: None,
            public_url: None,
            github_api_url: None,
            console_session_ttl: Duration::from_secs(12 * 3600),
            review_sla: Duration::from_secs(4 * 3600),
        }
    }
}

fn proxies<'de, D: Deserializer<'de>>(d: D) -> Result<TrustedProxies, D::Error> {
    TrustedProxies::parse(&String::deserialize(d)?).map_err(D::Error::custom)
}

/// An absolute http(s) URL, without a trailing slash.
fn public_url<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let url = String::deserialize(d)?;
    let url = url.trim().trim_end_matches('/');
    if url.is_empty() {
        return Ok(None);
    }
    let ok = ["http://", "https://"]
        .iter()
        .any(|s| url.len() > s.len() && url[..s.len()].eq_ignore_ascii_case(s));
    if ok {
        Ok(Some(url.to_string()))
    } else {
        Err(D::Error::custom(
            "must be an absolute http:// or https:// URL",
        ))
    }
}

fn saturating_u32<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    de::positive(d).map(|n: u64| u32::try_from(n).unwrap_or(u32::MAX))
}

impl ServerConfig {
    /// Reads the settings from `source`.
    pub fn load(source: &Source) -> Result<Self, ConfigError> {
        let config: Self = source.load("")?;
        if let Some(api) = &config.github_api_url {
            faultline_shared::config::no_credentials("GITHUB_API_URL", api)?;
        }
        Ok(Self {
            webhook_max_body_bytes: config.webhook_max_body_bytes.min(config.max_body_bytes),
            ..config
        })
    }

    /// True when users reach the server over https (cookies get `Secure`).
    pub fn public_url_is_https(&self) -> bool {
        self.public_url
            .as_deref()
            .is_some_and(|u| u[..8.min(u.len())].eq_ignore_ascii_case("https://"))
    }

    /// The web address of the GitHub of `GITHUB_API_URL` (`https://github.com`
    /// by default), which clone URLs name.
    pub fn github_web(&self) -> String {
        faultline_shared::pr_comment::web_base(
            self.github_api_url
                .as_deref()
                .unwrap_or("https://api.github.com"),
        )
    }

    /// The variables [`ServerConfig::load`] reads.
    pub fn variables() -> Vec<String> {
        variables::<Self>("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Result<ServerConfig, ConfigError> {
        ServerConfig::load(&pairs.iter().copied().collect())
    }

    #[test]
    fn defaults_apply_and_webhooks_are_off_without_secrets() {
        let c = config(&[]).unwrap();
        assert_eq!(c.bind.to_string(), "127.0.0.1:8080");
        assert_eq!(c.max_body_bytes, DEFAULT_MAX_BODY_BYTES);
        assert_eq!(c.webhook_max_body_bytes, DEFAULT_WEBHOOK_MAX_BODY_BYTES);
        assert_eq!(c.header_read_timeout, Duration::from_secs(10));
        assert_eq!(
            (c.max_in_flight_per_client, c.max_connections_per_client),
            (16, 32)
        );
        assert_eq!(c.min_body_rate, 240);
        assert!(!c.trusted_proxies.contains("127.0.0.1".parse().unwrap()));
        assert!(c.github_secret.is_none() && c.jenkins_token.is_none());
        assert_eq!(c.review_sla, Duration::from_secs(4 * 3600));
        assert!(!c.public_url_is_https());
    }

    #[test]
    fn the_public_url_is_absolute_and_https_makes_cookies_secure() {
        let c = config(&[("FAULTLINE_PUBLIC_URL", " https://faultline.example/ ")]).unwrap();
        assert_eq!(c.public_url.as_deref(), Some("https://faultline.example"));
        assert!(c.public_url_is_https());
        let err = config(&[("FAULTLINE_PUBLIC_URL", "faultline.example")]).unwrap_err();
        assert_eq!(err.name, "FAULTLINE_PUBLIC_URL");
    }

    #[test]
    fn bad_values_name_the_variable() {
        let err = config(&[("FAULTLINE_BIND", "localhost")]).unwrap_err();
        assert_eq!(err.name, "FAULTLINE_BIND");
        let err = config(&[("FAULTLINE_MAX_BODY_BYTES", "0")]).unwrap_err();
        assert_eq!(err.name, "FAULTLINE_MAX_BODY_BYTES");
        let err = config(&[("FAULTLINE_HEADER_READ_TIMEOUT", "soon")]).unwrap_err();
        assert_eq!(err.name, "FAULTLINE_HEADER_READ_TIMEOUT");
        let err = config(&[("FAULTLINE_TRUSTED_PROXIES", "10.0.0.0/8, proxy")]).unwrap_err();
        assert_eq!(err.name, "FAULTLINE_TRUSTED_PROXIES");
        let err = config(&[("FAULTLINE_MAX_IN_FLIGHT_PER_CLIENT", "0")]).unwrap_err();
        assert_eq!(err.name, "FAULTLINE_MAX_IN_FLIGHT_PER_CLIENT");
    }

    #[test]
    fn the_webhook_limit_never_exceeds_the_global_one() {
        let c = config(&[("FAULTLINE_MAX_BODY_BYTES", "4096")]).unwrap();
        assert_eq!(c.webhook_max_body_bytes, 4096);
    }

    #[test]
    fn secrets_do_not_print() {
        let c = config(&[
            ("GITHUB_WEBHOOK_SECRET", "gh-hunter2"),
            ("JENKINS_WEBHOOK_TOKEN", "jk-hunter2"),
        ])
        .unwrap();
        let shown = format!("{c:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn counts_are_integers_above_zero_and_values_are_trimmed() {
        let c = config(&[
            ("FAULTLINE_BIND", " [::1]:0 "),
            ("FAULTLINE_AUTH_MAX_FAILURES", "99999999999"),
            ("FAULTLINE_HTTP_DB_CONNECTIONS", " 4 "),
            ("FAULTLINE_REQUEST_TIMEOUT", "1.5m"),
        ])
        .unwrap();
        assert_eq!(c.bind.to_string(), "[::1]:0");
        assert_eq!(c.auth_max_failures, u32::MAX);
        assert_eq!(c.db_connections, 4);
        assert_eq!(c.request_timeout, Duration::from_secs(90));
        for (name, value, reason) in [
            ("FAULTLINE_MAX_IN_FLIGHT", "0", "must be > 0"),
            (
                "FAULTLINE_MAX_IN_FLIGHT",
                "2.5",
                "invalid digit found in string",
            ),
            (
                "FAULTLINE_MIN_BODY_RATE",
                "-1",
                "invalid digit found in string",
            ),
        ] {
            let err = config(&[(name, value)]).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("invalid value \"{value}\" for {name}: {reason}")
            );
        }
    }
}

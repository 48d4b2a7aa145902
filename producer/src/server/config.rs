//! Settings of `faultline serve`, read once from the environment at start.
//! Webhook secrets are [`Secret`]s: they never appear in logs or `Debug`.

use std::{net::SocketAddr, time::Duration};

use faultline_shared::config::{ConfigError, Secret, parse_duration};

use super::client::TrustedProxies;

/// Default `FAULTLINE_MAX_BODY_BYTES`: 25 MiB, room for a large inline log.
pub const DEFAULT_MAX_BODY_BYTES: usize = 25 * 1024 * 1024;
/// Default `FAULTLINE_WEBHOOK_MAX_BODY_BYTES`: 1 MiB. A GitHub delivery is a
/// few tens of KiB; a Jenkins notification with its inline log tail is small too.
pub const DEFAULT_WEBHOOK_MAX_BODY_BYTES: usize = 1024 * 1024;

#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// `FAULTLINE_BIND` (or `--bind`): where to listen; port 0 picks a free port.
    pub bind: SocketAddr,
    /// `FAULTLINE_MAX_BODY_BYTES`: larger request bodies get 413. The REST
    /// API takes a whole log, so its limit is large.
    pub max_body_bytes: usize,
    /// `FAULTLINE_WEBHOOK_MAX_BODY_BYTES`: the webhooks' own, smaller limit
    /// (never above `max_body_bytes`). GitHub's signature can only be checked
    /// once the body is read, so this bounds what an unsigned request costs.
    pub webhook_max_body_bytes: usize,
    /// `FAULTLINE_HEADER_READ_TIMEOUT`: a request head must arrive within this
    /// (else the connection is closed), so half-sent heads do not pile up.
    pub header_read_timeout: Duration,
    /// `FAULTLINE_BODY_READ_TIMEOUT`: the longest wait for the next piece of
    /// a body (408 after it).
    pub body_read_timeout: Duration,
    /// `FAULTLINE_REQUEST_TIMEOUT`: the longest a request may take, body and
    /// handler together (408), so a body dripped slowly cannot hold a slot.
    pub request_timeout: Duration,
    /// `FAULTLINE_MAX_IN_FLIGHT`: requests handled at once; more get 503 at once.
    pub max_in_flight: usize,
    /// `FAULTLINE_MAX_CONNECTIONS`: open connections; more wait in the
    /// listen backlog until one closes.
    pub max_connections: usize,
    /// `FAULTLINE_MAX_IN_FLIGHT_PER_CLIENT`: requests of one client (IPv4
    /// address or IPv6 /64) handled at once; more get 503 with `Retry-After`.
    /// 16 of the 256: a client needs 16 addresses to fill the server.
    pub max_in_flight_per_client: usize,
    /// `FAULTLINE_MAX_CONNECTIONS_PER_CLIENT`: open connections of one client
    /// (trusted proxies exempt); more are closed at once. 32 of the 1,024:
    /// twice its in-flight share, room for idle keep-alive connections.
    pub max_connections_per_client: usize,
    /// `FAULTLINE_MIN_BODY_RATE`: bytes/s a request body must average, after
    /// `min_body_rate_grace` of waiting for it (408 below). 240 as Kestrel.
    pub min_body_rate: u64,
    /// `FAULTLINE_MIN_BODY_RATE_GRACE`: how long a body may arrive at any rate.
    pub min_body_rate_grace: Duration,
    /// `FAULTLINE_TRUSTED_PROXIES`: comma-separated addresses or CIDRs of
    /// reverse proxies; from them the client is the right-most untrusted
    /// `X-Forwarded-For` address. Unset: the header is ignored.
    pub trusted_proxies: TrustedProxies,
    /// `FAULTLINE_AUTH_MAX_FAILURES`: wrong API or Jenkins tokens one client
    /// address may present per `auth_failure_window` before it gets 429.
    pub auth_max_failures: u32,
    /// `FAULTLINE_AUTH_FAILURE_WINDOW`: the window of `auth_max_failures`.
    pub auth_failure_window: Duration,
    /// `FAULTLINE_HTTP_DB_CONNECTIONS`: Postgres pool size of the server.
    pub db_connections: u32,
    /// `GITHUB_WEBHOOK_SECRET`: HMAC key of `X-Hub-Signature-256`; unset
    /// disables `/webhooks/github` (503).
    pub github_secret: Option<Secret>,
    /// `JENKINS_WEBHOOK_TOKEN`: shared token of `/webhooks/jenkins`; unset
    /// disables it (503).
    pub jenkins_token: Option<Secret>,
}

impl ServerConfig {
    /// Reads the settings from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the settings through `lookup` (the environment, or a map in tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let parse = |name: &'static str, default: &str| -> Result<u64, ConfigError> {
            let value = get(name).unwrap_or_else(|| default.to_string());
            match value.trim().parse::<u64>() {
                Ok(n) if n > 0 => Ok(n),
                Ok(_) => Err(invalid(name, &value, "must be > 0")),
                Err(e) => Err(invalid(name, &value, &e.to_string())),
            }
        };
        let bind_text = get("FAULTLINE_BIND").unwrap_or_else(|| "127.0.0.1:8080".into());
        let bind = bind_text
            .trim()
            .parse()
            .map_err(|e: std::net::AddrParseError| {
                invalid("FAULTLINE_BIND", &bind_text, &e.to_string())
            })?;
        let max_body = parse(
            "FAULTLINE_MAX_BODY_BYTES",
            &DEFAULT_MAX_BODY_BYTES.to_string(),
        )?;
        let db_connections = parse("FAULTLINE_HTTP_DB_CONNECTIONS", "16")?;
        let duration = |name: &'static str, default: &str| -> Result<Duration, ConfigError> {
            let value = get(name).unwrap_or_else(|| default.to_string());
            parse_duration(&value).map_err(|e| invalid(name, &value, &e))
        };
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        Ok(Self {
            bind,
            max_body_bytes: size(max_body),
            webhook_max_body_bytes: size(parse(
                "FAULTLINE_WEBHOOK_MAX_BODY_BYTES",
                &DEFAULT_WEBHOOK_MAX_BODY_BYTES.to_string(),
            )?)
            .min(size(max_body)),
            header_read_timeout: duration("FAULTLINE_HEADER_READ_TIMEOUT", "10s")?,
            body_read_timeout: duration("FAULTLINE_BODY_READ_TIMEOUT", "15s")?,
            request_timeout: duration("FAULTLINE_REQUEST_TIMEOUT", "60s")?,
            max_in_flight: size(parse("FAULTLINE_MAX_IN_FLIGHT", "256")?),
            max_connections: size(parse("FAULTLINE_MAX_CONNECTIONS", "1024")?),
            max_in_flight_per_client: size(parse("FAULTLINE_MAX_IN_FLIGHT_PER_CLIENT", "16")?),
            max_connections_per_client: size(parse("FAULTLINE_MAX_CONNECTIONS_PER_CLIENT", "32")?),
            min_body_rate: parse("FAULTLINE_MIN_BODY_RATE", "240")?,
            min_body_rate_grace: duration("FAULTLINE_MIN_BODY_RATE_GRACE", "5s")?,
            trusted_proxies: {
                let text = get("FAULTLINE_TRUSTED_PROXIES").unwrap_or_default();
                TrustedProxies::parse(&text)
                    .map_err(|e| invalid("FAULTLINE_TRUSTED_PROXIES", &text, &e))?
            },
            auth_max_failures: u32::try_from(parse("FAULTLINE_AUTH_MAX_FAILURES", "10")?)
                .unwrap_or(u32::MAX),
            auth_failure_window: duration("FAULTLINE_AUTH_FAILURE_WINDOW", "1m")?,
            db_connections: u32::try_from(db_connections)
                .map_err(|e| invalid("FAULTLINE_HTTP_DB_CONNECTIONS", "", &e.to_string()))?,
            github_secret: get("GITHUB_WEBHOOK_SECRET").map(Secret::new),
            jenkins_token: get("JENKINS_WEBHOOK_TOKEN").map(Secret::new),
        })
    }
}

fn invalid(name: &'static str, value: &str, reason: &str) -> ConfigError {
    ConfigError {
        name,
        value: value.to_string(),
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(pairs: &[(&str, &str)]) -> Result<ServerConfig, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ServerConfig::from_lookup(|k| map.get(k).cloned())
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
}

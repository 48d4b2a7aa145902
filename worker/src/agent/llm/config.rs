//! LLM settings (`LLM_*` environment variables), read once at start.

use std::time::Duration;

use faultline_shared::config::{ConfigError, Secret};

/// Which wire format to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Any server speaking the OpenAI chat-completions API (OpenAI, vLLM, Ollama, llama.cpp server).
    OpenAi,
    /// The Anthropic Messages API.
    Anthropic,
}

impl Provider {
    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
        }
    }
}

#[derive(Debug, Clone)]
pub struct LlmConfig {
    pub provider: Provider,
    /// API root, e.g. `https://api.openai.com/v1` or `http://localhost:11434/v1`.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<Secret>,
    /// Timeout of one HTTP call.
    pub timeout: Duration,
    /// In-process retries of one call on 429 / 5xx / timeouts / resets.
    pub retries: usize,
    /// First in-process retry delay (doubles, with jitter; Retry-After is a floor).
    pub retry_base: Duration,
    /// Token budget of a whole run; when spent the model must answer.
    pub max_tokens_per_run: i64,
    /// `max_tokens` of one reply.
    pub max_output_tokens: u32,
    /// Unusable replies tolerated per run before giving up.
    pub max_reprompts: usize,
    /// On a permanent LLM error, continue the run with the heuristic reasoner.
    pub fallback: bool,
    /// USD per million input / output tokens, when known.
    pub price_in: Option<f64>,
    pub price_out: Option<f64>,
    /// Shared by all workers: concurrent calls and requests per minute.
    pub max_concurrent: Option<i32>,
    pub requests_per_minute: Option<i64>,
}

impl LlmConfig {
    /// `None` when `LLM_PROVIDER` is unset or `heuristic`.
    pub fn from_env() -> Result<Option<Self>, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, ConfigError> {
        let get = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let provider = match get("LLM_PROVIDER").as_deref().map(str::trim) {
            None | Some("heuristic") => return Ok(None),
            Some("openai") => Provider::OpenAi,
            Some("anthropic") => Provider::Anthropic,
            Some(other) => {
                return Err(ConfigError {
                    name: "LLM_PROVIDER",
                    value: other.into(),
                    reason: "expected heuristic, openai or anthropic".into(),
                });
            }
        };
        let num = |name: &'static str, default: f64| -> Result<f64, ConfigError> {
            match get(name) {
                None => Ok(default),
                Some(v) => v.trim().parse::<f64>().map_err(|e| ConfigError {
                    name,
                    value: v.clone(),
                    reason: e.to_string(),
                }),
            }
        };
        let opt = |name: &'static str| -> Result<Option<f64>, ConfigError> {
            get(name)
                .map(|v| {
                    v.trim().parse::<f64>().map_err(|e| ConfigError {
                        name,
                        value: v.clone(),
                        reason: e.to_string(),
                    })
                })
                .transpose()
        };
        let base_url = get("LLM_BASE_URL").unwrap_or_else(|| match provider {
            Provider::OpenAi => "https://api.openai.com/v1".into(),
            Provider::Anthropic => "https://api.anthropic.com".into(),
        });
        let model = get("LLM_MODEL").ok_or_else(|| ConfigError {
            name: "LLM_MODEL",
            value: String::new(),
            reason: format!("required when LLM_PROVIDER={}", provider.name()),
        })?;
        Ok(Some(Self {
            provider,
            base_url: base_url.trim_end_matches('/').to_string(),
            model,
            api_key: get("LLM_API_KEY").map(Secret::new),
            timeout: Duration::from_millis(num("LLM_TIMEOUT_MS", 60_000.0)? as u64),
            retries: num("LLM_RETRIES", 3.0)? as usize,
            retry_base: Duration::from_millis(num("LLM_RETRY_BASE_MS", 500.0)? as u64),
            max_tokens_per_run: num("LLM_MAX_TOKENS_PER_RUN", 200_000.0)? as i64,
            max_output_tokens: num("LLM_MAX_OUTPUT_TOKENS", 2_048.0)? as u32,
            max_reprompts: num("LLM_MAX_REPROMPTS", 2.0)? as usize,
            fallback: matches!(
                get("LLM_FALLBACK").as_deref().map(str::trim),
                Some("true" | "1" | "yes")
            ),
            price_in: opt("LLM_PRICE_INPUT_PER_MTOK")?,
            price_out: opt("LLM_PRICE_OUTPUT_PER_MTOK")?,
            max_concurrent: opt("LLM_MAX_CONCURRENT")?.map(|n| n.max(1.0) as i32),
            requests_per_minute: opt("LLM_RPM")?.map(|n| n.max(1.0) as i64),
        }))
    }

    /// The judge model (`LLM_JUDGE_*`, see [`crate::agent::judge`]); `None`
    /// when `LLM_JUDGE_PROVIDER` is unset or `none`. Only provider, URL,
    /// model, key and timeout are the judge's own: in-process retries
    /// (`LLM_RETRIES`, `LLM_RETRY_BASE_MS`) are shared with the reasoner.
    pub fn judge_from_lookup(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, ConfigError> {
        let get = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let provider = match get("LLM_JUDGE_PROVIDER").as_deref().map(str::trim) {
            None | Some("none") => return Ok(None),
            Some("openai") => Provider::OpenAi,
            Some("anthropic") => Provider::Anthropic,
            Some(other) => {
                return Err(ConfigError {
                    name: "LLM_JUDGE_PROVIDER",
                    value: other.into(),
                    reason: "expected none, openai or anthropic".into(),
                });
            }
        };
        let num = |name: &'static str, default: f64| -> Result<f64, ConfigError> {
            match get(name) {
                None => Ok(default),
                Some(v) => v.trim().parse::<f64>().map_err(|e| ConfigError {
                    name,
                    value: v.clone(),
                    reason: e.to_string(),
                }),
            }
        };
        let model = get("LLM_JUDGE_MODEL").ok_or_else(|| ConfigError {
            name: "LLM_JUDGE_MODEL",
            value: String::new(),
            reason: format!("required when LLM_JUDGE_PROVIDER={}", provider.name()),
        })?;
        let base_url = get("LLM_JUDGE_BASE_URL").unwrap_or_else(|| match provider {
            Provider::OpenAi => "https://api.openai.com/v1".into(),
            Provider::Anthropic => "https://api.anthropic.com".into(),
        });
        Ok(Some(Self {
            provider,
            base_url: base_url.trim_end_matches('/').to_string(),
            model,
            api_key: get("LLM_JUDGE_API_KEY").map(Secret::new),
            timeout: Duration::from_millis(num("LLM_JUDGE_TIMEOUT_MS", 30_000.0)? as u64),
            retries: num("LLM_RETRIES", 3.0)? as usize,
            retry_base: Duration::from_millis(num("LLM_RETRY_BASE_MS", 500.0)? as u64),
            max_tokens_per_run: 0,
            max_output_tokens: 512,
            max_reprompts: 0,
            fallback: false,
            price_in: None,
            price_out: None,
            max_concurrent: None,
            requests_per_minute: None,
        }))
    }

    /// Cost of one call, when prices are configured.
    pub fn cost(&self, tokens_in: i32, tokens_out: i32) -> f64 {
        self.price_in.unwrap_or(0.0) * f64::from(tokens_in) / 1e6
            + self.price_out.unwrap_or(0.0) * f64::from(tokens_out) / 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_judge_is_off_unless_a_provider_is_named() {
        assert!(LlmConfig::judge_from_lookup(lookup(&[])).unwrap().is_none());
        assert!(
            LlmConfig::judge_from_lookup(lookup(&[("LLM_JUDGE_PROVIDER", "none")]))
                .unwrap()
                .is_none()
        );
        let err =
            LlmConfig::judge_from_lookup(lookup(&[("LLM_JUDGE_PROVIDER", "gpt")])).unwrap_err();
        assert_eq!(err.name, "LLM_JUDGE_PROVIDER");
        let err =
            LlmConfig::judge_from_lookup(lookup(&[("LLM_JUDGE_PROVIDER", "openai")])).unwrap_err();
        assert_eq!(err.name, "LLM_JUDGE_MODEL");
    }

    #[test]
    fn the_judge_has_its_own_endpoint_key_and_timeout() {
        let cfg = LlmConfig::judge_from_lookup(lookup(&[
            ("LLM_JUDGE_PROVIDER", "anthropic"),
            ("LLM_JUDGE_MODEL", "judge-1"),
            ("LLM_JUDGE_BASE_URL", "http://judge.local/"),
            ("LLM_JUDGE_TIMEOUT_MS", "1500"),
            ("LLM_MODEL", "reasoner-1"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(cfg.provider, Provider::Anthropic);
        assert_eq!(cfg.model, "judge-1");
        assert_eq!(cfg.base_url, "http://judge.local");
        assert_eq!(cfg.timeout, Duration::from_millis(1500));
        assert!(cfg.api_key.is_none());
    }
}

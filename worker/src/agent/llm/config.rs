//! LLM settings: the reasoner's model (`LLM_*`) and the judge's
//! (`LLM_JUDGE_*`), read once at start by one loader, [`LlmConfig::load`],
//! with the [`Role`]'s prefix.

use std::{str::FromStr, time::Duration};

use faultline_shared::config::{ConfigError, SecretString, Source, de, variables};
use serde::{Deserialize, Deserializer};

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

    /// The provider's public API root.
    fn default_base_url(self) -> &'static str {
        match self {
            Provider::OpenAi => "https://api.openai.com/v1",
            Provider::Anthropic => "https://api.anthropic.com",
        }
    }
}

impl FromStr for Provider {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "openai" => Ok(Provider::OpenAi),
            "anthropic" => Ok(Provider::Anthropic),
            _ => Err(()),
        }
    }
}

/// Which model a configuration is for: the variables' prefix, and the
/// settings only the reasoner has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The ReAct reasoner (`LLM_*`).
    Reasoner,
    /// The judge of answers (`LLM_JUDGE_*`, see [`crate::agent::judge`]).
    Judge,
}

impl Role {
    pub fn prefix(self) -> &'static str {
        match self {
            Role::Reasoner => "LLM_",
            Role::Judge => "LLM_JUDGE_",
        }
    }

    /// The `PROVIDER` that turns the model off, as leaving it unset does.
    fn off(self) -> &'static str {
        match self {
            Role::Reasoner => "heuristic",
            Role::Judge => "none",
        }
    }

    fn default_timeout(self) -> Duration {
        match self {
            Role::Reasoner => Duration::from_millis(60_000),
            Role::Judge => Duration::from_millis(30_000),
        }
    }
}

#[derive(Debug, Clone)]
pub struct LlmConfig {
    pub provider: Provider,
    /// API root, e.g. `https://api.openai.com/v1` or `http://localhost:11434/v1`.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<SecretString>,
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
    /// `FAULTLINE_LLM_RATIO`: the share of new live runs this model
    /// reasons for (the rest get the heuristic reasoner), 1 by default.
    pub ratio: f64,
    /// `FAULTLINE_PROMPT_VERSION`: every run of this model uses this prompt
    /// version, whatever the registry says (evaluations pin one).
    pub prompt_pin: Option<i32>,
}

/// `<prefix>PROVIDER`, read first: unset or the role's "off", nothing
/// else is read.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Switch {
    #[serde(rename = "PROVIDER", deserialize_with = "de::parsed_some")]
    provider: Option<String>,
}

/// The model's endpoint, each variable after the role's prefix.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Endpoint {
    /// Default: the provider's public API.
    #[serde(rename = "BASE_URL", deserialize_with = "de::text_some")]
    base_url: Option<String>,
    /// Required.
    #[serde(rename = "MODEL", deserialize_with = "de::text_some")]
    model: Option<String>,
    #[serde(rename = "API_KEY", deserialize_with = "de::secret_some")]
    api_key: Option<SecretString>,
    /// Default: the role's.
    #[serde(rename = "TIMEOUT_MS", deserialize_with = "millis_some")]
    timeout: Option<Duration>,
}

/// In-process retries, shared by both roles (the judge has no
/// `LLM_JUDGE_RETRIES`).
#[derive(Deserialize)]
#[serde(default)]
struct Retries {
    #[serde(rename = "LLM_RETRIES", deserialize_with = "de::parsed")]
    retries: usize,
    #[serde(rename = "LLM_RETRY_BASE_MS", deserialize_with = "de::millis")]
    retry_base: Duration,
}

impl Default for Retries {
    fn default() -> Self {
        Self {
            retries: 3,
            retry_base: Duration::from_millis(500),
        }
    }
}

/// What only the reasoner is configured with; the judge's are fixed
/// ([`Budget::judge`]).
#[derive(Deserialize)]
#[serde(default)]
struct Budget {
    #[serde(rename = "LLM_MAX_TOKENS_PER_RUN", deserialize_with = "de::parsed")]
    max_tokens_per_run: i64,
    #[serde(rename = "LLM_MAX_OUTPUT_TOKENS", deserialize_with = "de::parsed")]
    max_output_tokens: u32,
    #[serde(rename = "LLM_MAX_REPROMPTS", deserialize_with = "de::parsed")]
    max_reprompts: usize,
    /// `true`, `1` or `yes`; anything else is off.
    #[serde(rename = "LLM_FALLBACK", deserialize_with = "yes")]
    fallback: bool,
    #[serde(
        rename = "LLM_PRICE_INPUT_PER_MTOK",
        deserialize_with = "de::parsed_some"
    )]
    price_in: Option<f64>,
    #[serde(
        rename = "LLM_PRICE_OUTPUT_PER_MTOK",
        deserialize_with = "de::parsed_some"
    )]
    price_out: Option<f64>,
    /// At least 1.
    #[serde(rename = "LLM_MAX_CONCURRENT", deserialize_with = "de::parsed_some")]
    max_concurrent: Option<i32>,
    /// At least 1.
    #[serde(rename = "LLM_RPM", deserialize_with = "de::parsed_some")]
    requests_per_minute: Option<i64>,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            max_tokens_per_run: 200_000,
            max_output_tokens: 2_048,
            max_reprompts: 2,
            fallback: false,
            price_in: None,
            price_out: None,
            max_concurrent: None,
            requests_per_minute: None,
        }
    }
}

impl Budget {
    /// The judge: one short verdict per answer, no run budget, no fallback.
    fn judge() -> Self {
        Self {
            max_tokens_per_run: 0,
            max_output_tokens: 512,
            max_reprompts: 0,
            ..Self::default()
        }
    }
}

/// Which runs the reasoner's model gets (the judge has none of these).
#[derive(Deserialize)]
#[serde(default)]
struct Arms {
    #[serde(rename = "FAULTLINE_LLM_RATIO", deserialize_with = "ratio")]
    ratio: f64,
    #[serde(
        rename = "FAULTLINE_PROMPT_VERSION",
        deserialize_with = "de::parsed_some"
    )]
    prompt_pin: Option<i32>,
}

impl Default for Arms {
    fn default() -> Self {
        Self {
            ratio: 1.0,
            prompt_pin: None,
        }
    }
}

/// A share between 0 and 1.
fn ratio<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    use serde::de::Error as _;
    let value: f64 = de::parsed(d)?;
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(D::Error::custom("must be between 0 and 1"))
    }
}

fn millis_some<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    de::millis(d).map(Some)
}

fn yes<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    let text = String::deserialize(d)?;
    Ok(matches!(text.trim(), "true" | "1" | "yes"))
}

impl LlmConfig {
    /// The `role`'s model, `None` when its `PROVIDER` is unset or the
    /// role's "off" (`heuristic` for the reasoner, `none` for the judge).
    /// Only provider, URL, model, key and timeout are the judge's own:
    /// in-process retries (`LLM_RETRIES`, `LLM_RETRY_BASE_MS`) are shared
    /// with the reasoner, and its budget is fixed.
    pub fn load(source: &Source, role: Role) -> Result<Option<Self>, ConfigError> {
        let prefix = role.prefix();
        let provider: Provider = match source.load::<Switch>(prefix)?.provider {
            None => return Ok(None),
            Some(off) if off == role.off() => return Ok(None),
            Some(name) => name.parse().map_err(|()| {
                ConfigError::new(
                    format!("{prefix}PROVIDER"),
                    &name,
                    format!("expected {}, openai or anthropic", role.off()),
                )
            })?,
        };
        let endpoint: Endpoint = source.load(prefix)?;
        let model = endpoint.model.ok_or_else(|| {
            ConfigError::new(
                format!("{prefix}MODEL"),
                "",
                format!("required when {prefix}PROVIDER={}", provider.name()),
            )
        })?;
        let retries: Retries = source.load("")?;
        let (budget, arms) = match role {
            Role::Reasoner => (source.load("")?, source.load::<Arms>("")?),
            Role::Judge => (Budget::judge(), Arms::default()),
        };
        if arms.prompt_pin.is_some_and(|v| v < 0) {
            return Err(ConfigError::new(
                "FAULTLINE_PROMPT_VERSION",
                arms.prompt_pin.unwrap_or_default().to_string(),
                "a version is 0 (built in) or more",
            ));
        }
        let base_url = endpoint
            .base_url
            .unwrap_or_else(|| provider.default_base_url().into());
        Ok(Some(Self {
            provider,
            base_url: base_url.trim_end_matches('/').to_string(),
            model,
            api_key: endpoint.api_key,
            timeout: endpoint.timeout.unwrap_or(role.default_timeout()),
            retries: retries.retries,
            retry_base: retries.retry_base,
            max_tokens_per_run: budget.max_tokens_per_run,
            max_output_tokens: budget.max_output_tokens,
            max_reprompts: budget.max_reprompts,
            fallback: budget.fallback,
            price_in: budget.price_in,
            price_out: budget.price_out,
            max_concurrent: budget.max_concurrent.map(|n| n.max(1)),
            requests_per_minute: budget.requests_per_minute.map(|n| n.max(1)),
            ratio: arms.ratio,
            prompt_pin: arms.prompt_pin,
        }))
    }

    /// The variables [`LlmConfig::load`] reads, for both roles.
    pub fn variables() -> Vec<String> {
        let mut names = Vec::new();
        for role in [Role::Reasoner, Role::Judge] {
            names.extend(variables::<Switch>(role.prefix()));
            names.extend(variables::<Endpoint>(role.prefix()));
        }
        names.extend(variables::<Retries>(""));
        names.extend(variables::<Budget>(""));
        names.extend(variables::<Arms>(""));
        names
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
    use faultline_shared::config::ExposeSecret;

    fn load(role: Role, pairs: &[(&str, &str)]) -> Result<Option<LlmConfig>, ConfigError> {
        LlmConfig::load(&pairs.iter().copied().collect(), role)
    }

    #[test]
    fn the_judge_is_off_unless_a_provider_is_named() {
        assert!(load(Role::Judge, &[]).unwrap().is_none());
        assert!(
            load(Role::Judge, &[("LLM_JUDGE_PROVIDER", "none")])
                .unwrap()
                .is_none()
        );
        let err = load(Role::Judge, &[("LLM_JUDGE_PROVIDER", "gpt")]).unwrap_err();
        assert_eq!(err.name, "LLM_JUDGE_PROVIDER");
        let err = load(Role::Judge, &[("LLM_JUDGE_PROVIDER", "openai")]).unwrap_err();
        assert_eq!(err.name, "LLM_JUDGE_MODEL");
    }

    #[test]
    fn the_judge_has_its_own_endpoint_key_and_timeout() {
        let cfg = load(
            Role::Judge,
            &[
                ("LLM_JUDGE_PROVIDER", "anthropic"),
                ("LLM_JUDGE_MODEL", "judge-1"),
                ("LLM_JUDGE_BASE_URL", "http://judge.local/"),
                ("LLM_JUDGE_TIMEOUT_MS", "1500"),
                ("LLM_MODEL", "reasoner-1"),
            ],
        )
        .unwrap()
        .unwrap();
        assert_eq!(cfg.provider, Provider::Anthropic);
        assert_eq!(cfg.model, "judge-1");
        assert_eq!(cfg.base_url, "http://judge.local");
        assert_eq!(cfg.timeout, Duration::from_millis(1500));
        assert!(cfg.api_key.is_none());
    }

    #[test]
    fn one_loader_reads_either_role_with_its_prefix() {
        let both = [
            ("LLM_PROVIDER", "openai"),
            ("LLM_MODEL", "reasoner-1"),
            ("LLM_API_KEY", "sk-reasoner"),
            ("LLM_JUDGE_PROVIDER", "anthropic"),
            ("LLM_JUDGE_MODEL", "judge-1"),
            ("LLM_RETRIES", "7"),
            ("LLM_MAX_OUTPUT_TOKENS", "999"),
            ("LLM_FALLBACK", " yes "),
        ];
        let reasoner = load(Role::Reasoner, &both).unwrap().unwrap();
        let judge = load(Role::Judge, &both).unwrap().unwrap();
        assert_eq!(
            (reasoner.provider, reasoner.model.as_str()),
            (Provider::OpenAi, "reasoner-1")
        );
        assert_eq!(reasoner.base_url, "https://api.openai.com/v1");
        assert_eq!(reasoner.api_key.unwrap().expose_secret(), "sk-reasoner");
        assert_eq!(reasoner.timeout, Duration::from_secs(60));
        assert_eq!((reasoner.max_output_tokens, reasoner.fallback), (999, true));
        assert_eq!(
            (judge.provider, judge.model.as_str()),
            (Provider::Anthropic, "judge-1")
        );
        assert_eq!(judge.base_url, "https://api.anthropic.com");
        assert_eq!(judge.timeout, Duration::from_secs(30));
        // Shared retries; the judge's budget is its own.
        assert_eq!((reasoner.retries, judge.retries), (7, 7));
        assert_eq!((judge.max_output_tokens, judge.fallback), (512, false));
        // Each role's "off" is its own word.
        let err = load(Role::Reasoner, &[("LLM_PROVIDER", "none")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid value \"none\" for LLM_PROVIDER: expected heuristic, openai or anthropic"
        );
        assert!(
            load(Role::Reasoner, &[("LLM_PROVIDER", " heuristic ")])
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn integer_settings_are_integers_and_limits_at_least_one() {
        let on = [("LLM_PROVIDER", "openai"), ("LLM_MODEL", "m")];
        for (name, value) in [
            ("LLM_RETRIES", "2.5"),
            ("LLM_TIMEOUT_MS", "1e3"),
            ("LLM_MAX_TOKENS_PER_RUN", "200000.0"),
            ("LLM_JUDGE_TIMEOUT_MS", "-1"),
        ] {
            let role = if name.starts_with("LLM_JUDGE_") {
                Role::Judge
            } else {
                Role::Reasoner
            };
            let pairs = [
                on[0],
                on[1],
                ("LLM_JUDGE_PROVIDER", "openai"),
                ("LLM_JUDGE_MODEL", "j"),
                (name, value),
            ];
            let err = load(role, &pairs).unwrap_err();
            assert_eq!(err.name, name);
            assert!(
                err.to_string()
                    .starts_with(&format!("invalid value \"{value}\" for {name}: "))
            );
        }
        let cfg = load(
            Role::Reasoner,
            &[
                on[0],
                on[1],
                ("LLM_MAX_CONCURRENT", "0"),
                ("LLM_RPM", "90"),
                ("LLM_PRICE_INPUT_PER_MTOK", "2.5"),
            ],
        )
        .unwrap()
        .unwrap();
        assert_eq!(cfg.max_concurrent, Some(1));
        assert_eq!(cfg.requests_per_minute, Some(90));
        assert_eq!(cfg.price_in, Some(2.5));
        // Unused values are not read: a bad one does not stop a worker without a model.
        assert!(
            load(Role::Reasoner, &[("LLM_RETRIES", "many")])
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn the_variables_are_both_prefixes_and_the_shared_ones() {
        let vars = LlmConfig::variables();
        for name in [
            "LLM_PROVIDER",
            "LLM_JUDGE_PROVIDER",
            "LLM_JUDGE_TIMEOUT_MS",
            "LLM_RETRY_BASE_MS",
            "LLM_RPM",
        ] {
            assert!(vars.iter().any(|v| v == name), "{name}: {vars:?}");
        }
        assert!(!vars.iter().any(|v| v == "LLM_JUDGE_RETRIES"));
    }
}

//! A configuration to evaluate, as the user names it: `heuristic`, or
//! `openai[:MODEL][@PROMPT_VERSION]` / `anthropic[:MODEL][@PROMPT_VERSION]`,
//! and the worker environment it stands for.

use std::{fmt, str::FromStr};

use anyhow::bail;

/// One reasoner configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// What the user typed: the report's column header.
    pub text: String,
    pub reasoner: Reasoner,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reasoner {
    Heuristic,
    Llm {
        /// `openai` or `anthropic` (`LLM_PROVIDER`).
        provider: String,
        /// `LLM_MODEL`; `None`: the caller's.
        model: Option<String>,
        /// A prompt registry version, by number or name; `None`: the
        /// built-in prompt (the scratch database's registry is empty).
        prompt: Option<String>,
    },
}

impl FromStr for Spec {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> anyhow::Result<Spec> {
        let text = s.trim().to_string();
        if text == "heuristic" {
            return Ok(Spec {
                text,
                reasoner: Reasoner::Heuristic,
            });
        }
        // The prompt version comes last; a model name may hold ':' (llama3:8b).
        let (head, prompt) = match text.rsplit_once('@') {
            Some((head, v)) if !v.trim().is_empty() => (head, Some(v.trim().to_string())),
            Some(_) => bail!("{text:?}: name a prompt version after '@' (a number or a name)"),
            None => (text.as_str(), None),
        };
        let (provider, model) = match head.split_once(':') {
            Some((p, m)) if !m.trim().is_empty() => (p, Some(m.trim().to_string())),
            Some(_) => bail!("{text:?}: name a model after ':'"),
            None => (head, None),
        };
        if !matches!(provider, "openai" | "anthropic") {
            bail!(
                "unknown reasoner {text:?}: use heuristic, openai[:MODEL][@PROMPT_VERSION] or anthropic[:MODEL][@PROMPT_VERSION]"
            );
        }
        let reasoner = Reasoner::Llm {
            provider: provider.to_string(),
            model,
            prompt,
        };
        Ok(Spec { text, reasoner })
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Environment changes for the workers of one configuration, on top of
/// the caller's environment (which keeps LLM_BASE_URL, LLM_API_KEY, prices).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WorkerEnv {
    pub set: Vec<(String, String)>,
    pub remove: Vec<String>,
}

impl Spec {
    /// The workers' environment: `caller_model` is the caller's
    /// `LLM_MODEL`, used when the spec names none; `prompt_version` is the
    /// resolved number of the spec's prompt, if it names one.
    pub fn worker_env(
        &self,
        caller_model: Option<&str>,
        prompt_version: Option<i32>,
    ) -> anyhow::Result<WorkerEnv> {
        let mut env = WorkerEnv::default();
        let mut set = |k: &str, v: &str| env.set.push((k.to_string(), v.to_string()));
        // No shadow runs: an evaluation measures one reasoner per database.
        set("FAULTLINE_SHADOW_REASONER", "off");
        let Reasoner::Llm {
            provider, model, ..
        } = &self.reasoner
        else {
            set("LLM_PROVIDER", "heuristic");
            return Ok(env);
        };
        set("LLM_PROVIDER", provider);
        match model
            .as_deref()
            .or(caller_model.filter(|m| !m.trim().is_empty()))
        {
            Some(m) => set("LLM_MODEL", m),
            None => bail!(
                "{self}: no model: name one ({provider}:MODEL) or set LLM_MODEL in the environment"
            ),
        }
        // Every run of this configuration uses the model, and only the
        // model: a run it fails counts as failed, not as the rules' answer.
        set("FAULTLINE_LLM_RATIO", "1");
        set("LLM_FALLBACK", "false");
        match prompt_version {
            Some(v) => set("FAULTLINE_PROMPT_VERSION", &v.to_string()),
            None => env.remove.push("FAULTLINE_PROMPT_VERSION".into()),
        }
        Ok(env)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llm(provider: &str, model: Option<&str>, prompt: Option<&str>) -> Reasoner {
        Reasoner::Llm {
            provider: provider.into(),
            model: model.map(Into::into),
            prompt: prompt.map(Into::into),
        }
    }

    #[test]
    fn specs_name_a_provider_a_model_and_a_prompt_version() {
        let parse = |s: &str| s.parse::<Spec>().unwrap().reasoner;
        assert_eq!(parse("heuristic"), Reasoner::Heuristic);
        assert_eq!(parse("openai"), llm("openai", None, None));
        assert_eq!(parse("openai@3"), llm("openai", None, Some("3")));
        assert_eq!(
            parse("openai:llama3:8b@terse"),
            llm("openai", Some("llama3:8b"), Some("terse"))
        );
        assert_eq!(
            parse("anthropic:claude-x"),
            llm("anthropic", Some("claude-x"), None)
        );
        for bad in ["gpt", "openai:", "openai@", "heuristic:x", ""] {
            assert!(bad.parse::<Spec>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_llm_spec_sets_the_model_the_ratio_and_the_pinned_prompt() {
        let spec: Spec = "openai:m@2".parse().unwrap();
        let env = spec.worker_env(Some("caller"), Some(2)).unwrap();
        for (k, v) in [
            ("LLM_PROVIDER", "openai"),
            ("LLM_MODEL", "m"),
            ("FAULTLINE_LLM_RATIO", "1"),
            ("FAULTLINE_PROMPT_VERSION", "2"),
            ("FAULTLINE_SHADOW_REASONER", "off"),
            ("LLM_FALLBACK", "false"),
        ] {
            assert!(env.set.contains(&(k.into(), v.into())), "{k}={v}: {env:?}");
        }
        let env = "anthropic"
            .parse::<Spec>()
            .unwrap()
            .worker_env(Some("caller"), None)
            .unwrap();
        assert!(env.set.contains(&("LLM_MODEL".into(), "caller".into())));
        assert_eq!(env.remove, ["FAULTLINE_PROMPT_VERSION"]);
        let err = "openai"
            .parse::<Spec>()
            .unwrap()
            .worker_env(None, None)
            .unwrap_err();
        assert!(err.to_string().contains("LLM_MODEL"), "{err}");
        let env = "heuristic"
            .parse::<Spec>()
            .unwrap()
            .worker_env(None, None)
            .unwrap();
        assert!(
            env.set
                .contains(&("LLM_PROVIDER".into(), "heuristic".into()))
        );
    }
}

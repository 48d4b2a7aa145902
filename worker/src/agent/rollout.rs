//! Which reasoner and prompt a run gets (docs/rollout.md), decided at its
//! first step from the event and the configuration, then recorded on the
//! run by its first checkpoint, so every later step, on any worker, keeps
//! them:
//!
//! - **arm**: with an LLM configured, the share `FAULTLINE_LLM_RATIO` of
//!   live runs uses it, the rest the heuristic reasoner, chosen from the
//!   event's dedup key ([`rollout::takes_llm`]); a shadow run takes the
//!   arm its live run did not.
//! - **prompt**: an LLM run uses `FAULTLINE_PROMPT_VERSION` when set, else
//!   the registry's draw ([`rollout::prompt_for`]: versions on trial at
//!   their ratios, the rest the active version, 0 the built-in prompt).

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use faultline_shared::{
    rollout::{self, HEURISTIC, ShadowReasoner},
    storage::{
        events::EventRow,
        prompts,
        runs::{self, RunRow},
    },
};
use sqlx::PgPool;
use tracing::warn;

use super::llm::config::LlmConfig;
use crate::failure::Failure;

/// How long a worker reuses the registry's active version and trials.
const REGISTRY_TTL: Duration = Duration::from_secs(2);

/// A prompt version as the LLM reasoner uses it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Prompt {
    pub version: i32,
    /// Replaces the built-in system prompt (`None`: version 0, built in).
    pub system: Option<String>,
    /// Tool name -> description replacing the built-in one.
    pub tool_descriptions: BTreeMap<String, String>,
}

/// What a run was assigned.
#[derive(Debug, Clone)]
pub struct Assigned {
    /// The arm's name: `heuristic`, or the LLM provider's.
    pub arm: &'static str,
    /// The LLM reasons for this run.
    pub llm: bool,
    /// The prompt of an LLM run.
    pub prompt: Option<Arc<Prompt>>,
    /// A shadow run: no fallback to the rules (the pair would compare the
    /// rules with themselves); a model that fails for good fails the shadow.
    pub shadow: bool,
}

/// The worker's rollout settings and its cache of the prompt registry.
pub struct Rollout {
    /// The configured model's provider name, ratio and pinned prompt.
    llm: Option<(&'static str, f64, Option<i32>)>,
    registry: tokio::sync::Mutex<Option<(Instant, prompts::Rollout)>>,
    /// Versions are immutable: each is read once per worker.
    texts: Mutex<HashMap<i32, Arc<Prompt>>>,
}

impl Rollout {
    /// Checks that a configured shadow reasoner can run here: one side of
    /// every pair is the LLM, so a model must be configured, and the one
    /// the setting names.
    pub fn new(llm: Option<&LlmConfig>, shadow: Option<ShadowReasoner>) -> anyhow::Result<Self> {
        // The named reasoner is the shadow of at least some live runs.
        let ratio = llm.map_or(0.0, |cfg| cfg.ratio);
        match shadow {
            Some(ShadowReasoner::Heuristic) if llm.is_some() && ratio <= 0.0 => anyhow::bail!(
                "FAULTLINE_SHADOW_REASONER=heuristic but FAULTLINE_LLM_RATIO=0: every live run is on the rules already (to shadow the rules with the model, name the model: FAULTLINE_SHADOW_REASONER={})",
                llm.map_or("openai", |cfg| cfg.provider.name())
            ),
            Some(s) if s != ShadowReasoner::Heuristic && llm.is_some() && ratio >= 1.0 => {
                anyhow::bail!(
                    "FAULTLINE_SHADOW_REASONER={} but FAULTLINE_LLM_RATIO=1: every live run is on the model already (set FAULTLINE_LLM_RATIO=0 to shadow the rules with it, or FAULTLINE_SHADOW_REASONER=heuristic)",
                    s.as_str()
                )
            }
            _ => {}
        }
        match (shadow, llm) {
            (Some(s), None) => anyhow::bail!(
                "FAULTLINE_SHADOW_REASONER={} needs an LLM reasoner (LLM_PROVIDER): one side of every pair is the model",
                s.as_str()
            ),
            (Some(s), Some(cfg))
                if s != ShadowReasoner::Heuristic && s.as_str() != cfg.provider.name() =>
            {
                anyhow::bail!(
                    "FAULTLINE_SHADOW_REASONER={} but LLM_PROVIDER={}: the shadow model is the configured one",
                    s.as_str(),
                    cfg.provider.name()
                )
            }
            _ => {}
        }
        Ok(Self {
            llm: llm.map(|cfg| (cfg.provider.name(), cfg.ratio, cfg.prompt_pin)),
            registry: tokio::sync::Mutex::new(None),
            texts: Mutex::new(HashMap::new()),
        })
    }

    /// The arm and prompt of `run`: as recorded once it has a checkpoint,
    /// else drawn from its event.
    pub async fn assign(
        &self,
        pool: &PgPool,
        run: &RunRow,
        event: &EventRow,
    ) -> Result<Assigned, Failure> {
        let shadow = run.shadow_of.is_some();
        let Some((provider, ratio, pin)) = self.llm else {
            if run.iteration > 0 && run.reasoner != HEURISTIC {
                warn!(
                    arm = run.reasoner,
                    "the run's model is not configured on this worker; the heuristic reasoner goes on"
                );
            }
            return Ok(heuristic(shadow));
        };
        let llm = if run.iteration > 0 {
            if run.reasoner != HEURISTIC && run.reasoner != provider {
                warn!(
                    arm = run.reasoner,
                    provider, "the run's model is not the one configured here; this one goes on"
                );
            }
            run.reasoner != HEURISTIC
        } else if let Some(twin) = run.shadow_of {
            // The arm its live run did not take: as recorded once the live
            // run has a checkpoint, else as this worker would draw it.
            let live = match runs::get(pool, twin).await? {
                Some(live) if live.iteration > 0 => live.reasoner != HEURISTIC,
                _ => rollout::takes_llm(&event.dedup_key, ratio),
            };
            !live
        } else {
            rollout::takes_llm(&event.dedup_key, ratio)
        };
        if !llm {
            return Ok(heuristic(shadow));
        }
        let version = match (pin, run.prompt_version) {
            (_, Some(recorded)) if run.iteration > 0 => recorded,
            (Some(pinned), _) => pinned,
            _ => {
                let registry = self.registry(pool).await?;
                rollout::prompt_for(&event.dedup_key, &registry.trials, registry.active)
            }
        };
        Ok(Assigned {
            arm: provider,
            llm: true,
            prompt: Some(self.prompt(pool, version).await?),
            shadow,
        })
    }

    /// The registry's trials and active version, re-read every
    /// [`REGISTRY_TTL`].
    async fn registry(&self, pool: &PgPool) -> Result<prompts::Rollout, Failure> {
        let mut cached = self.registry.lock().await;
        if let Some((at, registry)) = cached.as_ref()
            && at.elapsed() < REGISTRY_TTL
        {
            return Ok(registry.clone());
        }
        let registry = prompts::rollout(pool).await?;
        *cached = Some((Instant::now(), registry.clone()));
        Ok(registry)
    }

    /// Version `version`'s text (0: the built-in prompt).
    async fn prompt(&self, pool: &PgPool, version: i32) -> Result<Arc<Prompt>, Failure> {
        if version == 0 {
            return Ok(Arc::new(Prompt::default()));
        }
        if let Some(p) = self.texts.lock().expect("prompt cache").get(&version) {
            return Ok(p.clone());
        }
        let row = prompts::get(pool, version).await?.ok_or_else(|| {
            Failure::permanent(format!("prompt version {version} is not in the registry"))
        })?;
        let tool_descriptions = row
            .tool_descriptions
            .as_object()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|(name, d)| Some((name.clone(), d.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        let prompt = Arc::new(Prompt {
            version,
            system: Some(row.system_prompt),
            tool_descriptions,
        });
        self.texts
            .lock()
            .expect("prompt cache")
            .insert(version, prompt.clone());
        Ok(prompt)
    }
}

fn heuristic(shadow: bool) -> Assigned {
    Assigned {
        arm: HEURISTIC,
        llm: false,
        prompt: None,
        shadow,
    }
}

//! Rolling out a model (docs/rollout.md): which reasoner and prompt a new
//! run gets. Every choice is a pure function of the event and the
//! configuration ([`share`]), so a redelivered event, a retried step and a
//! resumed run all land on the same arm, and the producer and any worker
//! agree without asking each other.

use std::str::FromStr;

use sha2::{Digest, Sha256};

/// The reasoner that shadows live runs (`FAULTLINE_SHADOW_REASONER`): a
/// shadow run analyses the same event with the reasoner the live run did
/// not get. `OpenAi` / `Anthropic` shadow the rules with that model (the
/// worker's `LLM_PROVIDER`; `FAULTLINE_LLM_RATIO` must leave some live runs
/// on the rules), `Heuristic` shadows the model's live runs with the rules
/// (the ratio must send some to the model). With a ratio between 0 and 1
/// both happen: each run is shadowed by the arm it did not get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShadowReasoner {
    Heuristic,
    OpenAi,
    Anthropic,
}

impl ShadowReasoner {
    pub fn as_str(self) -> &'static str {
        match self {
            ShadowReasoner::Heuristic => HEURISTIC,
            ShadowReasoner::OpenAi => "openai",
            ShadowReasoner::Anthropic => "anthropic",
        }
    }
}

/// `off` (or `none`) is no shadow; the setting's parser maps it to `None`.
impl FromStr for ShadowReasoner {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "heuristic" => Ok(ShadowReasoner::Heuristic),
            "openai" => Ok(ShadowReasoner::OpenAi),
            "anthropic" => Ok(ShadowReasoner::Anthropic),
            other => Err(format!(
                "{other:?}: expected off, heuristic, openai or anthropic"
            )),
        }
    }
}

/// The built-in reasoner's name (a run's arm, a journal row's reasoner).
pub const HEURISTIC: &str = "heuristic";

/// Salt of the arm choice (heuristic or LLM).
pub const ARM_SALT: &str = "arm";
/// Salt of the prompt-version choice, independent of the arm's.
pub const PROMPT_SALT: &str = "prompt";

/// A number in `[0, 1)` fixed by an event's dedup key and a salt: the
/// first 8 bytes of SHA-256(`salt` NUL `key`). Uniform over keys, so a
/// ratio r sends a share r of events to an arm.
pub fn share(key: &str, salt: &str) -> f64 {
    let digest = Sha256::new()
        .chain_update(salt.as_bytes())
        .chain_update([0])
        .chain_update(key.as_bytes())
        .finalize();
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    // 53 bits: every value exactly representable, strictly below 1.
    (u64::from_be_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

/// The LLM arm takes an event when its [`share`] falls under `ratio`.
pub fn takes_llm(key: &str, ratio: f64) -> bool {
    share(key, ARM_SALT) < ratio
}

/// The prompt version of an event: walking the versions on trial (version,
/// ratio) in order, the first whose cumulative ratio passes the event's
/// [`share`]; else `active` (the built-in prompt is version 0).
pub fn prompt_for(key: &str, trials: &[(i32, f64)], active: i32) -> i32 {
    let at = share(key, PROMPT_SALT);
    let mut upto = 0.0;
    for &(version, ratio) in trials {
        upto += ratio;
        if at < upto {
            return version;
        }
    }
    active
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ratio_sends_its_share_of_a_thousand_events_within_five_points() {
        for ratio in [0.0, 0.05, 0.2, 0.5, 0.9, 1.0] {
            let taken = (0..1000)
                .filter(|i| takes_llm(&format!("github:delivery-{i}"), ratio))
                .count() as f64;
            assert!(
                (taken / 1000.0 - ratio).abs() <= 0.05,
                "ratio {ratio}: {taken} of 1000"
            );
        }
    }

    #[test]
    fn the_same_event_always_gets_the_same_arm_and_prompt() {
        let key = "jenkins:https://ci.example/job/api/42/";
        let first = (takes_llm(key, 0.3), prompt_for(key, &[(4, 0.5)], 2));
        for _ in 0..10 {
            assert_eq!(
                (takes_llm(key, 0.3), prompt_for(key, &[(4, 0.5)], 2)),
                first
            );
        }
    }

    #[test]
    fn prompt_trials_split_events_by_their_ratios_and_the_rest_get_the_active_one() {
        let trials = [(3, 0.1), (5, 0.3)];
        let mut counts = std::collections::BTreeMap::new();
        for i in 0..2000 {
            *counts
                .entry(prompt_for(&format!("rest:{i}"), &trials, 2))
                .or_insert(0) += 1;
        }
        assert!(
            (counts[&3] as f64 / 2000.0 - 0.1).abs() < 0.03,
            "{counts:?}"
        );
        assert!(
            (counts[&5] as f64 / 2000.0 - 0.3).abs() < 0.03,
            "{counts:?}"
        );
        assert!(
            (counts[&2] as f64 / 2000.0 - 0.6).abs() < 0.03,
            "{counts:?}"
        );
        assert_eq!(prompt_for("any", &[], 0), 0);
    }

    #[test]
    fn the_arm_and_the_prompt_are_drawn_independently() {
        // Salted apart: LLM runs are not all on one prompt.
        let keys: Vec<String> = (0..1000).map(|i| format!("k{i}")).collect();
        let llm: Vec<&String> = keys.iter().filter(|k| takes_llm(k, 0.5)).collect();
        let trial = llm
            .iter()
            .filter(|k| prompt_for(k, &[(1, 0.5)], 0) == 1)
            .count() as f64;
        assert!((trial / llm.len() as f64 - 0.5).abs() < 0.08);
    }
}

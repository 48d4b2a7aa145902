//! Domain types shared by the producer, the workers and the CLI.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

pub use faultline_analysis::Category;

use crate::specifics::Specifics;

/// Where a run is in its lifecycle (the `analysis_runs.status` column; read
/// and written as text, see [`crate::storage::columns`]).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::Display,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::VariantArray,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum RunStatus {
    Queued,
    Running,
    RetryWait,
    Completed,
    NeedsReview,
    Failed,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// A terminal state is one of the three outcomes of I1.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            RunStatus::Completed | RunStatus::NeedsReview | RunStatus::Failed
        )
    }
}

/// The payload of one queue task: "execute iteration `iteration` of `run_id`,
/// as attempt `attempt`". A task whose iteration or attempt no longer matches
/// the run is stale and is dropped at claim time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepTask {
    pub run_id: Uuid,
    /// The iteration to execute, 1-based.
    pub iteration: i32,
    pub attempt: i32,
}

impl StepTask {
    /// The idempotency key of this delivery (`run_id/iteration/attempt`).
    pub fn key(&self) -> String {
        format!("{}/{}/{}", self.run_id, self.iteration, self.attempt)
    }
}

/// One committed checkpoint of the journal (`run_steps`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub iteration: i32,
    pub thought: String,
    /// A tool name, `final_answer`, or `invalid_response` (an LLM reply that
    /// could not be used; its error is the observation).
    pub action: String,
    pub action_input: Value,
    pub observation: Value,
    pub is_final: bool,
    /// Which reasoner decided this iteration (`heuristic`, `openai`, `anthropic`).
    #[serde(default)]
    pub reasoner: String,
    /// The provider's id of the tool call, so a rebuilt conversation pairs
    /// each call with its result.
    #[serde(default)]
    pub call_id: Option<String>,
    /// The raw LLM exchange (request, response, fallback reason), if any.
    #[serde(default)]
    pub llm: Option<Value>,
    #[serde(default)]
    pub tokens_in: i32,
    #[serde(default)]
    pub tokens_out: i32,
    #[serde(default)]
    pub cost_usd: f64,
}

/// The action recorded for an LLM reply that could not be used.
pub const INVALID_RESPONSE: &str = "invalid_response";

pub const FINAL_ANSWER: &str = "final_answer";

/// A citation: the iteration whose observation supports a claim, and the
/// quoted text that must appear in that observation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub iteration: i32,
    pub quote: String,
}

/// The structured result of an analysis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FinalAnswer {
    pub category: Category,
    pub root_cause: String,
    pub fix: String,
    pub evidence: Vec<Evidence>,
    /// The verified confidence (0..=1) the run was routed with.
    pub confidence: f32,
    /// How the confidence was made up, for humans.
    #[serde(default)]
    pub confidence_parts: Value,
    /// Knowledge-base entries the answer relied on.
    #[serde(default)]
    pub kb_refs: Vec<String>,
    /// What the log names: failing tests, the first diagnostic, unresolved
    /// packages, the failed step (read from the log, never from a model).
    #[serde(default, skip_serializing_if = "Specifics::is_empty")]
    pub specifics: Specifics,
    /// Whether the change under test broke it (issue 32): decided from the
    /// category and the job's history as journaled, never by a model.
    #[serde(default)]
    pub origin: Origin,
    /// What decided `origin`, one sentence per fact.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub origin_evidence: Vec<String>,
}

/// Where a failure comes from, as the developer whose build failed asks it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// New with this change: the job passed before it.
    ThisChange,
    /// The job was failing the same way before this change.
    AlreadyFailing,
    /// The job both passed and failed on one commit.
    Flaky,
    /// The machine or the network, not the code.
    Infrastructure,
    /// The history does not say.
    #[default]
    Unknown,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::ThisChange => "this_change",
            Origin::AlreadyFailing => "already_failing",
            Origin::Flaky => "flaky",
            Origin::Infrastructure => "infrastructure",
            Origin::Unknown => "unknown",
        }
    }

    /// For people: `this change`, `already failing`, …
    pub fn label(self) -> &'static str {
        match self {
            Origin::ThisChange => "this change",
            Origin::AlreadyFailing => "already failing",
            Origin::Flaky => "flaky",
            Origin::Infrastructure => "infrastructure",
            Origin::Unknown => "origin unknown",
        }
    }

    /// The origin of a stored result (`result.origin`) and the evidence
    /// that decided it (`result.origin_evidence`); `Unknown` and none for
    /// a result written before origins existed.
    pub fn of_result(result: &serde_json::Value) -> (Origin, Vec<String>) {
        let origin = serde_json::from_value(result["origin"].clone()).unwrap_or_default();
        let why = result["origin_evidence"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|w| w.as_str().map(str::to_string))
            .collect();
        (origin, why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_round_trip_through_their_names() {
        for c in Category::ALL {
            assert_eq!(c.as_str().parse::<Category>().unwrap(), c);
            assert_eq!(
                serde_json::to_value(c).unwrap(),
                Value::String(c.as_str().into())
            );
        }
        assert!("NOT_A_CATEGORY".parse::<Category>().is_err());
    }

    #[test]
    fn answers_stored_before_specifics_existed_still_deserialise() {
        let old = serde_json::json!({"category": "INFRA_ERROR", "root_cause": "oom", "fix": "less",
            "evidence": [], "confidence": 0.5, "confidence_parts": {}, "kb_refs": []});
        let answer: FinalAnswer = serde_json::from_value(old.clone()).unwrap();
        assert!(answer.specifics.is_empty());
        assert_eq!(answer.origin, Origin::Unknown);
        assert!(answer.origin_evidence.is_empty());
        // Nothing specific: the stored shape gains only the origin, which
        // every answer states.
        let mut want = old;
        want["origin"] = "unknown".into();
        assert_eq!(serde_json::to_value(&answer).unwrap(), want);
    }

    #[test]
    fn run_statuses_round_trip_through_their_names() {
        use strum::VariantArray as _;
        for &s in RunStatus::VARIANTS {
            assert_eq!(s.as_str().parse::<RunStatus>().unwrap(), s);
            assert_eq!(s.to_string(), s.as_str());
            assert_eq!(
                serde_json::to_value(s).unwrap(),
                Value::String(s.as_str().into())
            );
        }
        assert_eq!(RunStatus::NeedsReview.as_str(), "needs_review");
        assert!("paused".parse::<RunStatus>().is_err());
    }

    #[test]
    fn only_outcomes_are_terminal() {
        assert!(RunStatus::NeedsReview.is_terminal());
        assert!(!RunStatus::RetryWait.is_terminal());
    }
}

//! Reasoners decide the next action from the journal; [`verify`] checks and
//! routes their final answers; [`specifics`] reads what the log names into
//! every answer, whichever reasoner drafted it.

mod heuristic;
pub mod injection;
pub mod judge;
pub mod llm;
pub mod origin;
pub mod rollout;
pub mod routing;
pub mod specifics;
pub mod verify;

pub use heuristic::HeuristicReasoner;

use faultline_shared::{Category, Evidence, StepRecord, storage::events::EventRow};
use futures::future::BoxFuture;
use serde_json::Value;

use crate::{failure::Failure, tools::ToolName};

/// Everything a reasoner may look at: the event and the journal so far.
#[derive(Debug, Clone)]
pub struct AgentState<'a> {
    pub event: &'a EventRow,
    pub journal: &'a [StepRecord],
    /// The iteration being decided (1-based).
    pub iteration: i32,
    pub max_iterations: i32,
    /// Names of the tools configured in this worker (routing skips the rest).
    pub tools: &'a [&'a str],
    /// The run's prompt version, when the LLM reasons for it.
    pub prompt: Option<&'a rollout::Prompt>,
}

impl AgentState<'_> {
    /// The last iteration must answer (I7: every run terminates).
    pub fn must_answer(&self) -> bool {
        self.iteration >= self.max_iterations
    }

    /// Journal entries of one tool, in order.
    pub fn observations_of<'s>(
        &'s self,
        tool: ToolName,
    ) -> impl Iterator<Item = &'s StepRecord> + 's {
        self.journal.iter().filter(move |s| tool.is(&s.action))
    }
}

/// What the reasoner wants this iteration to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Call a tool.
    Act {
        thought: String,
        tool: String,
        input: Value,
    },
    /// Give the final answer (verified before it is accepted).
    Answer { thought: String, draft: Draft },
    /// An LLM reply that cannot be used (unknown tool, arguments that are not
    /// JSON or break the schema, no tool call, an empty or truncated reply).
    /// The error goes back to the model as the observation (a reprompt).
    Invalid {
        thought: String,
        raw: Value,
        error: String,
    },
}

/// A decision with what the journal records about how it was reached.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reasoned {
    pub decision: Option<Decision>,
    /// The provider's tool-call id, echoed with the tool result on resume.
    pub call_id: Option<String>,
    /// The raw exchange (request, response) for the journal.
    pub llm: Option<Value>,
    pub tokens_in: i32,
    pub tokens_out: i32,
    pub cost_usd: f64,
}

impl Reasoned {
    /// A decision reached without a model (the heuristic reasoner).
    pub fn offline(decision: Decision) -> Self {
        Self {
            decision: Some(decision),
            ..Self::default()
        }
    }
}

/// An unverified final answer.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Draft {
    pub category: Category,
    pub root_cause: String,
    pub fix: String,
    pub evidence: Vec<Evidence>,
    /// The reasoner's own estimate (0..=1).
    pub self_confidence: f32,
    /// Strength of retrieval support (knowledge base, error library), 0..=1.
    pub retrieval: f32,
    pub kb_refs: Vec<String>,
}

/// A reasoner decides the next action from the journal alone, so a resumed
/// run rebuilds exactly the conversation it had before a crash.
pub trait Reasoner: Send + Sync {
    fn name(&self) -> &'static str;
    fn decide<'a>(&'a self, state: &'a AgentState<'a>) -> BoxFuture<'a, Result<Reasoned, Failure>>;
}

/// A tool result as a model reads it: the full list of located
/// diagnostics (up to 200, for check-run annotations) is left out — the
/// first diagnostic and the count stay — so it cannot crowd the excerpt's
/// lines out of the model's size budget.
pub fn for_model(result: &Value) -> Value {
    let mut v = result.clone();
    if let Some(facts) = v
        .get_mut("classification")
        .and_then(|c| c.get_mut("facts"))
        .and_then(Value::as_object_mut)
        && let Some(list) = facts.remove("diagnostics")
    {
        let n = list.as_array().map_or(0, Vec::len);
        facts.insert("diagnostics_count".into(), n.into());
    }
    v
}

#[cfg(test)]
mod model_view_tests {
    use super::*;

    #[test]
    fn the_model_sees_the_count_of_located_diagnostics_not_the_list() {
        let many: Vec<Value> = (0..200)
            .map(|i| serde_json::json!({"tool": "tsc", "file": format!("src/m{i}.ts"), "line": i}))
            .collect();
        let obs = serde_json::json!({"lines": [{"n": 1, "text": "x"}],
            "classification": {"facts": {"diagnostic": many[0], "diagnostics": many}}});
        let seen = for_model(&obs);
        assert_eq!(seen["classification"]["facts"]["diagnostics_count"], 200);
        assert!(seen["classification"]["facts"].get("diagnostics").is_none());
        assert_eq!(
            seen["classification"]["facts"]["diagnostic"]["file"],
            "src/m0.ts"
        );
        assert_eq!(seen["lines"], obs["lines"]);
    }
}

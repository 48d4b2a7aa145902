//! Reasoners decide the next action from the journal; [`verify`] checks and
//! routes their final answers.

mod heuristic;
pub mod verify;

pub use heuristic::HeuristicReasoner;

use faultline_shared::{Category, Evidence, StepRecord, storage::events::EventRow};
use serde_json::Value;

/// Everything a reasoner may look at: the event and the journal so far.
#[derive(Debug, Clone)]
pub struct AgentState<'a> {
    pub event: &'a EventRow,
    pub journal: &'a [StepRecord],
    /// The iteration being decided (1-based).
    pub iteration: i32,
    pub max_iterations: i32,
}

impl AgentState<'_> {
    /// The last iteration must answer (I7: every run terminates).
    pub fn must_answer(&self) -> bool {
        self.iteration >= self.max_iterations
    }

    /// Journal entries of one tool, in order.
    pub fn observations_of<'s>(
        &'s self,
        tool: &'s str,
    ) -> impl Iterator<Item = &'s StepRecord> + 's {
        self.journal.iter().filter(move |s| s.action == tool)
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

/// A reasoner: pure decision logic over the journal (no I/O), so a resumed
/// run decides exactly what it would have decided before the crash.
pub trait Reasoner: Send + Sync {
    fn name(&self) -> &'static str;
    fn decide(&self, state: &AgentState<'_>) -> Decision;
}

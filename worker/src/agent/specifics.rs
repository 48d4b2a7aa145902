//! The specifics of a run's answer, from the journal alone: the diagnosis
//! facts of every `log_excerpt` observation (the failure excerpt first,
//! then any tail read), merged field by field. The same for every reasoner:
//! the facts are what the deterministic recognisers read in the log, so a
//! model can neither invent nor drop them.

use faultline_shared::{
    Specifics, StepRecord,
    diagnose::Facts,
    tool::{ExcerptMode, LogExcerpt, Observed},
};

use crate::tools::ToolName;

/// The merged facts of the run's excerpt observations (empty without one).
pub fn facts_of(journal: &[StepRecord]) -> Facts {
    // An observation that is no excerpt (of another shape, facts in a shape
    // this build does not know) adds nothing.
    let excerpts: Vec<LogExcerpt> = journal
        .iter()
        .filter(|s| ToolName::LogExcerpt.is(&s.action))
        .filter_map(|s| Observed(&s.observation).parse_result())
        .collect();
    // The failure excerpt says the most; a tail read fills in the rest.
    let (failure, tail): (Vec<LogExcerpt>, Vec<LogExcerpt>) = excerpts
        .into_iter()
        .partition(|o| o.mode != ExcerptMode::Tail);
    let mut merged = Facts::default();
    for obs in failure.into_iter().chain(tail) {
        let f = obs.classification.facts;
        if merged.failing_tests.is_empty() {
            merged.failing_tests = f.failing_tests;
        }
        if merged.diagnostic.is_none() {
            merged.diagnostic = f.diagnostic;
        }
        if merged.diagnostics.is_empty() {
            merged.diagnostics = f.diagnostics;
        }
        if merged.packages.is_empty() {
            merged.packages = f.packages;
        }
        // Command and exit code belong to one step: taken together.
        if merged.command.is_none() && merged.exit_code.is_none() {
            merged.command = f.command;
            merged.exit_code = f.exit_code;
        }
    }
    merged
}

/// The answer's specifics (see [`facts_of`]).
pub fn of(journal: &[StepRecord]) -> Specifics {
    Specifics::from(&facts_of(journal))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const LOG_EXCERPT: &str = ToolName::LogExcerpt.as_str();

    fn excerpt(iteration: i32, mode: &str, facts: Value) -> StepRecord {
        StepRecord {
            iteration,
            action: LOG_EXCERPT.into(),
            action_input: json!({"mode": mode}),
            observation: json!({"mode": mode, "classification": {"category": "TEST_FAILURE", "facts": facts}}),
            ..StepRecord::default()
        }
    }

    #[test]
    fn the_failure_excerpt_leads_and_a_tail_read_fills_in() {
        let journal = vec![
            excerpt(
                1,
                "failure",
                json!({"failing_tests": [{"name": "test_a", "file": "tests/test_a.py", "line": 9, "runner": "pytest"}]}),
            ),
            StepRecord {
                iteration: 2,
                action: "search_knowledge".into(),
                observation: json!({"matches": []}),
                ..StepRecord::default()
            },
            excerpt(
                3,
                "tail",
                json!({"failing_tests": [{"name": "other", "runner": "pytest"}], "command": "make test", "exit_code": 2}),
            ),
        ];
        let s = of(&journal);
        assert_eq!(s.failing_tests.len(), 1);
        assert_eq!(s.failing_tests[0].name, "test_a");
        assert_eq!(s.failing_tests[0].line, Some(9));
        let step = s.failed_step.expect("from the tail");
        assert_eq!(
            (step.command.as_deref(), step.exit_code),
            (Some("make test"), Some(2))
        );
    }

    #[test]
    fn a_cached_excerpt_counts_and_no_excerpt_means_nothing_specific() {
        let first = excerpt(1, "failure", json!({"exit_code": 137}));
        let cached = StepRecord {
            iteration: 2,
            action: LOG_EXCERPT.into(),
            observation: json!({"cached_from_iteration": 1, "result": first.observation}),
            ..StepRecord::default()
        };
        assert_eq!(
            of(std::slice::from_ref(&cached))
                .failed_step
                .and_then(|s| s.exit_code),
            Some(137)
        );
        assert!(of(&[]).is_empty());
        // Facts in a shape this build does not know are ignored, not fatal.
        assert!(of(&[excerpt(1, "failure", json!("garbage"))]).is_empty());
    }
}

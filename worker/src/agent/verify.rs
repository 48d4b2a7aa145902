//! Verification of final answers: citations must point at observations the
//! run actually gathered; confidence combines the reasoner's estimate,
//! retrieval strength and grounding; thresholds route the result.

use faultline_shared::{Category, Evidence, StepRecord, config::Thresholds};
use serde_json::{Value, json};

use super::Draft;

/// Weights of the confidence parts (sum to 1).
const W_SELF: f32 = 0.5;
const W_RETRIEVAL: f32 = 0.3;
const W_GROUNDING: f32 = 0.2;
/// An answer that cannot name a category is never trusted on its own.
const UNKNOWN_CAP: f32 = 0.4;

/// Where a verified answer goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    /// Confident: the run completes (and is notified).
    Complete,
    /// Weak but improvable: one more bounded round of evidence gathering.
    SelfCorrect { feedback: String },
    /// Humans decide.
    Review { reason: String },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub confidence: f32,
    pub grounding: f32,
    pub grounded: Vec<Evidence>,
    pub rejected: Vec<Evidence>,
    pub route: Route,
    pub parts: Value,
}

/// Retrieval strength of an answer of `category` from what the run observed:
/// a past same-fingerprint analysis that agrees (0.9 if it completed, 0.6 if
/// it was only reviewed), or a knowledge-base entry of the same category
/// (0.9 when it is the entry of a signature matched in the log, else by
/// rank). Returns the strength and the knowledge-base slugs relied on.
pub fn retrieval_from_journal(journal: &[StepRecord], category: Category) -> (f32, Vec<String>) {
    let mut strength: f32 = 0.0;
    let mut refs = Vec::new();
    let matched: Vec<&str> = journal
        .iter()
        .filter(|s| s.action == "log_excerpt")
        .flat_map(|s| {
            s.observation["classification"]["hits"]
                .as_array()
                .into_iter()
                .flatten()
        })
        .filter_map(|h| h["slug"].as_str())
        .collect();
    for step in journal {
        for m in step.observation["matches"].as_array().into_iter().flatten() {
            if m["category"].as_str() != Some(category.as_str()) {
                continue;
            }
            match step.action.as_str() {
                "similar_failures" => {
                    strength = strength.max(if m["status"] == "completed" { 0.9 } else { 0.6 })
                }
                "search_knowledge" => {
                    let slug = m["slug"].as_str().unwrap_or_default();
                    let rank = m["rank"].as_f64().unwrap_or(0.0) as f32;
                    strength = strength.max(if matched.contains(&slug) {
                        0.9
                    } else {
                        0.55 + rank.min(0.3)
                    });
                    if !refs.iter().any(|r| r == slug) {
                        refs.push(slug.to_string());
                    }
                }
                _ => {}
            }
        }
    }
    (strength, refs)
}

/// True when `quote` appears in one of the string values of `observation`.
fn appears_in(observation: &Value, quote: &str) -> bool {
    match observation {
        Value::String(s) => s.contains(quote),
        Value::Array(items) => items.iter().any(|v| appears_in(v, quote)),
        Value::Object(map) => map.values().any(|v| appears_in(v, quote)),
        Value::Number(n) => n.to_string() == quote,
        _ => false,
    }
}

/// Verifies `draft` against the journal and routes it. `may_self_correct` is
/// false once the run has self-corrected or has no iteration left.
pub fn verify(
    draft: &Draft,
    journal: &[StepRecord],
    thresholds: Thresholds,
    may_self_correct: bool,
) -> Verdict {
    let (grounded, rejected): (Vec<Evidence>, Vec<Evidence>) =
        draft.evidence.iter().cloned().partition(|e| {
            !e.quote.trim().is_empty()
                && journal.iter().any(|s| {
                    s.iteration == e.iteration
                        && !s.is_final
                        && appears_in(&s.observation, &e.quote)
                })
        });
    let grounding = if draft.evidence.is_empty() {
        0.0
    } else {
        grounded.len() as f32 / draft.evidence.len() as f32
    };
    let mut confidence = W_SELF * draft.self_confidence.clamp(0.0, 1.0)
        + W_RETRIEVAL * draft.retrieval.clamp(0.0, 1.0)
        + W_GROUNDING * grounding;
    if draft.category == Category::Unknown {
        confidence = confidence.min(UNKNOWN_CAP);
    }
    if grounded.is_empty() {
        confidence = confidence.min(thresholds.self_correct);
    }
    let confidence = (confidence * 1000.0).round() / 1000.0;
    let route = if confidence >= thresholds.auto {
        Route::Complete
    } else if may_self_correct
        && confidence >= thresholds.self_correct
        && confidence < thresholds.review
    {
        Route::SelfCorrect {
            feedback: format!(
                "confidence {confidence:.2} is below {:.2}: gather more evidence before answering again",
                thresholds.review
            ),
        }
    } else {
        Route::Review {
            reason: format!(
                "low confidence {confidence:.2} (auto-accept needs {:.2})",
                thresholds.auto
            ),
        }
    };
    let parts = json!({
        "self": draft.self_confidence, "retrieval": draft.retrieval, "grounding": grounding,
        "weights": {"self": W_SELF, "retrieval": W_RETRIEVAL, "grounding": W_GROUNDING},
        "rejected_citations": rejected.len(),
    });
    Verdict {
        confidence,
        grounding,
        grounded,
        rejected,
        route,
        parts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journal() -> Vec<StepRecord> {
        vec![StepRecord {
            iteration: 1,
            thought: String::new(),
            action: "log_excerpt".into(),
            action_input: json!({}),
            observation: json!({"lines": [{"n": 7, "text": "java.lang.OutOfMemoryError: Java heap space"}]}),
            is_final: false,
            ..Default::default()
        }]
    }

    fn draft(evidence: Vec<Evidence>, self_confidence: f32, retrieval: f32) -> Draft {
        Draft {
            category: Category::InfraError,
            root_cause: "oom".into(),
            fix: "more memory".into(),
            evidence,
            self_confidence,
            retrieval,
            kb_refs: vec![],
        }
    }

    fn cite(iteration: i32, quote: &str) -> Evidence {
        Evidence {
            iteration,
            quote: quote.into(),
        }
    }

    #[test]
    fn a_citation_of_something_never_observed_is_rejected() {
        let v = verify(
            &draft(
                vec![
                    cite(1, "OutOfMemoryError"),
                    cite(1, "disk full"),
                    cite(9, "Java heap"),
                ],
                0.9,
                0.9,
            ),
            &journal(),
            Thresholds::default(),
            false,
        );
        assert_eq!(v.grounded.len(), 1);
        assert_eq!(v.rejected.len(), 2);
        assert!((v.grounding - 1.0 / 3.0).abs() < 1e-6);
    }

    #[test]
    fn strong_grounded_answers_complete_and_weak_ones_go_to_review() {
        let strong = verify(
            &draft(vec![cite(1, "OutOfMemoryError")], 0.9, 0.85),
            &journal(),
            Thresholds::default(),
            true,
        );
        assert_eq!(strong.route, Route::Complete);
        let weak = verify(
            &draft(vec![cite(1, "OutOfMemoryError")], 0.3, 0.2),
            &journal(),
            Thresholds::default(),
            true,
        );
        assert!(matches!(weak.route, Route::Review { .. }));
    }

    #[test]
    fn middling_answers_self_correct_once() {
        let d = draft(vec![cite(1, "OutOfMemoryError")], 0.55, 0.5);
        assert!(matches!(
            verify(&d, &journal(), Thresholds::default(), true).route,
            Route::SelfCorrect { .. }
        ));
        assert!(matches!(
            verify(&d, &journal(), Thresholds::default(), false).route,
            Route::Review { .. }
        ));
    }

    #[test]
    fn an_ungrounded_answer_is_never_accepted() {
        let v = verify(
            &draft(vec![cite(1, "not there")], 1.0, 1.0),
            &journal(),
            Thresholds::default(),
            false,
        );
        assert!(v.confidence <= Thresholds::default().self_correct);
        assert!(matches!(v.route, Route::Review { .. }));
    }

    #[test]
    fn unknown_category_is_capped() {
        let mut d = draft(vec![cite(1, "OutOfMemoryError")], 1.0, 1.0);
        d.category = Category::Unknown;
        assert!(verify(&d, &journal(), Thresholds::default(), false).confidence <= UNKNOWN_CAP);
    }
}

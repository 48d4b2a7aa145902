//! The built-in reasoner: offline and deterministic. It reads the failure
//! excerpt (which carries the signature classification), looks the failure
//! up in the knowledge base and the error library, explores the log's tail
//! when verification asked it to self-correct, and answers with citations of
//! what it observed.

use faultline_shared::{Category, Evidence, StepRecord, kb, types::FINAL_ANSWER};
use serde_json::{Value, json};

use futures::future::BoxFuture;

use super::{AgentState, Decision, Draft, ReasonError, Reasoned, Reasoner};
use crate::tools::{LOG_EXCERPT, SEARCH_KNOWLEDGE, SIMILAR_FAILURES};

#[derive(Debug, Default, Clone, Copy)]
pub struct HeuristicReasoner;

impl Reasoner for HeuristicReasoner {
    fn name(&self) -> &'static str {
        "heuristic"
    }

    fn decide<'a>(
        &'a self,
        state: &'a AgentState<'a>,
    ) -> BoxFuture<'a, Result<Reasoned, ReasonError>> {
        Box::pin(std::future::ready(Ok(Reasoned::offline(self.plan(state)))))
    }
}

impl HeuristicReasoner {
    /// The next step, from the journal alone (pure and deterministic).
    pub fn plan(&self, state: &AgentState<'_>) -> Decision {
        let excerpt = state
            .observations_of(LOG_EXCERPT)
            .find(|s| s.action_input["mode"] != "tail");
        let Some(excerpt) = excerpt.filter(|_| true) else {
            if !state.must_answer() {
                return act(
                    "Start from the log: find the lines that explain the failure.",
                    LOG_EXCERPT,
                    json!({"mode": "failure"}),
                );
            }
            return answer_without_evidence(state);
        };
        let classification = &excerpt.observation["classification"];
        let category = category_of(classification);

        if !state.must_answer() && state.observations_of(SEARCH_KNOWLEDGE).next().is_none() {
            let query = knowledge_query(&excerpt.observation);
            return act(
                &format!(
                    "The excerpt points to {category}; look up documented patterns that match its signals."
                ),
                SEARCH_KNOWLEDGE,
                json!({"query": query, "limit": 5}),
            );
        }
        let fingerprint = excerpt.observation["fingerprint"]
            .as_str()
            .unwrap_or_default();
        if !state.must_answer()
            && !fingerprint.is_empty()
            && state.observations_of(SIMILAR_FAILURES).next().is_none()
        {
            return act(
                "Check the error library: was a failure with the same fingerprint analysed before?",
                SIMILAR_FAILURES,
                json!({"fingerprint": fingerprint}),
            );
        }
        let asked_to_self_correct = state
            .journal
            .iter()
            .any(|s| s.action == FINAL_ANSWER && !s.is_final);
        let explored_tail = state
            .observations_of(LOG_EXCERPT)
            .any(|s| s.action_input["mode"] == "tail");
        if asked_to_self_correct && !explored_tail && !state.must_answer() {
            return act(
                "Verification found the answer weak; read the end of the log for the final error and exit status.",
                LOG_EXCERPT,
                json!({"mode": "tail", "max_lines": 60}),
            );
        }
        Decision::Answer {
            thought: "Combine the signals, the knowledge base and past failures into an answer."
                .into(),
            draft: draft(state, excerpt),
        }
    }
}

fn act(thought: &str, tool: &str, input: Value) -> Decision {
    Decision::Act {
        thought: thought.to_string(),
        tool: tool.to_string(),
        input,
    }
}

fn category_of(classification: &Value) -> Category {
    classification["category"]
        .as_str()
        .and_then(|c| c.parse().ok())
        .unwrap_or(Category::Unknown)
}

/// Query words for the knowledge base: the keywords of the matched patterns,
/// else the words of the strongest excerpt lines.
fn knowledge_query(observation: &Value) -> String {
    let mut words: Vec<String> = Vec::new();
    for hit in observation["classification"]["hits"]
        .as_array()
        .into_iter()
        .flatten()
        .take(3)
    {
        let slug = hit["slug"].as_str().unwrap_or_default();
        if let Some(entry) = kb::builtin().iter().find(|e| e.slug == slug) {
            words.extend(entry.keywords.iter().cloned());
            words.extend(entry.title.split_whitespace().map(str::to_string));
        }
    }
    if words.is_empty() {
        for line in observation["error_lines"]
            .as_array()
            .into_iter()
            .flatten()
            .take(3)
        {
            words.extend(
                line.as_str()
                    .unwrap_or_default()
                    .split(|c: char| !c.is_alphabetic())
                    .filter(|w| w.len() >= 4)
                    .map(|w| w.to_lowercase()),
            );
        }
    }
    let mut seen = std::collections::HashSet::new();
    words.retain(|w| seen.insert(w.to_lowercase()));
    words.truncate(16);
    words.join(" ")
}

fn answer_without_evidence(state: &AgentState<'_>) -> Decision {
    let _ = state;
    Decision::Answer {
        thought: "No observation was gathered before the iteration budget ran out.".into(),
        draft: Draft {
            category: Category::Unknown,
            root_cause: "The analysis ran out of iterations before reading the log.".into(),
            fix: "Re-run the analysis with a larger FAULTLINE_MAX_ITERATIONS.".into(),
            evidence: vec![],
            self_confidence: 0.0,
            retrieval: 0.0,
            kb_refs: vec![],
        },
    }
}

/// Builds the answer from the excerpt, the best agreeing knowledge-base
/// entry and the error library.
fn draft(state: &AgentState<'_>, excerpt: &StepRecord) -> Draft {
    // A tail exploration after self-correction may classify better.
    let tail = state
        .observations_of(LOG_EXCERPT)
        .filter(|s| s.action_input["mode"] == "tail")
        .last();
    let mut chosen = excerpt;
    let mut cls = &excerpt.observation["classification"];
    if let Some(t) = tail {
        let tail_cls = &t.observation["classification"];
        if tail_cls["confidence"].as_f64().unwrap_or(0.0)
            > cls["confidence"].as_f64().unwrap_or(0.0)
        {
            chosen = t;
            cls = tail_cls;
        }
    }
    let mut category = category_of(cls);
    let mut self_confidence = cls["confidence"].as_f64().unwrap_or(0.0) as f32;
    let mut evidence = Vec::new();
    let hits = cls["hits"].as_array().cloned().unwrap_or_default();
    for hit in hits.iter().take(3) {
        if let Some(line) = hit["line"].as_str() {
            evidence.push(Evidence {
                iteration: chosen.iteration,
                quote: quote(line),
            });
        }
    }
    if evidence.is_empty()
        && let Some(line) = chosen.observation["error_lines"]
            .as_array()
            .and_then(|l| l.first())
            .and_then(Value::as_str)
    {
        evidence.push(Evidence {
            iteration: chosen.iteration,
            quote: quote(line),
        });
    }

    // The error library: past analyses of the same fingerprint.
    let mut retrieval: f32 = 0.0;
    let similar = state.observations_of(SIMILAR_FAILURES).last();
    if let Some(similar) = similar {
        let matches = similar.observation["matches"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let agreeing: Vec<&Value> = matches
            .iter()
            .filter(|m| {
                m["category"]
                    .as_str()
                    .and_then(|c| c.parse::<Category>().ok())
                    == Some(category)
            })
            .collect();
        if category == Category::Unknown
            && let Some(first) = matches
                .first()
                .and_then(|m| m["category"].as_str())
                .and_then(|c| c.parse().ok())
        {
            category = first;
            self_confidence = self_confidence.max(0.5);
        }
        if let Some(m) = agreeing.first() {
            retrieval = retrieval.max(if m["status"] == "completed" { 0.9 } else { 0.6 });
            if let Some(run) = m["run_id"].as_str() {
                evidence.push(Evidence {
                    iteration: similar.iteration,
                    quote: run.to_string(),
                });
            }
        }
    }

    // The knowledge base: prefer an entry of the same category, the matched signature's own entry first.
    let hit_slugs: Vec<&str> = hits.iter().filter_map(|h| h["slug"].as_str()).collect();
    let kb_step = state.observations_of(SEARCH_KNOWLEDGE).last();
    let kb_matches = kb_step
        .and_then(|s| s.observation["matches"].as_array().cloned())
        .unwrap_or_default();
    let best = kb_matches
        .iter()
        .find(|m| {
            m["slug"]
                .as_str()
                .is_some_and(|s| hit_slugs.first() == Some(&s))
        })
        .or_else(|| {
            kb_matches
                .iter()
                .find(|m| m["category"] == category.as_str())
        });
    let mut kb_refs = Vec::new();
    let (root_cause, fix) = match (best, kb_step) {
        (Some(m), Some(step)) => {
            let slug = m["slug"].as_str().unwrap_or_default().to_string();
            let rank = m["rank"].as_f64().unwrap_or(0.0) as f32;
            let exact = hit_slugs.contains(&slug.as_str());
            // The matched signature's own documented pattern is the strongest
            // retrieval there is; a related entry found by text is weaker.
            retrieval = retrieval.max(if exact { 0.9 } else { 0.55 + rank.min(0.3) });
            evidence.push(Evidence { iteration: step.iteration, quote: slug.clone() });
            kb_refs.push(slug);
            let signal = evidence.first().map(|e| format!(" The log shows: `{}`.", e.quote)).unwrap_or_default();
            (
                format!("{}: {}{}", m["title"].as_str().unwrap_or_default(), m["root_cause"].as_str().unwrap_or_default(), signal),
                m["fix"].as_str().unwrap_or_default().to_string(),
            )
        }
        _ => match evidence.first() {
            Some(e) => (
                format!("No documented pattern matched; the strongest failure signal in the log is `{}`.", e.quote),
                "Start from the quoted line: reproduce the step locally and inspect the command that produced it.".to_string(),
            ),
            None => (
                "The log gives no recognisable failure signal.".to_string(),
                "Check the CI job's configuration and rerun it with verbose output.".to_string(),
            ),
        },
    };
    // The same line can match several signatures: cite it once.
    let mut seen = std::collections::HashSet::new();
    evidence.retain(|e| seen.insert((e.iteration, e.quote.clone())));
    Draft {
        category,
        root_cause,
        fix,
        evidence,
        self_confidence,
        retrieval,
        kb_refs,
    }
}

/// A citation of a line: bounded in size, still a substring of the line.
fn quote(line: &str) -> String {
    let line = line.trim();
    match line.char_indices().nth(200) {
        Some((i, _)) => line[..i].to_string(),
        None => line.to_string(),
    }
}

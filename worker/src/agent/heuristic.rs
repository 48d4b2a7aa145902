//! The built-in reasoner: offline and deterministic. It reads the failure
//! excerpt (which carries the signature classification), then calls what the
//! [routing table](super::routing) lists for the category (knowledge base,
//! error library, failure history; source code only when retrieval is
//! weak), explores the log's tail
//! when verification asked it to self-correct, and answers with citations of
//! what it observed.

use faultline_shared::{
    Category, Evidence, StepRecord, kb,
    tool::{Hit, LogExcerpt, Observed, SearchKnowledge, SimilarFailures},
    types::FINAL_ANSWER,
};
use serde_json::{Value, json};

use futures::future::BoxFuture;

use super::{AgentState, Decision, Draft, Reasoned, Reasoner, routing, specifics, verify};
use crate::tools::ToolName;

/// The reasoner's own confidence in an answer a reviewer confirmed for the
/// same fingerprint: with the resolution's retrieval strength (0.95) and
/// full grounding it clears the auto-accept threshold.
const HUMAN_CONFIRMED_SELF: f32 = 0.85;

#[derive(Debug, Default, Clone, Copy)]
pub struct HeuristicReasoner;

impl Reasoner for HeuristicReasoner {
    fn name(&self) -> &'static str {
        "heuristic"
    }

    fn decide<'a>(
        &'a self,
        state: &'a AgentState<'a>,
    ) -> BoxFuture<'a, Result<Reasoned, crate::failure::Failure>> {
        Box::pin(std::future::ready(Ok(Reasoned::offline(self.plan(state)))))
    }
}

impl HeuristicReasoner {
    /// The next step, from the journal alone (pure and deterministic).
    pub fn plan(&self, state: &AgentState<'_>) -> Decision {
        let excerpt = state
            .observations_of(ToolName::LogExcerpt)
            .find(|s| s.action_input["mode"] != "tail");
        let Some(excerpt) = excerpt.filter(|_| true) else {
            if !state.must_answer() {
                return act(
                    "Start from the log: find the lines that explain the failure.",
                    ToolName::LogExcerpt,
                    json!({"mode": "failure"}),
                );
            }
            return answer_without_evidence(state);
        };
        let category = excerpt_of(excerpt).classification.category;

        // Gather what the routing table says is worth it for this category.
        if !state.must_answer() {
            let called: Vec<&str> = state.journal.iter().map(|s| s.action.as_str()).collect();
            let (retrieval, _) = verify::retrieval_from_journal(state.journal, category);
            for tool in routing::route(category).pending(state.tools, &called, retrieval) {
                if let Some((thought, input)) = call_for(tool, state, excerpt, category) {
                    return act(&thought, tool, input);
                }
            }
        }
        let asked_to_self_correct = state
            .journal
            .iter()
            .any(|s| s.action == FINAL_ANSWER && !s.is_final);
        let explored_tail = state
            .observations_of(ToolName::LogExcerpt)
            .any(|s| s.action_input["mode"] == "tail");
        if asked_to_self_correct && !explored_tail && !state.must_answer() {
            return act(
                "Verification found the answer weak; read the end of the log for the final error and exit status.",
                ToolName::LogExcerpt,
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

/// The thought and arguments of a routed call, or `None` when the journal
/// gives nothing to call it with (no fingerprint, no file location, …).
fn call_for(
    tool: ToolName,
    state: &AgentState<'_>,
    excerpt: &StepRecord,
    category: Category,
) -> Option<(String, Value)> {
    let obs = excerpt_of(excerpt);
    let event = state.event;
    let location = || source_location(&obs.error_lines);
    match tool {
        ToolName::SearchKnowledge => Some((
            format!(
                "The excerpt points to {category}; look up documented patterns that match its signals."
            ),
            json!({"query": knowledge_query(&obs), "limit": 5}),
        )),
        ToolName::SimilarFailures => {
            let fingerprint = Some(obs.fingerprint.as_str()).filter(|f| !f.is_empty())?;
            Some((
                "Check the error library: was this failure (same fingerprint or similar text) analysed before?".into(),
                json!({"fingerprint": fingerprint}),
            ))
        }
        ToolName::FailureHistory => {
            (event.job_name.is_some() || event.test_name.is_some()).then(|| {
                (
                    "Is this failure flaky or newly broken? Read the job's and test's history."
                        .into(),
                    json!({}),
                )
            })
        }
        ToolName::GithubFile if event.repository.is_some() => {
            let (path, line) = location()?;
            Some((
                format!("Retrieval is weak; read the code at {path}:{line} where the log points."),
                json!({"path": path, "line": line}),
            ))
        }
        ToolName::GithubBlame if event.repository.is_some() => {
            let (path, line) = location()?;
            Some((
                format!("Who last changed {path}:{line}?"),
                json!({"path": path, "start_line": line, "end_line": line}),
            ))
        }
        ToolName::GithubCommits if event.repository.is_some() => {
            let input = match location() {
                Some((path, _)) => json!({"path": path, "limit": 10}),
                None => json!({"limit": 10}),
            };
            Some((
                "Retrieval is weak; list the recent commits that may have caused it.".into(),
                input,
            ))
        }
        ToolName::JenkinsConsole if event.source == "jenkins" => Some((
            "Read the end of the Jenkins console for the final error and exit status.".into(),
            json!({"part": "tail"}),
        )),
        // Code search needs a better question than a heuristic can ask.
        _ => None,
    }
}

/// The first repository-relative `path:line` in the failure's key lines.
fn source_location(error_lines: &[String]) -> Option<(String, u64)> {
    static LOCATION: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?:^|[\s('\x22])([A-Za-z0-9_][\w.-]*(?:/[\w.-]+)*\.[A-Za-z]{1,8}):(\d+)",
        )
        .expect("valid regex")
    });
    error_lines.iter().find_map(|line| {
        let c = LOCATION.captures(line)?;
        Some((c[1].to_string(), c[2].parse().ok()?))
    })
}

fn act(thought: &str, tool: ToolName, input: Value) -> Decision {
    Decision::Act {
        thought: thought.to_string(),
        tool: tool.to_string(),
        input,
    }
}

/// A `log_excerpt` step's observation; one that does not read as one is
/// an excerpt that found nothing.
fn excerpt_of(step: &StepRecord) -> LogExcerpt {
    Observed(&step.observation).parse().unwrap_or_default()
}

/// Query words for the knowledge base: the keywords of the matched patterns,
/// else the words of the strongest excerpt lines.
fn knowledge_query(observation: &LogExcerpt) -> String {
    let mut words: Vec<String> = Vec::new();
    for hit in observation.classification.hits.iter().take(3) {
        if let Some(entry) = kb::builtin().iter().find(|e| e.slug == hit.slug) {
            words.extend(entry.keywords.iter().cloned());
            words.extend(entry.title.split_whitespace().map(str::to_string));
        }
    }
    if words.is_empty() {
        for line in observation.error_lines.iter().take(3) {
            words.extend(
                line.split(|c: char| !c.is_alphabetic())
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
    let (chosen, read) = best_read(state, excerpt);
    let cls = &read.classification;
    let mut verdict = Verdict {
        category: cls.category,
        self_confidence: cls.confidence,
        evidence: log_evidence(chosen, &read),
    };
    let confirmed = consult_library(state, &mut verdict);
    let Verdict {
        category,
        self_confidence,
        mut evidence,
    } = verdict;
    let mut kb_refs = Vec::new();
    let (root_cause, fix_from_kb) =
        consult_knowledge(state, &cls.hits, category, &mut evidence, &mut kb_refs);
    // The specifics the log names (tests, diagnostic, packages, command)
    // lead the root cause; the knowledge base explains the kind.
    let specifics = specifics::facts_of(state.journal).sentence();
    let root_cause = match (&specifics, cls.decided_by.as_deref()) {
        (Some(s), Some(by)) if category != Category::Unknown => {
            format!("{s} (recognised by {by}). {root_cause}")
        }
        (Some(s), _) => format!("{s}. {root_cause}"),
        _ => root_cause,
    };
    let (root_cause, fix) = match confirmed {
        Some(c) if !c.root_cause.is_empty() => (
            format!(
                "{} (confirmed in review by {} for this failure fingerprint)",
                c.root_cause, c.by
            ),
            if c.fix.is_empty() { fix_from_kb } else { c.fix },
        ),
        _ => (root_cause, fix_from_kb),
    };
    // The same line can match several signatures: cite it once.
    let mut seen = std::collections::HashSet::new();
    evidence.retain(|e| seen.insert((e.iteration, e.quote.clone())));
    let (retrieval, _) = verify::retrieval_from_journal(state.journal, category);
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

/// What the answer says so far: the category, how sure the reasoner is,
/// and what it cites.
struct Verdict {
    category: Category,
    self_confidence: f32,
    evidence: Vec<Evidence>,
}

/// A reviewer's answer for this fingerprint.
struct Confirmed {
    root_cause: String,
    fix: String,
    by: String,
}

/// The excerpt to answer from: the failure excerpt, or a tail read after
/// self-correction when it classifies with more confidence.
fn best_read<'s>(
    state: &'s AgentState<'_>,
    excerpt: &'s StepRecord,
) -> (&'s StepRecord, LogExcerpt) {
    let read = excerpt_of(excerpt);
    let tail = state
        .observations_of(ToolName::LogExcerpt)
        .filter(|s| s.action_input["mode"] == "tail")
        .last();
    if let Some(t) = tail {
        let tail_read = excerpt_of(t);
        if tail_read.classification.confidence > read.classification.confidence {
            return (t, tail_read);
        }
    }
    (excerpt, read)
}

/// The lines the classification matched (at most three), else the first
/// error line.
fn log_evidence(chosen: &StepRecord, read: &LogExcerpt) -> Vec<Evidence> {
    let cite = |line: &str| Evidence {
        iteration: chosen.iteration,
        quote: quote(line),
    };
    let mut evidence: Vec<Evidence> = read
        .classification
        .hits
        .iter()
        .take(3)
        .filter_map(|hit| hit.line.as_deref().map(cite))
        .collect();
    if evidence.is_empty()
        && let Some(line) = read.error_lines.first()
    {
        evidence.push(cite(line));
    }
    evidence
}

/// The error library: past analyses of the same or a similar failure. A
/// reviewer's resolution of this fingerprint is adopted (and returned); an
/// unknown category takes the first relevant match's; the strongest match
/// agreeing with the log is cited.
fn consult_library(state: &AgentState<'_>, verdict: &mut Verdict) -> Option<Confirmed> {
    let similar = state.observations_of(ToolName::SimilarFailures).last()?;
    let matches = Observed(&similar.observation)
        .parse::<SimilarFailures>()
        .unwrap_or_default()
        .matches;
    let cite = |quote: String| Evidence {
        iteration: similar.iteration,
        quote,
    };
    let mut confirmed = None;
    // A reviewer already decided what this fingerprint is: adopt their
    // answer and cite the resolution (verification counts it as the
    // strongest retrieval there is).
    if let Some(human) = matches.iter().find(|m| m.is_review_resolution())
        && let Some(human_category) = human.category().and_then(|c| c.parse().ok())
    {
        verdict.category = human_category;
        verdict.self_confidence = verdict.self_confidence.max(HUMAN_CONFIRMED_SELF);
        if let Some(id) = human.resolution_id() {
            verdict.evidence.push(cite(id.to_string()));
        }
        confirmed = Some(Confirmed {
            root_cause: human.root_cause().unwrap_or_default().to_string(),
            fix: human.fix().unwrap_or_default().to_string(),
            by: human.resolved_by().unwrap_or("a reviewer").to_string(),
        });
    }
    if verdict.category == Category::Unknown
        && let Some(first) = matches
            .iter()
            .find(|m| verify::above_floor(m))
            .and_then(|m| m.category())
            .and_then(|c| c.parse().ok())
    {
        verdict.category = first;
        verdict.self_confidence = verdict.self_confidence.max(0.5);
    }
    // Only a relevant match is cited: above its tier's relevance floor
    // and agreeing with the log's own diagnosis (verify::match_support).
    let diagnosis = verify::diagnosis(state.journal);
    let strongest = matches
        .iter()
        .map(|m| (verify::match_support(m, verdict.category, &diagnosis), m))
        .filter(|(strength, _)| *strength > 0.0)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((_, m)) = strongest
        && let Some(run) = m.run_id()
    {
        verdict.evidence.push(cite(run.to_string()));
    }
    confirmed
}

/// The knowledge base: an entry of the answer's category, the matched
/// signature's own entry first, gives the root cause and the fix (cited);
/// without one, the strongest line is the root cause.
fn consult_knowledge(
    state: &AgentState<'_>,
    hits: &[Hit],
    category: Category,
    evidence: &mut Vec<Evidence>,
    kb_refs: &mut Vec<String>,
) -> (String, String) {
    let kb_step = state.observations_of(ToolName::SearchKnowledge).last();
    let kb_matches = kb_step
        .and_then(|s| Observed(&s.observation).parse::<SearchKnowledge>())
        .map(|k| k.matches)
        .unwrap_or_default();
    let best = kb_matches
        .iter()
        .find(|m| hits.first().map(|h| h.slug.as_str()) == Some(m.slug.as_str()))
        .or_else(|| kb_matches.iter().find(|m| m.category == category.as_str()));
    match (best, kb_step) {
        (Some(m), Some(step)) => {
            let slug = m.slug.clone();
            evidence.push(Evidence { iteration: step.iteration, quote: slug.clone() });
            kb_refs.push(slug);
            let signal = evidence.first().map(|e| format!(" The log shows: `{}`.", e.quote)).unwrap_or_default();
            (format!("{}: {}{}", m.title, m.root_cause, signal), m.fix.clone())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_location_is_a_relative_path_with_a_line() {
        let obs = |lines: &[&str]| lines.iter().map(|l| l.to_string()).collect::<Vec<_>>();
        assert_eq!(
            source_location(&obs(&[
                "error[E0308]: mismatched types",
                "  --> src/main.rs:4:18"
            ])),
            Some(("src/main.rs".into(), 4))
        );
        assert_eq!(
            source_location(&obs(&["    user_test.go:42: got status 500, want 201"])),
            Some(("user_test.go".into(), 42))
        );
        // Absolute paths are the runner's, not the repository's; URLs are not files.
        assert_eq!(
            source_location(&obs(&["/home/ci/app/src/x.rs:3: boom"])),
            None
        );
        assert_eq!(
            source_location(&obs(&["GET https://example.com:443/a"])),
            None
        );
        assert_eq!(
            source_location(&obs(&["java.lang.OutOfMemoryError: Java heap space"])),
            None
        );
    }
}

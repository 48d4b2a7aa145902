//! The agent's tools as data: their names ([`ToolName`]) and the
//! observations they journal, one serde type per tool. The worker's tools
//! build these and serialize them into `run_steps.observation`; the
//! reasoners, verification and the CLI's `trace` read them back through the
//! same types, so a renamed field is a compile error, not a silent `null`.
//!
//! The types live here, beside the diagnosis they carry, rather than in the
//! worker, so the producer reads journals without depending on the worker,
//! and the journal's format is tested in seconds. They hold the journal's
//! JSON as it is stored: run ids and timestamps as the text the journal
//! holds, numbers in the width they were written with (an `f32` score stays
//! an `f32`, so it prints the same digits). `tests/tests/golden.rs` pins the
//! stored bytes.
//!
//! Reading is lenient, as it was by key: a field an older build did not
//! write takes its default, and an observation that does not parse as its
//! type reads as [`None`] from [`Observed::parse`] (callers fall back as
//! they did for a missing key).

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::{Category, diagnose::Facts};

/// Every tool an agent may call (configured or not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolName {
    LogExcerpt,
    SearchKnowledge,
    SimilarFailures,
    FailureHistory,
    GithubFile,
    GithubBlame,
    GithubCommits,
    GithubSearch,
    JenkinsConsole,
}

impl ToolName {
    /// Every tool this build can offer (configured or not).
    pub const ALL: [ToolName; 9] = [
        ToolName::LogExcerpt,
        ToolName::SearchKnowledge,
        ToolName::SimilarFailures,
        ToolName::FailureHistory,
        ToolName::GithubFile,
        ToolName::GithubBlame,
        ToolName::GithubCommits,
        ToolName::GithubSearch,
        ToolName::JenkinsConsole,
    ];

    /// The name the journal and the model use.
    pub const fn as_str(self) -> &'static str {
        match self {
            ToolName::LogExcerpt => "log_excerpt",
            ToolName::SearchKnowledge => "search_knowledge",
            ToolName::SimilarFailures => "similar_failures",
            ToolName::FailureHistory => "failure_history",
            ToolName::GithubFile => "github_file",
            ToolName::GithubBlame => "github_blame",
            ToolName::GithubCommits => "github_commits",
            ToolName::GithubSearch => "github_search",
            ToolName::JenkinsConsole => "jenkins_console",
        }
    }

    /// Whether a journal row's `action` is this tool.
    pub fn is(self, action: &str) -> bool {
        action == self.as_str()
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ToolName {
    type Err = String;
    /// Exactly the journal's names (a model's misspelling is no tool).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ToolName::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| format!("unknown tool {s:?}"))
    }
}

/// A journaled observation, whatever its tool: a tool's result, a failed
/// call's error, or a repeated call's reuse of an earlier result. The one
/// place that knows the envelope's keys.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a>(pub &'a Value);

impl<'a> Observed<'a> {
    /// The error of a failed call (or of an unusable reply), if a string.
    pub fn error(self) -> Option<&'a str> {
        self.0.get("error").and_then(Value::as_str)
    }

    /// Whether the observation reports an error (the key is there, whatever
    /// it holds).
    pub fn is_error(self) -> bool {
        self.0.get("error").is_some()
    }

    /// The iteration whose result a repeated call reused.
    pub fn cached_from(self) -> Option<&'a Value> {
        self.0.get("cached_from_iteration")
    }

    /// The tool's own result: a repeated call's reused `result`, else the
    /// observation itself.
    pub fn result(self) -> &'a Value {
        match self.cached_from() {
            Some(_) => self.0.get("result").unwrap_or(&Value::Null),
            None => self.0,
        }
    }

    /// The observation as `T`, as journaled (a reused result is not
    /// unwrapped: see [`Observed::result`]); `None` when it is no `T`.
    pub fn parse<T: DeserializeOwned>(self) -> Option<T> {
        T::deserialize(self.0).ok()
    }

    /// The tool's own result ([`Observed::result`]) as `T`.
    pub fn parse_result<T: DeserializeOwned>(self) -> Option<T> {
        T::deserialize(self.result()).ok()
    }
}

/// The observation of a call that failed for good or was refused (unknown
/// tool, bad arguments, out of scope), and of an unusable model reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolFailure {
    pub error: String,
}

/// The observation of a call identical to an earlier one of the run: the
/// earlier result, not run again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cached {
    pub cached_from_iteration: i32,
    pub result: Value,
}

/// A numbered line of a log, a file or a console.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Line {
    pub n: u64,
    pub text: String,
}

/// Which lines `log_excerpt` read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExcerptMode {
    /// The lines that explain the failure.
    #[default]
    Failure,
    /// The last lines.
    Tail,
}

/// `log_excerpt`: the lines, the diagnosis and the fingerprint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LogExcerpt {
    pub mode: ExcerptMode,
    pub lines: Vec<Line>,
    pub total_lines: u64,
    pub total_bytes: u64,
    pub classification: Classification,
    /// The lines the fingerprint was computed from.
    pub error_lines: Vec<String>,
    /// Empty when no line carried the failure.
    pub fingerprint: String,
    /// The last green log the excerpt left the usual noise out by, or why
    /// there was none; absent when none was looked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
}

/// The diagnosis in the excerpt: category, confidence, the deciding rule,
/// the matched lines, the score per category and the specifics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Classification {
    pub category: Category,
    pub confidence: f32,
    /// Absent in observations older than the rule names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    pub hits: Vec<Hit>,
    pub scores: Vec<(Category, f32)>,
    pub facts: Facts,
    /// The calibrated model's reading of the same evidence (its
    /// probabilities, the threshold below which it would send the answer
    /// to review, the features that decided, and why it would): absent in
    /// observations older than the model and when no model applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<crate::diagnose::ModelView>,
}

impl Default for Classification {
    fn default() -> Self {
        Self {
            category: Category::Unknown,
            confidence: 0.0,
            decided_by: None,
            hits: Vec::new(),
            scores: Vec::new(),
            facts: Facts::default(),
            model: None,
        }
    }
}

impl From<&crate::diagnose::Diagnosis> for Classification {
    fn from(d: &crate::diagnose::Diagnosis) -> Self {
        Self {
            category: d.category,
            confidence: d.confidence,
            decided_by: Some(d.decided_by.clone()),
            hits: d.findings.iter().map(Hit::from).collect(),
            scores: d.scores.clone(),
            facts: d.facts.clone(),
            model: d.model.clone(),
        }
    }
}

/// One matched line, citing the knowledge-base entry that documents it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    /// The knowledge-base entry.
    #[serde(default)]
    pub slug: String,
    #[serde(default)]
    pub rule: String,
    #[serde(default)]
    pub tool: String,
    #[serde(default = "unknown")]
    pub category: Category,
    #[serde(default)]
    pub line_no: u64,
    /// Absent or not text: nothing to cite.
    #[serde(default)]
    pub line: Option<String>,
    #[serde(default)]
    pub weight: f32,
    /// What produced the line (assertion, crash, compile, lint, dependency,
    /// config, infra, …): absent in observations older than the kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<crate::diagnose::Kind>,
}

fn unknown() -> Category {
    Category::Unknown
}

impl From<&crate::diagnose::Finding> for Hit {
    fn from(f: &crate::diagnose::Finding) -> Self {
        Self {
            slug: f.kb.clone(),
            rule: f.rule.clone(),
            tool: f.tool.clone(),
            category: f.category,
            line_no: f.line_no,
            line: Some(f.line.clone()),
            weight: f.weight,
            kind: Some(f.kind),
        }
    }
}

/// `search_knowledge`: the documented patterns that matched the query.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchKnowledge {
    pub query: String,
    pub matches: Vec<KbMatch>,
}

/// A knowledge-base entry with its normalised rank (0..1).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KbMatch {
    pub slug: String,
    pub title: String,
    pub category: String,
    pub root_cause: String,
    pub fix: String,
    pub rank: f32,
}

/// `similar_failures`: the error library's matches, and the text matches
/// below the relevance floor (listed, never evidence).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SimilarFailures {
    pub fingerprint: String,
    pub matches: Vec<SimilarMatch>,
    pub below_relevance_floor: Vec<SimilarMatch>,
}

/// `source` of a `similar_failures` match that a human confirmed in review.
pub const REVIEW_RESOLUTION: &str = "review_resolution";
/// `source` of a `similar_failures` match that is a past analysis.
pub const ANALYSIS: &str = "analysis";

/// One match of the error library: a reviewer's resolution of the same
/// fingerprint, or a past analysis (by fingerprint or similar text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SimilarMatch {
    /// `source: "review_resolution"`.
    Resolution(ResolutionMatch),
    /// Any other source (`analysis`, or none in older observations).
    Analysis(PastAnalysis),
}

/// The `source` tag of a [`ResolutionMatch`]: only `review_resolution`
/// reads as one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResolutionSource {
    #[serde(rename = "review_resolution")]
    ReviewResolution,
}

/// A reviewer's answer for the same fingerprint (`review_resolutions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolutionMatch {
    pub source: ResolutionSource,
    #[serde(default)]
    pub resolution_id: Option<String>,
    #[serde(default)]
    pub run_id: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub tier: Option<String>,
    #[serde(default)]
    pub score: Option<f32>,
    #[serde(default)]
    pub human_confirmed: bool,
    #[serde(default)]
    pub category: Option<String>,
    #[serde(default)]
    pub accepted: bool,
    #[serde(default)]
    pub root_cause: Option<String>,
    #[serde(default)]
    pub fix: Option<String>,
    #[serde(default)]
    pub comment: Option<String>,
    #[serde(default)]
    pub resolved_by: Option<String>,
    /// When it was resolved.
    #[serde(default)]
    pub finished_at: Option<String>,
}

/// A past analysis (the shape of the storage layer's match).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PastAnalysis {
    pub run_id: Option<String>,
    pub status: Option<String>,
    pub category: Option<String>,
    pub confidence: Option<f32>,
    pub root_cause: Option<String>,
    pub fix: Option<String>,
    pub finished_at: Option<String>,
    /// 0..1; 1 for a fingerprint match.
    pub score: Option<f32>,
    /// `fingerprint` | `trigram` | `fulltext`.
    pub tier: Option<String>,
    pub human_confirmed: bool,
    pub source: Option<String>,
}

impl SimilarMatch {
    /// A reviewer's resolution (by its `source`, however well the rest of
    /// it reads).
    pub fn is_review_resolution(&self) -> bool {
        self.source() == Some(REVIEW_RESOLUTION)
    }
    /// The resolution's id (a reviewer's resolution only).
    pub fn resolution_id(&self) -> Option<&str> {
        match self {
            SimilarMatch::Resolution(r) => r.resolution_id.as_deref(),
            SimilarMatch::Analysis(_) => None,
        }
    }
    /// Who resolved it (a reviewer's resolution only).
    pub fn resolved_by(&self) -> Option<&str> {
        match self {
            SimilarMatch::Resolution(r) => r.resolved_by.as_deref(),
            SimilarMatch::Analysis(_) => None,
        }
    }
    pub fn root_cause(&self) -> Option<&str> {
        match self {
            SimilarMatch::Resolution(r) => r.root_cause.as_deref(),
            SimilarMatch::Analysis(a) => a.root_cause.as_deref(),
        }
    }
    pub fn fix(&self) -> Option<&str> {
        match self {
            SimilarMatch::Resolution(r) => r.fix.as_deref(),
            SimilarMatch::Analysis(a) => a.fix.as_deref(),
        }
    }
    pub fn source(&self) -> Option<&str> {
        match self {
            SimilarMatch::Resolution(_) => Some(REVIEW_RESOLUTION),
            SimilarMatch::Analysis(a) => a.source.as_deref(),
        }
    }
    pub fn run_id(&self) -> Option<&str> {
        match self {
            SimilarMatch::Resolution(r) => r.run_id.as_deref(),
            SimilarMatch::Analysis(a) => a.run_id.as_deref(),
        }
    }
    pub fn status(&self) -> Option<&str> {
        match self {
            SimilarMatch::Resolution(r) => r.status.as_deref(),
            SimilarMatch::Analysis(a) => a.status.as_deref(),
        }
    }
    pub fn category(&self) -> Option<&str> {
        match self {
            SimilarMatch::Resolution(r) => r.category.as_deref(),
            SimilarMatch::Analysis(a) => a.category.as_deref(),
        }
    }
    pub fn tier(&self) -> Option<&str> {
        match self {
            SimilarMatch::Resolution(r) => r.tier.as_deref(),
            SimilarMatch::Analysis(a) => a.tier.as_deref(),
        }
    }
    /// The score as journaled (`None` when absent).
    pub fn score(&self) -> Option<f32> {
        match self {
            SimilarMatch::Resolution(r) => r.score,
            SimilarMatch::Analysis(a) => a.score,
        }
    }
    pub fn human_confirmed(&self) -> bool {
        match self {
            SimilarMatch::Resolution(r) => r.human_confirmed,
            SimilarMatch::Analysis(a) => a.human_confirmed,
        }
    }
}

/// `failure_history`: the subject and its history.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FailureHistory {
    pub job: Option<String>,
    pub test: Option<String>,
    /// The commit of the failure being analysed (what "this commit" means
    /// when the history is read for its origin).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    pub history: History,
    /// The files the change under test touched, as the CI source lists
    /// them (read with the failing job's own history when GitHub or
    /// Jenkins is configured): what makes `this_change` name a file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<ChangedFiles>,
    /// The same failure (same fingerprint) in other repositories at the
    /// same time, when there is any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elsewhere: Option<Elsewhere>,
    /// The branch the failure ran on, as its source named it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The same job (and test) on the branch the change is to land on —
    /// the pull request's base, else the default branch — when the failure
    /// says which: "already failing" means failing there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<BranchHistory>,
}

/// A job's history on one branch.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BranchHistory {
    pub branch: String,
    /// The job read there when it is not the failure's own: a Jenkins
    /// multibranch pipeline's job named after the branch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    pub history: History,
}

/// Failures of other repositories with this failure's fingerprint, near
/// its time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Elsewhere {
    pub repositories: i64,
    pub failures: i64,
    /// How near in time, either way.
    pub within_minutes: i64,
}

/// The files a change touched, as its CI source lists them (bounded).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChangedFiles {
    /// What was read: `pull request #12`, `commit 1a2b3c4`, `build 41`.
    pub source: String,
    /// Repository paths, as listed.
    pub files: Vec<String>,
    /// The change touched more files than were read.
    pub truncated: bool,
    /// Why the files could not be read (a 404, a rate limit): the origin
    /// is then decided without them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The history of a job, a test, or a test within a job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct History {
    pub failures: i64,
    pub passes: i64,
    /// The first recorded failure.
    pub first_seen: Option<String>,
    pub last_failure: Option<String>,
    pub last_pass: Option<String>,
    pub last_passing_commit: Option<String>,
    /// Failures since the last pass.
    pub consecutive_failures: i64,
    /// Commits that both passed and failed.
    pub flaky_commits: Vec<String>,
    pub flaky: bool,
    /// The most recent outcomes, newest first.
    pub recent: Vec<Outcome>,
}

/// One outcome in a history.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Outcome {
    pub at: String,
    pub outcome: String,
    pub commit_sha: Option<String>,
    pub build_number: Option<String>,
    pub source: String,
}

/// `github_file`: lines of a file at a commit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GithubFile {
    pub repo: String,
    #[serde(rename = "ref")]
    pub reference: String,
    pub path: String,
    pub blob_sha: String,
    pub size: u64,
    pub total_lines: u64,
    pub lines: Vec<Line>,
}

/// `github_blame`: who last changed a line range.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GithubBlame {
    pub repo: String,
    #[serde(rename = "ref")]
    pub reference: String,
    pub path: String,
    pub start_line: u64,
    pub end_line: u64,
    pub ranges: Vec<BlameRange>,
}

/// One range of a blame, as GitHub reported it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BlameRange {
    pub start_line: Option<u64>,
    pub end_line: Option<u64>,
    pub commit: Option<String>,
    pub message: Option<String>,
    pub author: Option<String>,
    pub date: Option<String>,
    pub age: Option<u64>,
}

/// `github_commits`: recent commits touching a path.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GithubCommits {
    pub repo: String,
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    pub path: Option<String>,
    pub commits: Vec<Commit>,
}

/// One commit of a listing (its message's first line).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Commit {
    pub sha: Option<String>,
    pub message: String,
    pub author: Option<String>,
    pub login: Option<String>,
    pub date: Option<String>,
    pub url: Option<String>,
}

/// `github_search`: code search results of the failing repository.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GithubSearch {
    pub repo: String,
    pub query: String,
    /// How many items this observation holds.
    pub count: u64,
    pub incomplete_results: Option<bool>,
    pub items: Vec<SearchItem>,
    /// How many results of other repositories were dropped, when any were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped: Option<String>,
}

/// One code search result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchItem {
    pub path: Option<String>,
    pub blob_sha: Option<String>,
    pub url: Option<String>,
}

/// Which end of a console `jenkins_console` kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConsolePart {
    Head,
    #[default]
    Tail,
}

/// `jenkins_console`: the head or tail of a build's console text.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JenkinsConsole {
    pub url: String,
    pub part: ConsolePart,
    pub max_bytes: u64,
    pub total_bytes: Option<u64>,
    pub truncated: bool,
    pub lines: Vec<Line>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_read_back_and_only_exactly() {
        for t in ToolName::ALL {
            assert_eq!(t.as_str().parse::<ToolName>(), Ok(t));
            assert_eq!(serde_json::to_value(t).unwrap(), json!(t.as_str()));
        }
        assert!("Log_Excerpt".parse::<ToolName>().is_err());
        assert!("final_answer".parse::<ToolName>().is_err());
    }

    #[test]
    fn an_older_excerpt_without_the_newer_fields_reads_with_defaults() {
        let old = json!({"lines": [{"n": 3, "text": "boom"}], "total_lines": 9,
                         "classification": {"category": "INFRA_ERROR", "confidence": 0.5,
                                            "hits": [{"slug": "oom", "line": "Killed"}]},
                         "error_lines": ["Killed"], "fingerprint": "ab"});
        let e: LogExcerpt = Observed(&old).parse().unwrap();
        assert_eq!(e.mode, ExcerptMode::Failure);
        assert_eq!(e.classification.category, Category::InfraError);
        assert_eq!(e.classification.decided_by, None);
        assert_eq!(e.classification.hits[0].line.as_deref(), Some("Killed"));
        assert!(e.classification.facts.is_empty());
        assert_eq!(e.baseline, None);
    }

    #[test]
    fn an_observation_of_another_shape_is_none_not_a_panic() {
        let garbage = json!({"classification": "garbage"});
        assert_eq!(Observed(&garbage).parse::<LogExcerpt>(), None);
        assert_eq!(Observed(&json!("text")).parse::<SimilarFailures>(), None);
        // The envelope: errors and reused results.
        let error = json!({"error": "boom"});
        assert_eq!(Observed(&error).error(), Some("boom"));
        let cached = json!({"cached_from_iteration": 1, "result": {"query": "q", "matches": []}});
        let reused: SearchKnowledge = Observed(&cached).parse_result().unwrap();
        assert_eq!(reused.query, "q");
        assert_eq!(
            Observed(&cached)
                .parse::<Cached>()
                .unwrap()
                .cached_from_iteration,
            1
        );
    }

    #[test]
    fn a_match_is_a_resolution_only_by_its_source() {
        let resolution = json!({"source": "review_resolution", "resolution_id": "r", "run_id": "x",
            "status": "resolved", "tier": "fingerprint", "score": 1.0, "human_confirmed": true,
            "category": "INFRA_ERROR", "accepted": false, "root_cause": "c", "fix": "f",
            "comment": null, "resolved_by": "carol", "finished_at": "t"});
        let m: SimilarMatch = serde_json::from_value(resolution.clone()).unwrap();
        assert!(m.is_review_resolution());
        assert_eq!(serde_json::to_value(&m).unwrap(), resolution);
        let analysis = json!({"run_id": "x", "status": "completed", "category": null,
            "confidence": null, "root_cause": null, "fix": null, "finished_at": null,
            "score": 0.5, "tier": "trigram", "human_confirmed": false, "source": "analysis"});
        let m: SimilarMatch = serde_json::from_value(analysis.clone()).unwrap();
        assert!(!m.is_review_resolution());
        assert_eq!(m.tier(), Some("trigram"));
        assert_eq!(serde_json::to_value(&m).unwrap(), analysis);
        // Older matches had no source; they are analyses.
        let m: SimilarMatch = serde_json::from_value(json!({"run_id": "y"})).unwrap();
        assert_eq!((m.source(), m.score()), (None, None));
    }
}

//! The diagnosis of a failed CI log: which category, decided from *what
//! produced* the failing lines, with the lines that show it, the specifics
//! (failing tests, the first diagnostic, packages, the failed command and
//! its exit code) and a confidence.
//!
//! How it decides, in order:
//! 1. Every line of the excerpt (and the log's last lines, for how the job
//!    ended) is matched against the [recognisers](rules): each match is a
//!    [`Finding`] of a [`Kind`] (assertion, compiler diagnostic, linter,
//!    package manager, configuration, machine/network …) with a weight for
//!    how decisive that tool's output is. The failed step's command and exit
//!    code add a weak finding of the step's kind (an install step, a lint
//!    step, a test step; exit 124 is a time limit, 137 a kill).
//! 2. Per category the distinct rules' weights combine as independent
//!    evidence (noisy-OR).
//! 3. Causes explain symptoms, as a triage engineer reads a log (the
//!    rubric's tie-breaks): a time limit, a killed runner or the network
//!    explain the test and build failures after them; a missing dependency
//!    explains the compile and test errors it causes; a configuration error
//!    explains what fails after it; a compile error explains failing tests;
//!    a test that died of an uncaught error (no assertion) is a code error.
//! 4. The best category wins; its confidence grows with the strength of its
//!    evidence and shrinks with the strength of the runner-up.
//!
//! Everything is explainable: [`Diagnosis::decided_by`] names the rule, and
//! the findings carry the line numbers and texts.

mod facts;
pub mod learn;
pub mod model;
pub mod rules;

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::{Regex, RegexSet};
use serde::{Deserialize, Serialize};

pub use facts::{Diagnostic, Facts, PackageRef, TestRef};
pub use rules::Kind;

use crate::Category;
use crate::logs::{Excerpt, clean_line};
use crate::text::{ascii_classes, truncate_bytes, truncate_chars};

/// Lines of the excerpt a diagnosis reads (the `log_excerpt` tool's
/// default).
pub const EXCERPT_LINES: usize = 40;
/// Most findings kept in a [`Diagnosis`].
pub const MAX_FINDINGS: usize = 12;
/// Longest line text kept in a finding.
pub const MAX_FINDING_CHARS: usize = 500;
/// Bytes of a line matched (longer lines are cut first).
const MAX_MATCH_BYTES: usize = 2048;
/// Findings are combined after scaling: no single line is certainty.
const WEIGHT_SCALE: f32 = 0.9;

/// One recogniser matching one line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Finding {
    /// The rule's id (`pytest.failed`, `npm.404`, …).
    pub rule: String,
    /// The tool whose output it is.
    pub tool: String,
    /// The knowledge-base entry documenting this kind of failure.
    pub kb: String,
    pub kind: Kind,
    pub category: Category,
    /// Effective weight (rule weight × where the line stands).
    pub weight: f32,
    pub line_no: u64,
    pub line: String,
}

/// What the log says about the failure.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Diagnosis {
    pub category: Category,
    /// `0..1`: how sure the rules are (strength of the winner's evidence,
    /// tempered by the runner-up).
    pub confidence: f32,
    /// The rule that decided, with the tool and what produced the line
    /// (`pytest.failed: pytest, a test runner's failure report`), or why
    /// nothing did.
    pub decided_by: String,
    /// Strongest findings, the winner's first.
    pub findings: Vec<Finding>,
    /// Final score per category, highest first.
    pub scores: Vec<(Category, f32)>,
    /// The specifics: failing tests, first diagnostic, packages, command.
    pub facts: Facts,
    /// What the learned model makes of the evidence (it advises; the rules
    /// decide): absent when no model fits this build or nothing was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelView>,
}

/// The learned model's reading as the verdict shows it
/// (docs/diagnosis-model.md).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ModelView {
    /// Probability of each category, highest first.
    pub probabilities: Vec<(Category, f32)>,
    /// Below this probability the model would send the answer to review.
    pub review_below: f32,
    /// The feature columns that pushed most towards the model's category,
    /// with what each added to its score (weight × value).
    pub deciding: Vec<(String, f32)>,
    /// Why the model would send the answer to review, when it would.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_reason: Option<String>,
}

impl Default for Diagnosis {
    fn default() -> Self {
        Self {
            category: Category::Unknown,
            confidence: 0.0,
            decided_by: "no recogniser matched the failure lines".into(),
            findings: Vec::new(),
            scores: Vec::new(),
            facts: Facts::default(),
            model: None,
        }
    }
}

struct Compiled {
    set: RegexSet,
    /// Each rule's own regex (for its captures), compiled when first
    /// needed: most rules never match a given log.
    each: Vec<std::sync::OnceLock<Regex>>,
    steps: Vec<(Regex, Kind)>,
    /// The rule an error inside a third-party tree becomes.
    vendored: usize,
    /// `dep.install_step` ([`install_step`]).
    install_step: usize,
    /// The rule a caught uncaught-error "assertion" becomes.
    uncaught: usize,
    /// A missing Python module, and the rule it becomes when it is the
    /// project's own ([`own_modules`]).
    no_module: usize,
    own_module: usize,
    /// A compiler's missing package or assembly reference
    /// ([`own_java_package`] reads the project's own as its code).
    missing_reference: usize,
    /// javac's report line, whose `error: ` is optional (JDK 6 printed
    /// errors without it): its warnings are excluded by [`JAVA_WARNING`].
    javac: usize,
    /// Syntax errors that name their file on a line above
    /// ([`vendored_syntax`]).
    syntax: [usize; 2],
}

fn rule_index(id: &str) -> usize {
    rules::RULES
        .iter()
        .position(|r| r.id == id)
        .unwrap_or_else(|| panic!("built-in rule {id} exists"))
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    let patterns: Vec<String> = rules::RULES
        .iter()
        .map(|r| ascii_classes(r.pattern))
        .collect();
    // A bounded lazy-DFA cache: the set is matched on a few thousand lines
    // per log at most, and the excerpt promises flat memory.
    let set = regex::RegexSetBuilder::new(&patterns)
        .size_limit(64 << 20)
        .dfa_size_limit(16 << 20)
        .build()
        .expect("built-in recognisers compile");
    let each = patterns
        .iter()
        .map(|_| std::sync::OnceLock::new())
        .collect();
    let steps = rules::STEP_KINDS
        .iter()
        .map(|(p, k)| {
            let re = Regex::new(&ascii_classes(p)).expect("built-in step pattern compiles");
            (re, *k)
        })
        .collect();
    Compiled {
        set,
        each,
        steps,
        vendored: rule_index("dep.vendored_error"),
        install_step: rule_index("dep.install_step"),
        uncaught: rule_index("js.uncaught"),
        no_module: rule_index("python.no_module"),
        missing_reference: rule_index("dep.missing_reference"),
        javac: rule_index("javac.error"),
        own_module: rule_index("python.own_module"),
        syntax: [rule_index("python.syntax"), rule_index("js.syntax")],
    }
});

/// A rule's own regex, compiled on first use.
fn rule_regex(rule: usize) -> &'static Regex {
    COMPILED.each[rule].get_or_init(|| {
        Regex::new(&ascii_classes(rules::RULES[rule].pattern))
            .expect("built-in recogniser compiles")
    })
}

static VENDORED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&ascii_classes(rules::VENDORED)).expect("built-in pattern compiles")
});

/// A matched line with its captures, before aggregation.
#[derive(Clone)]
struct Hit {
    rule: usize,
    weight: f32,
    /// Read on the log's last lines rather than on the failure's.
    tail: bool,
    /// Read on a failed step's block the excerpt left out
    /// ([`Excerpt::aside`]): the model does not read it.
    aside: bool,
    /// Read because the lines read first held no recogniser at all: the
    /// block shown instead, or another block of the failed step. It votes,
    /// but what it decides goes to review.
    fallback: bool,
    /// Read aside because another step failed after the first one
    /// ([`later_steps`]).
    later_step: bool,
    line_no: u64,
    line: String,
    captures: HashMap<&'static str, String>,
}

impl Hit {
    /// The hit read as the dependency's rule `rule`: its file is no longer
    /// the project's, and what its place did to its weight (read in the
    /// log's tail, read aside) is kept.
    fn becomes(&mut self, rule: usize) {
        let scale = self.weight / (rules::RULES[self.rule].weight * WEIGHT_SCALE);
        self.rule = rule;
        self.weight = rules::RULES[rule].weight * WEIGHT_SCALE * scale;
        self.captures.remove("file");
    }
}

/// Names of the capture groups that carry facts; numbered variants
/// (`pkg2`, `line2`) fold into the base name.
const FACT_GROUPS: [&str; 12] = [
    "test", "suite", "file", "line", "col", "code", "pkg", "ver", "cmd", "msg", "url", "want",
];

fn matches_of(text: &str) -> Vec<usize> {
    let hay = truncate_bytes(text, MAX_MATCH_BYTES);
    if hay.len() < 3 {
        return Vec::new();
    }
    COMPILED.set.matches(hay).into_iter().collect()
}

fn captures(rule: usize, text: &str) -> HashMap<&'static str, String> {
    let mut out = HashMap::new();
    let re = rule_regex(rule);
    let hay = truncate_bytes(text, MAX_MATCH_BYTES);
    let Some(c) = re.captures(hay) else {
        return out;
    };
    for name in re.capture_names().flatten() {
        let base = name.trim_end_matches(|ch: char| ch.is_ascii_digit());
        if let (Some(key), Some(m)) = (FACT_GROUPS.iter().find(|g| **g == base), c.name(name)) {
            let v = m.as_str().trim();
            if !v.is_empty() {
                out.entry(*key).or_insert_with(|| v.to_string());
            }
        }
    }
    out
}

/// How decisive the strongest recogniser matching `raw` (a log line) is:
/// `0` when none does, up to `1` for a tool's own unambiguous failure
/// format. The excerpt ranks candidate blocks with it.
pub fn line_strength(raw: &str) -> f32 {
    strongest(clean_line(raw).trim(), |_| true)
}

/// How decisive the strongest *code* recogniser (a compiler's, type
/// checker's or linter's report) matching `clean` (a line already through
/// [`clean_line`]) is; `0` when none does. A report line of such a tool
/// anchors an excerpt block even without failure words.
pub fn code_report_strength(clean: &str) -> f32 {
    strongest(clean.trim(), |r| {
        matches!(r.kind, Kind::Compile | Kind::Lint)
    })
}

/// How decisive the strongest recogniser of a *cause* — a dependency, the
/// configuration, the machine or the network — matching `clean` (a line
/// already through [`clean_line`]) is; `0` when none does. A build tool's
/// wrapper line that names one (`npm ERR! missing script: lint`) is the
/// failure's own line, not a summary pointing elsewhere.
pub fn cause_strength(clean: &str) -> f32 {
    strongest(clean.trim(), |r| {
        matches!(r.kind, Kind::Dependency | Kind::Config | Kind::Infra)
    })
}

/// The weight of the strongest recogniser that `keep` admits and that
/// applies to `text` (clean and trimmed); `0` when none does.
fn strongest(text: &str, keep: impl Fn(&rules::Rule) -> bool) -> f32 {
    let matched = matches_of(text);
    matched
        .iter()
        .filter(|&&i| keep(&rules::RULES[i]) && applies(i, &matched, text))
        .map(|&i| rules::RULES[i].weight)
        .fold(0.0, f32::max)
}

/// Compiles the recognisers (otherwise done by the first diagnosis).
pub fn warm_up() {
    LazyLock::force(&COMPILED);
    LazyLock::force(&VENDORED);
}

/// Diagnoses an excerpt (its lines, failed steps and tail).
pub fn diagnose(excerpt: &Excerpt) -> Diagnosis {
    let (command, exit_code) = failed_step(excerpt);
    let mut diagnosis = diagnose_hits(excerpt_hits(excerpt), command.as_deref(), exit_code);
    // Every located error of the log, not only the excerpt's.
    let mut hits = Vec::new();
    for l in &excerpt.reported {
        let text = clean_line(&l.text);
        if !warning_only(&text) {
            collect(&mut hits, l.line_no, text.trim());
        }
    }
    for h in &hits {
        let r = &rules::RULES[h.rule];
        if matches!(r.kind, Kind::Compile | Kind::Lint) {
            diagnosis.facts.add_located(r.tool, h.line_no, &h.captures);
        }
    }
    diagnosis.facts.complete_located();
    diagnosis
}

/// A report line that is a warning and says nothing of an error.
pub(crate) fn warning_only(text: &str) -> bool {
    static WARNING: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?i)\bwarn(?:ing)?\b").expect("built-in pattern compiles"));
    static ERROR: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(?:error|fatal)\b").expect("built-in pattern compiles")
    });
    WARNING.is_match(text) && !ERROR.is_match(text)
}

/// The model's features of an excerpt (what `faultline-train` learns from):
/// the evidence [`diagnose`] weighs, as the model reads it.
pub fn features(excerpt: &Excerpt) -> Vec<Vec<f64>> {
    let (command, exit_code) = failed_step(excerpt);
    let mut hits = excerpt_hits(excerpt);
    cancel_wrapped(&mut hits);
    let tests = tests_reported(&hits);
    hits.retain(|h| !h.aside);
    let evidence = Evidence::new(&hits, priors(command.as_deref(), exit_code, tests));
    signals(&evidence, &evidence.scores()).rows()
}

/// The first failed step's command and exit code. When the step ran a
/// build tool whose own failed target, script, task, environment or plugin
/// is a linter's, formatter's or checker's (`make: *** [fmt-check] Error 1`,
/// `npm ERR! app@1.0.0 lint: …`, tox's `flake8: commands failed`, Gradle's
/// `Execution failed for task ':lint'`, Maven's checkstyle plugin), that
/// name stands for the step: a lint that runs under `npm test` is not a
/// test (the rubric's CODE_ERROR).
fn failed_step(excerpt: &Excerpt) -> (Option<String>, Option<i32>) {
    let step = excerpt.failed_steps.first();
    let command = step.and_then(|s| s.command.clone());
    let exit_code = step.and_then(|s| s.exit_code);
    let inner = excerpt
        .read_lines()
        .iter()
        .map(|l| clean_line(&l.text).into_owned())
        .chain(excerpt.tail.iter().map(|(_, t)| t.clone()))
        .filter_map(|t| {
            INNER_STEP.captures(&t).and_then(|c| {
                c.iter()
                    .skip(1)
                    .flatten()
                    .next()
                    .map(|m| m.as_str().to_string())
            })
        })
        .find(|name| step_kind(name) == Some(Kind::Lint));
    (inner.or(command), exit_code)
}

/// A build tool naming the target, script, task, environment or plugin
/// that failed inside a step.
static INNER_STEP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"make(?:\[\d+\])?: \*\*\* \[(?:[^\]]*?:\d+: )?([^\]\s]+)\] Error \d+",
        r"|recipe for target '([^']+)' failed",
        r"|npm ERR! \S+@\S+ ([\w:.-]+): `",
        r"|ERROR:\s+([\w.-]+): commands failed",
        r"|Execution failed for task '([^']+)'",
        r"|Failed to execute goal [\w.-]+:([\w.-]+):",
    ))
    .expect("built-in pattern compiles")
});

/// Every recogniser hit on the lines the excerpt has the diagnosis read
/// ([`Excerpt::read_lines`]) and on the log's tail.
fn excerpt_hits(excerpt: &Excerpt) -> Vec<Hit> {
    let mut hits: Vec<Hit> = Vec::new();
    // What a test printed before its runner said it passed is not why the
    // job failed (an expected exception's trace, a retried connection): it
    // is not read at all. Nor, when a step's footer says it failed, is what
    // another step printed before its footer said it exited 0 (a linter
    // run with `|| true`). Without a failed step's footer the job may have
    // failed on what a passed step printed (`cat build-errors.log`, then a
    // script that counts its lines).
    let step_failed = !excerpt.failed_steps.is_empty();
    let mut seen_lines: Vec<u64> = excerpt
        .read_lines()
        .iter()
        .chain(excerpt.likely_lines())
        .chain(&excerpt.aside)
        .map(|l| l.line_no)
        .chain(excerpt.tail.iter().map(|(no, _)| *no))
        .filter(|&no| {
            crate::logs::passed::inside(&excerpt.passed, no)
                || (step_failed && crate::logs::passed::inside(&excerpt.passed_steps, no))
        })
        .collect();
    let mut trace = LoggedTrace::new(excerpt);
    for l in excerpt.read_lines() {
        if seen_lines.contains(&l.line_no) {
            continue;
        }
        trace.prime(excerpt, l.line_no);
        collect_traced(&mut hits, &mut trace, l.line_no, &clean_line(&l.text));
        seen_lines.push(l.line_no);
    }
    // Nothing recognised in the block read (a build tool's generic footer,
    // say): the block the learned ranking shows is read instead, and if
    // that holds nothing either, the failed step's other blocks vote. An
    // answer they decide is marked, and goes to review. When the log's
    // last lines say only that tests failed (Maven's `There are test
    // failures`), they point at a test report: the block shown is read
    // only when it is one.
    let tail = tail_says(excerpt);
    if hits.is_empty() && tail != TailSays::Cause && !excerpt.evidence.is_empty() {
        let seen_before = seen_lines.len();
        let mut trace = LoggedTrace::new(excerpt);
        for l in excerpt.likely_lines() {
            if seen_lines.contains(&l.line_no) {
                continue;
            }
            let before = hits.len();
            collect_traced(&mut hits, &mut trace, l.line_no, &clean_line(&l.text));
            seen_lines.push(l.line_no);
            for h in &mut hits[before..] {
                h.fallback = true;
            }
        }
        if tail == TailSays::TestsFailed && !test_report_read(&hits) {
            hits.clear();
            seen_lines.truncate(seen_before);
        }
    }
    // The two rankings chose different blocks and the one read holds a
    // finding: the machine or the network failing in the block the learned
    // ranking shows (a refused connection, a time limit, a killed process
    // printed above the test report read) explains what is read, as it
    // would in the same block. Only such causes count, and only in a
    // tool's own words: the block shown is not read for anything else,
    // nor for what the machine said after the failed step's footer.
    let after_footer = after_the_footer(excerpt);
    if !excerpt.evidence.is_empty() && !hits.is_empty() && !hits.iter().any(|h| h.fallback) {
        let mut shown = Vec::new();
        let mut trace = LoggedTrace::new(excerpt);
        for l in excerpt.likely_lines() {
            if seen_lines.contains(&l.line_no) || after_footer(l.line_no) {
                continue;
            }
            trace.prime(excerpt, l.line_no);
            collect_traced(&mut shown, &mut trace, l.line_no, &clean_line(&l.text));
        }
        for h in shown {
            let r = &rules::RULES[h.rule];
            if r.kind == Kind::Infra && r.weight >= SHOWN_CAUSE {
                seen_lines.push(h.line_no);
                hits.push(h);
            }
        }
    }
    // How the job ended: only the machine and the CI system speak there
    // with full weight; anything else in the tail merely supports. What
    // the machine says after the failed step's footer (the CI storing its
    // cache, a post-job clean-up) came after the failure: it is not read.
    for (no, text) in &excerpt.tail {
        if seen_lines.contains(no) {
            continue;
        }
        let before = hits.len();
        collect(&mut hits, *no, text);
        if after_footer(*no) || quiet_record(text) {
            hits.extract_if(before.., |h| rules::RULES[h.rule].kind == Kind::Infra)
                .for_each(drop);
        }
        for h in &mut hits[before..] {
            let kind = rules::RULES[h.rule].kind;
            h.weight *= if kind == Kind::Infra { 0.9 } else { 0.3 };
            h.tail = true;
        }
    }
    let nothing_read = hits.is_empty();
    let in_later_step = in_a_later_failed_step(excerpt);
    // A cause printed away from the excerpt's block still explains it;
    // symptoms there (other tests' reports) add nothing.
    let mut trace = LoggedTrace::new(excerpt);
    for l in &excerpt.aside {
        if seen_lines.contains(&l.line_no) {
            continue;
        }
        let before = hits.len();
        collect_traced(&mut hits, &mut trace, l.line_no, &clean_line(&l.text));
        if nothing_read {
            for h in &mut hits[before..] {
                h.weight *= FALLBACK_WEIGHT;
                h.fallback = true;
            }
            continue;
        }
        let mut i = before;
        while i < hits.len() {
            // A test report holds nothing back, unless a later step
            // failed on it ([`later_steps`]).
            if rules::RULES[hits[i].rule].kind.reports_tests() {
                if in_later_step(hits[i].line_no) {
                    hits[i].later_step = true;
                } else {
                    hits.remove(i);
                    continue;
                }
            }
            hits[i].aside = true;
            i += 1;
        }
    }
    later_steps(&mut hits, excerpt);
    install_step(&mut hits, excerpt);
    let missing_module = hits.iter().any(|h| h.rule == COMPILED.no_module);
    let syntax = hits.iter().any(|h| COMPILED.syntax.contains(&h.rule));
    let crash = hits
        .iter()
        .any(|h| rules::RULES[h.rule].kind == Kind::Crash);
    if missing_module || syntax || crash {
        // The lines read, once, for the passes that look around a hit, with
        // the frames the excerpt kept without showing them; in log order.
        let mut lines: Vec<(u64, String)> = excerpt
            .read_lines()
            .iter()
            .chain(&excerpt.aside)
            .map(|l| (l.line_no, clean_line(&l.text).trim().to_string()))
            .chain(excerpt.tail.iter().cloned())
            .chain(excerpt.trace.iter().cloned())
            .collect();
        lines.sort_by_key(|(no, _)| *no);
        lines.dedup_by_key(|(no, _)| *no);
        if missing_module {
            let texts: Vec<&str> = lines.iter().map(|(_, t)| t.as_str()).collect();
            own_modules(&mut hits, &texts);
        }
        if syntax {
            vendored_syntax(&mut hits, &lines);
        }
        if crash {
            vendored_crash(&mut hits, &lines);
        }
    }
    hits
}

/// A command that installs the project itself (`pip install -e .`,
/// `python setup.py install`, `go get ./...`): what it compiles is the
/// project's own code.
static INSTALLS_OWN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|\s)(?:-e\s+)?\.(?:\[[^\]]*\])?(?:\s|$)|\bsetup\.py\b|\./\.\.\.")
        .expect("built-in pattern compiles")
});

/// A compiler's error or a crash printed while the first failed step
/// installed the job's dependencies (`npm install` building a native addon,
/// `pip install` running a package's setup.py, `bundle install` compiling
/// a gem's extension) is the dependency's failing install — the rubric's
/// "failed npm install / pip install / bundle install". In every labelled
/// log whose first failed step is such a command (dev 10, the readable set
/// 3), the label is DEPENDENCY_ERROR.
fn install_step(hits: &mut [Hit], excerpt: &Excerpt) {
    let Some(first) = excerpt.failed_steps.iter().find(|s| s.exit_code.is_some()) else {
        return;
    };
    let Some(cmd) = first.command.as_deref() else {
        return;
    };
    if step_kind(cmd) != Some(Kind::Dependency) || INSTALLS_OWN.is_match(cmd) {
        return;
    }
    for h in hits.iter_mut().filter(|h| {
        h.line_no < first.line_no
            && matches!(rules::RULES[h.rule].kind, Kind::Compile | Kind::Crash)
    }) {
        h.becomes(COMPILED.install_step);
    }
}

/// What a finding printed after the first failed step's footer weighs
/// when that step's own lines hold one.
const LATER_STEP_WEIGHT: f32 = 0.5;

/// The first step that failed failed the job: the steps a CI system runs
/// after it (Travis runs the rest of `script:`, a workflow its `always()`
/// steps) often fail because it did (`make` after `./configure` gave up)
/// or report it again. Their findings count for less whenever the first
/// failed step's lines hold one.
///
/// Yet a later step that failed on its own words may be the failure: a
/// workflow runs the steps after a failed one only when that one may fail
/// (`continue-on-error`, a linter allowed to complain) or when they run
/// `always()`, and the log does not say which. So a decisive finding of a
/// later failed step is also read aside at its full weight: it holds back
/// an answer of another category for review, never changes it.
fn later_steps(hits: &mut Vec<Hit>, excerpt: &Excerpt) {
    let Some(first) = exited_steps(excerpt).next() else {
        return;
    };
    let in_later_step = in_a_later_failed_step(excerpt);
    if exited_steps(excerpt).nth(1).is_none() || !hits.iter().any(|h| h.line_no < first) {
        return;
    }
    let mut held = Vec::new();
    for h in hits
        .iter_mut()
        .filter(|h| h.line_no > first && !h.later_step)
    {
        if !h.aside && !h.tail && in_later_step(h.line_no) && h.weight >= LATER_STEP_CONFLICT {
            held.push(Hit {
                aside: true,
                later_step: true,
                ..h.clone()
            });
        }
        h.weight *= LATER_STEP_WEIGHT;
    }
    hits.extend(held);
}

/// The footers of the failed steps that exited: a command Travis retries
/// (`failed. Retrying, 2 of 3.`) has no exit code, as it may have passed
/// on the next try.
fn exited_steps(excerpt: &Excerpt) -> impl Iterator<Item = u64> + '_ {
    excerpt
        .failed_steps
        .iter()
        .filter(|s| s.exit_code.is_some())
        .map(|s| s.line_no)
}

/// Whether a line stands in a step that failed after the first failed
/// step, before the last failed step's footer.
fn in_a_later_failed_step(excerpt: &Excerpt) -> impl Fn(u64) -> bool + use<> {
    let first = exited_steps(excerpt).next();
    let last = exited_steps(excerpt).last();
    move |no| first.zip(last).is_some_and(|(f, l)| f < no && no < l)
}

/// What the log's last lines say about the failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TailSays {
    /// No recogniser reads them.
    Nothing,
    /// Only a test runner's or build tool's word that tests failed.
    TestsFailed,
    /// Something else: a cause, or a tool's own report.
    Cause,
}

/// Whether a line comes after the last footer of a failed step (`The
/// command "…" exited with 1.`): the job had failed by then, so what the
/// machine says there (the CI storing its cache, a post-job clean-up) is
/// not why.
fn after_the_footer(excerpt: &Excerpt) -> impl Fn(u64) -> bool {
    let footer = excerpt.failed_steps.iter().map(|s| s.line_no).max();
    move |no| footer.is_some_and(|f| no > f)
}

fn tail_says(excerpt: &Excerpt) -> TailSays {
    let mut says = TailSays::Nothing;
    let after_footer = after_the_footer(excerpt);
    for (no, t) in &excerpt.tail {
        let after_footer = after_footer(*no);
        for i in matches_of(t) {
            if after_footer && rules::RULES[i].kind == Kind::Infra {
                continue;
            }
            if !rules::RULES[i].kind.reports_tests() {
                return TailSays::Cause;
            }
            says = TailSays::TestsFailed;
        }
    }
    says
}

/// What a finding of another block of the failed step weighs when the
/// lines read held none.
const FALLBACK_WEIGHT: f32 = 0.9;

/// Rule weight from which a machine or network finding in the block the
/// learned ranking shows is read with the block the diagnosis reads.
const SHOWN_CAUSE: f32 = 0.8;
/// Weight from which evidence read aside holds back an answer it
/// contradicts.
const ASIDE_CONFLICT: f32 = 0.8;

/// Weight from which a finding of a step that failed after the first one
/// holds back an answer it contradicts: any tool's own report (a test
/// runner naming a failed file), not bare vocabulary.
const LATER_STEP_CONFLICT: f32 = 0.5;

/// Diagnoses plain text (line numbers from 1): for tests and callers
/// without an excerpt.
pub fn diagnose_text(text: &str) -> Diagnosis {
    let mut hits = Vec::new();
    let mut trace = LoggedTrace::default();
    for (i, line) in text.lines().enumerate() {
        collect_traced(&mut hits, &mut trace, i as u64 + 1, &clean_line(line));
    }
    if hits.iter().any(|h| h.rule == COMPILED.no_module) {
        let texts: Vec<_> = text.lines().map(clean_line).collect();
        own_modules(&mut hits, &texts);
    }
    let syntax = hits.iter().any(|h| COMPILED.syntax.contains(&h.rule));
    let crash = hits
        .iter()
        .any(|h| rules::RULES[h.rule].kind == Kind::Crash);
    if syntax || crash {
        let lines: Vec<(u64, String)> = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i as u64 + 1, clean_line(l).trim().to_string()))
            .collect();
        if syntax {
            vendored_syntax(&mut hits, &lines);
        }
        if crash {
            vendored_crash(&mut hits, &lines);
        }
    }
    diagnose_hits(hits, None, None)
}

/// The file Node prints above a syntax error it could not load (`/path:N`,
/// then the source line and a caret).
static NODE_SYNTAX_LOCATION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?P<file>/\S+?):\d+$").expect("built-in pattern compiles"));

/// How far above a syntax error its location stands (the location, the
/// source line, the caret, a blank).
const SYNTAX_LOCATION_SPAN: u64 = 6;

/// A syntax error Node reports in a file under `node_modules` is not the
/// project's code: the installed package does not parse on this runtime
/// (a release for a newer Node). Python's tracebacks are left alone: a
/// project installed into its own `site-packages` (setup.py, tox) shows
/// its own code there, and BugSwarm's two such failures were both labelled
/// compilation errors (docs/diagnosis-model.md, session 20).
fn vendored_syntax(hits: &mut [Hit], lines: &[(u64, String)]) {
    for h in hits
        .iter_mut()
        .filter(|h| COMPILED.syntax.contains(&h.rule))
    {
        let from = h.line_no.saturating_sub(SYNTAX_LOCATION_SPAN);
        let nearest = lines
            .iter()
            .filter(|(no, _)| (from..h.line_no).contains(no))
            .filter_map(|(no, t)| {
                NODE_SYNTAX_LOCATION
                    .captures(t)
                    .map(|c| (*no, c["file"].to_string()))
            })
            .max_by_key(|(no, _)| *no)
            .map(|(_, f)| f);
        if nearest.is_some_and(|f| f.contains("/node_modules/")) {
            h.becomes(COMPILED.vendored);
        }
    }
}

/// A stack frame that names its file, in the runtimes that print the
/// innermost frame first: Node (`at f (/path/x.js:1:2)`), Ruby (`/path/x.rb:1:in
/// 'f'`, `from /path/x.rb:1:in`) and PHP (`#0 /path/x.php(1): f()`).
static FRAME_FILE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^at (?:.*?\()?(?P<js>[^()\s]+?):\d+(?::\d+)?\)?$|^(?:from )?(?P<rb>{}):\d+:in |^#\d+ (?P<php>/\S+?\.php)\(\d+\)",
        crate::logs::score::RUBY_SOURCE
    ))
    .expect("built-in pattern compiles")
});

/// The file a [`FRAME_FILE`] line names.
fn frame_file(line: &str) -> Option<&str> {
    let c = FRAME_FILE.captures(line)?;
    c.name("js")
        .or_else(|| c.name("rb"))
        .or_else(|| c.name("php"))
        .map(|m| m.as_str())
}

/// A frame's file in the project's checkout: under a CI workspace, or
/// relative to the project's root (`./spec/x_spec.rb`, `test/x.js`);
/// Node's own modules (`internal/…`, `node:…`) are the runtime's.
fn project_file(file: &str) -> bool {
    static WORKSPACE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:/home/travis/build/|/home/runner/work/|/builds/|/__w/|/github/workspace|/var/lib/jenkins/workspace/|\./|[\w.-]+/)")
            .expect("built-in pattern compiles")
    });
    WORKSPACE.is_match(file)
        && !VENDORED.is_match(file)
        && !file.starts_with("internal/")
        && !file.starts_with("node:")
}

/// A build tool's entry file in the project (a Rakefile, a gulpfile, a
/// bundler's or test runner's config): it loads the tool and its plugins
/// and hands them settings, not the project's data.
fn build_file(file: &str) -> bool {
    static BUILD_FILE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)(?:^|/)(?:rakefile|gemfile|guardfile|[\w.-]+\.gemspec|gulpfile(?:\.[\w]+)?\.[cm]?[jt]s|gruntfile\.(?:js|coffee)|(?:webpack|karma|rollup|babel|jest|vite|vitest|protractor|nightwatch|metro)\.conf(?:ig)?(?:\.[\w]+)?\.[cm]?[jt]s|ember-cli-build\.js|brocfile\.js)$")
            .expect("built-in pattern compiles")
    });
    BUILD_FILE.is_match(file)
}

/// How many lines below an error its first frame may stand (a source
/// line and a caret between).
const FIRST_FRAME_SPAN: usize = 2;

/// How far apart two lines of one trace may stand in the log.
const FRAME_GAP: u64 = 3;

/// An uncaught error thrown inside a third-party tree (`node_modules`, a
/// gem, `vendor/`) whose trace passes through none of the project's files
/// is the dependency failing on its own — the rubric's "broken upstream
/// release": a build tool's plugin that no longer loads, a gem calling an
/// API its dependency removed. A trace that passes through the project's
/// source or tests stays the project's: the library may be refusing what
/// the project gave it. A build tool's entry file (a Rakefile, a gulpfile,
/// a bundler's config; [`build_file`]) does not count: it loads the tool
/// and its plugins (rake 11 removing a method rspec's rake task called
/// failed every project whose Rakefile loaded that task). Python is left
/// out: a project installed into its own `site-packages` (setup.py, tox)
/// shows its own code there (BugSwarm: 6 tests-failed logs of 3
/// repositories would read DEPENDENCY; docs/diagnosis-model.md, session
/// 30).
fn vendored_crash(hits: &mut [Hit], lines: &[(u64, String)]) {
    for h in hits
        .iter_mut()
        .filter(|h| rules::RULES[h.rule].kind == Kind::Crash)
    {
        let Some(at) = lines.iter().position(|(no, _)| *no == h.line_no) else {
            continue;
        };
        // Innermost first: Ruby names it on the error's own line, Node
        // and PHP on the lines below.
        let mut files: Vec<&str> = frame_file(&lines[at].1).into_iter().collect();
        for (i, (no, text)) in lines.iter().enumerate().skip(at + 1) {
            // The next line of the log, or one a blank or two away (the
            // excerpt drops blank lines).
            if !(1..=FRAME_GAP).contains(&no.saturating_sub(lines[i - 1].0)) {
                break;
            }
            match frame_file(text) {
                Some(f) => files.push(f),
                None if files.is_empty() && i - at <= FIRST_FRAME_SPAN => {}
                None => break,
            }
        }
        let Some(innermost) = files.first() else {
            continue;
        };
        if VENDORED.is_match(innermost) && !files.iter().any(|f| project_file(f) && !build_file(f))
        {
            h.becomes(COMPILED.vendored);
        }
    }
}

/// A Python package directory of the checkout, as a frame or a test
/// report names it: under a CI workspace (Travis, GitHub Actions, GitLab,
/// containers), optionally under `src/` or `lib/`, or relative to the
/// project's root as pytest prints it.
static PROJECT_DIR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r#"(?:/home/travis/build/[^/\s"']+/[^/\s"']+|/home/runner/work/[^/\s"']+/[^/\s"']+|/builds/[^/\s"']+/[^/\s"']+|/__w/[^/\s"']+/[^/\s"']+|/github/workspace)"#,
        r#"/(?:src/|lib/)?(?P<dir>[A-Za-z_]\w*)/[^\s"':]*\.py\b"#,
        r#"|^(?:src/)?(?P<rel>[A-Za-z_]\w*)/[\w/.-]*\.py:\d+: in "#,
    ))
    .expect("built-in pattern compiles")
});

/// An import statement: the dotted path it imports.
static IMPORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:>\s+)?(?:from\s+(?P<from>[\w.]+)\s+import\b|import\s+(?P<import>[\w.]+))")
        .expect("built-in pattern compiles")
});

/// A missing Python module that is the project's own — its top-level
/// package is a directory of the checkout, as the lines read show it —
/// is a broken import in the project's code (the rubric's CODE_ERROR),
/// not a third-party package missing. Python 2 names only the module's
/// last part (`No module named groups`): the import statement printed
/// above it names the rest. Callers read `texts` only when a module is
/// missing.
fn own_modules<S: AsRef<str>>(hits: &mut [Hit], texts: &[S]) {
    let dirs: Vec<String> = texts
        .iter()
        .flat_map(|t| PROJECT_DIR.captures_iter(t.as_ref()))
        .filter_map(|c| c.name("dir").or_else(|| c.name("rel")))
        .map(|m| m.as_str().to_string())
        .collect();
    if dirs.is_empty() {
        return;
    }
    let imports: Vec<String> = texts
        .iter()
        .filter_map(|t| IMPORT.captures(t.as_ref().trim()))
        .filter_map(|c| c.name("from").or_else(|| c.name("import")))
        .map(|m| m.as_str().to_string())
        .collect();
    for h in hits.iter_mut().filter(|h| h.rule == COMPILED.no_module) {
        let Some(module) = h.captures.get("pkg").cloned() else {
            continue;
        };
        let full = if module.contains('.') {
            module.clone()
        } else {
            imports
                .iter()
                .find(|p| p.ends_with(&format!(".{module}")))
                .cloned()
                .unwrap_or_else(|| module.clone())
        };
        let top = full.split('.').next().unwrap_or_default();
        if dirs.iter().any(|d| d == top) {
            h.rule = COMPILED.own_module;
            h.weight = rules::RULES[h.rule].weight * WEIGHT_SCALE;
            h.captures.remove("pkg");
            h.captures.insert("module", full);
        }
    }
}

/// javac's and javadoc's warnings (`X.java:90: warning: [deprecation] …`,
/// `X.java:268: warning - @return tag has no arguments`, Maven's
/// `X.java:[90,12] warning: …`): the build went on past them.
static JAVA_WARNING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\.java:(?:\d+:|\[\d+,\d+\]) warning\b").expect("built-in pattern compiles")
});

/// javac's report of a missing package, with the file that imports it
/// (`X.java:12: error: …`; through Maven, `X.java:[12,8] error: …`).
static JAVA_MISSING_PACKAGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?P<file>[\w./\\:-]+)\.java:(?:\d+:|\[\d+,\d+\]) error: package (?P<pkg>[\w.]+) does not exist")
        .expect("built-in pattern compiles")
});

/// Whether `text` is javac reporting a missing package that is the
/// project's own: its first segments (three, or all of a shorter name of
/// at least two) are directories of the importing file's path
/// (`src/main/java/com/acme/shop/cart/Cart.java` importing
/// `com.acme.shop.pricing`). A package of another organisation
/// (`org.junit`, `com.google.common`) is a missing library.
fn own_java_package(text: &str) -> bool {
    let Some(c) = JAVA_MISSING_PACKAGE.captures(text) else {
        return false;
    };
    let segments: Vec<&str> = c["pkg"].split('.').collect();
    if segments.len() < 2 {
        return false;
    }
    let run = segments[..segments.len().min(3)].join("/");
    let file = c["file"].replace('\\', "/");
    format!("/{file}").contains(&format!("/{run}/"))
}

/// Uncaught error types: an "assertion" or "expectation" that reports one
/// of these is a crash the runner caught, not a failed expectation.
static UNCAUGHT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&ascii_classes(r"\b(?:TypeError|ReferenceError|NameError|NoMethodError|AttributeError|NullPointerException|NullReferenceException|LocalJumpError|undefined method|is not a function|is not defined|Cannot read propert(?:y|ies) of (?:undefined|null))\b"))
        .expect("built-in pattern compiles")
});

/// An HTTP 404 says the thing asked for does not exist: whatever fetched
/// it, that is not the network failing.
static NOT_FOUND_404: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&ascii_classes(r"\b404\b")).expect("built-in pattern compiles"));

/// A line logged at the INFO or DEBUG level (java.util.logging's second
/// line `INFO: …`, Maven's `[INFO]`, a logger's `… INFO  …`, also behind
/// two bracketed fields), a build tool's warning (Maven's `[WARNING]`,
/// sbt's `[warn]`: the build went on without it), Apache HttpClient's
/// notice of a request it retries (`I/O exception (…) caught when
/// processing request`), or apt's warning (`W: Failed to fetch … Could not
/// connect`: `apt-get update` skips a source it could not reach and
/// carries on; its errors say `E:`): whatever network error it names was
/// handled, it is not the failure. (A bare `WARNING:` stays: pip's retries
/// print it before the failure they explain.)
static RECOVERED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&ascii_classes(
        r"^(?:\[(?:INFO|DEBUG|WARNING|WARN|warn)\]|(?:INFO|DEBUG|FINE):|W:)\s|^(?:\S+ ){0,2}(?:\[[^\]]*\]\s*){0,2}(?:INFO|DEBUG)\s|\bcaught when processing request\b|^Retrying request\b",
    ))
    .expect("built-in pattern compiles")
});

/// A `file:line:col:` line that is a warning or a note, not an error.
static NOT_AN_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&ascii_classes(
        r"(?i)^\S+:\d+:\d+:? (?:\[?(?:warning|note|info|hint|suggestion|convention)\b|W\d)",
    ))
    .expect("built-in pattern compiles")
});

/// Whether rule `rule`, one of `matched` (every rule matching `text`),
/// says what it seems to on this line:
/// - a 404 is the thing asked for not existing, not the network failing,
///   and a process the logout script killed is not the machine's doing;
/// - the shared `file:line:col:` shape on a warning or a note is not the
///   failure, and where a tool's own format matches too it adds nothing;
/// - a generic "expected … but found" or "assertion failed" inside a
///   linter's or compiler's own diagnostic is that tool's message, not a
///   test's expectation; nor is it one on a notice of something skipped or
///   on a line logged at the INFO or DEBUG level.
fn applies(rule: usize, matched: &[usize], text: &str) -> bool {
    let r = &rules::RULES[rule];
    // The login shell's logout script killing what the job left running
    // (`~/.bash_logout: line 4:  3346 Killed  java -jar app.war`) is the
    // session being cleaned up, not the machine running out of memory.
    if r.kind == Kind::Infra
        && (NOT_FOUND_404.is_match(text)
            || RECOVERED.is_match(text)
            || text.contains("bash_logout:"))
    {
        return false;
    }
    // A tool's own format on the same line says it better.
    let tool_says = || {
        matched.iter().any(|&m| {
            let other = &rules::RULES[m];
            m != rule && matches!(other.kind, Kind::Lint | Kind::Compile) && other.weight >= 0.9
        })
    };
    if r.id == "lint.diagnostic" {
        return !NOT_AN_ERROR.is_match(text) && !tool_says();
    }
    if r.kind == Kind::Assertion && r.id.starts_with("generic.") {
        return !tool_says() && !SKIP_NOTICE.is_match(text) && !RECOVERED.is_match(text);
    }
    true
}

/// A notice of something skipped (`Skipping deployment: expected branch
/// 'main' but was 'fix-x'`, a runner's `SKIPPED [1] …`): what it expected
/// and did not find made the step do less, not fail.
static SKIP_NOTICE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\W*skip(?:s|ping|ped)?\b").expect("built-in pattern compiles")
});

/// [`collect`] on the next line of a run of lines (`clean`: through
/// [`clean_line`], untrimmed), dropping what reads an uncaught error on a
/// stack trace a logger printed ([`LoggedTrace`]).
fn collect_traced(hits: &mut Vec<Hit>, trace: &mut LoggedTrace, line_no: u64, clean: &str) {
    let before = hits.len();
    collect(hits, line_no, clean.trim());
    if quiet_record(clean) {
        hits.extract_if(before.., |h| rules::RULES[h.rule].kind == Kind::Infra)
            .for_each(drop);
    }
    match trace.step(line_no, clean) {
        Logged::No => {}
        Logged::Error => hits
            .extract_if(before.., |h| rules::RULES[h.rule].kind == Kind::Crash)
            .for_each(drop),
        Logged::Warning => hits.truncate(before),
    }
}

/// A logger's record below the error level (`WARNING: Failed to restart:
/// java.net.ConnectException: Connection refused`, `[WARNING] Could not
/// transfer metadata … Connect to repo…`, `10:00:01 DEBUG [main] - … Read
/// timed out`): the program noted a connection it could not make and went
/// on — passing runs print the same (BugSwarm: `network.connect` reads
/// lines of 11 repositories' passing logs, of 6 repositories' failing
/// ones). Not when it says it will retry (`WARNING: Retrying (Retry(total=4
/// …)) after connection broken by …`): the operation that followed failed
/// for that reason.
static QUIET_RECORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(?:\S+\s+){0,4}?\[?(?:warn(?:ing)?|debug|trace)\b\]?:?\s")
        .expect("built-in pattern compiles")
});
static RETRY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bretry|\bretrying\b|\bretries\b|\battempt\b")
        .expect("built-in pattern compiles")
});

/// Whether `text` is a [`QUIET_RECORD`] that does not retry: its network
/// and machine findings are not read.
fn quiet_record(text: &str) -> bool {
    QUIET_RECORD.is_match(text) && !RETRY.is_match(text) && !NOT_A_RECORD.is_match(text)
}

/// A logger's record (`12:00:01.234 [main] ERROR c.a.Pool - msg`,
/// `[DEBUG] c.a.Checker: msg`, java.util.logging's `WARNING: msg`,
/// Python's `ERROR:root:msg`): a level word among the line's first fields.
/// java.util.logging names its levels in the JVM's language (the JDK's
/// `sun.util.logging.resources.logging_*` bundles: `ALLVARLIG: msg`,
/// `Avertissement: msg`), at the start of the record's second line.
/// Not a test runner's report of an errored test (`<<< ERROR!`, `FAILED`,
/// unittest's `ERROR: test_x (…)`), nor Maven's own `[ERROR]`.
static LOG_RECORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^\s*(?:\S+\s+){0,4}?(?:\[(?:DEBUG|INFO|WARN|WARNING|TRACE)\]|(?:ERROR|WARN|WARNING|SEVERE|DEBUG|INFO|TRACE|FINE|FINER|FINEST)(?::|\s|$))",
        r"|^(?i:allvarlig|varning|schwerwiegend|warnung|information|grave|avertissement|infos",
        r"|advertencia|información|avvertenza|informazioni|advertência|informações): ",
    ))
    .expect("built-in pattern compiles")
});
static NOT_A_RECORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"<<<|\bFAILED\b|^\s*(?:ERROR|FAIL): \S+ \(").expect("built-in pattern compiles")
});
/// The first line of a stack trace: a JVM throwable's qualified name
/// (`java.lang.IllegalStateException: …`), or Python's `Traceback`.
static TRACE_HEAD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:(?:[a-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable)\b|(?P<py>Traceback \(most recent call last\):))")
        .expect("built-in pattern compiles")
});
/// A message that ends by introducing the stack trace below it (`Warning:
/// could not load the plugin due to traceback: Traceback (most recent call
/// last):`): the program printed the trace as part of its message. Not a
/// prefix of another kind (`INTERNALERROR> `, a container's `web_1  | `).
static TRACE_AFTER_MESSAGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?P<msg>\S.*?[A-Za-z]{3}.*?):\s+Traceback \(most recent call last\):\s*$")
        .expect("built-in pattern compiles")
});
/// A record or message at the warning level (`WARNING: …`, `[WARN] …`,
/// `Warning: …`, also behind a timestamp and a thread).
static WARNING_LEVEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(?:\S+\s+){0,3}?\[?warn(?:ing)?\b").expect("built-in pattern compiles")
});
/// A JVM stack trace's further lines.
static TRACE_MORE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s+at\s|^\s*Caused by:|^\s*Suppressed:|^\s*\.\.\. \d+ (?:more|common frames omitted)",
    )
    .expect("built-in pattern compiles")
});

/// Whether a line belongs to a stack trace a logger printed right after
/// its record (`log.error("Update check failed", e)`): the program caught
/// that error and went on, so it says nothing of why the job failed — a
/// passing run prints the same. A test that died of it still has the
/// runner's report of the errored test, read as it is.
#[derive(Default)]
struct LoggedTrace {
    prev: Option<u64>,
    state: TraceState,
    /// Lines of failed steps' footers ([`Excerpt::failed_steps`]).
    footers: Vec<u64>,
}

/// Whether a stack trace's record was a warning (`true`) or an error.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum TraceState {
    #[default]
    Outside,
    /// The line before was a logger's record.
    AfterRecord(bool),
    /// Inside a JVM trace: `at …`, `Caused by: …` lines follow.
    Jvm(bool),
    /// Inside a Python traceback: indented lines follow, then the error.
    Python(bool),
}

/// What [`LoggedTrace::step`] says of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Logged {
    /// Not a line of a trace a logger printed.
    No,
    /// A line of the trace of an error the program logged: no uncaught
    /// error, whatever else it names.
    Error,
    /// A line of the trace of a warning: the program went on, nothing on
    /// it is the failure.
    Warning,
}

impl Logged {
    fn of(warned: bool) -> Self {
        if warned {
            Logged::Warning
        } else {
            Logged::Error
        }
    }
}

/// Lines from a traceback's last line to the failed step's footer within
/// which the error ended the step.
const ENDS_STEP: u64 = 3;

impl LoggedTrace {
    /// A tracer that knows where the excerpt's failed steps ended: a
    /// Python traceback whose error is the last thing a failed step printed
    /// was not caught, whatever record a logger wrote above it.
    fn new(excerpt: &Excerpt) -> Self {
        Self {
            footers: excerpt.failed_steps.iter().map(|s| s.line_no).collect(),
            ..Self::default()
        }
    }

    /// Before line `no` is read, shows the tracer the line above it when
    /// the excerpt holds it but the reading starts below it (the record a
    /// block's trace belongs to, shown as context).
    fn prime(&mut self, excerpt: &Excerpt, no: u64) {
        let Some(above) = no.checked_sub(1) else {
            return;
        };
        if self.prev == Some(above) {
            return;
        }
        let text = excerpt
            .likely_lines()
            .iter()
            .chain(&excerpt.aside)
            .find(|l| l.line_no == above)
            .map(|l| l.text.as_str())
            .or_else(|| {
                excerpt
                    .tail
                    .iter()
                    .find(|(n, _)| *n == above)
                    .map(|(_, t)| t.as_str())
            });
        if let Some(text) = text {
            self.step(above, &clean_line(text));
        }
    }

    /// Reads the next line (`no`: its number, consecutive lines only).
    fn step(&mut self, no: u64, text: &str) -> Logged {
        let state = if self.prev.is_some_and(|p| p + 1 == no) {
            self.state
        } else {
            TraceState::Outside
        };
        self.prev = Some(no);
        self.state = TraceState::Outside;
        match state {
            // Its last line, the error itself, ends it.
            TraceState::Python(warned) => {
                if text.starts_with(char::is_whitespace) {
                    self.state = TraceState::Python(warned);
                } else if self.footers.iter().any(|&f| f > no && f - no <= ENDS_STEP) {
                    return Logged::No;
                }
                return Logged::of(warned);
            }
            TraceState::Jvm(warned) if TRACE_MORE.is_match(text) => {
                self.state = TraceState::Jvm(warned);
                return Logged::of(warned);
            }
            TraceState::AfterRecord(warned) => {
                if let Some(c) = TRACE_HEAD.captures(text) {
                    self.state = if c.name("py").is_some() {
                        TraceState::Python(warned)
                    } else {
                        TraceState::Jvm(warned)
                    };
                    return Logged::of(warned);
                }
            }
            _ => {}
        }
        if let Some(c) = TRACE_AFTER_MESSAGE.captures(text) {
            self.state = TraceState::Python(WARNING_LEVEL.is_match(&c["msg"]));
        } else if LOG_RECORD.is_match(text) && !NOT_A_RECORD.is_match(text) {
            self.state = TraceState::AfterRecord(WARNING_LEVEL.is_match(text));
        }
        Logged::No
    }
}

/// Ant's task prefix (`    [javac] `, `[junit] `, `[exec] `): lowercase,
/// unlike Maven's `[ERROR] `.
static TASK_PREFIX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\[[a-z][\w:.-]*\]\s+").expect("built-in pattern compiles"));

fn collect(hits: &mut Vec<Hit>, line_no: u64, text: &str) {
    let mut text = text;
    let mut matched = matches_of(text);
    // A build tool that prefixes its tasks' output: when nothing reads the
    // line as printed, what the task printed is read.
    if matched.is_empty()
        && let Some(m) = TASK_PREFIX.find(text)
    {
        text = &text[m.end()..];
        matched = matches_of(text);
    }
    // javac's `package x does not exist` is a missing library, unless the
    // package is the project's own (the file that imports it lives in it).
    if matched.contains(&COMPILED.missing_reference) && own_java_package(text) {
        matched.retain(|&i| i != COMPILED.missing_reference);
    }
    // A compiler's warning is not the failure. (Only the diagnosis skips
    // it: the excerpt's block ranker was trained with javac's lines
    // recognised as they are, and a warning beside the errors still marks
    // the block that holds them.)
    if matched.contains(&COMPILED.javac) && JAVA_WARNING.is_match(text) {
        matched.retain(|&i| i != COMPILED.javac);
    }
    let ids: Vec<&str> = matched.iter().map(|&i| rules::RULES[i].id).collect();
    for &rule in &matched {
        let r = &rules::RULES[rule];
        if rules::SUPERSEDES
            .iter()
            .any(|(better, worse)| *worse == r.id && ids.contains(better))
        {
            continue;
        }
        // A shape many tools share counts only where no tool's own rule
        // reads the line.
        if rules::YIELDS.contains(&r.id) && matched.len() > 1 {
            continue;
        }
        if !applies(rule, &matched, text) {
            continue;
        }
        let mut weight = r.weight * WEIGHT_SCALE;
        let mut caps = captures(rule, text);
        let mut rule = rule;
        // An error inside a third-party source tree is the dependency's.
        if matches!(r.kind, Kind::Compile | Kind::Crash)
            && caps.get("file").is_some_and(|f| VENDORED.is_match(f))
        {
            rule = COMPILED.vendored;
            weight = rules::RULES[rule].weight * WEIGHT_SCALE;
            caps.remove("file");
        }
        if matches!(rules::RULES[rule].kind, Kind::Assertion) && UNCAUGHT.is_match(text) {
            rule = COMPILED.uncaught;
            weight = rules::RULES[rule].weight * WEIGHT_SCALE * 0.9;
        }
        hits.push(Hit {
            rule,
            weight,
            tail: false,
            aside: false,
            fallback: false,
            later_step: false,
            line_no,
            line: truncate_chars(text, MAX_FINDING_CHARS).to_string(),
            captures: caps,
        });
    }
}

/// Steps 2–4 of the module doc: the hits' evidence per kind, causes
/// explaining symptoms, the winning category, its facts and findings.
fn diagnose_hits(mut hits: Vec<Hit>, command: Option<&str>, exit_code: Option<i32>) -> Diagnosis {
    cancel_wrapped(&mut hits);
    let tests = tests_reported(&hits);
    // Evidence read aside does not vote: it can only hold back an answer
    // it contradicts.
    let aside: Vec<Hit> = hits.extract_if(.., |h| h.aside).collect();
    let evidence = Evidence::new(&hits, priors(command, exit_code, tests));
    let scores = evidence.scores();
    let (rules_winner, s1) = scores[0];
    let s2 = scores[1].1;
    let learned = model::MODEL
        .as_ref()
        .filter(|_| !hits.is_empty() || !evidence.priors.is_empty())
        .map(|m| {
            let x = signals(&evidence, &scores).rows();
            (m, m.predict(&x))
        });
    // Measured on the blind check, the learned model does not yet decide
    // better than the rules (docs/diagnosis-model.md): it advises — its
    // probabilities, the features behind them and whether it would send
    // the answer to review are part of the verdict — and the rules decide.
    let winner = rules_winner;
    let ordered = evidence.ordered(winner);
    let mut diagnosis = Diagnosis {
        scores,
        ..Diagnosis::default()
    };
    if let Some((m, p)) = learned {
        let review_reason = if p.category != winner {
            Some(format!(
                "the model reads {} rather than {winner}",
                p.category
            ))
        } else if winner == Category::TestFailure
            && !hits
                .iter()
                .any(|h| !h.tail && rules::RULES[h.rule].kind == Kind::Assertion)
        {
            // The rubric's line between the two: an assertion is a test
            // failure, an uncaught error in a test a code error.
            Some("tests failed, but no assertion or expectation was read: an uncaught error in a test would make it a code error".into())
        } else if p.probability < m.review_below {
            Some(format!(
                "{:.0} % {winner}; answers complete on their own from {:.0} % (out-of-fold)",
                p.probability * 100.0,
                m.review_below * 100.0
            ))
        } else {
            None
        };
        let mut probabilities: Vec<(Category, f32)> = model::CLASSES
            .iter()
            .zip(&p.probabilities)
            .map(|(c, v)| (*c, round3(*v as f32)))
            .collect();
        probabilities.sort_by(|a, b| b.1.total_cmp(&a.1));
        diagnosis.model = Some(ModelView {
            probabilities,
            review_below: round3(m.review_below as f32),
            deciding: p
                .deciding
                .iter()
                .map(|(n, v)| (n.clone(), round3(*v as f32)))
                .collect(),
            review_reason,
        });
    }
    if s1 >= 0.2 {
        diagnosis.category = winner;
        diagnosis.confidence = confidence(s1, s2);
        // A count of failed tests says that tests failed, not which or
        // why: worth a look before anyone signs it.
        if winner == Category::TestFailure && !evidence.names_a_failed_test() {
            diagnosis.confidence = diagnosis.confidence.min(ONLY_COUNTS_CONFIDENCE);
        }
        diagnosis.decided_by = evidence.decided_by(&ordered, winner);
        if let Some(h) = ordered.first().map(|&i| &hits[i])
            && h.fallback
            && rules::RULES[h.rule].kind.category() == winner
        {
            diagnosis.confidence = diagnosis.confidence.min(ONLY_COUNTS_CONFIDENCE);
            diagnosis
                .decided_by
                .push_str("; read in another block: the lines read first held no recogniser");
        }
        if let Some(h) = aside.iter().find(|h| {
            let floor = if h.later_step {
                LATER_STEP_CONFLICT
            } else {
                ASIDE_CONFLICT
            };
            h.weight >= floor && rules::RULES[h.rule].kind.category() != winner
        }) {
            diagnosis.confidence = diagnosis.confidence.min(ONLY_COUNTS_CONFIDENCE);
            diagnosis.decided_by.push_str(&format!(
                "; held for review: line {} of {} reads {} ({})",
                h.line_no,
                if h.later_step {
                    "a step that failed later"
                } else {
                    "another block"
                },
                rules::RULES[h.rule].kind.category(),
                rules::RULES[h.rule].id
            ));
        }
    } else {
        diagnosis.confidence = round3(s1.min(0.2));
        if s1 > 0.0 {
            diagnosis.decided_by = "only weak signals: no recogniser was decisive".into();
        }
    }
    // Facts: the winner's findings first, then the rest (a failing test is
    // worth naming even when a cause explains it).
    diagnosis.facts = facts::gather(
        ordered
            .iter()
            .map(|&i| &hits[i])
            .chain(hits.iter())
            .map(|h| {
                let r = &rules::RULES[h.rule];
                (r.kind, r.tool, h.line_no, &h.captures)
            }),
        command,
        exit_code,
    );
    diagnosis.findings = ordered
        .iter()
        .take(MAX_FINDINGS)
        .map(|&i| finding(&hits[i]))
        .collect();
    diagnosis
}

/// The model's view of the evidence: per kind on the failure's lines and
/// on the log's last lines, the rules' scores, what the failed step's
/// command and exit code said.
fn signals(evidence: &Evidence<'_>, scores: &[(Category, f32)]) -> model::Signals {
    let mut out = model::Signals::default();
    let mut best: HashMap<usize, f32> = HashMap::new();
    for h in evidence.hits.iter().filter(|h| !h.aside) {
        let k = model::kind_index(rules::RULES[h.rule].kind);
        if h.tail {
            out.tail[k] = out.tail[k].max(h.weight);
        } else {
            let b = best.entry(h.rule).or_insert(0.0);
            *b = b.max(h.weight);
        }
    }
    for (rule, w) in &best {
        let k = model::kind_index(rules::RULES[*rule].kind);
        out.lines[k] = 1.0 - (1.0 - out.lines[k]) * (1.0 - w.clamp(0.0, 0.95));
    }
    for (i, c) in model::CLASSES.iter().enumerate() {
        out.rules[i] = scores
            .iter()
            .find(|(sc, _)| sc == c)
            .map(|s| s.1)
            .unwrap_or(0.0);
    }
    let from = |command: bool| {
        evidence
            .priors
            .iter()
            .find(|p| p.from_command == command)
            .map(|p| p.named)
    };
    out.step = from(true);
    out.exit_code = from(false);
    out
}

/// A wrapper that names what it wraps cancels the generic finding.
fn cancel_wrapped(hits: &mut Vec<Hit>) {
    let present: Vec<&str> = hits.iter().map(|h| rules::RULES[h.rule].id).collect();
    let cancelled: Vec<&str> = rules::CANCELS
        .iter()
        .filter(|(by, _)| present.contains(by))
        .map(|(_, what)| *what)
        .collect();
    if !cancelled.is_empty() {
        hits.retain(|h| !cancelled.contains(&rules::RULES[h.rule].id));
    }
}

/// A weak finding from the failed step rather than a line: its kind, its
/// weight, what it was and whether the command or the exit code said it.
struct Prior {
    kind: Kind,
    /// The kind the step's name says (what the model reads), before what
    /// its output left out changed it: where the two differ, the prior is
    /// an inference from what is missing and only stands in for weaker
    /// findings of its category ([`Prior::stands_in`]).
    named: Kind,
    weight: f32,
    what: String,
    /// Said by the step's command (else by its exit code).
    from_command: bool,
}

impl Prior {
    /// An inference from what is missing: it stands in for weaker findings
    /// of its category, it never adds to them.
    fn stands_in(&self) -> bool {
        self.kind != self.named
    }
}

/// Whether any line read a test runner's report of a failed test, an
/// assertion or a failure count.
fn tests_reported(hits: &[Hit]) -> bool {
    hits.iter()
        .any(|h| rules::RULES[h.rule].kind.reports_tests())
}

/// Whether a line read is a test runner's report, of failed tests or of
/// tests that errored (Surefire's `Tests in error:`, `Failures: 0,
/// Errors: 2`: a report, though what it reports is a crash).
fn test_report_read(hits: &[Hit]) -> bool {
    hits.iter().any(|h| {
        let r = &rules::RULES[h.rule];
        r.kind.reports_tests() || r.kind == Kind::Crash && TEST_RUNNERS.contains(&r.tool)
    })
}

/// The tools of the crash rules that read a test runner's report.
const TEST_RUNNERS: [&str; 3] = ["surefire", "test runner", "xctest"];

/// The kind of step a command (or a build tool's target, task or plugin)
/// names. A property that skips a check (`-Dcheckstyle.skip=true`,
/// `-Dmaven.javadoc.skip=true`) names what does *not* run, so it is read
/// past; skipping the tests is read (a build that skips its tests builds).
fn step_kind(cmd: &str) -> Option<Kind> {
    let skips_a_check = |t: &str| {
        t.starts_with("-D")
            && t.contains(".skip")
            && !t.contains("test.skip")
            && !t.contains("skipTests")
    };
    let read: String = if cmd.split_whitespace().any(skips_a_check) {
        cmd.split_whitespace()
            .filter(|t| !skips_a_check(t))
            .collect::<Vec<_>>()
            .join(" ")
    } else {
        cmd.to_string()
    };
    COMPILED
        .steps
        .iter()
        .find(|(re, _)| re.is_match(&read))
        .map(|(_, kind)| *kind)
}

/// The step that failed leans the verdict when its lines do not decide.
/// A test step whose output reports no failed test, assertion or failure
/// count (`tests` false) did not fail in its tests as far as anything
/// reads: test runners name what failed, so what stopped it is the build,
/// a check or a script around them — the rubric's CODE_ERROR.
fn priors(command: Option<&str>, exit_code: Option<i32>, tests: bool) -> Vec<Prior> {
    let mut priors = Vec::new();
    if let Some(cmd) = command
        && let Some(kind) = step_kind(cmd)
    {
        let absent = kind == Kind::TestFailed && !tests;
        let (named, kind) = (kind, if absent { Kind::Compile } else { kind });
        priors.push(Prior {
            kind,
            named,
            weight: if kind == Kind::Infra { 0.2 } else { 0.3 },
            what: if absent {
                format!("failed step `{cmd}`, and no failed test read in its output: what failed is the build or a check around the tests")
            } else {
                format!("failed step `{cmd}`")
            },
            from_command: true,
        });
    }
    let exit = |kind, weight, what: &str| Prior {
        kind,
        named: kind,
        weight,
        what: what.into(),
        from_command: false,
    };
    match exit_code {
        Some(124) => priors.push(exit(Kind::Infra, 0.8, "exit code 124: a time limit")),
        Some(137) => priors.push(exit(
            Kind::Infra,
            0.8,
            "exit code 137: killed (out of memory)",
        )),
        Some(143) => priors.push(exit(Kind::Infra, 0.5, "exit code 143: terminated")),
        Some(127) => priors.push(exit(Kind::Config, 0.6, "exit code 127: command not found")),
        _ => {}
    }
    priors
}

/// The hits and priors of one log, aggregated per rule and per kind.
struct Evidence<'a> {
    hits: &'a [Hit],
    priors: Vec<Prior>,
    /// Per rule: the index of its strongest hit (distinct rules are
    /// independent evidence).
    best: HashMap<usize, usize>,
    /// Per kind: the noisy-OR of its rules' best weights and its priors.
    by_kind: HashMap<Kind, f32>,
}

impl<'a> Evidence<'a> {
    fn new(hits: &'a [Hit], priors: Vec<Prior>) -> Self {
        let mut best: HashMap<usize, usize> = HashMap::new();
        for (i, h) in hits.iter().enumerate() {
            best.entry(h.rule)
                .and_modify(|b| {
                    if h.weight > hits[*b].weight {
                        *b = i;
                    }
                })
                .or_insert(i);
        }
        let mut by_kind: HashMap<Kind, f32> = HashMap::new();
        let add = |by_kind: &mut HashMap<Kind, f32>, kind: Kind, w: f32| {
            let s = by_kind.entry(kind).or_insert(0.0);
            *s = 1.0 - (1.0 - *s) * (1.0 - w.clamp(0.0, 0.95));
        };
        for &i in best.values() {
            add(
                &mut by_kind,
                rules::RULES[hits[i].rule].kind,
                hits[i].weight,
            );
        }
        for p in &priors {
            if !p.stands_in() {
                add(&mut by_kind, p.kind, p.weight);
                continue;
            }
            let found = by_kind
                .iter()
                .filter(|(k, _)| k.category() == p.kind.category())
                .map(|(_, w)| *w)
                .fold(0.0f32, f32::max);
            if found < p.weight {
                let w = by_kind.entry(p.kind).or_insert(0.0);
                *w = w.max(p.weight);
            }
        }
        Self {
            hits,
            priors,
            best,
            by_kind,
        }
    }

    /// Each rule's strongest hit.
    fn best_hits(&self) -> impl Iterator<Item = &'a Hit> + '_ {
        self.best.values().map(|&i| &self.hits[i])
    }

    /// The combined evidence for `kind`.
    fn combined(&self, kind: Kind) -> f32 {
        self.by_kind.get(&kind).copied().unwrap_or(0.0)
    }

    /// The single strongest finding or prior of `kind`.
    fn strongest(&self, kind: Kind) -> f32 {
        let hit = self
            .best_hits()
            .filter(|h| rules::RULES[h.rule].kind == kind)
            .map(|h| h.weight)
            .fold(0.0f32, f32::max);
        let prior = self
            .priors
            .iter()
            .filter(|p| p.kind == kind)
            .map(|p| p.weight)
            .fold(0.0, f32::max);
        hit.max(prior)
    }

    /// The strongest hit of the rules whose id starts with `prefix`, among
    /// those weighing at least `min`.
    fn strongest_rule(&self, prefix: &str, min: f32) -> f32 {
        self.best_hits()
            .filter(|h| rules::RULES[h.rule].id.starts_with(prefix) && h.weight >= min)
            .map(|h| h.weight)
            .fold(0.0f32, f32::max)
    }

    /// Step 3: each category's score once causes explained symptoms,
    /// rounded, best first (ties keep causes before symptoms).
    fn scores(&self) -> Vec<(Category, f32)> {
        let k = |kind| self.combined(kind);
        let infra = self.strongest(Kind::Infra);
        let dep = self.strongest(Kind::Dependency);
        let config = self.strongest(Kind::Config);
        let compile = self.strongest(Kind::Compile);
        let assertion = k(Kind::Assertion);
        let crash = k(Kind::Crash);

        let or = |a: f32, b: f32| 1.0 - (1.0 - a) * (1.0 - b);
        let mut test = or(or(assertion, k(Kind::TestFailed)), k(Kind::TestSummary));
        let mut code = or(or(k(Kind::Compile), k(Kind::Lint)), crash);
        let mut dependency = k(Kind::Dependency);
        let mut configuration = k(Kind::Config);
        // A link checker reports unreachable sites: its network errors are
        // its findings, not the runner's network.
        let links = self.strongest_rule("links.", 0.0);
        // The network failing explains a download that failed.
        let network = self.strongest_rule("network.", 0.7);

        // A server that refused the job's credentials closed the
        // connection: the network did not fail.
        let refused = self
            .strongest_rule("ssh.auth", 0.0)
            .max(self.strongest_rule("env.unauthorized", 0.0));

        // Causes explain symptoms.
        let not_network = or(links, refused);
        let infrastructure = k(Kind::Infra) * (1.0 - 0.8 * not_network);
        let infra = infra * (1.0 - 0.8 * not_network);
        let explains = |score: &mut f32, cause: f32, factor: f32| {
            *score *= 1.0 - factor * cause;
        };
        explains(&mut dependency, network, 0.6);
        explains(&mut test, infra, 0.8);
        explains(&mut code, infra, 0.5);
        explains(&mut configuration, infra, 0.3);
        explains(&mut test, dep, 0.7);
        explains(&mut code, dep, 0.6);
        explains(&mut test, config, 0.5);
        explains(&mut code, config, 0.3);
        explains(&mut dependency, config, 0.2);
        explains(&mut test, compile, 0.7);
        if assertion < 0.3 {
            // Tests that died of an uncaught error, not of an assertion.
            explains(&mut test, crash, 0.6);
        } else {
            explains(&mut code, assertion * (1.0 - compile), 0.5);
        }

        let mut scores = vec![
            (Category::InfraError, infrastructure),
            (Category::DependencyError, dependency),
            (Category::ConfigError, configuration),
            (Category::CodeError, code),
            (Category::TestFailure, test),
        ];
        for s in &mut scores {
            s.1 = round3(s.1);
        }
        // Stable sort: ties keep the order above (causes before symptoms).
        scores.sort_by(|a, b| b.1.total_cmp(&a.1));
        scores
    }

    /// The best hit of each rule: the winner's first, then by weight, then
    /// by line, then in the rules' table order.
    fn ordered(&self, winner: Category) -> Vec<usize> {
        let hits = self.hits;
        let mut ordered: Vec<usize> = self.best.values().copied().collect();
        ordered.sort_by(|&a, &b| {
            let (ka, kb) = (
                rules::RULES[hits[a].rule].kind,
                rules::RULES[hits[b].rule].kind,
            );
            (ka.category() != winner)
                .cmp(&(kb.category() != winner))
                .then(hits[b].weight.total_cmp(&hits[a].weight))
                .then(hits[a].line_no.cmp(&hits[b].line_no))
                // Two rules on one line with one weight: the table's order,
                // not the hash map's (which changes from run to run).
                .then(hits[a].rule.cmp(&hits[b].rule))
        });
        ordered
    }

    /// Whether a finding names a failed test or an assertion (more than a
    /// summary count).
    fn names_a_failed_test(&self) -> bool {
        self.best_hits().any(|h| {
            matches!(
                rules::RULES[h.rule].kind,
                Kind::Assertion | Kind::TestFailed
            )
        })
    }

    /// What decided for `winner`: its strongest rule, else the prior that
    /// leaned that way.
    fn decided_by(&self, ordered: &[usize], winner: Category) -> String {
        match ordered.first().map(|&i| &self.hits[i]) {
            Some(h) if rules::RULES[h.rule].kind.category() == winner => {
                let r = &rules::RULES[h.rule];
                format!(
                    "{}: {}, {} (line {})",
                    r.id,
                    r.tool,
                    r.kind.producer(),
                    h.line_no
                )
            }
            _ => self
                .priors
                .iter()
                .find(|p| p.kind.category() == winner)
                .map(|p| p.what.clone())
                .unwrap_or_else(|| "the failed step".into()),
        }
    }
}

fn finding(h: &Hit) -> Finding {
    let r = &rules::RULES[h.rule];
    Finding {
        rule: r.id.to_string(),
        tool: r.tool.to_string(),
        kb: rules::kb_slug(r).to_string(),
        kind: r.kind,
        category: r.kind.category(),
        weight: round3(h.weight),
        line_no: h.line_no,
        line: h.line.clone(),
    }
}

/// Highest confidence of a test failure known only from a summary count.
const ONLY_COUNTS_CONFIDENCE: f32 = 0.7;

/// Strength of the winner's evidence, tempered by the runner-up: a
/// runner-up half as strong takes a quarter off, one as strong all of it.
fn confidence(s1: f32, s2: f32) -> f32 {
    if s1 <= 0.0 {
        return 0.0;
    }
    let ratio = (s2 / s1).clamp(0.0, 1.0);
    round3((s1 * (1.0 - ratio * ratio)).clamp(0.0, 0.99))
}

fn round3(x: f32) -> f32 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod ecosystems;
#[cfg(test)]
mod tests;

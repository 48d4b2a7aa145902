//! Per-line failure-signal scoring used by [`super::excerpt`].
//!
//! A line is scored from its *cleaned* text (see [`super::clean`]) by a short
//! list of general, explainable rules: failure vocabulary scores up, known
//! noise (progress, success, zero counts, warnings, CI boilerplate) scores
//! down. Nothing here names a project, a test or a file.

use std::sync::LazyLock;

use regex::{Regex, RegexSet};

use super::clean::LineTag;
use crate::text::ascii_classes;

/// What the excerpt needs to know about one line.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LineInfo {
    /// Failure-signal score: > 0 failure-ish, < 0 noise.
    pub score: f32,
    /// Empty once cleaned.
    pub blank: bool,
    /// Starts with whitespace.
    pub cont: bool,
    /// Leading whitespace width (a tab counts 4).
    pub indent: u16,
    /// A stack-trace frame or source-location detail line.
    pub frame: bool,
    /// A build-tool wrapper / summary line (`make: *** [x] Error 1`, ...).
    pub wrapper: bool,
    /// Structural marker (CI step/fold markers, echoed commands): ends a block.
    pub boundary: bool,
    /// A CI "step finished" footer, if the line is one.
    pub footer: Footer,
    /// A report section header naming problems (`Failures:`, `=== FAILURES
    /// ===`, `Failing tests:`, `Issues`): the list under it is the report.
    pub header: bool,
    /// A list item (`1) x`, `02. x`, `- x`, `> x`); only tested (by the
    /// excerpt) while a report is open.
    pub item: bool,
    /// Quote marker of nested output (`= `, `> `, `| `), 0 if none: lines
    /// with the same marker belong to the same quoted block.
    pub quote: u8,
    /// Part of a diff an assertion prints: a header (`--- Expected`,
    /// `+++ Actual`, `@@ … @@`, `- Expected`, `+ Received`) or a line
    /// of one (`-old`, `+new`).
    pub diff: Diff,
}

/// A line's part in a printed diff.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Diff {
    #[default]
    None,
    Header,
    Line,
}

/// CI step footers: `The command "x" exited with 1.`, `##[error]Process
/// completed with exit code 1.`, `script returned exit code 2`, ...
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Footer {
    #[default]
    None,
    Failed,
    Succeeded,
}

/// Score at which a line starts a candidate window.
pub const ANCHOR: f32 = 2.0;

/// A built-in pattern, compiled with ASCII classes ([`ascii_classes`]).
fn re(p: &str) -> Regex {
    Regex::new(&ascii_classes(p)).expect("valid built-in regex")
}

fn set<'a>(patterns: impl Iterator<Item = &'a str>) -> RegexSet {
    RegexSet::new(patterns.map(ascii_classes)).expect("valid built-in regex")
}

/// Rules: (pattern, weight). The weights of all matching rules add up; only
/// general vocabulary and formats, nothing naming a project, test or file.
#[rustfmt::skip]
const RULES: &[(&str, f32)] = &[
    // Failure vocabulary.
    (r"(?i)\berrors?\b|\berr!", 2.0),
    (r"^\s*(?i:error|fatal|fail(ed|ure)?|e)\b\s*[:\[!(]|^\s*(ERROR|FATAL|FAIL(ED|URE)?)\b", 1.5),
    (r"\b[A-Z]\w*(Error|Exception|Failure)\b", 2.0),
    (r"(?i)\bfail(s|ed|ure|ures|ing)?\b", 2.0),
    (r"\bFAIL(ED|URE|URES)?\b|\[FAIL\]", 1.0),
    (r"(?i)exception", 1.0),
    (r"(?i)traceback|stack ?trace|backtrace", 2.5),
    (r"(?i)panicked at|\bpanic:", 3.0),
    (r"(?i)\bassert", 2.0),
    (r"(?i)\bexpected\b.*\b(but|got|actual|found|to|received|instead)\b|^\s*(expected|actual|got|received|but was)\s*:", 2.0),
    (r"(?i)\bfatal\b", 2.0),
    (r"(?i)undefined (reference|symbol|method|variable|index|offset|function)|unresolved (external|import|reference)", 2.5),
    (r"(?i)\b(cannot|can't|could not|couldn't|unable to)\b", 1.5),
    (r"(?i)no such file|not found|does not exist|doesn't exist", 2.0),
    (r"(?i)\bnot (available|installed|allowed|permitted|defined|declared|satisfied|resolved|supported)\b|\bno \w+ (found|available)\b", 1.5),
    (r"(?i)exit (code|status)|exited with|returned non-zero|non-zero exit", 1.0),
    (r"(?i)\b(address|thread|memory|leak|undefinedbehavior)sanitizer\b|: runtime error: ", 3.0),
    (r"(?i)\bkilled\b|segmentation fault|segfault|sigsegv|sigabrt|core dumped|out of memory|access violation", 2.5),
    (r"(?i)\babort(ed|ing)?\b", 1.0),
    (r"(?i)\btimeout\b", 1.5),
    // Something gave up waiting: anchors a block on its own.
    (r"(?i)timed out|deadline exceeded", 2.0),
    // A CI service's own time limits and cancellations (Travis CI's
    // silent-job limit, GitHub Actions' and Jenkins' time-outs).
    (r"(?i)no output has been received in the last|stalled build|exceeded the maximum (execution )?time|maximum time limit|build timed out|(job|build|operation) (has been|was) (terminated|cancell?ed|aborted)", 2.5),
    // Weak words, not inside hyphenated identifiers (`x86_64-unknown-linux`).
    (r"(?i)(^|[^\w-])(denied|refused|forbidden|unauthori[sz]ed|invalid|illegal|unexpected|mismatch(ed)?|incompatible|conflict(s|ing)?|missing|undefined|unknown|unsupported|violation|broken|overfull|too (many|few|long))([^\w-]|$)", 0.8),
    // Error codes: ENOENT, ERR_X, E0425, TS2345, CS1002.
    (r"\b(E[A-Z]{3,}|ERR_[A-Z_]+|[A-Z]{1,3}\d{3,5})\b", 0.6),
    (r"(?i)^\s*caused by\b", 2.0),
    // A build's rule check that failed (Maven Enforcer), at any level.
    (FAILED_RULE_RE, 2.0),
    // The reason a runner gives under a failed case (`Reason: x`).
    (r"(?i)^\s*(reason|cause)\s*:\s*\S", 1.0),
    // Diagnostics with a location: `a.c:3:5: msg`, `12:4  msg`, `x.cs(3,5): error`.
    (r"^\s*[\w./\\-]+\.\w+:\d+(:\d+)?: ", 1.5),
    (r"^\s*\d+:\d+\s+\S", 1.0),
    (r"(?i)[\w.)\]/-]+:\d+(:\d+)?:?\s*(fatal )?(error|failure)\b|\(\d+(,\d+)?\)\s*:\s*error\b|error\[\w+\]", 2.0),
    // Shell errors: `script.sh: line 3: cd: x: No such file or directory`
    // (bash), `script.sh: 1: ./gradlew: Permission denied` (dash, the
    // `/bin/sh` of Debian and Ubuntu that Jenkins' `sh` step runs).
    (r"^\S+: (line )?\d+: ", 1.0),
    (r"(?i)\b(permission|access( is)?) denied\b", 1.2),
    // jshint's reporter: `lib/a.js: line 3, col 9, Missing semicolon.`
    (r"^\S+: line \d+, col \d+, ", 2.0),
    // Test summaries and markers.
    (r"(?i)\b[1-9]\d* (failed|failures?|errors?|failing|broken)\b|\b(failures?|errors?|failed)\s*[:=]\s*[1-9]\d{0,6}([,;.)]|\s|$)", 2.0),
    (r"✖|✗|✘|×|❌|^\s*not ok\b|^\s*---? FAIL", 2.0),
    (r"^\s*\d{1,4}\) \S", 1.0),
    // Noise: warnings, skips, successes, zero counts, progress, hints.
    (r"(?i)\bwarn(ing)?s?\b|^w: ", -1.5),
    (r"(?i)\bskip(ped|ping)?\b", -1.5),
    // Errors a tool reports and then carries on from are not why it failed.
    (r"(?i)\(ignored\)|\bignoring\b|,\s*continuing\b|\bnon-?fatal\b|\bbest[- ]effort\b", -2.0),
    (r"(?i)\b(passed|succeeded|successful(ly)?|success)\b|✓|✔", -1.5),
    (r"(?i)\b(0|no) (errors?|failures?|failed|warnings?|issues)\b|\b(errors?|failures?|failed|warnings?)\s*[:=]\s*0\b", -3.0),
    (r"^\s*\[\s*\d+\s*(of|/)\s*\d+\s*\]", -2.5),
    // Dependency trees (`├─┬ error-ex@1.3.0`, `+--- x`): names, not failures.
    (r"^[\s│|]*(├|└|\+---|\\---)", -2.5),
    (r"(?i)^\s*(downloading|downloaded|fetching|installing|unpacking|setting up|selecting previously|preparing to unpack|get:\d|hit:\d|ign:\d|receiving objects|resolving deltas|remote:|compiling|collecting|requirement already|using cached|retrying)\b", -2.5),
    (r"(?i)\bif (this|the) (error|problem|issue)|\bdebug log\b|\bverbose\b|for more (info|details)|please (report|see|run|check)|--verbose|\bsee (the )?full (trace|log|output)|\s--(trace|stacktrace|debug|info)\b", -2.0),
    // Echoed compiler / tool invocations: many `-flags`.
    (r"(\s-{1,2}[A-Za-z][\w=.,/+-]*(\s+[^\s-]\S*)?){4}", -2.5),
    // CI boilerplate: cache steps, footers echoed in text, shell hooks.
    (r"(?i)^\s*(\S+ )?(store|upload|restor|sav|pack|fetch|download|check|creat)\w* (the |build )?cache|\bcache (hit|miss|restored|saved|uploaded)|changes detected|shell_session_update|^\s*the command \S|^\s*done\.", -3.0),
];

/// All rules, matched in one pass.
static RULE_SET: LazyLock<RegexSet> = LazyLock::new(|| set(RULES.iter().map(|r| r.0)));

/// Line classes recognised next to the rules, in the order of [`FLAGS`].
#[derive(Clone, Copy)]
enum Flag {
    Header,
    JobEnd,
    Footer,
    Wrapper,
    Success,
    Expectation,
    Verdict,
    WarningLabel,
    ErrorLabel,
    FailedRule,
}

const FLAGS: [(Flag, &str); 10] = [
    (Flag::Header, HEADER_RE),
    (Flag::JobEnd, JOB_END_RE),
    (Flag::Footer, FOOTER_RE),
    (Flag::Wrapper, WRAPPER_RE),
    (Flag::Success, SUCCESS_RE),
    (Flag::Expectation, EXPECTATION_RE),
    (Flag::Verdict, VERDICT_RE),
    (Flag::WarningLabel, WARNING_LABEL_RE),
    (Flag::ErrorLabel, ERROR_LABEL_RE),
    (Flag::FailedRule, FAILED_RULE_RE),
];

/// The rules followed by the line classes: one pass finds all of them.
static ALL: LazyLock<RegexSet> = LazyLock::new(|| {
    let patterns = RULES.iter().map(|r| r.0).chain(FLAGS.iter().map(|f| f.1));
    set(patterns)
});

/// What one pass of [`ALL`] found in a line.
struct Matched {
    score: f32,
    flags: u16,
}

impl Matched {
    fn of(line: &str) -> Self {
        let mut m = Self {
            score: 0.0,
            flags: 0,
        };
        for i in ALL.matches(line).iter() {
            match RULES.get(i) {
                Some(rule) => m.score += rule.1,
                None => m.flags |= 1 << (FLAGS[i - RULES.len()].0 as u16),
            }
        }
        m
    }

    fn has(&self, flag: Flag) -> bool {
        self.flags & (1 << flag as u16) != 0
    }
}

/// The positive rules only: a line matching none of them is plain output
/// (the common case, decided in one cheap pass).
static GATE: LazyLock<RegexSet> = LazyLock::new(|| {
    let positive = RULES.iter().filter(|r| r.1 > 0.0).map(|r| r.0);
    set(positive)
});

const FOOTER_RE: &str = r#"(?i)^the command ".*" (?:failed and )?exited with (\d+)|^the command ".*" failed\. retrying, \d+ of \d+|process completed with exit code (\d+)|script returned exit code (\d+)|^finished: (failure|success)|build step .* marked build as failure"#;
static FOOTER: LazyLock<Regex> = LazyLock::new(|| re(FOOTER_RE));

/// Stack frames and location details that continue a trace (tested on
/// indented lines only).
static FRAME: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"^\s+(at |File ".*", line \d|#\d+ |from \S+:\d|\S+:\d+(:\d+)?:? |\S+\(\S*:\d+\)|\S+:\d+:in [`'<]|-+> |\d* *\| |= note|\[C\]: in |in function )|^\s*\S+\.\w+:\d+(:\d+)?\s*$"#,
    )
});

/// A verdict of success at the start or end of a line vetoes its failure
/// words (`ok 3 - fails on bad input`, `test_fail_on_x ... ok`).
const SUCCESS_RE: &str = r"(?i)^\s*(ok|pass(ed)?|success|✓|✔)\b|\b(ok|passed|pass|success|succeeded)\W{0,3}$|\[\s*(ok|pass(ed)?)\s*\]|✓|✔";
static SUCCESS: LazyLock<Regex> = LazyLock::new(|| re(SUCCESS_RE));

/// Test names that describe an expected failure (`rejects bad input
/// and should fail with X`) are not failures themselves.
const EXPECTATION_RE: &str = r"(?i)\bshould (not )?(fail|error|throw|raise|reject|crash|abort)";

/// Severity labels of diagnostics.
const WARNING_LABEL_RE: &str = r"(?i)(^|[\s:\[(])warn(ing)?\s*[:\])!]";
const ERROR_LABEL_RE: &str = r"(?i)(^|[\s:\[(])(error|fatal|fail(ed|ure)?)\s*[:\])!\[]";
/// A failed rule's words, an error whatever its label: Maven Enforcer
/// 1.x logs `Rule 0: …RequireJavaVersion failed with message:` at
/// `[WARNING]` and then fails the build.
const FAILED_RULE_RE: &str = r"(?i)\brule \d+: \S+ failed with message";

/// A failure verdict printed by a test runner.
const VERDICT_RE: &str = r"\bFAIL(ED|URE)?\b|\[FAIL\]|✗|✖|✘|❌|^\s*not ok\b";

/// Job-level footers: they close the log, not a step.
const JOB_END_RE: &str = r"(?i)your build exited with \d+|job failed: exit code \d+|^cleaning up (file based variables|project directory)";

/// Build-tool wrapper and summary lines: they say *that* something failed
/// and point elsewhere; the explanation is usually the detail before them.
const WRAPPER_RE: &str = concat!(
    r"(?i)^\s*make(\[\d+\])?: \*\*\*|recipe for target .* failed|^\s*npm err!|^\s*error command failed|^\s*info visit",
    r"|build failed|build failure|^\s*failure: build failed|what went wrong|execution failed for task|there were failing tests",
    // Maven's epilogue after any failed goal: the help links and the
    // resume hint (where a goal's reports lie is its own message).
    r"|failed to execute goal|^\s*\[error\] (-> \[help|re-run maven|for more information|to see the full stack|\[help \d+\] https?:|after correcting the problems|\s*mvn <[^>]*>.* -rf :)",
    r"|one or more (\w+ )?(errors?|tests?|failures?) (occurred|failed)|an error occurred (when|while) (executing|running)",
    r"|returned non-zero exit status|error: (test failed|could not compile|aborting due to)|rake aborted|errors while running ctest",
    r"|^\s*\d+ tests? completed|^\s*(tests|examples|specs?) ?(run)?:? \d+.*\b(failures?|failed)|^\s*=+ .*\d+ (failed|error)",
    r"|^\s*fail\s+\S+\s+\d+(\.\d+)?s\s*$|^\s*fail\s*$|^\s*#\s*\d+ failed test|^\s*\d+ (examples?|tests?|specs?), \d+ failures?",
    r"|^\s*:\S+ failed$|exited with (code|status):? ?(\w+ )?[1-9]|command failed with (exit )?(status|code)|exit status [1-9]\d*$|^\s*error: process completed",
    // Failure counts: `TOTAL: 1 FAILED`, `Failures: 2`, `failed 4 and passed 10 tests`.
    r"|\b[1-9]\d* (failed|failures?|errors?|failing|broken)\b([,.;:)]|\s*$| and| of| in| tests?)|\b(failures?|errors?|failed)\s*[:=]\s*[1-9]\d{0,6}([,;.)]|\s|$)|\bfailed [1-9]\d* ",
);

/// Headers the failure vocabulary of [`RULES`] does not catch.
static OTHER_HEADER: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^\W{0,8}(issues|problems|violations|offen[cs]es)\W{0,8}$"));

/// Report section headers: a short line that only names the problems
/// listed under it.
const HEADER_RE: &str = concat!(
    r"(?i)^\W{0,8}(the following |summary of )?(\w+ )?",
    r"(issues|problems|errors|failures|failed (tests?|examples?|specs?|checks?)|failing (tests?|examples?|specs?)|test failures|violations|offen[cs]es)",
    r"( found| detected| occurred| summary)?\W{0,8}$",
);

static ITEM: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*(\d{1,4}[.)]|[-*•>+]|\[\w+\])\s+\S"));

/// Whether a cleaned line is a list item (`1) x`, `02. x`, `- x`, `> x`).
pub fn is_item(clean: &str) -> bool {
    ITEM.is_match(clean)
}

/// Scores one cleaned line. `tag` is the workflow-command prefix removed by
/// cleaning (`##[error]` lines score higher); `red` says the raw line set a
/// red colour.
///
/// Longer than most functions on purpose: the rules apply in order with
/// early returns, and reading them top to bottom is reading their
/// precedence (split up, the order would hide in the calls).
pub fn analyse(clean: &str, tag: LineTag, red: bool) -> LineInfo {
    let trimmed = clean.trim_end();
    let mut info = LineInfo {
        blank: trimmed.trim_start().is_empty(),
        ..LineInfo::default()
    };
    if info.blank {
        return info;
    }
    let first = trimmed.as_bytes()[0];
    info.cont = first == b' ' || first == b'\t';
    if info.cont {
        let width: usize = trimmed
            .bytes()
            .take_while(|b| *b == b' ' || *b == b'\t')
            .map(|b| if b == b'\t' { 4 } else { 1 })
            .sum();
        info.indent = u16::try_from(width).unwrap_or(u16::MAX);
    }
    info.boundary = matches!(tag, LineTag::Marker | LineTag::Command)
        || trimmed.starts_with("$ ")
        || trimmed.starts_with("travis_")
        || trimmed.starts_with("[Pipeline]");
    if tag == LineTag::Error {
        info.score += 3.0;
    }
    info.quote = quote_marker(trimmed);
    info.diff = diff_part(trimmed);
    if !GATE.is_match(trimmed) {
        // Report headers may name problems without failure words.
        let initial = trimmed.bytes().find(u8::is_ascii_alphanumeric).unwrap_or(0);
        if !info.cont
            && trimmed.len() <= 24
            && matches!(initial.to_ascii_lowercase(), b'i' | b'p' | b'v' | b'o')
            && OTHER_HEADER.is_match(trimmed)
        {
            info.header = true;
            info.score = info.score.max(ANCHOR);
        }
        return info;
    }
    let m = Matched::of(trimmed);
    if m.has(Flag::Header) && !info.cont && trimmed.len() <= 60 {
        info.header = true;
        info.score = info.score.max(ANCHOR);
        return info;
    }
    if m.has(Flag::JobEnd) {
        info.boundary = true;
        info.score = -3.0;
        return info;
    }
    if let Some(c) = m
        .has(Flag::Footer)
        .then(|| FOOTER.captures(trimmed))
        .flatten()
    {
        let failed = match c.iter().skip(1).flatten().next() {
            Some(m) => m.as_str() != "0" && !m.as_str().eq_ignore_ascii_case("success"),
            None => true,
        };
        info.footer = if failed {
            Footer::Failed
        } else {
            Footer::Succeeded
        };
        info.boundary = true;
        info.score = 0.0;
        return info;
    }
    info.score += m.score;
    if info.score > 0.0 && red {
        // Terminals colour errors red; it only adds to other evidence.
        info.score += 1.0;
    }
    if info.score > 0.0 && m.has(Flag::Wrapper) {
        // Summaries count failures, so they may also mention successes.
        info.wrapper = true;
        info.score = (info.score * 0.35).min(ANCHOR - 0.5);
    } else if m.has(Flag::Success) {
        info.score = info.score.min(-1.0);
    } else if m.has(Flag::Expectation) && !m.has(Flag::Verdict) {
        // Test names describing an expected failure (`should fail with
        // X`) are not failures, unless a runner's verdict says so.
        info.score -= 2.0;
    }
    if info.score > 0.5
        && m.has(Flag::WarningLabel)
        && !m.has(Flag::ErrorLabel)
        && !m.has(Flag::FailedRule)
    {
        // A diagnostic labelled as a warning is not an error, whatever
        // its message says (`x.erl:3: Warning: this will fail`).
        info.score = 0.5;
    }
    // Very long lines (minified output, dumps) are rarely the explanation.
    if trimmed.len() > 600 {
        info.score *= 0.5;
    }
    info
}

/// The quote marker of nested output: one or two of `=`, `>`, `|`, `!`,
/// `#` followed by a space at the very start of the line.
pub fn quote_marker(clean: &str) -> u8 {
    let b = clean.as_bytes();
    let first = b.first().copied().unwrap_or(0);
    if !matches!(first, b'=' | b'>' | b'|' | b'!' | b'#') {
        return 0;
    }
    let n = if b.get(1) == Some(&first) { 2 } else { 1 };
    match b.get(n) {
        Some(b' ' | b'\t') | None => first,
        _ => 0,
    }
}

/// Headers of the diffs assertion libraries print (unified diffs, Jest's
/// and PHPUnit's `- Expected` / `+ Received` legends).
static DIFF_HEADER: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^\s*((---|\+\+\+) \S|@@ .*@@|[-+] ?(expected|actual|received)\b)"));

/// A line's part in a printed diff ([`Diff`]).
pub fn diff_part(clean: &str) -> Diff {
    let t = clean.trim_start();
    match t.as_bytes().first() {
        Some(b'-' | b'+' | b'@') if DIFF_HEADER.is_match(t) => Diff::Header,
        Some(b'-' | b'+') if !is_rule(t) => Diff::Line,
        _ => Diff::None,
    }
}

/// Whether a cleaned line is noise: a success verdict or a line whose rules
/// add up below zero (progress, warnings, cache steps, ...).
pub fn is_noise(clean: &str) -> bool {
    let trimmed = clean.trim_end();
    is_rule(trimmed)
        || SUCCESS.is_match(trimmed)
        || RULE_SET
            .matches(trimmed)
            .iter()
            .map(|i| RULES[i].1)
            .sum::<f32>()
            < 0.0
}

/// Whether a line only draws a rule or separator (`-----`, `= = =`,
/// `*****`): it carries no text of its own.
pub fn is_rule(clean: &str) -> bool {
    let t = clean.trim();
    !t.is_empty() && t.chars().all(|c| !c.is_alphanumeric())
}

/// Frames that Ruby (`/app/lib/x.rb:54:in 'load'`, under `rake aborted!`
/// and an uncaught error's first line) and PHP (`#0 /app/src/X.php(12):
/// f()`) print flush left, where [`is_frame`] reads indented lines only.
static FLUSH_FRAME: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r#"^(?:from )?{RUBY_SOURCE}:\d+:in [`'<]|^#\d+ (?:/\S+\(\d+\): |\{{main\}}$)"#
    ))
});

/// A Ruby source file as a frame names it: `.rb`, a rake task, a gemspec,
/// or a Rakefile, Gemfile or Guardfile (the diagnosis's frame reader
/// captures it from the frames [`is_flush_frame`] keeps).
pub const RUBY_SOURCE: &str = r"\S*?(?:\.rb|\.rake|\.gemspec|Rakefile|Gemfile|Guardfile)";

/// Whether a line is a frame printed flush left ([`FLUSH_FRAME`]).
pub fn is_flush_frame(clean: &str) -> bool {
    FLUSH_FRAME.is_match(clean)
}

/// Whether a line looks like a stack frame or a location detail that
/// continues a trace (`  at f (x.js:1:2)`, `  File "x.py", line 3`, ...).
pub fn is_frame(clean: &str) -> bool {
    FRAME.is_match(clean)
}

/// Digit-insensitive 64-bit hash of a cleaned line (FNV-1a), so that
/// progress lines differing only in counters count as repeats.
pub fn line_hash(clean: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in clean.trim().as_bytes() {
        let b = if b.is_ascii_digit() { b'0' } else { b };
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Count-min sketch of line hashes: bounded memory, over-estimates only.
pub struct Sketch {
    rows: Vec<Vec<u32>>,
}

impl Sketch {
    const WIDTH: usize = 1 << 14;

    pub fn new() -> Self {
        Self {
            rows: vec![vec![0; Self::WIDTH]; 4],
        }
    }

    fn slot(hash: u64, row: usize) -> usize {
        let mixed = (hash ^ (row as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .wrapping_mul(0xff51_afd7_ed55_8ccd);
        (mixed >> 32) as usize % Self::WIDTH
    }

    pub fn add(&mut self, hash: u64) {
        for (i, row) in self.rows.iter_mut().enumerate() {
            let c = &mut row[Self::slot(hash, i)];
            *c = c.saturating_add(1);
        }
    }

    pub fn count(&self, hash: u64) -> u32 {
        self.rows
            .iter()
            .enumerate()
            .map(|(i, row)| row[Self::slot(hash, i)])
            .min()
            .unwrap_or(0)
    }
}

impl Default for Sketch {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score(s: &str) -> f32 {
        analyse(s, LineTag::None, false).score
    }

    #[test]
    fn failure_lines_score_high() {
        for s in [
            "Traceback (most recent call last):",
            "src/main.c:12:5: error: expected ';' before '}' token",
            "thread 'main' panicked at 'boom', src/main.rs:1:1",
            "AssertionError: expected 1 to equal 2",
            "--- FAIL: TestFoo (0.01s)",
            "Segmentation fault (core dumped)",
            "E: Unable to locate package libfoo-dev",
            "##[error]src/lib.rs:3:5: mismatched types",
            "❌  /src/Cart.swift:4:9: 'total' is inaccessible due to 'private' protection level",
            "Tests timed out after 600 seconds",
            "No output has been received in the last 10m0s, this potentially indicates a stalled build",
            "The job running on runner GitHub Actions 2 has exceeded the maximum execution time of 360 minutes.",
        ] {
            let (clean, tag) = super::super::clean::clean_line_tagged(s);
            let score = analyse(&clean, tag, false).score;
            assert!(score >= ANCHOR, "{s}: {score}");
        }
    }

    #[test]
    fn wrapper_lines_are_weak_signal() {
        for s in [
            "npm ERR! code ELIFECYCLE",
            "Tests run: 10, Failures: 2, Errors: 0",
            "make[1]: *** [all] Error 2",
            "FAILURE: Build failed with an exception.",
            "TOTAL: 1 FAILED, 420 SUCCESS",
            "[ERROR] [Help 1] http://cwiki.apache.org/confluence/display/MAVEN/MojoFailureException",
            "[ERROR] After correcting the problems, you can resume the build with the command",
            "[ERROR]   mvn <goals> -rf :shelf-core",
        ] {
            let info = analyse(s, LineTag::None, false);
            assert!(
                info.wrapper && info.score > 0.0 && info.score < ANCHOR,
                "{s}: {info:?}"
            );
        }
    }

    #[test]
    fn a_rule_check_that_failed_at_warning_level_anchors() {
        // Written for this test: Maven Enforcer 1.x logs its failed rule
        // as a warning, then fails the build.
        let s = "[WARNING] Rule 0: org.apache.maven.plugins.enforcer.RequireJavaVersion failed with message:";
        assert!(score(s) >= ANCHOR, "{s}");
        assert!(score("[WARNING] The POM for org.shelf:spine:jar:1.4 is missing") <= 0.5);
    }

    #[test]
    fn success_vetoes_failure_words() {
        assert!(score("ok 3 - fails on bad input") < 0.0);
        assert!(score("[ RUN ] error handling fails on empty file: 7.29 ms OK") < 0.0);
        assert!(is_noise("Receiving objects: 100% (5/5), done."));
        assert!(!is_noise("Error: boom"));
    }

    #[test]
    fn frames_and_colour() {
        assert!(is_frame("    at com.example.Foo.bar(Foo.java:12)"));
        assert!(is_frame("  File \"app.py\", line 3, in <module>"));
        assert!(!is_frame("plain text"));
    }

    #[test]
    fn noise_scores_low() {
        for s in [
            "0 errors, 0 warnings",
            "Downloading foo 1.2.3",
            "warning: unused variable `x`",
            "test result: ok. 3 passed; 0 failed",
            "Done. Your build exited with 1.",
        ] {
            assert!(score(s) < ANCHOR, "{s}: {}", score(s));
        }
    }

    #[test]
    fn footers_are_recognised() {
        assert_eq!(
            analyse("The command \"make\" exited with 2.", LineTag::None, false).footer,
            Footer::Failed
        );
        assert_eq!(
            analyse("The command \"make\" exited with 0.", LineTag::None, false).footer,
            Footer::Succeeded
        );
        assert_eq!(
            analyse("Process completed with exit code 1.", LineTag::Error, false).footer,
            Footer::Failed
        );
        assert_eq!(
            analyse("Finished: FAILURE", LineTag::None, false).footer,
            Footer::Failed
        );
    }

    #[test]
    fn report_headers() {
        for s in [
            "Failures:",
            "=== FAILURES ===",
            "failures:",
            "Failing tests:",
            "TEST FAILURES",
            "Issues :-(",
            "Problems",
        ] {
            let info = analyse(s, LineTag::None, false);
            assert!(info.header && info.score >= ANCHOR, "{s}: {info:?}");
        }
        for s in [
            "    Failing examples",
            "There were 3 failures in module x",
            "errors: 0",
            "Issues fixed in this release: 12",
        ] {
            assert!(!analyse(s, LineTag::None, false).header, "{s}");
        }
    }

    #[test]
    fn expectations_and_warning_labels_are_not_failures() {
        assert!(score("      '1071.purs' should fail with 'KindsDoNotUnify':") < ANCHOR);
        assert!(
            score("x_SUITE.erl:65: Warning: this expression will fail with a 'badarith' exception")
                < ANCHOR
        );
        // A runner's verdict still counts.
        assert!(score("Firefox 60 injector should throw if not set yet FAILED") >= ANCHOR);
        assert!(score("src/a.c:3:1: error: expected ';' (warning: treated as error)") >= ANCHOR);
    }

    #[test]
    fn error_codes_are_not_failure_counts() {
        let info = analyse(
            "  [35] SSL connect error (error:14094410:SSL routines)",
            LineTag::None,
            false,
        );
        assert!(!info.wrapper && info.score > 0.0, "{info:?}");
        assert!(analyse("Tests run: 5, Failures: 2, Errors: 0", LineTag::None, false).wrapper);
    }

    #[test]
    fn trees_progress_and_echoed_commands_are_noise() {
        for s in [
            "│ │ └─┬ error-ex@1.3.0",
            "[ 31 of 122] Compiling Crypto.Error.Types",
            "../vim -u NONE -e -X -S check.vim -c \"if error == 0 | q | endif\" -c cq af.po",
        ] {
            assert!(score(s) < ANCHOR, "{s}: {}", score(s));
        }
        assert!(score("==123==ERROR: AddressSanitizer: SEGV on unknown address") >= ANCHOR);
    }

    #[test]
    fn quote_markers_and_items() {
        assert_eq!(quote_marker("= ==1==ERROR: x"), b'=');
        assert_eq!(quote_marker(">> npm output"), b'>');
        assert_eq!(quote_marker("# ./spec/a_spec.rb:3:in `x'"), b'#');
        assert_eq!(quote_marker("=====SECTION"), 0);
        assert_eq!(quote_marker("plain"), 0);
        assert!(is_item("  01. [L0410] 301 https://x"));
        assert!(is_item("  1) Foo does bar"));
        assert!(!is_item("plain text"));
        assert!(is_rule("- - - - - - -"));
        assert!(!is_rule("-- x"));
        assert!(is_frame("  /app/lib/x.rb:54:in `load'"));
    }

    #[test]
    fn sketch_counts() {
        let mut s = Sketch::new();
        for _ in 0..5 {
            s.add(line_hash("Downloading 12%"));
        }
        assert!(s.count(line_hash("Downloading 99%")) >= 5);
        assert_eq!(s.count(line_hash("something else")), 0);
    }

    #[test]
    fn diff_parts_are_told_from_rules_and_lists() {
        for (line, want) in [
            ("--- Expected", Diff::Header),
            ("+++ Actual", Diff::Header),
            ("@@ -1,3 +1,3 @@", Diff::Header),
            ("    - Expected  - 1", Diff::Header),
            ("+ Received  + 1", Diff::Header),
            ("-'3.00'", Diff::Line),
            ("+  \"total\": 2,", Diff::Line),
            ("----------", Diff::None),
            ("total: 3", Diff::None),
        ] {
            assert_eq!(diff_part(line), want, "{line}");
        }
    }
}

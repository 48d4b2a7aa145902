//! Per-line failure-signal scoring used by [`super::excerpt`].
//!
//! A line is scored from its *cleaned* text (see [`super::clean`]) by a short
//! list of general, explainable rules: failure vocabulary scores up, known
//! noise (progress, success, zero counts, warnings, CI boilerplate) scores
//! down. Nothing here names a project, a test or a file.

use std::sync::LazyLock;

use regex::{Regex, RegexSet};

use super::clean::LineTag;

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

fn re(p: &str) -> Regex {
    Regex::new(p).expect("valid built-in regex")
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
    (r"(?i)\bkilled\b|segmentation fault|segfault|sigsegv|sigabrt|core dumped|out of memory|access violation", 2.5),
    (r"(?i)\babort(ed|ing)?\b", 1.0),
    (r"(?i)timed out|\btimeout\b|deadline exceeded", 1.5),
    // Weak words, not inside hyphenated identifiers (`x86_64-unknown-linux`).
    (r"(?i)(^|[^\w-])(denied|refused|forbidden|unauthori[sz]ed|invalid|illegal|unexpected|mismatch(ed)?|incompatible|conflict(s|ing)?|missing|undefined|unknown|unsupported|violation|broken|overfull|too (many|few|long))([^\w-]|$)", 0.8),
    // Error codes: ENOENT, ERR_X, E0425, TS2345, CS1002.
    (r"\b(E[A-Z]{3,}|ERR_[A-Z_]+|[A-Z]{1,3}\d{3,5})\b", 0.6),
    (r"(?i)^\s*caused by\b", 2.0),
    // Diagnostics with a location: `a.c:3:5: msg`, `12:4  msg`, `x.cs(3,5): error`.
    (r"^\s*[\w./\\-]+\.\w+:\d+(:\d+)?: ", 1.5),
    (r"^\s*\d+:\d+\s+\S", 1.0),
    (r"(?i)[\w.)\]/-]+:\d+(:\d+)?:?\s*(fatal )?(error|failure)\b|\(\d+(,\d+)?\)\s*:\s*error\b|error\[\w+\]", 2.0),
    // Shell errors: `script.sh: line 3: cd: x: No such file or directory`.
    (r"^\S+: line \d+: ", 1.0),
    // Test summaries and markers.
    (r"(?i)\b[1-9]\d* (failed|failures?|errors?|failing|broken)\b|\b(failures?|errors?|failed)\s*[:=]\s*[1-9]", 2.0),
    (r"✖|✗|✘|×|^\s*not ok\b|^\s*---? FAIL", 2.0),
    (r"^\s*\d{1,4}\) \S", 1.0),
    // Noise: warnings, skips, successes, zero counts, progress, hints.
    (r"(?i)\bwarn(ing)?s?\b|^w: ", -1.5),
    (r"(?i)\bskip(ped|ping)?\b", -1.5),
    (r"(?i)\b(passed|succeeded|successful(ly)?|success)\b|✓|✔", -1.5),
    (r"(?i)\b(0|no) (errors?|failures?|failed|warnings?|issues)\b|\b(errors?|failures?|failed|warnings?)\s*[:=]\s*0\b", -3.0),
    (r"(?i)^\s*(downloading|downloaded|fetching|installing|unpacking|setting up|selecting previously|preparing to unpack|get:\d|hit:\d|ign:\d|receiving objects|resolving deltas|remote:|compiling|collecting|requirement already|using cached|retrying)\b", -2.5),
    (r"(?i)\bif (this|the) (error|problem|issue)|\bdebug log\b|\bverbose\b|for more (info|details)|please (report|see|run|check)|--verbose", -2.0),
    // Echoed compiler / tool invocations: many `-flags`.
    (r"(\s-{1,2}[A-Za-z][\w=.,/+-]*){5}", -2.5),
    // CI boilerplate: cache steps, footers echoed in text, shell hooks.
    (r"(?i)^\s*(\S+ )?(store|upload|restor|sav|pack|fetch|download|check|creat)\w* (the |build )?cache|\bcache (hit|miss|restored|saved|uploaded)|changes detected|shell_session_update|^\s*the command \S|^\s*done\.", -3.0),
];

/// All rules, matched in one pass.
static RULE_SET: LazyLock<RegexSet> =
    LazyLock::new(|| RegexSet::new(RULES.iter().map(|r| r.0)).expect("valid built-in regex"));

/// The positive rules only: a line matching none of them is plain output
/// (the common case, decided in one cheap pass).
static GATE: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new(RULES.iter().filter(|r| r.1 > 0.0).map(|r| r.0)).expect("valid built-in regex")
});

static FOOTER: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(?i)^the command ".*" exited with (\d+)|process completed with exit code (\d+)|script returned exit code (\d+)|^finished: (failure|success)|build step .* marked build as failure"#,
    )
});

/// Stack frames and location details that continue a trace (tested on
/// indented lines only).
static FRAME: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"^\s+(at |File ".*", line \d|#\d+ |from \S+:\d|\S+:\d+(:\d+)?:? |\S+\(\S*:\d+\)|-+> |\d* *\| |= note|\[C\]: in |in function )|^\s*\S+\.\w+:\d+(:\d+)?\s*$"#,
    )
});

/// A verdict of success at the start or end of a line vetoes its failure
/// words (`ok 3 - fails on bad input`, `test_fail_on_x ... ok`).
static SUCCESS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^\s*(ok|pass(ed)?|success|✓|✔)\b|\b(ok|passed|pass|success|succeeded)\W{0,3}$|\[\s*(ok|pass(ed)?)\s*\]|✓|✔",
    )
});

/// Job-level footers: they close the log, not a step.
static JOB_END: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)your build exited with \d+|job failed: exit code \d+|^cleaning up (file based variables|project directory)",
    )
});

/// Build-tool wrapper and summary lines: they say *that* something failed
/// and point elsewhere; the explanation is usually the detail before them.
static WRAPPER: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?i)^\s*make(\[\d+\])?: \*\*\*|recipe for target .* failed|^\s*npm err!|^\s*error command failed|^\s*info visit",
        r"|build failed|build failure|^\s*failure: build failed|what went wrong|execution failed for task|there were failing tests",
        r"|failed to execute goal|^\s*\[error\] (-> \[help|re-run maven|for more information|to see the full stack)",
        r"|returned non-zero exit status|error: (test failed|could not compile|aborting due to)|rake aborted|errors while running ctest",
        r"|^\s*\d+ tests? completed|^\s*(tests|examples|specs?) ?(run)?:? \d+.*\b(failures?|failed)|^\s*=+ .*\d+ (failed|error)",
        r"|^\s*fail\s+\S+\s+\d+(\.\d+)?s\s*$|^\s*fail\s*$|^\s*#\s*\d+ failed test|^\s*\d+ (examples?|tests?|specs?), \d+ failures?",
        r"|^\s*:\S+ failed$|exited with code [1-9]|exit status [1-9]\d*$|^\s*error: process completed",
        // Failure counts: `TOTAL: 1 FAILED`, `Failures: 2`, `failed 4 and passed 10 tests`.
        r"|\b[1-9]\d* (failed|failures?|errors?|failing|broken)\b([,.;:)]|\s*$| and| of| in| tests?)|\b(failures?|errors?|failed)\s*[:=]\s*[1-9]|\bfailed [1-9]\d* ",
    ))
});

/// Scores one cleaned line. `tag` is the workflow-command prefix removed by
/// cleaning (`##[error]` lines score higher); `red` says the raw line set a
/// red colour.
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
    if !GATE.is_match(trimmed) {
        return info;
    }
    if JOB_END.is_match(trimmed) {
        info.boundary = true;
        info.score = -3.0;
        return info;
    }
    if let Some(c) = FOOTER.captures(trimmed) {
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
    info.score += RULE_SET
        .matches(trimmed)
        .iter()
        .map(|i| RULES[i].1)
        .sum::<f32>();
    if info.score > 0.0 && red {
        // Terminals colour errors red; it only adds to other evidence.
        info.score += 1.0;
    }
    if info.score > 0.0 && WRAPPER.is_match(trimmed) {
        // Summaries count failures, so they may also mention successes.
        info.wrapper = true;
        info.score = (info.score * 0.35).min(ANCHOR - 0.5);
    } else if SUCCESS.is_match(trimmed) {
        info.score = info.score.min(-1.0);
    }
    // Very long lines (minified output, dumps) are rarely the explanation.
    if trimmed.len() > 600 {
        info.score *= 0.5;
    }
    info
}

/// Whether a cleaned line is noise: a success verdict or a line whose rules
/// add up below zero (progress, warnings, cache steps, ...).
pub fn is_noise(clean: &str) -> bool {
    let trimmed = clean.trim_end();
    SUCCESS.is_match(trimmed)
        || RULE_SET
            .matches(trimmed)
            .iter()
            .map(|i| RULES[i].1)
            .sum::<f32>()
            < 0.0
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
        ] {
            let info = analyse(s, LineTag::None, false);
            assert!(
                info.wrapper && info.score > 0.0 && info.score < ANCHOR,
                "{s}: {info:?}"
            );
        }
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
    fn sketch_counts() {
        let mut s = Sketch::new();
        for _ in 0..5 {
            s.add(line_hash("Downloading 12%"));
        }
        assert!(s.count(line_hash("Downloading 99%")) >= 5);
        assert_eq!(s.count(line_hash("something else")), 0);
    }
}

//! Candidate windows for [`super::excerpt`]: the streaming state machine
//! that grows windows around anchor lines, keeps a bounded pool of them and
//! ranks them once the log is read.

use std::collections::VecDeque;

use super::clean::{LineTag, clean_line, clean_line_tagged, is_red};
use super::excerpt::{
    Excerpt, ExcerptLine, ExcerptOptions, FailedStep, MAX_ASIDE, MAX_FAILED_STEPS,
    MAX_PASSED_STEPS, MAX_REPORTED, MAX_TRACE, TAIL_LINES,
};
use super::ranker::Candidate;
use super::score::{
    ANCHOR, Diff, Footer, LineInfo, Sketch, analyse, is_flush_frame, is_frame, is_item, is_noise,
    line_hash,
};

/// Recent non-blank lines kept for leading context and the fallback tail.
const RING: usize = 16;
/// How far below a signal line (or the frame before) a flush-left frame
/// may stand, blank lines included, to be kept ([`State::trace`]).
const TRACE_GAP: u64 = 3;
/// Lines of the fallback window before a failure footer.
const TAIL: usize = 8;
/// Value factor of a window in a step that failed after an earlier failed
/// step: the first failure usually explains the later ones.
const LATER_FAILURE: f32 = 0.7;
/// Value factor per unit of recogniser strength: a block in a tool's own
/// failure format (a test runner's report, a compiler diagnostic, a package
/// manager's resolution error) beats generic error vocabulary.
const RECOGNISED: f32 = 1.5;
/// The hand-set ranking's weight of each [`Window::footer_bucket`].
const FOOTER_WEIGHT: [f32; 9] = [3.0, 2.2, 1.6, 1.3, 0.1, 0.3, 0.6, 0.4, 1.0];
/// Lines of one window matched against the recognisers.
const RECOGNISE_PER_WINDOW: usize = 24;
/// Lines of one log matched against the recognisers: the cost stays flat
/// however many candidate blocks a log has.
const RECOGNISE_BUDGET: usize = 4000;

/// A scored line held in the ring.
#[derive(Debug, Clone)]
struct Held {
    no: u64,
    text: String,
    info: LineInfo,
    hash: u64,
    /// Blank lines between this line and the previous non-blank one.
    gap: u32,
    /// The baseline (last green log) printed it too.
    known: bool,
}

#[derive(Debug, Clone)]
struct Stored {
    line: ExcerptLine,
    hash: u64,
    core: bool,
    dups: u32,
    /// Kept for structure only (a report header): not returned.
    hidden: bool,
    /// A build-tool wrapper or summary line.
    wrapper: bool,
    /// A stack frame or a location line under a report.
    frame: bool,
}

/// A candidate block of lines.
#[derive(Debug, Clone, Default)]
struct Window {
    lines: Vec<Stored>,
    max_score: f32,
    sum_score: f32,
    quiet: f32,
    /// Indentation of its least indented anchor: deeper lines continue it.
    indent: u16,
    /// Non-blank index and line number of its last core line.
    end_nb: u64,
    last_no: u64,
    /// First step footer after the window and its distance in non-blank lines.
    footer: Option<(Footer, u64)>,
    /// Built from the lines just before a failure footer (fallback).
    tail: bool,
    /// Opened by a report header: its list body continues it.
    report: bool,
    /// Quote marker of its anchor: lines quoted the same way continue it.
    quote: u8,
    /// It holds a diff's header: the diff's lines continue it.
    diff: bool,
    /// Its step failed after an earlier step had failed already: the
    /// first failure usually explains the later ones.
    later_failure: bool,
    /// Its value when last computed while streaming (for eviction).
    rank: f32,
    /// Strength of the strongest recogniser matching one of its lines
    /// ([`crate::diagnose::line_strength`]).
    recognised: f32,
    /// Whether `recognised` was computed (a long log's later windows wait
    /// for [`State::finish`] once the budget is spent).
    checked: bool,
}

impl Window {
    /// Matches its first signal lines against the recognisers; returns how
    /// many lines were read.
    fn recognise(&mut self) -> usize {
        let signal = self
            .lines
            .iter()
            .filter(|s| !s.hidden && s.line.score > 0.0);
        let mut read = 0;
        for s in signal.take(RECOGNISE_PER_WINDOW) {
            read += 1;
            let strength = crate::diagnose::line_strength(&s.line.text);
            self.recognised = self.recognised.max(strength);
        }
        self.checked = true;
        read
    }

    fn add(&mut self, h: &Held, core: bool, nb: u64, cap: usize) {
        self.diff |= h.info.diff == Diff::Header;
        if core {
            self.end_nb = nb;
            self.last_no = h.no;
            let s = h.info.score.max(0.0);
            self.max_score = self.max_score.max(s);
            self.sum_score += s;
        }
        if let Some(prev) = self
            .lines
            .iter_mut()
            .find(|s| s.hash == h.hash && s.line.text == h.text)
        {
            prev.dups += 1;
            prev.core |= core;
        } else if self.lines.len() < cap {
            let line = ExcerptLine {
                line_no: h.no,
                text: h.text.clone(),
                score: h.info.score,
            };
            self.lines.push(Stored {
                line,
                hash: h.hash,
                core,
                dups: 0,
                hidden: h.info.header,
                wrapper: h.info.wrapper,
                frame: h.info.frame,
            });
        }
    }

    /// Whether `h` continues the block without signal of its own
    /// (`Some(true)`: deeper-indented, quoted the same way, a report item),
    /// or `None` if the block ended before it. Blank-line gaps of
    /// `paragraph_gap` lines or more separate paragraphs.
    fn continues(&self, h: &Held, core: bool, paragraph_gap: u32) -> Option<bool> {
        let deeper = h.info.indent >= self.indent.saturating_add(2);
        let paragraph = h.gap >= paragraph_gap;
        let in_report = self.report && !h.info.wrapper && (deeper || h.info.item || h.gap == 0);
        if self.report && !in_report && h.gap > 0 {
            // A report ends at the first paragraph that is not its list.
            return None;
        }
        let quoted = self.quote != 0 && h.info.quote == self.quote;
        // The diff an assertion prints under its message is its report.
        let diff = match h.info.diff {
            Diff::Header => h.gap <= 1,
            Diff::Line => self.diff && h.gap == 0,
            Diff::None => false,
        };
        if diff {
            return Some(true);
        }
        if !core && !quoted && paragraph && !deeper && h.info.indent == 0 {
            // A new top-level paragraph without signal ends the block.
            return None;
        }
        // Deeper-indented lines continue a block, but only for a while;
        // wrapper lines keep it open but are trimmed if nothing follows.
        Some((deeper && h.info.score >= 0.0 && !h.info.wrapper) || in_report || quoted)
    }

    /// Where its step's footer stands, as an index of [`FOOTER_WEIGHT`]:
    /// a failed step's footer close after it, farther, far; a passed
    /// step's (after a failure, close, far); none after the last failed
    /// step (cleanup, artifact uploads, ...); none at all.
    fn footer_bucket(&self, near: u64, failed_before: bool) -> usize {
        match self.footer {
            Some((Footer::Failed, d)) if d <= 3 => 0,
            Some((Footer::Failed, d)) if d <= near => 1,
            Some((Footer::Failed, d)) if d <= 4 * near => 2,
            Some((Footer::Failed, _)) => 3,
            Some((Footer::Succeeded, _)) if failed_before => 4,
            Some((Footer::Succeeded, d)) if d <= near => 5,
            Some((Footer::Succeeded, _)) => 6,
            _ if failed_before => 7,
            _ => 8,
        }
    }

    /// Its signal lines, and how many of them repeat elsewhere in the log.
    fn repetition(&self, sketch: &Sketch) -> (u32, u32) {
        let signal = self.lines.iter().filter(|s| s.core && s.line.score > 0.0);
        signal.fold((0u32, 0u32), |(n, r), s| {
            (n + 1, r + u32::from(sketch.count(s.hash) > s.dups + 3))
        })
    }

    /// The quantities that describe it to the ranker, one per
    /// [`super::ranker::FEATURES`] column.
    fn features(
        &self,
        sketch: &Sketch,
        total_lines: u64,
        near: u64,
        failed_before: bool,
    ) -> Vec<f32> {
        let bucket = self.footer_bucket(near, failed_before);
        let (n, repeated) = self.repetition(sketch);
        let mut f = vec![
            self.max_score,
            (self.sum_score - self.max_score).max(0.0).ln_1p(),
        ];
        for b in 0..FOOTER_WEIGHT.len() {
            f.push(if b == bucket { 1.0 } else { 0.0 });
        }
        f.push(self.later_failure as u8 as f32);
        f.push(self.recognised);
        f.push(if n > 0 {
            repeated as f32 / n as f32
        } else {
            0.0
        });
        f.push(self.last_no as f32 / total_lines.max(1) as f32);
        f.push(self.tail as u8 as f32);
        f.push((self.lines.len() as f32).ln_1p());
        f.push(self.report as u8 as f32);
        f.push(self.frame_share());
        f
    }

    /// The share of its shown lines that are stack frames: an uncaught
    /// error's or a failed assertion's report, whatever the language.
    fn frame_share(&self) -> f32 {
        let (shown, frames) = self
            .lines
            .iter()
            .filter(|s| !s.hidden)
            .fold((0u32, 0u32), |(n, f), s| (n + 1, f + u32::from(s.frame)));
        if shown == 0 {
            0.0
        } else {
            frames as f32 / shown as f32
        }
    }

    /// Score used to rank windows once the whole log is seen.
    fn value(&self, sketch: &Sketch, total_lines: u64, near: u64, failed_before: bool) -> f32 {
        let mut v = self.max_score + (self.sum_score - self.max_score).max(0.0).ln_1p();
        v *= FOOTER_WEIGHT[self.footer_bucket(near, failed_before)];
        if self.later_failure {
            v *= LATER_FAILURE;
        }
        v *= 1.0 + RECOGNISED * self.recognised;
        // Lines repeated elsewhere in the log are rarely the explanation.
        let (n, repeated) = self.repetition(sketch);
        if n > 0 {
            v *= 1.0 - 0.6 * repeated as f32 / n as f32;
        }
        let pos = self.last_no as f32 / total_lines.max(1) as f32;
        v * (0.8 + 0.4 * pos)
    }
}

pub(super) struct State<'o> {
    opts: &'o ExcerptOptions,
    total_lines: u64,
    total_bytes: u64,
    /// Non-blank lines that are not wrappers: distances to a footer are
    /// counted in them (`npm ERR!` and `make: ***` lines between a block
    /// and its step's footer point back at the block).
    nonblank: u64,
    blank_run: u32,
    /// Moving share of non-blank lines preceded by a blank one: near 1 in
    /// double-spaced logs, where one blank line is no paragraph break.
    spaced: f32,
    ring: VecDeque<Held>,
    open: Option<Window>,
    pool: Vec<Window>,
    sketch: Sketch,
    /// Last line of the latest window (leading context never reuses lines).
    last_window_no: u64,
    /// Latest step boundary or footer: the fallback tail starts after it.
    step_start_no: u64,
    failed_footer: bool,
    /// The command echoed at the start of the current step, if any.
    step_command: Option<String>,
    failed_steps: Vec<FailedStep>,
    /// Lines of steps whose footer says they passed ([`Excerpt::passed_steps`]).
    passed_steps: Vec<(u64, u64)>,
    /// Flush-left frames under a signal line ([`Excerpt::trace`]), and the
    /// line a next one must follow closely (the latest signal line or
    /// frame).
    trace: Vec<(u64, String)>,
    trace_from: u64,
    /// Lines the recognisers may still read ([`RECOGNISE_BUDGET`]).
    recognise_budget: usize,
    /// Located lines the recognisers may still read ([`ANCHOR_BUDGET`]).
    anchor_budget: usize,
    /// Compiler and linter report lines with a source location, in log
    /// order (at most [`MAX_REPORTED`]).
    reported: Vec<ExcerptLine>,
    /// Brackets of tests that passed.
    passed: super::passed::PassedTests,
}

/// Located lines read by the recognisers per log.
const ANCHOR_BUDGET: usize = 20_000;

/// How decisive a recogniser of a cause (a dependency, the configuration,
/// the machine) must be on a build tool's wrapper line for the line to be
/// the failure's own rather than a summary of it.
const CAUSE_IN_WRAPPER: f32 = 0.7;
/// Longest text kept of a reported line.
const MAX_REPORTED_CHARS: usize = 500;

/// Whether a line carries a source location (`a.js:3:9`, `line 3, col 9`,
/// `a.rb:12:`, `a.ts(3,9)`): the shape of most tools' report lines.
fn located(clean: &str) -> bool {
    let b = clean.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    (0..b.len()).any(|i| match b[i] {
        b':' => digit(i + 1),
        // `(3,9)` and `(3)`, not `(1 of 3)`.
        b'(' => {
            digit(i + 1)
                && b[i + 1..]
                    .iter()
                    .find(|c| !c.is_ascii_digit())
                    .is_some_and(|c| matches!(c, b',' | b')'))
        }
        _ => false,
    }) || clean.contains(", col ")
}

/// Longest command text kept for a failed step.
const MAX_COMMAND_CHARS: usize = 300;

fn command_text(s: &str) -> String {
    crate::text::truncate_chars(s.trim(), MAX_COMMAND_CHARS).to_string()
}

/// Command and exit code named by a failure footer.
fn footer_parts(clean: &str) -> (Option<String>, Option<i32>) {
    static PARTS: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"(?i)^the command "(.*)" (?:failed and )?exited with (-?\d+)|exit code (-?\d+)|exited with (?:code )?(-?\d+)"#)
            .expect("valid regex")
    });
    match PARTS.captures(clean.trim()) {
        Some(c) => {
            let code = [2, 3, 4]
                .iter()
                .find_map(|i| c.get(*i))
                .and_then(|m| m.as_str().parse().ok());
            (c.get(1).map(|m| command_text(m.as_str())), code)
        }
        None => (None, None),
    }
}

impl<'o> State<'o> {
    pub(super) fn new(opts: &'o ExcerptOptions) -> Self {
        Self {
            opts,
            total_lines: 0,
            total_bytes: 0,
            nonblank: 0,
            blank_run: 0,
            spaced: 0.0,
            ring: VecDeque::with_capacity(RING),
            open: None,
            pool: Vec::new(),
            sketch: Sketch::new(),
            last_window_no: 0,
            step_start_no: 0,
            failed_footer: false,
            step_command: None,
            failed_steps: Vec::new(),
            passed_steps: Vec::new(),
            trace: Vec::new(),
            trace_from: 0,
            recognise_budget: RECOGNISE_BUDGET,
            anchor_budget: ANCHOR_BUDGET,
            reported: Vec::new(),
            passed: super::passed::PassedTests::default(),
        }
    }

    /// Feeds one raw line (without its terminator) of `len` bytes on disk.
    pub(super) fn push(&mut self, raw: &str, len: u64) {
        self.total_bytes += len;
        self.total_lines += 1;
        let (clean, tag) = clean_line_tagged(raw);
        self.passed.push(self.total_lines, &clean);
        let mut info = analyse(&clean, tag, raw.contains('\x1b') && is_red(raw));
        // A line the job's last green log printed too is its usual noise:
        // never an anchor or signal, at most context inside a block.
        let known = info.score >= 0.0
            && !info.blank
            && (self.opts.baseline.as_ref()).is_some_and(|b| b.knows(&clean));
        if known {
            info.score = 0.0;
        } else if info.wrapper && self.anchor_budget > 0 {
            // A wrapper that names the cause itself (`npm ERR! missing
            // script: lint`, Maven's `Failed to execute goal …: Could not
            // resolve dependencies …`) is the failure's own line, not a
            // summary pointing elsewhere; bounded per log like the
            // compilers' reports below.
            self.anchor_budget -= 1;
            if crate::diagnose::cause_strength(&clean) >= CAUSE_IN_WRAPPER {
                info.wrapper = false;
                info.score = info.score.max(ANCHOR);
            }
        } else if info.score >= 0.0
            && !info.blank
            && !info.wrapper
            && self.anchor_budget > 0
            && located(&clean)
        {
            // A line a recogniser reads as a compiler's or linter's own
            // report anchors a block even without failure words, and is
            // kept for the list of every diagnostic (annotations); bounded
            // per log, located lines only.
            self.anchor_budget -= 1;
            let strength = crate::diagnose::code_report_strength(&clean);
            if strength >= 0.9 {
                info.score = info.score.max(ANCHOR);
            }
            if strength > 0.0
                && self.reported.len() < MAX_REPORTED
                && !crate::diagnose::warning_only(&clean)
            {
                self.reported.push(ExcerptLine {
                    line_no: self.total_lines,
                    text: crate::text::truncate_chars(raw, MAX_REPORTED_CHARS).to_string(),
                    score: info.score,
                });
            }
        }
        if info.blank {
            self.blank_run += 1;
            return;
        }
        if !info.wrapper {
            self.nonblank += 1;
        }
        // Frames are looked for only where one changes something: right
        // under a signal line or a kept frame, and on a signal line (one
        // that is itself a frame starts no trace).
        let near = self.trace_from > 0 && self.total_lines - self.trace_from <= TRACE_GAP;
        if (near || info.score >= ANCHOR) && is_flush_frame(&clean) {
            if near && self.trace.len() < MAX_TRACE {
                self.trace
                    .push((self.total_lines, clean.trim().to_string()));
                self.trace_from = self.total_lines;
            }
        } else if info.score >= ANCHOR {
            self.trace_from = self.total_lines;
        }
        if let Some(w) = &self.open {
            info.item = w.report && is_item(&clean);
            // Frames of quoted output (`=     #0 0x.. in f`) count too.
            let body = if info.quote != 0 {
                clean.trim_start_matches(char::from(info.quote))
            } else {
                &clean
            };
            info.frame = is_frame(body);
        }
        let hash = line_hash(&clean);
        self.sketch.add(hash);
        // Reuse the oldest ring slot's allocation.
        let mut text = if self.ring.len() >= RING {
            self.ring.pop_front().map(|h| h.text).unwrap_or_default()
        } else {
            String::new()
        };
        text.clear();
        text.push_str(raw);
        let held = Held {
            no: self.total_lines,
            text,
            info,
            hash,
            gap: self.blank_run,
            known,
        };
        self.spaced += 0.05 * (f32::from(u8::from(self.blank_run > 0)) - self.spaced);
        self.blank_run = 0;
        if info.footer != Footer::None {
            if info.footer == Footer::Failed && self.failed_steps.len() < MAX_FAILED_STEPS {
                let (command, exit_code) = footer_parts(&clean);
                self.failed_steps.push(FailedStep {
                    line_no: held.no,
                    command: command.or_else(|| self.step_command.clone()),
                    exit_code,
                });
            }
            self.on_footer(info.footer);
        } else if info.boundary {
            self.close();
            // An echoed command starts a new step.
            let starts_step = tag == LineTag::Command
                || clean.starts_with("$ ")
                || (tag == LineTag::Marker && clean.starts_with("Run "));
            if starts_step {
                self.step_start_no = held.no;
                let text = clean.trim();
                let text = text
                    .strip_prefix("$ ")
                    .or_else(|| text.strip_prefix("Run "))
                    .unwrap_or(text);
                self.step_command = Some(command_text(text));
            }
        } else {
            self.grow(&held);
        }
        self.ring.push_back(held);
    }

    fn grow(&mut self, h: &Held) {
        let (cap, nb) = (self.opts.max_lines, self.nonblank);
        let core = (h.info.score >= 1.0 && !h.info.wrapper) || h.info.frame;
        let paragraph_gap = if self.spaced > 0.6 { 2 } else { 1 };
        if let Some(w) = self.open.as_mut() {
            if let Some(cont) = w.continues(h, core, paragraph_gap) {
                if h.info.score >= ANCHOR {
                    w.indent = w.indent.min(h.info.indent);
                }
                w.add(h, core || cont, nb, cap);
                w.quiet = match () {
                    _ if core => 0.0,
                    _ if cont => w.quiet + 0.25,
                    _ if h.info.wrapper => w.quiet + 0.5,
                    _ => w.quiet + 1.0,
                };
                if w.quiet > self.opts.context_after as f32 {
                    self.close();
                }
                return;
            }
            // The block ended before this line, which may start the next.
            self.close();
        }
        if h.info.score < ANCHOR {
            return;
        }
        let mut w = Window {
            indent: h.info.indent,
            report: h.info.header,
            quote: h.info.quote,
            ..Window::default()
        };
        // Leading context: contiguous non-noise lines not used already.
        let mut lead: Vec<&Held> = Vec::new();
        let mut gap = h.gap;
        // A report header starts its own section: nothing leads into it.
        let lead_room = if h.info.header {
            0
        } else {
            self.opts.context_before.min(8)
        };
        for prev in self.ring.iter().rev().take(lead_room) {
            if gap > 1
                || prev.info.wrapper
                || prev.no <= self.last_window_no
                || prev.info.boundary
                || prev.info.score < 0.0
                || is_noise(&clean_line(&prev.text))
            {
                break;
            }
            lead.push(prev);
            gap = prev.gap;
        }
        for prev in lead.into_iter().rev() {
            w.add(prev, false, nb, cap);
            if let Some(s) = w.lines.last_mut() {
                s.core = true;
            }
        }
        w.add(h, true, nb, cap);
        self.open = Some(w);
    }

    fn close(&mut self) {
        self.close_before(Footer::None);
    }

    /// Closes the open window; right before a failed step's footer, the
    /// weak signal lines it was waiting on are the step's last words and
    /// stay.
    fn close_before(&mut self, footer: Footer) {
        if let Some(mut w) = self.open.take() {
            if footer == Footer::Failed {
                for s in w.lines.iter_mut().rev() {
                    if s.core || s.wrapper || s.line.score <= 0.0 {
                        break;
                    }
                    s.core = true;
                }
            }
            // Drop trailing lines that only waited for more signal.
            while w.lines.last().is_some_and(|s| !s.core) {
                w.lines.pop();
            }
            self.last_window_no = w.last_no;
            self.keep(w);
        }
    }

    fn on_footer(&mut self, footer: Footer) {
        self.close_before(footer);
        let nb = self.nonblank;
        let later = self.failed_footer;
        let (total, near) = (self.total_lines, self.opts.footer_distance);
        let failed = later || footer == Footer::Failed;
        for w in self.pool.iter_mut().filter(|w| w.footer.is_none()) {
            w.footer = Some((footer, nb - w.end_nb));
            w.later_failure = later;
            w.rank = w.value(&self.sketch, total, near, failed);
        }
        if footer == Footer::Failed {
            self.keep_tail(Some((footer, 0)));
            self.failed_footer = true;
        }
        if footer == Footer::Succeeded
            && self.step_start_no + 1 < self.total_lines
            && self.passed_steps.len() < MAX_PASSED_STEPS
        {
            self.passed_steps
                .push((self.step_start_no + 1, self.total_lines - 1));
        }
        self.step_start_no = self.total_lines;
    }

    /// The last lines of a failed step (or of a log without step footers)
    /// form a weak fallback window. Trailing wrapper lines (`make: ***
    /// Error 1`, `error Command failed`) point at what precedes them.
    fn keep_tail(&mut self, footer: Option<(Footer, u64)>) {
        let start = self.step_start_no;
        let mut lines: Vec<&Held> = self
            .ring
            .iter()
            .filter(|h| h.no > start && !h.info.boundary && h.info.score >= 0.0 && !h.known)
            .collect();
        if let Some(last) = lines.iter().rposition(|h| !h.info.wrapper) {
            lines.truncate(last + 1);
        } else {
            // Nothing but the wrapper's own words (`npm ERR! code
            // ELIFECYCLE`, `npm ERR! Failed at the x postinstall script`):
            // they are the step's last words. Its lines with failure words
            // of their own, not just its prefix, say what failed.
            let floor = lines
                .iter()
                .map(|h| h.info.score)
                .fold(f32::INFINITY, f32::min);
            if lines.iter().any(|h| h.info.score > floor) {
                lines.retain(|h| h.info.score > floor);
            }
        }
        // The step's last paragraph, at most TAIL lines.
        let mut skip = lines.len().saturating_sub(TAIL);
        if let Some(k) = lines[skip..].iter().rposition(|h| h.gap > 0) {
            skip += k;
        }
        let mut w = Window {
            tail: true,
            footer,
            later_failure: self.failed_footer,
            ..Window::default()
        };
        for h in &lines[skip..] {
            w.add(h, true, self.nonblank, self.opts.max_lines);
        }
        w.max_score = 1.0;
        w.sum_score = 1.0;
        self.keep(w);
    }

    /// Adds a window to the bounded pool, evicting the weakest older one.
    fn keep(&mut self, mut w: Window) {
        if w.lines.is_empty() {
            return;
        }
        if self.recognise_budget >= RECOGNISE_PER_WINDOW {
            self.recognise_budget -= w.recognise();
        }
        let (total, near) = (self.total_lines, self.opts.footer_distance);
        w.rank = w.value(&self.sketch, total, near, self.failed_footer);
        self.pool.push(w);
        if self.pool.len() <= self.opts.max_windows.max(4) {
            return;
        }
        // Recent windows may still get a footer: evict among older ones,
        // by their value when last computed.
        let older = self.pool.len() - 3;
        let weakest = (0..older).min_by(|&a, &b| self.pool[a].rank.total_cmp(&self.pool[b].rank));
        self.pool.remove(weakest.unwrap_or(0));
    }

    pub(super) fn finish(mut self) -> Excerpt {
        self.close();
        if !self.failed_footer {
            // No failed step footer: the log may have been cut or killed.
            self.keep_tail(Some((Footer::Failed, 0)));
        }
        let (opts, total, failed) = (self.opts, self.total_lines, self.failed_footer);
        let mut candidates = Vec::new();
        let passed = std::mem::take(&mut self.passed).finish();
        // What a test printed before its runner said it passed (a logged
        // connection error, an expected exception's trace) is not why the
        // job failed: a block of such lines only is no candidate while
        // another block is.
        let printed_by_a_passed_test = |w: &Window| {
            !w.tail
                && w.lines
                    .iter()
                    .filter(|s| !s.hidden)
                    .all(|s| super::passed::inside(&passed, s.line.line_no))
        };
        let (printed, others): (Vec<Window>, Vec<Window>) = std::mem::take(&mut self.pool)
            .into_iter()
            .partition(printed_by_a_passed_test);
        let pool = if others.is_empty() { printed } else { others };
        let windows: Vec<Window> = pool
            .into_iter()
            .map(|mut w| {
                // The pool is small: windows the budget skipped are
                // recognised now, so the last blocks of a noisy log
                // compete on equal terms.
                if !w.checked {
                    w.recognise();
                }
                w
            })
            .collect();
        // Two rankings of the same blocks: the learned one chooses the
        // lines people are shown (closest to what a person marks, on
        // repositories nobody here read); the hand-set one chooses the
        // lines the diagnosis reads (its rules were written against that
        // choice, and the learned choice costs them answers on unseen
        // repositories: docs/diagnosis-model.md, session 5). The
        // diagnosis still reads the machine's and the network's findings
        // of the block shown (session 21).
        let mut shown_order = Vec::with_capacity(windows.len());
        let mut read_order = Vec::with_capacity(windows.len());
        for (i, w) in windows.iter().enumerate() {
            let f = w.features(&self.sketch, total, opts.footer_distance, failed);
            if opts.candidates {
                candidates.push(Candidate {
                    line_nos: w
                        .lines
                        .iter()
                        .filter(|s| !s.hidden)
                        .map(|s| s.line.line_no)
                        .collect(),
                    features: f.clone(),
                });
            }
            shown_order.push((super::ranker::value(&f), i));
            read_order.push((
                w.value(&self.sketch, total, opts.footer_distance, failed),
                i,
            ));
        }
        let (lines, _) = select(&windows, shown_order.clone(), opts.secondary_ratio, opts);
        let (likely, _) = select(&windows, shown_order, opts.likely_ratio, opts);
        let (read, rest) = select(&windows, read_order, opts.read_ratio, opts);
        let aside = aside_lines(rest.into_iter().map(|i| &windows[i]), &read, failed);
        // Each is stored only when it differs from what it falls back to
        // (Excerpt::read_lines, Excerpt::likely_lines).
        let evidence = if read == likely { Vec::new() } else { read };
        let likely = if likely == lines { Vec::new() } else { likely };
        let skip = self.ring.len().saturating_sub(TAIL_LINES);
        let tail = self
            .ring
            .iter()
            .skip(skip)
            .map(|h| (h.no, clean_line(&h.text).trim().to_string()))
            .collect();
        Excerpt {
            lines,
            evidence,
            likely,
            total_lines: self.total_lines,
            total_bytes: self.total_bytes,
            failed_steps: self.failed_steps,
            tail,
            aside,
            reported: self.reported,
            passed,
            passed_steps: self.passed_steps,
            trace: self.trace,
            candidates,
        }
    }
}

/// The lines of the best block in `order` (value, index into `windows`)
/// and of any runner-up whose value reaches `ratio` of the best, in log
/// order, at most `max_lines`; and the blocks left out (not the fallback
/// tail's).
fn select(
    windows: &[Window],
    mut order: Vec<(f32, usize)>,
    ratio: f32,
    opts: &ExcerptOptions,
) -> (Vec<ExcerptLine>, Vec<usize>) {
    order.sort_by(|a, b| b.0.total_cmp(&a.0));
    let best = order.first().map_or(0.0, |r| r.0);
    let mut lines: Vec<ExcerptLine> = Vec::new();
    let mut rest = Vec::new();
    for (value, i) in order {
        let w = &windows[i];
        let room = opts.max_lines.saturating_sub(lines.len());
        if !rest.is_empty() || room == 0 || (!lines.is_empty() && value < ratio * best) {
            rest.push(i);
            continue;
        }
        if w.tail && !lines.is_empty() {
            continue;
        }
        let fresh: Vec<ExcerptLine> = w
            .lines
            .iter()
            .filter(|s| {
                !s.hidden
                    && !lines
                        .iter()
                        .any(|l| l.line_no == s.line.line_no || l.text == s.line.text)
            })
            .take(room)
            .map(|s| s.line.clone())
            .collect();
        lines.extend(fresh);
    }
    lines.sort_by_key(|l| l.line_no);
    (lines, rest)
}

/// The signal lines of the candidate blocks the excerpt left out that
/// belong to a step that failed (best blocks first, at most
/// [`MAX_ASIDE`]): a cause printed away from the report the excerpt shows
/// (a refused connection above a test report, a compile error before the
/// tests that it broke) is still evidence.
fn aside_lines<'w>(
    rest: impl Iterator<Item = &'w Window>,
    chosen: &[ExcerptLine],
    failed: bool,
) -> Vec<ExcerptLine> {
    let mut out: Vec<ExcerptLine> = Vec::new();
    for w in rest {
        let in_failed_step = match w.footer {
            Some((Footer::Failed, _)) => true,
            Some((Footer::Succeeded, _)) => false,
            _ => !failed,
        };
        if w.tail || !in_failed_step {
            continue;
        }
        for s in &w.lines {
            if out.len() >= MAX_ASIDE {
                return out;
            }
            if s.hidden || s.line.score < ANCHOR {
                continue;
            }
            let known = |l: &ExcerptLine| l.line_no == s.line.line_no || l.text == s.line.text;
            if !chosen.iter().any(known) && !out.iter().any(known) {
                out.push(s.line.clone());
            }
        }
    }
    out.sort_by_key(|l| l.line_no);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(no: u64, text: &str) -> Window {
        Window {
            lines: vec![Stored {
                line: ExcerptLine {
                    line_no: no,
                    text: text.into(),
                    score: 1.0,
                },
                hash: no,
                core: true,
                dups: 0,
                hidden: false,
                wrapper: false,
                frame: false,
            }],
            ..Window::default()
        }
    }

    #[test]
    fn a_runner_up_joins_when_it_reaches_the_ratio_of_the_best_and_the_likely_blocks_are_wider() {
        let opts = ExcerptOptions::default();
        let windows = [
            block(10, "error: the cause"),
            block(40, "FAILED: the report"),
            block(70, "warning: noise"),
        ];
        let order = vec![(1.0, 0), (0.6, 1), (0.3, 2)];
        let shown = |ratio| {
            let (lines, rest) = select(&windows, order.clone(), ratio, &opts);
            (lines.iter().map(|l| l.line_no).collect::<Vec<_>>(), rest)
        };
        // Shown: only close runners-up (a second block shown costs more
        // precision than the recall it brings).
        assert_eq!(shown(opts.secondary_ratio), (vec![10], vec![1, 2]));
        // Likely, for the machine's findings beside what is read: any block
        // the ranking finds at least half as likely.
        assert_eq!(shown(opts.likely_ratio), (vec![10, 40], vec![2]));
        // Read by the diagnosis: only close runners-up.
        assert_eq!(shown(opts.read_ratio), (vec![10], vec![1, 2]));
    }

    #[test]
    fn a_block_of_stack_frames_says_so_to_the_ranker() {
        // An uncaught error and its trace, then plain failure words: the
        // ranker reads the share of stack frames in each block.
        let opts = ExcerptOptions::default();
        let mut state = State::new(&opts);
        let lines = [
            "$ npm test",
            "TypeError: Cannot read property 'id' of undefined",
            "    at Cart.total (/home/travis/build/acme/shop/lib/cart.js:41:17)",
            "    at Context.<anonymous> (/home/travis/build/acme/shop/test/cart.js:12:5)",
            "    at processImmediate (internal/timers.js:456:21)",
            "",
            "",
            "error: the shop's checks failed",
            "npm ERR! Test failed.  See above for more details.",
            "The command \"npm test\" exited with 1.",
        ];
        for l in lines {
            state.push(l, l.len() as u64 + 1);
        }
        state.close();
        let frames = super::super::ranker::FEATURES
            .iter()
            .position(|f| *f == "frames")
            .unwrap();
        let (total, near) = (state.total_lines, opts.footer_distance);
        let share = |first: &str| {
            let w = state
                .pool
                .iter()
                .find(|w| w.lines.first().is_some_and(|s| s.line.text == first))
                .unwrap_or_else(|| panic!("a block starts with {first:?}"));
            w.features(&state.sketch, total, near, true)[frames]
        };
        // The trace's block runs on to the next signal line: three
        // frames of its five lines. The step's last words alone: none.
        assert_eq!(share(lines[1]), 0.6);
        assert_eq!(share(lines[7]), 0.0);
        assert!(super::super::ranker::RANKER.weights[frames] > 0.0);
    }

    #[test]
    fn wrapper_lines_do_not_push_a_block_away_from_its_footer() {
        // A block, the package manager's long wrapper epilogue, then the
        // step's footer: the block is still the step's last words.
        let opts = ExcerptOptions::default();
        let mut state = State::new(&opts);
        let mut lines = vec![
            "$ npm install".to_string(),
            "Error: Cannot find module 'left-pad'".into(),
            "    at require (internal/module.js:12:17)".into(),
        ];
        lines.extend((0..25).map(|i| format!("npm ERR! line {i} of the usual epilogue")));
        lines.push("The command \"npm install\" exited with 1.".into());
        for l in &lines {
            state.push(l, l.len() as u64 + 1);
        }
        let block = state
            .pool
            .iter()
            .find(|w| !w.tail && w.lines.iter().any(|s| s.line.text.contains("left-pad")))
            .expect("the block is a candidate");
        let (footer, distance) = block.footer.expect("the footer was seen");
        assert_eq!(footer, Footer::Failed);
        assert!(distance <= 3, "distance {distance}");
    }
}

//! Starter knowledge base of CI failure patterns and the heuristic classifier
//! built on it.
//!
//! The knowledge base (`analysis/kb/patterns.json`, compiled into the binary) is
//! a list of [`KbEntry`]s: a documented failure mode with a category, regex
//! signatures, symptoms, root cause and fix. [`Classifier`] compiles every
//! signature of every entry into one [`regex::RegexSet`] and uses it to
//!
//! * report [`SignatureHit`]s for individual log lines ([`Classifier::hits`]),
//!   which the agent can use as cheap, explainable evidence, and
//! * produce a whole-log verdict ([`Classifier::classify`]): one of
//!   [`CATEGORIES`] (or [`UNKNOWN`]) with a confidence in `0..=1`.
//!
//! # Scoring
//!
//! Deterministic, no learned parameters:
//!
//! 1. **Per line, per category** only the strongest hit counts (a line that
//!    matches two overlapping CODE_ERROR entries is one piece of evidence).
//! 2. **Per slug, diminishing returns**: the k-th counted hit (k = 0, 1, ...)
//!    of the same entry contributes `weight * 0.5^k`, so one entry can never
//!    contribute more than `2 * weight`, however often it repeats.
//! 3. **Per category, corroboration**: slug contributions are sorted in
//!    descending order and the i-th adds `contribution * 0.35^i`. Distinct
//!    entries agreeing raise the score, but a pile of generic "aftermath"
//!    lines (`make: *** Error 1`, `error: could not compile`, `BUILD FAILURE`)
//!    cannot outweigh one specific signal of another category.
//! 4. **Infra explains tests** (domain rule): when the log has TEST_FAILURE
//!    evidence *and* at least one *strong* INFRA_ERROR hit (entry weight
//!    ≥ [`STRONG_INFRA_WEIGHT`]: OOM kill, heap exhaustion, disk full, DNS
//!    failure, job timeout, runner lost, Docker daemon down, rate limit), the
//!    TEST_FAILURE score is multiplied by [`TEST_SYMPTOM_FACTOR`] (0.3). Tests
//!    that fail because the machine ran out of memory/disk, could not resolve
//!    hosts or was killed by the runner are symptoms, not the cause. Weak
//!    infra signals (connection refused/reset, generic network timeouts,
//!    5xx, git) do not trigger the rule: they are as often caused by the test
//!    setup itself.
//! 5. The category with the highest score wins; exact ties are broken by the
//!    fixed order INFRA_ERROR, DEPENDENCY_ERROR, CONFIG_ERROR, CODE_ERROR,
//!    TEST_FAILURE (root causes before symptoms).
//! 6. **Supporting evidence cannot win**: entries with weight below
//!    [`SUPPORTING_WEIGHT`] (generic aftermath such as `make: *** Error 2`,
//!    `BUILD FAILURE`, a bare `Traceback`) say that something failed, not
//!    why. A category whose hits are all of that kind is skipped when picking
//!    the winner; if no category has stronger evidence the verdict is
//!    [`UNKNOWN`] (the hits are still reported).
//!
//! Confidence: with no (decisive) hits the verdict is [`UNKNOWN`] at 0.2.
//! Otherwise, with `s1` the winner's score and `s2` the best other score,
//! `strength = s1³ / (s1³ + 0.17)`, `margin = 1 - min(s2 / s1, 1)²` and
//! `confidence = 0.2 + 0.78 * strength * (0.5 + 0.5 * margin)` (capped at
//! 0.99). One weak hit (weight ≈ 0.5) gives ≈ 0.55, one strong unambiguous
//! hit (weight ≥ 0.85) gives ≥ 0.8, corroborating hits push towards 0.95, and
//! two categories with similar scores pull the confidence down towards 0.5.
//!
//! Lines are expected to be cleaned of ANSI escapes already. Only the first
//! [`MAX_MATCH_BYTES`] bytes of a line are matched, and a hit stores at most
//! [`MAX_HIT_LINE_CHARS`] characters of the line.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use regex::{Regex, RegexSet, RegexSetBuilder};
use serde::{Deserialize, Serialize};

use crate::text::{self, truncate_bytes};

/// Valid categories, in the canonical order used for reporting scores.
pub const CATEGORIES: [&str; 5] = [
    "CODE_ERROR",
    "INFRA_ERROR",
    "CONFIG_ERROR",
    "DEPENDENCY_ERROR",
    "TEST_FAILURE",
];

/// Category reported when no signature matched.
pub const UNKNOWN: &str = "UNKNOWN";

/// Confidence reported for [`UNKNOWN`] verdicts.
pub const UNKNOWN_CONFIDENCE: f32 = 0.2;

/// Minimum entry weight for an INFRA_ERROR hit to "explain" test failures.
pub const STRONG_INFRA_WEIGHT: f32 = 0.8;

/// Factor applied to the TEST_FAILURE score when a strong infra hit is present.
pub const TEST_SYMPTOM_FACTOR: f32 = 0.3;

/// Entries lighter than this are supporting evidence only (see module docs).
pub const SUPPORTING_WEIGHT: f32 = 0.4;

/// Decay for repeated hits of the same entry (k-th repeat counts `DECAY^k`).
pub const REPEAT_DECAY: f32 = 0.5;

/// Decay for additional distinct entries within a category.
pub const CORROBORATION_DECAY: f32 = 0.35;

/// Maximum number of hits returned in a [`Classification`].
pub const MAX_CLASSIFICATION_HITS: usize = 10;

/// Maximum number of hits of a single entry returned in a [`Classification`].
pub const MAX_HITS_PER_SLUG: usize = 3;

/// Only this many leading bytes of a line are matched against the signatures.
pub const MAX_MATCH_BYTES: usize = 4096;

/// A [`SignatureHit`] keeps at most this many characters of the line.
pub const MAX_HIT_LINE_CHARS: usize = 500;

const INFRA: &str = "INFRA_ERROR";
const TEST: &str = "TEST_FAILURE";

/// Tie-break order between categories with exactly equal scores.
const TIE_BREAK_ORDER: [&str; 5] = [
    "INFRA_ERROR",
    "DEPENDENCY_ERROR",
    "CONFIG_ERROR",
    "CODE_ERROR",
    "TEST_FAILURE",
];

static PATTERNS_JSON: &str = include_str!("../kb/patterns.json");

static BUILTIN: LazyLock<Vec<KbEntry>> = LazyLock::new(|| {
    parse_entries(PATTERNS_JSON).expect("built-in kb/patterns.json must be valid JSON")
});

static BUILTIN_CLASSIFIER: LazyLock<Classifier> = LazyLock::new(|| {
    Classifier::new(builtin()).expect("built-in kb/patterns.json signatures must compile")
});

/// One documented CI failure pattern.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KbEntry {
    /// Stable identifier, lowercase kebab-case, unique.
    pub slug: String,
    /// Short human-readable name.
    pub title: String,
    /// One of [`CATEGORIES`].
    pub category: String,
    /// Rust `regex` patterns matched against single (ANSI-free) log lines.
    pub signatures: Vec<String>,
    /// Search keywords for knowledge-base lookups.
    pub keywords: Vec<String>,
    /// What shows up in the log.
    pub symptoms: String,
    /// Why it happens.
    pub root_cause: String,
    /// How to fix it.
    pub fix: String,
    /// Realistic log lines; each must be matched by one of `signatures`.
    pub examples: Vec<String>,
    /// Strength of the evidence in `(0, 1]`.
    pub weight: f32,
}

/// The starter knowledge base compiled into the binary.
pub fn builtin() -> &'static [KbEntry] {
    &BUILTIN
}

/// The built-in entry with this slug, if any.
pub fn lookup(slug: &str) -> Option<&'static KbEntry> {
    builtin().iter().find(|e| e.slug == slug)
}

/// Parses a knowledge-base JSON array. Only JSON/shape errors are reported;
/// use [`validate`] for semantic checks.
pub fn parse_entries(json: &str) -> Result<Vec<KbEntry>, serde_json::Error> {
    serde_json::from_str(json)
}

/// Checks entries for semantic problems: slug format and uniqueness, valid
/// category, weight in `(0, 1]`, non-empty texts, every signature compiles and
/// every example is matched by at least one signature of its own entry.
/// Returns all problems found, one per line.
pub fn validate(entries: &[KbEntry]) -> Result<(), String> {
    let mut problems = Vec::new();
    let mut seen = HashSet::new();
    for (i, e) in entries.iter().enumerate() {
        let who = if e.slug.is_empty() {
            format!("entry #{i}")
        } else {
            format!("entry #{i} `{}`", e.slug)
        };
        if e.slug.is_empty()
            || !e
                .slug
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            problems.push(format!(
                "{who}: slug must be non-empty lowercase kebab-case"
            ));
        }
        if !seen.insert(e.slug.as_str()) {
            problems.push(format!("{who}: duplicate slug"));
        }
        if !CATEGORIES.contains(&e.category.as_str()) {
            problems.push(format!("{who}: invalid category `{}`", e.category));
        }
        if !(e.weight.is_finite() && e.weight > 0.0 && e.weight <= 1.0) {
            problems.push(format!("{who}: weight {} not in (0, 1]", e.weight));
        }
        for (field, value) in [
            ("title", &e.title),
            ("symptoms", &e.symptoms),
            ("root_cause", &e.root_cause),
            ("fix", &e.fix),
        ] {
            if value.trim().is_empty() {
                problems.push(format!("{who}: empty {field}"));
            }
        }
        if e.signatures.is_empty() {
            problems.push(format!("{who}: no signatures"));
        }
        if e.examples.is_empty() {
            problems.push(format!("{who}: no examples"));
        }
        let mut compiled = Vec::with_capacity(e.signatures.len());
        for sig in &e.signatures {
            match Regex::new(sig) {
                Ok(re) => compiled.push(re),
                Err(err) => {
                    problems.push(format!("{who}: signature {sig:?} does not compile: {err}"))
                }
            }
        }
        if compiled.len() == e.signatures.len() {
            for ex in &e.examples {
                if !compiled.iter().any(|re| re.is_match(ex)) {
                    problems.push(format!(
                        "{who}: example not matched by any signature: {ex:?}"
                    ));
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// Searches the built-in knowledge base; see [`search_entries`].
pub fn search(query: &str, limit: usize) -> Vec<&'static KbEntry> {
    let matched = Classifier::builtin().matching_entries(query);
    rank_entries(builtin(), query, limit, |i| matched.contains(&i))
}

/// Ranks entries for a free-text query (keywords or a raw log line).
///
/// A query that is itself matched by an entry's signature ranks that entry
/// first; otherwise query words are scored against slug, keywords, title and
/// the descriptive texts. Entries with no match are omitted. Deterministic:
/// ties keep knowledge-base order. Compiles the signatures on every call;
/// prefer [`search`] for the built-in knowledge base.
pub fn search_entries<'a>(entries: &'a [KbEntry], query: &str, limit: usize) -> Vec<&'a KbEntry> {
    rank_entries(entries, query, limit, |i| {
        entries[i]
            .signatures
            .iter()
            .any(|s| Regex::new(s).is_ok_and(|re| re.is_match(query)))
    })
}

fn rank_entries<'a>(
    entries: &'a [KbEntry],
    query: &str,
    limit: usize,
    signature_matches: impl Fn(usize) -> bool,
) -> Vec<&'a KbEntry> {
    let q = query.to_lowercase();
    let words: Vec<&str> = q
        .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .map(|w| w.trim_matches(|c: char| c == '.' || c == '-'))
        .filter(|w| w.chars().count() >= 2)
        .collect();
    let mut scored: Vec<(f32, usize)> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let mut score = 0.0f32;
        if signature_matches(i) {
            score += 10.0 * e.weight;
        }
        let slug_words: Vec<&str> = e.slug.split('-').collect();
        let title = e.title.to_lowercase();
        let text = format!("{} {} {}", e.symptoms, e.root_cause, e.fix).to_lowercase();
        for w in &words {
            if e.slug == *w || slug_words.contains(w) {
                score += 3.0;
            }
            if e.keywords.iter().any(|k| k.to_lowercase() == *w) {
                score += 3.0;
            } else if e.keywords.iter().any(|k| k.to_lowercase().contains(w)) {
                score += 1.5;
            }
            if title.contains(w) {
                score += 1.5;
            }
            if text.contains(w) {
                score += 0.5;
            }
        }
        if score > 0.0 {
            scored.push((score, i));
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(limit)
        .map(|(_, i)| &entries[i])
        .collect()
}

/// One knowledge-base entry matching one log line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SignatureHit {
    pub slug: String,
    pub category: String,
    pub line_no: u64,
    /// The matched line (truncated to [`MAX_HIT_LINE_CHARS`] characters).
    pub line: String,
    pub weight: f32,
}

/// Whole-log verdict produced by [`Classifier::classify`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Classification {
    /// One of [`CATEGORIES`], or [`UNKNOWN`] when nothing (decisive) matched.
    pub category: String,
    /// `0..=1`; see the module docs for the formula.
    pub confidence: f32,
    /// Evidence: the winning category's hits first, then by weight (desc) and
    /// line number (may be non-empty for [`UNKNOWN`]: supporting evidence); at most [`MAX_CLASSIFICATION_HITS`], at most
    /// [`MAX_HITS_PER_SLUG`] per entry.
    pub hits: Vec<SignatureHit>,
    /// Final score per category (after the infra rule), highest first; every
    /// category of [`CATEGORIES`] is present.
    pub scores: Vec<(String, f32)>,
}

#[derive(Debug, Clone)]
struct EntryMeta {
    slug: String,
    category: String,
    weight: f32,
}

/// Matches text lines (already cleaned of ANSI) against every signature of a
/// knowledge base; all signatures are compiled once into one `RegexSet`.
#[derive(Debug, Clone)]
pub struct Classifier {
    set: RegexSet,
    /// Signature index (in `set`) -> entry index. Non-decreasing.
    sig_entry: Vec<usize>,
    entries: Vec<EntryMeta>,
}

impl Classifier {
    /// The classifier over [`builtin()`], compiled on first use.
    pub fn builtin() -> &'static Classifier {
        &BUILTIN_CLASSIFIER
    }

    /// Compiles the signatures of `entries`. Does not run [`validate`].
    pub fn new(entries: &[KbEntry]) -> Result<Classifier, regex::Error> {
        let mut patterns = Vec::new();
        let mut sig_entry = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            for sig in &e.signatures {
                patterns.push(ascii_word_boundaries(sig));
                sig_entry.push(i);
            }
        }
        let set = RegexSetBuilder::new(&patterns)
            .size_limit(256 * (1 << 20))
            .dfa_size_limit(64 * (1 << 20))
            .build()?;
        let entries = entries
            .iter()
            .map(|e| EntryMeta {
                slug: e.slug.clone(),
                category: e.category.clone(),
                weight: e.weight,
            })
            .collect();
        Ok(Classifier {
            set,
            sig_entry,
            entries,
        })
    }

    /// Number of entries this classifier was built from.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if built from an empty knowledge base.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Indices of entries with a signature matching `line`, ascending.
    fn matching_entries(&self, line: &str) -> Vec<usize> {
        let hay = truncate_bytes(line, MAX_MATCH_BYTES);
        if hay.trim().len() < 3 || !self.set.is_match(hay) {
            return Vec::new();
        }
        let mut out: Vec<usize> = Vec::new();
        for sig in self.set.matches(hay).iter() {
            let e = self.sig_entry[sig];
            if out.last() != Some(&e) {
                out.push(e);
            }
        }
        out
    }

    fn hit(&self, entry: usize, line_no: u64, line: &str) -> SignatureHit {
        let meta = &self.entries[entry];
        SignatureHit {
            slug: meta.slug.clone(),
            category: meta.category.clone(),
            line_no,
            line: truncate_chars(line, MAX_HIT_LINE_CHARS),
            weight: meta.weight,
        }
    }

    /// All entries matching one line, one hit per entry, strongest first
    /// (ties in knowledge-base order).
    pub fn hits(&self, line_no: u64, line: &str) -> Vec<SignatureHit> {
        let mut idx = self.matching_entries(line);
        idx.sort_by(|&a, &b| {
            self.entries[b]
                .weight
                .total_cmp(&self.entries[a].weight)
                .then(a.cmp(&b))
        });
        idx.into_iter()
            .map(|e| self.hit(e, line_no, line))
            .collect()
    }

    /// Classifies a whole log given as `(line_no, line)` pairs.
    pub fn classify(&self, lines: &[(u64, String)]) -> Classification {
        self.classify_iter(lines.iter().map(|(n, l)| (*n, l.as_str())))
    }

    /// Convenience: classifies raw text, numbering lines from 1.
    pub fn classify_text(&self, text: &str) -> Classification {
        self.classify_iter(text.lines().enumerate().map(|(i, l)| (i as u64 + 1, l)))
    }

    /// Matches every line, scores the categories (module docs), picks the
    /// winner and keeps its evidence.
    fn classify_iter<'a>(&self, lines: impl Iterator<Item = (u64, &'a str)>) -> Classification {
        let (mut matched, counted) = self.match_lines(lines);
        let categories = self.categories();
        if matched.is_empty() {
            return Classification {
                category: UNKNOWN.to_string(),
                confidence: UNKNOWN_CONFIDENCE,
                hits: Vec::new(),
                scores: categories.into_iter().map(|c| (c, 0.0)).collect(),
            };
        }
        let scores = self.scores(&categories, &counted, &matched);
        let (winner, confidence) = self.winner(&scores, &matched);
        let hits = self.evidence(&mut matched, &winner);
        Classification {
            category: winner,
            confidence,
            hits,
            scores,
        }
    }

    /// `(entry, line_no, line)` for every entry matching every line, and
    /// the entries counted for scoring: per line, per category the strongest.
    #[allow(clippy::type_complexity)]
    fn match_lines<'a>(
        &self,
        lines: impl Iterator<Item = (u64, &'a str)>,
    ) -> (Vec<(usize, u64, &'a str)>, Vec<usize>) {
        let mut matched = Vec::new();
        let mut counted = Vec::new();
        for (line_no, line) in lines {
            let idx = self.matching_entries(line);
            let mut best: Vec<usize> = Vec::new();
            for &e in &idx {
                matched.push((e, line_no, line));
                let cat = &self.entries[e].category;
                match best.iter_mut().find(|b| self.entries[**b].category == *cat) {
                    Some(b) if self.entries[e].weight > self.entries[*b].weight => *b = e,
                    Some(_) => {}
                    None => best.push(e),
                }
            }
            counted.extend(best);
        }
        (matched, counted)
    }

    /// [`CATEGORIES`], then any other category the entries name.
    fn categories(&self) -> Vec<String> {
        let mut categories: Vec<String> = CATEGORIES.iter().map(|c| c.to_string()).collect();
        for m in &self.entries {
            if !categories.contains(&m.category) {
                categories.push(m.category.clone());
            }
        }
        categories
    }

    /// Each category's score, rounded, highest first: per entry its
    /// repeats with diminishing returns, per category its entries
    /// corroborating each other, and strong infra evidence explaining
    /// test failures.
    fn scores(
        &self,
        categories: &[String],
        counted: &[usize],
        matched: &[(usize, u64, &str)],
    ) -> Vec<(String, f32)> {
        let mut repeats: HashMap<usize, i32> = HashMap::new();
        let mut contribution: Vec<f32> = vec![0.0; self.entries.len()];
        for &e in counted {
            let k = repeats.entry(e).or_insert(0);
            contribution[e] += self.entries[e].weight * REPEAT_DECAY.powi(*k);
            *k += 1;
        }
        let mut scores: Vec<(String, f32)> = categories
            .iter()
            .map(|cat| {
                let mut parts: Vec<f32> = self
                    .entries
                    .iter()
                    .zip(&contribution)
                    .filter(|(m, c)| m.category == *cat && **c > 0.0)
                    .map(|(_, c)| *c)
                    .collect();
                parts.sort_by(|a, b| b.total_cmp(a));
                let score = parts.iter().enumerate().fold(0.0f32, |acc, (i, c)| {
                    acc + c * CORROBORATION_DECAY.powi(i as i32)
                });
                (cat.clone(), score)
            })
            .collect();
        let strong_infra = matched.iter().any(|(e, _, _)| {
            let m = &self.entries[*e];
            m.category == INFRA && m.weight >= STRONG_INFRA_WEIGHT
        });
        for (cat, score) in &mut scores {
            if strong_infra && cat == TEST {
                *score *= TEST_SYMPTOM_FACTOR;
            }
            *score = round3(*score);
        }
        scores.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then(tie_rank(&a.0).cmp(&tie_rank(&b.0)))
        });
        scores
    }

    /// The best-scoring category with at least one decisive hit, and its
    /// confidence; [`UNKNOWN`] when none has one.
    fn winner(&self, scores: &[(String, f32)], matched: &[(usize, u64, &str)]) -> (String, f32) {
        let decisive = |cat: &str| {
            matched.iter().any(|(e, _, _)| {
                let m = &self.entries[*e];
                m.category == cat && m.weight >= SUPPORTING_WEIGHT
            })
        };
        let Some(w) = scores.iter().position(|(c, _)| decisive(c)) else {
            return (UNKNOWN.to_string(), UNKNOWN_CONFIDENCE);
        };
        let s1 = scores[w].1;
        let s2 = scores
            .iter()
            .enumerate()
            // Generic lines cannot decide a category; they still temper the
            // winner, at half their score.
            .filter(|(i, _)| *i != w)
            .map(|(_, s)| if decisive(&s.0) { s.1 } else { 0.5 * s.1 })
            .fold(0.0f32, f32::max);
        (scores[w].0.clone(), confidence(s1, s2))
    }

    /// The hits shown as evidence: the winner's first, then by weight, line
    /// and entry; at most [`MAX_HITS_PER_SLUG`] per entry and
    /// [`MAX_CLASSIFICATION_HITS`] in all.
    fn evidence(&self, matched: &mut [(usize, u64, &str)], winner: &str) -> Vec<SignatureHit> {
        matched.sort_by(|a, b| {
            let (ma, mb) = (&self.entries[a.0], &self.entries[b.0]);
            (ma.category != winner)
                .cmp(&(mb.category != winner))
                .then(mb.weight.total_cmp(&ma.weight))
                .then(a.1.cmp(&b.1))
                .then(a.0.cmp(&b.0))
        });
        let mut per_slug: HashMap<usize, usize> = HashMap::new();
        let mut hits = Vec::new();
        for &(e, line_no, line) in matched.iter() {
            let n = per_slug.entry(e).or_insert(0);
            if *n >= MAX_HITS_PER_SLUG {
                continue;
            }
            *n += 1;
            hits.push(self.hit(e, line_no, line));
            if hits.len() == MAX_CLASSIFICATION_HITS {
                break;
            }
        }
        hits
    }
}

fn confidence(s1: f32, s2: f32) -> f32 {
    if s1 <= 0.0 {
        return UNKNOWN_CONFIDENCE;
    }
    let cube = s1 * s1 * s1;
    let strength = cube / (cube + 0.17);
    let ratio = (s2 / s1).clamp(0.0, 1.0);
    let margin = 1.0 - ratio * ratio;
    round3((0.2 + 0.78 * strength * (0.5 + 0.5 * margin)).clamp(0.0, 0.99))
}

fn tie_rank(category: &str) -> usize {
    TIE_BREAK_ORDER
        .iter()
        .position(|c| *c == category)
        .unwrap_or(TIE_BREAK_ORDER.len())
}

fn round3(x: f32) -> f32 {
    (x * 1000.0).round() / 1000.0
}

/// Rewrites `\b` to the ASCII word boundary `(?-u:\b)`. Log text is
/// overwhelmingly ASCII and a Unicode word boundary forces the regex engine
/// off its fast lazy-DFA path whenever a line contains non-ASCII characters
/// (gcc's ‘quotes’, emoji in formatter output), which is expensive with
/// hundreds of patterns. Escaped backslashes (`\\b`) are left alone.
fn ascii_word_boundaries(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('b') => out.push_str(r"(?-u:\b)"),
            Some(next) => {
                out.push('\\');
                out.push(next);
            }
            None => out.push('\\'),
        }
    }
    out
}

fn truncate_chars(s: &str, max: usize) -> String {
    let cut = text::truncate_chars(s, max);
    if cut.len() == s.len() {
        s.to_string()
    } else {
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(text: &str) -> Vec<(u64, String)> {
        text.lines()
            .enumerate()
            .map(|(i, l)| (i as u64 + 1, l.to_string()))
            .collect()
    }

    fn classify(text: &str) -> Classification {
        Classifier::builtin().classify(&numbered(text))
    }

    #[test]
    fn builtin_loads_and_validates() {
        let entries = builtin();
        assert!(entries.len() >= 30, "only {} entries", entries.len());
        validate(entries).unwrap();
        assert_eq!(Classifier::builtin().len(), entries.len());
        for cat in CATEGORIES {
            assert!(
                entries.iter().any(|e| e.category == cat),
                "no entry for {cat}"
            );
        }
    }

    #[test]
    fn required_topics_are_covered() {
        let required = [
            "oom-killed",
            "runtime-heap-exhausted",
            "disk-full",
            "dns-resolution-failure",
            "connection-refused",
            "connection-reset",
            "network-timeout",
            "job-timeout",
            "runner-lost",
            "docker-daemon-unavailable",
            "docker-image-pull-failed",
            "registry-rate-limit",
            "missing-module",
            "dependency-version-conflict",
            "package-not-found",
            "lockfile-out-of-date",
            "permission-denied",
            "missing-credentials",
            "missing-env-var",
            "invalid-config-syntax",
            "unknown-cli-option",
            "command-not-found",
            "rust-compile-error",
            "jvm-compile-error",
            "c-cpp-compile-error",
            "typescript-compile-error",
            "go-build-error",
            "linker-error",
            "syntax-error",
            "type-error",
            "assertion-failure",
            "test-timeout",
            "segfault-or-abort",
            "panic",
            "null-reference",
            "flaky-test",
            "lint-or-format-failure",
            "coverage-threshold",
            "git-checkout-failure",
            "snapshot-mismatch",
        ];
        assert!(required.len() >= 25);
        for slug in required {
            assert!(lookup(slug).is_some(), "missing entry {slug}");
        }
    }

    #[test]
    fn every_example_hits_its_own_entry() {
        let c = Classifier::builtin();
        for e in builtin() {
            for ex in &e.examples {
                let hits = c.hits(7, ex);
                assert!(
                    hits.iter().any(|h| h.slug == e.slug && h.line_no == 7),
                    "{}: example not matched by classifier: {ex:?} (hits: {:?})",
                    e.slug,
                    hits.iter().map(|h| &h.slug).collect::<Vec<_>>()
                );
            }
        }
    }

    #[test]
    fn benign_lines_match_nothing() {
        let benign = [
            "0 errors",
            "Failures: 0, Errors: 0",
            "Tests run: 42, Failures: 0, Errors: 0, Skipped: 1, Time elapsed: 3.2 s - in com.acme.AppTest",
            "error_handler.rs compiled",
            "   Compiling error-chain v0.12.4",
            "gcc -O2 -Wall -Werror -c src/main.c -o build/main.o",
            "All tests passed",
            "All tests passed!",
            "warning: unused variable: `x`",
            "warning: unused variable",
            "if [ $? -ne 0 ]; then exit 1; fi",
            "test result: ok. 42 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out",
            "==================== 48 passed in 12.34s ====================",
            "ok  \tgithub.com/acme/api/internal/http\t0.123s",
            "--- PASS: TestHandler (0.00s)",
            "PASS src/app.test.ts",
            "Tests:       24 passed, 24 total",
            "Snapshots:   0 failed, 3 passed, 3 total",
            "10 examples, 0 failures",
            "✖ 2 problems (0 errors, 2 warnings)",
            "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 24.13s",
            "Run actions/checkout@v4",
            "##[group]Run cargo test --locked",
            "Process completed with exit code 0.",
            "npm WARN deprecated inflight@1.0.6: This module is not supported",
            "Successfully installed requests-2.31.0 urllib3-2.2.1",
            "added 1234 packages, and audited 1235 packages in 21s",
            "Downloading timeout-decorator-0.5.0.tar.gz",
            "Collecting pytest-timeout==2.3.1",
            "Retrying in 5 seconds...",
            "Status: Downloaded newer image for postgres:16",
            "Coverage: 91.2% of statements",
            "TOTAL                               1234     56    95%",
            "BUILD SUCCESSFUL in 42s",
            "[INFO] BUILD SUCCESS",
            "Done in 3.21s.",
            "+ set -euo pipefail",
            "export RUST_BACKTRACE=1",
            "collected 57 items",
            "src/error.rs:12:1: note: this is fine",
            "Checking for errors in configuration... none found",
            "Killed 0 zombie processes",
            "Receiving objects: 100% (1234/1234), 2.1 MiB | 12 MiB/s, done.",
            "HEAD is now at 3f2a9c1 Merge pull request #42",
            "Waiting for postgres to become ready...",
            "Cache restored from key: Linux-cargo-abc123",
            "npm WARN ERESOLVE overriding peer dependency",
            "npm WARN EBADENGINE Unsupported engine {",
            "    server_test.go:45: starting server on :8080",
            "=== RUN   TestHandler",
            "PASSED tests/test_api.py::test_login",
            "tests/test_api.py::test_login PASSED                                     [ 50%]",
            "Run pytest --timeout=300 -n auto",
            "cargo clippy --all-targets -- -D warnings",
            "black --check .",
            "All done! ✨ 🍰 ✨",
            "14 files would be left unchanged.",
            "Requirement already satisfied: urllib3<3,>=1.21.1",
            "Attempting uninstall: setuptools",
            "go: downloading github.com/stretchr/testify v1.9.0",
            "Pulling fs layer",
            "Digest: sha256:0123456789abcdef",
            "[INFO] Tests run: 12, Failures: 0, Errors: 0, Skipped: 0",
            "Ran 57 tests in 1.234s",
            "OK (skipped=2)",
            "mocha: 0 failing",
            "  0 failing",
            "Coverage threshold met: 91%",
            "Post job cleanup.",
            "Cleaning up orphan processes",
            "Terminate orphan process: pid (1234) (node)",
        ];
        let c = Classifier::builtin();
        for line in benign {
            let hits = c.hits(1, line);
            assert!(
                hits.is_empty(),
                "benign line {line:?} matched {:?}",
                hits.iter().map(|h| &h.slug).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn no_hits_is_unknown() {
        let c =
            classify("Run cargo build\n   Compiling app v0.1.0\n    Finished `release` profile\n");
        assert_eq!(c.category, UNKNOWN);
        assert_eq!(c.confidence, UNKNOWN_CONFIDENCE);
        assert!(c.hits.is_empty());
        assert_eq!(c.scores.len(), CATEGORIES.len());
        assert!(c.scores.iter().all(|(_, s)| *s == 0.0));
        let empty = Classifier::builtin().classify(&[]);
        assert_eq!(empty.category, UNKNOWN);
    }

    #[test]
    fn oom_log_is_infra() {
        let log = "\
   Compiling serde v1.0.200
   Compiling app v0.1.0 (/home/runner/work/app)
error: could not compile `app` (lib)

Caused by:
  process didn't exit successfully: `rustc --crate-name app --edition=2021 src/lib.rs` (signal: 9, SIGKILL: kill)
##[error]Process completed with exit code 101.";
        let c = classify(log);
        assert_eq!(c.category, "INFRA_ERROR", "{c:?}");
        assert_eq!(c.hits[0].slug, "oom-killed");
        assert_eq!(c.hits[0].line_no, 6);
        assert!(c.confidence >= 0.7, "{c:?}");
    }

    #[test]
    fn missing_module_log_is_dependency() {
        let log = "\
============================= test session starts ==============================
collected 0 items / 1 error

==================================== ERRORS ====================================
___________________ ERROR collecting tests/test_client.py ___________________
ImportError while importing test module '/home/runner/work/app/tests/test_client.py'.
Traceback:
tests/test_client.py:3: in <module>
    import requests
E   ModuleNotFoundError: No module named 'requests'
=========================== short test summary info ============================
ERROR tests/test_client.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
=============================== 1 error in 0.12s ===============================";
        let c = classify(log);
        assert_eq!(c.category, "DEPENDENCY_ERROR", "{c:?}");
        assert_eq!(c.hits[0].slug, "missing-module");
        assert!(c.confidence >= 0.8, "{c:?}");
    }

    #[test]
    fn assertion_log_is_test_failure() {
        let log = "\
running 3 tests
test parser::tests::ok_input ... ok
test parser::tests::handles_empty ... FAILED

failures:

---- parser::tests::handles_empty stdout ----
thread 'parser::tests::handles_empty' panicked at src/parser.rs:88:9:
assertion `left == right` failed
  left: 0
 right: 1

failures:
    parser::tests::handles_empty

test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s

error: test failed, to rerun pass `--lib`";
        let c = classify(log);
        assert_eq!(c.category, "TEST_FAILURE", "{c:?}");
        assert_eq!(c.hits[0].slug, "assertion-failure");
        assert!(c.confidence >= 0.8, "{c:?}");
    }

    #[test]
    fn pytest_assertion_is_test_failure() {
        let log = "\
tests/test_api.py::test_login FAILED                                     [ 50%]
    def test_login(client):
        resp = client.post('/login', json={'user': 'ada'})
>       assert resp.status_code == 200
E       assert 500 == 200
E        +  where 500 = <Response [500]>.status_code
FAILED tests/test_api.py::test_login - assert 500 == 200
========================= 1 failed, 12 passed in 1.52s =========================";
        let c = classify(log);
        assert_eq!(c.category, "TEST_FAILURE", "{c:?}");
    }

    #[test]
    fn dns_log_is_infra() {
        let log = "\
Run npm ci
npm ERR! code ENOTFOUND
npm ERR! syscall getaddrinfo
npm ERR! errno ENOTFOUND
npm ERR! network request to https://registry.npmjs.org/react failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org
npm ERR! network This is a problem related to network connectivity.
##[error]Process completed with exit code 1.";
        let c = classify(log);
        assert_eq!(c.category, "INFRA_ERROR", "{c:?}");
        assert_eq!(c.hits[0].slug, "dns-resolution-failure");
        assert!(c.confidence >= 0.8, "{c:?}");
    }

    #[test]
    fn bad_yaml_is_config() {
        let log = "\
$ gitlab-ci-lint .gitlab-ci.yml
Error: yaml: line 14: did not find expected key
This GitLab CI configuration is invalid: (<unknown>): did not find expected key while parsing a block mapping at line 12 column 3";
        let c = classify(log);
        assert_eq!(c.category, "CONFIG_ERROR", "{c:?}");
        assert_eq!(c.hits[0].slug, "invalid-config-syntax");
        assert!(c.confidence >= 0.8, "{c:?}");
    }

    #[test]
    fn strong_infra_explains_test_failures() {
        let log = "\
tests/test_big.py::test_a FAILED
E       AssertionError: worker crashed
E       AssertionError: worker crashed
[gw3] node down: Not properly terminated
/home/runner/work/_temp/3f1c.sh: line 1:  2345 Killed                  pytest -n 8
FAILED tests/test_big.py::test_a - AssertionError: worker crashed
FAILED tests/test_big.py::test_b - AssertionError: worker crashed
==================== 2 failed, 40 passed in 80.00s ====================";
        let c = classify(log);
        assert_eq!(c.category, "INFRA_ERROR", "{c:?}");
        assert_eq!(c.hits[0].slug, "oom-killed");
        // Without the kill line it is a plain test failure.
        let without: String = log
            .lines()
            .filter(|l| !l.contains("Killed"))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(classify(&without).category, "TEST_FAILURE");
    }

    #[test]
    fn weak_infra_does_not_override_tests() {
        let log = "\
--- FAIL: TestCreateUser (0.01s)
    user_test.go:42: got status 500, want 201
    user_test.go:57: got 0 users, want 1
--- FAIL: TestListUsers (0.00s)
    user_test.go:88: got 0 users, want 3
2024/05/01 12:00:00 retrying: dial tcp 127.0.0.1:5432: connect: connection refused
FAIL\tgithub.com/acme/api/internal/users\t0.231s";
        let c = classify(log);
        assert_eq!(c.category, "TEST_FAILURE", "{c:?}");
    }

    #[test]
    fn missing_system_library_beats_link_aftermath() {
        let log = "\
error: linking with `cc` failed: exit status: 1
  = note: /usr/bin/ld: cannot find -lssl: No such file or directory
          collect2: error: ld returned 1 exit status
error: could not compile `app` (bin \"app\") due to 1 previous error";
        let c = classify(log);
        assert_eq!(c.category, "DEPENDENCY_ERROR", "{c:?}");
    }

    #[test]
    fn compile_error_is_code() {
        let log = "\
   Compiling app v0.1.0 (/home/runner/work/app)
error[E0308]: mismatched types
  --> src/main.rs:4:18
error[E0425]: cannot find value `cfg` in this scope
error: could not compile `app` (bin \"app\") due to 2 previous errors";
        let c = classify(log);
        assert_eq!(c.category, "CODE_ERROR", "{c:?}");
        assert!(c.confidence >= 0.8, "{c:?}");
    }

    #[test]
    fn confidence_shape() {
        // One weak hit.
        let weak = classify("thread 'main' panicked at src/main.rs:3:5:");
        assert_eq!(weak.category, "CODE_ERROR");
        assert!((0.45..=0.65).contains(&weak.confidence), "{weak:?}");
        // Strong and unambiguous.
        let strong = classify("write /var/lib/docker/tmp/x: no space left on device");
        assert!(strong.confidence >= 0.8, "{strong:?}");
        // Two categories with similar evidence.
        let mixed = classify("error[E0308]: mismatched types\nnpm ERR! code ERESOLVE");
        assert!(mixed.confidence < 0.6, "{mixed:?}");
        assert!(mixed.confidence > UNKNOWN_CONFIDENCE);
    }

    #[test]
    fn supporting_evidence_alone_is_unknown() {
        let log = "\
Running integration suite (output in build/it.log)
something went wrong
Traceback (most recent call last):
make[1]: *** [Makefile:88: run] Error 1
make: *** [Makefile:42: check] Error 2";
        let c = classify(log);
        assert_eq!(c.category, UNKNOWN, "{c:?}");
        assert_eq!(c.confidence, UNKNOWN_CONFIDENCE);
        assert!(!c.hits.is_empty());
        // ...but it does not block a decisive signal of another category.
        let c = classify(&format!(
            "{log}\ndial tcp 127.0.0.1:5432: connect: connection refused"
        ));
        assert_eq!(c.category, "INFRA_ERROR", "{c:?}");
        assert!(c.confidence < 0.7, "{c:?}");
    }

    #[test]
    fn repeated_hits_have_diminishing_returns() {
        let one = classify("error[E0308]: mismatched types");
        let many = classify(&"error[E0308]: mismatched types\n".repeat(50));
        let s = |c: &Classification| c.scores.iter().find(|(k, _)| k == "CODE_ERROR").unwrap().1;
        assert!(s(&many) > s(&one));
        assert!(s(&many) <= 2.0 * lookup("rust-compile-error").unwrap().weight + 1e-3);
        for slug in ["rust-compile-error", "type-error"] {
            let n = many.hits.iter().filter(|h| h.slug == slug).count();
            assert!(n <= MAX_HITS_PER_SLUG, "{slug}: {n}");
        }
        assert!(many.hits.len() <= MAX_CLASSIFICATION_HITS);
    }

    #[test]
    fn classification_is_deterministic_and_hits_ordered() {
        let log = "\
Run docker pull node:22-slimm
Error response from daemon: manifest for node:22-slimm not found: manifest unknown: manifest unknown
npm ERR! 429 Too Many Requests - GET https://registry.npmjs.org/typescript
Traceback (most recent call last):";
        let a = classify(log);
        let b = classify(log);
        assert_eq!(a, b);
        let winner = a.category.clone();
        let first_other = a
            .hits
            .iter()
            .position(|h| h.category != winner)
            .unwrap_or(a.hits.len());
        assert!(a.hits[first_other..].iter().all(|h| h.category != winner));
        assert!(
            a.hits[..first_other]
                .windows(2)
                .all(|w| w[0].weight >= w[1].weight)
        );
        let sorted = a.scores.windows(2).all(|w| w[0].1 >= w[1].1);
        assert!(sorted, "{:?}", a.scores);
    }

    #[test]
    fn hits_are_one_per_entry_and_sorted() {
        let c = Classifier::builtin();
        let hits = c.hits(3, "npm ERR! 403 403 Forbidden - PUT https://npm.pkg.github.com/x - Permission permission_denied");
        let mut slugs: Vec<&str> = hits.iter().map(|h| h.slug.as_str()).collect();
        assert!(hits.windows(2).all(|w| w[0].weight >= w[1].weight));
        slugs.sort_unstable();
        let n = slugs.len();
        slugs.dedup();
        assert_eq!(n, slugs.len());
        assert!(hits.iter().all(|h| h.line_no == 3));
    }

    #[test]
    fn long_and_unicode_lines_are_handled() {
        let c = Classifier::builtin();
        let long = format!("{}No space left on device", "é".repeat(5000));
        assert!(c.hits(1, &long).is_empty(), "beyond MAX_MATCH_BYTES");
        let short = format!("{} No space left on device", "é".repeat(100));
        let hits = c.hits(1, &short);
        assert_eq!(hits[0].slug, "disk-full");
        assert!(hits[0].line.chars().count() <= MAX_HIT_LINE_CHARS + 1);
        // gcc's typographic quotes do not defeat word boundaries.
        let gcc = c.hits(
            1,
            "net.c:(.text+0x1a): undefined reference to ‘SSL_CTX_new’",
        );
        assert!(gcc.iter().any(|h| h.slug == "linker-error"));
    }

    #[test]
    fn validate_reports_problems() {
        let mut e = lookup("disk-full").unwrap().clone();
        validate(std::slice::from_ref(&e)).unwrap();
        e.category = "DISK".into();
        e.signatures.push("(unclosed".into());
        e.examples.push("nothing relevant".into());
        let err = validate(&[e.clone(), e]).unwrap_err();
        assert!(err.contains("invalid category"), "{err}");
        assert!(err.contains("does not compile"), "{err}");
        assert!(err.contains("duplicate slug"), "{err}");
        let mut f = lookup("disk-full").unwrap().clone();
        f.examples.push("nothing relevant".into());
        let err = validate(&[f]).unwrap_err();
        assert!(err.contains("example not matched"), "{err}");
        assert!(parse_entries("{not json").is_err());
    }

    #[test]
    fn word_boundary_rewrite() {
        assert_eq!(ascii_word_boundaries(r"\bfoo\b"), r"(?-u:\b)foo(?-u:\b)");
        assert_eq!(ascii_word_boundaries(r"a\\b"), r"a\\b");
        assert_eq!(ascii_word_boundaries(r"\d+\.\B"), r"\d+\.\B");
    }

    #[test]
    fn search_finds_relevant_entries() {
        let r = search("oom killed 137", 3);
        assert_eq!(r[0].slug, "oom-killed");
        let r = search("E   ModuleNotFoundError: No module named 'yaml'", 3);
        assert_eq!(r[0].slug, "missing-module");
        assert!(search("zzzzqqq", 5).is_empty());
        let local = search_entries(builtin(), "No space left on device", 1);
        assert_eq!(local[0].slug, "disk-full");
    }
}

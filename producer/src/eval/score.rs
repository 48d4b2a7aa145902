//! The figures, defined as `../shared/eval/score_categories.py` defines
//! them (but for the reliability table: routing bands here, tenths there):
//! a log is right when the run's category is its label (a run
//! without a category is wrong); "auto" is a run that completed without
//! review; confusion pairs are counted per (label, got) and listed most
//! frequent first (ties in order of first appearance, as Python's
//! `Counter.most_common`).

use std::collections::BTreeMap;

use serde::Serialize;
use uuid::Uuid;

/// One analysed log.
#[derive(Debug, Clone, Serialize)]
pub struct LogResult {
    pub log: String,
    pub repo: String,
    pub expected: String,
    pub got: Option<String>,
    pub status: String,
    pub confidence: Option<f64>,
    pub tokens: i64,
    pub cost: f64,
    /// From ingest to the run's end (`finished_at - created_at`).
    pub seconds: Option<f64>,
    pub run_id: Uuid,
    /// The reasoner the run was assigned, and its prompt version.
    pub reasoner: String,
    pub prompt_version: Option<i32>,
    /// What kind of evidence decided the diagnosis (`assertion`, `crash`,
    /// `failed step only`, …): where answers come from, in aggregate.
    #[serde(default)]
    pub evidence: String,
}

impl LogResult {
    pub fn right(&self) -> bool {
        self.got.as_deref() == Some(self.expected.as_str())
    }
}

/// The confidence buckets of the reliability table: the routing
/// thresholds' bands (review below 0.5, self-correct, review, auto).
pub const BUCKETS: [(f64, f64); 4] = [(0.0, 0.5), (0.5, 0.65), (0.65, 0.85), (0.85, 1.0)];

#[derive(Debug, Clone, Serialize)]
pub struct Bucket {
    /// `0.50-0.65`, or `none` (runs without a confidence).
    pub bucket: String,
    pub n: usize,
    pub right: usize,
    pub accuracy: Option<f64>,
}

/// The summary of one configuration.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub logs: usize,
    pub right: usize,
    pub accuracy: f64,
    /// Label -> (right, total).
    pub per_category: BTreeMap<String, (usize, usize)>,
    /// (label, got, count), most frequent first; `got` is `None` for a
    /// run without a category.
    pub confusion: Vec<(String, Option<String>, usize)>,
    pub auto: usize,
    pub auto_right: usize,
    pub auto_share: f64,
    /// Right among the auto-completed (0 when none was).
    pub auto_precision: f64,
    pub failed: usize,
    pub reliability: Vec<Bucket>,
    pub tokens_mean: f64,
    pub cost_mean: f64,
    /// Nearest-rank percentiles of the analyses' wall times.
    pub seconds_p50: Option<f64>,
    pub seconds_p99: Option<f64>,
    /// Per kind of deciding evidence: (kind, right, total), most frequent
    /// first.
    pub by_evidence: Vec<(String, usize, usize)>,
    /// The same for the auto-completed runs only (kinds in the order of
    /// `by_evidence`; 0/0 where none completed): which evidence the wrong
    /// auto-completed answers stand on.
    pub auto_by_evidence: Vec<(String, usize, usize)>,
}

pub fn summarise(results: &[LogResult]) -> Summary {
    let n = results.len();
    let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let right = results.iter().filter(|r| r.right()).count();
    let mut per_category: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut confusion: Vec<(String, Option<String>, usize)> = Vec::new();
    for r in results {
        let entry = per_category.entry(r.expected.clone()).or_default();
        entry.1 += 1;
        entry.0 += usize::from(r.right());
        if !r.right() {
            match confusion
                .iter_mut()
                .find(|(w, g, _)| *w == r.expected && *g == r.got)
            {
                Some(pair) => pair.2 += 1,
                None => confusion.push((r.expected.clone(), r.got.clone(), 1)),
            }
        }
    }
    // Stable: equal counts keep their order of first appearance.
    confusion.sort_by_key(|pair| std::cmp::Reverse(pair.2));
    let auto: Vec<&LogResult> = results.iter().filter(|r| r.status == "completed").collect();
    let auto_right = auto.iter().filter(|r| r.right()).count();
    let mut seconds: Vec<f64> = results.iter().filter_map(|r| r.seconds).collect();
    seconds.sort_by(f64::total_cmp);
    let mut by_evidence: Vec<(String, usize, usize)> = Vec::new();
    for r in results.iter().filter(|r| !r.evidence.is_empty()) {
        match by_evidence.iter_mut().find(|(k, _, _)| *k == r.evidence) {
            Some(e) => {
                e.1 += usize::from(r.right());
                e.2 += 1;
            }
            None => by_evidence.push((r.evidence.clone(), usize::from(r.right()), 1)),
        }
    }
    by_evidence.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    let auto_by_evidence = by_evidence
        .iter()
        .map(|(kind, _, _)| {
            let of_kind = || auto.iter().filter(|r| r.evidence == *kind);
            (
                kind.clone(),
                of_kind().filter(|r| r.right()).count(),
                of_kind().count(),
            )
        })
        .collect();
    Summary {
        logs: n,
        right,
        accuracy: ratio(right, n),
        per_category,
        confusion,
        auto: auto.len(),
        auto_right,
        auto_share: ratio(auto.len(), n),
        auto_precision: ratio(auto_right, auto.len()),
        failed: results.iter().filter(|r| r.status == "failed").count(),
        reliability: reliability(results),
        tokens_mean: if n == 0 {
            0.0
        } else {
            results.iter().map(|r| r.tokens as f64).sum::<f64>() / n as f64
        },
        cost_mean: if n == 0 {
            0.0
        } else {
            results.iter().map(|r| r.cost).sum::<f64>() / n as f64
        },
        seconds_p50: percentile(&seconds, 50.0),
        seconds_p99: percentile(&seconds, 99.0),
        by_evidence,
        auto_by_evidence,
    }
}

fn reliability(results: &[LogResult]) -> Vec<Bucket> {
    let bucket = |name: String, rows: Vec<&LogResult>| {
        let right = rows.iter().filter(|r| r.right()).count();
        Bucket {
            bucket: name,
            n: rows.len(),
            right,
            accuracy: (!rows.is_empty()).then(|| right as f64 / rows.len() as f64),
        }
    };
    let mut out: Vec<Bucket> = BUCKETS
        .iter()
        .enumerate()
        .map(|(i, &(lo, hi))| {
            let last = i == BUCKETS.len() - 1;
            let rows = results
                .iter()
                .filter(|r| {
                    r.confidence
                        .is_some_and(|c| c >= lo && (c < hi || (last && c <= hi)))
                })
                .collect();
            bucket(format!("{lo:.2}-{hi:.2}"), rows)
        })
        .collect();
    let none: Vec<&LogResult> = results
        .iter()
        .filter(|r| r.confidence.is_none_or(|c| !(0.0..=1.0).contains(&c)))
        .collect();
    if !none.is_empty() {
        out.push(bucket("none".into(), none));
    }
    out
}

/// The nearest-rank percentile `p` of sorted values.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// How two configurations compare on the same logs.
#[derive(Debug, Clone, Serialize)]
pub struct Agreement {
    pub logs: usize,
    pub both_right: usize,
    pub only_first_right: usize,
    pub only_second_right: usize,
    pub both_wrong: usize,
    /// Same category given (right or wrong).
    pub same_category: usize,
}

pub fn agreement(a: &[LogResult], b: &[LogResult]) -> Agreement {
    let pairs = || a.iter().zip(b);
    let count =
        |f: &dyn Fn(&LogResult, &LogResult) -> bool| pairs().filter(|(x, y)| f(x, y)).count();
    Agreement {
        logs: a.len().min(b.len()),
        both_right: count(&|x, y| x.right() && y.right()),
        only_first_right: count(&|x, y| x.right() && !y.right()),
        only_second_right: count(&|x, y| !x.right() && y.right()),
        both_wrong: count(&|x, y| !x.right() && !y.right()),
        same_category: count(&|x, y| x.got.is_some() && x.got == y.got),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(
        expected: &str,
        got: Option<&str>,
        status: &str,
        confidence: Option<f64>,
    ) -> LogResult {
        LogResult {
            log: "x".into(),
            repo: "r".into(),
            expected: expected.into(),
            got: got.map(Into::into),
            status: status.into(),
            confidence,
            tokens: 10,
            cost: 0.5,
            seconds: Some(1.0),
            run_id: Uuid::nil(),
            reasoner: "heuristic".into(),
            prompt_version: None,
            evidence: "assertion".into(),
        }
    }

    #[test]
    fn the_figures_are_those_of_the_category_scorer() {
        let rows = [
            result("CODE_ERROR", Some("CODE_ERROR"), "completed", Some(0.9)),
            result("CODE_ERROR", Some("TEST_FAILURE"), "completed", Some(0.85)),
            result(
                "TEST_FAILURE",
                Some("CODE_ERROR"),
                "needs_review",
                Some(0.65),
            ),
            result(
                "CODE_ERROR",
                Some("TEST_FAILURE"),
                "needs_review",
                Some(0.5),
            ),
            result("TEST_FAILURE", None, "failed", None),
        ];
        let mut rows = rows;
        rows[3].evidence = "failed step only".into();
        rows[4].evidence = "failed step only".into();
        let s = summarise(&rows);
        // Where answers come from: most frequent first.
        assert_eq!(
            s.by_evidence,
            [
                ("assertion".to_string(), 1, 3),
                ("failed step only".to_string(), 0, 2)
            ]
        );
        // …and which of them completed without review.
        assert_eq!(
            s.auto_by_evidence,
            [
                ("assertion".to_string(), 1, 2),
                ("failed step only".to_string(), 0, 0)
            ]
        );
        assert_eq!(
            (s.logs, s.right, s.auto, s.auto_right, s.failed),
            (5, 1, 2, 1, 1)
        );
        assert_eq!(s.accuracy, 0.2);
        assert_eq!(s.auto_precision, 0.5);
        assert_eq!(s.per_category["CODE_ERROR"], (1, 3));
        let pair = |w: &str, g: Option<&str>, k| (w.to_string(), g.map(str::to_string), k);
        assert_eq!(
            s.confusion,
            [
                pair("CODE_ERROR", Some("TEST_FAILURE"), 2),
                pair("TEST_FAILURE", Some("CODE_ERROR"), 1),
                pair("TEST_FAILURE", None, 1)
            ]
        );
        let n: Vec<usize> = s.reliability.iter().map(|b| b.n).collect();
        assert_eq!(n, [0, 1, 1, 2, 1]);
        assert_eq!(s.reliability[3].right, 1);
        assert_eq!(s.tokens_mean, 10.0);
        assert_eq!(s.seconds_p99, Some(1.0));
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), Some(50.0));
        assert_eq!(percentile(&v, 99.0), Some(99.0));
        assert_eq!(percentile(&[3.0], 99.0), Some(3.0));
        assert_eq!(percentile(&[], 50.0), None);
    }
}

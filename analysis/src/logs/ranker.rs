//! The learned ranking of candidate blocks (issue 31): which block of a
//! log explains the failure. A block is described by the quantities the
//! streaming window state computes ([`FEATURES`]); its value is
//! `exp(w · f)` with weights trained offline (`faultline-train`, a softmax
//! over each log's candidate blocks whose target is the block closest to
//! the labelled failure lines of `logchunks-dev`, folds grouped by
//! repository) and shipped as data (`analysis/model/ranker.json`).
//!
//! The weights replace hand-set multipliers written while reading the dev
//! logs: those fit them (excerpt F1 0.718 there) and not other
//! repositories' (0.490 on the blind check); the learned ranking gives
//! 0.704 and 0.524 (docs/diagnosis-model.md, session 5).

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

/// What a candidate block is described by, one column each.
pub const FEATURES: [&str; 19] = [
    "max_score",
    "more_signal",
    "failed_footer_within_3",
    "failed_footer_near",
    "failed_footer_within_4x_near",
    "failed_footer_far",
    "passed_step_after_a_failure",
    "passed_footer_near",
    "passed_footer_far",
    "after_the_last_failed_step",
    "no_footer",
    "later_failure",
    "recognised",
    "repeated_share",
    "position",
    "fallback_tail",
    "lines",
    "report",
    "frames",
];

/// The shipped ranker.
pub const RANKER_JSON: &str = include_str!("../../model/ranker.json");

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ranker {
    pub about: String,
    pub features: Vec<String>,
    pub weights: Vec<f64>,
    pub provenance: serde_json::Value,
}

pub static RANKER: LazyLock<Ranker> = LazyLock::new(|| {
    let r: Ranker = serde_json::from_str(RANKER_JSON).expect("the shipped ranker parses");
    assert_eq!(
        r.features, FEATURES,
        "the shipped ranker's features are the window's"
    );
    r
});

/// A block's value: `exp(w · f)`.
pub fn value(features: &[f32]) -> f32 {
    let s: f64 = RANKER
        .weights
        .iter()
        .zip(features)
        .map(|(w, f)| w * f64::from(*f))
        .sum();
    s.clamp(-60.0, 60.0).exp() as f32
}

/// A candidate block as the trainer sees it: its features and the lines
/// it would show.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Candidate {
    pub features: Vec<f32>,
    pub line_nos: Vec<u64>,
}

/// One log's candidates for training: features and each block's F1
/// against the labelled failure lines.
#[derive(Debug, Clone)]
pub struct RankExample {
    pub features: Vec<Vec<f64>>,
    pub f1: Vec<f64>,
    pub group: String,
}

/// Training settings.
#[derive(Debug, Clone, Copy)]
pub struct RankOptions {
    pub l2: f64,
    pub iterations: usize,
    pub step: f64,
}

impl Default for RankOptions {
    fn default() -> Self {
        Self {
            l2: 0.01,
            iterations: 600,
            step: 0.5,
        }
    }
}

/// Fits the weights: full-batch gradient descent from zero on the
/// softmax over each log's candidates, whose target is uniform over the
/// blocks closest to the labelled lines (logs where no block touches them
/// teach nothing). Deterministic.
pub fn fit(examples: &[&RankExample], opts: RankOptions) -> Vec<f64> {
    let n = FEATURES.len();
    let mut w = vec![0.0; n];
    let count = examples.len().max(1) as f64;
    for _ in 0..opts.iterations {
        let mut g = vec![0.0; n];
        for e in examples {
            let best = e.f1.iter().copied().fold(0.0, f64::max);
            if best <= 0.0 {
                continue;
            }
            let s: Vec<f64> = e
                .features
                .iter()
                .map(|f| f.iter().zip(&w).map(|(a, b)| a * b).sum())
                .collect();
            let top = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let exp: Vec<f64> = s.iter().map(|v| (v - top).exp()).collect();
            let z: f64 = exp.iter().sum();
            let targets = e.f1.iter().filter(|v| **v == best).count() as f64;
            for (i, f) in e.features.iter().enumerate() {
                let q = if e.f1[i] == best { 1.0 / targets } else { 0.0 };
                let d = exp[i] / z - q;
                for (gj, fj) in g.iter_mut().zip(f) {
                    *gj += d * fj;
                }
            }
        }
        for (wj, gj) in w.iter_mut().zip(&g) {
            *wj -= opts.step * (gj / count + opts.l2 * *wj);
        }
    }
    w
}

/// The F1 of the block a ranking with `w` puts first (0 without blocks).
pub fn top_f1(e: &RankExample, w: &[f64]) -> f64 {
    let mut best = (f64::NEG_INFINITY, 0.0);
    for (f, y) in e.features.iter().zip(&e.f1) {
        let s: f64 = f.iter().zip(w).map(|(a, b)| a * b).sum();
        if s > best.0 {
            best = (s, *y);
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn training_learns_the_column_that_marks_the_labelled_block_and_the_shipped_ranker_loads() {
        // Three blocks per log; the labelled one is `recognised`, and its
        // position varies so position alone cannot tell.
        let recognised = FEATURES.iter().position(|f| *f == "recognised").unwrap();
        let position = FEATURES.iter().position(|f| *f == "position").unwrap();
        let log = |good: usize| RankExample {
            features: (0..3)
                .map(|i| {
                    let mut f = vec![0.0; FEATURES.len()];
                    f[recognised] = if i == good { 0.9 } else { 0.1 };
                    f[position] = ((i + good) % 3) as f64 / 3.0;
                    f
                })
                .collect(),
            f1: (0..3).map(|i| if i == good { 0.8 } else { 0.1 }).collect(),
            group: format!("repo-{good}"),
        };
        let logs: Vec<RankExample> = (0..6).map(|i| log(i % 3)).collect();
        let refs: Vec<&RankExample> = logs.iter().collect();
        let w = fit(&refs, RankOptions::default());
        assert!(w[recognised] > 1.0, "{w:?}");
        assert!(logs.iter().all(|e| top_f1(e, &w) == 0.8));
        assert_eq!(RANKER.weights.len(), FEATURES.len());
        assert!(value(&vec![0.0; FEATURES.len()]) > 0.0);
    }
}

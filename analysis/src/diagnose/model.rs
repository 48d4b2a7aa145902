//! The learned reading of the recognisers' evidence: a conditional logit
//! (one weight per feature column, shared by the categories, each reading
//! its own row) over *kinds* of evidence (what produced the failing lines,
//! where in the log they stand, the failed step's kind and exit code),
//! never over a project, a file or a test name. It advises; the rules
//! decide (docs/diagnosis-model.md says why).
//!
//! The weights are data ([`MODEL_JSON`], `analysis/model/diagnosis.json`),
//! written by `faultline-train` (`make train`, [`super::learn`]) from the
//! labelled sets beside the project, validated by repository-grouped
//! cross-validation; the threshold under which an answer goes to review was
//! chosen on the out-of-fold predictions. Nothing is learned at run time.

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use super::rules::Kind;
use crate::Category;

/// The shipped model (`make train` writes it).
pub const MODEL_JSON: &str = include_str!("../../model/diagnosis.json");

/// The kinds of evidence, in feature order.
pub const KINDS: [Kind; 9] = [
    Kind::Assertion,
    Kind::TestFailed,
    Kind::TestSummary,
    Kind::Crash,
    Kind::Compile,
    Kind::Lint,
    Kind::Dependency,
    Kind::Config,
    Kind::Infra,
];

/// The categories the model decides between, in output order.
pub const CLASSES: [Category; 5] = [
    Category::CodeError,
    Category::InfraError,
    Category::ConfigError,
    Category::DependencyError,
    Category::TestFailure,
];

/// What one log's evidence looks like to the model, before it becomes rows:
/// per kind, the combined weight of the failure lines' findings and the
/// strongest finding in the log's last lines; the rules' own scores per
/// category; the kinds the failed step's command and exit code point to.
#[derive(Debug, Clone, Default)]
pub struct Signals {
    /// Per kind (in [`KINDS`] order): noisy-OR of each rule's best weight
    /// on the excerpt's lines.
    pub lines: [f32; 9],
    /// Per kind: the strongest finding on the log's last lines only.
    pub tail: [f32; 9],
    /// The rules' scores (causes explaining symptoms), in [`CLASSES`] order.
    pub rules: [f32; 5],
    /// The kind of step the failed command runs (an install, a lint, a
    /// test, a deploy).
    pub step: Option<Kind>,
    /// The kind the failed step's exit code says (a time limit, a kill, a
    /// missing command).
    pub exit_code: Option<Kind>,
}

/// The feature names, in column order. Each class reads its own row of
/// the same columns ([`Signals::rows`]): the evidence *for that class*. The
/// first columns are shared by every class, so what the model learns from
/// frequent categories ("strong lines of a category's own kinds mean that
/// category") holds for rare ones too.
pub fn feature_names() -> Vec<String> {
    let mut names: Vec<String> = [
        "own.lines",
        "own.tail",
        "own.rules",
        "own.rules_winner",
        "own.step",
        "own.exit_code",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for k in KINDS {
        names.push(format!("lines.{}", kind_name(k)));
    }
    names.push("crash_without_assertion".into());
    names.push("test_without_cause".into());
    names
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Assertion => "assertion",
        Kind::TestFailed => "test_failed",
        Kind::TestSummary => "test_summary",
        Kind::Crash => "crash",
        Kind::Compile => "compile",
        Kind::Lint => "lint",
        Kind::Dependency => "dependency",
        Kind::Config => "config",
        Kind::Infra => "infra",
    }
}

pub fn kind_index(k: Kind) -> usize {
    KINDS
        .iter()
        .position(|x| *x == k)
        .expect("every kind listed")
}

impl Signals {
    /// One row of features per class (in [`CLASSES`] order), columns in
    /// [`feature_names`] order.
    pub fn rows(&self) -> Vec<Vec<f64>> {
        let l = |k: Kind| f64::from(self.lines[kind_index(k)]);
        let test = 1.0
            - (1.0 - l(Kind::Assertion))
                * (1.0 - l(Kind::TestFailed))
                * (1.0 - l(Kind::TestSummary));
        let causes = [Kind::Infra, Kind::Dependency, Kind::Config, Kind::Compile]
            .into_iter()
            .map(l)
            .fold(0.0, f64::max);
        let rules_best = self.rules.iter().copied().fold(0.0f32, f32::max);
        CLASSES
            .iter()
            .enumerate()
            .map(|(ci, &c)| {
                let own: Vec<Kind> = KINDS
                    .iter()
                    .copied()
                    .filter(|k| k.category() == c)
                    .collect();
                let lines = own.iter().fold(1.0, |acc, k| acc * (1.0 - l(*k)));
                let tail = own
                    .iter()
                    .map(|k| f64::from(self.tail[kind_index(*k)]))
                    .fold(0.0, f64::max);
                let mut row = vec![
                    1.0 - lines,
                    tail,
                    f64::from(self.rules[ci]),
                    f64::from(self.rules[ci] > 0.0 && self.rules[ci] >= rules_best),
                    f64::from(self.step.map(Kind::category) == Some(c)),
                    f64::from(self.exit_code.map(Kind::category) == Some(c)),
                ];
                for k in KINDS {
                    row.push(if k.category() == c { l(k) } else { 0.0 });
                }
                row.push(if c == Category::CodeError {
                    l(Kind::Crash) * (1.0 - l(Kind::Assertion))
                } else {
                    0.0
                });
                row.push(if c == Category::TestFailure {
                    test * (1.0 - causes)
                } else {
                    0.0
                });
                row
            })
            .collect()
    }
}

/// A trained model: a weight per feature column (shared by the classes)
/// and a bias per class.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Model {
    /// What this file is, in words.
    pub about: String,
    pub features: Vec<String>,
    pub classes: Vec<Category>,
    /// One per feature column.
    pub weights: Vec<f64>,
    pub bias: Vec<f64>,
    /// Below this probability the model would send the answer to review:
    /// chosen on the out-of-fold predictions so that what clears it is
    /// right as often as `faultline-train`'s target (0.97).
    pub review_below: f64,
    /// How the model was trained and how it did out of fold.
    pub provenance: serde_json::Value,
}

/// The model's answer for one log.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// Probability per class, in [`CLASSES`] order.
    pub probabilities: Vec<f64>,
    pub category: Category,
    pub probability: f64,
    /// The features that pushed most towards the winner (name, weight ×
    /// value), strongest first.
    pub deciding: Vec<(String, f64)>,
}

impl Model {
    /// Reads a model file, refusing one whose features or classes are not
    /// this build's.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let m: Model = serde_json::from_str(text).map_err(|e| format!("model file: {e}"))?;
        if m.features != feature_names() {
            return Err("model file: its features are not this build's".into());
        }
        if m.classes != CLASSES {
            return Err("model file: its classes are not this build's".into());
        }
        if m.weights.len() != m.features.len() || m.bias.len() != m.classes.len() {
            return Err("model file: weight shapes do not match".into());
        }
        Ok(m)
    }

    /// Class probabilities of one log's rows (softmax of the scores).
    pub fn probabilities(&self, rows: &[Vec<f64>]) -> Vec<f64> {
        softmax(&scores(&self.weights, &self.bias, rows))
    }

    /// The model's answer, with the features that decided it.
    pub fn predict(&self, rows: &[Vec<f64>]) -> Prediction {
        let p = self.probabilities(rows);
        let best = argmax(&p);
        let mut deciding: Vec<(String, f64)> = self
            .weights
            .iter()
            .zip(&rows[best])
            .zip(&self.features)
            .map(|((w, v), n)| (n.clone(), w * v))
            .filter(|(_, c)| *c > 0.0)
            .collect();
        deciding.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        deciding.truncate(3);
        Prediction {
            probability: p[best],
            category: self.classes[best],
            probabilities: p,
            deciding,
        }
    }
}

/// Each class's score: its row times the shared weights, plus its bias.
pub fn scores(weights: &[f64], bias: &[f64], rows: &[Vec<f64>]) -> Vec<f64> {
    rows.iter()
        .zip(bias)
        .map(|(row, b)| b + weights.iter().zip(row).map(|(w, v)| w * v).sum::<f64>())
        .collect()
}

pub fn softmax(z: &[f64]) -> Vec<f64> {
    let m = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = z.iter().map(|v| (v - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

pub fn argmax(p: &[f64]) -> usize {
    let mut best = 0;
    for (i, v) in p.iter().enumerate() {
        if *v > p[best] {
            best = i;
        }
    }
    best
}

/// The shipped model, or `None` when the file does not fit this build (the
/// rules then decide alone; a test keeps the two in step).
pub static MODEL: LazyLock<Option<Model>> = LazyLock::new(|| Model::from_json(MODEL_JSON).ok());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_model_fits_this_build() {
        let m = Model::from_json(MODEL_JSON).expect("the shipped model loads");
        assert!(m.review_below > 0.5 && m.review_below < 1.0);
    }

    #[test]
    fn probabilities_sum_to_one_and_follow_the_weights() {
        let n = feature_names().len();
        let mut weights = vec![0.0; n];
        weights[0] = 3.0; // own.lines
        let m = Model {
            about: String::new(),
            features: feature_names(),
            classes: CLASSES.to_vec(),
            weights,
            bias: vec![0.0; 5],
            review_below: 0.8,
            provenance: serde_json::Value::Null,
        };
        let mut s = Signals::default();
        s.lines[kind_index(Kind::Assertion)] = 0.9;
        let p = m.predict(&s.rows());
        assert_eq!(p.category, Category::TestFailure);
        assert!((p.probabilities.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert_eq!(p.deciding[0].0, "own.lines");
    }
}

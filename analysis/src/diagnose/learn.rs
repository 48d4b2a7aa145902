//! Training the [model](super::model) (a conditional logit: shared weights,
//! a row of features per class) by full-batch gradient descent (deterministic: same data, same bytes out),
//! labels that may allow more than one class, repository-grouped folds and
//! the review threshold chosen on out-of-fold predictions.
//!
//! Partial labels: a BugSwarm "tests failed" pair is TEST_FAILURE or
//! CODE_ERROR depending on whether the tests failed on an assertion or on
//! an uncaught error, which the label does not say. Such an example's loss
//! is `-log(p(TEST_FAILURE) + p(CODE_ERROR))`: the model is told the
//! answer is one of the two and learns which from the rest of the data.

use std::collections::BTreeMap;

use super::model::{CLASSES, argmax, scores, softmax};

/// One labelled log.
#[derive(Debug, Clone)]
pub struct Example {
    /// One row of features per class (`Signals::rows`).
    pub x: Vec<Vec<f64>>,
    /// Which classes (in [`CLASSES`] order) the label allows.
    pub allowed: [bool; 5],
    /// Its share of the loss.
    pub weight: f64,
    /// The repository: never on both sides of a split.
    pub group: String,
    /// The data set it comes from (for the report).
    pub set: String,
}

impl Example {
    /// Whether the label names exactly one class.
    pub fn exact(&self) -> Option<usize> {
        let n = self.allowed.iter().filter(|a| **a).count();
        (n == 1).then(|| self.allowed.iter().position(|a| *a).unwrap_or(0))
    }
}

/// Training settings.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// L2 penalty on the weights, and on the biases when they are learned.
    pub l2: f64,
    pub iterations: usize,
    pub learning_rate: f64,
    /// Whether each class learns a bias (its prior). Without, only the
    /// evidence decides: the mix of categories differs from one set of
    /// repositories to another, and a prior learned on one misleads on
    /// the next.
    pub biases: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            l2: 0.01,
            iterations: 3000,
            learning_rate: 0.5,
            biases: false,
        }
    }
}

/// Fitted weights: one per feature column, a bias per class.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    pub weights: Vec<f64>,
    pub bias: Vec<f64>,
}

impl Fit {
    pub fn probabilities(&self, rows: &[Vec<f64>]) -> Vec<f64> {
        softmax(&scores(&self.weights, &self.bias, rows))
    }
}

/// Fits the weights by gradient descent with Nesterov momentum; when biases
/// are learned the L2 penalty holds them too, so a category with few
/// examples is not ruled out by its prior alone.
pub fn fit(examples: &[&Example], opts: Options) -> Fit {
    let k = CLASSES.len();
    let d = examples
        .first()
        .and_then(|e| e.x.first())
        .map(Vec::len)
        .unwrap_or(0);
    let total: f64 = examples.iter().map(|e| e.weight).sum::<f64>().max(1e-12);
    let mut w = vec![0.0f64; d];
    let mut b = vec![0.0f64; k];
    let mut vw = vec![0.0f64; d];
    let mut vb = vec![0.0f64; k];
    let momentum = 0.9;
    for _ in 0..opts.iterations {
        let lw: Vec<f64> = (0..d).map(|j| w[j] + momentum * vw[j]).collect();
        let lb: Vec<f64> = (0..k).map(|c| b[c] + momentum * vb[c]).collect();
        let mut gw = vec![0.0f64; d];
        let mut gb = vec![0.0f64; k];
        for e in examples {
            let p = softmax(&scores(&lw, &lb, &e.x));
            let allowed_mass: f64 = (0..k).filter(|c| e.allowed[*c]).map(|c| p[c]).sum();
            for c in 0..k {
                let q = if e.allowed[c] {
                    p[c] / allowed_mass.max(1e-300)
                } else {
                    0.0
                };
                let g = e.weight * (p[c] - q) / total;
                if g != 0.0 {
                    for (gj, xj) in gw.iter_mut().zip(&e.x[c]) {
                        *gj += g * xj;
                    }
                    gb[c] += g;
                }
            }
        }
        for j in 0..d {
            let g = gw[j] + opts.l2 * lw[j];
            vw[j] = momentum * vw[j] - opts.learning_rate * g;
            w[j] += vw[j];
        }
        for c in (0..k).filter(|_| opts.biases) {
            let g = gb[c] + opts.l2 * lb[c];
            vb[c] = momentum * vb[c] - opts.learning_rate * g;
            b[c] += vb[c];
        }
    }
    Fit {
        weights: w,
        bias: b,
    }
}

/// The fold of each repository: repositories ordered by a hash of their
/// name, dealt round-robin (no repository on both sides of a split).
pub fn folds(examples: &[Example], k: usize) -> BTreeMap<String, usize> {
    let mut groups: Vec<&str> = examples.iter().map(|e| e.group.as_str()).collect();
    groups.sort_unstable();
    groups.dedup();
    groups.sort_by_key(|g| (fnv1a(g), *g));
    groups
        .into_iter()
        .enumerate()
        .map(|(i, g)| (g.to_string(), i % k))
        .collect()
}

fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    })
}

/// Out-of-fold class probabilities of every example: each fold's
/// repositories predicted by a model fitted on the others.
pub fn out_of_fold(examples: &[Example], k: usize, opts: Options) -> Vec<Vec<f64>> {
    let fold_of = folds(examples, k);
    let mut out = vec![Vec::new(); examples.len()];
    for f in 0..k {
        let train: Vec<&Example> = examples.iter().filter(|e| fold_of[&e.group] != f).collect();
        let m = fit(&train, opts);
        for (i, e) in examples.iter().enumerate() {
            if fold_of[&e.group] == f {
                out[i] = m.probabilities(&e.x);
            }
        }
    }
    out
}

/// The lowest probability from which the exactly-labelled out-of-fold
/// answers at or above it are right at least `target` of the time, among
/// thresholds that leave at least `min_support` answers (never below
/// `floor`; 1 when none qualifies).
pub fn review_threshold(
    examples: &[Example],
    oof: &[Vec<f64>],
    target: f64,
    min_support: usize,
    floor: f64,
) -> f64 {
    let mut scored: Vec<(f64, bool)> = examples
        .iter()
        .zip(oof)
        .filter_map(|(e, p)| e.exact().map(|c| (p[argmax(p)], argmax(p) == c)))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut right = 0usize;
    let mut best = 1.0f64;
    for (n, (p, r)) in scored.iter().enumerate() {
        right += usize::from(*r);
        let last_of_tie = scored.get(n + 1).is_none_or(|next| next.0 < *p);
        let precision = right as f64 / (n + 1) as f64;
        if last_of_tie && n + 1 >= min_support && precision >= target && *p >= floor {
            best = *p;
        }
    }
    best
}

/// Figures of a set of predictions against their labels.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Report {
    pub examples: usize,
    /// Right among all (a partial label is right when it allows the answer).
    pub accuracy: f64,
    /// Share whose probability reaches the review threshold.
    pub completed: f64,
    /// Right among those.
    pub completed_precision: f64,
}

pub fn report(examples: &[&Example], oof: &[&Vec<f64>], threshold: f64) -> Report {
    let n = examples.len();
    if n == 0 {
        return Report::default();
    }
    let mut right = 0;
    let mut done = 0;
    let mut done_right = 0;
    for (e, p) in examples.iter().zip(oof) {
        let c = argmax(p);
        let ok = e.allowed[c];
        right += usize::from(ok);
        if p[c] >= threshold {
            done += 1;
            done_right += usize::from(ok);
        }
    }
    Report {
        examples: n,
        accuracy: right as f64 / n as f64,
        completed: done as f64 / n as f64,
        completed_precision: if done == 0 {
            0.0
        } else {
            done_right as f64 / done as f64
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows where class `c`'s first column is `v` and every other is 0.
    fn rows(on: &[(usize, f64)]) -> Vec<Vec<f64>> {
        let mut r = vec![vec![0.0; 2]; 5];
        for (c, v) in on {
            r[*c][0] = *v;
            r[*c][1] = 1.0;
        }
        r
    }

    fn ex(x: Vec<Vec<f64>>, class: usize, group: &str) -> Example {
        let mut allowed = [false; 5];
        allowed[class] = true;
        Example {
            x,
            allowed,
            weight: 1.0,
            group: group.into(),
            set: "t".into(),
        }
    }

    #[test]
    fn own_evidence_is_learned_once_for_every_class_and_training_is_deterministic() {
        // Evidence for CODE_ERROR or TEST_FAILURE only; CONFIG_ERROR never
        // appears in training, yet its evidence is read the same way.
        let data: Vec<Example> = (0..40)
            .map(|i| {
                let c = i % 2 * 4;
                ex(rows(&[(c, 0.9), (4 - c, 0.1)]), c, &format!("r{i}"))
            })
            .collect();
        let refs: Vec<&Example> = data.iter().collect();
        let a = fit(&refs, Options::default());
        let b = fit(&refs, Options::default());
        assert_eq!(a, b);
        assert!(a.probabilities(&rows(&[(4, 0.9), (0, 0.1)]))[4] > 0.8);
        let p = a.probabilities(&rows(&[(2, 0.9), (0, 0.1)]));
        assert_eq!(argmax(&p), 2, "{p:?}");
    }

    #[test]
    fn a_partial_label_only_rules_out_the_classes_it_excludes() {
        // The label says TEST_FAILURE or CODE_ERROR; the rows lean CODE.
        let mut data: Vec<Example> = (0..20)
            .map(|i| ex(rows(&[(0, 0.9), (4, 0.2)]), 0, &format!("a{i}")))
            .collect();
        for i in 0..20 {
            let mut e = ex(rows(&[(0, 0.9), (4, 0.2)]), 0, &format!("c{i}"));
            e.allowed = [true, false, false, false, true];
            data.push(e);
        }
        let refs: Vec<&Example> = data.iter().collect();
        let m = fit(&refs, Options::default());
        let p = m.probabilities(&rows(&[(0, 0.9), (4, 0.2)]));
        assert!(p[0] > p[4], "{p:?}");
    }

    #[test]
    fn folds_never_split_a_repository() {
        let data: Vec<Example> = (0..30)
            .map(|i| ex(rows(&[]), 0, &format!("repo{}", i % 7)))
            .collect();
        let f = folds(&data, 5);
        assert_eq!(f.len(), 7);
        assert!(f.values().all(|v| *v < 5));
    }

    #[test]
    fn the_threshold_is_where_precision_reaches_the_target() {
        let data: Vec<Example> = (0..10)
            .map(|i| ex(rows(&[]), 0, &format!("r{i}")))
            .collect();
        // Probabilities 0.95, 0.91 … 0.59; the two lowest are wrong.
        let oof: Vec<Vec<f64>> = (0..10)
            .map(|i| {
                let p = 0.95 - 0.04 * i as f64;
                if i >= 8 {
                    vec![1.0 - p, p, 0.0, 0.0, 0.0]
                } else {
                    vec![p, 1.0 - p, 0.0, 0.0, 0.0]
                }
            })
            .collect();
        let t = review_threshold(&data, &oof, 0.95, 1, 0.5);
        assert!((t - 0.67).abs() < 1e-9, "{t}");
    }
}

//! The report: one column per configuration, a delta column when there
//! are two, and how often they agree; and the `--json` file (every log's
//! result per configuration, with the summary figures).

use std::{fmt::Write as _, path::Path};

use anyhow::Context;
use serde::Serialize;

use super::score::{Agreement, LogResult, Summary};

/// One evaluated configuration.
#[derive(Debug, Serialize)]
pub struct Evaluated {
    pub spec: String,
    /// Wall time of the whole configuration (database, workers, every log).
    pub seconds: f64,
    pub summary: Summary,
    pub results: Vec<LogResult>,
}

/// What `--json` writes.
#[derive(Serialize)]
pub struct JsonReport<'a> {
    pub data_dir: String,
    pub logs: usize,
    pub workers: usize,
    pub configurations: &'a [Evaluated],
    pub agreement: Option<&'a Agreement>,
}

pub fn write_json(path: &Path, report: &JsonReport<'_>) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(report)?;
    std::fs::write(path, text + "\n").with_context(|| format!("failed to write {}", path.display()))
}

const LABEL: usize = 32;

/// The table, as printed.
pub fn render(
    data_dir: &str,
    workers: usize,
    configs: &[Evaluated],
    agreement: Option<&Agreement>,
) -> String {
    let width = configs
        .iter()
        .map(|c| c.spec.len() + 2)
        .max()
        .unwrap_or(0)
        // `DEPENDENCY->UNKNOWN: 100`, a confusion pair, fits.
        .max(26);
    let two = configs.len() == 2;
    let mut out = String::new();
    let logs = configs.first().map_or(0, |c| c.summary.logs);
    let _ = writeln!(
        out,
        "== faultline eval: {data_dir} ({logs} logs, {workers} workers per configuration)\n"
    );
    let mut row = |label: &str, cells: Vec<String>, delta: Option<String>| {
        let mut line = format!("{label:<LABEL$}");
        for cell in cells {
            let _ = write!(line, "{cell:>width$}");
        }
        if two && let Some(d) = delta {
            let _ = write!(line, "{d:>10}");
        }
        let _ = writeln!(out, "{}", line.trim_end());
    };
    let s: Vec<&Summary> = configs.iter().map(|c| &c.summary).collect();
    let each = |f: &dyn Fn(&Summary) -> String| s.iter().map(|x| f(x)).collect::<Vec<_>>();
    let delta = |f: &dyn Fn(&Summary) -> Option<f64>, digits: usize| match s.as_slice() {
        [a, b] => match (f(a), f(b)) {
            (Some(a), Some(b)) => Some(format!("{:+.digits$}", b - a)),
            _ => Some("-".into()),
        },
        _ => None,
    };

    row(
        "",
        configs.iter().map(|c| c.spec.clone()).collect(),
        two.then(|| "delta".into()),
    );
    row("logs analysed", each(&|x| x.logs.to_string()), None);
    row(
        "category accuracy",
        each(&|x| share(x.right, x.logs)),
        delta(&|x| Some(x.accuracy), 3),
    );
    let labels: std::collections::BTreeSet<&String> =
        s.iter().flat_map(|x| x.per_category.keys()).collect();
    for label in labels {
        row(
            &format!("  {label}"),
            each(&|x| {
                x.per_category
                    .get(label)
                    .map_or("-".into(), |&(r, t)| share(r, t))
            }),
            delta(
                &|x| x.per_category.get(label).map(|&(r, t)| r as f64 / t as f64),
                3,
            ),
        );
    }
    row(
        "auto-completed (not reviewed)",
        each(&|x| share(x.auto, x.logs)),
        delta(&|x| Some(x.auto_share), 3),
    );
    row(
        "precision among auto-completed",
        each(&|x| share(x.auto_right, x.auto)),
        delta(&|x| (x.auto > 0).then_some(x.auto_precision), 3),
    );
    row("failed runs", each(&|x| x.failed.to_string()), None);
    row("reliability (confidence: accuracy)", Vec::new(), None);
    let buckets: Vec<String> = {
        let mut names: Vec<String> = Vec::new();
        for b in s.iter().flat_map(|x| &x.reliability) {
            if !names.contains(&b.bucket) {
                names.push(b.bucket.clone());
            }
        }
        names
    };
    for name in &buckets {
        let find = |x: &Summary| x.reliability.iter().find(|b| &b.bucket == name).cloned();
        row(
            &format!("  {name}"),
            each(&|x| find(x).map_or("-".into(), |b| share(b.right, b.n))),
            delta(&|x| find(x).and_then(|b| b.accuracy), 3),
        );
    }
    row(
        "tokens per analysis (mean)",
        each(&|x| format!("{:.0}", x.tokens_mean)),
        delta(&|x| Some(x.tokens_mean), 0),
    );
    row(
        "cost per analysis (mean, USD)",
        each(&|x| format!("{:.6}", x.cost_mean)),
        delta(&|x| Some(x.cost_mean), 6),
    );
    row(
        "wall time per analysis p50 (s)",
        each(&|x| x.seconds_p50.map_or("-".into(), |v| format!("{v:.2}"))),
        delta(&|x| x.seconds_p50, 2),
    );
    row(
        "wall time per analysis p99 (s)",
        each(&|x| x.seconds_p99.map_or("-".into(), |v| format!("{v:.2}"))),
        delta(&|x| x.seconds_p99, 2),
    );
    row(
        "configuration wall time (s)",
        configs
            .iter()
            .map(|c| format!("{:.0}", c.seconds))
            .collect(),
        None,
    );
    // Where the answers come from, in aggregate: the kind of evidence that
    // decided (a recogniser's kind, the failed step alone, nothing).
    row(
        "decided by (right/total; auto-completed right/total)",
        Vec::new(),
        None,
    );
    let kinds: Vec<String> = {
        let mut k: Vec<String> = Vec::new();
        for x in &s {
            for (kind, _, _) in &x.by_evidence {
                if !k.contains(kind) {
                    k.push(kind.clone());
                }
            }
        }
        k
    };
    for kind in &kinds {
        row(
            &format!("  {kind}"),
            each(&|x| {
                let find = |rows: &[(String, usize, usize)]| {
                    rows.iter()
                        .find(|(k, _, _)| k == kind)
                        .map(|(_, r, n)| format!("{r}/{n}"))
                };
                find(&x.by_evidence)
                    .zip(find(&x.auto_by_evidence))
                    .map_or(String::new(), |(all, auto)| format!("{all}; {auto}"))
            }),
            None,
        );
    }
    row("top confusions (label -> got: n)", Vec::new(), None);
    let depth = s
        .iter()
        .map(|x| x.confusion.len())
        .max()
        .unwrap_or(0)
        .min(5);
    for i in 0..depth {
        row(
            &format!("  {}", i + 1),
            each(&|x| {
                x.confusion.get(i).map_or(String::new(), |(w, g, k)| {
                    format!("{}->{}: {k}", short(Some(w)), short(g.as_deref()))
                })
            }),
            None,
        );
    }
    if depth == 0 {
        row("  none", Vec::new(), None);
    }
    if let (Some(a), [first, second]) = (agreement, configs) {
        let _ = writeln!(
            out,
            "\nagreement on {} logs: both right {}, only {} right {}, only {} right {}, both wrong {}; same category {}",
            a.logs,
            a.both_right,
            first.spec,
            a.only_first_right,
            second.spec,
            a.only_second_right,
            a.both_wrong,
            a.same_category
        );
    }
    out
}

/// `0.905 201/222`, or `-` with nothing to divide by.
fn share(a: usize, b: usize) -> String {
    if b == 0 {
        "-".into()
    } else {
        format!("{:.3} {a}/{b}", a as f64 / b as f64)
    }
}

/// A category without its suffix (`TEST_FAILURE` -> `TEST`), `none` for no category.
fn short(c: Option<&str>) -> &str {
    match c {
        None => "none",
        Some(c) => c
            .strip_suffix("_ERROR")
            .or_else(|| c.strip_suffix("_FAILURE"))
            .unwrap_or(c),
    }
}

//! `faultline-train SHARED_DATA_DIR [--out FILE] [--check] [--oof FILE]`: trains the
//! excerpt's block ranker (`analysis/model/ranker.json`, beside `--out`,
//! from `logchunks-dev`'s labelled failure lines) and the
//! diagnosis model (`analysis/model/diagnosis.json`) from the labelled sets
//! beside the project and prints its repository-grouped out-of-fold
//! figures. Deterministic: the same data gives the same file, byte for
//! byte (`--check` fails when the shipped file differs).
//!
//! Data (`../shared/data`, see their READMEs):
//! - `logchunks-dev/categories.jsonl`: Travis logs with one category each;
//! - `bugswarm-train/labels.jsonl`: failed jobs with the authors' reason;
//!   a reason that maps to one category is an exact label, `Test` (tests
//!   failed, on an assertion or on an uncaught error) allows TEST_FAILURE or
//!   CODE_ERROR, and reasons that say nothing (`Unknown`, …) are left out.
//!
//! Every repository weighs about the same (weight 1/√n for its n logs), so
//! a repository with many logs does not teach its own habits.
//!
//! `--oof FILE` also writes every log's out-of-fold probabilities and
//! features, one JSON line each, for studying errors.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use faultline_analysis::Category;
use faultline_analysis::diagnose::learn::{self, Example, Options};
use faultline_analysis::diagnose::model::{self, CLASSES, Model};
use faultline_analysis::diagnose::{EXCERPT_LINES, features};
use faultline_analysis::logs::ranker::{self, RankExample, RankOptions, Ranker};
use faultline_analysis::logs::{ExcerptOptions, excerpt_file};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const FOLDS: usize = 5;
/// What completes without review must be right this often out of fold.
const TARGET_PRECISION: f64 = 0.97;
/// A partial label teaches less than an exact one.
const PARTIAL_WEIGHT: f64 = 0.5;

/// The parts of the data the figures are reported for.
const PARTS: [&str; 3] = [
    "logchunks-dev",
    "bugswarm-train, exact labels",
    "bugswarm-train, tests failed (TEST or CODE)",
];

fn part(e: &Example) -> &'static str {
    match (e.set.as_str(), e.exact()) {
        ("logchunks-dev", _) => PARTS[0],
        (_, Some(_)) => PARTS[1],
        _ => PARTS[2],
    }
}

struct Labelled {
    set: &'static str,
    repo: String,
    log: PathBuf,
    allowed: [bool; 5],
}

fn allowed_of(c: Category) -> [bool; 5] {
    let mut a = [false; 5];
    if let Some(i) = CLASSES.iter().position(|x| *x == c) {
        a[i] = true;
    }
    a
}

fn read_jsonl(path: &Path) -> Result<Vec<Value>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("{}: {e}", path.display())))
        .collect()
}

fn sha256_of(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    Ok(faultline_analysis::hex(&Sha256::digest(&bytes)))
}

fn load(data: &Path) -> Result<(Vec<Labelled>, Value), String> {
    let mut out = Vec::new();
    let dev = data.join("logchunks-dev/categories.jsonl");
    for row in read_jsonl(&dev)? {
        let (Some(log), Some(repo), Some(cat)) = (
            row["log"].as_str(),
            row["repo"].as_str(),
            row["category"].as_str(),
        ) else {
            continue;
        };
        let Ok(c) = cat.parse::<Category>() else {
            continue;
        };
        out.push(Labelled {
            set: "logchunks-dev",
            repo: repo.to_string(),
            log: data.join("logchunks-dev").join(log),
            allowed: allowed_of(c),
        });
    }
    let bs = data.join("bugswarm-train/labels.jsonl");
    for row in read_jsonl(&bs)? {
        let (Some(log), Some(repo)) = (row["log"].as_str(), row["repo"].as_str()) else {
            continue;
        };
        let allowed = match (row["category"].as_str(), row["source_category"].as_str()) {
            (Some(c), _) => match c.parse::<Category>() {
                Ok(c) => allowed_of(c),
                Err(_) => continue,
            },
            (None, Some("Test")) => {
                let mut a = allowed_of(Category::TestFailure);
                a[0] = true; // CODE_ERROR
                a
            }
            _ => continue,
        };
        out.push(Labelled {
            set: "bugswarm-train",
            repo: repo.to_string(),
            log: data.join("bugswarm-train").join(log),
            allowed,
        });
    }
    let sources = json!({
        "logchunks-dev/categories.jsonl": sha256_of(&dev)?,
        "bugswarm-train/labels.jsonl": sha256_of(&bs)?,
    });
    Ok((out, sources))
}

/// One log's features: a row per class.
type Rows = Vec<Vec<f64>>;

/// Features of every log, two threads.
fn featurise(items: &[Labelled]) -> Result<Vec<Rows>, String> {
    let opts = ExcerptOptions {
        max_lines: EXCERPT_LINES,
        ..ExcerptOptions::default()
    };
    let threads = 2;
    let chunks: Vec<Result<Vec<(usize, Rows)>, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let opts = &opts;
                s.spawn(move || {
                    items
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| i % threads == t)
                        .map(|(i, it)| {
                            excerpt_file(&it.log, opts)
                                .map(|e| (i, features(&e)))
                                .map_err(|e| format!("{}: {e}", it.log.display()))
                        })
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into())))
            .collect()
    });
    let mut out = vec![Vec::new(); items.len()];
    for chunk in chunks {
        for (i, x) in chunk? {
            out[i] = x;
        }
    }
    Ok(out)
}

fn round(x: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    let r = (x * f).round() / f;
    if r == 0.0 { 0.0 } else { r }
}

fn run(data: &Path, out: &Path, check: bool, oof_out: Option<&Path>) -> Result<bool, String> {
    let (items, sources) = load(data)?;
    let xs = featurise(&items)?;
    let mut per_repo: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for it in &items {
        *per_repo.entry((it.set, it.repo.as_str())).or_default() += 1;
    }
    let examples: Vec<Example> = items
        .iter()
        .zip(xs)
        .map(|(it, x)| {
            let n = per_repo[&(it.set, it.repo.as_str())] as f64;
            let partial = it.allowed.iter().filter(|a| **a).count() > 1;
            Example {
                x,
                allowed: it.allowed,
                weight: (1.0 / n.sqrt()) * if partial { PARTIAL_WEIGHT } else { 1.0 },
                group: format!("{}/{}", it.set, it.repo),
                set: it.set.to_string(),
            }
        })
        .collect();
    let opts = Options::default();
    let oof = learn::out_of_fold(&examples, FOLDS, opts);
    if let Some(path) = oof_out {
        let mut f = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        for ((it, e), p) in items.iter().zip(&examples).zip(&oof) {
            let row = json!({"log": it.log, "set": e.set, "group": e.group, "allowed": e.allowed, "p": p, "x": e.x});
            writeln!(f, "{row}").map_err(|e| e.to_string())?;
        }
    }
    let threshold = round(
        learn::review_threshold(&examples, &oof, TARGET_PRECISION, 20, 0.5),
        3,
    );
    let mut reports = BTreeMap::new();
    for name in PARTS {
        let (ex, pr): (Vec<&Example>, Vec<&Vec<f64>>) = examples
            .iter()
            .zip(&oof)
            .filter(|(e, _)| part(e) == name)
            .unzip();
        let r = learn::report(&ex, &pr, threshold);
        println!(
            "out of fold  {name:<45} {:>4} logs  accuracy {:.3}  completed {:.3}  right among completed {:.3}",
            r.examples, r.accuracy, r.completed, r.completed_precision
        );
        reports.insert(
            name.to_string(),
            json!({
                "logs": r.examples,
                "accuracy": round(r.accuracy, 3),
                "completed": round(r.completed, 3),
                "completed_precision": round(r.completed_precision, 3),
            }),
        );
    }
    println!("review below {threshold:.3} (out-of-fold precision target {TARGET_PRECISION})");
    let all: Vec<&Example> = examples.iter().collect();
    let fitted = learn::fit(&all, opts);
    let m = Model {
        about: "Faultline's diagnosis model: a conditional logit over kinds of evidence, \
                one row per category (analysis/src/diagnose/model.rs), written by `make train` \
                (analysis/src/bin/faultline-train.rs); do not edit by hand"
            .into(),
        features: model::feature_names(),
        classes: CLASSES.to_vec(),
        weights: fitted.weights.iter().map(|v| round(*v, 4)).collect(),
        bias: fitted.bias.iter().map(|v| round(*v, 4)).collect(),
        review_below: threshold,
        provenance: json!({
            "data": sources,
            "logs": examples.len(),
            "repositories": per_repo.len(),
            "labels": "logchunks-dev: one category per log; bugswarm-train: Checkstyle, Compilation, Documentation, License -> CODE_ERROR, Missing library -> DEPENDENCY_ERROR, Unable to clone -> INFRA_ERROR, Test -> TEST_FAILURE or CODE_ERROR (partial), other reasons left out",
            "weights": "1/sqrt(logs of the repository), partial labels x0.5",
            "training": {"l2": opts.l2, "iterations": opts.iterations, "learning_rate": opts.learning_rate, "momentum": 0.9, "biases": opts.biases},
            "validation": format!("{FOLDS}-fold cross-validation grouped by repository; every figure below is out of fold"),
            "review_below": format!("lowest probability from which the exactly-labelled out-of-fold answers are right >= {TARGET_PRECISION} at every higher threshold with >= 20 answers"),
            "out_of_fold": reports,
        }),
    };
    let text = serde_json::to_string_pretty(&m).map_err(|e| e.to_string())? + "\n";
    write_or_check(out, &text, check)
}

/// Writes `text` to `out`, or with `check` only compares: `false` when the
/// shipped file is not what the data trains, byte for byte.
fn write_or_check(out: &Path, text: &str, check: bool) -> Result<bool, String> {
    if check {
        let shipped = std::fs::read_to_string(out).unwrap_or_default();
        if shipped != text {
            eprintln!(
                "faultline-train: {} differs from what the data trains",
                out.display()
            );
            return Ok(false);
        }
        println!("{} is what the data trains, byte for byte", out.display());
        return Ok(true);
    }
    std::fs::write(out, text).map_err(|e| format!("writing {}: {e}", out.display()))?;
    println!("wrote {}", out.display());
    Ok(true)
}

/// The non-blank lines of `text`, trimmed, split where Python's
/// `splitlines` splits (how the excerpt scorer compares lines).
fn line_set(text: &str) -> std::collections::HashSet<String> {
    text.split([
        '\n', '\r', '\u{b}', '\u{c}', '\u{1c}', '\u{1d}', '\u{1e}', '\u{85}', '\u{2028}',
        '\u{2029}',
    ])
    .map(str::trim)
    .filter(|l| !l.is_empty())
    .map(str::to_string)
    .collect()
}

/// Every labelled dev log's candidate blocks, with each block's F1
/// against the labelled failure lines.
fn rank_examples(data: &Path) -> Result<(Vec<RankExample>, String), String> {
    use std::io::Read;
    let labels = data.join("logchunks-dev/labels.jsonl");
    let rows = read_jsonl(&labels)?;
    let opts = ExcerptOptions {
        candidates: true,
        ..ExcerptOptions::default()
    };
    let mut out = Vec::new();
    for row in rows {
        let (Some(log), Some(repo), Some(chunk)) = (
            row["log"].as_str(),
            row["repo"].as_str(),
            row["chunk"].as_str(),
        ) else {
            continue;
        };
        let path = data.join("logchunks-dev").join(log);
        let ex = excerpt_file(&path, &opts).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut raw = Vec::new();
        flate2::read::MultiGzDecoder::new(
            std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?,
        )
        .read_to_end(&mut raw)
        .map_err(|e| format!("{}: {e}", path.display()))?;
        let text = String::from_utf8_lossy(&raw);
        let lines: Vec<&str> = text.split('\n').collect();
        let gold = line_set(chunk);
        let mut features = Vec::new();
        let mut f1 = Vec::new();
        for c in &ex.candidates {
            let mut got = std::collections::HashSet::new();
            for n in &c.line_nos {
                if let Some(l) = lines.get(*n as usize - 1) {
                    got.extend(line_set(l));
                }
            }
            let hit = got.intersection(&gold).count() as f64;
            let p = if got.is_empty() {
                0.0
            } else {
                hit / got.len() as f64
            };
            let r = if gold.is_empty() {
                0.0
            } else {
                hit / gold.len() as f64
            };
            f1.push(if p + r > 0.0 {
                2.0 * p * r / (p + r)
            } else {
                0.0
            });
            features.push(c.features.iter().map(|v| f64::from(*v)).collect());
        }
        out.push(RankExample {
            features,
            f1,
            group: repo.to_string(),
        });
    }
    Ok((out, sha256_of(&labels)?))
}

/// Trains the block ranker (`analysis/model/ranker.json`), printing its
/// repository-grouped out-of-fold figures; with `check`, only compares.
fn train_ranker(data: &Path, out: &Path, check: bool) -> Result<bool, String> {
    let (examples, digest) = rank_examples(data)?;
    let opts = RankOptions::default();
    let mut groups: Vec<&str> = examples.iter().map(|e| e.group.as_str()).collect();
    groups.sort();
    groups.dedup();
    let fold_of = |g: &str| groups.iter().position(|x| *x == g).unwrap_or(0) % FOLDS;
    let mut oof = 0.0;
    for k in 0..FOLDS {
        let train: Vec<&RankExample> = examples.iter().filter(|e| fold_of(&e.group) != k).collect();
        let w = ranker::fit(&train, opts);
        oof += examples
            .iter()
            .filter(|e| fold_of(&e.group) == k)
            .map(|e| ranker::top_f1(e, &w))
            .sum::<f64>();
    }
    let n = examples.len().max(1) as f64;
    let oof = round(oof / n, 3);
    let oracle = round(
        examples
            .iter()
            .map(|e| e.f1.iter().copied().fold(0.0, f64::max))
            .sum::<f64>()
            / n,
        3,
    );
    println!(
        "ranker: {} logs of {} repositories; out of fold, the first block's F1 {oof:.3} (the best block's: {oracle:.3})",
        examples.len(),
        groups.len()
    );
    let all: Vec<&RankExample> = examples.iter().collect();
    let w = ranker::fit(&all, opts);
    let r = Ranker {
        about: "Faultline's block ranker: exp(weights . features) over a log's candidate blocks \
                (analysis/src/logs/ranker.rs), written by `make train` \
                (analysis/src/bin/faultline-train.rs); do not edit by hand"
            .into(),
        features: ranker::FEATURES.iter().map(|s| s.to_string()).collect(),
        weights: w.iter().map(|v| round(*v, 4)).collect(),
        provenance: json!({
            "data": {"logchunks-dev/labels.jsonl": digest},
            "logs": examples.len(),
            "repositories": groups.len(),
            "target": "per log, the candidate blocks whose lines are closest (F1) to the labelled failure lines",
            "training": {"l2": opts.l2, "iterations": opts.iterations, "step": opts.step},
            "validation": format!("{FOLDS}-fold cross-validation grouped by repository (sorted names, i mod {FOLDS})"),
            "out_of_fold": {"first_block_f1": oof, "best_block_f1": oracle},
        }),
    };
    let text = serde_json::to_string_pretty(&r).map_err(|e| e.to_string())? + "\n";
    write_or_check(out, &text, check)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut data = None;
    let mut out = PathBuf::from("analysis/model/diagnosis.json");
    let mut check = false;
    let mut oof_out = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" => match it.next() {
                Some(p) => out = PathBuf::from(p),
                None => {
                    eprintln!("faultline-train: --out needs a file");
                    return ExitCode::from(2);
                }
            },
            "--check" => check = true,
            "--oof" => match it.next() {
                Some(p) => oof_out = Some(PathBuf::from(p)),
                None => {
                    eprintln!("faultline-train: --oof needs a file");
                    return ExitCode::from(2);
                }
            },
            "-h" | "--help" => {
                println!(
                    "usage: faultline-train SHARED_DATA_DIR [--out FILE] [--check] [--oof FILE]"
                );
                return ExitCode::SUCCESS;
            }
            other => data = Some(PathBuf::from(other)),
        }
    }
    let Some(data) = data else {
        eprintln!("usage: faultline-train SHARED_DATA_DIR [--out FILE] [--check] [--oof FILE]");
        return ExitCode::from(2);
    };
    let ranker_out = out.with_file_name("ranker.json");
    match train_ranker(&data, &ranker_out, check) {
        Ok(true) => {}
        Ok(false) => return ExitCode::FAILURE,
        Err(e) => {
            eprintln!("faultline-train: {e}");
            return ExitCode::FAILURE;
        }
    }
    match run(&data, &out, check, oof_out.as_deref()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("faultline-train: {e}");
            ExitCode::FAILURE
        }
    }
}

//! The journal's JSON is a stored format: what the worker writes for the
//! bundled samples is pinned in `tests/fixtures/golden/`, byte for byte as
//! Postgres' jsonb prints it. A change to how tools build their
//! observations (or how reasoners phrase their calls) that changes a stored
//! journal fails here; only run and event ids and timestamps are
//! normalised. After a deliberate format change, rewrite the files with
//! `FAULTLINE_GOLDEN=update` and say in the commit why old rows still read
//! (or which migration converts them).
//!
//! One database for every sample, analysed one after another, so the error
//! library fills as it goes: later samples see earlier ones as text-similar
//! matches, a repeated sample sees its first analysis by fingerprint, and a
//! failure a reviewer resolved comes back as a `review_resolution` match.

use std::{collections::HashMap, path::PathBuf, time::Duration};

use faultline_tests::{TestDb, wait_terminal};
use regex::Regex;
use uuid::Uuid;

/// The bundled samples, in the order they are analysed.
const SAMPLES: [&str; 7] = [
    "oom-killed",
    "missing-dependency",
    "assertion-failure",
    "network-timeout",
    "bad-config",
    "compile-error",
    "ambiguous",
];

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/golden")
}

fn sample(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../samples/{name}.log"))
}

/// Enqueues a sample under its own dedup key and waits for the run's end.
async fn analyse(db: &TestDb, name: &str, key: &str) -> (Uuid, String) {
    let path = sample(name);
    let run: Uuid = db
        .cli_ok(
            &["enqueue", path.to_str().unwrap(), "--dedup-key", key],
            &[],
        )
        .parse()
        .unwrap();
    let status = wait_terminal(&db.pool, run, Duration::from_secs(90)).await;
    (run, status)
}

/// The run's journal as stored: one line per step, tab-separated:
/// iteration, action, `action_input::text`, `observation::text`.
async fn journal(db: &TestDb, run: Uuid) -> String {
    let rows: Vec<(i32, String, String, String)> = sqlx::query_as(
        "SELECT iteration, action, action_input::text, observation::text
         FROM run_steps WHERE run_id = $1 ORDER BY iteration",
    )
    .bind(run)
    .fetch_all(&db.pool)
    .await
    .unwrap();
    rows.iter()
        .map(|(i, action, input, observation)| format!("{i}\t{action}\t{input}\t{observation}\n"))
        .collect()
}

/// Replaces what differs between two runs of the same sequence: ids (named
/// in order of first appearance, so which id is which still compares) and
/// timestamps.
struct Normaliser {
    uuid: Regex,
    time: Regex,
    ids: HashMap<String, usize>,
}

impl Normaliser {
    fn new() -> Self {
        Self {
            uuid: Regex::new(
                r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
            )
            .unwrap(),
            time: Regex::new(
                r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})",
            )
            .unwrap(),
            ids: HashMap::new(),
        }
    }

    fn apply(&mut self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for m in self.uuid.find_iter(text) {
            out.push_str(&text[last..m.start()]);
            let next = self.ids.len() + 1;
            let n = *self.ids.entry(m.as_str().to_lowercase()).or_insert(next);
            out.push_str(&format!("<id-{n}>"));
            last = m.end();
        }
        out.push_str(&text[last..]);
        self.time.replace_all(&out, "<time>").into_owned()
    }
}

/// Claims the run's review item and resolves it with a correction, as a
/// reviewer would.
async fn resolve_review(db: &TestDb, run: Uuid) {
    let (item,): (Uuid,) = sqlx::query_as("SELECT id FROM review_items WHERE run_id = $1")
        .bind(run)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    let item = item.to_string();
    db.cli_ok(&["review", "claim", &item, "--as", "carol"], &[]);
    db.cli_ok(
        &[
            "review",
            "resolve",
            &item,
            "--as",
            "carol",
            "--category",
            "INFRA_ERROR",
            "--root-cause",
            "build-07 lost its Go module cache mount during make check",
            "--fix",
            "Re-provision build-07's cache volume; pin the job to healthy agents.",
        ],
        &[],
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_journals_of_the_bundled_samples_are_byte_identical_to_the_golden_files() {
    let db = TestDb::new().await;
    let _worker = db.worker("golden", &[]);
    let mut runs: Vec<(String, Uuid)> = Vec::new();
    for name in SAMPLES {
        let (run, status) = analyse(&db, name, &format!("golden#{name}#1")).await;
        assert_ne!(status, "failed", "{name}");
        if name == "ambiguous" {
            assert_eq!(status, "needs_review", "{name}");
            resolve_review(&db, run).await;
        }
        runs.push((name.to_string(), run));
    }
    // Again: the same fingerprint (completed before), and the one a
    // reviewer resolved.
    for name in ["oom-killed", "ambiguous"] {
        let (run, status) = analyse(&db, name, &format!("golden#{name}#2")).await;
        assert_ne!(status, "failed", "{name}");
        runs.push((format!("{name}.again"), run));
    }

    let update = std::env::var("FAULTLINE_GOLDEN").as_deref() == Ok("update");
    let mut normaliser = Normaliser::new();
    let mut mismatches = Vec::new();
    for (label, run) in &runs {
        let actual = normaliser.apply(&journal(&db, *run).await);
        let path = golden_dir().join(format!("{label}.journal"));
        if update {
            std::fs::create_dir_all(golden_dir()).unwrap();
            std::fs::write(&path, &actual).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (FAULTLINE_GOLDEN=update writes it)",
                path.display()
            )
        });
        if actual != expected {
            let first = actual
                .lines()
                .zip(expected.lines())
                .position(|(a, e)| a != e)
                .unwrap_or(actual.lines().count().min(expected.lines().count()));
            mismatches.push(format!(
                "{label}: step line {} differs\n  expected: {}\n  actual:   {}",
                first + 1,
                expected.lines().nth(first).unwrap_or("<none>"),
                actual.lines().nth(first).unwrap_or("<none>"),
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

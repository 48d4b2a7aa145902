//! `faultline eval DATA_DIR`: a labelled set through the real pipeline
//! (scratch databases, real workers, the scripted model of
//! `faultline-fake-model` as the LLM), the side-by-side report, the
//! `--json` file, and the scratch databases gone afterwards.

use std::{
    fs,
    io::{BufRead, BufReader},
    path::PathBuf,
    process::{Child, Command, Output, Stdio},
};

use faultline_tests::{TestDb, admin_url, bin};
use serde_json::Value;
use sqlx::{Connection, PgConnection};

/// The bundled samples and their categories (samples/README.md's table).
fn samples() -> Vec<(String, String)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../samples");
    let table = fs::read_to_string(root.join("README.md")).unwrap();
    let row = regex::Regex::new(r"^\|\s*`([\w.-]+\.log)`\s*\|.*\|\s*`([A-Z_]+)`").unwrap();
    table
        .lines()
        .filter_map(|l| row.captures(l))
        .map(|c| (c[1].to_string(), c[2].to_string()))
        .collect()
}

/// A labelled folder of the samples: `logs/NAME` and `categories.jsonl`.
fn labelled_dir(name: &str) -> PathBuf {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../samples");
    let dir = std::env::temp_dir().join(format!("{name}-{}", uuid::Uuid::new_v4().simple()));
    fs::create_dir_all(dir.join("logs")).unwrap();
    let mut lines = String::new();
    for (file, category) in samples() {
        fs::copy(src.join(&file), dir.join("logs").join(&file)).unwrap();
        lines += &format!(
            "{}\n",
            serde_json::json!({"log": format!("logs/{file}"), "repo": "samples", "category": category})
        );
    }
    fs::write(dir.join("categories.jsonl"), lines).unwrap();
    dir
}

/// `faultline-fake-model` on a free port; killed when dropped.
struct FakeModel {
    child: Child,
    base_url: String,
}

impl FakeModel {
    fn start() -> FakeModel {
        let mut child = Command::new(bin("faultline-fake-model"))
            .args(["--addr", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let base_url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        FakeModel { child, base_url }
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `faultline eval ARGS` against the server of `database_url`; its
/// output and its process id (the scratch databases are named by it).
fn eval(database_url: &str, model: Option<&FakeModel>, args: &[&str]) -> (Output, u32) {
    let mut cmd = Command::new(bin("faultline"));
    cmd.arg("eval")
        .args(args)
        .env("DATABASE_URL", database_url)
        .env("NO_COLOR", "1")
        .env_remove("LLM_MODEL")
        .env_remove("FAULTLINE_PROMPT_VERSION")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(m) = model {
        cmd.env("LLM_BASE_URL", &m.base_url)
            .env("LLM_API_KEY", "sk-fake")
            .env("LLM_RETRY_BASE_MS", "100");
    }
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    (child.wait_with_output().unwrap(), pid)
}

/// The databases of an eval process still on the server.
async fn scratch_databases(pid: u32) -> Vec<String> {
    let mut conn = PgConnection::connect(&admin_url()).await.unwrap();
    sqlx::query_scalar("SELECT datname::text FROM pg_database WHERE datname LIKE $1")
        .bind(format!("faultline_eval_{pid}_%"))
        .fetch_all(&mut conn)
        .await
        .unwrap()
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "faultline eval failed ({}): {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The report's row that starts with `label`.
fn row<'a>(report: &'a str, label: &str) -> &'a str {
    report
        .lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("no {label:?} row in\n{report}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn eval_compare_reports_both_configurations_side_by_side_and_drops_its_databases() {
    let dir = labelled_dir("faultline-eval");
    let n = samples().len();
    assert!(n >= 5, "the samples table lists {n} logs");
    let model = FakeModel::start();
    let json = dir.join("eval.json");
    let (out, pid) = eval(
        &admin_url(),
        Some(&model),
        &[
            dir.to_str().unwrap(),
            "--compare",
            "openai:scripted",
            "--workers",
            "1",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let report = stdout(&out);

    // Both columns, and a delta.
    let header = report
        .lines()
        .find(|l| l.contains("heuristic") && l.contains("openai:scripted"))
        .unwrap_or_else(|| panic!("no header with both configurations in\n{report}"));
    assert!(header.contains("delta"), "{header}");
    let logs: Vec<&str> = row(&report, "logs analysed").split_whitespace().collect();
    assert_eq!(logs[2..], [n.to_string(), n.to_string()], "{report}");

    // The figures printed are those of the JSON file, which has every log.
    let doc: Value = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    let configs = doc["configurations"].as_array().unwrap();
    assert_eq!(configs.len(), 2);
    let (heuristic, scripted) = (&configs[0], &configs[1]);
    assert_eq!(heuristic["spec"], "heuristic");
    assert_eq!(scripted["spec"], "openai:scripted");
    let accuracy_row = row(&report, "category accuracy");
    for config in configs {
        let s = &config["summary"];
        assert_eq!(config["results"].as_array().unwrap().len(), n);
        assert_eq!(s["logs"], n);
        let printed = format!(
            "{:.3} {}/{}",
            s["accuracy"].as_f64().unwrap(),
            s["right"],
            n
        );
        assert!(
            accuracy_row.contains(&printed),
            "{printed:?} not in {accuracy_row:?}"
        );
        // Right is right: the label and the run's category agree.
        let right = config["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["got"] == r["expected"])
            .count();
        assert_eq!(s["right"], right);
    }
    // The heuristic knows these samples; the scripted model gets some right.
    assert!(
        heuristic["summary"]["accuracy"].as_f64().unwrap() >= 0.5,
        "{report}"
    );
    assert!(
        scripted["summary"]["right"].as_u64().unwrap() >= 1,
        "{report}"
    );
    // Each configuration's runs used its reasoner, and only the model's cost tokens.
    for r in heuristic["results"].as_array().unwrap() {
        assert_eq!(r["reasoner"], "heuristic", "{r}");
        assert_eq!(r["tokens"], 0, "{r}");
    }
    for r in scripted["results"].as_array().unwrap() {
        assert_eq!(r["reasoner"], "openai", "{r}");
        assert!(r["tokens"].as_i64().unwrap() > 0, "{r}");
        assert!(r["seconds"].as_f64().unwrap() > 0.0, "{r}");
    }
    assert!(scripted["summary"]["tokens_mean"].as_f64().unwrap() > 0.0);
    let tokens: Vec<&str> = row(&report, "tokens per analysis")
        .split_whitespace()
        .collect();
    assert_eq!(tokens[4], "0", "{report}");
    assert!(tokens[5].parse::<u64>().unwrap() > 0, "{report}");
    // Agreement over the same logs.
    let a = &doc["agreement"];
    let sum: u64 = [
        "both_right",
        "only_first_right",
        "only_second_right",
        "both_wrong",
    ]
    .iter()
    .map(|k| a[k].as_u64().unwrap())
    .sum();
    assert_eq!(sum, n as u64);
    assert!(
        report.contains(&format!(
            "agreement on {n} logs: both right {}",
            a["both_right"]
        )),
        "{report}"
    );

    assert_eq!(scratch_databases(pid).await, Vec::<String>::new());
    fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn eval_pins_a_prompt_version_copied_from_the_registry() {
    let db = TestDb::new().await;
    let prompt = db.write("prompt.txt", "You diagnose CI failures. Be brief.");
    let version = db.cli_ok(
        &["prompt", "add", prompt.to_str().unwrap(), "--name", "brief"],
        &[],
    );
    let dir = labelled_dir("faultline-eval-prompt");
    let model = FakeModel::start();
    let json = dir.join("eval.json");
    let (out, pid) = eval(
        &db.url,
        Some(&model),
        &[
            dir.to_str().unwrap(),
            "--reasoner",
            "openai:scripted@brief",
            "--workers",
            "1",
            "--limit",
            "2",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    stdout(&out);
    let doc: Value = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    let results = doc["configurations"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for r in results {
        assert_eq!(r["prompt_version"].to_string(), version, "{r}");
    }
    assert_eq!(scratch_databases(pid).await, Vec::<String>::new());

    // A version the registry does not have: a clear error, nothing started.
    let (out, pid) = eval(
        &db.url,
        Some(&model),
        &[dir.to_str().unwrap(), "--reasoner", "openai:scripted@99"],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("prompt version \"99\" is not in the prompt registry"),
        "{err}"
    );
    assert_eq!(scratch_databases(pid).await, Vec::<String>::new());
    fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn eval_without_a_labelled_set_says_what_is_missing() {
    let missing = std::env::temp_dir().join(format!("no-such-{}", uuid::Uuid::new_v4().simple()));
    let (out, _) = eval(&admin_url(), None, &[missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "DATA_DIR {} is not a directory",
            missing.display()
        )) && err.contains("categories.jsonl"),
        "{err}"
    );

    let empty = missing.with_extension("empty");
    fs::create_dir_all(&empty).unwrap();
    let (out, _) = eval(&admin_url(), None, &[empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{} has no categories.jsonl", empty.display())),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    fs::remove_dir_all(&empty).unwrap();
}

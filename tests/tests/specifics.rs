//! Specific answers: the result names what the log shows (failing tests
//! with file:line, the first compiler/linter diagnostic, the package that
//! could not be resolved, the failed command and its exit code) as
//! structured fields, shown by `status` (human and JSON), `trace`, the REST
//! API and notifications. The logs are the bundled samples and short
//! snippets of common ecosystems written for these tests
//! (`tests/fixtures/logs/`), analysed by the real pipeline.

use std::{path::PathBuf, time::Duration};

use faultline_shared::storage::events::NewEvent;
use faultline_tests::{TestDb, wait_terminal, wait_until};
use serde_json::{Value, json};
use uuid::Uuid;
use wiremock::{
    Mock, MockServer, ResponseTemplate,
    matchers::{method, path, path_regex},
};

fn log(rel: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A log, and texts its root-cause sentence must contain (its structured
/// fields are in [`fields`]).
struct Expect {
    log: &'static str,
    root_cause: &'static [&'static str],
}

fn expectations() -> Vec<Expect> {
    vec![
        // The bundled samples.
        Expect {
            log: "samples/assertion-failure.log",
            root_cause: &["test_invoice_total_rounds_vat_per_line"],
        },
        Expect {
            log: "samples/compile-error.log",
            root_cause: &["crates/ledger-core/src/posting.rs:142", "E0308"],
        },
        Expect {
            log: "samples/missing-dependency.log",
            root_cause: &["`yaml`"],
        },
        Expect {
            log: "samples/network-timeout.log",
            root_cause: &["`npm ci --no-audit --no-fund --loglevel=http` exited with 1"],
        },
        Expect {
            log: "samples/oom-killed.log",
            root_cause: &["reconcilesOneMillionPostings()", "exited with 137"],
        },
        // Snippets of other ecosystems.
        Expect {
            log: "tests/fixtures/logs/pytest-assertion.log",
            root_cause: &["test_apply_coupon"],
        },
        Expect {
            log: "tests/fixtures/logs/rustc-error.log",
            root_cause: &[
                "src/account.rs:57",
                "`cargo build --verbose` exited with 101",
            ],
        },
        Expect {
            log: "tests/fixtures/logs/pip-no-distribution.log",
            root_cause: &["tensorflow"],
        },
        Expect {
            log: "tests/fixtures/logs/go-test-make.log",
            root_cause: &["TestParseDuration", "`make test` exited with 2"],
        },
        Expect {
            log: "tests/fixtures/logs/eslint-error.log",
            root_cause: &["@typescript-eslint/no-unused-vars"],
        },
        Expect {
            log: "tests/fixtures/logs/npm-eresolve.log",
            root_cause: &["`npm install` exited with 1"],
        },
    ]
}

/// The structured fields each log's answer must carry.
fn fields(log: &str) -> Vec<(&'static str, Value)> {
    match log {
        "samples/assertion-failure.log" => vec![
            (
                "/failing_tests/0/name",
                json!("test_invoice_total_rounds_vat_per_line"),
            ),
            ("/failing_tests/0/file", json!("tests/test_totals.py")),
            ("/failing_tests/0/runner", json!("pytest")),
        ],
        "samples/compile-error.log" => vec![
            ("/diagnostic/tool", json!("rustc")),
            ("/diagnostic/code", json!("E0308")),
            (
                "/diagnostic/file",
                json!("crates/ledger-core/src/posting.rs"),
            ),
            ("/diagnostic/line", json!(142)),
            ("/diagnostic/column", json!(9)),
            ("/failed_step/exit_code", json!(101)),
        ],
        "samples/missing-dependency.log" => vec![("/unresolved_packages/0/name", json!("yaml"))],
        "samples/network-timeout.log" => vec![
            (
                "/failed_step/command",
                json!("npm ci --no-audit --no-fund --loglevel=http"),
            ),
            ("/failed_step/exit_code", json!(1)),
        ],
        "samples/oom-killed.log" => vec![
            (
                "/failing_tests/0/name",
                json!("reconcilesOneMillionPostings()"),
            ),
            (
                "/failed_step/command",
                json!("./gradlew build --no-daemon --stacktrace"),
            ),
            ("/failed_step/exit_code", json!(137)),
        ],
        "tests/fixtures/logs/pytest-assertion.log" => vec![
            ("/failing_tests/0/name", json!("test_apply_coupon")),
            ("/failing_tests/0/file", json!("tests/test_cart.py")),
            (
                "/failed_step/command",
                json!("python -m pytest -q --maxfail=5"),
            ),
            ("/failed_step/exit_code", json!(1)),
        ],
        "tests/fixtures/logs/rustc-error.log" => vec![
            ("/diagnostic/tool", json!("rustc")),
            ("/diagnostic/code", json!("E0425")),
            ("/diagnostic/file", json!("src/account.rs")),
            ("/diagnostic/line", json!(57)),
            ("/diagnostic/column", json!(9)),
            ("/failed_step/command", json!("cargo build --verbose")),
            ("/failed_step/exit_code", json!(101)),
        ],
        "tests/fixtures/logs/pip-no-distribution.log" => vec![
            ("/unresolved_packages/0/name", json!("tensorflow")),
            ("/unresolved_packages/0/version", json!("==1.15.5")),
            ("/unresolved_packages/0/tool", json!("pip")),
            (
                "/failed_step/command",
                json!("pip install -r requirements.txt"),
            ),
        ],
        "tests/fixtures/logs/go-test-make.log" => vec![
            ("/failing_tests/0/name", json!("TestParseDuration")),
            ("/failing_tests/0/file", json!("duration_test.go")),
            ("/failing_tests/0/line", json!(27)),
            ("/failed_step/command", json!("make test")),
            ("/failed_step/exit_code", json!(2)),
        ],
        "tests/fixtures/logs/eslint-error.log" => vec![
            ("/diagnostic/tool", json!("eslint")),
            ("/diagnostic/line", json!(14)),
            ("/diagnostic/column", json!(7)),
            (
                "/diagnostic/code",
                json!("@typescript-eslint/no-unused-vars"),
            ),
            (
                "/failed_step/command",
                json!("npx eslint --max-warnings 0 src"),
            ),
        ],
        "tests/fixtures/logs/npm-eresolve.log" => vec![
            ("/failed_step/command", json!("npm install")),
            ("/failed_step/exit_code", json!(1)),
        ],
        other => panic!("no expectation for {other}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_name_the_failing_test_file_line_package_and_command_as_structured_fields() {
    let db = TestDb::new().await;
    let cases = expectations();
    let runs: Vec<Uuid> = cases
        .iter()
        .map(|c| {
            let name = c.log.rsplit('/').next().unwrap();
            db.enqueue(&db.write(name, log(c.log)), &[])
        })
        .collect();
    let _worker = db.worker("w", &[("FAULTLINE_WORKER_CONCURRENCY", "4")]);
    let serve = db.serve(&[]).await;
    let reviewer = db.token("reviewer", "triage");
    let http = reqwest::Client::new();

    for (case, run) in cases.iter().zip(&runs) {
        wait_terminal(&db.pool, *run, Duration::from_secs(120)).await;
        let status: Value =
            serde_json::from_str(&db.cli_ok(&["status", &run.to_string(), "--json"], &[])).unwrap();
        let result = &status["run"]["result"];
        let specifics = &result["specifics"];
        for (pointer, want) in fields(case.log) {
            assert_eq!(
                specifics.pointer(pointer),
                Some(&want),
                "{}: {pointer} in {specifics:#}",
                case.log
            );
        }
        // The root-cause sentence names them too.
        let root_cause = result["root_cause"].as_str().unwrap();
        for text in case.root_cause {
            assert!(
                root_cause.contains(text),
                "{}: {text:?} not in {root_cause:?}",
                case.log
            );
        }
        // The REST API serves the same fields.
        let api: Value = http
            .get(format!("{}/api/v1/analyses/{run}", serve.base))
            .bearer_auth(&reviewer)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(&api["result"]["specifics"], specifics, "{}", case.log);
    }

    // People read them in `status` and `trace`.
    let go = runs[cases
        .iter()
        .position(|c| c.log.ends_with("go-test-make.log"))
        .unwrap()]
    .to_string();
    let human = db.cli_ok(&["status", &go], &[]);
    assert!(
        human.contains("  test:       `TestParseDuration` at duration_test.go:27 (go test)"),
        "{human}"
    );
    assert!(
        human.contains("  step:       `make test` exited with 2"),
        "{human}"
    );
    // Every answer states its origin and why (no pass on record here).
    assert!(human.contains("  origin:     unknown ("), "{human}");
    let trace = db.cli_ok(&["trace", &go], &[]);
    assert!(
        trace.contains("test: `TestParseDuration` at duration_test.go:27"),
        "{trace}"
    );
    assert!(
        trace.contains("names `TestParseDuration` (duration_test.go:27) fails"),
        "the excerpt's facts are summarised where they were observed: {trace}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn notifications_carry_the_specifics() {
    let db = TestDb::new().await;
    let fake = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/hook"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&fake)
        .await;
    Mock::given(path_regex("^/repos/acme/clock/"))
        .respond_with(faultline_tests::fakes::FakeChecks::default())
        .mount(&fake)
        .await;
    let url = format!("{}/hook", fake.uri());
    let api = fake.uri();
    let _worker = db.worker(
        "w",
        &[
            ("NOTIFY_WEBHOOK_URL", url.as_str()),
            ("NOTIFY_WEBHOOK_SECRET", "notify-secret-for-tests"),
            ("NOTIFY_ON_REVIEW", "true"),
            ("NOTIFY_POLL_INTERVAL", "100ms"),
            ("GITHUB_TOKEN", "ghs_test_token"),
            ("GITHUB_API_URL", api.as_str()),
        ],
    );
    // A GitHub Actions failure, stored as the webhook handler stores it.
    let event = NewEvent {
        dedup_key: "github:delivery:specifics-1".into(),
        source: "github".into(),
        job_name: Some("CI / test".into()),
        repository: Some("acme/clock".into()),
        commit_sha: Some("9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a393f2a".into()),
        ..NewEvent::default()
    };
    let run = db
        .ingest(
            &event,
            log("tests/fixtures/logs/go-test-make.log").as_slice(),
            5,
        )
        .await;
    wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    let requests = wait_until(Duration::from_secs(30), || async {
        let got = fake.received_requests().await.unwrap_or_default();
        let posts = got.iter().filter(|r| r.method.as_str() == "POST").count();
        (posts >= 2).then_some(got)
    })
    .await;
    let body = |suffix: &str| -> Value {
        let r = requests
            .iter()
            .find(|r| r.method.as_str() == "POST" && r.url.path().ends_with(suffix))
            .unwrap_or_else(|| panic!("no request to {suffix}"));
        serde_json::from_slice(&r.body).unwrap()
    };
    let hook = body("/hook");
    assert_eq!(
        hook["specifics"]["failing_tests"][0],
        json!({"name": "TestParseDuration", "file": "duration_test.go", "line": 27, "runner": "go test"}),
        "{hook:#}"
    );
    assert_eq!(
        hook["specifics"]["failed_step"],
        json!({"command": "make test", "exit_code": 2})
    );
    let check = body("/check-runs");
    let summary = check["output"]["summary"].as_str().unwrap();
    assert!(
        summary.contains("- test: `TestParseDuration` at duration_test.go:27 (go test)")
            && summary.contains("- step: `make test` exited with 2"),
        "{summary}"
    );
}

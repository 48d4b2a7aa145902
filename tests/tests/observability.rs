//! Observability of the real binaries: OTLP traces (one trace per analysis
//! across workers), Prometheus metrics on the producer and the worker, the
//! worker's health and readiness, JSON logs.
//!
//! Traces go to a local OTLP/HTTP receiver in this file that decodes the
//! real protobuf payload (`POST /v1/traces`, opentelemetry-proto).

use std::{
    collections::{BTreeSet, HashMap},
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{Router, body::Bytes, extract::State, routing::post};
use faultline_tests::{
    TestDb, Worker, metric_sample as sample, oom_log, run_state, wait_terminal, wait_until,
};
use nix::sys::signal::Signal;
use opentelemetry_proto::tonic::{
    collector::trace::v1::ExportTraceServiceRequest,
    common::v1::{AnyValue, KeyValue, any_value},
};
use prost::Message;
use uuid::Uuid;

/// One received span, flattened with its resource.
#[derive(Debug, Clone)]
struct Span {
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    name: String,
    service: String,
    instance: String,
    attrs: HashMap<String, String>,
}

type Received = Arc<Mutex<Vec<Span>>>;

/// A local OTLP/HTTP trace receiver; returns its endpoint and what it got.
async fn otlp_receiver() -> (String, Received) {
    let received: Received = Arc::default();
    let app = Router::new()
        .route("/v1/traces", post(accept))
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (endpoint, received)
}

async fn accept(
    State(received): State<Received>,
    body: Bytes,
) -> ([(&'static str, &'static str); 1], Vec<u8>) {
    let request = ExportTraceServiceRequest::decode(body).expect("a valid OTLP protobuf body");
    let mut out = received.lock().unwrap();
    for rs in request.resource_spans {
        let resource = attrs(rs.resource.map(|r| r.attributes).unwrap_or_default());
        for ss in rs.scope_spans {
            for s in ss.spans {
                out.push(Span {
                    trace_id: hex(&s.trace_id),
                    span_id: hex(&s.span_id),
                    parent_span_id: hex(&s.parent_span_id),
                    name: s.name,
                    service: resource.get("service.name").cloned().unwrap_or_default(),
                    instance: resource
                        .get("service.instance.id")
                        .cloned()
                        .unwrap_or_default(),
                    attrs: attrs(s.attributes),
                });
            }
        }
    }
    // An empty ExportTraceServiceResponse.
    ([("content-type", "application/x-protobuf")], Vec::new())
}

fn attrs(kvs: Vec<KeyValue>) -> HashMap<String, String> {
    kvs.into_iter()
        .map(|kv| {
            let v = match kv.value.and_then(|AnyValue { value }| value) {
                Some(any_value::Value::StringValue(s)) => s,
                Some(any_value::Value::IntValue(i)) => i.to_string(),
                Some(any_value::Value::BoolValue(b)) => b.to_string(),
                Some(any_value::Value::DoubleValue(d)) => d.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key, v)
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn spans_of_run(received: &Received, run: Uuid) -> Vec<Span> {
    let all = received.lock().unwrap().clone();
    let traces: BTreeSet<String> = all
        .iter()
        .filter(|s| s.attrs.get("run_id") == Some(&run.to_string()))
        .map(|s| s.trace_id.clone())
        .collect();
    all.into_iter()
        .filter(|s| traces.contains(&s.trace_id))
        .collect()
}

async fn stop(worker: &mut Worker) {
    worker.signal(Signal::SIGTERM);
    let status = worker.wait_exit(Duration::from_secs(30)).await;
    assert!(
        status.is_some_and(|s| s.success()),
        "worker did not exit cleanly: {}",
        worker.stderr()
    );
}

// Multi-threaded: the CLI blocks this thread while it exports to the
// receiver, which must keep answering on another one.
#[tokio::test(flavor = "multi_thread")]
async fn one_analysis_is_one_trace_across_two_workers() {
    let db = TestDb::new().await;
    let (endpoint, received) = otlp_receiver().await;
    let otel = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ];
    let log = db.write("oom.log", oom_log());
    let run = db.enqueue(&log, &otel);

    // Worker A is slow (each step waits 600 ms before its commit): it commits
    // iteration 1, is asked to stop, finishes its in-flight step and exits.
    let mut env_a = otel.to_vec();
    env_a.extend([
        ("FAULTLINE_CHAOS_STEP_DELAY_MS", "600"),
        ("FAULTLINE_WORKER_CONCURRENCY", "1"),
    ]);
    let mut a = db.worker("obs-a", &env_a);
    wait_until(Duration::from_secs(30), || async {
        (run_state(&db.pool, run).await.1 >= 1).then_some(())
    })
    .await;
    stop(&mut a).await;
    let (status, _) = run_state(&db.pool, run).await;
    assert_ne!(status, "completed", "worker A finished the run alone");

    // Worker B finishes the run.
    let mut b = db.worker("obs-b", &otel);
    assert_eq!(
        wait_terminal(&db.pool, run, Duration::from_secs(30)).await,
        "completed"
    );
    stop(&mut b).await;
    let (_, iterations) = run_state(&db.pool, run).await;

    let workers: BTreeSet<String> =
        sqlx::query_scalar("SELECT DISTINCT worker_id FROM run_steps WHERE run_id = $1")
            .bind(run)
            .fetch_all(&db.pool)
            .await
            .unwrap()
            .into_iter()
            .collect();
    assert_eq!(
        workers,
        BTreeSet::from(["obs-a".to_string(), "obs-b".to_string()])
    );

    // Both workers flushed on SIGTERM; wait for every committed step's span.
    let spans = wait_until(Duration::from_secs(20), || {
        let spans = spans_of_run(&received, run);
        let steps = spans
            .iter()
            .filter(|s| {
                s.name == "step" && s.attrs.get("outcome").is_some_and(|o| o == "committed")
            })
            .count();
        async move { (steps >= iterations as usize).then_some(spans) }
    })
    .await;
    let traces: BTreeSet<&str> = spans.iter().map(|s| s.trace_id.as_str()).collect();
    assert_eq!(traces.len(), 1, "one trace per analysis, got {traces:?}");

    let ingest = spans
        .iter()
        .find(|s| s.name == "ingest")
        .expect("the ingest span is in the trace");
    assert_eq!(ingest.service, "faultline-producer");
    assert_eq!(ingest.attrs.get("run_id"), Some(&run.to_string()));
    let steps: Vec<&Span> = spans.iter().filter(|s| s.name == "step").collect();
    for step in &steps {
        assert_eq!(
            step.parent_span_id, ingest.span_id,
            "every step hangs off the ingest span"
        );
        assert_eq!(step.service, "faultline-worker");
    }
    let instances: BTreeSet<&str> = steps.iter().map(|s| s.instance.as_str()).collect();
    assert_eq!(
        instances,
        BTreeSet::from(["obs-a", "obs-b"]),
        "spans from both workers"
    );
    let committed: BTreeSet<i32> = steps
        .iter()
        .filter(|s| s.attrs.get("outcome").is_some_and(|o| o == "committed"))
        .map(|s| s.attrs["iteration"].parse().unwrap())
        .collect();
    assert_eq!(
        committed,
        (1..=iterations).collect::<BTreeSet<i32>>(),
        "one committed step span per iteration"
    );
    assert!(
        steps
            .iter()
            .any(|s| s.attrs.get("category").is_some_and(|c| c == "INFRA_ERROR")),
        "the final step names the category"
    );
    let tools: Vec<&Span> = spans.iter().filter(|s| s.name == "tool_call").collect();
    assert!(!tools.is_empty(), "tool calls are spans of the trace");
    for tool in &tools {
        assert!(
            steps.iter().any(|s| s.span_id == tool.parent_span_id),
            "a tool call is a child of its step"
        );
        assert!(
            tool.attrs.contains_key("tool")
                && tool.attrs.get("success").is_some_and(|s| s == "true")
        );
    }

    // Without an endpoint nothing is exported and the run carries no trace context.
    let quiet = db.enqueue(&db.write("quiet.log", "error: nothing to see\n"), &[]);
    let traceparent: Option<String> =
        sqlx::query_scalar("SELECT traceparent FROM analysis_runs WHERE id = $1")
            .bind(quiet)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(traceparent, None);
    assert!(spans_of_run(&received, quiet).is_empty());
}

async fn scrape(base: &str) -> String {
    let resp = reqwest::get(format!("{base}/metrics")).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    resp.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_move_on_the_producer_and_the_worker() {
    let db = TestDb::new().await;
    let serve = db.serve(&[]).await;
    let token = db.cli_ok(
        &[
            "token",
            "create",
            "--role",
            "ingest",
            "--name",
            "metrics-test",
        ],
        &[],
    );
    let token = token.split_whitespace().last().unwrap().to_string();

    let before = scrape(&serve.base).await;
    assert_eq!(
        sample(
            &before,
            "faultline_events_ingested_total",
            &[("source", "api")]
        ),
        0.0
    );
    let http = reqwest::Client::new();
    let resp = http
        .post(format!("{}/api/v1/analyses", serve.base))
        .bearer_auth(&token)
        .json(&serde_json::json!({"log": oom_log(), "job": "ledger", "build": "812"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 202, "{}", resp.text().await.unwrap());
    let run: Uuid = resp.json::<serde_json::Value>().await.unwrap()["run_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let vague = "Running make check\nchecking things...\nsomething went wrong, see above\nmake: *** [Makefile:42: check] Error 2\n";
    let ambiguous = db.enqueue(&db.write("vague.log", vague), &[]);

    // Queued, no worker yet: the producer reads the queue depth from Postgres.
    let queued = scrape(&serve.base).await;
    assert_eq!(
        sample(
            &queued,
            "faultline_events_ingested_total",
            &[("source", "api"), ("created", "true")]
        ),
        1.0
    );
    assert_eq!(
        sample(
            &queued,
            "faultline_queue_depth",
            &[("priority", "10"), ("state", "ready")]
        ),
        2.0
    );
    assert_eq!(sample(&queued, "faultline_review_open_items", &[]), 0.0);

    let worker = db.worker("metrics-w", &[]);
    let wbase = worker.http_base().await;
    assert_eq!(
        wait_terminal(&db.pool, run, Duration::from_secs(30)).await,
        "completed"
    );
    assert_eq!(
        wait_terminal(&db.pool, ambiguous, Duration::from_secs(30)).await,
        "needs_review"
    );
    let iterations: i64 = sqlx::query_scalar("SELECT count(*) FROM run_steps")
        .fetch_one(&db.pool)
        .await
        .unwrap();

    let w = scrape(&wbase).await;
    assert_eq!(
        sample(&w, "faultline_steps_total", &[("outcome", "committed")]),
        iterations as f64
    );
    assert_eq!(
        sample(
            &w,
            "faultline_step_duration_seconds_count",
            &[("outcome", "committed")]
        ),
        iterations as f64
    );
    assert_eq!(
        sample(
            &w,
            "faultline_analyses_total",
            &[("outcome", "completed"), ("category", "INFRA_ERROR")]
        ),
        1.0
    );
    assert_eq!(
        sample(
            &w,
            "faultline_analyses_total",
            &[("outcome", "needs_review")]
        ),
        1.0
    );
    let tool_calls: i64 = sqlx::query_scalar("SELECT count(*) FROM tool_invocations")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(
        sample(&w, "faultline_tool_calls_total", &[]),
        tool_calls as f64
    );
    assert!(sample(&w, "faultline_tool_calls_total", &[("tool", "log_excerpt")]) >= 2.0);
    assert_eq!(
        sample(
            &w,
            "faultline_queue_depth",
            &[("priority", "10"), ("state", "ready")]
        ),
        0.0
    );
    assert_eq!(sample(&w, "faultline_review_open_items", &[]), 1.0);
    assert!(sample(&w, "faultline_review_oldest_open_age_seconds", &[]) > 0.0);
    assert_eq!(sample(&w, "faultline_scrape_error", &[]), 0.0);
    assert_eq!(
        sample(
            &w,
            "faultline_build_info",
            &[("service", "faultline-worker")]
        ),
        1.0
    );

    let after = scrape(&serve.base).await;
    assert_eq!(
        sample(
            &after,
            "faultline_queue_depth",
            &[("priority", "10"), ("state", "ready")]
        ),
        0.0
    );
    assert_eq!(sample(&after, "faultline_review_open_items", &[]), 1.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn worker_health_and_readiness_follow_the_queue_and_shutdown() {
    let db = TestDb::new().await;
    let mut worker = db.worker(
        "health-w",
        &[
            ("LOG_FORMAT", "json"),
            ("FAULTLINE_CHAOS_STEP_DELAY_MS", "1500"),
            ("FAULTLINE_WORKER_CONCURRENCY", "1"),
        ],
    );
    let base = worker.http_base().await;
    let get = |path: &str| {
        let url = format!("{base}{path}");
        async move {
            let resp = reqwest::get(url).await.unwrap();
            let status = resp.status().as_u16();
            (status, resp.json::<serde_json::Value>().await.unwrap())
        }
    };
    assert_eq!(get("/healthz").await.0, 200);
    assert_eq!(
        get("/readyz").await,
        (200, serde_json::json!({"status": "ready"}))
    );

    // The queue table gone: not ready, with the reason; back: ready again.
    sqlx::query("ALTER TABLE apalis.jobs RENAME TO jobs_away")
        .execute(&db.pool)
        .await
        .unwrap();
    let (status, body) = get("/readyz").await;
    assert_eq!(status, 503);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("database or queue"),
        "{body}"
    );
    assert_eq!(
        get("/healthz").await.0,
        200,
        "liveness does not depend on the database"
    );
    sqlx::query("ALTER TABLE apalis.jobs_away RENAME TO jobs")
        .execute(&db.pool)
        .await
        .unwrap();
    assert_eq!(get("/readyz").await.0, 200);

    // SIGTERM while a step is in flight: readiness drops while it drains.
    let run = db.enqueue(&db.write("oom.log", oom_log()), &[]);
    wait_until(Duration::from_secs(30), || async {
        (run_state(&db.pool, run).await.0 == "running").then_some(())
    })
    .await;
    worker.signal(Signal::SIGTERM);
    let (status, body) = wait_until(Duration::from_secs(10), || {
        let get = get("/readyz");
        async move {
            let (status, body) = get.await;
            (status == 503).then_some((status, body))
        }
    })
    .await;
    assert_eq!(status, 503);
    assert!(
        body["error"].as_str().unwrap().contains("draining"),
        "{body}"
    );
    assert!(
        worker
            .wait_exit(Duration::from_secs(30))
            .await
            .is_some_and(|s| s.success())
    );

    // LOG_FORMAT=json: every line is a JSON object; step lines carry the run.
    let log = worker.stderr();
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(
        lines
            .iter()
            .any(|l| l["fields"]["message"] == "iteration committed"
                && l["span"]["run_id"] == run.to_string()),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_telemetry_settings_are_refused_precisely() {
    let db = TestDb::new().await;
    let out = db.cli(
        &["status", &Uuid::nil().to_string()],
        &[("LOG_FORMAT", "yaml")],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("LOG_FORMAT must be `text` or `json`, got \"yaml\""),
        "{err}"
    );

    let out = db.cli(
        &["status", &Uuid::nil().to_string()],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("OTEL_EXPORTER_OTLP_PROTOCOL must be `http/protobuf`")
    );

    let mut worker = db.worker("bad-addr", &[("WORKER_HTTP_ADDR", "localhost")]);
    let status = worker.wait_exit(Duration::from_secs(30)).await.unwrap();
    assert!(!status.success());
    assert!(
        worker
            .stderr()
            .contains("WORKER_HTTP_ADDR must be HOST:PORT"),
        "{}",
        worker.stderr()
    );
}

//! LLM reasoners against a local fake server that speaks the real OpenAI
//! chat-completions and Anthropic Messages wire formats.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use faultline_tests::{
    TestDb,
    fake_llm::{FakeLlm, Seen, Wire, env_refs, tool_call},
    metric_sample, oom_log, run_state, wait_terminal, wait_until,
};
use serde_json::{Value, json};
use uuid::Uuid;
use wiremock::ResponseTemplate;

/// A competent model: excerpt, knowledge base, then a grounded answer.
fn good_script(wire: Wire) -> impl Fn(usize, &Value) -> ResponseTemplate + Send + Sync + 'static {
    move |iteration, _| match iteration {
        1 => tool_call(wire, "call_1", "log_excerpt", json!({"mode": "failure"})),
        2 => tool_call(
            wire,
            "call_2",
            "search_knowledge",
            json!({"query": "java heap space out of memory"}),
        ),
        _ => tool_call(
            wire,
            "call_3",
            "final_answer",
            json!({"category": "INFRA_ERROR", "root_cause": "The test JVM ran out of heap.", "fix": "Raise -Xmx.",
                   "evidence": [{"iteration": 1, "quote": "java.lang.OutOfMemoryError: Java heap space"}], "confidence": 0.95}),
        ),
    }
}

async fn run_with(db: &TestDb, env: &[(String, String)]) -> (Uuid, String) {
    let run = db.enqueue(&db.write("oom.log", oom_log()), &[]);
    let _worker = db.worker("w", &env_refs(env));
    let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    (run, status)
}

/// In request k, every earlier tool call is followed by its result, with matching ids.
fn assert_history_pairs_ids(wire: Wire, body: &Value, expected_calls: usize) {
    let messages = body["messages"].as_array().unwrap();
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for m in messages {
        match wire {
            Wire::OpenAi => {
                for c in m["tool_calls"].as_array().into_iter().flatten() {
                    calls.push(c["id"].as_str().unwrap().to_string());
                }
                if m["role"] == "tool" {
                    results.push(m["tool_call_id"].as_str().unwrap().to_string());
                }
            }
            Wire::Anthropic => {
                for b in m["content"].as_array().into_iter().flatten() {
                    if b["type"] == "tool_use" {
                        calls.push(b["id"].as_str().unwrap().to_string());
                    }
                    if b["type"] == "tool_result" {
                        results.push(b["tool_use_id"].as_str().unwrap().to_string());
                    }
                }
            }
        }
    }
    assert_eq!(calls.len(), expected_calls, "{body:#}");
    assert_eq!(
        calls, results,
        "each tool call is answered by its result, in order"
    );
    let expected: Vec<String> = (1..=expected_calls).map(|i| format!("call_{i}")).collect();
    assert_eq!(calls, expected);
}

/// Each journaled request keeps what was new in it (the first one's system
/// prompt and log; later, the tool result that answered the model's last
/// call) and counts the rest, so the journal does not grow with the square
/// of the conversation.
async fn assert_journal_keeps_only_new_messages(
    db: &TestDb,
    run: Uuid,
    wire: Wire,
    requests: &[Seen],
) {
    let journaled: Vec<Value> = sqlx::query_scalar(
        "SELECT llm->'request' FROM run_steps WHERE run_id = $1 ORDER BY iteration",
    )
    .bind(run)
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(journaled.len(), requests.len());
    for (k, (request, (_, _, sent, _))) in journaled.iter().zip(requests).enumerate() {
        let sent_messages = sent["messages"].as_array().unwrap();
        let new = request["messages_new"].as_array().unwrap();
        assert_eq!(request["messages_total"], sent_messages.len());
        assert_eq!(
            request["tools_total"],
            sent["tools"].as_array().unwrap().len()
        );
        assert!(request.get("tools").is_none() && request.get("messages").is_none());
        assert_eq!(request["model"], "fake-model");
        // The new messages are the tail of what was sent, word for word.
        assert_eq!(new[..], sent_messages[sent_messages.len() - new.len()..]);
        if k == 0 {
            assert_eq!(new.len(), sent_messages.len(), "the first request is whole");
            if wire == Wire::Anthropic {
                assert_eq!(request["system"], sent["system"]);
            }
        } else {
            assert_eq!(new.len(), 1, "request {k}: only the tool result is new");
            assert!(request.get("system").is_none());
            assert!(new[0].to_string().len() * 2 < sent.to_string().len());
        }
    }
}

async fn tool_calling_loop_ends_with_an_answer(wire: Wire) {
    let db = TestDb::new().await;
    let (server, fake) = FakeLlm::start(wire, good_script(wire)).await;
    let (run, status) = run_with(&db, &fake.env(&server)).await;
    assert_eq!(status, "completed");
    let requests = fake.requests();
    assert_eq!(requests.len(), 3, "one model call per iteration");
    for (k, (_, iteration, body, headers)) in requests.iter().enumerate() {
        assert_eq!(*iteration, k + 1);
        assert_history_pairs_ids(wire, body, k);
        assert_eq!(body["model"], "fake-model");
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        match wire {
            Wire::OpenAi => assert_eq!(
                header("authorization").as_deref(),
                Some("Bearer sk-test-123")
            ),
            Wire::Anthropic => {
                assert_eq!(header("x-api-key").as_deref(), Some("sk-test-123"));
                assert_eq!(header("anthropic-version").as_deref(), Some("2023-06-01"));
            }
        }
    }
    // Tool schemas are offered, final_answer among them.
    let tools = requests[0].2["tools"].to_string();
    assert!(tools.contains("log_excerpt") && tools.contains("final_answer"));
    // The routing table reaches the model as a hint in the system prompt.
    let system = match wire {
        Wire::OpenAi => requests[0].2["messages"][0]["content"].clone(),
        Wire::Anthropic => requests[0].2["system"].clone(),
    };
    let system = system.as_str().unwrap();
    assert!(
        system.contains("ROUTING") && system.contains("TEST_FAILURE: failure_history"),
        "{system}"
    );
    // ... and so does what each category means (the rubric).
    assert_category_definitions(system);
    assert_journal_keeps_only_new_messages(&db, run, wire, &requests).await;
    let (category, tokens_in, tokens_out): (String, i64, i64) =
        sqlx::query_as("SELECT category, tokens_in, tokens_out FROM analysis_runs WHERE id = $1")
            .bind(run)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(
        (category.as_str(), tokens_in, tokens_out),
        ("INFRA_ERROR", 300, 60)
    );
    let call_ids: Vec<Option<String>> =
        sqlx::query_scalar("SELECT call_id FROM run_steps WHERE run_id = $1 ORDER BY iteration")
            .bind(run)
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(
        call_ids,
        vec![
            Some("call_1".into()),
            Some("call_2".into()),
            Some("call_3".into())
        ]
    );
}

/// The system prompt defines every category the way a triage engineer
/// routes failures, and calls the excerpt's classification deterministic.
fn assert_category_definitions(system: &str) {
    for (row, means) in [
        (
            "| CODE_ERROR |",
            "lint, formatting, style and link-check violations",
        ),
        ("| CODE_ERROR |", "uncaught runtime exceptions"),
        ("| CODE_ERROR |", "(in test files too)"),
        ("| TEST_FAILURE |", "assertions or expectations failed"),
        (
            "| DEPENDENCY_ERROR |",
            "(also when that is why a test fails)",
        ),
        ("| INFRA_ERROR |", "network timeouts"),
        ("| INFRA_ERROR |", "killed processes or runners"),
        ("| CONFIG_ERROR |", "CI or build configuration"),
        ("| UNKNOWN |", "does not allow a decision"),
    ] {
        let line = system
            .lines()
            .find(|l| l.starts_with(row))
            .unwrap_or_else(|| panic!("no row {row} in {system}"));
        assert!(line.contains(means), "{row} lacks {means:?}: {line}");
    }
    assert!(
        system.contains("deterministic") && system.contains("failing_tests"),
        "{system}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_tool_calling_loop_ends_with_an_answer() {
    tool_calling_loop_ends_with_an_answer(Wire::OpenAi).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_tool_calling_loop_ends_with_an_answer() {
    tool_calling_loop_ends_with_an_answer(Wire::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_run_never_calls_the_model_for_journaled_iterations() {
    let db = TestDb::new().await;
    let (server, fake) = FakeLlm::start(Wire::OpenAi, good_script(Wire::OpenAi)).await;
    let mut env = fake.env(&server);
    let run = db.enqueue(&db.write("oom.log", oom_log()), &[]);
    env.push(("FAULTLINE_CHAOS_STEP_DELAY_MS".into(), "600".into()));
    let mut first = db.worker("first", &env_refs(&env));
    wait_until(Duration::from_secs(60), || async {
        (run_state(&db.pool, run).await.1 >= 2).then_some(())
    })
    .await;
    first.kill9();
    let (_, journaled) = run_state(&db.pool, run).await;
    env.pop();
    let _second = db.worker("second", &env_refs(&env));
    assert_eq!(
        wait_terminal(&db.pool, run, Duration::from_secs(60)).await,
        "completed"
    );
    let requests = fake.requests();
    for iteration in 1..=journaled as usize {
        let n = requests.iter().filter(|r| r.1 == iteration).count();
        assert_eq!(
            n, 1,
            "iteration {iteration} was journaled before the kill, yet the model was called {n} times"
        );
    }
    // The resumed request rebuilt the whole history from the journal.
    let last = requests
        .iter()
        .rev()
        .find(|r| r.1 == 3)
        .expect("iteration 3 requested");
    assert_history_pairs_ids(Wire::OpenAi, &last.2, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn unusable_replies_end_in_a_terminated_run_with_a_recorded_reason() {
    let db = TestDb::new().await;
    let openai = |choices: Value| {
        ResponseTemplate::new(200).set_body_json(
            json!({"id": "x", "object": "chat.completion", "model": "fake-model",
            "choices": choices, "usage": {"prompt_tokens": 10, "completion_tokens": 5}}),
        )
    };
    let cases: Vec<(&str, ResponseTemplate, &str)> = vec![
        ("malformed-args", tool_call(Wire::OpenAi, "c1", "log_excerpt", json!("{not json")).set_body_json(json!({
            "id": "x", "object": "chat.completion", "model": "fake-model", "usage": {"prompt_tokens": 10, "completion_tokens": 5},
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "log_excerpt", "arguments": "{\"mode\": "}}]}}]})), "not valid JSON"),
        ("unknown-tool", tool_call(Wire::OpenAi, "c1", "delete_repository", json!({})), "unknown tool \"delete_repository\""),
        ("schema", tool_call(Wire::OpenAi, "c1", "log_excerpt", json!({"mode": "everything"})), "break its schema"),
        ("non-json", ResponseTemplate::new(200).set_body_string("<html>502 Bad Gateway</html>"), "not JSON"),
        ("text-only", openai(json!([{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "I think it is OOM."}}])), "no tool call"),
        ("empty-choices", openai(json!([])), "no choices"),
        ("truncated", openai(json!([{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": "The root cause is"}}])), "finish_reason: length"),
    ];
    let replies: Vec<(String, ResponseTemplate)> = cases
        .iter()
        .map(|(n, r, _)| (n.to_string(), r.clone()))
        .collect();
    let (server, fake) = FakeLlm::start(Wire::OpenAi, move |_, body| {
        let first = body["messages"][1]["content"].as_str().unwrap_or_default();
        replies
            .iter()
            .find(|(name, _)| first.contains(&format!("{name}.log")))
            .map(|(_, r)| r.clone())
            .unwrap()
    })
    .await;
    let mut env = fake.env(&server);
    env.push(("LLM_MAX_REPROMPTS".into(), "1".into()));
    let runs: Vec<(Uuid, &str)> = cases
        .iter()
        .map(|(name, _, expect)| {
            (
                db.enqueue(
                    &db.write(&format!("{name}.log"), format!("{name}\n{}", oom_log())),
                    &[],
                ),
                *expect,
            )
        })
        .collect();
    let _worker = db.worker("w", &env_refs(&env));
    for (run, expect) in &runs {
        assert_eq!(
            wait_terminal(&db.pool, *run, Duration::from_secs(60)).await,
            "failed"
        );
        let reason: String =
            sqlx::query_scalar("SELECT failure_reason FROM analysis_runs WHERE id = $1")
                .bind(run)
                .fetch_one(&db.pool)
                .await
                .unwrap();
        assert!(
            reason.contains("2 unusable replies") && reason.contains(expect),
            "{expect}: {reason}"
        );
        // The first bad reply was journaled and its error sent back to the model.
        let observation: Value = sqlx::query_scalar(
            "SELECT observation FROM run_steps WHERE run_id = $1 AND iteration = 1 AND action = 'invalid_response'",
        )
        .bind(run)
        .fetch_one(&db.pool)
        .await
        .unwrap();
        assert!(
            observation["error"].as_str().unwrap().contains(expect),
            "{observation}"
        );
        let in_review: i64 =
            sqlx::query_scalar("SELECT count(*) FROM review_items WHERE run_id = $1")
                .bind(run)
                .fetch_one(&db.pool)
                .await
                .unwrap();
        assert_eq!(in_review, 1);
    }
    let second_requests: Vec<Value> = fake
        .requests()
        .into_iter()
        .filter(|r| r.1 == 2)
        .map(|r| r.2)
        .collect();
    assert_eq!(second_requests.len(), cases.len(), "one reprompt per run");
    assert!(
        second_requests
            .iter()
            .all(|b| b.to_string().contains("could not be used")
                || b.to_string().contains("error: "))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_limited_calls_wait_for_retry_after() {
    let db = TestDb::new().await;
    let good = good_script(Wire::OpenAi);
    let calls = Arc::new(Mutex::new(0usize));
    let (server, fake) = FakeLlm::start(Wire::OpenAi, move |iteration, body| {
        let mut n = calls.lock().unwrap();
        *n += 1;
        if *n == 1 {
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_json(
                    json!({"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}),
                )
        } else {
            good(iteration, body)
        }
    })
    .await;
    let (_, status) = run_with(&db, &fake.env(&server)).await;
    assert_eq!(status, "completed");
    let requests = fake.requests();
    assert_eq!(requests.len(), 4, "one retried call plus three iterations");
    let waited = requests[1].0 - requests[0].0;
    assert!(
        waited >= Duration::from_millis(950),
        "retried after {waited:?}, before Retry-After"
    );
    assert_eq!(
        requests[0].1, requests[1].1,
        "the retry repeats the same iteration"
    );
}

/// With no in-process retry left, a rate-limited step is retried by the
/// durable schedule, and no sooner than the server's `Retry-After`, even
/// when the backoff alone would retry at once.
#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limited_step_is_rescheduled_no_sooner_than_retry_after() {
    let db = TestDb::new().await;
    let good = good_script(Wire::OpenAi);
    let calls = Arc::new(Mutex::new(0usize));
    let (server, fake) = FakeLlm::start(Wire::OpenAi, move |iteration, body| {
        let mut n = calls.lock().unwrap();
        *n += 1;
        if *n == 1 {
            ResponseTemplate::new(429)
                .insert_header("retry-after", "2")
                .set_body_json(
                    json!({"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}),
                )
        } else {
            good(iteration, body)
        }
    })
    .await;
    let mut env = fake.env(&server);
    env.push(("LLM_RETRIES".into(), "0".into()));
    env.push(("FAULTLINE_RETRY_BASE_MS".into(), "50".into()));
    let (run, status) = run_with(&db, &env).await;
    assert_eq!(status, "completed");
    let (attempts, waited): (i64, f64) = sqlx::query_as(
        "SELECT count(*), max(extract(epoch FROM next_attempt_at - failed_at))::float8
         FROM run_attempts WHERE run_id = $1",
    )
    .bind(run)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(
        attempts, 1,
        "one failed attempt, retried by the step schedule"
    );
    assert!(
        waited >= 1.99,
        "retry scheduled {waited:.3} s later, before Retry-After"
    );
    let requests = fake.requests();
    let gap = requests[1].0 - requests[0].0;
    assert!(gap >= Duration::from_millis(1950), "retried after {gap:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_key_falls_back_to_the_heuristic_reasoner() {
    let db = TestDb::new().await;
    let unauthorized = |_: usize, _: &Value| {
        ResponseTemplate::new(401).set_body_json(json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}))
    };
    let (server, fake) = FakeLlm::start(Wire::OpenAi, unauthorized).await;
    let mut env = fake.env(&server);
    env.push(("LLM_FALLBACK".into(), "true".into()));
    let (run, status) = run_with(&db, &env).await;
    assert_eq!(
        status, "completed",
        "the heuristic reasoner finished the run"
    );
    assert_eq!(
        fake.requests().len(),
        1,
        "401 is permanent: no retry, and no further calls after the fallback"
    );
    let steps: Vec<(String, Option<Value>)> =
        sqlx::query_as("SELECT reasoner, llm FROM run_steps WHERE run_id = $1 ORDER BY iteration")
            .bind(run)
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert!(steps.iter().all(|(r, _)| r == "heuristic"));
    let fallback = steps[0].1.as_ref().expect("fallback recorded")["llm_fallback"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(fallback.contains("401"), "{fallback}");
    let trace = db.cli_ok(&["trace", &run.to_string()], &[]);
    assert!(trace.contains("llm_fallback"));

    // Without the fallback the same refusal fails the run into review.
    let db2 = TestDb::new().await;
    let (run2, status2) = run_with(&db2, &fake.env(&server)).await;
    assert_eq!(status2, "failed");
    let reason: String =
        sqlx::query_scalar("SELECT failure_reason FROM analysis_runs WHERE id = $1")
            .bind(run2)
            .fetch_one(&db2.pool)
            .await
            .unwrap();
    assert!(reason.contains("401"), "{reason}");
}

/// `n` OOM runs whose logs differ (so none is a duplicate of another).
fn distinct_oom_runs(db: &TestDb, n: usize) -> Vec<Uuid> {
    (0..n)
        .map(|i| {
            db.enqueue(
                &db.write(&format!("oom-{i}.log"), format!("build {i}\n{}", oom_log())),
                &[],
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_shared_rate_limit_holds_across_two_worker_processes() {
    let db = TestDb::new().await;
    // Every reply takes 250 ms; with one shared slot no two calls may overlap.
    let delay = Duration::from_millis(250);
    let good = good_script(Wire::OpenAi);
    let (server, fake) =
        FakeLlm::start(Wire::OpenAi, move |i, b| good(i, b).set_delay(delay)).await;
    let mut env = fake.env(&server);
    env.push(("LLM_MAX_CONCURRENT".into(), "1".into()));
    // Two slots each: a worker fetches at most two of the four runs, so both
    // processes have runs in flight and compete for the one LLM slot.
    env.push(("FAULTLINE_WORKER_CONCURRENCY".into(), "2".into()));
    let runs = distinct_oom_runs(&db, 4);
    let _a = db.worker("a", &env_refs(&env));
    let _b = db.worker("b", &env_refs(&env));
    for run in &runs {
        assert_eq!(
            wait_terminal(&db.pool, *run, Duration::from_secs(90)).await,
            "completed"
        );
    }
    let mut starts: Vec<Instant> = fake.requests().iter().map(|r| r.0).collect();
    assert_eq!(starts.len(), 12);
    starts.sort();
    let min_gap = starts.windows(2).map(|w| w[1] - w[0]).min().unwrap();
    assert!(
        min_gap >= delay - Duration::from_millis(10),
        "two calls overlapped: gap {min_gap:?}"
    );
    // Both processes made calls.
    let workers: Vec<String> =
        sqlx::query_scalar("SELECT DISTINCT worker_id FROM run_steps WHERE reasoner = 'openai'")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(workers.len(), 2, "{workers:?}");
}

/// The `content` of every tool result in an OpenAI request, in order.
fn openai_tool_results(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_sees_the_facts_and_its_answer_carries_them_from_the_log() {
    let db = TestDb::new().await;
    // The model reads the excerpt, then answers without naming anything
    // specific, and claims a package the log never mentions.
    let (server, fake) = FakeLlm::start(Wire::OpenAi, |iteration, _| match iteration {
        1 => tool_call(Wire::OpenAi, "call_1", "log_excerpt", json!({"mode": "failure"})),
        n => tool_call(
            Wire::OpenAi,
            &format!("call_{n}"),
            "final_answer",
            json!({"category": "TEST_FAILURE", "root_cause": "A test failed; the package left-pad 0.0.1 is broken.",
                   "fix": "Fix the test.", "evidence": [{"iteration": 1, "quote": "FAILED tests/test_cart.py::test_apply_coupon"}],
                   "confidence": 0.9}),
        ),
    })
    .await;
    let log = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/logs/pytest-assertion.log"
    ))
    .unwrap();
    let run = db.enqueue(&db.write("pytest.log", log), &[]);
    let _worker = db.worker("w", &env_refs(&fake.env(&server)));
    let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    assert_ne!(status, "failed");

    let requests = fake.requests();
    let first = &requests[0].2;
    assert_category_definitions(first["messages"][0]["content"].as_str().unwrap());
    let tools = first["tools"].as_array().unwrap();
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t["function"]["name"] == name)
            .unwrap_or_else(|| panic!("{name} offered"))["function"]
            .clone()
    };
    assert!(
        tool("log_excerpt")["description"]
            .as_str()
            .unwrap()
            .contains("failing tests, first diagnostic, unresolved packages"),
        "{tools:#?}"
    );
    let category = &tool("final_answer")["parameters"]["properties"]["category"];
    assert!(
        category["description"]
            .as_str()
            .unwrap()
            .contains("TEST_FAILURE = assertions or expectations of tests failed"),
        "{category}"
    );

    // The facts reach the model inside the excerpt's tool result.
    let second = requests.iter().find(|r| r.1 == 2).expect("a second call");
    let results = openai_tool_results(&second.2);
    let facts = &results[0]["result"]["classification"]["facts"];
    assert_eq!(
        facts["failing_tests"][0]["name"], "test_apply_coupon",
        "{facts:#}"
    );
    assert_eq!(facts["exit_code"], 1);
    // So do the kind of each matched line and the calibrated model's
    // reading (issue 31: deterministic facts for the reasoner).
    let classification = &results[0]["result"]["classification"];
    assert_eq!(
        classification["hits"][0]["kind"], "assertion",
        "{classification:#}"
    );
    let model = &classification["model"];
    assert_eq!(model["probabilities"][0][0], "TEST_FAILURE", "{model:#}");
    assert!(
        model["review_below"].as_f64().is_some_and(|t| t > 0.5),
        "{model:#}"
    );
    assert!(
        !model["deciding"].as_array().unwrap().is_empty(),
        "{model:#}"
    );
    assert!(
        first["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("a calibrated model's probability per category"),
        "the system prompt says what the model's reading is"
    );

    // The answer's specifics are the log's, not the model's claims.
    let result: Value = sqlx::query_scalar("SELECT result FROM analysis_runs WHERE id = $1")
        .bind(run)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    let specifics = &result["specifics"];
    assert_eq!(specifics["failing_tests"][0]["name"], "test_apply_coupon");
    assert_eq!(specifics["failing_tests"][0]["file"], "tests/test_cart.py");
    assert_eq!(
        specifics["failed_step"],
        json!({"command": "python -m pytest -q --maxfail=5", "exit_code": 1})
    );
    assert!(
        specifics.get("unresolved_packages").is_none(),
        "the model's package claim is not a fact: {specifics:#}"
    );
    assert_eq!(
        result["root_cause"], "A test failed; the package left-pad 0.0.1 is broken.",
        "the model's own words stay its own"
    );
}

/// Model calls far longer than the lease keep it: the worker renews every
/// lease it holds in one statement per period (not one per run), so no run
/// is taken over, retried or asked of the model twice.
#[tokio::test(flavor = "multi_thread")]
async fn slow_model_calls_keep_their_leases_with_one_renewal_statement_for_all_runs() {
    let db = TestDb::new().await;
    let delay = Duration::from_millis(1500);
    let good = good_script(Wire::OpenAi);
    let (server, fake) =
        FakeLlm::start(Wire::OpenAi, move |i, b| good(i, b).set_delay(delay)).await;
    let mut env = fake.env(&server);
    // A 600 ms lease, renewed every 200 ms, around 1.5 s model calls.
    env.push(("FAULTLINE_LEASE_TTL_MS".into(), "600".into()));
    env.push(("FAULTLINE_RECONCILE_INTERVAL_MS".into(), "300".into()));
    env.push(("FAULTLINE_WORKER_CONCURRENCY".into(), "4".into()));
    let runs = distinct_oom_runs(&db, 4);
    let worker = db.worker("w", &env_refs(&env));
    for run in &runs {
        assert_eq!(
            wait_terminal(&db.pool, *run, Duration::from_secs(90)).await,
            "completed"
        );
    }
    assert_eq!(fake.requests().len(), 12, "one model call per iteration");
    let failed_attempts: i64 = sqlx::query_scalar("SELECT count(*) FROM run_attempts")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(failed_attempts, 0, "no lease lapsed, nothing was retried");

    let page = worker.metrics().await;
    let statements = metric_sample(&page, "faultline_lease_renewal_statements_total", &[]);
    let renewals = metric_sample(&page, "faultline_lease_renewals_total", &[]);
    assert_eq!(
        metric_sample(&page, "faultline_leases_lost_total", &[]),
        0.0
    );
    assert!(statements >= 10.0, "{statements} renewal statements");
    assert!(
        renewals > 2.5 * statements,
        "{renewals} leases renewed by {statements} statements: not batched"
    );
}

/// With the default settings (a 10 s lease), a model call of three minutes
/// under normal operation completes on the worker that made it: its lease is
/// renewed throughout and its live session tells the other worker's
/// reconciler it is alive, so nothing is taken over, retried or asked of the
/// model twice.
#[tokio::test(flavor = "multi_thread")]
async fn a_three_minute_model_call_keeps_its_lease_with_default_settings() {
    let db = TestDb::new().await;
    let good = good_script(Wire::OpenAi);
    let (server, fake) = FakeLlm::start(Wire::OpenAi, move |i, b| {
        let reply = good(i, b);
        if i == 1 {
            reply.set_delay(Duration::from_secs(180))
        } else {
            reply
        }
    })
    .await;
    let mut env = fake.env(&server);
    env.retain(|(k, _)| k != "LLM_TIMEOUT_MS");
    env.push(("LLM_TIMEOUT_MS".into(), "240000".into()));
    let run = distinct_oom_runs(&db, 1)[0];
    let _slow = db.worker_with_defaults("slow", &env_refs(&env));
    wait_until(Duration::from_secs(30), || async {
        (fake.requests().len() == 1).then_some(())
    })
    .await;
    // A second worker whose reconciler watches the first one's runs.
    let watcher = db.worker_with_defaults("watcher", &env_refs(&env));
    watcher.http_base().await;
    assert_eq!(
        wait_terminal(&db.pool, run, Duration::from_secs(280)).await,
        "completed"
    );
    let calls: Vec<usize> = fake.requests().iter().map(|r| r.1).collect();
    assert_eq!(calls, vec![1, 2, 3], "one model call per iteration");
    let first = fake.requests()[0].0;
    assert!(
        fake.requests()[1].0 - first >= Duration::from_secs(180),
        "the first call really took three minutes"
    );
    let failed_attempts: i64 = sqlx::query_scalar("SELECT count(*) FROM run_attempts")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(failed_attempts, 0, "no take-over, nothing retried");
    let committed_by: String =
        sqlx::query_scalar("SELECT worker_id FROM run_steps WHERE run_id = $1 AND iteration = 1")
            .bind(run)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(committed_by, "slow");
    let page = watcher.metrics().await;
    for cause in ["session_ended", "lease_expired"] {
        assert_eq!(
            metric_sample(
                &page,
                "faultline_lease_takeovers_total",
                &[("cause", cause)]
            ),
            0.0
        );
    }
}

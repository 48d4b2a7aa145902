//! The judge model (`LLM_JUDGE_*`) against a local fake server speaking the
//! real OpenAI chat-completions and Anthropic Messages wire formats. The
//! reasoner is the built-in heuristic one, whose OOM diagnosis completes on
//! its own; the judge's score decides whether it still does.

use std::{
    sync::atomic::{AtomicUsize, Ordering},
    time::Duration,
};

use faultline_tests::{
    TestDb,
    fake_llm::{FakeLlm, Wire},
    oom_log, wait_terminal,
};
use serde_json::{Value, json};
use uuid::Uuid;
use wiremock::{MockServer, ResponseTemplate};

/// A fake judge: replies by script, given the 1-based request number.
async fn fake_judge(
    script: impl Fn(usize) -> ResponseTemplate + Send + Sync + 'static,
) -> (MockServer, FakeLlm) {
    let asked = AtomicUsize::new(0);
    FakeLlm::start(Wire::OpenAi, move |_, _| {
        script(asked.fetch_add(1, Ordering::SeqCst) + 1)
    })
    .await
}

/// The request bodies the judge received, in order.
fn bodies(fake: &FakeLlm) -> Vec<Value> {
    fake.requests()
        .into_iter()
        .map(|(_, _, body, _)| body)
        .collect()
}

/// A `submit_judgement` tool call in the provider's wire format.
fn judgement(wire: Wire, score: f64, reason: &str) -> ResponseTemplate {
    let args = json!({"score": score, "reason": reason});
    let body = match wire {
        Wire::OpenAi => json!({
            "id": "chatcmpl-j", "object": "chat.completion", "created": 1_700_000_000, "model": "judge-model",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": "call_j", "type": "function", "function": {"name": "submit_judgement", "arguments": args.to_string()}}]}}],
            "usage": {"prompt_tokens": 400, "completion_tokens": 30, "total_tokens": 430}}),
        Wire::Anthropic => json!({
            "id": "msg_j", "type": "message", "role": "assistant", "model": "judge-model",
            "content": [{"type": "tool_use", "id": "toolu_j", "name": "submit_judgement", "input": args}],
            "stop_reason": "tool_use", "stop_sequence": null, "usage": {"input_tokens": 400, "output_tokens": 30}}),
    };
    ResponseTemplate::new(200).set_body_json(body)
}

fn judge_env(wire: Wire, server: &MockServer) -> Vec<(String, String)> {
    let provider = wire.provider();
    vec![
        ("LLM_JUDGE_PROVIDER".into(), provider.into()),
        ("LLM_JUDGE_BASE_URL".into(), server.uri()),
        ("LLM_JUDGE_MODEL".into(), "judge-model".into()),
        ("LLM_JUDGE_API_KEY".into(), "sk-judge".into()),
        ("LLM_JUDGE_TIMEOUT_MS".into(), "5000".into()),
        ("LLM_RETRY_BASE_MS".into(), "50".into()),
    ]
}

/// Runs the OOM log through a heuristic worker judged by `env`.
async fn judged_run(db: &TestDb, env: &[(String, String)]) -> (Uuid, String) {
    let run = db.enqueue(&db.write("oom.log", oom_log()), &[]);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let _worker = db.worker("w", &env);
    let status = wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    (run, status)
}

/// The final step's `llm.judge` journal entry and its observation.
async fn final_step(db: &TestDb, run: Uuid) -> (Value, Value, i32) {
    let (llm, observation, tokens_in): (Option<Value>, Value, i32) = sqlx::query_as(
        "SELECT llm, observation, tokens_in FROM run_steps WHERE run_id = $1 AND is_final",
    )
    .bind(run)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    (
        llm.expect("the final step journals the judge")["judge"].clone(),
        observation,
        tokens_in,
    )
}

async fn a_low_score_sends_a_confident_run_to_review(wire: Wire) {
    let db = TestDb::new().await;
    let (server, fake) = fake_judge(move |_| {
        judgement(
            wire,
            0.1,
            "The cited heap error does not explain exit value 137.",
        )
    })
    .await;
    let (run, status) = judged_run(&db, &judge_env(wire, &server)).await;
    assert_eq!(status, "needs_review");
    let requests = bodies(&fake);
    assert_eq!(requests.len(), 1, "exactly one judge request per run");
    // The judge saw the answer and the gathered log as quoted, untrusted data.
    let request = requests[0].to_string();
    assert!(request.contains("untrusted_data"), "{request}");
    assert!(request.contains("OutOfMemoryError"), "{request}");
    assert!(request.contains("submit_judgement"));
    let (judge, observation, tokens_in) = final_step(&db, run).await;
    assert_eq!(judge["score"], json!(0.1f32));
    assert!(
        judge["response"].is_object(),
        "the raw response is journaled"
    );
    assert_eq!(observation["judge"]["score"], json!(0.1f32));
    assert_eq!(
        observation["answer"]["confidence_parts"]["judge"],
        json!(0.1f32)
    );
    assert_eq!(tokens_in, 400, "the judge's tokens are counted on the step");
    let review: i64 = sqlx::query_scalar("SELECT count(*) FROM review_items WHERE run_id = $1")
        .bind(run)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(review, 1);
    let trace = db.cli_ok(&["trace", &run.to_string()], &[]);
    assert!(
        trace.contains(
            "judge:       score 0.10 — The cited heap error does not explain exit value 137."
        ),
        "{trace}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_low_openai_judge_score_sends_a_confident_heuristic_run_to_review() {
    a_low_score_sends_a_confident_run_to_review(Wire::OpenAi).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_low_anthropic_judge_score_sends_a_confident_heuristic_run_to_review() {
    a_low_score_sends_a_confident_run_to_review(Wire::Anthropic).await;
}

async fn a_high_score_keeps_the_run_completed(wire: Wire) {
    let db = TestDb::new().await;
    let (server, fake) =
        fake_judge(move |_| judgement(wire, 0.95, "The heap error and exit 137 agree.")).await;
    let (run, status) = judged_run(&db, &judge_env(wire, &server)).await;
    assert_eq!(status, "completed");
    assert_eq!(fake.requests().len(), 1);
    let (judge, observation, _) = final_step(&db, run).await;
    assert_eq!(judge["score"], json!(0.95f32));
    assert_eq!(
        observation["answer"]["confidence_parts"]["weights"]["judge"],
        json!(0.25f32)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_high_openai_judge_score_keeps_the_run_completed() {
    a_high_score_keeps_the_run_completed(Wire::OpenAi).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_high_anthropic_judge_score_keeps_the_run_completed() {
    a_high_score_keeps_the_run_completed(Wire::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_judge_server_error_is_retried() {
    let db = TestDb::new().await;
    let (server, fake) = fake_judge(|n| {
        if n == 1 {
            ResponseTemplate::new(500).set_body_json(json!({"error": {"message": "overloaded"}}))
        } else {
            judgement(Wire::OpenAi, 0.9, "Supported.")
        }
    })
    .await;
    let (run, status) = judged_run(&db, &judge_env(Wire::OpenAi, &server)).await;
    assert_eq!(status, "completed");
    let requests = bodies(&fake);
    assert_eq!(requests.len(), 2, "one 500, one retry");
    assert_eq!(
        requests[0], requests[1],
        "the retry repeats the same request"
    );
    let (judge, _, _) = final_step(&db, run).await;
    assert_eq!(judge["score"], json!(0.9f32));
    assert_eq!(judge["http_attempts"], 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_judge_is_recorded_and_the_run_still_terminates() {
    let db = TestDb::new().await;
    let (server, fake) = fake_judge(|_| {
        ResponseTemplate::new(401).set_body_json(json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}))
    })
    .await;
    let (run, status) = judged_run(&db, &judge_env(Wire::Anthropic, &server)).await;
    assert_eq!(
        status, "completed",
        "confidence is computed without the judge"
    );
    assert_eq!(fake.requests().len(), 1, "401 is not retried");
    let (judge, observation, _) = final_step(&db, run).await;
    let error = judge["judge_error"].as_str().expect("judge_error recorded");
    assert!(error.contains("401"), "{error}");
    assert!(observation["judge"]["judge_error"].is_string());
    assert_eq!(
        observation["answer"]["confidence_parts"]["judge"],
        Value::Null
    );
    let trace = db.cli_ok(&["trace", &run.to_string()], &[]);
    assert!(trace.contains("judge_error"), "{trace}");
}

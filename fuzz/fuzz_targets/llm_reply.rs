//! An LLM reply body through the worker's interpreter: the OpenAI or
//! Anthropic wire parser, then the reasoner's validation (tool known,
//! arguments JSON and within the tool's schema, last iteration answers),
//! the `final_answer` draft and its verification against the journal; or
//! the judge's `submit_judgement` reader.
//!
//! Input layout: byte 0 picks the path (bit 0: Anthropic instead of
//! OpenAI; bit 1: the last iteration, which must answer; bit 2: the judge
//! reads the reply instead of the reasoner), the rest is the response body
//! as the HTTP client hands it over (JSON, or the raw text when it is not).

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use faultline_shared::config::Thresholds;
use faultline_shared::storage::events::EventRow;
use faultline_shared::types::StepRecord;
use faultline_worker::agent::llm::config::{LlmConfig, Provider, Role};
use faultline_worker::agent::llm::{LlmReasoner, wire};
use faultline_worker::agent::{AgentState, Decision, judge, verify};
use faultline_worker::tools::{
    FAILURE_HISTORY, LOG_EXCERPT, SEARCH_KNOWLEDGE, SIMILAR_FAILURES, ToolBelt,
};
use serde_json::{Value, json};

fn reasoner(provider: &str) -> LlmReasoner {
    let source = [("LLM_PROVIDER", provider), ("LLM_MODEL", "fuzz")]
        .into_iter()
        .collect();
    let cfg = LlmConfig::load(&source, Role::Reasoner)
        .expect("valid config")
    .expect("an LLM provider");
    let tools = ToolBelt::standard(Duration::from_secs(1), None).describe();
    LlmReasoner::new(cfg, tools, None)
}

fn main() {
    // One-time set-up before the fork server: both reasoners, an event and
    // a journal with one observed log excerpt for citations to match.
    // The reasoner's HTTP client is never used here; AFL aborts on a panic
    // anyway, so nothing is observed after an unwind.
    let reasoners = AssertUnwindSafe([reasoner("openai"), reasoner("anthropic")]);
    let event: EventRow = serde_json::from_value(json!({
        "id": "00000000-0000-0000-0000-000000000001", "dedup_key": "fuzz", "source": "cli",
        "job_name": "build", "build_number": "7", "test_name": null, "repository": "acme/app",
        "commit_sha": null, "log_name": "build.log", "log_bytes": 100,
        "received_at": "2026-01-01T00:00:00Z",
    }))
    .expect("an event row");
    let journal = vec![StepRecord {
        iteration: 1,
        action: "log_excerpt".into(),
        action_input: json!({}),
        observation: json!({"lines": [{"n": 7, "text": "java.lang.OutOfMemoryError: Java heap space"}]}),
        ..Default::default()
    }];
    let tools = [
        LOG_EXCERPT,
        SEARCH_KNOWLEDGE,
        SIMILAR_FAILURES,
        FAILURE_HISTORY,
    ];
    afl::fuzz!(|data: &[u8]| {
        let [flags, body @ ..] = data else {
            return;
        };
        let reasoners: &[LlmReasoner; 2] = &reasoners;
        let (provider, reasoner) = if flags & 1 == 0 {
            (Provider::OpenAi, &reasoners[0])
        } else {
            (Provider::Anthropic, &reasoners[1])
        };
        let parsed = match serde_json::from_slice::<Value>(body) {
            Ok(json) => wire::parse(provider, &json),
            Err(_) => wire::Parsed {
                reply: Err(format!(
                    "the reply is not JSON: {}",
                    String::from_utf8_lossy(body)
                )),
                tokens_in: 0,
                tokens_out: 0,
            },
        };
        if flags & 4 != 0 {
            if let Ok(reply) = parsed.reply
                && let Ok((score, _reason)) = judge::judgement(reply)
            {
                assert!(
                    (0.0..=1.0).contains(&score),
                    "judge score {score} out of 0..=1"
                );
            }
            return;
        }
        let state = AgentState {
            event: &event,
            journal: &journal,
            iteration: if flags & 2 != 0 { 3 } else { 2 },
            max_iterations: 3,
            tools: &tools,
        };
        let mut exchange = json!({});
        let (decision, _call_id) = reasoner.interpret(&state, parsed.reply, &mut exchange);
        if let Decision::Answer { draft, .. } = decision {
            assert!((0.0..=1.0).contains(&draft.self_confidence));
            let verdict = verify::verify(&draft, &journal, Thresholds::default(), true, None);
            assert!(
                (0.0..=1.0).contains(&verdict.confidence),
                "confidence {} out of 0..=1",
                verdict.confidence
            );
        }
    });
}

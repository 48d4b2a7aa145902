//! A scripted, recording fake LLM behind the real wire formats (OpenAI chat
//! completions, Anthropic Messages) on a local wiremock server: each test
//! scripts the reply per iteration, and every request is kept with its
//! time, body and headers so the test can check what the worker sent and
//! how often.

use std::{
    sync::{Arc, Mutex},
    time::Instant,
};

use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers::method};

/// The provider's wire format.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Wire {
    OpenAi,
    Anthropic,
}

impl Wire {
    /// The worker's `LLM_PROVIDER` for it.
    pub fn provider(self) -> &'static str {
        match self {
            Wire::OpenAi => "openai",
            Wire::Anthropic => "anthropic",
        }
    }
}

/// The reply to a request, by iteration and request body.
pub type Script = dyn Fn(usize, &Value) -> ResponseTemplate + Send + Sync;

/// One received request: when, for which iteration, its body and headers.
pub type Seen = (Instant, usize, Value, Vec<(String, String)>);

/// The fake model; clones share what it saw.
#[derive(Clone)]
pub struct FakeLlm {
    pub wire: Wire,
    script: Arc<Script>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Respond for FakeLlm {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let iteration = iteration_of(&body);
        let headers = req
            .headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect();
        self.seen
            .lock()
            .unwrap()
            .push((Instant::now(), iteration, body.clone(), headers));
        (self.script)(iteration, &body)
    }
}

/// Each journaled iteration adds exactly one assistant message.
pub fn iteration_of(body: &Value) -> usize {
    1 + body["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count())
}

impl FakeLlm {
    /// Serves `script` on a new local server.
    pub async fn start(
        wire: Wire,
        script: impl Fn(usize, &Value) -> ResponseTemplate + Send + Sync + 'static,
    ) -> (MockServer, FakeLlm) {
        let server = MockServer::start().await;
        let fake = FakeLlm {
            wire,
            script: Arc::new(script),
            seen: Arc::default(),
        };
        Mock::given(method("POST"))
            .respond_with(fake.clone())
            .mount(&server)
            .await;
        (server, fake)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// A worker's settings for this model (fast retries, a 5 s timeout,
    /// prices so that cost is counted).
    pub fn env(&self, server: &MockServer) -> Vec<(String, String)> {
        [
            ("LLM_PROVIDER", self.wire.provider().to_string()),
            ("LLM_BASE_URL", server.uri()),
            ("LLM_MODEL", "fake-model".into()),
            ("LLM_API_KEY", "sk-test-123".into()),
            ("LLM_RETRY_BASE_MS", "50".into()),
            ("LLM_TIMEOUT_MS", "5000".into()),
            ("LLM_PRICE_INPUT_PER_MTOK", "3".into()),
            ("LLM_PRICE_OUTPUT_PER_MTOK", "15".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

/// `env` as the `(&str, &str)` pairs a test worker takes.
pub fn env_refs(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// A reply calling one tool (100 tokens in, 20 out); the Anthropic one
/// says a word before its `tool_use`, as Claude often does.
pub fn tool_call(wire: Wire, id: &str, name: &str, args: Value) -> ResponseTemplate {
    let body = match wire {
        Wire::OpenAi => json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000, "model": "fake-model",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}]}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}),
        Wire::Anthropic => json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "fake-model",
            "content": [{"type": "text", "text": "Let me look."}, {"type": "tool_use", "id": id, "name": name, "input": args}],
            "stop_reason": "tool_use", "stop_sequence": null, "usage": {"input_tokens": 100, "output_tokens": 20}}),
    };
    ResponseTemplate::new(200).set_body_json(body)
}

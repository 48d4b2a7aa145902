//! A fake OpenAI-compatible chat-completions server for load and chaos runs:
//! every analysis takes four model calls (log excerpt, two knowledge
//! searches, a confident answer), each answered after a fixed latency, and
//! every request is recorded by job and iteration, so a harness can count
//! the calls made twice and time the engine between a commit and the next
//! call.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{Json, Router, extract::State, routing::post};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Value, json};

/// Requests received: (job, iteration) -> receive times.
pub type Seen = Arc<Mutex<HashMap<(String, usize), Vec<DateTime<Utc>>>>>;

/// The model; clones share what they saw.
#[derive(Clone)]
pub struct FourStepModel {
    delay: Duration,
    /// Job names start with this (the key of [`Seen`]).
    job_prefix: String,
    pub seen: Seen,
}

impl FourStepModel {
    /// Serves the model on a free loopback port; its base URL is
    /// `http://{addr}/v1`.
    pub async fn start(delay: Duration, job_prefix: &str) -> anyhow::Result<(SocketAddr, Self)> {
        let model = Self {
            delay,
            job_prefix: job_prefix.to_string(),
            seen: Arc::default(),
        };
        let app = Router::new()
            .route("/v1/chat/completions", post(complete))
            .with_state(model.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok((addr, model))
    }

    /// A copy of the requests received so far.
    pub fn seen(&self) -> HashMap<(String, usize), Vec<DateTime<Utc>>> {
        self.seen.lock().unwrap().clone()
    }
}

/// The worker environment that points the LLM reasoner at the model.
pub fn worker_env(addr: SocketAddr) -> Vec<(&'static str, String)> {
    vec![
        ("LLM_PROVIDER", "openai".into()),
        ("LLM_BASE_URL", format!("http://{addr}/v1")),
        ("LLM_MODEL", "fake-model".into()),
        ("LLM_API_KEY", "sk-fake".into()),
        ("LLM_RETRY_BASE_MS", "100".into()),
    ]
}

/// What the model reads of a request: the messages' roles and the first
/// user message (the job name is in it). Typed, so the rest of the body
/// (the tool schemas, the model settings) is skipped, not built, and the
/// messages are not copied again: the model shares the machine's cores
/// with the engine it measures.
#[derive(Deserialize)]
struct Request {
    messages: Vec<Message>,
}

#[derive(Deserialize)]
struct Message {
    role: String,
    #[serde(default)]
    content: Value,
}

async fn complete(State(fake): State<FourStepModel>, Json(body): Json<Request>) -> Json<Value> {
    let messages = body.messages;
    let iteration = 1 + messages.iter().filter(|m| m.role == "assistant").count();
    let job = messages
        .iter()
        .find(|m| m.role == "user")
        .and_then(|m| m.content.as_str())
        .and_then(|c| {
            let start = c.find(&fake.job_prefix)?;
            let rest = &c[start..];
            let end = rest.find('"').unwrap_or(rest.len());
            Some(rest[..end].to_string())
        })
        .unwrap_or_default();
    fake.seen
        .lock()
        .unwrap()
        .entry((job, iteration))
        .or_default()
        .push(Utc::now());
    tokio::time::sleep(fake.delay).await;
    let (name, args) = match iteration {
        1 => ("log_excerpt", json!({"mode": "failure"})),
        2 => ("search_knowledge", json!({"query": "java heap space"})),
        3 => (
            "search_knowledge",
            json!({"query": "out of memory test jvm"}),
        ),
        _ => (
            "final_answer",
            json!({"category": "INFRA_ERROR", "root_cause": "The test JVM ran out of heap.",
                   "fix": "Raise -Xmx for the test task.",
                   "evidence": [{"iteration": 1, "quote": "java.lang.OutOfMemoryError: Java heap space"}],
                   "confidence": 0.95}),
        ),
    };
    Json(json!({
        "id": format!("chatcmpl-{iteration}"), "object": "chat.completion", "created": 1_700_000_000, "model": "fake-model",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": format!("call_{iteration}"), "type": "function",
                            "function": {"name": name, "arguments": args.to_string()}}]}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    }))
}

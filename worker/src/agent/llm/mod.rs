//! LLM reasoners over native tool calling: `openai` (any OpenAI-compatible
//! chat-completions server) and `anthropic`. Each iteration is one model
//! call whose request and response are journaled; the conversation is
//! rebuilt from the journal, so a resumed run never calls the model again
//! for a finished iteration. Every reply is validated: unknown tools,
//! arguments that are not JSON or break the schema, text without a tool
//! call, empty or truncated replies become an error observation for the
//! model (a reprompt), bounded by `LLM_MAX_REPROMPTS`.

pub mod client;
pub mod config;
pub mod conversation;
pub mod limit;
pub mod wire;

use std::borrow::Cow;

use faultline_shared::{
    Category, Evidence,
    types::{FINAL_ANSWER, INVALID_RESPONSE},
};
use futures::future::BoxFuture;
use serde_json::{Value, json};

use self::{
    config::LlmConfig,
    wire::{Parsed, Reply},
};
use super::{AgentState, Decision, Draft, Reasoned, Reasoner, rollout::Prompt, routing, verify};
use crate::{failure::Failure, tools};

pub struct LlmReasoner {
    cfg: LlmConfig,
    http: reqwest::Client,
    /// The rate limit shared by all workers, when configured.
    limit: Option<limit::SharedLimit>,
    /// Tool descriptions offered to the model, `final_answer` included.
    tools: Vec<Value>,
    /// The built-in system prompt with the routing hint for the offered tools.
    system: String,
    /// The routing hint, appended to a registered prompt too.
    hint: String,
}

impl LlmReasoner {
    pub fn new(cfg: LlmConfig, mut tools: Vec<Value>, limit: Option<limit::SharedLimit>) -> Self {
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        let hint = routing::hint(&names);
        let system = format!("{}\n{hint}", conversation::SYSTEM_PROMPT);
        tools.push(conversation::final_answer_tool());
        Self {
            http: client::http_client(&cfg),
            cfg,
            tools,
            limit,
            system,
            hint,
        }
    }

    /// The system prompt and tool descriptions of a run's prompt version
    /// (the built-in ones for version 0).
    fn prompted(&self, prompt: Option<&Prompt>) -> (Cow<'_, str>, Cow<'_, [Value]>) {
        let Some(p) = prompt.filter(|p| p.version > 0) else {
            return (Cow::Borrowed(&self.system), Cow::Borrowed(&self.tools));
        };
        let system = match &p.system {
            Some(text) => Cow::Owned(format!("{text}\n{}", self.hint)),
            None => Cow::Borrowed(self.system.as_str()),
        };
        let mut tools = self.tools.clone();
        for tool in &mut tools {
            let name = tool["name"].as_str().unwrap_or_default();
            if let Some(description) = p.tool_descriptions.get(name) {
                tool["description"] = Value::String(description.clone());
            }
        }
        (system, Cow::Owned(tools))
    }

    async fn decide_inner(&self, state: &AgentState<'_>) -> Result<Reasoned, Failure> {
        let used: i64 = state
            .journal
            .iter()
            .map(|s| i64::from(s.tokens_in) + i64::from(s.tokens_out))
            .sum();
        let force_final = state.must_answer() || used >= self.cfg.max_tokens_per_run;
        let mut conv = conversation::build(state);
        let (system, tools) = self.prompted(state.prompt);
        conv.system = system.into_owned();
        let body = wire::request(
            self.cfg.provider,
            &self.cfg.model,
            self.cfg.max_output_tokens,
            &conv,
            &tools,
            force_final.then_some(FINAL_ANSWER),
        );
        let response = client::call(&self.http, &self.cfg, self.limit.as_ref(), &body)
            .await
            .map_err(|e| {
                let what = if e.is_transient() {
                    "LLM call failed"
                } else {
                    "LLM call refused"
                };
                e.context(what)
            })?;
        let parsed = match &response.body {
            Ok(json) => wire::parse(self.cfg.provider, json),
            Err(text) => Parsed {
                reply: Err(format!("the reply is not JSON: {text}")),
                tokens_in: 0,
                tokens_out: 0,
            },
        };
        let raw_body = response.body.clone().unwrap_or_else(Value::String);
        let mut exchange = json!({
            "provider": self.cfg.provider.name(), "model": self.cfg.model, "request": journaled_request(body), "response": raw_body,
            "latency_ms": response.latency_ms, "http_attempts": response.attempts,
            "prompt_version": state.prompt.map_or(0, |p| p.version),
        });
        let (decision, call_id) = self.interpret(state, parsed.reply, &mut exchange);
        if let Decision::Invalid { error, .. } = &decision {
            let earlier = state
                .journal
                .iter()
                .filter(|s| s.action == INVALID_RESPONSE)
                .count();
            if earlier >= self.cfg.max_reprompts {
                return Err(Failure::permanent(format!(
                    "the model gave {} unusable replies (limit {}); last: {error}",
                    earlier + 1,
                    self.cfg.max_reprompts
                )));
            }
        }
        Ok(Reasoned {
            decision: Some(decision),
            call_id,
            llm: Some(exchange),
            tokens_in: parsed.tokens_in,
            tokens_out: parsed.tokens_out,
            cost_usd: self.cfg.cost(parsed.tokens_in, parsed.tokens_out),
        })
    }

    /// Validates a reply and turns it into a decision. Public only for the
    /// fuzz target (`fuzz/fuzz_targets/llm_reply.rs`).
    #[doc(hidden)]
    pub fn interpret(
        &self,
        state: &AgentState<'_>,
        reply: Result<Reply, String>,
        exchange: &mut Value,
    ) -> (Decision, Option<String>) {
        let invalid = |thought: String, raw: Value, error: String| Decision::Invalid {
            thought,
            raw,
            error,
        };
        let (id, thought, name, arguments) = match reply {
            Err(error) => return (invalid(String::new(), json!({"text": ""}), error), None),
            Ok(Reply::Text(text)) => {
                let error =
                    "the reply has no tool call; call one of the tools (final_answer to answer)"
                        .to_string();
                return (invalid(String::new(), json!({"text": text}), error), None);
            }
            Ok(Reply::ToolCall {
                id,
                thought,
                name,
                arguments,
            }) => (id, thought, name, arguments),
        };
        let id = Some(if id.is_empty() {
            format!("fl_{}", state.iteration)
        } else {
            id
        });
        let raw = json!({"tool": name, "arguments": arguments});
        let input = match self.checked_input(state, &name, &arguments) {
            Ok(input) => input,
            Err(error) => return (invalid(thought, raw, error), id),
        };
        if name != FINAL_ANSWER {
            return (
                Decision::Act {
                    thought,
                    tool: name,
                    input,
                },
                id,
            );
        }
        exchange["arguments"] = Value::String(arguments);
        match draft(&input, state) {
            Ok(draft) => (Decision::Answer { thought, draft }, id),
            Err(e) => (invalid(thought, raw, e), id),
        }
    }

    /// A call's arguments, parsed and held to the tool's schema, or what
    /// the model is told is wrong: an unknown tool, arguments that are not
    /// JSON or break the schema, or no final answer on the last iteration.
    fn checked_input(
        &self,
        state: &AgentState<'_>,
        name: &str,
        arguments: &str,
    ) -> Result<Value, String> {
        let Some(tool) = self.tools.iter().find(|t| t["name"] == name) else {
            let names: Vec<&str> = self
                .tools
                .iter()
                .filter_map(|t| t["name"].as_str())
                .collect();
            return Err(format!(
                "unknown tool {name:?}; available: {}",
                names.join(", ")
            ));
        };
        let input: Value = serde_json::from_str(arguments)
            .map_err(|e| format!("arguments of {name} are not valid JSON: {e}"))?;
        tools::validate(&tool["parameters"], &input)
            .map_err(|e| format!("arguments of {name} break its schema: {e}"))?;
        if state.must_answer() && name != FINAL_ANSWER {
            return Err(
                "this was the last iteration and the reply did not call final_answer".into(),
            );
        }
        Ok(input)
    }
}

impl Reasoner for LlmReasoner {
    fn name(&self) -> &'static str {
        self.cfg.provider.name()
    }

    /// One model call in an `llm_call` span, counted by result with its tokens.
    fn decide<'a>(&'a self, state: &'a AgentState<'a>) -> BoxFuture<'a, Result<Reasoned, Failure>> {
        let provider = self.cfg.provider.name();
        let span = tracing::info_span!("llm_call", provider, model = %self.cfg.model,
            iteration = state.iteration, result = tracing::field::Empty,
            tokens_in = tracing::field::Empty, tokens_out = tracing::field::Empty);
        let observed = async move {
            let result = self.decide_inner(state).await;
            let (label, tokens_in, tokens_out) = match &result {
                Ok(r) if matches!(r.decision, Some(Decision::Invalid { .. })) => {
                    ("invalid_reply", r.tokens_in, r.tokens_out)
                }
                Ok(r) => ("ok", r.tokens_in, r.tokens_out),
                Err(e) if e.is_transient() => ("transient_error", 0, 0),
                Err(_) => ("permanent_error", 0, 0),
            };
            let span = tracing::Span::current();
            span.record("result", label);
            span.record("tokens_in", tokens_in);
            span.record("tokens_out", tokens_out);
            faultline_shared::metrics::llm_call(
                provider,
                label,
                tokens_in.max(0) as u32,
                tokens_out.max(0) as u32,
            );
            result
        };
        Box::pin(tracing::Instrument::instrument(observed, span))
    }
}

/// The model's `final_answer` arguments as a draft; retrieval strength is
/// measured from what the run observed, not taken from the model.
fn draft(input: &Value, state: &AgentState<'_>) -> Result<Draft, String> {
    let category: Category = input["category"].as_str().unwrap_or_default().parse()?;
    let evidence: Vec<Evidence> =
        serde_json::from_value(input["evidence"].clone()).map_err(|e| format!("evidence: {e}"))?;
    let confidence = input["confidence"]
        .as_f64()
        .ok_or("confidence must be a number")? as f32;
    let (retrieval, kb_refs) = verify::retrieval_from_journal(state.journal, category);
    Ok(Draft {
        category,
        root_cause: input["root_cause"].as_str().unwrap_or_default().to_string(),
        fix: input["fix"].as_str().unwrap_or_default().to_string(),
        evidence,
        self_confidence: confidence.clamp(0.0, 1.0),
        retrieval,
        kb_refs,
    })
}

/// The request as journaled: everything but the conversation so far and
/// the tool definitions, which every request repeats (the journal rebuilds
/// the one, the reasoner's configuration the other). The messages since the
/// model's last reply are kept whole (the first request's system prompt and
/// log, a tool's result, a reprompt), with the counts of what was left out,
/// so a run's journal grows with its new messages, not with the square of
/// its length, and a worker keeps no copy of each earlier request.
fn journaled_request(mut body: Value) -> Value {
    let Some(obj) = body.as_object_mut() else {
        return body;
    };
    if let Some(Value::Array(messages)) = obj.remove("messages") {
        let total = messages.len();
        let after_reply = messages
            .iter()
            .rposition(|m| m["role"] == "assistant")
            .map_or(0, |i| i + 1);
        let new: Vec<Value> = messages.into_iter().skip(after_reply).collect();
        // Anthropic's system prompt is a field of its own: the first
        // request keeps it, like OpenAI's first message.
        if after_reply > 0 {
            obj.remove("system");
        }
        obj.insert("messages_total".into(), json!(total));
        obj.insert("messages_new".into(), Value::Array(new));
    }
    if let Some(Value::Array(tools)) = obj.remove("tools") {
        obj.insert("tools_total".into(), json!(tools.len()));
    }
    body
}

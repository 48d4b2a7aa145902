//! The two wire formats: OpenAI chat completions (also vLLM, Ollama,
//! llama.cpp server) and Anthropic Messages. Each turns a [`Conversation`]
//! into a request body and a response body into a [`Reply`].

use serde_json::{Value, json};

use super::{
    config::Provider,
    conversation::{Conversation, Turn},
};

/// What the model replied, before validation.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    ToolCall {
        id: String,
        thought: String,
        name: String,
        arguments: String,
    },
    Text(String),
}

/// The reply body, parsed: the reply (or why it is unusable) and token usage.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub reply: Result<Reply, String>,
    pub tokens_in: i32,
    pub tokens_out: i32,
}

/// Path of the endpoint below the base URL.
pub fn path(provider: Provider) -> &'static str {
    match provider {
        Provider::OpenAi => "/chat/completions",
        Provider::Anthropic => "/v1/messages",
    }
}

/// Builds the request body. `force` names a tool the model must call.
pub fn request(
    provider: Provider,
    model: &str,
    max_tokens: u32,
    conv: &Conversation,
    tools: &[Value],
    force: Option<&str>,
) -> Value {
    match provider {
        Provider::OpenAi => openai_request(model, max_tokens, conv, tools, force),
        Provider::Anthropic => anthropic_request(model, max_tokens, conv, tools, force),
    }
}

/// Parses a response body.
pub fn parse(provider: Provider, body: &Value) -> Parsed {
    match provider {
        Provider::OpenAi => openai_parse(body),
        Provider::Anthropic => anthropic_parse(body),
    }
}

fn openai_request(
    model: &str,
    max_tokens: u32,
    conv: &Conversation,
    tools: &[Value],
    force: Option<&str>,
) -> Value {
    let mut messages = vec![
        json!({"role": "system", "content": conv.system}),
        json!({"role": "user", "content": conv.first_user}),
    ];
    for turn in &conv.turns {
        messages.push(match turn {
            Turn::Call { id, thought, name, arguments } => json!({
                "role": "assistant",
                "content": if thought.is_empty() { Value::Null } else { Value::String(thought.clone()) },
                "tool_calls": [{"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}],
            }),
            Turn::Result { id, content, .. } => json!({"role": "tool", "tool_call_id": id, "content": content}),
            Turn::AssistantText(text) => json!({"role": "assistant", "content": text}),
            Turn::User(text) => json!({"role": "user", "content": text}),
        });
    }
    let tools: Vec<Value> = tools
        .iter()
        .map(|t| json!({"type": "function", "function": {"name": t["name"], "description": t["description"], "parameters": t["parameters"]}}))
        .collect();
    let tool_choice = match force {
        Some(name) => json!({"type": "function", "function": {"name": name}}),
        None => json!("auto"),
    };
    json!({"model": model, "messages": messages, "tools": tools, "tool_choice": tool_choice, "max_tokens": max_tokens, "temperature": 0})
}

fn openai_parse(body: &Value) -> Parsed {
    let tokens_in = body["usage"]["prompt_tokens"].as_i64().unwrap_or(0) as i32;
    let tokens_out = body["usage"]["completion_tokens"].as_i64().unwrap_or(0) as i32;
    let reply = (|| {
        let choice = body["choices"]
            .as_array()
            .and_then(|c| c.first())
            .ok_or("the reply has no choices")?;
        let message = &choice["message"];
        let text = message["content"].as_str().unwrap_or("").trim().to_string();
        if let Some(call) = message["tool_calls"].as_array().and_then(|c| c.first()) {
            if choice["finish_reason"] == "length" {
                return Err(
                    "the reply was cut off (finish_reason: length) in the middle of a tool call"
                        .to_string(),
                );
            }
            let function = &call["function"];
            return Ok(Reply::ToolCall {
                id: call["id"].as_str().unwrap_or_default().to_string(),
                thought: text,
                name: function["name"].as_str().unwrap_or_default().to_string(),
                arguments: match &function["arguments"] {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                },
            });
        }
        if choice["finish_reason"] == "length" {
            return Err("the reply was cut off (finish_reason: length)".to_string());
        }
        if text.is_empty() {
            return Err("the reply was empty".to_string());
        }
        Ok(Reply::Text(text))
    })();
    Parsed {
        reply,
        tokens_in,
        tokens_out,
    }
}

fn anthropic_request(
    model: &str,
    max_tokens: u32,
    conv: &Conversation,
    tools: &[Value],
    force: Option<&str>,
) -> Value {
    // Anthropic alternates user/assistant; consecutive blocks of one role merge.
    let mut messages: Vec<Value> =
        vec![json!({"role": "user", "content": [{"type": "text", "text": conv.first_user}]})];
    let mut push = |role: &str, block: Value| match messages.last_mut() {
        Some(last) if last["role"] == role => last["content"]
            .as_array_mut()
            .expect("content array")
            .push(block),
        _ => messages.push(json!({"role": role, "content": [block]})),
    };
    for turn in &conv.turns {
        match turn {
            Turn::Call {
                id,
                thought,
                name,
                arguments,
            } => {
                if !thought.is_empty() {
                    push("assistant", json!({"type": "text", "text": thought}));
                }
                let input = match serde_json::from_str::<Value>(arguments) {
                    Ok(v @ Value::Object(_)) => v,
                    _ => json!({"_unparsed_arguments": arguments}),
                };
                push(
                    "assistant",
                    json!({"type": "tool_use", "id": id, "name": name, "input": input}),
                );
            }
            Turn::Result {
                id,
                content,
                is_error,
            } => push(
                "user",
                json!({"type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error}),
            ),
            Turn::AssistantText(text) => push(
                "assistant",
                json!({"type": "text", "text": if text.is_empty() { "(empty)" } else { text }}),
            ),
            Turn::User(text) => push("user", json!({"type": "text", "text": text})),
        }
    }
    let tools: Vec<Value> =
        tools.iter().map(|t| json!({"name": t["name"], "description": t["description"], "input_schema": t["parameters"]})).collect();
    let tool_choice = match force {
        Some(name) => json!({"type": "tool", "name": name}),
        None => json!({"type": "auto"}),
    };
    json!({"model": model, "system": conv.system, "messages": messages, "tools": tools, "tool_choice": tool_choice,
           "max_tokens": max_tokens, "temperature": 0})
}

fn anthropic_parse(body: &Value) -> Parsed {
    let tokens_in = body["usage"]["input_tokens"].as_i64().unwrap_or(0) as i32;
    let tokens_out = body["usage"]["output_tokens"].as_i64().unwrap_or(0) as i32;
    let reply = (|| {
        let blocks = body["content"]
            .as_array()
            .ok_or("the reply has no content blocks")?;
        let text: Vec<&str> = blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect();
        let text = text.join("\n").trim().to_string();
        if body["stop_reason"] == "max_tokens" {
            return Err("the reply was cut off (stop_reason: max_tokens)".to_string());
        }
        if let Some(call) = blocks.iter().find(|b| b["type"] == "tool_use") {
            return Ok(Reply::ToolCall {
                id: call["id"].as_str().unwrap_or_default().to_string(),
                thought: text,
                name: call["name"].as_str().unwrap_or_default().to_string(),
                arguments: call["input"].to_string(),
            });
        }
        if text.is_empty() {
            return Err("the reply was empty".to_string());
        }
        Ok(Reply::Text(text))
    })();
    Parsed {
        reply,
        tokens_in,
        tokens_out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv() -> Conversation {
        Conversation {
            system: "sys".into(),
            first_user: "go".into(),
            turns: vec![
                Turn::Call {
                    id: "call_1".into(),
                    thought: "look".into(),
                    name: "log_excerpt".into(),
                    arguments: "{}".into(),
                },
                Turn::Result {
                    id: "call_1".into(),
                    content: "{\"iteration\":1}".into(),
                    is_error: false,
                },
                Turn::User("last iteration".into()),
            ],
        }
    }

    #[test]
    fn openai_history_pairs_calls_and_results_by_id() {
        let body = request(Provider::OpenAi, "m", 100, &conv(), &[], None);
        let m = body["messages"].as_array().unwrap();
        assert_eq!(m[2]["tool_calls"][0]["id"], "call_1");
        assert_eq!(m[3]["role"], "tool");
        assert_eq!(m[3]["tool_call_id"], "call_1");
    }

    #[test]
    fn anthropic_merges_consecutive_user_blocks() {
        let body = request(
            Provider::Anthropic,
            "m",
            100,
            &conv(),
            &[],
            Some("final_answer"),
        );
        let m = body["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3, "{m:#?}");
        assert_eq!(m[1]["content"][1]["type"], "tool_use");
        assert_eq!(m[2]["content"][0]["tool_use_id"], "call_1");
        assert_eq!(m[2]["content"][1]["type"], "text");
        assert_eq!(body["tool_choice"]["name"], "final_answer");
    }

    #[test]
    fn unusable_replies_are_named() {
        let p = |b: Value| parse(Provider::OpenAi, &b).reply.unwrap_err();
        assert!(p(json!({"choices": []})).contains("no choices"));
        assert!(p(json!({"choices": [{"finish_reason": "length", "message": {"content": "The cause is"}}]})).contains("length"));
        assert!(
            p(json!({"choices": [{"finish_reason": "stop", "message": {"content": ""}}]}))
                .contains("empty")
        );
        let a = parse(
            Provider::Anthropic,
            &json!({"content": [], "stop_reason": "max_tokens"}),
        )
        .reply
        .unwrap_err();
        assert!(a.contains("max_tokens"));
    }
}

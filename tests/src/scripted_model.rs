//! A scripted model behind the real OpenAI chat-completions wire format
//! (`POST /v1/chat/completions`, `tool_calls`, `usage`), for evaluations
//! and examples that need an LLM reasoner without a real one: its first
//! reply calls `log_excerpt`; once a tool result is in the conversation it
//! answers `final_answer` with a category chosen by a small keyword script
//! over the excerpt's lines, citing the line that decided it, confidence 0.7.
//!
//! The script knows generic words of build tools and machines only (no
//! project, test or file of any data set), and reads the excerpt's lines,
//! never the classification `log_excerpt` attaches to them.

use std::{net::SocketAddr, sync::LazyLock, time::Duration};

use axum::{Json, Router, extract::State, routing::post};
use regex::Regex;
use serde_json::{Value, json};

/// The script: the first rule with a matching line decides (causes before
/// symptoms: the machine, then packages, configuration, code, tests, and a
/// bare `error:` last).
const RULES: &[(&str, &str)] = &[
    (
        "INFRA_ERROR",
        r"(?i)timed out|time limit|no output has been received|no space left|connection (refused|reset)|could not resolve host|temporary failure in name resolution|network is unreachable|service unavailable|out of memory|\bkilled\b",
    ),
    (
        "DEPENDENCY_ERROR",
        r"(?i)could not resolve|unable to resolve|could not find a version|no matching (distribution|version)|version solving failed|modulenotfounderror|npm err! (404|code e404)|(unable to|could not) find (a )?package|failed to (install|download|fetch)|error occurr?ed while installing",
    ),
    (
        "CONFIG_ERROR",
        r"(?i)permission denied|command not found|unsupported version|invalid configuration",
    ),
    (
        "CODE_ERROR",
        r"(?i)cannot find symbol|syntax ?error|parse error|error\[e\d+\]|error (ts|cs)\d+|undefined reference to|compilation (failed|error)|segmentation fault|panicked at|nullpointerexception|typeerror",
    ),
    (
        "TEST_FAILURE",
        r"(?i)expected .* but (was|got)|assertionerror|assertion failed|assert\.\w+\(\) failure|tests? failed|\d+ failing|failures: [1-9]|\[fail\]|--- fail:|failed \(failures=",
    ),
    // Last: a compiler's or linter's diagnostic that none of the above explains.
    ("CODE_ERROR", r"(?i)(^|[\s:])error:"),
];

static COMPILED: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    RULES
        .iter()
        .map(|(c, r)| (*c, Regex::new(r).expect("a valid rule")))
        .collect()
});

/// A numbered line of a `log_excerpt` result, as the worker serialises it.
static LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\{"n":\d+,"text":("(?:[^"\\]|\\.)*")\}"#).expect("a valid pattern")
});

/// The iteration a tool result reports (`{"iteration":N,"result":…}`).
static ITERATION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"^\{"iteration":(\d+)"#).expect("a valid pattern"));

/// The category the script gives `lines`, and the line that decided it.
pub fn classify(lines: &[String]) -> (&'static str, Option<&str>) {
    for (category, rule) in COMPILED.iter() {
        if let Some(line) = lines.iter().find(|l| rule.is_match(l)) {
            return (category, Some(line));
        }
    }
    (
        "UNKNOWN",
        lines
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(String::as_str),
    )
}

/// The lines of the excerpt in a tool result's content (complete lines
/// only when the content was cut short).
fn excerpt_lines(content: &str) -> Vec<String> {
    LINE.captures_iter(content)
        .filter_map(|c| serde_json::from_str::<String>(&c[1]).ok())
        .collect()
}

/// Serves the model on `addr` until the process ends; returns the bound address.
pub async fn serve(addr: SocketAddr, delay: Duration) -> anyhow::Result<SocketAddr> {
    let app = Router::new()
        .route("/v1/chat/completions", post(complete))
        .with_state(delay);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(addr)
}

/// The reply to one request.
pub fn reply(body: &Value) -> Value {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let results: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
    let forced = body["tool_choice"]["function"]["name"].as_str();
    let turn = messages.iter().filter(|m| m["role"] == "assistant").count() + 1;
    let (name, args) = if results.is_empty() && forced != Some("final_answer") {
        ("log_excerpt", json!({"mode": "failure"}))
    } else {
        // The first result that carries lines is the excerpt; its iteration is the citation's.
        let (iteration, lines) = results
            .iter()
            .filter_map(|m| {
                let content = m["content"].as_str()?;
                let lines = excerpt_lines(content);
                let iteration = ITERATION.captures(content)?[1].parse::<i64>().ok()?;
                (!lines.is_empty()).then_some((iteration, lines))
            })
            .next()
            .unwrap_or((1, Vec::new()));
        let (category, line) = classify(&lines);
        let evidence: Vec<Value> = line
            .map(|l| json!({"iteration": iteration, "quote": l}))
            .into_iter()
            .collect();
        let root_cause = match line {
            Some(l) => format!("The log says: {}", l.trim()),
            None => "The log does not say.".into(),
        };
        (
            "final_answer",
            json!({"category": category, "root_cause": root_cause,
                   "fix": "Address the error the cited line reports.",
                   "evidence": evidence, "confidence": 0.7}),
        )
    };
    let arguments = args.to_string();
    // Roughly four characters a token, as real tokenizers count English.
    let prompt_tokens = body.to_string().len() / 4;
    let completion_tokens = arguments.len() / 4 + 1;
    json!({
        "id": format!("chatcmpl-scripted-{turn}"), "object": "chat.completion", "created": 1_700_000_000,
        "model": body["model"],
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": format!("call_{turn}"), "type": "function",
                            "function": {"name": name, "arguments": arguments}}]}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens}
    })
}

async fn complete(State(delay): State<Duration>, Json(body): Json<Value>) -> Json<Value> {
    tokio::time::sleep(delay).await;
    Json(reply(&body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[&str]) -> Vec<String> {
        text.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_script_names_the_category_of_the_first_rule_that_matches() {
        let read = lines(&[
            "Tests run: 3",
            "java.lang.AssertionError: expected 1 but was 2",
        ]);
        let (c, line) = classify(&read);
        assert_eq!(
            (c, line),
            (
                "TEST_FAILURE",
                Some("java.lang.AssertionError: expected 1 but was 2")
            )
        );
        let (c, _) = classify(&lines(&[
            "3 tests failed",
            "Could not resolve dependencies for project",
        ]));
        assert_eq!(c, "DEPENDENCY_ERROR");
        assert_eq!(
            classify(&lines(&["all good"])),
            ("UNKNOWN", Some("all good"))
        );
        assert_eq!(classify(&[]), ("UNKNOWN", None));
    }

    #[test]
    fn the_model_reads_the_excerpt_then_answers_citing_it() {
        let first = json!({"model": "m", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]});
        let r = reply(&first);
        let call = &r["choices"][0]["message"]["tool_calls"][0]["function"];
        assert_eq!(call["name"], "log_excerpt");
        assert!(r["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
        let result = json!({"iteration": 1, "result": {"lines": [{"n": 7, "text": "error: cannot find symbol \"x\""}]}});
        let second = json!({"model": "m", "messages": [
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": null, "tool_calls": []},
            {"role": "tool", "tool_call_id": "call_1", "content": result.to_string()}]});
        let r = reply(&second);
        let call = &r["choices"][0]["message"]["tool_calls"][0]["function"];
        assert_eq!(call["name"], "final_answer");
        let args: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(args["category"], "CODE_ERROR");
        assert_eq!(
            args["evidence"],
            json!([{"iteration": 1, "quote": "error: cannot find symbol \"x\""}])
        );
        assert_eq!(args["confidence"], 0.7);
    }
}

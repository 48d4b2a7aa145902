//! The tool belt. Every tool is read-only, describes its arguments with a
//! JSON schema, runs under a timeout, and is audited in `tool_invocations`:
//! before it executes, or, for a [`Tool::local`] tool, by the checkpoint
//! that journals it. Results are journaled by the engine and reused from
//! the journal when the same call repeats within a run (per-run cache).

mod excerpt;
mod github;
mod history;
mod jenkins;
mod knowledge;
mod scope;
mod similar;

use std::{
    collections::BTreeMap,
    sync::Arc,
    time::{Duration, Instant},
};

use faultline_shared::{config::RateLimit, storage::ratelimit};
use futures::future::BoxFuture;
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use crate::sources::{github::GithubClient, jenkins::JenkinsClient};

pub use scope::OUT_OF_SCOPE;

pub const LOG_EXCERPT: &str = "log_excerpt";
pub const SEARCH_KNOWLEDGE: &str = "search_knowledge";
pub const SIMILAR_FAILURES: &str = "similar_failures";
pub const FAILURE_HISTORY: &str = "failure_history";
/// `source` of a `similar_failures` match that a human confirmed in review.
pub const REVIEW_RESOLUTION: &str = "review_resolution";
pub const GITHUB_FILE: &str = "github_file";
pub const GITHUB_BLAME: &str = "github_blame";
pub const GITHUB_COMMITS: &str = "github_commits";
pub const GITHUB_SEARCH: &str = "github_search";
pub const JENKINS_CONSOLE: &str = "jenkins_console";
/// Every tool this build can offer (configured or not).
pub const ALL_TOOLS: [&str; 9] = [
    LOG_EXCERPT,
    SEARCH_KNOWLEDGE,
    SIMILAR_FAILURES,
    FAILURE_HISTORY,
    GITHUB_FILE,
    GITHUB_BLAME,
    GITHUB_COMMITS,
    GITHUB_SEARCH,
    JENKINS_CONSOLE,
];

/// What a tool may read.
#[derive(Clone)]
pub struct ToolContext {
    pub pool: PgPool,
    pub run_id: Uuid,
    pub event_id: Uuid,
}

/// Why a tool call produced no observation.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ToolError {
    /// Worth retrying the step (timeout, lost connection).
    #[error("transient tool failure: {0}")]
    Transient(String),
    /// The call itself is wrong (unknown tool, bad arguments): reported back
    /// to the reasoner as an error observation.
    #[error("{0}")]
    Invalid(String),
    /// The tool failed for good.
    #[error("tool failed: {0}")]
    Failed(String),
}

impl From<sqlx::Error> for ToolError {
    fn from(e: sqlx::Error) -> Self {
        if faultline_shared::storage::is_transient(&e) {
            ToolError::Transient(format!("database: {e}"))
        } else {
            ToolError::Failed(format!("database: {e}"))
        }
    }
}

/// One tool: its name, what it does, its argument schema, and how to run it.
pub trait Tool: Send + Sync {
    fn name(&self) -> &'static str;
    fn description(&self) -> &'static str;
    /// A local tool reads Faultline's own database and nothing else: no
    /// effect outside the journal, no quota. Like a workflow engine's local
    /// activity, its call is audited by the checkpoint statement that
    /// journals its result (one round trip less per step), and a crash during
    /// the call leaves nothing to account for. Every other call is audited
    /// before it starts. Off unless a tool says so.
    fn local(&self) -> bool {
        false
    }
    /// JSON schema of the arguments object.
    fn schema(&self) -> Value;
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>>;
}

/// The registry of tools a reasoner may call.
#[derive(Clone)]
pub struct ToolBelt {
    tools: Vec<Arc<dyn Tool>>,
    timeout: Duration,
    chaos_delay: Option<Duration>,
    /// Calls per window per tool, shared by all workers through Postgres.
    rate_limits: BTreeMap<String, RateLimit>,
    /// Longest in-process wait for a rate limit before the step retries later.
    rate_limit_max_wait: Duration,
}

impl ToolBelt {
    /// The tools of this build, each call bounded by `timeout`.
    pub fn standard(timeout: Duration, chaos_delay: Option<Duration>) -> Self {
        Self {
            tools: vec![
                Arc::new(excerpt::LogExcerpt),
                Arc::new(knowledge::SearchKnowledge),
                Arc::new(similar::SimilarFailures),
                Arc::new(history::FailureHistory),
            ],
            timeout,
            chaos_delay,
            rate_limits: BTreeMap::new(),
            rate_limit_max_wait: Duration::ZERO,
        }
    }

    /// Limits the tools named in `limits` (`TOOL_RATE_LIMITS`) for every
    /// worker together; a name that is no tool of this build is refused.
    pub fn with_rate_limits(
        mut self,
        limits: &BTreeMap<String, RateLimit>,
        max_wait: Duration,
    ) -> Result<Self, String> {
        if let Some(unknown) = limits.keys().find(|k| !ALL_TOOLS.contains(&k.as_str())) {
            return Err(format!(
                "TOOL_RATE_LIMITS names {unknown:?}, which is not a tool; tools: {}",
                ALL_TOOLS.join(", ")
            ));
        }
        self.rate_limits = limits.clone();
        self.rate_limit_max_wait = max_wait;
        Ok(self)
    }

    /// Adds the GitHub and Jenkins tools of the clients that are configured
    /// (a tool is only offered when it can work).
    pub fn with_sources(
        mut self,
        github: Option<Arc<GithubClient>>,
        jenkins: Option<Arc<JenkinsClient>>,
    ) -> Self {
        if let Some(gh) = github {
            self.tools.extend(github::tools(gh));
        }
        if let Some(j) = jenkins {
            self.tools.push(Arc::new(jenkins::JenkinsConsole(j)));
        }
        self
    }

    /// Name, description and schema of every tool (what an LLM is offered).
    pub fn describe(&self) -> Vec<Value> {
        self.tools
            .iter()
            .map(|t| serde_json::json!({"name": t.name(), "description": t.description(), "parameters": t.schema()}))
            .collect()
    }

    /// Validates and runs one call under the timeout, in a `tool_call` span,
    /// counted in `faultline_tool_calls_total` (names the model made up are
    /// counted as `unknown`, so they cannot blow up the label set).
    #[tracing::instrument(
        name = "tool_call",
        skip_all,
        fields(tool = name, run_id = %ctx.run_id, success = tracing::field::Empty)
    )]
    pub async fn call(
        &self,
        ctx: &ToolContext,
        name: &str,
        input: &Value,
    ) -> Result<Value, ToolError> {
        let started = std::time::Instant::now();
        let result = self.call_unobserved(ctx, name, input).await;
        let label = self
            .names()
            .into_iter()
            .find(|n| *n == name)
            .unwrap_or("unknown");
        faultline_shared::metrics::tool_call(label, result.is_ok(), started.elapsed());
        tracing::Span::current().record("success", result.is_ok());
        result
    }

    async fn call_unobserved(
        &self,
        ctx: &ToolContext,
        name: &str,
        input: &Value,
    ) -> Result<Value, ToolError> {
        let tool = self
            .tools
            .iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| {
                ToolError::Invalid(format!(
                    "unknown tool {name:?}; available: {}",
                    self.names().join(", ")
                ))
            })?;
        validate(&tool.schema(), input)
            .map_err(|e| ToolError::Invalid(format!("invalid arguments for {name}: {e}")))?;
        self.wait_for_rate_limit(ctx, name).await?;
        let work = async {
            if let Some(delay) = self.chaos_delay {
                tokio::time::sleep(delay).await;
            }
            tool.call(ctx, input).await
        };
        match tokio::time::timeout(self.timeout, work).await {
            Ok(result) => result,
            Err(_) => Err(ToolError::Transient(format!(
                "{name} timed out after {} ms",
                self.timeout.as_millis()
            ))),
        }
    }

    /// Takes a call from `name`'s shared window, waiting for one to free up
    /// for at most `rate_limit_max_wait` (outside the call's own timeout);
    /// a longer wait is a transient error, so the step retries later.
    async fn wait_for_rate_limit(&self, ctx: &ToolContext, name: &str) -> Result<(), ToolError> {
        let Some(limit) = self.rate_limits.get(name) else {
            return Ok(());
        };
        let key = format!("tool:{name}");
        let started = Instant::now();
        loop {
            match ratelimit::take_request(&ctx.pool, &key, limit.calls, limit.window).await? {
                None => return Ok(()),
                Some(wait) if started.elapsed() + wait <= self.rate_limit_max_wait => {
                    tokio::time::sleep(wait).await;
                }
                Some(wait) => {
                    return Err(ToolError::Transient(format!(
                        "{name} is rate limited to {} call(s) per {:?} across all workers \
                         (TOOL_RATE_LIMITS); the next call is allowed in {:.1} s",
                        limit.calls,
                        limit.window,
                        wait.as_secs_f64()
                    )));
                }
            }
        }
    }

    /// Whether `name` is a [`Tool::local`] tool of this belt (an unknown
    /// name is not).
    pub fn is_local(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name() == name && t.local())
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|t| t.name()).collect()
    }
}

/// A small JSON-schema check covering what our schemas use: an object with
/// typed properties, required keys, no unknown keys, enums, numeric ranges
/// and string lengths. Every number is compared exactly, whatever its size
/// (issue 14, finding 9: `2^64 - 1` once skipped the range check because it
/// is no `i64`); an `integer` is a whole JSON number without a fraction or
/// exponent (`3.0` and `1e3` are refused, as the tools read integers).
pub fn validate(schema: &Value, input: &Value) -> Result<(), String> {
    let Some(obj) = input.as_object() else {
        return Err("arguments must be a JSON object".into());
    };
    let props = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for key in schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !obj.contains_key(key) {
            return Err(format!("missing required field {key:?}"));
        }
    }
    for (key, value) in obj {
        let Some(prop) = props.get(key) else {
            return Err(format!("unknown field {key:?}"));
        };
        let ok = match prop["type"].as_str() {
            Some("string") => value.is_string(),
            Some("integer") => value.is_i64() || value.is_u64(),
            Some("number") => value.is_number(),
            Some("boolean") => value.is_boolean(),
            _ => true,
        };
        if !ok {
            let kind = prop["type"].as_str().unwrap_or("value");
            let article = if kind == "integer" { "an" } else { "a" };
            return Err(format!("field {key:?} must be {article} {kind}"));
        }
        if let Some(allowed) = prop["enum"].as_array()
            && !allowed.contains(value)
        {
            return Err(format!(
                "field {key:?} must be one of {}",
                Value::Array(allowed.clone())
            ));
        }
        if let Value::Number(n) = value {
            if let Some(min) = prop.get("minimum").and_then(Value::as_number)
                && compare(n, min).is_lt()
            {
                return Err(format!("field {key:?} must be >= {min}"));
            }
            if let Some(max) = prop.get("maximum").and_then(Value::as_number)
                && compare(n, max).is_gt()
            {
                return Err(format!("field {key:?} must be <= {max}"));
            }
        }
        if let Value::String(s) = value {
            if let Some(max) = prop["maxLength"].as_u64()
                && s.chars().count() as u64 > max
            {
                return Err(format!("field {key:?} must be at most {max} characters"));
            }
            if let Some(min) = prop["minLength"].as_u64()
                && (s.chars().count() as u64) < min
            {
                return Err(format!("field {key:?} must be at least {min} characters"));
            }
        }
    }
    Ok(())
}

/// Orders two JSON numbers exactly: integers of any sign and size as
/// integers, anything else as floats.
fn compare(a: &serde_json::Number, b: &serde_json::Number) -> std::cmp::Ordering {
    let whole = |n: &serde_json::Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (whole(a), whole(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        // serde_json numbers are finite: there is no NaN to compare.
        _ => a
            .as_f64()
            .unwrap_or_default()
            .total_cmp(&b.as_f64().unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": 20},
            "mode": {"type": "string", "enum": ["failure", "tail"]}}, "required": ["query"]})
    }

    #[test]
    fn schema_violations_are_named() {
        assert_eq!(
            validate(&schema(), &json!({"query": "x", "limit": 3})),
            Ok(())
        );
        assert!(
            validate(&schema(), &json!({}))
                .unwrap_err()
                .contains("query")
        );
        assert!(
            validate(&schema(), &json!({"query": 1}))
                .unwrap_err()
                .contains("string")
        );
        assert!(
            validate(&schema(), &json!({"query": "x", "limit": 99}))
                .unwrap_err()
                .contains("<= 20")
        );
        assert!(
            validate(&schema(), &json!({"query": "x", "mode": "all"}))
                .unwrap_err()
                .contains("one of")
        );
        assert!(
            validate(&schema(), &json!({"query": "x", "rm": "-rf"}))
                .unwrap_err()
                .contains("unknown field")
        );
        assert!(validate(&schema(), &json!("query")).is_err());
    }

    /// Issue 14, finding 9: every number is held to the schema, whatever
    /// its size or form.
    #[test]
    fn numbers_out_of_range_or_of_the_wrong_kind_are_refused() {
        let limit = |v: Value| validate(&schema(), &json!({"query": "x", "limit": v}));
        for (value, why) in [
            (json!(u64::MAX), "<= 20"),
            (json!(i64::MAX as u64 + 1), "<= 20"),
            (json!(i64::MAX), "<= 20"),
            (json!(21), "<= 20"),
            (json!(0), ">= 1"),
            (json!(-1), ">= 1"),
            (json!(i64::MIN), ">= 1"),
            (json!(3.5), "must be an integer"),
            (json!(3.0), "must be an integer"),
            (json!(1e300), "must be an integer"),
            (json!("3"), "must be an integer"),
            (json!(null), "must be an integer"),
            (json!(true), "must be an integer"),
        ] {
            let err = limit(value.clone()).expect_err(&value.to_string());
            assert!(err.contains(why), "{value}: {err}");
        }
        assert_eq!(limit(json!(1)), Ok(()));
        assert_eq!(limit(json!(20)), Ok(()));
        // Floats against float bounds, and integers against float bounds.
        let score = json!({"type": "object", "properties": {
            "score": {"type": "number", "minimum": 0, "maximum": 1}}});
        assert!(validate(&score, &json!({"score": 0.5})).is_ok());
        assert!(validate(&score, &json!({"score": 1.0000001})).is_err());
        assert!(validate(&score, &json!({"score": -0.0001})).is_err());
        assert!(validate(&score, &json!({"score": u64::MAX})).is_err());
        // Strings are held to their length.
        let text = json!({"type": "object", "properties": {
            "q": {"type": "string", "maxLength": 3}}});
        assert!(validate(&text, &json!({"q": "abc"})).is_ok());
        assert!(
            validate(&text, &json!({"q": "abcd"}))
                .unwrap_err()
                .contains("at most 3")
        );
    }
}

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
use schemars::JsonSchema;
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use crate::{
    failure::Failure,
    sources::{github::GithubClient, jenkins::JenkinsClient},
};

pub use faultline_shared::tool::{REVIEW_RESOLUTION, ToolName};
pub use scope::OUT_OF_SCOPE;

/// What a tool may read.
#[derive(Clone)]
pub struct ToolContext {
    pub pool: PgPool,
    pub run_id: Uuid,
    pub event_id: Uuid,
    /// A shadow run's live twin: the same event, so never a "similar past
    /// failure" of it (nor its reviewer's answer).
    pub twin: Option<Uuid>,
}

/// Why a tool call produced no observation. Unlike a step's
/// [`Failure`], a tool's permanent failure is not the step's: the reasoner
/// is told (an error observation) and decides again. Only a transient one
/// becomes the step's failure, retried.
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

/// A failure classified the one way ([`Failure`]): transient stays
/// transient, anything else is this tool's failure, with the whole chain.
impl From<Failure> for ToolError {
    fn from(f: Failure) -> Self {
        if f.is_transient() {
            ToolError::Transient(f.chain())
        } else {
            ToolError::Failed(f.chain())
        }
    }
}

impl From<sqlx::Error> for ToolError {
    fn from(e: sqlx::Error) -> Self {
        Failure::from(e).into()
    }
}

/// One tool: its name, what it does, its arguments (a struct whose JSON
/// schema, derived, is both what the model is offered and what a call is
/// validated against) and the observation it journals
/// ([`faultline_shared::tool`]).
pub trait Tool: Send + Sync + 'static {
    type Args: DeserializeOwned + JsonSchema + Send;
    type Observation: Serialize;
    fn name(&self) -> ToolName;
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
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: Self::Args,
    ) -> BoxFuture<'a, Result<Self::Observation, ToolError>>;
}

/// A [`Tool`] behind one object-safe face: JSON in (validated already),
/// JSON out.
trait JsonTool: Send + Sync {
    fn name(&self) -> ToolName;
    fn description(&self) -> &'static str;
    fn local(&self) -> bool;
    fn schema(&self) -> Value;
    fn call_json<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>>;
}

impl<T: Tool> JsonTool for T {
    fn name(&self) -> ToolName {
        Tool::name(self)
    }
    fn description(&self) -> &'static str {
        Tool::description(self)
    }
    fn local(&self) -> bool {
        Tool::local(self)
    }
    fn schema(&self) -> Value {
        schema_of::<T::Args>()
    }
    fn call_json<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let name = Tool::name(self);
            let args = T::Args::deserialize(input)
                .map_err(|e| ToolError::Invalid(format!("invalid arguments for {name}: {e}")))?;
            let observation = Tool::call(self, ctx, args).await?;
            serde_json::to_value(observation)
                .map_err(|e| ToolError::Failed(format!("{name}: observation: {e}")))
        })
    }
}

/// The JSON schema of a tool's arguments as the model is offered it and
/// [`validate`] reads it: draft 7, inlined, each property of one type
/// (an optional argument is one that is not required, not one that may be
/// `null`), without the generator's titles and number formats.
pub fn schema_of<T: JsonSchema>() -> Value {
    let schema = schemars::generate::SchemaSettings::draft07()
        .with(|s| s.inline_subschemas = true)
        .into_generator()
        .into_root_schema_for::<T>();
    let mut schema = schema.to_value();
    if let Some(root) = schema.as_object_mut() {
        for key in ["$schema", "title", "description"] {
            root.remove(key);
        }
    }
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        for prop in props.values_mut().filter_map(Value::as_object_mut) {
            prop.remove("format");
            prop.remove("title");
            if let Some(Value::Array(types)) = prop.get("type") {
                let one = types.iter().find(|t| *t != "null").cloned();
                match one {
                    Some(t) => prop.insert("type".into(), t),
                    None => prop.remove("type"),
                };
            }
            if let Some(Value::Array(allowed)) = prop.get_mut("enum") {
                allowed.retain(|v| !v.is_null());
            }
        }
    }
    schema
}

/// A timestamp as serde writes a `DateTime<Utc>` (RFC 3339, `Z`, as many
/// fractional digits as it has: 0, 3, 6 or 9): how the journal held them
/// when tools serialized storage rows directly.
fn timestamp(t: &chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

/// A tool of the belt with its schema, derived once.
#[derive(Clone)]
struct Registered {
    tool: Arc<dyn JsonTool>,
    schema: Arc<Value>,
}

impl Registered {
    fn of(tool: Arc<dyn JsonTool>) -> Self {
        let schema = Arc::new(tool.schema());
        Self { tool, schema }
    }
}

/// The registry of tools a reasoner may call.
#[derive(Clone)]
pub struct ToolBelt {
    tools: Vec<Registered>,
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
        let tools: Vec<Arc<dyn JsonTool>> = vec![
            Arc::new(excerpt::LogExcerpt),
            Arc::new(knowledge::SearchKnowledge),
            Arc::new(similar::SimilarFailures),
            Arc::new(history::FailureHistory::default()),
        ];
        Self {
            tools: tools.into_iter().map(Registered::of).collect(),
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
        if let Some(unknown) = limits.keys().find(|k| k.parse::<ToolName>().is_err()) {
            let all: Vec<&str> = ToolName::ALL.iter().map(|t| t.as_str()).collect();
            return Err(format!(
                "TOOL_RATE_LIMITS names {unknown:?}, which is not a tool; tools: {}",
                all.join(", ")
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
        // The history also reads the change's files from the CI source.
        if github.is_some() || jenkins.is_some() {
            for r in &mut self.tools {
                if r.tool.name() == ToolName::FailureHistory {
                    *r = Registered::of(Arc::new(history::FailureHistory {
                        github: github.clone(),
                        jenkins: jenkins.clone(),
                    }));
                }
            }
        }
        if let Some(gh) = github {
            self.tools
                .extend(github::tools(gh).into_iter().map(Registered::of));
        }
        if let Some(j) = jenkins {
            self.tools
                .push(Registered::of(Arc::new(jenkins::JenkinsConsole(j))));
        }
        self
    }

    /// Name, description and schema of every tool (what an LLM is offered).
    pub fn describe(&self) -> Vec<Value> {
        self.tools
            .iter()
            .map(|r| serde_json::json!({"name": r.tool.name(), "description": r.tool.description(), "parameters": *r.schema}))
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
            .find(name)
            .map_or("unknown", |r| r.tool.name().as_str());
        faultline_shared::metrics::tool_call(label, result.is_ok(), started.elapsed());
        tracing::Span::current().record("success", result.is_ok());
        result
    }

    fn find(&self, name: &str) -> Option<&Registered> {
        self.tools.iter().find(|r| r.tool.name().is(name))
    }

    async fn call_unobserved(
        &self,
        ctx: &ToolContext,
        name: &str,
        input: &Value,
    ) -> Result<Value, ToolError> {
        let registered = self.find(name).ok_or_else(|| {
            ToolError::Invalid(format!(
                "unknown tool {name:?}; available: {}",
                self.names().join(", ")
            ))
        })?;
        validate(&registered.schema, input)
            .map_err(|e| ToolError::Invalid(format!("invalid arguments for {name}: {e}")))?;
        self.wait_for_rate_limit(ctx, name).await?;
        let work = async {
            if let Some(delay) = self.chaos_delay {
                tokio::time::sleep(delay).await;
            }
            registered.tool.call_json(ctx, input).await
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
        self.find(name).is_some_and(|r| r.tool.local())
    }

    /// The names of the tools of this belt, in the order they are offered.
    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|r| r.tool.name().as_str()).collect()
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

    /// The schemas the tools offered when they were written by hand: the
    /// derived ones carry the same constraints and descriptions.
    #[test]
    fn derived_schemas_carry_the_hand_written_constraints() {
        let repo =
            "owner/name of the failing repository (the only one these tools read); may be omitted";
        let reference = "commit SHA or branch; default: the failing commit";
        let common = json!({
            "repo": {"type": "string", "maxLength": 200, "description": repo},
            "ref": {"type": "string", "maxLength": 255, "description": reference}});
        let with_common = |extra: Value| {
            let mut props = common.clone();
            for (k, v) in extra.as_object().unwrap() {
                props[k] = v.clone();
            }
            props
        };
        let cases = [
            (
                schema_of::<excerpt::Args>(),
                json!({"mode": {"type": "string", "enum": ["failure", "tail"], "description": "which lines to return"},
                       "max_lines": {"type": "integer", "minimum": 5, "maximum": 200}}),
                json!([]),
            ),
            (
                schema_of::<knowledge::Args>(),
                json!({"query": {"type": "string", "description": "keywords describing the failure"},
                       "limit": {"type": "integer", "minimum": 1, "maximum": 20}}),
                json!(["query"]),
            ),
            (
                schema_of::<similar::Args>(),
                json!({"fingerprint": {"type": "string", "description": "fingerprint from log_excerpt"},
                       "text": {"type": "string", "description": "failure text for the similarity tiers; default: this run's error lines"},
                       "limit": {"type": "integer", "minimum": 1, "maximum": 20}}),
                json!(["fingerprint"]),
            ),
            (
                schema_of::<history::Args>(),
                json!({"job": {"type": "string", "description": "job name; default: the failing job"},
                       "test": {"type": "string", "description": "test name; default: the failing test"}}),
                json!([]),
            ),
            (
                schema_of::<github::FileArgs>(),
                with_common(
                    json!({"path": {"type": "string", "maxLength": 1024, "description": "file path in the repository"},
                       "line": {"type": "integer", "minimum": 1, "maximum": 10_000_000},
                       "context": {"type": "integer", "minimum": 1, "maximum": 100}}),
                ),
                json!(["path"]),
            ),
            (
                schema_of::<github::BlameArgs>(),
                with_common(json!({"path": {"type": "string", "maxLength": 1024},
                       "start_line": {"type": "integer", "minimum": 1, "maximum": 10_000_000},
                       "end_line": {"type": "integer", "minimum": 1, "maximum": 10_000_000}})),
                json!(["path", "start_line"]),
            ),
            (
                schema_of::<github::CommitsArgs>(),
                with_common(
                    json!({"path": {"type": "string", "maxLength": 1024, "description": "file or directory; omit for the whole repository"},
                       "limit": {"type": "integer", "minimum": 1, "maximum": 30}}),
                ),
                json!([]),
            ),
            (
                schema_of::<github::SearchArgs>(),
                json!({"query": {"type": "string", "maxLength": 256, "description": "search terms, all of which must match (no OR or parentheses: one call per alternative); the search is scoped to the failing repository (repo:, org:, user: qualifiers are refused; path:, language:, filename:, extension:, in: narrow it)"},
                       "repo": {"type": "string", "maxLength": 200, "description": "owner/name of the failing repository (the only one searched); may be omitted"},
                       "limit": {"type": "integer", "minimum": 1, "maximum": 20}}),
                json!(["query"]),
            ),
            (
                schema_of::<jenkins::Args>(),
                json!({"part": {"type": "string", "enum": ["head", "tail"]},
                       "max_bytes": {"type": "integer", "minimum": 1024, "maximum": 1_073_741_824_u64},
                       "job": {"type": "string", "maxLength": 1024, "description": "the failing job's name, folders separated by / (the only job read); may be omitted"},
                       "build": {"type": "integer", "minimum": 1, "maximum": 1_u64 << 53, "description": "build number of the failing job; default: the failing build"}}),
                json!([]),
            ),
        ];
        for (derived, properties, required) in cases {
            assert_eq!(derived["type"], "object", "{derived}");
            assert_eq!(derived["properties"], properties, "{derived}");
            assert_eq!(
                derived.get("required").cloned().unwrap_or(json!([])),
                required,
                "{derived}"
            );
            assert_eq!(derived["additionalProperties"], false, "{derived}");
        }
    }

    /// The derived schema refuses what the hand-written one refused, with
    /// the messages tests and the model read.
    #[test]
    fn a_derived_schema_is_held_to_by_validate() {
        let schema = schema_of::<github::BlameArgs>();
        assert_eq!(
            validate(&schema, &json!({"path": "a.rs", "start_line": 3})),
            Ok(())
        );
        for (input, why) in [
            (
                json!({"path": "a.rs"}),
                "missing required field \"start_line\"",
            ),
            (json!({"path": "a.rs", "start_line": 0}), "must be >= 1"),
            (
                json!({"path": "a.rs", "start_line": 3.0}),
                "must be an integer",
            ),
            (
                json!({"path": "a.rs", "start_line": null}),
                "must be an integer",
            ),
            (
                json!({"path": "a.rs", "start_line": 3, "rm": 1}),
                "unknown field \"rm\"",
            ),
            (
                json!({"path": "x".repeat(1025), "start_line": 3}),
                "at most 1024 characters",
            ),
            (
                json!({"path": "a.rs", "start_line": 3, "ref": null}),
                "must be a string",
            ),
        ] {
            let err = validate(&schema, &input).expect_err(&input.to_string());
            assert!(err.contains(why), "{input}: {err}");
        }
        let excerpt = schema_of::<excerpt::Args>();
        assert!(
            validate(&excerpt, &json!({"mode": "all"}))
                .unwrap_err()
                .contains("must be one of [\"failure\",\"tail\"]")
        );
    }

    #[test]
    fn timestamps_read_as_serde_wrote_them() {
        for nanos in [0, 1_000, 123_000_000, 123_456_000, 123_456_789] {
            let t = chrono::DateTime::from_timestamp(1_790_000_000, nanos).unwrap();
            assert_eq!(serde_json::to_value(t).unwrap(), json!(timestamp(&t)));
        }
    }

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

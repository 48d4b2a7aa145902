//! `similar_failures`: past analyses of failures with the same fingerprint.

use faultline_shared::storage::runs;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolError};

pub struct SimilarFailures;

impl Tool for SimilarFailures {
    fn name(&self) -> &'static str {
        super::SIMILAR_FAILURES
    }
    fn description(&self) -> &'static str {
        "Find past analysed failures with the same normalised error fingerprint, newest first."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "fingerprint": {"type": "string", "description": "fingerprint from log_excerpt"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20}}, "required": ["fingerprint"]})
    }
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let fingerprint = input["fingerprint"].as_str().unwrap_or_default();
            let limit = input["limit"].as_i64().unwrap_or(5);
            let rows =
                runs::similar_by_fingerprint(&ctx.pool, fingerprint, ctx.run_id, limit).await?;
            let matches: Vec<Value> = rows
                .iter()
                .map(|r| {
                    json!({
                        "run_id": r.id.to_string(), "status": r.status, "category": r.category,
                        "confidence": r.confidence,
                        "root_cause": r.result.as_ref().and_then(|v| v["root_cause"].as_str()),
                        "fix": r.result.as_ref().and_then(|v| v["fix"].as_str()),
                        "finished_at": r.finished_at,
                    })
                })
                .collect();
            Ok(json!({"fingerprint": fingerprint, "matches": matches}))
        })
    }
}

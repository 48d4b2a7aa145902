//! `search_knowledge`: full-text search over documented failure patterns.

use faultline_shared::storage::knowledge;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolError};

pub struct SearchKnowledge;

impl Tool for SearchKnowledge {
    fn name(&self) -> &'static str {
        super::SEARCH_KNOWLEDGE
    }
    fn local(&self) -> bool {
        true
    }
    fn description(&self) -> &'static str {
        "Search the knowledge base of documented CI failure patterns (root cause and fix) by keywords."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "query": {"type": "string", "description": "keywords describing the failure"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20}}, "required": ["query"]})
    }
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let query = input["query"].as_str().unwrap_or_default();
            let limit = input["limit"].as_i64().unwrap_or(5);
            let matches = knowledge::search(&ctx.pool, query, limit).await?;
            Ok(json!({"query": query, "matches": matches}))
        })
    }
}

//! `search_knowledge`: full-text search over documented failure patterns.

use faultline_shared::{
    storage::knowledge,
    tool::{self, KbMatch},
};
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Tool, ToolContext, ToolError, ToolName};

pub struct SearchKnowledge;

/// The arguments of `search_knowledge`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    #[schemars(description = "keywords describing the failure")]
    query: String,
    #[schemars(range(min = 1, max = 20))]
    limit: Option<i64>,
}

impl Tool for SearchKnowledge {
    type Args = Args;
    type Observation = tool::SearchKnowledge;
    fn name(&self) -> ToolName {
        ToolName::SearchKnowledge
    }
    fn local(&self) -> bool {
        true
    }
    fn description(&self) -> &'static str {
        "Search the knowledge base of documented CI failure patterns (root cause and fix) by keywords."
    }
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: Args,
    ) -> BoxFuture<'a, Result<tool::SearchKnowledge, ToolError>> {
        Box::pin(async move {
            let limit = args.limit.unwrap_or(5);
            let matches = knowledge::search(&ctx.pool, &args.query, limit).await?;
            Ok(tool::SearchKnowledge {
                matches: matches
                    .into_iter()
                    .map(|m| KbMatch {
                        slug: m.slug,
                        title: m.title,
                        category: m.category,
                        root_cause: m.root_cause,
                        fix: m.fix,
                        rank: m.rank,
                    })
                    .collect(),
                query: args.query,
            })
        })
    }
}

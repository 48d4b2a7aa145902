//! `similar_failures`: the error library. Answers a reviewer confirmed or
//! corrected for the same fingerprint first (`source: "review_resolution"`,
//! from `review_resolutions`), then past analyses with the same fingerprint; when those are fewer than `limit`, past failures
//! whose normalised failure text is similar (trigram, then full-text).
//! Text matches below the relevance floor
//! ([`similar::RELEVANCE_FLOOR`]) are moved to `below_relevance_floor`:
//! listed, never evidence. The output is one list of scored matches — `score` 0..1, `tier`
//! (`fingerprint` | `trigram` | `fulltext`), `source` (`analysis`; other
//! sources such as `review_resolution` fit the same shape), category, root
//! cause and whether a human confirmed it — read by
//! [`crate::agent::verify::match_strength`].

use faultline_shared::{
    logs,
    storage::{resolution, similar},
};
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{REVIEW_RESOLUTION, Tool, ToolContext, ToolError};

pub struct SimilarFailures;

impl Tool for SimilarFailures {
    fn name(&self) -> &'static str {
        super::SIMILAR_FAILURES
    }
    fn local(&self) -> bool {
        true
    }
    fn description(&self) -> &'static str {
        "Find past analysed failures: same normalised error fingerprint first, then similar failure text \
         (trigram / full-text). Each match has a score 0..1, the tier that found it, its category, root cause \
         and whether a human confirmed it. Text matches below the relevance floor are listed apart under \
         `below_relevance_floor`: they are not evidence for this failure."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "fingerprint": {"type": "string", "description": "fingerprint from log_excerpt"},
            "text": {"type": "string", "description": "failure text for the similarity tiers; default: this run's error lines"},
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
            let text = match input["text"].as_str() {
                Some(t) => Some(
                    t.lines()
                        .map(logs::normalize)
                        .filter(|l| !l.is_empty())
                        .collect::<Vec<_>>()
                        .join("\n"),
                ),
                None => similar::failure_text(&ctx.pool, ctx.run_id).await?,
            };
            // Human-confirmed answers for this fingerprint come first.
            let resolved = resolution::by_fingerprint(&ctx.pool, fingerprint, limit).await?;
            let found =
                similar::tiered(&ctx.pool, ctx.run_id, fingerprint, text.as_deref(), limit).await?;
            let (found, weak): (Vec<_>, Vec<_>) = found
                .into_iter()
                .partition(similar::SimilarMatch::is_relevant);
            let matches: Vec<Value> = resolved
                .iter()
                .map(|r| {
                    json!({
                        "source": REVIEW_RESOLUTION, "resolution_id": r.id.to_string(),
                        "run_id": r.run_id.to_string(), "status": "resolved", "tier": "fingerprint",
                        "score": 1.0, "human_confirmed": true, "category": r.category,
                        "accepted": r.accepted, "root_cause": r.root_cause, "fix": r.fix,
                        "comment": r.comment, "resolved_by": r.resolved_by,
                        "finished_at": r.resolved_at,
                    })
                })
                .chain(found.iter().map(|m| json!(m)))
                .take(limit as usize)
                .collect();
            // Listed for transparency; neither cited nor counted.
            let below: Vec<Value> = weak.iter().map(|m| json!(m)).collect();
            Ok(json!({"fingerprint": fingerprint, "matches": matches,
                      "below_relevance_floor": below}))
        })
    }
}

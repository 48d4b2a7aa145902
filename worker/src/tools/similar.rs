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
    storage::{
        resolution::{self, LibraryEntry},
        similar::{self, Tier},
    },
    tool::{self, PastAnalysis, ResolutionMatch, ResolutionSource, SimilarMatch},
};
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Tool, ToolContext, ToolError, ToolName, timestamp};

pub struct SimilarFailures;

/// The arguments of `similar_failures`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    #[schemars(description = "fingerprint from log_excerpt")]
    fingerprint: String,
    #[schemars(
        description = "failure text for the similarity tiers; default: this run's error lines"
    )]
    text: Option<String>,
    #[schemars(range(min = 1, max = 20))]
    limit: Option<i64>,
}

impl Tool for SimilarFailures {
    type Args = Args;
    type Observation = tool::SimilarFailures;
    fn name(&self) -> ToolName {
        ToolName::SimilarFailures
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
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: Args,
    ) -> BoxFuture<'a, Result<tool::SimilarFailures, ToolError>> {
        Box::pin(async move {
            let fingerprint = args.fingerprint;
            let limit = args.limit.unwrap_or(5);
            let text = match args.text {
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
            let mut resolved = resolution::by_fingerprint(&ctx.pool, &fingerprint, limit).await?;
            resolved.retain(|r| Some(r.run_id) != ctx.twin);
            let exclude: Vec<_> = std::iter::once(ctx.run_id).chain(ctx.twin).collect();
            let found =
                similar::tiered(&ctx.pool, &exclude, &fingerprint, text.as_deref(), limit).await?;
            let (found, weak): (Vec<_>, Vec<_>) = found
                .into_iter()
                .partition(similar::SimilarMatch::is_relevant);
            let matches: Vec<SimilarMatch> = resolved
                .iter()
                .map(resolution_match)
                .chain(found.iter().map(past_analysis))
                .take(limit as usize)
                .collect();
            Ok(tool::SimilarFailures {
                fingerprint,
                matches,
                // Listed for transparency; neither cited nor counted.
                below_relevance_floor: weak.iter().map(past_analysis).collect(),
            })
        })
    }
}

/// A reviewer's answer as a match: the strongest there is.
fn resolution_match(r: &LibraryEntry) -> SimilarMatch {
    SimilarMatch::Resolution(ResolutionMatch {
        source: ResolutionSource::ReviewResolution,
        resolution_id: Some(r.id.to_string()),
        run_id: Some(r.run_id.to_string()),
        status: Some("resolved".into()),
        tier: Some("fingerprint".into()),
        score: Some(1.0),
        human_confirmed: true,
        category: Some(r.category.as_str().to_string()),
        accepted: r.accepted,
        root_cause: Some(r.root_cause.clone()),
        fix: Some(r.fix.clone()),
        comment: r.comment.clone(),
        resolved_by: Some(r.resolved_by.clone()),
        finished_at: Some(timestamp(&r.resolved_at)),
    })
}

/// A past analysis found by fingerprint or similar text.
fn past_analysis(m: &similar::SimilarMatch) -> SimilarMatch {
    SimilarMatch::Analysis(PastAnalysis {
        run_id: Some(m.run_id.to_string()),
        status: Some(m.status.as_str().to_string()),
        category: m.category.map(|c| c.as_str().to_string()),
        confidence: m.confidence,
        root_cause: m.root_cause.clone(),
        fix: m.fix.clone(),
        finished_at: m.finished_at.as_ref().map(timestamp),
        score: Some(m.score),
        tier: m.tier.map(|t| {
            match t {
                Tier::Fingerprint => "fingerprint",
                Tier::Trigram => "trigram",
                Tier::Fulltext => "fulltext",
            }
            .to_string()
        }),
        human_confirmed: m.human_confirmed,
        source: Some(m.source.to_string()),
    })
}

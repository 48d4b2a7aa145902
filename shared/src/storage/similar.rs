//! The error library's look-ups beyond exact fingerprints: past analyses
//! whose normalised failure text (`run_failure_texts`) is similar,
//! by trigram similarity (pg_trgm, GIN-indexed) and, failing that, by
//! full-text search. Every match carries a score (0..1), the tier that found
//! it, and whether a human confirmed the analysis in review.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;
use uuid::Uuid;

use super::columns::CategoryColumn;
use crate::types::RunStatus;

/// How a past failure was found; the better tiers are tried first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Same fingerprint: the same failure, modulo volatile values.
    Fingerprint,
    /// Trigram similarity of the normalised failure text ≥ the threshold.
    Trigram,
    /// Shares words with the normalised failure text (full-text search).
    Fulltext,
}

/// Where a match comes from. Analyses are the runs themselves; other
/// sources (e.g. `review_resolution`, a human's correction) can be listed
/// beside them in the same shape.
pub const SOURCE_ANALYSIS: &str = "analysis";

/// One scored past failure.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct SimilarMatch {
    pub run_id: Uuid,
    pub status: RunStatus,
    pub category: Option<CategoryColumn>,
    pub confidence: Option<f32>,
    pub root_cause: Option<String>,
    pub fix: Option<String>,
    pub finished_at: Option<DateTime<Utc>>,
    /// 0..1; 1 for a fingerprint match.
    pub score: f32,
    #[sqlx(skip)]
    pub tier: Option<Tier>,
    /// A reviewer resolved this run's review item (confirmed or corrected it).
    pub human_confirmed: bool,
    #[sqlx(skip)]
    pub source: &'static str,
}

/// Lowest trigram similarity that counts as a match (pg_trgm's default for `%`).
pub const TRIGRAM_THRESHOLD: f32 = 0.3;

/// The relevance floor: the weakest score at which a match of each tier is
/// evidence for the new failure. A match below it is still listed in the
/// tool's observation (under `below_relevance_floor`, for transparency) but
/// is neither cited in an answer nor counted as retrieval strength.
///
/// - **Fingerprint** (score 1): the same failure modulo volatile values —
///   always relevant (floor 0).
/// - **Trigram**: pg_trgm similarity of the normalised failure texts. At
///   0.3 (pg_trgm's own default, [`TRIGRAM_THRESHOLD`]) about a third of
///   the trigrams are shared: the same error reworded or with other paths
///   scores ~0.8, two unrelated failures of one build tool ~0.1–0.15.
/// - **Full-text**: `ts_rank_cd(…, 32)` = r/(r+1) of an OR query of the new
///   failure's words, where every shared word adds ~0.1 to r: one shared
///   word scores 0.09, two 0.17, four 0.29, five 0.33. Words every failed
///   build prints (`task`, `failed`, `exit`, `value`, `error`) reach four
///   easily; 0.3 asks for five or more, which the same error with other
///   timestamps and paths passes by far (~0.6).
///
/// A fixed floor per tier rather than a ratio, so a match's relevance does
/// not depend on what else was found. The category rule — a match of
/// another category than the log's own diagnosis lifts nothing — is the
/// verifier's (`faultline_worker::agent::verify`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RelevanceFloor {
    pub trigram: f32,
    pub fulltext: f32,
}

/// The floor in force; see [`RelevanceFloor`].
pub const RELEVANCE_FLOOR: RelevanceFloor = RelevanceFloor {
    trigram: TRIGRAM_THRESHOLD,
    fulltext: 0.3,
};

impl RelevanceFloor {
    /// The lowest relevant score of `tier`.
    pub fn of(self, tier: Tier) -> f32 {
        match tier {
            Tier::Fingerprint => 0.0,
            Tier::Trigram => self.trigram,
            Tier::Fulltext => self.fulltext,
        }
    }

    /// Whether a match of `tier` scoring `score` is evidence.
    pub fn admits(self, tier: Tier, score: f32) -> bool {
        score >= self.of(tier)
    }
}

impl Tier {
    /// The tier named `name` in a match's JSON (`fingerprint`, `trigram`,
    /// `fulltext`).
    pub fn from_name(name: &str) -> Option<Tier> {
        match name {
            "fingerprint" => Some(Tier::Fingerprint),
            "trigram" => Some(Tier::Trigram),
            "fulltext" => Some(Tier::Fulltext),
            _ => None,
        }
    }
}

impl SimilarMatch {
    /// At or above the [`RELEVANCE_FLOOR`] of its tier.
    pub fn is_relevant(&self) -> bool {
        self.tier
            .is_none_or(|tier| RELEVANCE_FLOOR.admits(tier, self.score))
    }
}

const MATCH_COLUMNS: &str = "r.id AS run_id, r.status, r.category, r.confidence,
    r.result ->> 'root_cause' AS root_cause, r.result ->> 'fix' AS fix, r.finished_at,
    EXISTS (SELECT 1 FROM review_items i WHERE i.run_id = r.id AND i.status = 'resolved') AS human_confirmed";

/// [`by_fingerprint`]'s statement.
pub(crate) static BY_FINGERPRINT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {MATCH_COLUMNS}, 1::real AS score FROM analysis_runs r
         WHERE r.fingerprint = $1 AND r.id <> ALL($2) AND r.shadow_of IS NULL AND r.status IN ('completed', 'needs_review')
           AND r.result IS NOT NULL
         ORDER BY r.finished_at DESC NULLS LAST LIMIT $3"
    )
});

/// Finished analyses other than `exclude` with the same fingerprint, newest first.
pub async fn by_fingerprint(
    pool: &PgPool,
    fingerprint: &str,
    exclude: &[Uuid],
    limit: i64,
) -> sqlx::Result<Vec<SimilarMatch>> {
    let rows: Vec<SimilarMatch> = sqlx::query_as(BY_FINGERPRINT.as_str())
        .bind(fingerprint)
        .bind(exclude)
        .bind(limit)
        .fetch_all(pool)
        .await?;
    Ok(tagged(rows, Tier::Fingerprint))
}

/// [`by_trigram`]'s statement.
pub(crate) static BY_TRIGRAM: LazyLock<String> = LazyLock::new(|| {
    format!("SELECT {MATCH_COLUMNS}, similarity(t.failure_text, $1)::real AS score
         FROM run_failure_texts t JOIN analysis_runs r ON r.id = t.run_id
         WHERE t.failure_text % $1 AND similarity(t.failure_text, $1) >= $4
           AND r.id <> ALL($2) AND r.shadow_of IS NULL AND r.status IN ('completed', 'needs_review') AND r.result IS NOT NULL
         ORDER BY score DESC, r.finished_at DESC NULLS LAST LIMIT $3")
});

/// Finished analyses other than `exclude` whose failure text is similar to
/// `text` by trigrams (score = pg_trgm similarity), best first.
pub async fn by_trigram(
    pool: &PgPool,
    text: &str,
    exclude: &[Uuid],
    limit: i64,
) -> sqlx::Result<Vec<SimilarMatch>> {
    // `%` uses the GIN index with the session threshold (default 0.3, the
    // same as TRIGRAM_THRESHOLD); the explicit bound keeps it if that changes.
    let rows: Vec<SimilarMatch> = sqlx::query_as(BY_TRIGRAM.as_str())
        .bind(text)
        .bind(exclude)
        .bind(limit)
        .bind(TRIGRAM_THRESHOLD)
        .fetch_all(pool)
        .await?;
    Ok(tagged(rows, Tier::Trigram))
}

/// [`by_fulltext`]'s statement.
pub(crate) static BY_FULLTEXT: LazyLock<String> = LazyLock::new(|| {
    format!("WITH q AS (
             SELECT nullif(replace(plainto_tsquery('english', $1)::text, '&', '|'), '')::tsquery AS tsq)
         SELECT {MATCH_COLUMNS}, ts_rank_cd(to_tsvector('english', t.failure_text), q.tsq, 32)::real AS score
         FROM run_failure_texts t JOIN analysis_runs r ON r.id = t.run_id, q
         WHERE q.tsq IS NOT NULL AND to_tsvector('english', t.failure_text) @@ q.tsq
           AND r.id <> ALL($2) AND r.shadow_of IS NULL AND r.status IN ('completed', 'needs_review') AND r.result IS NOT NULL
         ORDER BY score DESC, r.finished_at DESC NULLS LAST LIMIT $3")
});

/// Finished analyses other than `exclude` whose failure text shares words
/// with `text` (any word, OR), ranked by cover density normalised to 0..1.
pub async fn by_fulltext(
    pool: &PgPool,
    text: &str,
    exclude: &[Uuid],
    limit: i64,
) -> sqlx::Result<Vec<SimilarMatch>> {
    let rows: Vec<SimilarMatch> = sqlx::query_as(BY_FULLTEXT.as_str())
        .bind(text)
        .bind(exclude)
        .bind(limit)
        .fetch_all(pool)
        .await?;
    Ok(tagged(rows, Tier::Fulltext))
}

/// Up to `limit` matches: fingerprint first, then trigram, then full-text,
/// each tier only while the earlier ones found fewer than `limit`, never
/// the same run twice and never `run_id` itself.
pub async fn tiered(
    pool: &PgPool,
    exclude: &[Uuid],
    fingerprint: &str,
    text: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<SimilarMatch>> {
    let mut found = by_fingerprint(pool, fingerprint, exclude, limit).await?;
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(found);
    };
    for tier in [Tier::Trigram, Tier::Fulltext] {
        let missing = limit - found.len() as i64;
        if missing <= 0 {
            break;
        }
        let exclude: Vec<Uuid> = exclude
            .iter()
            .copied()
            .chain(found.iter().map(|m| m.run_id))
            .collect();
        let more = match tier {
            Tier::Trigram => by_trigram(pool, text, &exclude, missing).await?,
            _ => by_fulltext(pool, text, &exclude, missing).await?,
        };
        found.extend(more);
    }
    Ok(found)
}

/// The stored normalised failure text of a run, if its excerpt was taken.
pub async fn failure_text(pool: &PgPool, run_id: Uuid) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT failure_text FROM run_failure_texts WHERE run_id = $1")
        .bind(run_id)
        .fetch_optional(pool)
        .await
}

fn tagged(mut rows: Vec<SimilarMatch>, tier: Tier) -> Vec<SimilarMatch> {
    for m in &mut rows {
        m.tier = Some(tier);
        m.source = SOURCE_ANALYSIS;
        m.score = m.score.clamp(0.0, 1.0);
    }
    rows
}

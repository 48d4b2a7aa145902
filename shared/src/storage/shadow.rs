//! Shadow runs (`analysis_runs.shadow_of`) and `shadow_comparisons`: a
//! shadow run analyses a live run's event with the other reasoner, at bulk
//! priority (created with its live run by [`super::runs::create_in_tx`]),
//! and is never notified or reviewed; when both are terminal one
//! comparison row is written ([`compare`], or [`compare_pending`] for
//! pairs whose finishing worker died or raced the other).

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

/// One comparison of a live run and its shadow.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow, serde::Serialize)]
pub struct Comparison {
    pub live_run_id: Uuid,
    pub shadow_run_id: Uuid,
    pub live_reasoner: String,
    pub shadow_reasoner: String,
    pub live_status: String,
    pub shadow_status: String,
    pub live_category: Option<String>,
    pub shadow_category: Option<String>,
    pub same_category: bool,
    pub live_confidence: Option<f32>,
    pub shadow_confidence: Option<f32>,
    pub live_root_cause: Option<String>,
    pub shadow_root_cause: Option<String>,
    pub live_tokens: i64,
    pub shadow_tokens: i64,
    pub live_cost_usd: f64,
    pub shadow_cost_usd: f64,
    pub compared_at: DateTime<Utc>,
}

/// The comparison rows of the pairs (`s` the shadow, `l` its live run)
/// the `WHERE` clause that follows picks, skipping those written already.
const COMPARE_PAIRS: &str = "INSERT INTO shadow_comparisons
         (live_run_id, shadow_run_id, live_reasoner, shadow_reasoner, live_status, shadow_status,
          live_category, shadow_category, same_category, live_confidence, shadow_confidence,
          live_root_cause, shadow_root_cause, live_tokens, shadow_tokens, live_cost_usd,
          shadow_cost_usd)
     SELECT l.id, s.id, l.reasoner, s.reasoner, l.status, s.status, l.category, s.category,
            coalesce(l.category = s.category, false), l.confidence, s.confidence,
            l.result ->> 'root_cause', s.result ->> 'root_cause',
            l.tokens_in + l.tokens_out, s.tokens_in + s.tokens_out, l.cost_usd, s.cost_usd
     FROM analysis_runs s JOIN analysis_runs l ON l.id = s.shadow_of
     WHERE s.status IN ('completed', 'needs_review', 'failed')
       AND l.status IN ('completed', 'needs_review', 'failed')";

/// [`compare`]'s statement.
pub(crate) static COMPARE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{COMPARE_PAIRS} AND (s.id = $1 OR s.shadow_of = $1) ON CONFLICT DO NOTHING RETURNING *"
    )
});

/// [`compare_pending`]'s statement.
pub(crate) static COMPARE_PENDING: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{COMPARE_PAIRS} AND s.shadow_of IS NOT NULL AND s.created_at > now() - interval '7 days'
           AND NOT EXISTS (SELECT 1 FROM shadow_comparisons c WHERE c.shadow_run_id = s.id)
         LIMIT $1
         ON CONFLICT DO NOTHING RETURNING *"
    )
});

/// Writes the comparison of the pair `run_id` belongs to (either side) if
/// both runs are terminal and it is not written yet; returns it when this
/// call wrote it.
pub async fn compare(pool: &PgPool, run_id: Uuid) -> sqlx::Result<Option<Comparison>> {
    sqlx::query_as(COMPARE.as_str())
        .bind(run_id)
        .fetch_optional(pool)
        .await
}

/// Writes, in one statement, the comparisons of up to `limit` terminal
/// pairs of the last 7 days that have none (their finishing worker died
/// first, or both finished at once and neither saw the other); returns
/// those written.
pub async fn compare_pending(pool: &PgPool, limit: i64) -> sqlx::Result<Vec<Comparison>> {
    sqlx::query_as(COMPARE_PENDING.as_str())
        .bind(limit)
        .fetch_all(pool)
        .await
}

/// The comparisons written since `since`, oldest first.
pub async fn since(pool: &PgPool, since: DateTime<Utc>) -> sqlx::Result<Vec<Comparison>> {
    sqlx::query_as("SELECT * FROM shadow_comparisons WHERE compared_at >= $1 ORDER BY compared_at")
        .bind(since)
        .fetch_all(pool)
        .await
}

/// Shadow runs created since `since` that are not compared yet (one of
/// the pair still running).
pub async fn pending_count(pool: &PgPool, since: DateTime<Utc>) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT count(*) FROM analysis_runs s
         WHERE s.shadow_of IS NOT NULL AND s.created_at >= $1
           AND NOT EXISTS (SELECT 1 FROM shadow_comparisons c WHERE c.shadow_run_id = s.id)",
    )
    .bind(since)
    .fetch_one(pool)
    .await
}

/// Comparisons of the last `days` days per (live reasoner, shadow
/// reasoner, live category, shadow category): the confusion between the
/// two reasoners, with what each side cost.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Cell {
    pub live_reasoner: String,
    pub shadow_reasoner: String,
    pub live_category: String,
    pub shadow_category: String,
    pub pairs: i64,
    pub live_cost_usd: f64,
    pub shadow_cost_usd: f64,
}

/// The confusion cells of the comparisons of the last `days` days
/// (`/metrics`; a missing category reads `NONE`).
pub async fn confusion(pool: &PgPool, days: i32) -> sqlx::Result<Vec<Cell>> {
    sqlx::query_as(
        "SELECT live_reasoner, shadow_reasoner, coalesce(live_category, 'NONE') AS live_category,
                coalesce(shadow_category, 'NONE') AS shadow_category, count(*) AS pairs,
                sum(live_cost_usd)::float8 AS live_cost_usd, sum(shadow_cost_usd)::float8 AS shadow_cost_usd
         FROM shadow_comparisons WHERE compared_at > now() - make_interval(days => $1)
         GROUP BY 1, 2, 3, 4",
    )
    .bind(days)
    .fetch_all(pool)
    .await
}

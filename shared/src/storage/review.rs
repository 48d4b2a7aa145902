//! `review_items`: results the agent is not sure of, and dead-lettered runs,
//! waiting for the ops team.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, PgPool, Postgres, Transaction};
use uuid::Uuid;

/// Opens a review item for a run (at most one per run), in the caller's transaction.
pub(crate) async fn insert_in_tx(
    tx: &mut Transaction<'_, Postgres>,
    run_id: Uuid,
    reason: &str,
    category: Option<&str>,
    confidence: Option<f32>,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO review_items (id, run_id, reason, category, confidence)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (run_id) DO NOTHING",
    )
    .bind(Uuid::now_v7())
    .bind(run_id)
    .bind(reason)
    .bind(category)
    .bind(confidence)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// A review item with what a reviewer needs to triage it.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct ReviewRow {
    pub id: Uuid,
    pub run_id: Uuid,
    pub reason: String,
    pub category: Option<String>,
    pub confidence: Option<f32>,
    pub status: String,
    pub run_status: String,
    pub job_name: Option<String>,
    pub build_number: Option<String>,
    pub log_name: Option<String>,
    pub root_cause: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// A review item joined with its run and event (what [`ReviewRow`] reads).
const REVIEW_SELECT: &str = "SELECT i.id, i.run_id, i.reason, i.category, i.confidence, i.status,
        r.status AS run_status, e.job_name, e.build_number, e.log_name,
        r.result ->> 'root_cause' AS root_cause, i.created_at
    FROM review_items i
    JOIN analysis_runs r ON r.id = i.run_id
    JOIN failure_events e ON e.id = r.event_id";

/// Lists open and claimed items, oldest first.
pub async fn list_open(pool: &PgPool, limit: i64) -> sqlx::Result<Vec<ReviewRow>> {
    sqlx::query_as(AssertSqlSafe(format!(
        "{REVIEW_SELECT} WHERE i.status IN ('open', 'claimed') ORDER BY i.created_at LIMIT $1"
    )))
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// The review item of one run, if any.
pub async fn for_run(pool: &PgPool, run_id: Uuid) -> sqlx::Result<Option<ReviewRow>> {
    sqlx::query_as(AssertSqlSafe(format!(
        "{REVIEW_SELECT} WHERE i.run_id = $1"
    )))
    .bind(run_id)
    .fetch_optional(pool)
    .await
}

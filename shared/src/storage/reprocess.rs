//! Bulk reprocessing: re-analyse the failures of a time window at bulk
//! priority (`reprocess_batches`, `analysis_runs.reprocess_batch/_of`).
//!
//! A batch is named by its window and filters ([`Window::key`]); each event
//! gets at most one run per batch (a unique index), so running the same
//! reprocess again resumes it and never creates a second run. The new run
//! links to the run it re-analyses (`reprocess_of`); the original keeps its
//! result, so verdicts can be compared.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use uuid::Uuid;

use super::{columns::CategoryColumn, runs::RunLimits};
use crate::{
    queue,
    types::{RunStatus, StepTask},
};

/// Which past failures to re-analyse: events received in `[since, until)`
/// whose latest finished run matches the filters.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    pub since: DateTime<Utc>,
    pub until: DateTime<Utc>,
    /// Category of the previous run.
    pub category: Option<String>,
    /// Status of the previous run (completed, needs_review, failed).
    pub status: Option<String>,
}

impl Window {
    /// The batch key: the same window and filters always name the same batch.
    pub fn key(&self) -> String {
        let text = format!(
            "since={}|until={}|category={}|status={}",
            self.since.to_rfc3339(),
            self.until.to_rfc3339(),
            self.category.as_deref().unwrap_or("*"),
            self.status.as_deref().unwrap_or("*"),
        );
        crate::hex(&Sha256::digest(text.as_bytes()))
    }
}

/// A reprocess batch as stored.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct Batch {
    pub id: Uuid,
    pub batch_key: String,
    pub since: DateTime<Utc>,
    pub until: DateTime<Utc>,
    pub category: Option<String>,
    pub status: Option<String>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
}

const BATCH_COLUMNS: &str = "id, batch_key, since, until, category, status, created_by, created_at";

/// The events of `window` not yet in batch `$1`, with their previous run
/// (the latest finished run outside this batch). Parameters: `$1` batch id
/// (any id for a batch that does not exist yet), `$2` since, `$3` until,
/// `$4` category, `$5` status.
const CANDIDATES: &str = "
    SELECT e.id AS event_id, prev.id AS prev_id, e.received_at
    FROM failure_events e
    JOIN LATERAL (
        SELECT r.id, r.status, r.category FROM analysis_runs r
        WHERE r.event_id = e.id AND r.status IN ('completed', 'needs_review', 'failed')
          AND r.reprocess_batch IS DISTINCT FROM $1 AND r.shadow_of IS NULL
        ORDER BY r.created_at DESC LIMIT 1) prev ON true
    WHERE e.received_at >= $2 AND e.received_at < $3
      AND ($4::text IS NULL OR prev.category = $4)
      AND ($5::text IS NULL OR prev.status = $5)
      AND NOT EXISTS (SELECT 1 FROM analysis_runs x WHERE x.reprocess_batch = $1 AND x.event_id = e.id)";

/// [`find`]'s statement.
pub(crate) static FIND: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {BATCH_COLUMNS} FROM reprocess_batches WHERE batch_key = $1"));

/// The batch of `window`, if it was started before.
pub async fn find(pool: &PgPool, window: &Window) -> sqlx::Result<Option<Batch>> {
    sqlx::query_as(FIND.as_str())
        .bind(window.key())
        .fetch_optional(pool)
        .await
}

/// [`get`]'s statement.
pub(crate) static GET: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {BATCH_COLUMNS} FROM reprocess_batches WHERE id = $1"));

/// One batch by id.
pub async fn get(pool: &PgPool, id: Uuid) -> sqlx::Result<Option<Batch>> {
    sqlx::query_as(GET.as_str())
        .bind(id)
        .fetch_optional(pool)
        .await
}

/// [`open`]'s statement.
pub(crate) static OPEN: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO reprocess_batches (id, batch_key, since, until, category, status, created_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (batch_key) DO NOTHING RETURNING {BATCH_COLUMNS}"
    )
});

/// Creates the batch of `window`, or returns the existing one (`false`).
pub async fn open(pool: &PgPool, window: &Window, created_by: &str) -> sqlx::Result<(Batch, bool)> {
    let created: Option<Batch> = sqlx::query_as(OPEN.as_str())
        .bind(Uuid::now_v7())
        .bind(window.key())
        .bind(window.since)
        .bind(window.until)
        .bind(&window.category)
        .bind(&window.status)
        .bind(created_by)
        .fetch_optional(pool)
        .await?;
    match created {
        Some(b) => Ok((b, true)),
        None => Ok((
            find(pool, window).await?.ok_or(sqlx::Error::RowNotFound)?,
            false,
        )),
    }
}

/// [`remaining`]'s statement.
pub(crate) static REMAINING: LazyLock<String> =
    LazyLock::new(|| format!("SELECT count(*) FROM ({CANDIDATES}) c"));

/// How many events of `window` are not yet in `batch` (a dry run passes `None`).
pub async fn remaining(pool: &PgPool, window: &Window, batch: Option<Uuid>) -> sqlx::Result<i64> {
    sqlx::query_scalar(REMAINING.as_str())
        .bind(batch.unwrap_or_else(Uuid::nil))
        .bind(window.since)
        .bind(window.until)
        .bind(&window.category)
        .bind(&window.status)
        .fetch_one(pool)
        .await
}

/// Runs of `batch` created so far.
pub async fn enqueued(pool: &PgPool, batch: Uuid) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM analysis_runs WHERE reprocess_batch = $1")
        .bind(batch)
        .fetch_one(pool)
        .await
}

/// [`enqueue_chunk`]'s statement.
pub(crate) static ENQUEUE_CHUNK: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH c AS ({CANDIDATES} ORDER BY e.received_at, e.id LIMIT $6)
         INSERT INTO analysis_runs
             (id, event_id, priority, max_iterations, max_attempts, reprocess_batch, reprocess_of)
         SELECT gen_random_uuid(), c.event_id, $7, $8, $9, $1, c.prev_id FROM c
         ON CONFLICT (reprocess_batch, event_id) WHERE reprocess_batch IS NOT NULL DO NOTHING
         RETURNING id"
    )
});

/// Creates runs (linked to the previous run) and their first step tasks at
/// `limits.priority` for up to `chunk` more events of the batch, in one
/// transaction: a Ctrl-C loses at most the chunk in flight, which a rerun
/// creates. Returns how many runs were created (0: the batch is complete).
pub async fn enqueue_chunk(
    pool: &PgPool,
    batch: &Batch,
    limits: RunLimits,
    chunk: i64,
) -> anyhow::Result<usize> {
    let mut tx = pool.begin().await?;
    let created: Vec<Uuid> = sqlx::query_scalar(ENQUEUE_CHUNK.as_str())
        .bind(batch.id)
        .bind(batch.since)
        .bind(batch.until)
        .bind(&batch.category)
        .bind(&batch.status)
        .bind(chunk)
        .bind(limits.priority)
        .bind(limits.max_iterations)
        .bind(limits.max_attempts)
        .fetch_all(&mut *tx)
        .await?;
    let steps: Vec<StepTask> = created
        .iter()
        .map(|&run_id| StepTask {
            run_id,
            iteration: 1,
            attempt: 0,
        })
        .collect();
    queue::push_steps(&mut tx, &steps, limits.priority).await?;
    tx.commit().await?;
    Ok(created.len())
}

/// One group of a batch's verdicts against the previous ones.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct Comparison {
    pub prev_status: RunStatus,
    pub prev_category: Option<CategoryColumn>,
    pub new_status: RunStatus,
    pub new_category: Option<CategoryColumn>,
    pub runs: i64,
}

/// The batch's runs grouped by (previous verdict, new verdict).
pub async fn compare(pool: &PgPool, batch: Uuid) -> sqlx::Result<Vec<Comparison>> {
    sqlx::query_as(
        "SELECT p.status AS prev_status, p.category AS prev_category,
                n.status AS new_status, n.category AS new_category, count(*) AS runs
         FROM analysis_runs n JOIN analysis_runs p ON p.id = n.reprocess_of
         WHERE n.reprocess_batch = $1
         GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4",
    )
    .bind(batch)
    .fetch_all(pool)
    .await
}

//! Housekeeping of the apalis step queue (`apalis.jobs`): finished step
//! tasks carry nothing the journal does not already hold, so they are pruned.

use std::time::Duration;

use sqlx::PgPool;

use crate::queue::{QueueDepth, STEP_QUEUE};

/// Deletes step tasks that finished (done, or failed for good) more than
/// `older_than` ago, at most `limit` per call. Returns how many were deleted.
pub async fn prune_finished(pool: &PgPool, older_than: Duration, limit: i64) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "DELETE FROM apalis.jobs WHERE id IN (
             SELECT id FROM apalis.jobs
             WHERE job_type = $1
               AND (status IN ('Done', 'Killed') OR (status = 'Failed' AND attempts >= max_attempts))
               AND done_at < now() - make_interval(secs => $2)
             LIMIT $3)",
    )
    .bind(STEP_QUEUE)
    .bind(older_than.as_secs_f64())
    .bind(limit)
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}

/// Step tasks by status (for operators and tests).
pub async fn count_by_status(pool: &PgPool) -> sqlx::Result<Vec<(String, i64)>> {
    sqlx::query_as("SELECT status, count(*) FROM apalis.jobs WHERE job_type = $1 GROUP BY status ORDER BY status")
        .bind(STEP_QUEUE)
        .fetch_all(pool)
        .await
}

/// Counts waiting step tasks by priority (read-only; uses the status index,
/// so it stays cheap enough to run on every metrics scrape).
pub async fn queue_depth(pool: &PgPool) -> sqlx::Result<Vec<QueueDepth>> {
    sqlx::query_as(
        "SELECT coalesce(priority, 0) AS priority,
                count(*) FILTER (WHERE run_at <= now()) AS ready,
                count(*) FILTER (WHERE run_at > now()) AS scheduled
         FROM apalis.jobs
         WHERE job_type = $1 AND status IN ('Pending', 'Queued')
         GROUP BY 1 ORDER BY 1",
    )
    .bind(STEP_QUEUE)
    .fetch_all(pool)
    .await
}

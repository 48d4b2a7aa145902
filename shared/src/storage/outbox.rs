//! `notification_outbox`: notifications of finished runs.
//!
//! ```text
//! (final checkpoint tx) ──insert──> pending ──claim (SKIP LOCKED, locked_until)──> delivering
//!   delivering ──every target accepted──> delivered
//!   delivering ──a target failed──> pending (attempts+1, next_attempt_at = backoff) | dead
//! ```
//! The row is written by the statement that commits the run's final state
//! (`runs::commit_step`), so a finished run is never without its
//! notification and a failed commit never notifies. Reprocessed runs are not
//! notified: a nightly batch must not page anyone. Delivery holds no
//! transaction open: a claim is a time-limited lock (`locked_until`), so a
//! crashed deliverer's rows return.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

/// Where a notification is (the `notification_outbox.status` column).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    strum::Display,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum OutboxStatus {
    /// Waiting for (another) delivery attempt.
    Pending,
    /// Every target accepted it.
    Delivered,
    /// Its kind is not notified (configuration).
    Skipped,
    /// Attempts exhausted.
    Dead,
}

impl OutboxStatus {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A claimed notification with what a delivery needs.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Claimed {
    /// The delivery id receivers deduplicate on.
    pub id: Uuid,
    pub run_id: Uuid,
    pub kind: String,
    pub attempts: i32,
    pub delivered_to: Vec<String>,
    pub created_at: DateTime<Utc>,
}

/// pending (due, unlocked) -> locked by `owner` for `lock`: up to `limit`
/// rows, skipping rows another deliverer holds. `kinds` are the kinds this
/// deliverer sends; others are marked `skipped` (configuration says they are
/// not notified). The claim reads `kinds` too: a row committed between the
/// two statements is left pending for the next pass, never claimed and sent
/// because the first statement did not see it.
pub async fn claim_due(
    pool: &PgPool,
    owner: &str,
    lock: Duration,
    kinds: &[&str],
    limit: i64,
) -> sqlx::Result<Vec<Claimed>> {
    sqlx::query(
        "UPDATE notification_outbox SET status = 'skipped', finished_at = now()
         WHERE status = 'pending' AND NOT (kind = ANY($1))",
    )
    .bind(kinds)
    .execute(pool)
    .await?;
    sqlx::query_as(
        "WITH due AS (
             SELECT id FROM notification_outbox
             WHERE status = 'pending' AND kind = ANY($4) AND next_attempt_at <= now()
               AND (locked_until IS NULL OR locked_until < now())
             ORDER BY next_attempt_at LIMIT $3
             FOR UPDATE SKIP LOCKED)
         UPDATE notification_outbox o
         SET locked_by = $1, locked_until = now() + make_interval(secs => $2)
         FROM due WHERE o.id = due.id
         RETURNING o.id, o.run_id, o.kind, o.attempts, o.delivered_to, o.created_at",
    )
    .bind(owner)
    .bind(lock.as_secs_f64())
    .bind(limit)
    .bind(kinds)
    .fetch_all(pool)
    .await
}

/// How one delivery attempt of a row went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// Every target has it now; `delivered` lists those that accepted this time.
    Delivered { delivered: Vec<String> },
    /// Some target failed; `delivered` lists those that accepted this time.
    Failed {
        delivered: Vec<String>,
        error: String,
    },
}

/// What became of the row after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterAttempt {
    Delivered,
    RetryAt(DateTime<Utc>),
    Dead,
    /// Our lock lapsed and someone else holds the row: nothing written.
    LockLost,
}

/// Retry schedule of failed deliveries (capped exponential backoff, jitter).
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub base: Duration,
    pub max: Duration,
    pub max_attempts: i32,
}

/// delivering -> delivered | pending (retry at the backoff, computed in SQL
/// from the stored attempt count) | dead, matched on our lock.
pub async fn record_attempt(
    pool: &PgPool,
    id: Uuid,
    owner: &str,
    attempt: &Attempt,
    policy: RetryPolicy,
) -> sqlx::Result<AfterAttempt> {
    let (ok, delivered, error) = match attempt {
        Attempt::Delivered { delivered } => (true, delivered.clone(), None),
        Attempt::Failed { delivered, error } => (false, delivered.clone(), Some(error.as_str())),
    };
    let row: Option<(OutboxStatus, DateTime<Utc>)> = sqlx::query_as(
        "UPDATE notification_outbox o SET
             attempts = o.attempts + 1, locked_by = NULL, locked_until = NULL,
             delivered_to = o.delivered_to || $4::text[], last_error = $5,
             status = CASE WHEN $3 THEN 'delivered'
                           WHEN o.attempts + 1 >= $8 THEN 'dead' ELSE 'pending' END,
             next_attempt_at = CASE WHEN $3 OR o.attempts + 1 >= $8 THEN now()
                 ELSE now() + make_interval(secs => least($7, $6 * power(2, o.attempts)) * (1 + 0.25 * random())) END,
             finished_at = CASE WHEN $3 OR o.attempts + 1 >= $8 THEN now() END
         WHERE o.id = $1 AND o.locked_by = $2 AND o.status = 'pending'
         RETURNING o.status, o.next_attempt_at",
    )
    .bind(id)
    .bind(owner)
    .bind(ok)
    .bind(delivered)
    .bind(error)
    .bind(policy.base.as_secs_f64())
    .bind(policy.max.as_secs_f64())
    .bind(policy.max_attempts)
    .fetch_optional(pool)
    .await?;
    Ok(match row {
        None => AfterAttempt::LockLost,
        Some((OutboxStatus::Delivered, _)) => AfterAttempt::Delivered,
        Some((OutboxStatus::Dead, _)) => AfterAttempt::Dead,
        Some((_, at)) => AfterAttempt::RetryAt(at),
    })
}

/// A notification as stored (for operators and tests).
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct OutboxRow {
    pub id: Uuid,
    pub run_id: Uuid,
    pub kind: String,
    pub status: OutboxStatus,
    pub delivered_to: Vec<String>,
    pub attempts: i32,
    pub next_attempt_at: DateTime<Utc>,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// The notification of one run, if any.
pub async fn for_run(pool: &PgPool, run_id: Uuid) -> sqlx::Result<Option<OutboxRow>> {
    sqlx::query_as(
        "SELECT id, run_id, kind, status, delivered_to, attempts, next_attempt_at, last_error,
                created_at, finished_at
         FROM notification_outbox WHERE run_id = $1",
    )
    .bind(run_id)
    .fetch_optional(pool)
    .await
}

//! `analysis_runs`: the lifecycle of one analysis, fenced by its lease.
//!
//! ```text
//! queued ──claim──> running ──commit──> queued (next step pushed) ──> …
//!    ^                 │ ↺ commit, kept: the worker goes on under the next iteration's lease
//!    │                 │  └───commit──> completed | needs_review (+ review item)
//!    │                 ├──transient error──> retry_wait ──(task at next_attempt_at)──> claim
//!    │                 ├──permanent error / attempts exhausted──> failed (+ review item)
//!    └──release (SIGTERM) / reconcile (lease expired: the attempt counts)
//! ```
//! Every write after the claim matches `lease_owner` **and** `lease_epoch`,
//! so a worker whose lease expired and was taken over changes nothing (I2).
//!
//! A statement that reaches a run by its id tests the run's state as
//! `(status = 'running') IS TRUE`, a form no index serves, so the planner
//! always takes the primary key. With a bare `status = 'running'` it may
//! prefer `analysis_runs_status` whenever the statistics say few runs are
//! running (analysed at a quiet moment, before a burst): each commit then
//! walks every running run, O(runs in flight) per step — 936 buffers per
//! checkpoint at 1,000 in flight, measured. `tests/tests/statements.rs`
//! checks the plans.

use std::{sync::LazyLock, time::Duration};

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{
    PgConnection, PgPool, Postgres, Transaction, postgres::PgArguments, query::QueryAs, types::Json,
};
use uuid::Uuid;

mod checkpoint;

pub(crate) use checkpoint::statements as checkpoint_statements;
pub use checkpoint::{Checkpoint, CommitOutcome, Finish, Next, ToolAudit, commit_step};

use super::{
    columns::CategoryColumn,
    events::{EVENT_COLUMNS, EventRow},
    review,
    steps::{STEP_COLUMNS, StepRow},
};
use crate::{
    queue::{self, AfterCommit, Broker, Pending},
    types::{RunStatus, StepTask},
};

/// Channel notified (payload: run id) when a run reaches a terminal state.
pub const FINISHED_CHANNEL: &str = "faultline_run_finished";

/// Channel notified (payload: `"<run id> <iteration>"`) when a watched run
/// commits an iteration (see [`watch`]).
pub const STEPS_CHANNEL: &str = "faultline_run_steps";

/// Marks a run watched for `ttl`: until then its checkpoints notify
/// [`STEPS_CHANNEL`]. A stream's server calls this again before `ttl`
/// runs out; a crashed one stops the notifications within `ttl`. Returns
/// false when there is no such run.
pub async fn watch(pool: &PgPool, run_id: Uuid, ttl: std::time::Duration) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE analysis_runs
         SET watched_until = greatest(watched_until, now() + make_interval(secs => $2))
         WHERE id = $1",
    )
    .bind(run_id)
    .bind(ttl.as_secs_f64())
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A run as stored.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize, utoipa::ToSchema)]
pub struct RunRow {
    pub id: Uuid,
    pub event_id: Uuid,
    pub status: RunStatus,
    pub priority: i32,
    pub reasoner: String,
    pub iteration: i32,
    pub max_iterations: i32,
    pub attempts: i32,
    pub max_attempts: i32,
    pub next_attempt_at: DateTime<Utc>,
    pub last_error: Option<String>,
    pub lease_owner: Option<String>,
    pub lease_expires_at: Option<DateTime<Utc>>,
    pub lease_epoch: i64,
    pub fingerprint: Option<String>,
    pub category: Option<CategoryColumn>,
    pub confidence: Option<f32>,
    pub result: Option<Value>,
    pub failure_reason: Option<String>,
    pub tokens_in: i64,
    pub tokens_out: i64,
    pub cost_usd: f64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    /// W3C trace context of the ingest span: the parent of every step span.
    pub traceparent: Option<String>,
    /// The prompt registry's version of the run's LLM steps, from its first
    /// checkpoint on (0: built in; `None`: not decided yet, or heuristic).
    pub prompt_version: Option<i32>,
    /// Set on a shadow run: the live run it shadows.
    pub shadow_of: Option<Uuid>,
}

pub(crate) const RUN_COLUMNS: &str = "id, event_id, status, priority, reasoner, iteration, max_iterations, attempts,
    max_attempts, next_attempt_at, last_error, lease_owner, lease_expires_at, lease_epoch, fingerprint,
    category, confidence, result, failure_reason, tokens_in, tokens_out, cost_usd, created_at, updated_at,
    started_at, finished_at, traceparent, prompt_version, shadow_of";

/// The right to write a run's next checkpoint, valid while owner and epoch match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub run_id: Uuid,
    pub owner: String,
    pub epoch: i64,
}

/// Exponential backoff with jitter, evaluated in SQL on the stored attempt count.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    pub base: Duration,
    pub max: Duration,
}

/// Limits copied onto every new run, so a run keeps the bounds it started with.
#[derive(Debug, Clone, Copy)]
pub struct RunLimits {
    pub max_iterations: i32,
    pub max_attempts: i32,
    pub priority: i32,
    /// The run gets a shadow run of the other reasoner
    /// (`FAULTLINE_SHADOW_REASONER`, [`super::shadow`]).
    pub shadowed: bool,
}

/// Creates a queued run for `event_id` and pushes its first step task
/// (inside `tx`, or into `after` with the Redis broker), recording the
/// current span's trace context on the run; with `limits.shadowed`, its
/// shadow run too ([`super::shadow`]).
pub async fn create_in_tx(
    tx: &mut Transaction<'_, Postgres>,
    after: &mut AfterCommit<'_>,
    event_id: Uuid,
    limits: RunLimits,
) -> anyhow::Result<Uuid> {
    let run_id = insert_in_tx(tx, after, event_id, limits, limits.priority, None).await?;
    if limits.shadowed {
        // Same event and limits, bulk priority: it must never hold up live work.
        insert_in_tx(
            tx,
            after,
            event_id,
            limits,
            queue::PRIORITY_BULK,
            Some(run_id),
        )
        .await?;
    }
    Ok(run_id)
}

/// One queued run (the shadow of `shadow_of` when given) and its first
/// step task.
async fn insert_in_tx(
    tx: &mut Transaction<'_, Postgres>,
    after: &mut AfterCommit<'_>,
    event_id: Uuid,
    limits: RunLimits,
    priority: i32,
    shadow_of: Option<Uuid>,
) -> anyhow::Result<Uuid> {
    let run_id = Uuid::now_v7();
    sqlx::query(
        "INSERT INTO analysis_runs (id, event_id, priority, max_iterations, max_attempts, traceparent, shadow_of)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(run_id)
    .bind(event_id)
    .bind(priority)
    .bind(limits.max_iterations)
    .bind(limits.max_attempts)
    // The caller's span (ingest) becomes the root of the run's trace.
    .bind(crate::telemetry::current_traceparent())
    .bind(shadow_of)
    .execute(&mut **tx)
    .await?;
    let first = StepTask {
        run_id,
        iteration: 1,
        attempt: 0,
    };
    queue::push_step(tx, after, &first, priority, None).await?;
    Ok(run_id)
}

/// [`get`]'s statement.
pub(crate) static GET: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {RUN_COLUMNS} FROM analysis_runs WHERE id = $1"));

/// Reads one run.
pub async fn get(pool: &PgPool, run_id: Uuid) -> sqlx::Result<Option<RunRow>> {
    sqlx::query_as(GET.as_str())
        .bind(run_id)
        .fetch_optional(pool)
        .await
}

/// A claimed step: the lease, the run as claimed, and what the step
/// rebuilds its state from, read by the same statement.
#[derive(Debug, Clone)]
pub struct Claim {
    pub lease: Lease,
    pub run: RunRow,
    /// `None` if the run's event is gone (a permanent error for the step).
    pub event: Option<EventRow>,
    /// The run's journal in iteration order.
    pub journal: Vec<StepRow>,
}

#[derive(sqlx::FromRow)]
struct ClaimRow {
    #[sqlx(flatten)]
    run: RunRow,
    event: Option<Json<EventRow>>,
    journal: Json<Vec<StepRow>>,
}

/// [`claim`]'s statement.
pub(crate) static CLAIM: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH c AS (
             UPDATE analysis_runs
             SET status = 'running', lease_owner = $4, lease_epoch = lease_epoch + 1,
                 lease_expires_at = now() + make_interval(secs => $5),
                 started_at = coalesce(started_at, now()), updated_at = now()
             WHERE id = $1 AND iteration = $2 - 1 AND attempts = $3
               AND (status IN ('queued', 'retry_wait')) IS TRUE
             RETURNING {RUN_COLUMNS})
         SELECT c.*,
             (SELECT to_jsonb(e) FROM (SELECT {EVENT_COLUMNS} FROM failure_events
                                       WHERE id = c.event_id) e) AS event,
             CASE WHEN c.iteration = 0 THEN '[]'::jsonb ELSE
             (SELECT coalesce(jsonb_agg(to_jsonb(s) ORDER BY s.iteration), '[]')
              FROM (SELECT {STEP_COLUMNS} FROM run_steps WHERE run_id = c.id) s) END AS journal
         FROM c"
    )
});

/// queued | retry_wait -> running: takes the lease for exactly the task's
/// iteration and attempt, bumping the epoch, and reads the run's event and
/// journal in the same round trip. `None` means the task is stale (already
/// executed, superseded by a retry, or the run is held or finished). A run
/// at iteration 0 has no journal (a checkpoint writes its row and counts
/// the iteration in one statement), so its claim reads none: most claims
/// are first steps, since a live run keeps its lease between steps.
pub async fn claim(
    pool: &PgPool,
    task: &StepTask,
    owner: &str,
    ttl: Duration,
) -> sqlx::Result<Option<Claim>> {
    let row: Option<ClaimRow> = sqlx::query_as(CLAIM.as_str())
        .bind(task.run_id)
        .bind(task.iteration)
        .bind(task.attempt)
        .bind(owner)
        .bind(ttl.as_secs_f64())
        .fetch_optional(pool)
        .await?;
    Ok(row.map(|r| Claim {
        lease: Lease {
            run_id: r.run.id,
            owner: owner.to_string(),
            epoch: r.run.lease_epoch,
        },
        run: r.run,
        event: r.event.map(|e| e.0),
        journal: r.journal.0,
    }))
}

/// Renews, in one statement, the leases `owner` still holds among `held`
/// (run id, epoch); returns the runs renewed. A lease missing from the
/// answer was lost (taken over, or the run finished).
pub async fn renew_leases(
    conn: &mut PgConnection,
    owner: &str,
    held: &[(Uuid, i64)],
    ttl: Duration,
) -> sqlx::Result<Vec<Uuid>> {
    let (ids, epochs): (Vec<Uuid>, Vec<i64>) = held.iter().copied().unzip();
    sqlx::query_scalar(
        "UPDATE analysis_runs r SET lease_expires_at = now() + make_interval(secs => $4)
         FROM unnest($2::uuid[], $3::bigint[]) AS h(id, epoch)
         WHERE r.id = h.id AND r.lease_owner = $1 AND r.lease_epoch = h.epoch
           AND (r.status = 'running') IS TRUE
         RETURNING r.id",
    )
    .bind(owner)
    .bind(&ids)
    .bind(&epochs)
    .bind(ttl.as_secs_f64())
    .fetch_all(conn)
    .await
}

/// What happened to a failed attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum FailureOutcome {
    /// running -> retry_wait; the retry task is queued for `next_attempt_at`.
    Retrying {
        attempt: i32,
        next_attempt_at: DateTime<Utc>,
    },
    /// running -> failed, with a review item (dead letter, I1).
    DeadLettered { attempt: i32 },
    /// The lease was lost: nothing was written.
    Fenced,
}

/// The SET clause shared by a failed attempt and an expired lease (table
/// alias `r`): counts the attempt, schedules the retry with capped
/// exponential backoff and jitter computed from the stored attempt count, but
/// never sooner than the server asked (`Retry-After`, itself capped), or
/// dead-letters the run. Placeholders: `{e}` error (text), `{t}` transient,
/// `{b}` base seconds, `{c}` cap seconds, `{w}` the server's wait in seconds
/// (0 when it named none).
const FAIL_ATTEMPT_SET: &str = "
    attempts = r.attempts + 1, last_error = {e}, lease_owner = NULL, lease_expires_at = NULL,
    lease_epoch = r.lease_epoch + 1, updated_at = now(),
    status = CASE WHEN {t} AND r.attempts + 1 < r.max_attempts THEN 'retry_wait' ELSE 'failed' END,
    next_attempt_at = CASE WHEN {t} AND r.attempts + 1 < r.max_attempts
        THEN now() + make_interval(secs => greatest(
            least({c}, {b} * power(2, r.attempts)) * (1 + 0.25 * random()),
            least({c}, {w})))
        ELSE now() END,
    failure_reason = CASE WHEN {t} AND r.attempts + 1 < r.max_attempts THEN NULL
        ELSE format('iteration %s failed after %s attempt(s): %s', r.iteration + 1, r.attempts + 1, {e}) END,
    finished_at = CASE WHEN {t} AND r.attempts + 1 < r.max_attempts THEN NULL ELSE now() END";

const FAIL_RETURNING: &str =
    "RETURNING r.id, r.status, r.iteration, r.attempts, r.next_attempt_at, r.priority, r.shadow_of";

/// [`FAIL_ATTEMPT_SET`] with its five parameters numbered from `$first`.
fn fail_attempt_set(first: usize) -> String {
    FAIL_ATTEMPT_SET
        .replace("{e}", &format!("${first}::text"))
        .replace("{t}", &format!("${}", first + 1))
        .replace("{b}", &format!("${}", first + 2))
        .replace("{c}", &format!("${}", first + 3))
        .replace("{w}", &format!("${}::float8", first + 4))
}

#[derive(sqlx::FromRow)]
struct Failed {
    id: Uuid,
    status: RunStatus,
    iteration: i32,
    attempts: i32,
    next_attempt_at: DateTime<Utc>,
    priority: i32,
    shadow_of: Option<Uuid>,
}

/// [`record_failure`]'s statement.
pub(crate) static RECORD_FAILURE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE analysis_runs r SET {}
         WHERE r.id = $1 AND r.lease_owner = $2 AND r.lease_epoch = $3
           AND (r.status = 'running') IS TRUE
         {FAIL_RETURNING}",
        fail_attempt_set(4)
    )
});

/// running -> retry_wait | failed for the lease holder's current attempt. A
/// transient failure retries after the backoff, or after `wait` (the
/// server's `Retry-After`, capped at the backoff's cap) when that is later.
pub async fn record_failure(
    pool: &PgPool,
    broker: &Broker,
    lease: &Lease,
    error: &str,
    transient: bool,
    backoff: Backoff,
    wait: Option<Duration>,
) -> sqlx::Result<FailureOutcome> {
    let mut tx = pool.begin().await?;
    let failed: Option<Failed> = sqlx::query_as(RECORD_FAILURE.as_str())
        .bind(lease.run_id)
        .bind(&lease.owner)
        .bind(lease.epoch)
        .bind(error)
        .bind(transient)
        .bind(backoff.base.as_secs_f64())
        .bind(backoff.max.as_secs_f64())
        .bind(wait.unwrap_or_default().as_secs_f64())
        .fetch_optional(&mut *tx)
        .await?;
    let Some(failed) = failed else {
        tx.rollback().await?;
        return Ok(FailureOutcome::Fenced);
    };
    let mut after = AfterCommit::new(broker);
    let outcome = after_failure(
        &mut tx,
        &mut after,
        &failed,
        error,
        transient,
        Some(&lease.owner),
    )
    .await?;
    tx.commit().await?;
    after.flush().await;
    Ok(outcome)
}

/// Records the attempt, then queues the retry or dead-letters the run.
async fn after_failure(
    tx: &mut Transaction<'_, Postgres>,
    after: &mut AfterCommit<'_>,
    f: &Failed,
    error: &str,
    transient: bool,
    worker: Option<&str>,
) -> sqlx::Result<FailureOutcome> {
    let retrying = f.status == RunStatus::RetryWait;
    super::steps::insert_attempt_in_tx(
        tx,
        f.id,
        f.iteration + 1,
        f.attempts,
        error,
        transient,
        worker,
        retrying.then_some(f.next_attempt_at),
    )
    .await?;
    if retrying {
        let step = StepTask {
            run_id: f.id,
            iteration: f.iteration + 1,
            attempt: f.attempts,
        };
        // A run taken over from a dead worker (no worker recorded the
        // failure) was in progress: its step goes ahead of the waiting steps
        // of its class, so its resume does not wait for the backlog.
        let priority = if worker.is_none() {
            f.priority + queue::RESUME_BOOST
        } else {
            f.priority
        };
        queue::push_step(tx, after, &step, priority, Some(f.next_attempt_at))
            .await
            .map_err(queue_error)?;
        Ok(FailureOutcome::Retrying {
            attempt: f.attempts,
            next_attempt_at: f.next_attempt_at,
        })
    } else {
        // A shadow run is never reviewed: its comparison records the failure.
        if f.shadow_of.is_none() {
            let reason = format!("failed: {error}");
            review::insert_in_tx(tx, f.id, &reason, None, None).await?;
        }
        notify_finished(tx, f.id).await?;
        Ok(FailureOutcome::DeadLettered {
            attempt: f.attempts,
        })
    }
}

/// running -> queued without counting an attempt (graceful shutdown): the
/// step task is pushed again and the epoch bumped, so our own late commit
/// would be fenced.
pub async fn release(pool: &PgPool, broker: &Broker, lease: &Lease) -> sqlx::Result<bool> {
    let mut tx = pool.begin().await?;
    let row: Option<(i32, i32, i32)> = sqlx::query_as(
        "UPDATE analysis_runs
         SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL,
             lease_epoch = lease_epoch + 1, updated_at = now()
         WHERE id = $1 AND lease_owner = $2 AND lease_epoch = $3 AND (status = 'running') IS TRUE
         RETURNING iteration, attempts, priority",
    )
    .bind(lease.run_id)
    .bind(&lease.owner)
    .bind(lease.epoch)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((iteration, attempt, priority)) = row else {
        tx.rollback().await?;
        return Ok(false);
    };
    let step = StepTask {
        run_id: lease.run_id,
        iteration: iteration + 1,
        attempt,
    };
    let mut after = AfterCommit::redelivery(broker);
    queue::push_step(&mut tx, &mut after, &step, priority, None)
        .await
        .map_err(queue_error)?;
    tx.commit().await?;
    after.flush().await;
    Ok(true)
}

/// [`reconcile_expired`]'s statement.
pub(crate) static RECONCILE_EXPIRED: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH expired AS (
             SELECT id FROM analysis_runs
             WHERE status = 'running' AND lease_expires_at < now()
             ORDER BY lease_expires_at LIMIT $1
             FOR UPDATE SKIP LOCKED)
         UPDATE analysis_runs r SET {}
         FROM expired WHERE r.id = expired.id
         {FAIL_RETURNING}",
        fail_attempt_set(2)
    )
});

/// [`reconcile_dead_sessions`]'s statement: the runs leased to a worker
/// whose session lock has been missing for longer than `$7` seconds, unless
/// Postgres itself started less than `$8` seconds ago (every session was
/// cut then; the workers are reconnecting, not dead) and the lock went
/// missing only since that start (one missing before it was a dead
/// worker's: its runs need not wait out the restart).
pub(crate) static RECONCILE_DEAD: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH dead AS (
             SELECT r.id FROM analysis_runs r
             JOIN worker_sessions s ON s.owner = r.lease_owner
             WHERE r.status = 'running'
               AND s.absent_since < now() - make_interval(secs => $7)
               AND (s.absent_since < pg_postmaster_start_time()
                    OR pg_postmaster_start_time() < now() - make_interval(secs => $8))
             ORDER BY r.lease_expires_at LIMIT $1
             FOR UPDATE OF r SKIP LOCKED)
         UPDATE analysis_runs r SET {}
         FROM dead WHERE r.id = dead.id
         {FAIL_RETURNING}",
        fail_attempt_set(2)
    )
});

/// running (lease expired) -> retry_wait | failed: a worker that stopped
/// renewing its lease is presumed dead; its attempt counts, and the retry is
/// queued with the usual backoff. Returns how many runs were recovered.
pub async fn reconcile_expired(
    pool: &PgPool,
    broker: &Broker,
    backoff: Backoff,
    limit: i64,
) -> sqlx::Result<usize> {
    let error = "lease expired: the worker stopped renewing it (crashed or hung)";
    let query = sqlx::query_as(RECONCILE_EXPIRED.as_str());
    take_over(pool, broker, query, error, backoff, limit, &[]).await
}

/// running (the holder's session ended) -> retry_wait | failed: the worker
/// process is gone (Postgres released its session lock over `grace` ago),
/// so its runs are retried at once, without waiting for their leases to
/// expire; the attempt counts, as for an expired lease. Within
/// `after_restart` of a Postgres start only a worker whose lock was missing
/// before that start is taken over ([`RECONCILE_DEAD`]).
pub async fn reconcile_dead_sessions(
    pool: &PgPool,
    broker: &Broker,
    grace: Duration,
    after_restart: Duration,
    limit: i64,
) -> sqlx::Result<usize> {
    let error = "worker gone: its database session ended (the process died)";
    let at_once = Backoff {
        base: Duration::ZERO,
        max: Duration::ZERO,
    };
    let query = sqlx::query_as(RECONCILE_DEAD.as_str());
    take_over(
        pool,
        broker,
        query,
        error,
        at_once,
        limit,
        &[grace, after_restart],
    )
    .await
}

/// Binds and runs a take-over statement (`$1` limit, then the failure's
/// five parameters, then the statement's own durations, in seconds: for
/// [`RECONCILE_DEAD`] the grace and the quiet time after a restart) and
/// queues each retry or dead letter.
async fn take_over<'q>(
    pool: &PgPool,
    broker: &Broker,
    query: QueryAs<'q, Postgres, Failed, PgArguments>,
    error: &'q str,
    backoff: Backoff,
    limit: i64,
    durations: &[Duration],
) -> sqlx::Result<usize> {
    let mut tx = pool.begin().await?;
    let mut query = query
        .bind(limit)
        .bind(error)
        .bind(true)
        .bind(backoff.base.as_secs_f64())
        .bind(backoff.max.as_secs_f64())
        .bind(0.0);
    for d in durations {
        query = query.bind(d.as_secs_f64());
    }
    let rows = query.fetch_all(&mut *tx).await?;
    let mut after = AfterCommit::new(broker);
    for failed in &rows {
        after_failure(&mut tx, &mut after, failed, error, true, None).await?;
    }
    tx.commit().await?;
    after.flush().await;
    Ok(rows.len())
}

async fn notify_finished(conn: &mut PgConnection, run_id: Uuid) -> sqlx::Result<()> {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(FINISHED_CHANNEL)
        .bind(run_id.to_string())
        .execute(conn)
        .await?;
    Ok(())
}

fn queue_error(e: queue::QueueError) -> sqlx::Error {
    match e {
        queue::QueueError::Postgres(apalis_postgres::Error::Database(db)) => db,
        other => sqlx::Error::Protocol(format!("queue push failed: {other}")),
    }
}

/// Runs waiting for their next step (queued, or a retry that is due) since
/// longer than `older_than`: with the Redis broker, the reconciler checks
/// that each one's step task still waits in Redis (I6).
pub async fn waiting_steps(
    pool: &PgPool,
    older_than: Duration,
    limit: i64,
) -> sqlx::Result<Vec<Pending>> {
    let rows: Vec<(Uuid, i32, i32, i32)> = sqlx::query_as(
        "SELECT id, iteration + 1, attempts, priority FROM analysis_runs
         WHERE (status = 'queued' AND updated_at < now() - make_interval(secs => $1))
            OR (status = 'retry_wait' AND next_attempt_at < now() - make_interval(secs => $1))
         ORDER BY updated_at LIMIT $2",
    )
    .bind(older_than.as_secs_f64())
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(run_id, iteration, attempt, priority)| Pending {
            step: StepTask {
                run_id,
                iteration,
                attempt,
            },
            priority,
            run_at: None,
        })
        .collect())
}

/// Counts runs by status (for summaries and benchmarks).
pub async fn count_by_status(pool: &PgPool) -> sqlx::Result<Vec<(String, i64)>> {
    sqlx::query_as("SELECT status, count(*) FROM analysis_runs GROUP BY status ORDER BY status")
        .fetch_all(pool)
        .await
}

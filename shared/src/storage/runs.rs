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

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{AssertSqlSafe, PgConnection, PgPool, Postgres, Transaction, types::Json};
use uuid::Uuid;

use super::{
    events::{EVENT_COLUMNS, EventRow, RunLimits},
    review,
    steps::{STEP_COLUMNS, StepRow},
};
use crate::{
    queue::{self, AfterCommit, Pending},
    types::{RunStatus, StepRecord, StepTask},
};

/// Channel notified (payload: run id) when a run reaches a terminal state.
pub const FINISHED_CHANNEL: &str = "faultline_run_finished";

/// A run as stored.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct RunRow {
    pub id: Uuid,
    pub event_id: Uuid,
    pub status: String,
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
    pub category: Option<String>,
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
}

impl RunRow {
    pub fn status(&self) -> RunStatus {
        self.status.parse().unwrap_or(RunStatus::Failed)
    }
}

const RUN_COLUMNS: &str = "id, event_id, status, priority, reasoner, iteration, max_iterations, attempts,
    max_attempts, next_attempt_at, last_error, lease_owner, lease_expires_at, lease_epoch, fingerprint,
    category, confidence, result, failure_reason, tokens_in, tokens_out, cost_usd, created_at, updated_at,
    started_at, finished_at, traceparent";

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

/// Creates a queued run for `event_id` and pushes its first step task
/// (inside `tx`, or into `after` with the Redis broker), recording the
/// current span's trace context on the run.
pub async fn create_in_tx(
    tx: &mut Transaction<'_, Postgres>,
    after: &mut AfterCommit,
    event_id: Uuid,
    limits: RunLimits,
) -> anyhow::Result<Uuid> {
    let run_id = Uuid::now_v7();
    sqlx::query(
        "INSERT INTO analysis_runs (id, event_id, priority, max_iterations, max_attempts, traceparent)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(run_id)
    .bind(event_id)
    .bind(limits.priority)
    .bind(limits.max_iterations)
    .bind(limits.max_attempts)
    // The caller's span (ingest) becomes the root of the run's trace.
    .bind(crate::telemetry::current_traceparent())
    .execute(&mut **tx)
    .await?;
    let first = StepTask {
        run_id,
        iteration: 1,
        attempt: 0,
    };
    queue::push_step(tx, after, &first, limits.priority, None).await?;
    Ok(run_id)
}

/// Reads one run.
pub async fn get(pool: &PgPool, run_id: Uuid) -> sqlx::Result<Option<RunRow>> {
    sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {RUN_COLUMNS} FROM analysis_runs WHERE id = $1"
    )))
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

/// queued | retry_wait -> running: takes the lease for exactly the task's
/// iteration and attempt, bumping the epoch, and reads the run's event and
/// journal in the same round trip. `None` means the task is stale (already
/// executed, superseded by a retry, or the run is held or finished).
pub async fn claim(
    pool: &PgPool,
    task: &StepTask,
    owner: &str,
    ttl: Duration,
) -> sqlx::Result<Option<Claim>> {
    let row: Option<ClaimRow> = sqlx::query_as(AssertSqlSafe(format!(
        "WITH c AS (
             UPDATE analysis_runs
             SET status = 'running', lease_owner = $4, lease_epoch = lease_epoch + 1,
                 lease_expires_at = now() + make_interval(secs => $5),
                 started_at = coalesce(started_at, now()), updated_at = now()
             WHERE id = $1 AND iteration = $2 - 1 AND attempts = $3
               AND status IN ('queued', 'retry_wait')
             RETURNING {RUN_COLUMNS})
         SELECT c.*,
             (SELECT to_jsonb(e) FROM (SELECT {EVENT_COLUMNS} FROM failure_events
                                       WHERE id = c.event_id) e) AS event,
             (SELECT coalesce(jsonb_agg(to_jsonb(s) ORDER BY s.iteration), '[]')
              FROM (SELECT {STEP_COLUMNS} FROM run_steps WHERE run_id = c.id) s) AS journal
         FROM c"
    )))
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

/// Extends a held lease by `ttl`; false when the lease was lost.
pub async fn renew_lease(pool: &PgPool, lease: &Lease, ttl: Duration) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE analysis_runs SET lease_expires_at = now() + make_interval(secs => $4)
         WHERE id = $1 AND lease_owner = $2 AND lease_epoch = $3 AND status = 'running'",
    )
    .bind(lease.run_id)
    .bind(&lease.owner)
    .bind(lease.epoch)
    .bind(ttl.as_secs_f64())
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// How a committed iteration leaves the run.
#[derive(Debug, Clone)]
pub enum Next {
    /// Another iteration follows: push its step task.
    Continue,
    /// The run ends in `status` with this result.
    Finish(Finish),
}

#[derive(Debug, Clone)]
pub struct Finish {
    pub status: RunStatus,
    pub result: Value,
    pub category: String,
    pub confidence: f32,
    /// Set when the run goes to the review queue.
    pub review_reason: Option<String>,
}

/// The journal row of one executed iteration.
#[derive(Debug, Clone)]
pub struct Checkpoint<'a> {
    pub record: &'a StepRecord,
    pub attempt: i32,
    pub worker_id: &'a str,
    pub tool_ms: i32,
    pub step_ms: i32,
    /// Set by the iteration that computed the failure's fingerprint.
    pub fingerprint: Option<String>,
    /// The normalised failure text, set with the fingerprint (the error
    /// library's text tier, [`super::similar`]).
    pub failure_text: Option<String>,
    /// The audit of the iteration's tool call, if a tool ran.
    pub tool_audit: Option<ToolAudit>,
}

/// How the checkpoint statement audits the iteration's tool call in
/// `tool_invocations`. Either way the audit is written even when the
/// checkpoint is fenced: the tool did run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolAudit {
    /// The row written before the call ([`super::steps::tool_started`]) is
    /// closed (`finished_at`, `ok`).
    Opened { id: i64, ok: bool },
    /// A local tool's call (it reads only Faultline's database) is written
    /// whole: the tool is the journal row's action, started `tool_ms`
    /// before the checkpoint, finished at it.
    Local { ok: bool },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitOutcome {
    /// Committed. `kept`: the lease of the next iteration, when the commit
    /// kept the run for its worker ([`commit_step`] with `keep`).
    Committed { kept: Option<Lease> },
    /// The lease was lost: nothing was written.
    Fenced,
}

/// The parts of the checkpoint statement ([`checkpoint_sql`]): the run
/// update `r` and the journal row `s` are always there.
const CHECKPOINT_RUN: &str = "
WITH r AS (
    UPDATE analysis_runs
    SET iteration = iteration + 1, attempts = 0, last_error = NULL, status = $5,
        lease_owner = CASE WHEN $38 THEN lease_owner END,
        lease_expires_at = CASE WHEN $38 THEN now() + make_interval(secs => $39) END,
        lease_epoch = lease_epoch + CASE WHEN $38 THEN 1 ELSE 0 END, next_attempt_at = now(),
        fingerprint = coalesce($6, fingerprint),
        result = coalesce($7, result), category = coalesce($8, category),
        confidence = coalesce($9, confidence),
        tokens_in = tokens_in + $11, tokens_out = tokens_out + $12, cost_usd = cost_usd + $13,
        finished_at = CASE WHEN $10 THEN now() END, updated_at = now()
    WHERE id = $1 AND lease_owner = $2 AND lease_epoch = $3 AND iteration = $4 - 1
      AND status = 'running'
    RETURNING id, priority, status, reprocess_batch, lease_epoch
), s AS (
    INSERT INTO run_steps (run_id, iteration, thought, action, action_input, observation, is_final,
                           attempt, lease_epoch, worker_id, tool_ms, step_ms,
                           reasoner, call_id, llm, tokens_in, tokens_out, cost_usd)
    SELECT r.id, $4, $15, $16, $17, $18, $19, $20, $3, $21, $22, $23, $24, $25, $26,
           $11::int, $12::int, $13
    FROM r
)";
const CHECKPOINT_FAILURE_TEXT: &str = ",
t AS (
    INSERT INTO run_failure_texts (run_id, failure_text)
    SELECT r.id, $14 FROM r WHERE $14::text IS NOT NULL
    ON CONFLICT (run_id) DO UPDATE SET failure_text = excluded.failure_text
)";
const CHECKPOINT_AUDIT_OPENED: &str = ",
a AS (
    UPDATE tool_invocations SET finished_at = now(), ok = $28 WHERE id = $27
)";
const CHECKPOINT_AUDIT_LOCAL: &str = ",
al AS (
    INSERT INTO tool_invocations (run_id, iteration, tool, worker_id, started_at, finished_at, ok)
    SELECT $1, $4, $16, $21, now() - make_interval(secs => $22 / 1000.0), now(), $28
    WHERE $40
)";
const CHECKPOINT_PUSH: &str = ",
j AS (
    INSERT INTO apalis.jobs (id, job_type, job, max_attempts, priority, run_at)
    SELECT $30, $31, $32, $33, greatest(r.priority, 0), clock_timestamp() FROM r WHERE $29
)";
const CHECKPOINT_REVIEW: &str = ",
rv AS (
    INSERT INTO review_items (id, run_id, reason, category, confidence)
    SELECT $34, r.id, $35, $8, $9 FROM r WHERE $35::text IS NOT NULL
    ON CONFLICT (run_id) DO NOTHING
)";
const CHECKPOINT_OUTBOX: &str = ",
ob AS (
    INSERT INTO notification_outbox (id, run_id, kind)
    SELECT $36, r.id, r.status FROM r
    WHERE $10 AND r.status IN ('completed', 'needs_review') AND r.reprocess_batch IS NULL
    ON CONFLICT (run_id) DO NOTHING
)";
const CHECKPOINT_SELECT: &str = "
SELECT priority, lease_epoch, NULL::text FROM r";
const CHECKPOINT_SELECT_FINISHED: &str = "
SELECT priority, lease_epoch, pg_notify($37, r.id::text)::text FROM r";

/// Which optional parts a checkpoint statement has (bits of [`checkpoint_sql`]).
const PART_FAILURE_TEXT: usize = 1;
const PART_AUDIT_OPENED: usize = 2;
const PART_AUDIT_LOCAL: usize = 4;
const PART_PUSH: usize = 8;
const PART_FINISH: usize = 16;
const PART_REVIEW: usize = 32;

/// The checkpoint of one iteration as one statement, fenced by the lease:
/// the run update, the journal row, the failure text (once per run), the
/// tool's audit ([`ToolAudit`]), and the way on:
///
/// - **kept** (`$38`): the committing worker continues the run at once, so
///   the same update takes the lease of the next iteration (epoch + 1, new
///   expiry) and nothing is queued: no queue row to write, fetch, ack and
///   delete, no claim statement. If the worker dies before its next commit,
///   the lease expires and the reconciler queues the step, as for a crash
///   mid-step.
/// - **queued**: with the Postgres broker the next step task (its
///   `apalis.jobs` row, see [`queue::step_job`]); with Redis it is pushed
///   after the commit.
/// - **finished**: its review item (when it goes to review), its outbox row
///   (live runs) and the notification on [`FINISHED_CHANNEL`].
///
/// A fenced run updates nothing, so the inserts that select from `r` insert
/// nothing; a second journal row for the iteration fails the whole
/// statement (I2). The audit is written even when fenced: the tool did run.
///
/// A queued task is due from `clock_timestamp()`, a moment after this
/// transaction's `now()`, so apalis's insert trigger sends no NOTIFY for it.
/// That is on purpose: Postgres serialises the commits of all transactions
/// that notified (a global lock held through the WAL flush), which capped a
/// worker fleet at ~300 steps/s. The committing worker wakes its own
/// consumer, which has a free slot (see the worker's runtime); other
/// workers find the task by polling. First steps (ingest) still notify.
///
/// The statement is built from parts ([`PART_PUSH`], …): the others only
/// when the iteration has something for them, so a statement never opens
/// and locks a table (and its indexes) it writes nothing to. Every variant
/// takes the same parameters ($1..$40) and each part keeps its own guard,
/// so a variant differs from the full statement only by what it leaves out.
/// Each variant is one prepared statement per connection.
fn checkpoint_sql(parts: usize) -> &'static str {
    static VARIANTS: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
        (0..64)
            .map(|parts| {
                let mut sql = String::from(CHECKPOINT_RUN);
                for (bit, part) in [
                    (PART_FAILURE_TEXT, CHECKPOINT_FAILURE_TEXT),
                    (PART_AUDIT_OPENED, CHECKPOINT_AUDIT_OPENED),
                    (PART_AUDIT_LOCAL, CHECKPOINT_AUDIT_LOCAL),
                    (PART_PUSH, CHECKPOINT_PUSH),
                    (PART_REVIEW, CHECKPOINT_REVIEW),
                    (PART_FINISH, CHECKPOINT_OUTBOX),
                ] {
                    if parts & bit != 0 {
                        sql.push_str(part);
                    }
                }
                sql.push_str(if parts & PART_FINISH != 0 {
                    CHECKPOINT_SELECT_FINISHED
                } else {
                    CHECKPOINT_SELECT
                });
                sql
            })
            .collect()
    });
    &VARIANTS[parts & 63]
}

/// running -> running (next iteration's lease kept, when `keep` gives its
/// TTL), queued (next step pushed) or a terminal state, together with the
/// iteration's checkpoint, any review item and the run's notification
/// (outbox), atomically and fenced by the lease epoch: one statement,
/// [`checkpoint_sql`]. `keep` only applies to [`Next::Continue`].
pub async fn commit_step(
    pool: &PgPool,
    lease: &Lease,
    cp: &Checkpoint<'_>,
    next: &Next,
    keep: Option<Duration>,
) -> sqlx::Result<CommitOutcome> {
    let next_step = StepTask {
        run_id: lease.run_id,
        iteration: cp.record.iteration + 1,
        attempt: 0,
    };
    let keep = keep.filter(|_| matches!(next, Next::Continue));
    let push = matches!(next, Next::Continue) && keep.is_none();
    let push_in_sql = push && matches!(queue::broker(), queue::Broker::Postgres);
    // Only a queued next step needs its queue row (a fresh id and its bytes).
    let job = push_in_sql.then(|| queue::step_job(&next_step));
    let (status, result, category, confidence, review_reason) = match next {
        Next::Continue if keep.is_some() => (RunStatus::Running, None, None, None, None),
        Next::Continue => (RunStatus::Queued, None, None, None, None),
        Next::Finish(f) => (
            f.status,
            Some(&f.result),
            Some(f.category.as_str()),
            Some(f.confidence),
            f.review_reason.as_deref(),
        ),
    };
    let r = cp.record;
    let parts = [
        (cp.failure_text.is_some(), PART_FAILURE_TEXT),
        (
            matches!(cp.tool_audit, Some(ToolAudit::Opened { .. })),
            PART_AUDIT_OPENED,
        ),
        (
            matches!(cp.tool_audit, Some(ToolAudit::Local { .. })),
            PART_AUDIT_LOCAL,
        ),
        (push_in_sql, PART_PUSH),
        (status.is_terminal(), PART_FINISH),
        (review_reason.is_some(), PART_REVIEW),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .fold(0, |parts, (_, bit)| parts | bit);
    let committed: Option<(i32, i64, Option<String>)> = sqlx::query_as(checkpoint_sql(parts))
        .bind(lease.run_id)
        .bind(&lease.owner)
        .bind(lease.epoch)
        .bind(r.iteration)
        .bind(status.as_str())
        .bind(&cp.fingerprint)
        .bind(result)
        .bind(category)
        .bind(confidence)
        .bind(status.is_terminal())
        .bind(i64::from(r.tokens_in))
        .bind(i64::from(r.tokens_out))
        .bind(r.cost_usd)
        .bind(&cp.failure_text)
        .bind(&r.thought)
        .bind(&r.action)
        .bind(&r.action_input)
        .bind(&r.observation)
        .bind(r.is_final)
        .bind(cp.attempt)
        .bind(cp.worker_id)
        .bind(cp.tool_ms)
        .bind(cp.step_ms)
        .bind(if r.reasoner.is_empty() {
            "heuristic"
        } else {
            r.reasoner.as_str()
        })
        .bind(&r.call_id)
        .bind(&r.llm)
        .bind(match cp.tool_audit {
            Some(ToolAudit::Opened { id, .. }) => Some(id),
            _ => None,
        })
        .bind(match cp.tool_audit {
            Some(ToolAudit::Opened { ok, .. } | ToolAudit::Local { ok, .. }) => ok,
            None => false,
        })
        .bind(push_in_sql)
        .bind(job.as_ref().map(|(id, _)| id))
        .bind(queue::STEP_QUEUE)
        .bind(job.as_ref().map(|(_, bytes)| bytes))
        .bind(queue::STEP_TASK_MAX_ATTEMPTS)
        .bind(Uuid::now_v7())
        .bind(review_reason)
        .bind(Uuid::now_v7())
        .bind(FINISHED_CHANNEL)
        .bind(keep.is_some())
        .bind(keep.unwrap_or_default().as_secs_f64())
        .bind(matches!(cp.tool_audit, Some(ToolAudit::Local { .. })))
        .fetch_optional(pool)
        .await?;
    let Some((priority, epoch, _)) = committed else {
        return Ok(CommitOutcome::Fenced);
    };
    if push {
        let mut after = AfterCommit::default();
        after.push(Pending {
            step: next_step,
            priority,
            run_at: None,
        });
        after.flush().await;
    }
    Ok(CommitOutcome::Committed {
        kept: keep.map(|_| Lease {
            run_id: lease.run_id,
            owner: lease.owner.clone(),
            epoch,
        }),
    })
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
/// exponential backoff and jitter computed from the stored attempt count, or
/// dead-letters the run. Placeholders: `{e}` error, `{t}` transient,
/// `{b}` base seconds, `{c}` cap seconds.
const FAIL_ATTEMPT_SET: &str = "
    attempts = r.attempts + 1, last_error = {e}, lease_owner = NULL, lease_expires_at = NULL,
    lease_epoch = r.lease_epoch + 1, updated_at = now(),
    status = CASE WHEN {t} AND r.attempts + 1 < r.max_attempts THEN 'retry_wait' ELSE 'failed' END,
    next_attempt_at = CASE WHEN {t} AND r.attempts + 1 < r.max_attempts
        THEN now() + make_interval(secs => least({c}, {b} * power(2, r.attempts)) * (1 + 0.25 * random()))
        ELSE now() END,
    failure_reason = CASE WHEN {t} AND r.attempts + 1 < r.max_attempts THEN NULL
        ELSE format('iteration %s failed after %s attempt(s): %s', r.iteration + 1, r.attempts + 1, {e}) END,
    finished_at = CASE WHEN {t} AND r.attempts + 1 < r.max_attempts THEN NULL ELSE now() END";

const FAIL_RETURNING: &str =
    "RETURNING r.id, r.status, r.iteration, r.attempts, r.next_attempt_at, r.priority";

/// [`FAIL_ATTEMPT_SET`] with its four parameters numbered from `$first`.
fn fail_attempt_set(first: usize) -> String {
    FAIL_ATTEMPT_SET
        .replace("{e}", &format!("${first}"))
        .replace("{t}", &format!("${}", first + 1))
        .replace("{b}", &format!("${}", first + 2))
        .replace("{c}", &format!("${}", first + 3))
}

#[derive(sqlx::FromRow)]
struct Failed {
    id: Uuid,
    status: String,
    iteration: i32,
    attempts: i32,
    next_attempt_at: DateTime<Utc>,
    priority: i32,
}

/// running -> retry_wait | failed for the lease holder's current attempt.
pub async fn record_failure(
    pool: &PgPool,
    lease: &Lease,
    error: &str,
    transient: bool,
    backoff: Backoff,
) -> sqlx::Result<FailureOutcome> {
    let mut tx = pool.begin().await?;
    let sql = format!(
        "UPDATE analysis_runs r SET {}
         WHERE r.id = $1 AND r.lease_owner = $2 AND r.lease_epoch = $3 AND r.status = 'running'
         {FAIL_RETURNING}",
        fail_attempt_set(4)
    );
    let failed: Option<Failed> = sqlx::query_as(AssertSqlSafe(sql))
        .bind(lease.run_id)
        .bind(&lease.owner)
        .bind(lease.epoch)
        .bind(error)
        .bind(transient)
        .bind(backoff.base.as_secs_f64())
        .bind(backoff.max.as_secs_f64())
        .fetch_optional(&mut *tx)
        .await?;
    let Some(failed) = failed else {
        tx.rollback().await?;
        return Ok(FailureOutcome::Fenced);
    };
    let mut after = AfterCommit::default();
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
    after: &mut AfterCommit,
    f: &Failed,
    error: &str,
    transient: bool,
    worker: Option<&str>,
) -> sqlx::Result<FailureOutcome> {
    let retrying = f.status == RunStatus::RetryWait.as_str();
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
        queue::push_step(tx, after, &step, f.priority, Some(f.next_attempt_at))
            .await
            .map_err(queue_error)?;
        Ok(FailureOutcome::Retrying {
            attempt: f.attempts,
            next_attempt_at: f.next_attempt_at,
        })
    } else {
        let reason = format!("failed: {error}");
        review::insert_in_tx(tx, f.id, &reason, None, None).await?;
        notify_finished(tx, f.id).await?;
        Ok(FailureOutcome::DeadLettered {
            attempt: f.attempts,
        })
    }
}

/// running -> queued without counting an attempt (graceful shutdown): the
/// step task is pushed again and the epoch bumped, so our own late commit
/// would be fenced.
pub async fn release(pool: &PgPool, lease: &Lease) -> sqlx::Result<bool> {
    let mut tx = pool.begin().await?;
    let row: Option<(i32, i32, i32)> = sqlx::query_as(
        "UPDATE analysis_runs
         SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL,
             lease_epoch = lease_epoch + 1, updated_at = now()
         WHERE id = $1 AND lease_owner = $2 AND lease_epoch = $3 AND status = 'running'
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
    let mut after = AfterCommit::redelivery();
    queue::push_step(&mut tx, &mut after, &step, priority, None)
        .await
        .map_err(queue_error)?;
    tx.commit().await?;
    after.flush().await;
    Ok(true)
}

/// running (lease expired) -> retry_wait | failed: a worker that stopped
/// renewing its lease is presumed dead; its attempt counts, and the retry is
/// queued with the usual backoff. Returns how many runs were recovered.
pub async fn reconcile_expired(pool: &PgPool, backoff: Backoff, limit: i64) -> sqlx::Result<usize> {
    let mut tx = pool.begin().await?;
    let sql = format!(
        "WITH expired AS (
             SELECT id FROM analysis_runs
             WHERE status = 'running' AND lease_expires_at < now()
             ORDER BY lease_expires_at LIMIT $1
             FOR UPDATE SKIP LOCKED)
         UPDATE analysis_runs r SET {}
         FROM expired WHERE r.id = expired.id
         {FAIL_RETURNING}",
        fail_attempt_set(2)
    );
    let error = "lease expired: the worker stopped renewing it (crashed or hung)";
    let rows: Vec<Failed> = sqlx::query_as(AssertSqlSafe(sql))
        .bind(limit)
        .bind(error)
        .bind(true)
        .bind(backoff.base.as_secs_f64())
        .bind(backoff.max.as_secs_f64())
        .fetch_all(&mut *tx)
        .await?;
    let mut after = AfterCommit::default();
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

//! The step queue. Two brokers carry step tasks; Postgres stays the truth
//! for runs and the journal with either one (docs/architecture.md, I6):
//!
//! - **postgres** (default, apalis-postgres): the next step task is pushed
//!   inside the transaction that commits the previous checkpoint, so "step
//!   done" and "next step enqueued" are one atomic fact.
//! - **redis** (apalis-redis, [`redis`]): the push happens right after the
//!   commit ([`AfterCommit::flush`]). The gap is not atomic; the reconciler
//!   ([`redis::RedisBroker::ensure_queued`]) pushes again any run whose next
//!   step is neither waiting in Redis nor running, and duplicates are
//!   harmless: the claim only accepts the task of the run's next
//!   (iteration, attempt), and every write is fenced by the lease epoch.
//!
//! Either way, a live run's next step usually needs no task at all: its
//! checkpoint keeps the lease for the committing worker, which goes on at
//! once ([`crate::storage::runs::commit_step`] with `keep`); tasks carry new
//! runs, retries, released runs and bulk steps.
//!
//! A process connects its broker once at start ([`connect`]) and hands the
//! [`Broker`] to every storage function that queues a step (`ingest`,
//! `commit_step`, `record_failure`, `release`, `reconcile_expired`): which
//! broker a statement writes for is visible at its call site, and a test
//! can run both brokers in one process.

pub mod redis;

use apalis_core::task::builder::TaskBuilder;
use apalis_postgres::PgTask;
use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::{
    config::{QueueBackend, Settings},
    types::StepTask,
};

/// The apalis queue (job_type) every step task goes to (Postgres broker).
pub const STEP_QUEUE: &str = "faultline-steps";

/// Priority of live analyses; nightly reprocessing uses [`PRIORITY_BULK`].
pub const PRIORITY_LIVE: i32 = 10;
/// Priority of bulk reprocessing: fetched only when no live step is ready
/// (Postgres), or carried on its own queue (Redis).
pub const PRIORITY_BULK: i32 = 1;
/// Added to a run's priority for the step that resumes it after a take-over
/// from a dead worker: it goes ahead of the waiting steps of its class (the
/// Postgres broker fetches by priority; the Redis broker puts it at the head
/// of its queue), so a resume does not wait for the backlog.
pub const RESUME_BOOST: i32 = 1;

/// Whether a step of `priority` resumes a taken-over run ([`RESUME_BOOST`]).
pub fn is_resume(priority: i32) -> bool {
    priority == PRIORITY_LIVE + RESUME_BOOST || priority == PRIORITY_BULK + RESUME_BOOST
}

/// Waiting step tasks of one priority (either broker): `ready` are due now, `scheduled`
/// wait for their `run_at` (retries in backoff).
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct QueueDepth {
    pub priority: i32,
    pub ready: i64,
    pub scheduled: i64,
}

/// A step task could not be queued.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("postgres queue: {0}")]
    Postgres(#[from] apalis_postgres::Error),
    #[error("redis queue: {0}")]
    Redis(#[from] apalis_redis::Error),
    #[error("redis: {0}")]
    RedisConnection(#[from] apalis_redis::RedisError),
}

/// Where step tasks go: a handle made once by [`connect`] and passed in.
#[derive(Debug, Clone)]
pub enum Broker {
    Postgres,
    /// Boxed: a connection manager and two queue configurations.
    Redis(Box<redis::RedisBroker>),
}

/// Connects the broker named by `settings`.
pub async fn connect(settings: &Settings) -> Result<Broker, QueueError> {
    Ok(match settings.queue_backend {
        QueueBackend::Postgres => Broker::Postgres,
        QueueBackend::Redis => Broker::Redis(Box::new(
            redis::RedisBroker::connect(
                crate::config::ExposeSecret::expose_secret(&settings.redis_url),
                &settings.redis_namespace,
            )
            .await?,
        )),
    })
}

/// A step task to push, with its priority and earliest start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub step: StepTask,
    pub priority: i32,
    pub run_at: Option<DateTime<Utc>>,
}

/// Step tasks decided inside a transaction that a broker outside Postgres
/// receives only once that transaction committed (empty with Postgres).
#[derive(Debug)]
#[must_use = "call flush() after the transaction commits"]
pub struct AfterCommit<'b> {
    broker: &'b Broker,
    steps: Vec<Pending>,
    redeliver: bool,
}

impl<'b> AfterCommit<'b> {
    /// Step tasks for `broker`, pushed once the transaction committed.
    pub fn new(broker: &'b Broker) -> Self {
        Self {
            broker,
            steps: Vec::new(),
            redeliver: false,
        }
    }

    /// For a step delivered before (released on shutdown): its idempotency
    /// key is known, so it is pushed unless it still waits in the queue.
    pub fn redelivery(broker: &'b Broker) -> Self {
        Self {
            redeliver: true,
            ..Self::new(broker)
        }
    }

    /// The step tasks go into the caller's transaction (Postgres broker).
    pub fn in_transaction(&self) -> bool {
        matches!(self.broker, Broker::Postgres)
    }

    /// Collects a step task for a broker outside Postgres (a no-op with
    /// Postgres, where the caller's transaction inserted it).
    pub fn push(&mut self, pending: Pending) {
        if !self.in_transaction() {
            self.steps.push(pending);
        }
    }

    /// Pushes the collected step tasks. A failure is logged, not returned:
    /// the checkpoint is committed, and the reconciler re-enqueues the run.
    pub async fn flush(self) {
        let Broker::Redis(redis) = self.broker else {
            return;
        };
        if self.steps.is_empty() {
            return;
        }
        let pushed = if self.redeliver {
            redis.ensure_queued(&self.steps).await.map(drop)
        } else {
            redis.push(&self.steps).await
        };
        if let Err(e) = pushed {
            tracing::warn!(error = %e, tasks = self.steps.len(),
                "pushing step tasks to Redis failed; the reconciler will re-enqueue them");
        }
    }
}

/// How often apalis itself hands out one step task (a handler error, i.e.
/// the database was unreachable even for the failure record). Retries of a
/// failed step are Faultline's, scheduled in `analysis_runs`.
pub const STEP_TASK_MAX_ATTEMPTS: i32 = 3;

/// The `apalis.jobs` row of a step task, for the checkpoint statement that
/// inserts it itself ([`crate::storage::runs::commit_step`]): the task id
/// (a ULID, as apalis-postgres writes and parses it) and the task's bytes
/// (JSON, apalis's codec). Every other column takes its default, as in
/// apalis's own insert, except `priority` and `max_attempts`.
pub fn step_job(step: &StepTask) -> (String, Vec<u8>) {
    (ulid::Ulid::generate().to_string(), step_args(step))
}

/// A step task's bytes on either broker: JSON, the codec both apalis
/// backends decode with.
fn step_args(step: &StepTask) -> Vec<u8> {
    serde_json::to_vec(step).expect("a StepTask always serialises")
}

/// Builds the apalis task for `step`, to run no earlier than `run_at`.
pub fn step_task(step: &StepTask, priority: i32, run_at: Option<DateTime<Utc>>) -> PgTask {
    let mut builder = TaskBuilder::new(step_args(step))
        .priority(priority.max(0) as usize)
        .max_attempts(STEP_TASK_MAX_ATTEMPTS as usize);
    if let Some(at) = run_at {
        // apalis stores run_at in whole seconds: round up so a retry never
        // starts before the backoff recorded in analysis_runs has elapsed.
        let secs = at.timestamp() + i64::from(at.timestamp_subsec_nanos() > 0);
        builder = builder.run_at_timestamp(secs.max(0) as u64);
    }
    builder.build()
}

/// Queues the next step task: inside the caller's transaction (Postgres), or
/// into `after` for a push once it committed (Redis).
pub async fn push_step(
    conn: &mut PgConnection,
    after: &mut AfterCommit<'_>,
    step: &StepTask,
    priority: i32,
    run_at: Option<DateTime<Utc>>,
) -> Result<(), QueueError> {
    match after.broker {
        Broker::Postgres => {
            apalis_postgres::queries::push_tasks(
                conn,
                STEP_QUEUE,
                vec![step_task(step, priority, run_at)],
            )
            .await?
        }
        Broker::Redis(_) => after.steps.push(Pending {
            step: *step,
            priority,
            run_at,
        }),
    }
    Ok(())
}

/// Pushes many first-step tasks at once inside the caller's transaction
/// (bulk reprocessing).
pub async fn push_steps(
    conn: &mut PgConnection,
    steps: &[StepTask],
    priority: i32,
) -> Result<(), apalis_postgres::Error> {
    if steps.is_empty() {
        return Ok(());
    }
    let tasks = steps.iter().map(|s| step_task(s, priority, None)).collect();
    apalis_postgres::queries::push_tasks(conn, STEP_QUEUE, tasks).await
}

//! The step queue (apalis-postgres). A step task is pushed inside the same
//! transaction that commits the previous checkpoint, so "step done" and
//! "next step enqueued" are one atomic fact.

use apalis_core::task::builder::TaskBuilder;
use apalis_postgres::PgTask;
use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::types::StepTask;

/// The apalis queue (job_type) every step task goes to.
pub const STEP_QUEUE: &str = "faultline-steps";

/// Priority of live analyses; nightly reprocessing uses [`PRIORITY_BULK`].
pub const PRIORITY_LIVE: i32 = 10;
/// Priority of bulk reprocessing: fetched only when no live step is ready.
pub const PRIORITY_BULK: i32 = 1;

/// Builds the queue task for `step`, to run no earlier than `run_at`.
pub fn step_task(step: &StepTask, priority: i32, run_at: Option<DateTime<Utc>>) -> PgTask {
    let args = serde_json::to_vec(step).expect("a StepTask always serialises");
    let mut builder = TaskBuilder::new(args)
        .priority(priority.max(0) as usize)
        .max_attempts(3);
    if let Some(at) = run_at {
        // apalis stores run_at in whole seconds: round up so a retry never
        // starts before the backoff recorded in analysis_runs has elapsed.
        let secs = at.timestamp() + i64::from(at.timestamp_subsec_nanos() > 0);
        builder = builder.run_at_timestamp(secs.max(0) as u64);
    }
    builder.build()
}

/// Pushes the next step task inside the caller's transaction.
pub async fn push_step(
    conn: &mut PgConnection,
    step: &StepTask,
    priority: i32,
    run_at: Option<DateTime<Utc>>,
) -> Result<(), apalis_postgres::Error> {
    apalis_postgres::queries::push_tasks(conn, STEP_QUEUE, vec![step_task(step, priority, run_at)])
        .await
}

//! All SQL of Faultline, one module per table family. Each function's doc
//! names the state change it makes.
//!
//! - [`events`]: `failure_events` + `event_log_chunks` (ingest, log streaming).
//! - [`runs`]: `analysis_runs` lifecycle: claim, lease, commit, retry, reconcile.
//! - [`steps`]: the `run_steps` journal, `run_attempts`, `tool_invocations`.
//! - [`review`](crate::storage::review): `review_items`: list, claim, audit.
//! - [`resolution`]: resolve / dismiss review items; the error library's human tier.
//! - [`knowledge`]: `knowledge_base` and the error library look-ups.
//! - [`similar`]: the error library's tiers (fingerprint, trigram, full-text).
//! - [`history`]: outcomes per job and test (failures and passes), flakiness.
//! - [`outbox`]: `notification_outbox`: notifications written with the final
//!   checkpoint, delivered with retries.
//! - [`reprocess`]: bulk re-analysis batches (idempotent, resumable).
//! - [`tasks`]: housekeeping of the apalis step queue.
//! - [`log_fetches`]: logs a worker fetched from GitHub / Jenkins (once per event).
//! - [`baselines`]: the last green log of a failure's job, fetched once per
//!   event (or why there is none), for the excerpt's baseline.
//! - [`ratelimit`]: the LLM and outbound-API rate limits shared by all workers.

pub mod baselines;
pub mod events;
pub mod history;
pub mod knowledge;
pub mod log_fetches;
pub mod outbox;
pub mod ratelimit;
pub mod reprocess;
pub mod resolution;
pub mod review;
pub mod runs;
pub mod similar;
pub mod steps;
pub mod tasks;
pub mod tokens;

/// True for database errors worth retrying: the connection or pool went
/// away, or Postgres asked us to retry (serialization, deadlock, shutdown).
pub fn is_transient(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::Protocol(_)
        | sqlx::Error::Tls(_) => true,
        sqlx::Error::Database(db) => matches!(
            db.code().as_deref(),
            // serialization_failure, deadlock_detected, admin/crash shutdown, cannot_connect_now, too_many_connections
            Some("40001" | "40P01" | "57P01" | "57P02" | "57P03" | "53300")
        ),
        _ => false,
    }
}

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
//! - [`pr_comments`]: one comment per pull request, edited in place, with
//!   its own retry schedule.
//! - [`reprocess`]: bulk re-analysis batches (idempotent, resumable).
//! - [`tasks`]: housekeeping of the apalis step queue.
//! - [`log_fetches`]: logs a worker fetched from GitHub / Jenkins (once per event).
//! - [`baselines`]: the last green log of a failure's job, fetched once per
//!   event (or why there is none), for the excerpt's baseline.
//! - [`columns`]: how the enums stored as text (statuses, roles,
//!   categories) are bound and read back.
//! - [`ratelimit`]: the LLM and outbound-API rate limits shared by all workers.
//! - [`console`]: `console_sessions`: browsers signed in to the review console.
//! - [`prompts`]: `prompt_versions`: the prompt registry (versions, the
//!   active one, trials at a ratio).
//! - [`shadow`]: shadow runs and `shadow_comparisons` (a live run and its
//!   shadow, compared once both are terminal).
//! - [`eval`]: `faultline eval`'s scratch databases and what it reads of its runs.
//! - [`sessions`]: `worker_sessions`: a worker's liveness, tied to its
//!   database session (an advisory lock Postgres drops when it dies).

pub mod baselines;
pub mod columns;
pub mod console;
pub mod eval;
pub mod events;
pub mod feedback;
pub mod history;
pub mod ingest;
pub mod knowledge;
pub mod log_fetches;
pub mod outbox;
pub mod pr_comments;
pub mod prompts;
pub mod ratelimit;
pub mod reprocess;
pub mod reruns;
pub mod resolution;
pub mod review;
pub mod runs;
pub mod sessions;
pub mod shadow;
pub mod similar;
pub mod steps;
pub mod tasks;
pub mod tokens;

pub use ingest::{Ingested, ingest};

/// A statement of the storage layer built at run time (from column lists,
/// shared clauses or a variant's parts), for the test that prepares every
/// statement against the migrated schema (`tests/tests/statements.rs`).
/// That test reads the literal statements from the source files and
/// checks that every call site that does not pass a literal passes one of
/// these, by name.
#[doc(hidden)]
pub struct Statement {
    /// `module::NAME` (the file and the static or function the call site uses).
    pub name: String,
    pub sql: &'static str,
    /// The types the statement is bound with, when Postgres cannot infer
    /// them all (a checkpoint variant leaves some parameters out).
    pub param_types: Option<Vec<sqlx::postgres::PgTypeInfo>>,
}

/// A comma-separated column list with each column prefixed by `alias.`
/// (`"id, status"`, `"r"` → `"r.id, r.status"`), for a statement that
/// joins the table.
pub(crate) fn qualified(columns: &str, alias: &str) -> String {
    columns
        .split(',')
        .map(|c| format!("{alias}.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every statement built at run time, including each variant of the
/// checkpoint statement; see [`Statement`].
#[doc(hidden)]
pub fn built_statements() -> Vec<Statement> {
    let named: [(&str, &'static str); 45] = [
        ("events::GET", &events::GET),
        ("events::GET_WITH_PAYLOAD", &events::GET_WITH_PAYLOAD),
        ("history::HISTORY", &history::HISTORY),
        ("history::RECENT", &history::RECENT),
        ("history::SPREAD", &history::SPREAD),
        ("pr_comments::CLAIM", &pr_comments::CLAIM),
        ("pr_comments::GET", &pr_comments::GET),
        ("pr_comments::JOBS", &pr_comments::JOBS),
        ("pr_comments::RECENT", &pr_comments::RECENT),
        ("pr_comments::ONE", &pr_comments::ONE),
        (
            "pr_comments::STALE_REACTIONS",
            &pr_comments::STALE_REACTIONS,
        ),
        ("prompts::GET", &prompts::GET),
        ("prompts::LIST", &prompts::LIST),
        ("reprocess::FIND", &reprocess::FIND),
        ("reprocess::GET", &reprocess::GET),
        ("reprocess::OPEN", &reprocess::OPEN),
        ("reprocess::REMAINING", &reprocess::REMAINING),
        ("reprocess::ENQUEUE_CHUNK", &reprocess::ENQUEUE_CHUNK),
        ("reruns::INSERT", &reruns::INSERT),
        ("reruns::GET", &reruns::GET),
        ("reruns::OF_RUNS", &reruns::OF_RUNS),
        ("review::INSERT", &review::INSERT),
        ("review::LIST", &review::LIST),
        ("review::FOR_RUN", &review::FOR_RUN),
        ("review::GET", &review::GET),
        ("review::CLAIM_NEXT", &review::CLAIM_NEXT),
        ("review::QUEUE_GROUPS", &review::QUEUE_GROUPS),
        ("review::QUEUE_MEMBERS", &review::QUEUE_MEMBERS),
        ("review::QUEUE_JOBS", &review::QUEUE_JOBS),
        ("review::GROUP_PENDING", &review::GROUP_PENDING),
        ("runs::GET", &runs::GET),
        ("runs::CLAIM", &runs::CLAIM),
        ("runs::RECORD_FAILURE", &runs::RECORD_FAILURE),
        ("runs::RECONCILE_EXPIRED", &runs::RECONCILE_EXPIRED),
        ("runs::RECONCILE_DEAD", &runs::RECONCILE_DEAD),
        ("shadow::COMPARE", &shadow::COMPARE),
        ("shadow::COMPARE_PENDING", &shadow::COMPARE_PENDING),
        ("similar::BY_FINGERPRINT", &similar::BY_FINGERPRINT),
        ("similar::BY_TRIGRAM", &similar::BY_TRIGRAM),
        ("similar::BY_FULLTEXT", &similar::BY_FULLTEXT),
        ("steps::LIST", &steps::LIST),
        ("steps::LIST_AFTER", &steps::LIST_AFTER),
        ("tokens::CREATE", &tokens::CREATE),
        ("tokens::FIND_ACTIVE", &tokens::FIND_ACTIVE),
        ("tokens::LIST", &tokens::LIST),
    ];
    named
        .into_iter()
        .map(|(name, sql)| (name.to_string(), sql))
        .chain(events::chunk_statements())
        .chain(eval::statements())
        .map(|(name, sql)| Statement {
            name,
            sql,
            param_types: None,
        })
        .chain(
            runs::checkpoint_statements()
                .into_iter()
                .map(|(name, sql, types)| Statement {
                    name,
                    sql,
                    param_types: Some(types),
                }),
        )
        .collect()
}

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

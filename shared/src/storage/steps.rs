//! The checkpoint journal (`run_steps`), the attempt history
//! (`run_attempts`) and the tool-execution audit (`tool_invocations`).

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{PgPool, Postgres, Transaction};
use uuid::Uuid;

use crate::types::StepRecord;

/// A journal row with its execution metadata.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct StepRow {
    pub iteration: i32,
    pub thought: String,
    pub action: String,
    pub action_input: Value,
    pub observation: Value,
    pub is_final: bool,
    pub attempt: i32,
    pub lease_epoch: i64,
    pub worker_id: String,
    pub tool_ms: i32,
    pub step_ms: i32,
    pub reasoner: String,
    pub call_id: Option<String>,
    pub llm: Option<Value>,
    pub tokens_in: i32,
    pub tokens_out: i32,
    pub cost_usd: f64,
    pub created_at: DateTime<Utc>,
}

impl StepRow {
    pub fn record(&self) -> StepRecord {
        StepRecord {
            iteration: self.iteration,
            thought: self.thought.clone(),
            action: self.action.clone(),
            action_input: self.action_input.clone(),
            observation: self.observation.clone(),
            is_final: self.is_final,
            reasoner: self.reasoner.clone(),
            call_id: self.call_id.clone(),
            llm: self.llm.clone(),
            tokens_in: self.tokens_in,
            tokens_out: self.tokens_out,
            cost_usd: self.cost_usd,
        }
    }
}

/// The columns of [`StepRow`].
pub(crate) const STEP_COLUMNS: &str = "iteration, thought, action, action_input, observation,
    is_final, attempt, lease_epoch, worker_id, tool_ms, step_ms, reasoner, call_id, llm, tokens_in,
    tokens_out, cost_usd, created_at";

/// [`list`]'s statement.
pub(crate) static LIST: LazyLock<String> = LazyLock::new(|| {
    format!("SELECT {STEP_COLUMNS} FROM run_steps WHERE run_id = $1 ORDER BY iteration")
});

/// Reads a run's journal in iteration order (the state a resume rebuilds from).
pub async fn list(pool: &PgPool, run_id: Uuid) -> sqlx::Result<Vec<StepRow>> {
    sqlx::query_as(LIST.as_str())
        .bind(run_id)
        .fetch_all(pool)
        .await
}

/// [`list_after`]'s statement.
pub(crate) static LIST_AFTER: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {STEP_COLUMNS} FROM run_steps WHERE run_id = $1 AND iteration > $2
         ORDER BY iteration"
    )
});

/// The journal rows of a run after iteration `after`, in order (what a
/// resumed event stream has not sent yet).
pub async fn list_after(pool: &PgPool, run_id: Uuid, after: i32) -> sqlx::Result<Vec<StepRow>> {
    sqlx::query_as(LIST_AFTER.as_str())
        .bind(run_id)
        .bind(after)
        .fetch_all(pool)
        .await
}

/// Records one failed attempt and the time chosen for the next one.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn insert_attempt_in_tx(
    tx: &mut Transaction<'_, Postgres>,
    run_id: Uuid,
    iteration: i32,
    attempt: i32,
    error: &str,
    transient: bool,
    worker: Option<&str>,
    next_attempt_at: Option<DateTime<Utc>>,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO run_attempts (run_id, iteration, attempt, error, transient, worker_id, next_attempt_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (run_id, iteration, attempt) DO NOTHING",
    )
    .bind(run_id)
    .bind(iteration)
    .bind(attempt)
    .bind(error)
    .bind(transient)
    .bind(worker)
    .bind(next_attempt_at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// One failed attempt as recorded.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize, utoipa::ToSchema)]
pub struct AttemptRow {
    pub iteration: i32,
    pub attempt: i32,
    pub error: String,
    pub transient: bool,
    pub worker_id: Option<String>,
    pub failed_at: DateTime<Utc>,
    pub next_attempt_at: Option<DateTime<Utc>>,
}

/// Reads a run's failed attempts in order.
pub async fn list_attempts(pool: &PgPool, run_id: Uuid) -> sqlx::Result<Vec<AttemptRow>> {
    sqlx::query_as(
        "SELECT iteration, attempt, error, transient, worker_id, failed_at, next_attempt_at
         FROM run_attempts WHERE run_id = $1 ORDER BY iteration, attempt",
    )
    .bind(run_id)
    .fetch_all(pool)
    .await
}

/// Notes (autocommit, before it runs) that a tool is about to execute.
pub async fn tool_started(
    pool: &PgPool,
    run_id: Uuid,
    iteration: i32,
    tool: &str,
    worker: &str,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO tool_invocations (run_id, iteration, tool, worker_id) VALUES ($1, $2, $3, $4) RETURNING id",
    )
    .bind(run_id)
    .bind(iteration)
    .bind(tool)
    .bind(worker)
    .fetch_one(pool)
    .await
}

/// Records a local tool's call that failed transiently (no checkpoint will
/// journal it): started `elapsed` ago, finished now, not ok.
pub async fn tool_failed_locally(
    pool: &PgPool,
    run_id: Uuid,
    iteration: i32,
    tool: &str,
    worker: &str,
    elapsed: std::time::Duration,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO tool_invocations (run_id, iteration, tool, worker_id, started_at, finished_at, ok)
         VALUES ($1, $2, $3, $4, now() - make_interval(secs => $5), now(), false)",
    )
    .bind(run_id)
    .bind(iteration)
    .bind(tool)
    .bind(worker)
    .bind(elapsed.as_secs_f64())
    .execute(pool)
    .await?;
    Ok(())
}

/// Notes that a tool execution finished.
pub async fn tool_finished(pool: &PgPool, id: i64, ok: bool) -> sqlx::Result<()> {
    sqlx::query("UPDATE tool_invocations SET finished_at = now(), ok = $2 WHERE id = $1")
        .bind(id)
        .bind(ok)
        .execute(pool)
        .await?;
    Ok(())
}

/// How many times each (iteration, tool) of a run was executed.
pub async fn tool_execution_counts(
    pool: &PgPool,
    run_id: Uuid,
) -> sqlx::Result<Vec<(i32, String, i64)>> {
    sqlx::query_as(
        "SELECT iteration, tool, count(*) FROM tool_invocations WHERE run_id = $1
         GROUP BY iteration, tool ORDER BY iteration",
    )
    .bind(run_id)
    .fetch_all(pool)
    .await
}

//! `reruns`: the journal of the re-runs Faultline asked a CI system for
//! (issue 32 item 5). A failure is re-run at most once: the row is keyed by
//! the failure (a GitHub workflow run, a Jenkins job at one commit) and
//! written *before* the request goes out.
//!
//! ```text
//! begin ──insert──> requested ──answer──> done | refused
//!   └─ key taken by another run ──> that run's re-run stands (never a second)
//!   └─ this run's, still requested (a deliverer died mid-request)
//!        ──> ask the CI system whether it happened, then answer or send
//! ```

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

/// One re-run request as journaled.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow, serde::Serialize)]
pub struct Rerun {
    pub key: String,
    pub run_id: Uuid,
    pub source: String,
    pub repository: Option<String>,
    pub commit_sha: Option<String>,
    pub origin: String,
    pub confidence: f32,
    /// Method and URL (no credentials).
    pub request: String,
    /// `requested`, `done`, `refused` or `unanswered` (the notifier gave
    /// up on the delivery before the CI system answered).
    pub state: String,
    pub http_status: Option<i32>,
    pub detail: Option<String>,
    /// Requests sent for it (a crash between sending and answering can make
    /// it two deliveries of one row, never two re-runs: see [`Begun::Pending`]).
    pub tries: i32,
    pub requested_at: DateTime<Utc>,
    pub answered_at: Option<DateTime<Utc>>,
}

const COLUMNS: &str = "key, run_id, source, repository, commit_sha, origin, confidence, request,
    state, http_status, detail, tries, requested_at, answered_at";

/// [`begin`]'s insert.
pub(crate) static INSERT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO reruns (key, run_id, source, repository, commit_sha, origin, confidence, request)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (key) DO NOTHING
         RETURNING {COLUMNS}"
    )
});

/// One re-run by key.
pub(crate) static GET: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {COLUMNS} FROM reruns WHERE key = $1"));

/// [`of_runs`]'s statement.
pub(crate) static OF_RUNS: LazyLock<String> = LazyLock::new(|| {
    format!("SELECT {COLUMNS} FROM reruns WHERE run_id = ANY($1) ORDER BY requested_at, key")
});

/// What a run's verdict asks to re-run.
#[derive(Debug, Clone, Default)]
pub struct NewRerun<'a> {
    pub key: &'a str,
    pub run_id: Uuid,
    pub source: &'a str,
    pub repository: Option<&'a str>,
    pub commit_sha: Option<&'a str>,
    pub origin: &'a str,
    pub confidence: f32,
    pub request: &'a str,
}

/// Where [`begin`] leaves a re-run.
#[derive(Debug, Clone, PartialEq)]
pub enum Begun {
    /// Journaled now: send the request.
    Fresh(Rerun),
    /// This run's, journaled by an earlier attempt and never answered: the
    /// request may have gone out. Ask the CI system before sending again.
    Pending(Rerun),
    /// This run's, answered: nothing to do.
    Answered(Rerun),
    /// Another run already re-ran this failure: never a second time.
    Taken(Rerun),
}

/// Journals the intent to re-run `new.key`, once.
pub async fn begin(pool: &PgPool, new: &NewRerun<'_>) -> sqlx::Result<Begun> {
    let inserted: Option<Rerun> = sqlx::query_as(INSERT.as_str())
        .bind(new.key)
        .bind(new.run_id)
        .bind(new.source)
        .bind(new.repository)
        .bind(new.commit_sha)
        .bind(new.origin)
        .bind(new.confidence)
        .bind(new.request)
        .fetch_optional(pool)
        .await?;
    if let Some(r) = inserted {
        return Ok(Begun::Fresh(r));
    }
    let r: Rerun = sqlx::query_as(GET.as_str())
        .bind(new.key)
        .fetch_one(pool)
        .await?;
    Ok(if r.run_id != new.run_id {
        Begun::Taken(r)
    } else if r.state == "requested" {
        Begun::Pending(r)
    } else {
        Begun::Answered(r)
    })
}

/// Counts a request about to be sent.
pub async fn sending(pool: &PgPool, key: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE reruns SET tries = tries + 1 WHERE key = $1 AND state = 'requested'")
        .bind(key)
        .execute(pool)
        .await?;
    Ok(())
}

/// Notes what a later deliverer needs to tell whether the request went
/// out (the build number it would start), before it is sent.
pub async fn note(pool: &PgPool, key: &str, detail: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE reruns SET detail = $2 WHERE key = $1 AND state = 'requested'")
        .bind(key)
        .bind(detail)
        .execute(pool)
        .await?;
    Ok(())
}

/// requested -> `state` (`done` or `refused`), with the CI system's answer.
pub async fn answer(
    pool: &PgPool,
    key: &str,
    state: &str,
    http_status: Option<u16>,
    detail: &str,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE reruns SET state = $2, http_status = $3, detail = $4, answered_at = now()
         WHERE key = $1 AND state = 'requested'",
    )
    .bind(key)
    .bind(state)
    .bind(http_status.map(i32::from))
    .bind(detail)
    .execute(pool)
    .await?;
    Ok(())
}

/// The re-runs the given analyses asked for.
pub async fn of_runs(pool: &PgPool, runs: &[Uuid]) -> sqlx::Result<Vec<Rerun>> {
    sqlx::query_as(OF_RUNS.as_str())
        .bind(runs)
        .fetch_all(pool)
        .await
}

/// requested -> `unanswered` for every re-run of run `run` still waiting
/// for an answer, when the notifier gives up on its delivery; how many.
pub async fn give_up(pool: &PgPool, run: Uuid, detail: &str) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "UPDATE reruns SET state = 'unanswered', detail = $2, answered_at = now()
         WHERE run_id = $1 AND state = 'requested'",
    )
    .bind(run)
    .bind(detail)
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}

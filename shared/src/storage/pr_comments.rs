//! `pr_comments`: one Faultline comment per pull request, edited in place.
//!
//! ```text
//! run of the PR's head commit finished ──mark_failed──> dirty (version+1)
//! later commit's run passed ───────────mark_passed──> dirty (version+1)
//! dirty, due ──claim_due (SKIP LOCKED, locked_until)──> writing
//!   writing ──written──> clean (dirty again if a mark came in meanwhile)
//!   writing ──failed──> due again at a backoff | given up (last_error kept)
//! ```
//! The comment is rendered from the stored analyses at write time, so
//! marks that arrive together collapse into one edit.

use std::{sync::LazyLock, time::Duration};

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::{
    qualified,
    runs::{RUN_COLUMNS, RunRow},
};

/// A pull request's comment as stored.
#[derive(Debug, Clone, Default, sqlx::FromRow, serde::Serialize)]
pub struct PrComment {
    pub repository: String,
    pub pr_number: i64,
    pub head_branch: Option<String>,
    pub head_sha: String,
    pub passed_sha: Option<String>,
    pub passed_job: Option<String>,
    pub comment_id: Option<i64>,
    pub body_sha256: Option<String>,
    pub human_edits: i32,
    pub recreated: i32,
    pub thumbs_up: i32,
    pub thumbs_down: i32,
    pub writes: i32,
    pub version: i64,
    pub dirty: bool,
    pub attempts: i32,
    pub last_error: Option<String>,
}

const COLUMNS: &str =
    "repository, pr_number, head_branch, head_sha, passed_sha, passed_job, comment_id,
    body_sha256, human_edits, recreated, thumbs_up, thumbs_down, writes, version, dirty, attempts,
    last_error";

/// A failed job of the PR's head commit: its newest run, and the job's name.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CommitJob {
    #[sqlx(flatten)]
    pub run: RunRow,
    pub job_name: Option<String>,
    /// The re-run Faultline asked for (`reruns`): `requested`, `done` or
    /// `refused`, and what the CI system answered.
    pub rerun_state: Option<String>,
    pub rerun_detail: Option<String>,
}

/// The re-run of run `r`, as [`CommitJob`] reads it.
const RERUN_JOIN: &str = "LEFT JOIN LATERAL (
                 SELECT x.state AS rerun_state, x.detail AS rerun_detail FROM reruns x
                 WHERE x.run_id = r.id ORDER BY x.requested_at LIMIT 1) x ON true";

/// [`claim_due`]'s statement.
pub(crate) static CLAIM: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH due AS (
             SELECT repository, pr_number FROM pr_comments
             WHERE dirty AND next_attempt_at <= now()
               AND (locked_until IS NULL OR locked_until < now())
             ORDER BY next_attempt_at LIMIT $3
             FOR UPDATE SKIP LOCKED)
         UPDATE pr_comments c SET locked_by = $1, locked_until = now() + make_interval(secs => $2)
         FROM due WHERE c.repository = due.repository AND c.pr_number = due.pr_number
         RETURNING {}",
        qualified(COLUMNS, "c")
    )
});

/// [`get`]'s statement.
pub(crate) static GET: LazyLock<String> = LazyLock::new(|| {
    format!("SELECT {COLUMNS} FROM pr_comments WHERE repository = $1 AND pr_number = $2")
});

/// [`jobs_of_commit`]'s statement.
pub(crate) static JOBS: LazyLock<String> = LazyLock::new(|| {
    let cols = qualified(RUN_COLUMNS, "r");
    format!(
        "SELECT * FROM (
             SELECT DISTINCT ON (r.event_id) {cols}, e.job_name, x.rerun_state, x.rerun_detail
             FROM failure_events e JOIN analysis_runs r ON r.event_id = e.id
             {RERUN_JOIN}
             WHERE e.github_repository = $1 AND e.commit_sha = $2 AND r.shadow_of IS NULL
               AND r.status IN ('completed', 'needs_review', 'failed')
             ORDER BY r.event_id, r.created_at DESC
             LIMIT 500) j
         ORDER BY j.created_at, j.id"
    )
});

/// [`recent_jobs`]'s statement.
pub(crate) static RECENT: LazyLock<String> = LazyLock::new(|| {
    let cols = qualified(RUN_COLUMNS, "r");
    format!(
        "SELECT * FROM (
             SELECT {cols}, coalesce(e.job_name, e.log_name) AS job_name, x.rerun_state,
                    x.rerun_detail
             FROM analysis_runs r JOIN failure_events e ON e.id = r.event_id
             {RERUN_JOIN}
             WHERE r.shadow_of IS NULL AND r.status IN ('completed', 'needs_review', 'failed')
             ORDER BY r.finished_at DESC NULLS LAST LIMIT $1) j
         ORDER BY j.created_at, j.id"
    )
});

/// A finished run of `head_sha` (received at `head_at`) fails in pull
/// request `pr_number`: the comment shows that commit (unless a newer
/// commit's failure already holds it) and is written again.
pub async fn mark_failed(
    pool: &PgPool,
    repository: &str,
    pr_number: i64,
    head_branch: Option<&str>,
    head_sha: &str,
    head_at: DateTime<Utc>,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO pr_comments (repository, pr_number, head_branch, head_sha, head_at)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (repository, pr_number) DO UPDATE SET
             head_branch = coalesce(EXCLUDED.head_branch, pr_comments.head_branch),
             passed_sha = CASE WHEN pr_comments.head_sha = EXCLUDED.head_sha
                               THEN pr_comments.passed_sha END,
             passed_job = CASE WHEN pr_comments.head_sha = EXCLUDED.head_sha
                               THEN pr_comments.passed_job END,
             head_sha = EXCLUDED.head_sha, head_at = EXCLUDED.head_at,
             dirty = true, attempts = 0, next_attempt_at = now(), version = pr_comments.version + 1,
             updated_at = now()
         WHERE pr_comments.head_sha = EXCLUDED.head_sha OR pr_comments.head_at <= EXCLUDED.head_at",
    )
    .bind(repository)
    .bind(pr_number)
    .bind(head_branch)
    .bind(head_sha)
    .bind(head_at)
    .execute(pool)
    .await?;
    Ok(())
}

/// A run of `sha` passed (job `job`): every comment of the repository's
/// pull requests `pr_numbers`, or of branch `head_branch`, that shows an
/// older commit's failures says so. Returns how many comments it marked.
pub async fn mark_passed(
    pool: &PgPool,
    repository: &str,
    pr_numbers: &[i64],
    head_branch: Option<&str>,
    sha: &str,
    job: &str,
) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "UPDATE pr_comments SET passed_sha = $4, passed_job = $5, dirty = true, attempts = 0,
             next_attempt_at = now(), version = version + 1, updated_at = now()
         WHERE repository = $1 AND (pr_number = ANY($2) OR head_branch = $3)
           AND head_sha <> $4 AND passed_sha IS DISTINCT FROM $4",
    )
    .bind(repository)
    .bind(pr_numbers)
    .bind(head_branch)
    .bind(sha)
    .bind(job)
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}

/// Something shown about commit `sha` changed after its runs were marked
/// (a re-run was requested): its comments are written again.
pub async fn touch_commit(pool: &PgPool, repository: &str, sha: &str) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "UPDATE pr_comments SET dirty = true, attempts = 0, next_attempt_at = now(),
             version = version + 1, updated_at = now()
         WHERE repository = $1 AND head_sha = $2",
    )
    .bind(repository)
    .bind(sha)
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}

/// Dirty, due comments, locked by `owner` for `lock`; rows another
/// deliverer holds are skipped.
pub async fn claim_due(
    pool: &PgPool,
    owner: &str,
    lock: Duration,
    limit: i64,
) -> sqlx::Result<Vec<PrComment>> {
    sqlx::query_as(CLAIM.as_str())
        .bind(owner)
        .bind(lock.as_secs_f64())
        .bind(limit)
        .fetch_all(pool)
        .await
}

/// What a successful write found and left.
#[derive(Debug, Clone, Default)]
pub struct Written {
    pub comment_id: i64,
    pub body_sha256: String,
    /// The comment held another body than the one last written.
    pub human_edit: bool,
    /// The comment was gone (deleted) and was posted again.
    pub recreated: bool,
    /// The comment's 👍 / 👎 reactions when it was read.
    pub thumbs: Option<(i32, i32)>,
    /// Who reacted 👍 (`true`) or 👎, when the reactions were read
    /// (`storage::feedback::replace_reactions`).
    pub votes: Option<Vec<(String, bool)>>,
}

/// writing -> clean, unless a mark came in after `version` was rendered
/// (then it stays dirty and due). `false`: the lock was lost.
pub async fn written(
    pool: &PgPool,
    comment: &PrComment,
    owner: &str,
    w: &Written,
) -> sqlx::Result<bool> {
    let (up, down) = w.thumbs.unwrap_or((-1, -1));
    let done = sqlx::query(
        "UPDATE pr_comments SET comment_id = $4, body_sha256 = $5,
             human_edits = human_edits + $6::int, recreated = recreated + $7::int,
             thumbs_up = CASE WHEN $8 >= 0 THEN $8 ELSE thumbs_up END,
             thumbs_down = CASE WHEN $9 >= 0 THEN $9 ELSE thumbs_down END,
             reactions_read_at = CASE WHEN $8 >= 0 THEN now() ELSE reactions_read_at END,
             writes = writes + 1, dirty = version <> $10, attempts = 0, last_error = NULL,
             locked_by = NULL, locked_until = NULL, next_attempt_at = now(), updated_at = now()
         WHERE repository = $1 AND pr_number = $2 AND locked_by = $3",
    )
    .bind(&comment.repository)
    .bind(comment.pr_number)
    .bind(owner)
    .bind(w.comment_id)
    .bind(&w.body_sha256)
    .bind(w.human_edit as i32)
    .bind(w.recreated as i32)
    .bind(up)
    .bind(down)
    .bind(comment.version)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// writing -> due again after a backoff (`base` × 2^attempts, capped at
/// `max`, with jitter), or given up after `max_attempts` (clean, the error
/// kept) — a later mark makes it dirty again.
pub async fn failed(
    pool: &PgPool,
    comment: &PrComment,
    owner: &str,
    error: &str,
    policy: super::outbox::RetryPolicy,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE pr_comments SET attempts = attempts + 1, last_error = $4,
             dirty = attempts + 1 < $7 OR version <> $8,
             next_attempt_at = now() + make_interval(secs => least($6, $5 * power(2, attempts)) * (1 + 0.25 * random())),
             locked_by = NULL, locked_until = NULL, updated_at = now()
         WHERE repository = $1 AND pr_number = $2 AND locked_by = $3",
    )
    .bind(&comment.repository)
    .bind(comment.pr_number)
    .bind(owner)
    .bind(error)
    .bind(policy.base.as_secs_f64())
    .bind(policy.max.as_secs_f64())
    .bind(policy.max_attempts)
    .bind(comment.version)
    .execute(pool)
    .await?;
    Ok(())
}

/// One pull request's comment row.
pub async fn get(
    pool: &PgPool,
    repository: &str,
    pr_number: i64,
) -> sqlx::Result<Option<PrComment>> {
    sqlx::query_as(GET.as_str())
        .bind(repository)
        .bind(pr_number)
        .fetch_optional(pool)
        .await
}

/// The analysed jobs of commit `sha` of `repository`: each event's newest
/// finished run (completed, waiting for review, or failed), oldest job first.
pub async fn jobs_of_commit(
    pool: &PgPool,
    repository: &str,
    sha: &str,
) -> sqlx::Result<Vec<CommitJob>> {
    sqlx::query_as(JOBS.as_str())
        .bind(repository)
        .bind(sha)
        .fetch_all(pool)
        .await
}

/// One finished run as a job of its commit (an event that names no
/// repository or commit is shown alone).
pub async fn job_of_run(pool: &PgPool, run: uuid::Uuid) -> sqlx::Result<Option<CommitJob>> {
    sqlx::query_as(ONE.as_str())
        .bind(run)
        .fetch_optional(pool)
        .await
}

/// [`job_of_run`]'s statement.
pub(crate) static ONE: LazyLock<String> = LazyLock::new(|| {
    let cols = qualified(RUN_COLUMNS, "r");
    format!(
        "SELECT {cols}, coalesce(e.job_name, e.log_name) AS job_name, x.rerun_state,
                x.rerun_detail
         FROM analysis_runs r JOIN failure_events e ON e.id = r.event_id
         {RERUN_JOIN}
         WHERE r.id = $1"
    )
});

/// The newest `limit` finished analyses of any event (oldest first), as
/// jobs of one commit: what `faultline pr-comment --recent` previews.
pub async fn recent_jobs(pool: &PgPool, limit: i64) -> sqlx::Result<Vec<CommitJob>> {
    sqlx::query_as(RECENT.as_str())
        .bind(limit.clamp(1, 500))
        .fetch_all(pool)
        .await
}

/// The sweep that reads reactions GitHub sends no webhook for: up to
/// `limit` comments of commits from the last `days` days whose reactions
/// were not read for `every`, longest-unread first, are taken (their
/// `reactions_read_at` set now, so two workers do not read the same ones).
pub async fn stale_reactions(
    pool: &PgPool,
    every: Duration,
    days: i32,
    limit: i64,
) -> sqlx::Result<Vec<PrComment>> {
    sqlx::query_as(STALE_REACTIONS.as_str())
        .bind(every.as_secs_f64())
        .bind(days)
        .bind(limit)
        .fetch_all(pool)
        .await
}

/// [`stale_reactions`]' statement.
pub(crate) static STALE_REACTIONS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH stale AS (
             SELECT repository, pr_number FROM pr_comments
             WHERE comment_id IS NOT NULL AND head_at > now() - make_interval(days => $2)
               AND coalesce(reactions_read_at, '-infinity') < now() - make_interval(secs => $1)
             ORDER BY reactions_read_at NULLS FIRST LIMIT $3
             FOR UPDATE SKIP LOCKED)
         UPDATE pr_comments c SET reactions_read_at = now()
         FROM stale WHERE c.repository = stale.repository AND c.pr_number = stale.pr_number
         RETURNING {}",
        qualified(COLUMNS, "c")
    )
});

/// The 👍 / 👎 counts the sweep read on a comment.
pub async fn set_thumbs(
    pool: &PgPool,
    repository: &str,
    pr_number: i64,
    (up, down): (i32, i32),
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE pr_comments SET thumbs_up = $3, thumbs_down = $4, reactions_read_at = now()
         WHERE repository = $1 AND pr_number = $2",
    )
    .bind(repository)
    .bind(pr_number)
    .bind(up)
    .bind(down)
    .execute(pool)
    .await?;
    Ok(())
}

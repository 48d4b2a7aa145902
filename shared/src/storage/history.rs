//! Failure history per job and per test: failures come from
//! `failure_events` (every ingested failure), other outcomes — passes above
//! all, which start no analysis — from `ci_outcomes` via [`record_outcome`].
//! From both: outcomes over time, the current streak of consecutive
//! failures, flakiness (a commit that both passed and failed), when the
//! failure was first seen and the last commit that passed.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;

/// Why history could not be recorded or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// Neither a job nor a test was named: history is kept per job and per test.
    #[error("an outcome needs a job name or a test name")]
    NoSubject,
    #[error("unknown outcome {0:?} (expected success or failure)")]
    BadOutcome(String),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// A CI outcome reported without an analysis (e.g. a passing build).
#[derive(Debug, Clone, Default)]
pub struct NewOutcome {
    /// Makes redelivery idempotent (e.g. `github:delivery:<id>`).
    pub dedup_key: String,
    pub source: String,
    pub job_name: Option<String>,
    pub test_name: Option<String>,
    pub repository: Option<String>,
    pub commit_sha: Option<String>,
    pub build_number: Option<String>,
    /// The branch the outcome was on, as the source names it.
    pub branch: Option<String>,
    /// `success` or `failure`. A failure that was ingested as an event is
    /// already history: record failures here only when they were not.
    pub outcome: String,
}

/// Records an outcome; false when its dedup key was already recorded.
pub async fn record_outcome(pool: &PgPool, o: &NewOutcome) -> Result<bool, HistoryError> {
    if o.job_name.is_none() && o.test_name.is_none() {
        return Err(HistoryError::NoSubject);
    }
    if !matches!(o.outcome.as_str(), "success" | "failure") {
        return Err(HistoryError::BadOutcome(o.outcome.clone()));
    }
    let inserted = sqlx::query(
        "INSERT INTO ci_outcomes (dedup_key, source, job_name, test_name, repository, commit_sha, build_number, outcome, branch)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (dedup_key) DO NOTHING",
    )
    .bind(&o.dedup_key)
    .bind(&o.source)
    .bind(&o.job_name)
    .bind(&o.test_name)
    .bind(&o.repository)
    .bind(&o.commit_sha)
    .bind(&o.build_number)
    .bind(&o.outcome)
    .bind(&o.branch)
    .execute(pool)
    .await?
    .rows_affected();
    Ok(inserted == 1)
}

/// One outcome in a history.
#[derive(Debug, Clone, Serialize, sqlx::FromRow, PartialEq)]
pub struct OutcomeRow {
    pub at: DateTime<Utc>,
    pub outcome: String,
    pub commit_sha: Option<String>,
    pub build_number: Option<String>,
    pub source: String,
}

/// The history of a job, a test, or a test within a job.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct History {
    pub failures: i64,
    pub passes: i64,
    /// The first recorded failure.
    pub first_seen: Option<DateTime<Utc>>,
    pub last_failure: Option<DateTime<Utc>>,
    pub last_pass: Option<DateTime<Utc>>,
    pub last_passing_commit: Option<String>,
    /// Failures since the last pass (all of them if it never passed).
    pub consecutive_failures: i64,
    /// Commits that both passed and failed: the signature of a flaky test.
    pub flaky_commits: Vec<String>,
    #[sqlx(skip)]
    pub flaky: bool,
    /// The most recent outcomes, newest first.
    #[sqlx(skip)]
    pub recent: Vec<OutcomeRow>,
}

/// Every outcome of `$1` (job) and/or `$2` (test), in repository `$3` when
/// given, up to `$4` when given, on branch `$5` when given: failures from
/// events, the rest from `ci_outcomes`.
const OUTCOMES: &str = "WITH o AS (
        SELECT received_at AS at, 'failure'::text AS outcome, commit_sha, build_number, source
        FROM failure_events
        WHERE ($1::text IS NULL OR job_name = $1) AND ($2::text IS NULL OR test_name = $2)
          AND ($3::text IS NULL OR repository = $3) AND ($4::timestamptz IS NULL OR received_at <= $4)
          AND ($5::text IS NULL OR branch = $5)
        UNION ALL
        SELECT recorded_at, outcome, commit_sha, build_number, source
        FROM ci_outcomes
        WHERE ($1::text IS NULL OR job_name = $1) AND ($2::text IS NULL OR test_name = $2)
          AND ($3::text IS NULL OR repository = $3) AND ($4::timestamptz IS NULL OR recorded_at <= $4)
          AND ($5::text IS NULL OR branch = $5))";

/// [`history`]'s statement.
pub(crate) static HISTORY: LazyLock<String> = LazyLock::new(|| {
    format!("{OUTCOMES},
         last_pass AS (SELECT at, commit_sha FROM o WHERE outcome = 'success' ORDER BY at DESC LIMIT 1)
         SELECT count(*) FILTER (WHERE outcome = 'failure') AS failures,
                count(*) FILTER (WHERE outcome = 'success') AS passes,
                min(at) FILTER (WHERE outcome = 'failure') AS first_seen,
                max(at) FILTER (WHERE outcome = 'failure') AS last_failure,
                (SELECT at FROM last_pass) AS last_pass,
                (SELECT commit_sha FROM last_pass) AS last_passing_commit,
                count(*) FILTER (WHERE outcome = 'failure'
                    AND at > coalesce((SELECT at FROM last_pass), '-infinity')) AS consecutive_failures,
                coalesce((SELECT array_agg(c ORDER BY c) FROM (
                    SELECT commit_sha AS c FROM o WHERE commit_sha IS NOT NULL
                    GROUP BY commit_sha HAVING count(DISTINCT outcome) = 2) f), '{{}}') AS flaky_commits
         FROM o")
});

/// [`history`]'s statement of the recent outcomes.
pub(crate) static RECENT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{OUTCOMES} SELECT at, outcome, commit_sha, build_number, source FROM o ORDER BY at DESC LIMIT $6"
    )
});

/// Reads the history of `job` and/or `test` with its `recent` latest outcomes.
pub async fn history(
    pool: &PgPool,
    job: Option<&str>,
    test: Option<&str>,
    recent: i64,
) -> Result<History, HistoryError> {
    history_in(pool, job, test, Scope::default(), recent).await
}

/// Where and until when a history is read: one repository's outcomes (a
/// job of the same name elsewhere is another job), up to a moment (what a
/// failure's analysis may call "before"), on one branch (a change's target
/// branch: what "already failing" is measured on).
#[derive(Debug, Clone, Copy, Default)]
pub struct Scope<'a> {
    pub repository: Option<&'a str>,
    pub until: Option<DateTime<Utc>>,
    pub branch: Option<&'a str>,
}

/// [`history`] within `scope`.
pub async fn history_in(
    pool: &PgPool,
    job: Option<&str>,
    test: Option<&str>,
    scope: Scope<'_>,
    recent: i64,
) -> Result<History, HistoryError> {
    if job.is_none() && test.is_none() {
        return Err(HistoryError::NoSubject);
    }
    let mut h: History = sqlx::query_as(HISTORY.as_str())
        .bind(job)
        .bind(test)
        .bind(scope.repository)
        .bind(scope.until)
        .bind(scope.branch)
        .fetch_one(pool)
        .await?;
    h.flaky = !h.flaky_commits.is_empty();
    h.recent = sqlx::query_as(RECENT.as_str())
        .bind(job)
        .bind(test)
        .bind(scope.repository)
        .bind(scope.until)
        .bind(scope.branch)
        .bind(recent)
        .fetch_all(pool)
        .await?;
    Ok(h)
}

/// The same failure elsewhere at the same time: runs of other
/// repositories whose failure has `run`'s fingerprint and arrived within
/// `minutes` of it (what makes a failure the infrastructure's).
#[derive(Debug, Clone, Default, PartialEq, sqlx::FromRow)]
pub struct Spread {
    pub repositories: i64,
    pub failures: i64,
}

/// [`spread`]'s statement.
pub(crate) static SPREAD: LazyLock<String> = LazyLock::new(|| {
    "SELECT count(DISTINCT e.repository) AS repositories, count(*) AS failures
     FROM analysis_runs r JOIN failure_events e ON e.id = r.event_id
     JOIN analysis_runs me ON me.id = $1 JOIN failure_events mine ON mine.id = me.event_id
     WHERE r.fingerprint = me.fingerprint AND r.id <> me.id AND r.shadow_of IS NULL
       AND e.repository IS NOT NULL AND e.repository IS DISTINCT FROM mine.repository
       AND e.received_at BETWEEN mine.received_at - make_interval(mins => $2)
                             AND mine.received_at + make_interval(mins => $2)"
        .to_string()
});

/// How many other repositories failed the way run `run` did (same
/// fingerprint) within `minutes` of it; zero before its fingerprint is
/// known.
pub async fn spread(pool: &PgPool, run: uuid::Uuid, minutes: i32) -> sqlx::Result<Spread> {
    sqlx::query_as(SPREAD.as_str())
        .bind(run)
        .bind(minutes)
        .fetch_one(pool)
        .await
}

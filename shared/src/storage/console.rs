//! `console_sessions`: browsers signed in to the review console
//! (`faultline serve`, `/ui/`). A session is a random cookie value whose
//! SHA-256 is stored, tied to the API token it was opened with, and a form
//! token (CSRF) of its own. It ends when it expires, at sign-out, or as
//! soon as its token is revoked or expires: every look-up reads the token.
//!
//! Also what only the console reads: recent runs and failure groups (the
//! queue itself is [`super::review::queue_groups`]).

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use super::columns::CategoryColumn;
use crate::types::RunStatus;

use super::tokens::{self, TokenRow};

/// A live session: who is signed in and the form token of their pages.
#[derive(Debug, Clone)]
pub struct ConsoleSession {
    pub token: TokenRow,
    pub csrf: String,
    pub expires_at: DateTime<Utc>,
}

/// A session just opened: the cookie value (shown once, never stored) and
/// its form token.
#[derive(Debug, Clone)]
pub struct Opened {
    pub cookie: String,
    pub csrf: String,
}

/// Opens a session for `token` lasting `ttl`; drops expired sessions of
/// every token on the way (they are refused anyway; this keeps the table small).
pub async fn open(pool: &PgPool, token: &TokenRow, ttl: Duration) -> sqlx::Result<Opened> {
    let cookie = tokens::generate();
    let csrf = tokens::generate();
    let mut tx = pool.begin().await?;
    sqlx::query("DELETE FROM console_sessions WHERE expires_at < now()")
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "INSERT INTO console_sessions (id_sha256, token_id, csrf, expires_at)
         VALUES ($1, $2, $3, now() + make_interval(secs => $4))",
    )
    .bind(tokens::hash(&cookie))
    .bind(token.id)
    .bind(&csrf)
    .bind(ttl.as_secs_f64())
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Opened { cookie, csrf })
}

#[derive(sqlx::FromRow)]
struct SessionRow {
    #[sqlx(flatten)]
    token: TokenRow,
    csrf: String,
    session_expires_at: DateTime<Utc>,
}

/// The live session of a cookie value: not expired, its token neither
/// revoked nor expired.
pub async fn find(pool: &PgPool, cookie: &str) -> sqlx::Result<Option<ConsoleSession>> {
    let row: Option<SessionRow> = sqlx::query_as(
        "SELECT t.id, t.name, t.role, t.created_at, t.revoked_at, t.expires_at,
                s.csrf, s.expires_at AS session_expires_at
         FROM console_sessions s JOIN api_tokens t ON t.id = s.token_id
         WHERE s.id_sha256 = $1 AND s.expires_at > now()
           AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())",
    )
    .bind(tokens::hash(cookie))
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|r| ConsoleSession {
        token: r.token,
        csrf: r.csrf,
        expires_at: r.session_expires_at,
    }))
}

/// Ends the session of a cookie value (sign-out); true when there was one.
pub async fn close(pool: &PgPool, cookie: &str) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM console_sessions WHERE id_sha256 = $1")
        .bind(tokens::hash(cookie))
        .execute(pool)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// One run in the console's list of analyses.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct RunSummary {
    pub id: Uuid,
    pub status: RunStatus,
    pub category: Option<CategoryColumn>,
    pub confidence: Option<f32>,
    pub reasoner: String,
    pub iteration: i32,
    pub tokens_in: i64,
    pub tokens_out: i64,
    pub cost_usd: f64,
    pub job_name: Option<String>,
    pub build_number: Option<String>,
    pub repository: Option<String>,
    pub log_name: Option<String>,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// The newest runs (of `status`, when given), `limit` from `offset`.
pub async fn recent_runs(
    pool: &PgPool,
    status: Option<RunStatus>,
    limit: i64,
    offset: i64,
) -> sqlx::Result<Vec<RunSummary>> {
    sqlx::query_as(
        "SELECT r.id, r.status, r.category, r.confidence, r.reasoner, r.iteration, r.tokens_in,
                r.tokens_out, r.cost_usd, e.job_name, e.build_number, e.repository, e.log_name,
                r.created_at, r.finished_at
         FROM analysis_runs r JOIN failure_events e ON e.id = r.event_id
         WHERE ($1::text IS NULL OR r.status = $1) AND r.shadow_of IS NULL
         ORDER BY r.created_at DESC, r.id DESC LIMIT $2 OFFSET $3",
    )
    .bind(status.map(|s| s.as_str()))
    .bind(limit)
    .bind(offset)
    .fetch_all(pool)
    .await
}

/// A failure group: the runs that share a fingerprint.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct FailureGroup {
    pub fingerprint: String,
    pub runs: i64,
    pub first_seen: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
    pub jobs: Vec<String>,
    /// The newest run.
    pub latest_run: Uuid,
    /// The newest run's category and root cause.
    pub agent_category: Option<CategoryColumn>,
    pub agent_root_cause: Option<String>,
    /// The latest human resolution's, if any: the current verdict.
    pub human_category: Option<CategoryColumn>,
    pub human_root_cause: Option<String>,
    /// Open or claimed review items of the group.
    pub pending: i64,
    /// Runs per day for the last 14 days, oldest first (today last).
    pub daily: Vec<i64>,
}

/// Failure groups with a run in the last `days`, most recently seen first.
pub async fn failure_groups(
    pool: &PgPool,
    days: i32,
    limit: i64,
    offset: i64,
) -> sqlx::Result<Vec<FailureGroup>> {
    sqlx::query_as(
        "WITH g AS (
             SELECT r.fingerprint, count(*) AS runs, min(r.created_at) AS first_seen,
                    max(r.created_at) AS last_seen,
                    array_remove(array_agg(DISTINCT e.job_name), NULL) AS jobs,
                    (array_agg(r.id ORDER BY r.created_at DESC, r.id DESC))[1] AS latest_run
             FROM analysis_runs r JOIN failure_events e ON e.id = r.event_id
             WHERE r.fingerprint IS NOT NULL AND r.fingerprint <> '' AND r.shadow_of IS NULL
               AND r.created_at > now() - make_interval(days => $1)
             GROUP BY r.fingerprint
             ORDER BY max(r.created_at) DESC, r.fingerprint LIMIT $2 OFFSET $3)
         SELECT g.fingerprint, g.runs, g.first_seen, g.last_seen, g.jobs, g.latest_run,
                lr.category AS agent_category, lr.result ->> 'root_cause' AS agent_root_cause,
                h.category AS human_category, h.root_cause AS human_root_cause,
                (SELECT count(*) FROM review_items i JOIN analysis_runs pr ON pr.id = i.run_id
                 WHERE pr.fingerprint = g.fingerprint AND i.status IN ('open', 'claimed')) AS pending,
                (SELECT array_agg(coalesce(d.n, 0) ORDER BY day.day)
                 FROM generate_series(current_date - 13, current_date, interval '1 day') AS day(day)
                 LEFT JOIN (SELECT date_trunc('day', dr.created_at) AS d, count(*) AS n
                            FROM analysis_runs dr
                            WHERE dr.fingerprint = g.fingerprint AND dr.created_at >= current_date - 13
                              AND dr.shadow_of IS NULL
                            GROUP BY 1) d ON d.d = day.day) AS daily
         FROM g
         JOIN analysis_runs lr ON lr.id = g.latest_run
         LEFT JOIN LATERAL (SELECT category, root_cause FROM review_resolutions rr
                            WHERE rr.fingerprint = g.fingerprint
                            ORDER BY resolved_at DESC, id DESC LIMIT 1) h ON true
         ORDER BY g.last_seen DESC, g.fingerprint",
    )
    .bind(days)
    .bind(limit)
    .bind(offset)
    .fetch_all(pool)
    .await
}

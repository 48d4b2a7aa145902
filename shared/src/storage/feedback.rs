//! `analysis_feedback`: whether an analysis helped (issue 32 item 6).
//!
//! Two sources, one row per analysis, source and person:
//! - `reaction`: a 👍 / 👎 on the pull-request comment that showed the
//!   analysis, by GitHub login. GitHub sends no webhook for reactions, so
//!   they are read when the comment is next written and by a bounded sweep
//!   of recent comments ([`super::pr_comments::sweep_reactions`]); every
//!   analysis the comment showed gets the vote, and a reaction taken back
//!   is removed ([`replace_reactions`]).
//! - `console`: "Helpful" / "Not helpful" on the analysis' console page, by
//!   console user ([`record`]); a second click changes the vote.

use sqlx::PgPool;
use uuid::Uuid;

/// Where a vote came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Reaction,
    Console,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Reaction => "reaction",
            Source::Console => "console",
        }
    }
}

/// Longest actor name kept (the column's check).
pub const MAX_ACTOR: usize = 200;

/// Records `actor`'s vote on run `run_id` (a second vote replaces the
/// first). `false`: no such run.
pub async fn record(
    pool: &PgPool,
    run_id: Uuid,
    source: Source,
    actor: &str,
    helpful: bool,
) -> sqlx::Result<bool> {
    let actor = crate::text::truncate_bytes(actor, MAX_ACTOR);
    let done = sqlx::query(
        "INSERT INTO analysis_feedback (run_id, source, actor, helpful)
         SELECT id, $2, $3, $4 FROM analysis_runs WHERE id = $1
         ON CONFLICT (run_id, source, actor)
         DO UPDATE SET helpful = EXCLUDED.helpful, updated_at = now()
         WHERE analysis_feedback.helpful IS DISTINCT FROM EXCLUDED.helpful",
    )
    .bind(run_id)
    .bind(source.as_str())
    .bind(actor)
    .bind(helpful)
    .execute(pool)
    .await?;
    if done.rows_affected() == 1 {
        return Ok(true);
    }
    // The same vote again, or no such run.
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM analysis_runs WHERE id = $1)")
        .bind(run_id)
        .fetch_one(pool)
        .await
}

/// The reactions now on a comment (`(login, thumbs up)`) become the
/// reaction votes of every run it showed: new ones recorded, changed ones
/// updated, those taken back removed. Runs that no longer exist are
/// skipped.
pub async fn replace_reactions(
    pool: &PgPool,
    runs: &[Uuid],
    votes: &[(String, bool)],
) -> sqlx::Result<()> {
    let actors: Vec<String> = votes
        .iter()
        .map(|(a, _)| crate::text::truncate_bytes(a, MAX_ACTOR).to_string())
        .collect();
    let helpful: Vec<bool> = votes.iter().map(|(_, h)| *h).collect();
    let mut tx = pool.begin().await?;
    sqlx::query(
        "DELETE FROM analysis_feedback
         WHERE source = 'reaction' AND run_id = ANY($1) AND NOT (actor = ANY($2))",
    )
    .bind(runs)
    .bind(&actors)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO analysis_feedback (run_id, source, actor, helpful)
         SELECT r.id, 'reaction', v.actor, v.helpful
         FROM analysis_runs r, unnest($2::text[], $3::bool[]) AS v(actor, helpful)
         WHERE r.id = ANY($1)
         ON CONFLICT (run_id, source, actor)
         DO UPDATE SET helpful = EXCLUDED.helpful, updated_at = now()
         WHERE analysis_feedback.helpful IS DISTINCT FROM EXCLUDED.helpful",
    )
    .bind(runs)
    .bind(&actors)
    .bind(&helpful)
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}

/// One run's votes: (helpful, not helpful), every source.
pub async fn of_run(pool: &PgPool, run_id: Uuid) -> sqlx::Result<(i64, i64)> {
    sqlx::query_as(
        "SELECT count(*) FILTER (WHERE helpful), count(*) FILTER (WHERE NOT helpful)
         FROM analysis_feedback WHERE run_id = $1",
    )
    .bind(run_id)
    .fetch_one(pool)
    .await
}

/// What `actor` said of run `run_id` on the console, if anything.
pub async fn console_vote(pool: &PgPool, run_id: Uuid, actor: &str) -> sqlx::Result<Option<bool>> {
    sqlx::query_scalar(
        "SELECT helpful FROM analysis_feedback
         WHERE run_id = $1 AND source = 'console' AND actor = $2",
    )
    .bind(run_id)
    .bind(crate::text::truncate_bytes(actor, MAX_ACTOR))
    .fetch_optional(pool)
    .await
}

/// Votes by the analysed category and origin.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow, serde::Serialize)]
pub struct Rate {
    /// The run's category (`UNKNOWN` when it has none).
    pub category: String,
    /// The result's origin verdict (`unknown` when it has none).
    pub origin: String,
    pub helpful: i64,
    pub not_helpful: i64,
}

impl Rate {
    /// The share of votes that said "not helpful".
    pub fn not_helpful_rate(&self) -> f64 {
        let all = self.helpful + self.not_helpful;
        if all == 0 {
            0.0
        } else {
            self.not_helpful as f64 / all as f64
        }
    }
}

/// Every vote of the last `days` days, by category and origin (most
/// voted first).
pub async fn rates(pool: &PgPool, days: i32) -> sqlx::Result<Vec<Rate>> {
    sqlx::query_as(
        "SELECT coalesce(r.category, 'UNKNOWN') AS category,
                coalesce(r.result->>'origin', 'unknown') AS origin,
                count(*) FILTER (WHERE f.helpful) AS helpful,
                count(*) FILTER (WHERE NOT f.helpful) AS not_helpful
         FROM analysis_feedback f JOIN analysis_runs r ON r.id = f.run_id
         WHERE f.updated_at > now() - make_interval(days => $1)
         GROUP BY 1, 2
         ORDER BY count(*) DESC, 1, 2",
    )
    .bind(days)
    .fetch_all(pool)
    .await
}

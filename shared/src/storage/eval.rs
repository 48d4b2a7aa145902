//! `faultline eval`'s statements: scratch databases (created and dropped on
//! the server's `postgres` database) and what an evaluation reads back of
//! its runs. The prompt version an evaluation pins is copied with
//! [`super::prompts::get`] and [`super::prompts::insert_copy`].

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

/// The name of a scratch database, `faultline_eval_{pid}_{n}`: built from
/// numbers only, so it is a valid identifier that needs no quoting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScratchName(String);

impl ScratchName {
    /// The `n`-th scratch database of process `pid`.
    pub fn new(pid: u32, n: usize) -> Self {
        Self(format!("faultline_eval_{pid}_{n}"))
    }

    /// The name, as it is written in SQL.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ScratchName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `CREATE DATABASE` of a scratch database (an identifier cannot be a
/// parameter, hence a statement built per name).
pub fn create_sql(name: &ScratchName) -> String {
    format!("CREATE DATABASE {name}")
}

/// `DROP DATABASE` of a scratch database, closing its sessions.
pub fn drop_sql(name: &ScratchName) -> String {
    format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")
}

/// The statements above for one example name, for
/// [`super::built_statements`].
static EXAMPLES: LazyLock<[String; 2]> = LazyLock::new(|| {
    let example = ScratchName::new(0, 0);
    [create_sql(&example), drop_sql(&example)]
});

/// The built statements of this module, by name, for [`super::built_statements`].
pub fn statements() -> Vec<(String, &'static str)> {
    let example = ScratchName::new(0, 0);
    vec![
        (format!("eval::create_sql({example})"), EXAMPLES[0].as_str()),
        (format!("eval::drop_sql({example})"), EXAMPLES[1].as_str()),
    ]
}

/// Creates the scratch database `name` (on a connection to another database of the server).
pub async fn create_database(admin: &mut PgConnection, name: &ScratchName) -> sqlx::Result<()> {
    sqlx::query(sqlx::AssertSqlSafe(create_sql(name)))
        .execute(admin)
        .await?;
    Ok(())
}

/// Drops the scratch database `name` with its open sessions; nothing if it is gone.
pub async fn drop_database(admin: &mut PgConnection, name: &ScratchName) -> sqlx::Result<()> {
    sqlx::query(sqlx::AssertSqlSafe(drop_sql(name)))
        .execute(admin)
        .await?;
    Ok(())
}

/// Which of `ids` are terminal (completed, needs review or failed); reads only.
pub async fn terminal(pool: &PgPool, ids: &[Uuid]) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar(
        "SELECT id FROM analysis_runs
         WHERE id = ANY($1) AND status IN ('completed', 'needs_review', 'failed')",
    )
    .bind(ids)
    .fetch_all(pool)
    .await
}

/// What an evaluation scores of one run.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Outcome {
    pub id: Uuid,
    pub status: String,
    pub category: Option<String>,
    pub confidence: Option<f32>,
    /// The reasoner the run was assigned (its arm).
    pub reasoner: String,
    pub prompt_version: Option<i32>,
    /// Input plus output tokens of the run's model calls.
    pub tokens: i64,
    pub cost_usd: f64,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// What kind of evidence decided the diagnosis ([`evidence_of`]).
    #[sqlx(skip)]
    pub evidence: String,
}

/// What kind of evidence decided a run's diagnosis, for the evaluation's
/// aggregate "decided by" table: the kind of the recogniser that decided
/// (`assertion`, `crash`, `compile`, …), `failed step only`, `exit code
/// only`, `weak signals`, or `nothing recognised`. Read from the first
/// `log_excerpt` observation of the run's journal.
pub async fn evidence_of(pool: &PgPool, run: Uuid) -> sqlx::Result<String> {
    let steps = super::steps::list(pool, run).await?;
    let Some(c) = steps
        .iter()
        .find(|s| s.action == "log_excerpt")
        .map(|s| &s.observation["classification"])
    else {
        return Ok("no excerpt read".into());
    };
    let by = c["decided_by"].as_str().unwrap_or_default();
    let rule = by.split(':').next().unwrap_or_default();
    let kind = c["hits"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|h| h["rule"].as_str() == Some(rule))
        .and_then(|h| h["kind"].as_str());
    Ok(match kind {
        Some(k) if !rule.is_empty() => k.replace('_', " "),
        _ if by.starts_with("failed step") || by == "the failed step" => "failed step only".into(),
        _ if by.starts_with("exit code") => "exit code only".into(),
        _ if by.starts_with("only weak") => "weak signals".into(),
        _ => "nothing recognised".into(),
    })
}

/// The outcomes of `ids` (in no particular order); reads only.
pub async fn outcomes(pool: &PgPool, ids: &[Uuid]) -> sqlx::Result<Vec<Outcome>> {
    sqlx::query_as(
        "SELECT id, status, category, confidence, reasoner, prompt_version,
                tokens_in + tokens_out AS tokens, cost_usd, created_at, finished_at
         FROM analysis_runs WHERE id = ANY($1)",
    )
    .bind(ids)
    .fetch_all(pool)
    .await
}

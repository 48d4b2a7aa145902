//! `prompt_versions`: the prompt registry. A version is immutable once
//! added (a run journals the number and reads the text by it); what
//! changes is which version is active and which are on trial at a ratio.
//! Version 0 is the built-in prompt and has no row.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgPool;

/// One registered prompt.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct PromptVersion {
    pub version: i32,
    pub name: String,
    pub system_prompt: String,
    /// Tool name -> the description offered to the model instead of the
    /// built-in one.
    pub tool_descriptions: Value,
    pub created_at: DateTime<Utc>,
    pub created_by: Option<String>,
    /// Share of new LLM runs sent to this version (0: not on trial).
    pub ratio: f32,
    pub active: bool,
    pub activated_at: Option<DateTime<Utc>>,
}

/// What a new LLM run's prompt is drawn from: the versions on trial with
/// their ratios (in version order) and the active version (0: built in).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rollout {
    pub trials: Vec<(i32, f64)>,
    pub active: i32,
}

/// Registers a new version under `name`; returns its number.
pub async fn add(
    pool: &PgPool,
    name: &str,
    system_prompt: &str,
    tool_descriptions: &Value,
    created_by: Option<&str>,
) -> sqlx::Result<i32> {
    sqlx::query_scalar(
        "INSERT INTO prompt_versions (name, system_prompt, tool_descriptions, created_by)
         VALUES ($1, $2, $3, $4) RETURNING version",
    )
    .bind(name)
    .bind(system_prompt)
    .bind(tool_descriptions)
    .bind(created_by)
    .fetch_one(pool)
    .await
}

/// Copies a version with its number (an evaluation's scratch database
/// gets the version it evaluates); nothing if that number exists.
pub async fn insert_copy(pool: &PgPool, p: &PromptVersion) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO prompt_versions (version, name, system_prompt, tool_descriptions, created_at, created_by)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (version) DO NOTHING",
    )
    .bind(p.version)
    .bind(&p.name)
    .bind(&p.system_prompt)
    .bind(&p.tool_descriptions)
    .bind(p.created_at)
    .bind(&p.created_by)
    .execute(pool)
    .await?;
    Ok(())
}

/// The columns of a [`PromptVersion`].
const PROMPT_COLUMNS: &str = "version, name, system_prompt, tool_descriptions, created_at,
    created_by, ratio, active, activated_at";

/// [`list`]'s statement.
pub(crate) static LIST: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {PROMPT_COLUMNS} FROM prompt_versions ORDER BY version"));

/// [`get`]'s statement.
pub(crate) static GET: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {PROMPT_COLUMNS} FROM prompt_versions WHERE version = $1"));

/// Every version, oldest first.
pub async fn list(pool: &PgPool) -> sqlx::Result<Vec<PromptVersion>> {
    sqlx::query_as(LIST.as_str()).fetch_all(pool).await
}

/// One version.
pub async fn get(pool: &PgPool, version: i32) -> sqlx::Result<Option<PromptVersion>> {
    sqlx::query_as(GET.as_str())
        .bind(version)
        .fetch_optional(pool)
        .await
}

/// The version a user names: a number, or the newest version of a name.
pub async fn resolve(pool: &PgPool, name_or_version: &str) -> sqlx::Result<Option<i32>> {
    if let Ok(version) = name_or_version.trim().parse::<i32>() {
        return Ok((version == 0 || get(pool, version).await?.is_some()).then_some(version));
    }
    sqlx::query_scalar("SELECT max(version) FROM prompt_versions WHERE name = $1")
        .bind(name_or_version)
        .fetch_one(pool)
        .await
}

/// Makes `version` the active prompt of new LLM runs (0: the built-in
/// one), in one statement: the previous active version is deactivated.
pub async fn activate(pool: &PgPool, version: i32) -> sqlx::Result<()> {
    let mut tx = pool.begin().await?;
    sqlx::query("UPDATE prompt_versions SET active = false WHERE active AND version <> $1")
        .bind(version)
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "UPDATE prompt_versions SET active = true, activated_at = now()
         WHERE version = $1 AND NOT active",
    )
    .bind(version)
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}

/// Sets the share of new LLM runs sent to `version`; refused (returning
/// the other versions' total) when all ratios would add up past 1.
pub async fn set_ratio(pool: &PgPool, version: i32, ratio: f64) -> sqlx::Result<Result<(), f64>> {
    let mut tx = pool.begin().await?;
    // Two concurrent changes cannot both pass the check.
    sqlx::query("LOCK TABLE prompt_versions IN SHARE ROW EXCLUSIVE MODE")
        .execute(&mut *tx)
        .await?;
    let others: f64 = sqlx::query_scalar(
        "SELECT coalesce(sum(ratio), 0)::float8 FROM prompt_versions WHERE version <> $1",
    )
    .bind(version)
    .fetch_one(&mut *tx)
    .await?;
    if others + ratio > 1.0 + 1e-9 {
        return Ok(Err(others));
    }
    sqlx::query("UPDATE prompt_versions SET ratio = $2 WHERE version = $1")
        .bind(version)
        .bind(ratio as f32)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(Ok(()))
}

/// The versions on trial and the active one (what workers draw from).
pub async fn rollout(pool: &PgPool) -> sqlx::Result<Rollout> {
    let rows: Vec<(i32, f32, bool)> = sqlx::query_as(
        "SELECT version, ratio, active FROM prompt_versions WHERE ratio > 0 OR active
         ORDER BY version",
    )
    .fetch_all(pool)
    .await?;
    Ok(Rollout {
        trials: rows
            .iter()
            .filter(|(_, ratio, _)| *ratio > 0.0)
            .map(|&(v, ratio, _)| (v, f64::from(ratio)))
            .collect(),
        active: rows.iter().find(|r| r.2).map_or(0, |r| r.0),
    })
}

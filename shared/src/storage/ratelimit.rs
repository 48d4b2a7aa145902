//! `llm_slots`: the LLM's concurrent calls shared by all workers;
//! `rate_limit_requests`: sliding windows of requests (the LLM's per minute,
//! each tool's `TOOL_RATE_LIMITS`);
//! `api_rate_limits`: outbound APIs (GitHub, Jenkins) blocked by their own limit.

use std::time::Duration;

use sqlx::PgPool;

/// Takes a free concurrent-call slot (one of `max`) for `holder` until
/// `ttl` passes; `None` when all are busy. Expired slots count as free.
pub async fn acquire_slot(
    pool: &PgPool,
    max: i32,
    holder: &str,
    ttl: Duration,
) -> sqlx::Result<Option<i32>> {
    sqlx::query(
        "INSERT INTO llm_slots (slot) SELECT generate_series(0, $1 - 1) ON CONFLICT DO NOTHING",
    )
    .bind(max)
    .execute(pool)
    .await?;
    sqlx::query_scalar(
        "UPDATE llm_slots SET holder = $2, expires_at = now() + make_interval(secs => $3)
         WHERE slot = (SELECT slot FROM llm_slots
                       WHERE slot < $1 AND (holder IS NULL OR expires_at < now())
                       ORDER BY slot LIMIT 1 FOR UPDATE SKIP LOCKED)
         RETURNING slot",
    )
    .bind(max)
    .bind(holder)
    .bind(ttl.as_secs_f64())
    .fetch_optional(pool)
    .await
}

/// Frees a slot held by `holder`.
pub async fn release_slot(pool: &PgPool, slot: i32, holder: &str) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE llm_slots SET holder = NULL, expires_at = NULL WHERE slot = $1 AND holder = $2",
    )
    .bind(slot)
    .bind(holder)
    .execute(pool)
    .await?;
    Ok(())
}

/// Records one request under `key` (`llm`, `tool:<name>`) if fewer than
/// `limit` were recorded under it in the last `window` (by any worker);
/// otherwise returns how long until the oldest of them leaves the window.
pub async fn take_request(
    pool: &PgPool,
    key: &str,
    limit: i64,
    window: Duration,
) -> sqlx::Result<Option<Duration>> {
    let window_secs = window.as_secs_f64();
    let mut tx = pool.begin().await?;
    // Serialise the check-and-insert of this key across processes.
    sqlx::query("SELECT pg_advisory_xact_lock(7171002, hashtext($1))")
        .bind(key)
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "DELETE FROM rate_limit_requests
         WHERE key = $1 AND at < now() - make_interval(secs => 2 * $2)",
    )
    .bind(key)
    .bind(window_secs)
    .execute(&mut *tx)
    .await?;
    let (count, wait): (i64, Option<f64>) = sqlx::query_as(
        "SELECT count(*), extract(epoch FROM min(at) + make_interval(secs => $3) - now())::float8
         FROM (SELECT at FROM rate_limit_requests
               WHERE key = $1 AND at > now() - make_interval(secs => $3)
               ORDER BY at DESC LIMIT $2) recent",
    )
    .bind(key)
    .bind(limit)
    .bind(window_secs)
    .fetch_one(&mut *tx)
    .await?;
    if count >= limit {
        tx.rollback().await?;
        return Ok(Some(Duration::from_secs_f64(wait.unwrap_or(1.0).max(0.05))));
    }
    sqlx::query("INSERT INTO rate_limit_requests (key) VALUES ($1)")
        .bind(key)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(None)
}

/// How long an outbound API (`github`, `jenkins`) stays blocked by its own
/// rate limit, as last reported to any worker; `None` when it is open.
pub async fn api_blocked_for(pool: &PgPool, api: &str) -> sqlx::Result<Option<Duration>> {
    let secs: Option<f64> = sqlx::query_scalar(
        "SELECT extract(epoch FROM blocked_until - now())::float8 FROM api_rate_limits
         WHERE api = $1 AND blocked_until > now()",
    )
    .bind(api)
    .fetch_optional(pool)
    .await?;
    Ok(secs.map(|s| Duration::from_secs_f64(s.max(0.0))))
}

/// Blocks `api` for every worker until `until_epoch_secs` (Unix seconds),
/// keeping the later of an existing and the new block.
pub async fn block_api(
    pool: &PgPool,
    api: &str,
    until_epoch_secs: f64,
    reason: &str,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO api_rate_limits (api, blocked_until, reason) VALUES ($1, to_timestamp($2), $3)
         ON CONFLICT (api) DO UPDATE
         SET blocked_until = greatest(api_rate_limits.blocked_until, excluded.blocked_until),
             reason = excluded.reason, updated_at = now()",
    )
    .bind(api)
    .bind(until_epoch_secs)
    .bind(reason)
    .execute(pool)
    .await?;
    Ok(())
}

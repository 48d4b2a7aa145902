//! `worker_sessions`: a worker's liveness, tied to its database session.
//!
//! Each worker process registers its id and takes a session-level advisory
//! lock (`pg_try_advisory_lock(LOCK_SPACE, lock_key)`) on the connection
//! that renews its leases, and keeps it for as long as it lives. Postgres
//! releases the lock the moment the process dies (its connection closes),
//! so the reconciler can tell a dead worker from a slow one without waiting
//! for the timed lease: [`mark_absent`] notes when a session's lock went
//! missing, and [`runs::reconcile_dead_sessions`](super::runs::reconcile_dead_sessions)
//! takes over the runs of a worker whose lock has been missing for a short
//! grace. The timed lease stays the fence (every write checks owner and
//! epoch) and the fallback for a worker that hangs with its session open.

use sqlx::{PgConnection, PgPool};

/// The first key of every worker's advisory lock ('FLTS'), so that the
/// locks cannot be mistaken for another application's.
pub const LOCK_SPACE: i32 = 0x464c_5453;

/// Registers `owner` (once per connection) and returns its lock key.
pub async fn register(conn: &mut PgConnection, owner: &str) -> sqlx::Result<i32> {
    sqlx::query_scalar(
        "INSERT INTO worker_sessions (owner) VALUES ($1)
         ON CONFLICT (owner) DO UPDATE SET owner = excluded.owner
         RETURNING lock_key",
    )
    .bind(owner)
    .fetch_one(conn)
    .await
}

/// Tries to take `owner`'s lock (`key`) on `conn`, where it lasts as long as
/// the connection; false while another session holds it (a predecessor
/// with the same id whose connection Postgres has not closed yet, or a
/// second live process with the same id): the caller tries again.
pub async fn try_hold(conn: &mut PgConnection, owner: &str, key: i32) -> sqlx::Result<bool> {
    let held: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, $2)")
        .bind(LOCK_SPACE)
        .bind(key)
        .fetch_one(&mut *conn)
        .await?;
    if held {
        sqlx::query("UPDATE worker_sessions SET absent_since = NULL WHERE owner = $1")
            .bind(owner)
            .execute(&mut *conn)
            .await?;
    }
    Ok(held)
}

/// Called once when a worker process starts, before it claims anything:
/// runs still leased to `owner` belong to an earlier process with the same
/// id (a restarted container keeps its hostname and pid 1), so their
/// leases are expired at once for the reconciler to take over. Returns how
/// many. (Done later, once the session lock is held, it would also expire
/// the leases this process had claimed meanwhile.)
pub async fn expire_predecessor(pool: &PgPool, owner: &str) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "UPDATE analysis_runs SET lease_expires_at = now()
         WHERE status = 'running' AND lease_owner = $1",
    )
    .bind(owner)
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}

/// Notes, for every registered worker, whether its lock is held: a session
/// whose lock is missing gets `absent_since` (kept from the first pass that
/// saw it missing), one whose lock is back loses it. Returns how many
/// sessions are absent and still within `grace` (the reconciler looks again
/// sooner while there are any).
pub async fn mark_absent(pool: &PgPool, grace: std::time::Duration) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "WITH state AS (
             SELECT s.owner, EXISTS (
                 SELECT 1 FROM pg_locks l
                 WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                   AND l.classid = $1::oid AND l.objid = s.lock_key::oid) AS held
             FROM worker_sessions s),
         changed AS (
             UPDATE worker_sessions s
             SET absent_since = CASE WHEN state.held THEN NULL ELSE now() END
             FROM state
             WHERE s.owner = state.owner AND state.held = (s.absent_since IS NOT NULL)
             RETURNING s.absent_since)
         SELECT (SELECT count(*) FROM changed WHERE absent_since IS NOT NULL)
              + (SELECT count(*) FROM worker_sessions s JOIN state USING (owner)
                 WHERE NOT state.held AND s.absent_since > now() - make_interval(secs => $2))",
    )
    .bind(LOCK_SPACE)
    .bind(grace.as_secs_f64())
    .fetch_one(pool)
    .await
}

/// Forgets sessions absent for over a day that hold no run.
pub async fn prune(pool: &PgPool) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "DELETE FROM worker_sessions s
         WHERE s.absent_since < now() - interval '1 day'
           AND NOT EXISTS (SELECT 1 FROM analysis_runs r
                           WHERE r.status = 'running' AND r.lease_owner = s.owner)",
    )
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}

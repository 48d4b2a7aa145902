//! `baseline_fetches` + `baseline_log_chunks`: the last green log of a
//! failure's job (issue 13), fetched by a worker once per event so that the
//! excerpt can leave out the lines the job also prints when it passes.
//!
//! Like [`super::log_fetches`], the chunks and the row are written in one
//! transaction fenced by the run's lease. A job without a green build (or
//! whose green log could not be read) gets a row with the reason instead,
//! so a resumed run asks neither again.

use serde_json::Value;
use sqlx::{PgPool, Postgres, Transaction};
use uuid::Uuid;

use super::{
    events::{LogKind, LogWriter},
    log_fetches::{lease_held, lock_event},
    runs::Lease,
};

/// What was recorded for an event's baseline.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow, serde::Serialize)]
pub struct BaselineRow {
    pub source: String,
    /// Bytes stored; `None` when there is no baseline.
    pub bytes: Option<i64>,
    pub truncated: bool,
    /// Why there is no baseline.
    pub reason: Option<String>,
    pub detail: Value,
}

/// Reads the baseline recorded for an event, if any.
pub async fn get(pool: &PgPool, event_id: Uuid) -> sqlx::Result<Option<BaselineRow>> {
    sqlx::query_as(
        "SELECT source, bytes, truncated, reason, detail FROM baseline_fetches WHERE event_id = $1",
    )
    .bind(event_id)
    .fetch_optional(pool)
    .await
}

/// An open baseline fetch: chunks are written into `tx` as they arrive.
pub struct Pending {
    tx: Transaction<'static, Postgres>,
    writer: LogWriter,
    event_id: Uuid,
}

/// Starts storing the baseline of `event_id`, keeping head and tail of one
/// longer than `max_bytes`; `None` when another run of the event (a live
/// run and its shadow start together) recorded it meanwhile. The fetch
/// holds the event's baseline lock until it ends, so a second run waits for
/// the first instead of downloading the green log again into chunks that
/// would clash (the same mechanism as the failure's own log,
/// [`super::log_fetches::begin`]).
pub async fn begin(pool: &PgPool, event_id: Uuid, max_bytes: u64) -> sqlx::Result<Option<Pending>> {
    let mut tx = pool.begin().await?;
    if locked_recorded(&mut tx, event_id).await? {
        tx.rollback().await?;
        return Ok(None);
    }
    Ok(Some(Pending {
        tx,
        writer: LogWriter::baseline(event_id, max_bytes),
        event_id,
    }))
}

/// Takes the event's baseline lock in `tx` (held until `tx` ends,
/// [`lock_event`]), then says whether the event's baseline row exists.
async fn locked_recorded(
    tx: &mut Transaction<'static, Postgres>,
    event_id: Uuid,
) -> sqlx::Result<bool> {
    lock_event(tx, LogKind::Baseline, event_id).await?;
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM baseline_fetches WHERE event_id = $1)")
        .bind(event_id)
        .fetch_one(&mut **tx)
        .await
}

impl Pending {
    /// Appends a piece of the green log.
    pub async fn write(&mut self, data: &[u8]) -> sqlx::Result<()> {
        self.writer.write(&mut self.tx, data).await
    }

    /// Bytes written so far (before any cut).
    pub fn bytes(&self) -> i64 {
        self.writer.bytes()
    }

    /// Bytes cut from the middle so far.
    pub fn cut(&self) -> i64 {
        self.writer.cut()
    }

    /// Commits the green log and its row if `lease` still holds the run;
    /// false (nothing stored) when it was taken over. (No other run of the
    /// event can have stored one: [`begin`]'s lock is held until here.)
    pub async fn commit(self, lease: &Lease, source: &str, detail: &Value) -> sqlx::Result<bool> {
        let Pending {
            mut tx,
            writer,
            event_id,
        } = self;
        let truncated = writer.cut() > 0;
        let bytes = writer.finish(&mut tx).await?;
        let row = Row {
            event_id,
            source,
            bytes: Some(bytes),
            reason: None,
            truncated,
            detail,
        };
        commit_row(tx, lease, row).await
    }
}

/// Records that the event has no baseline, and why, if `lease` still holds
/// the run and no other run of the event recorded its baseline meanwhile
/// (under the event's baseline lock); false only when the run was taken
/// over.
pub async fn record_none(
    pool: &PgPool,
    lease: &Lease,
    event_id: Uuid,
    source: &str,
    reason: &str,
    detail: &Value,
) -> sqlx::Result<bool> {
    let row = Row {
        event_id,
        source,
        bytes: None,
        reason: Some(reason),
        truncated: false,
        detail,
    };
    let mut tx = pool.begin().await?;
    if locked_recorded(&mut tx, event_id).await? {
        tx.rollback().await?;
        return Ok(true);
    }
    commit_row(tx, lease, row).await
}

/// The `baseline_fetches` row of an event: the bytes stored, or the reason
/// there are none.
struct Row<'a> {
    event_id: Uuid,
    source: &'a str,
    bytes: Option<i64>,
    reason: Option<&'a str>,
    truncated: bool,
    detail: &'a Value,
}

/// Inserts `row` and commits `tx` if `lease` still holds the run; rolls
/// back (false) when it was taken over or the event has a row already.
async fn commit_row(
    mut tx: Transaction<'static, Postgres>,
    lease: &Lease,
    row: Row<'_>,
) -> sqlx::Result<bool> {
    if !lease_held(&mut tx, lease).await? || !insert(&mut tx, lease, &row).await? {
        tx.rollback().await?;
        return Ok(false);
    }
    tx.commit().await?;
    Ok(true)
}

/// Inserts the event's baseline row; false if it has one already.
async fn insert(
    tx: &mut Transaction<'static, Postgres>,
    lease: &Lease,
    row: &Row<'_>,
) -> sqlx::Result<bool> {
    let inserted = sqlx::query(
        "INSERT INTO baseline_fetches
             (event_id, run_id, source, bytes, truncated, reason, detail, worker_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (event_id) DO NOTHING",
    )
    .bind(row.event_id)
    .bind(lease.run_id)
    .bind(row.source)
    .bind(row.bytes)
    .bind(row.truncated)
    .bind(row.reason)
    .bind(row.detail)
    .bind(&lease.owner)
    .execute(&mut **tx)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

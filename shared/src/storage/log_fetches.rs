//! `log_fetches`: logs a worker fetched from the CI system after the event
//! arrived without one (issue 5). The log's chunks, its size on the event and
//! this row are written in one transaction fenced by the run's lease, so a
//! fetch either happened once, for good, or not at all.

use serde_json::Value;
use sqlx::{PgConnection, PgPool, Postgres, Transaction};
use uuid::Uuid;

use super::{
    baselines::BaselineRow,
    events::{LogKind, LogWriter},
    runs::Lease,
};

/// What a fetch stored.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow, serde::Serialize)]
pub struct Fetched {
    pub source: String,
    pub bytes: i64,
    pub truncated: bool,
    pub detail: Value,
}

/// What a run's first iteration decides its fetches by, read in one
/// statement: the event's payload, the log fetch and the baseline recorded
/// for it (if any).
#[derive(Debug, Clone, Default)]
pub struct Sources {
    pub payload: Value,
    pub log: Option<Fetched>,
    pub baseline: Option<BaselineRow>,
}

/// The row [`sources`] reads: the event's payload, and the columns of its
/// log fetch (`f_`) and baseline (`b_`), null where none is recorded.
#[derive(sqlx::FromRow)]
struct SourcesRow {
    payload: Value,
    f_source: Option<String>,
    f_bytes: Option<i64>,
    f_truncated: Option<bool>,
    f_detail: Option<Value>,
    b_source: Option<String>,
    b_bytes: Option<i64>,
    b_truncated: Option<bool>,
    b_reason: Option<String>,
    b_detail: Option<Value>,
}

/// Reads an event's [`Sources`] (all empty if the event is gone).
pub async fn sources(pool: &PgPool, event_id: Uuid) -> sqlx::Result<Sources> {
    let row: Option<SourcesRow> = sqlx::query_as(
        "SELECT e.payload, f.source AS f_source, f.bytes AS f_bytes,
                f.truncated AS f_truncated, f.detail AS f_detail,
                b.source AS b_source, b.bytes AS b_bytes, b.truncated AS b_truncated,
                b.reason AS b_reason, b.detail AS b_detail
         FROM failure_events e
         LEFT JOIN log_fetches f ON f.event_id = e.id
         LEFT JOIN baseline_fetches b ON b.event_id = e.id
         WHERE e.id = $1",
    )
    .bind(event_id)
    .fetch_optional(pool)
    .await?;
    let Some(row) = row else {
        return Ok(Sources::default());
    };
    Ok(Sources {
        payload: row.payload,
        log: row.f_source.map(|source| Fetched {
            source,
            bytes: row.f_bytes.unwrap_or_default(),
            truncated: row.f_truncated.unwrap_or_default(),
            detail: row.f_detail.unwrap_or_default(),
        }),
        baseline: row.b_source.map(|source| BaselineRow {
            source,
            bytes: row.b_bytes,
            truncated: row.b_truncated.unwrap_or_default(),
            reason: row.b_reason,
            detail: row.b_detail.unwrap_or_default(),
        }),
    })
}

/// Reads the fetch recorded for an event, if any.
pub async fn get(pool: &PgPool, event_id: Uuid) -> sqlx::Result<Option<Fetched>> {
    sqlx::query_as("SELECT source, bytes, truncated, detail FROM log_fetches WHERE event_id = $1")
        .bind(event_id)
        .fetch_optional(pool)
        .await
}

/// An open fetch: log chunks are written into `tx` as they arrive.
pub struct Pending {
    pub tx: Transaction<'static, Postgres>,
    pub writer: LogWriter,
    event_id: Uuid,
}

/// Starts storing a fetched log for `event_id`, keeping head and tail of
/// one longer than `max_bytes`; `None` when another run of the event (a
/// live run and its shadow start together) stored it meanwhile. The fetch
/// holds the event's lock until it commits, so a second run waits for the
/// first instead of downloading the log again into chunks that would clash.
pub async fn begin(pool: &PgPool, event_id: Uuid, max_bytes: u64) -> sqlx::Result<Option<Pending>> {
    let mut tx = pool.begin().await?;
    lock_event(&mut tx, LogKind::Failure, event_id).await?;
    let fetched: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM log_fetches WHERE event_id = $1)")
            .bind(event_id)
            .fetch_one(&mut *tx)
            .await?;
    if fetched {
        tx.rollback().await?;
        return Ok(None);
    }
    Ok(Some(Pending {
        tx,
        writer: LogWriter::capped(event_id, max_bytes),
        event_id,
    }))
}

/// Takes the lock of an event's fetch of `kind` (its log, or its last green
/// log) in `conn`'s transaction, held until that ends: the runs of one
/// event (a live run and its shadow) fetch one at a time. The caller reads
/// whether the fetch is recorded after this, in a statement of its own, so
/// the read sees what the lock's previous holder committed.
pub(super) async fn lock_event(
    conn: &mut PgConnection,
    kind: LogKind,
    event_id: Uuid,
) -> sqlx::Result<()> {
    let fetch = match kind {
        LogKind::Failure => "log_fetch",
        LogKind::Baseline => "baseline_fetch",
    };
    sqlx::query(
        "SELECT pg_advisory_xact_lock(hashtextextended('faultline_' || $1 || ':' || $2::text, 0))",
    )
    .bind(fetch)
    .bind(event_id)
    .execute(conn)
    .await?;
    Ok(())
}

impl Pending {
    /// Appends a piece of the log.
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

    /// Commits the log and the fetch record if `lease` still holds the run;
    /// false (nothing stored) when it was taken over or another worker's
    /// fetch won.
    pub async fn commit(self, lease: &Lease, source: &str, detail: &Value) -> sqlx::Result<bool> {
        let Pending {
            mut tx,
            writer,
            event_id,
        } = self;
        let truncated = writer.cut() > 0;
        let bytes = writer.finish(&mut tx).await?;
        if !lease_held(&mut tx, lease).await? {
            tx.rollback().await?;
            return Ok(false);
        }
        let inserted = sqlx::query(
            "INSERT INTO log_fetches (event_id, run_id, source, bytes, truncated, detail, worker_id)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (event_id) DO NOTHING",
        )
        .bind(event_id)
        .bind(lease.run_id)
        .bind(source)
        .bind(bytes)
        .bind(truncated)
        .bind(detail)
        .bind(&lease.owner)
        .execute(&mut *tx)
        .await?;
        if inserted.rows_affected() == 0 {
            tx.rollback().await?;
            return Ok(false);
        }
        tx.commit().await?;
        Ok(true)
    }
}

/// Whether `lease` still holds its running run, locking the run's row until
/// the transaction ends (the fence of every fetched log).
pub(super) async fn lease_held(conn: &mut PgConnection, lease: &Lease) -> sqlx::Result<bool> {
    let held: Option<i32> = sqlx::query_scalar(
        "SELECT 1 FROM analysis_runs
         WHERE id = $1 AND lease_owner = $2 AND lease_epoch = $3 AND (status = 'running') IS TRUE
         FOR UPDATE",
    )
    .bind(lease.run_id)
    .bind(&lease.owner)
    .bind(lease.epoch)
    .fetch_optional(conn)
    .await?;
    Ok(held.is_some())
}

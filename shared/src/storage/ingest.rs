//! Ingest: a new event, its log, its run and the run's first step task in
//! **one** transaction (docs/architecture.md, steps 1–2). Above both
//! [`events`] and [`runs`], so neither needs the other's writer.

use sqlx::{PgPool, Row};
use tokio::io::AsyncRead;
use uuid::Uuid;

use super::{
    events::{CHUNK_BYTES, LogWriter, NewEvent, read_full},
    runs::{self, RunLimits},
};
use crate::queue::{AfterCommit, Broker};

/// What ingest did: `created` is false when the dedup key was already known
/// and the existing run is returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ingested {
    pub event_id: Uuid,
    pub run_id: Uuid,
    pub created: bool,
}

/// Stores a new event with its log, creates its run and pushes the first step
/// task, atomically. A known dedup key stores nothing and returns the run
/// already made for it. Its span is the root of the run's trace.
#[tracing::instrument(
    name = "ingest",
    skip_all,
    fields(source = %event.source, run_id = tracing::field::Empty, created = tracing::field::Empty),
    err
)]
pub async fn ingest<R: AsyncRead + Unpin>(
    pool: &PgPool,
    broker: &Broker,
    event: &NewEvent,
    mut log: R,
    limits: RunLimits,
) -> anyhow::Result<Ingested> {
    let mut tx = pool.begin().await?;
    let event_id = Uuid::now_v7();
    let inserted = sqlx::query(
        "INSERT INTO failure_events
             (id, dedup_key, source, job_name, build_number, test_name, repository, commit_sha, log_name, payload, content_key)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         ON CONFLICT DO NOTHING
         RETURNING id",
    )
    .bind(event_id)
    .bind(&event.dedup_key)
    .bind(&event.source)
    .bind(&event.job_name)
    .bind(&event.build_number)
    .bind(&event.test_name)
    .bind(&event.repository)
    .bind(&event.commit_sha)
    .bind(&event.log_name)
    .bind(&event.payload)
    .bind(&event.content_key)
    .fetch_optional(&mut *tx)
    .await?;

    if inserted.is_none() {
        tx.rollback().await?;
        let row = sqlx::query(
            "SELECT e.id AS event_id, r.id AS run_id
             FROM failure_events e JOIN analysis_runs r ON r.event_id = e.id
             WHERE (e.dedup_key = $1 OR e.content_key = $2) AND r.shadow_of IS NULL
             ORDER BY e.received_at ASC, r.created_at ASC LIMIT 1",
        )
        .bind(&event.dedup_key)
        .bind(&event.content_key)
        .fetch_one(pool)
        .await?;
        let ingested = Ingested {
            event_id: row.get("event_id"),
            run_id: row.get("run_id"),
            created: false,
        };
        record_ingested(&ingested);
        return Ok(ingested);
    }

    // Stream the log into compressed chunks: bounded memory for any size.
    let mut writer = LogWriter::new(event_id);
    let mut buf = vec![0u8; CHUNK_BYTES];
    loop {
        let filled = read_full(&mut log, &mut buf).await?;
        if filled == 0 {
            break;
        }
        writer.write(&mut tx, &buf[..filled]).await?;
        if filled < buf.len() {
            break;
        }
    }
    writer.finish(&mut tx).await?;

    let mut after = AfterCommit::new(broker);
    let run_id = runs::create_in_tx(&mut tx, &mut after, event_id, limits).await?;
    tx.commit().await?;
    after.flush().await;
    let ingested = Ingested {
        event_id,
        run_id,
        created: true,
    };
    record_ingested(&ingested);
    Ok(ingested)
}

/// Names the run on the ingest span (and so in the trace and JSON logs).
fn record_ingested(ingested: &Ingested) {
    let span = tracing::Span::current();
    span.record("run_id", tracing::field::display(ingested.run_id));
    span.record("created", ingested.created);
}

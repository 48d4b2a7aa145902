//! `failure_events` and their logs. Ingest writes the event, its log, the
//! run and the run's first step task in **one** transaction (DESIGN step 1–2).

use std::io::{self, BufRead, Read, Write};

use flate2::{Compression, read::GzDecoder, write::GzEncoder};
use serde_json::Value;
use sha2::{Digest, Sha256};
use sqlx::{PgPool, Row};
use tokio::io::{AsyncRead, AsyncReadExt};
use uuid::Uuid;

/// Size of one stored log chunk before compression.
pub const CHUNK_BYTES: usize = 1 << 20;

/// An event as received from a CI system, the CLI or the API.
#[derive(Debug, Clone, Default)]
pub struct NewEvent {
    pub dedup_key: String,
    pub source: String,
    pub job_name: Option<String>,
    pub build_number: Option<String>,
    pub test_name: Option<String>,
    pub repository: Option<String>,
    pub commit_sha: Option<String>,
    pub log_name: Option<String>,
    pub payload: Value,
}

/// Limits copied onto every new run, so a run keeps the bounds it started with.
#[derive(Debug, Clone, Copy)]
pub struct RunLimits {
    pub max_iterations: i32,
    pub max_attempts: i32,
    pub priority: i32,
}

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
/// already made for it.
pub async fn ingest<R: AsyncRead + Unpin>(
    pool: &PgPool,
    event: &NewEvent,
    mut log: R,
    limits: RunLimits,
) -> anyhow::Result<Ingested> {
    let mut tx = pool.begin().await?;
    let event_id = Uuid::now_v7();
    let inserted = sqlx::query(
        "INSERT INTO failure_events
             (id, dedup_key, source, job_name, build_number, test_name, repository, commit_sha, log_name, payload)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (dedup_key) DO NOTHING
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
    .fetch_optional(&mut *tx)
    .await?;

    if inserted.is_none() {
        tx.rollback().await?;
        let row = sqlx::query(
            "SELECT e.id AS event_id, r.id AS run_id
             FROM failure_events e JOIN analysis_runs r ON r.event_id = e.id
             WHERE e.dedup_key = $1
             ORDER BY r.created_at ASC LIMIT 1",
        )
        .bind(&event.dedup_key)
        .fetch_one(pool)
        .await?;
        return Ok(Ingested {
            event_id: row.get("event_id"),
            run_id: row.get("run_id"),
            created: false,
        });
    }

    // Stream the log into compressed chunks: bounded memory for any size.
    let mut hasher = Sha256::new();
    let mut total: i64 = 0;
    let mut seq: i32 = 0;
    let mut buf = vec![0u8; CHUNK_BYTES];
    loop {
        let filled = read_full(&mut log, &mut buf).await?;
        if filled == 0 {
            break;
        }
        let chunk = &buf[..filled];
        hasher.update(chunk);
        total += filled as i64;
        sqlx::query("INSERT INTO event_log_chunks (event_id, seq, data_gz) VALUES ($1, $2, $3)")
            .bind(event_id)
            .bind(seq)
            .bind(gzip(chunk)?)
            .execute(&mut *tx)
            .await?;
        seq += 1;
        if filled < buf.len() {
            break;
        }
    }
    sqlx::query("UPDATE failure_events SET log_bytes = $2, log_sha256 = $3 WHERE id = $1")
        .bind(event_id)
        .bind(total)
        .bind(hex(&hasher.finalize()))
        .execute(&mut *tx)
        .await?;

    let run_id = super::runs::create_in_tx(&mut tx, event_id, limits).await?;
    tx.commit().await?;
    Ok(Ingested {
        event_id,
        run_id,
        created: true,
    })
}

/// Fills `buf` as far as the reader allows; returns the bytes read (0 at EOF).
async fn read_full<R: AsyncRead + Unpin>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        let n = r.read(&mut buf[filled..]).await?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    Ok(filled)
}

fn gzip(data: &[u8]) -> io::Result<Vec<u8>> {
    let mut enc = GzEncoder::new(Vec::with_capacity(data.len() / 4), Compression::fast());
    enc.write_all(data)?;
    enc.finish()
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The stored metadata of an event.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct EventRow {
    pub id: Uuid,
    pub dedup_key: String,
    pub source: String,
    pub job_name: Option<String>,
    pub build_number: Option<String>,
    pub test_name: Option<String>,
    pub repository: Option<String>,
    pub commit_sha: Option<String>,
    pub log_name: Option<String>,
    pub log_bytes: i64,
    pub received_at: chrono::DateTime<chrono::Utc>,
}

/// Reads one event's metadata.
pub async fn get(pool: &PgPool, id: Uuid) -> sqlx::Result<Option<EventRow>> {
    sqlx::query_as(
        "SELECT id, dedup_key, source, job_name, build_number, test_name, repository, commit_sha,
                log_name, log_bytes, received_at
         FROM failure_events WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(pool)
    .await
}

/// Reads one compressed log chunk.
pub async fn fetch_chunk(pool: &PgPool, event_id: Uuid, seq: i32) -> sqlx::Result<Option<Vec<u8>>> {
    sqlx::query_scalar("SELECT data_gz FROM event_log_chunks WHERE event_id = $1 AND seq = $2")
        .bind(event_id)
        .bind(seq)
        .fetch_optional(pool)
        .await
}

/// A blocking reader over an event's stored log, one chunk in memory at a
/// time. Use it from a blocking thread (`spawn_blocking`): it drives the
/// async queries with `handle.block_on`.
pub struct StoredLogReader {
    pool: PgPool,
    event_id: Uuid,
    handle: tokio::runtime::Handle,
    next_seq: i32,
    chunk: Vec<u8>,
    pos: usize,
    done: bool,
}

impl StoredLogReader {
    pub fn new(pool: PgPool, event_id: Uuid, handle: tokio::runtime::Handle) -> Self {
        Self {
            pool,
            event_id,
            handle,
            next_seq: 0,
            chunk: Vec::new(),
            pos: 0,
            done: false,
        }
    }

    fn refill(&mut self) -> io::Result<()> {
        let fetched = self
            .handle
            .block_on(fetch_chunk(&self.pool, self.event_id, self.next_seq))
            .map_err(io::Error::other)?;
        match fetched {
            None => self.done = true,
            Some(gz) => {
                self.chunk.clear();
                GzDecoder::new(&gz[..]).read_to_end(&mut self.chunk)?;
                self.pos = 0;
                self.next_seq += 1;
            }
        }
        Ok(())
    }
}

impl Read for StoredLogReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for StoredLogReader {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos >= self.chunk.len() && !self.done {
            self.refill()?;
        }
        if self.pos >= self.chunk.len() {
            return Ok(&[]);
        }
        Ok(&self.chunk[self.pos..])
    }

    fn consume(&mut self, amt: usize) {
        self.pos = (self.pos + amt).min(self.chunk.len());
    }
}

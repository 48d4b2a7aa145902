//! `failure_events` and their logs ([`super::ingest`] writes a new event, its
//! log, its run and the run's first step task in one transaction).
//! The same chunked storage holds an event's baseline, the last green log of
//! its job ([`LogKind::Baseline`], written by [`super::baselines`]).

use std::{
    collections::VecDeque,
    io::{self, BufRead, Read, Write},
    sync::LazyLock,
};

use flate2::{Compression, read::GzDecoder, write::GzEncoder};
use serde_json::Value;
use sha2::{Digest, Sha256};
use sqlx::{PgConnection, PgPool};
use tokio::io::{AsyncRead, AsyncReadExt};
use uuid::Uuid;

/// Size of one stored log chunk before compression.
pub const CHUNK_BYTES: usize = 1 << 20;

/// Which of an event's logs: the failure's own, or the baseline (the last
/// green log of the same job). Each has its own chunk table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogKind {
    Failure,
    Baseline,
}

impl LogKind {
    const ALL: [LogKind; 2] = [LogKind::Failure, LogKind::Baseline];

    fn chunks(self) -> &'static str {
        match self {
            LogKind::Failure => "event_log_chunks",
            LogKind::Baseline => "baseline_log_chunks",
        }
    }

    /// The statements on this log's chunk table.
    fn chunk_sql(self) -> &'static ChunkSql {
        static FAILURE: LazyLock<ChunkSql> = LazyLock::new(|| ChunkSql::of(LogKind::Failure));
        static BASELINE: LazyLock<ChunkSql> = LazyLock::new(|| ChunkSql::of(LogKind::Baseline));
        match self {
            LogKind::Failure => &FAILURE,
            LogKind::Baseline => &BASELINE,
        }
    }
}

/// The chunk statements of both logs, named as [`super::built_statements`] lists them.
pub(crate) fn chunk_statements() -> Vec<(String, &'static str)> {
    LogKind::ALL
        .into_iter()
        .flat_map(|kind| {
            let sql = kind.chunk_sql();
            [
                ("insert", &sql.insert),
                ("delete", &sql.delete),
                ("next", &sql.next),
            ]
            .map(|(what, text)| (format!("events::chunk_sql({kind:?}).{what}"), text.as_str()))
        })
        .collect()
}

/// The statements on one chunk table ([`LogKind::chunks`]).
struct ChunkSql {
    /// [`insert_chunk`].
    insert: String,
    /// Drops a chunk from the middle of a capped log ([`LogWriter`]).
    delete: String,
    /// [`next_chunk_of`].
    next: String,
}

impl ChunkSql {
    fn of(kind: LogKind) -> ChunkSql {
        let table = kind.chunks();
        ChunkSql {
            insert: format!("INSERT INTO {table} (event_id, seq, data_gz) VALUES ($1, $2, $3)"),
            delete: format!("DELETE FROM {table} WHERE event_id = $1 AND seq = $2"),
            next: format!(
                "SELECT seq, data_gz,
                        NOT EXISTS (SELECT 1 FROM {table} n WHERE n.event_id = $1 AND n.seq > c.seq)
                 FROM {table} c WHERE event_id = $1 AND seq >= $2
                 ORDER BY seq LIMIT 1"
            ),
        }
    }
}

/// An event as received from a CI system, the CLI or the API.
#[derive(Debug, Clone, Default)]
pub struct NewEvent {
    pub dedup_key: String,
    /// A second identity, from what the source authenticated (GitHub: the
    /// signed repository + run or job id + attempt): an event matching either
    /// key is the same event.
    pub content_key: Option<String>,
    pub source: String,
    pub job_name: Option<String>,
    pub build_number: Option<String>,
    pub test_name: Option<String>,
    pub repository: Option<String>,
    pub commit_sha: Option<String>,
    pub log_name: Option<String>,
    pub payload: Value,
}

/// Fills `buf` as far as the reader allows; returns the bytes read (0 at EOF).
pub(super) async fn read_full<R: AsyncRead + Unpin>(
    r: &mut R,
    buf: &mut [u8],
) -> io::Result<usize> {
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

/// Streams a log into gzip chunks of [`CHUNK_BYTES`] on one connection
/// (a transaction, so a half-written log never becomes visible), hashing as
/// it goes: one chunk in memory for any log size.
///
/// With a cap ([`LogWriter::capped`]) it keeps the head and the tail of a
/// longer log: the first half of the cap is kept, then the oldest chunks
/// after it are deleted as new ones arrive, and a marker chunk saying how
/// much was cut goes into the slot reserved between the two. Readers skip
/// the gaps in `seq` this leaves.
pub struct LogWriter {
    event_id: Uuid,
    kind: LogKind,
    buf: Vec<u8>,
    seq: i32,
    read: i64,
    stored: i64,
    hasher: Sha256,
    cap: Option<Cap>,
}

struct Cap {
    max: i64,
    /// Chunks `0..head` are the head; `head` is reserved for the marker.
    head: i32,
    /// Tail chunks still stored: (seq, bytes).
    tail: VecDeque<(i32, i64)>,
    cut: i64,
}

impl LogWriter {
    pub fn new(event_id: Uuid) -> Self {
        Self {
            event_id,
            kind: LogKind::Failure,
            buf: Vec::with_capacity(CHUNK_BYTES),
            seq: 0,
            read: 0,
            stored: 0,
            hasher: Sha256::new(),
            cap: None,
        }
    }

    /// A writer that stores about `max_bytes` (give or take a chunk) of a
    /// longer log: its head and its tail.
    pub fn capped(event_id: Uuid, max_bytes: u64) -> Self {
        let max = i64::try_from(max_bytes).unwrap_or(i64::MAX);
        Self {
            cap: Some(Cap {
                max,
                head: (max / 2 / CHUNK_BYTES as i64).clamp(1, i64::from(i32::MAX / 2)) as i32,
                tail: VecDeque::new(),
                cut: 0,
            }),
            ..Self::new(event_id)
        }
    }

    /// A capped writer of the event's baseline log instead of its own log.
    pub fn baseline(event_id: Uuid, max_bytes: u64) -> Self {
        Self {
            kind: LogKind::Baseline,
            ..Self::capped(event_id, max_bytes)
        }
    }

    /// Bytes written so far (before any cut).
    pub fn bytes(&self) -> i64 {
        self.read
    }

    /// Bytes cut from the middle so far.
    pub fn cut(&self) -> i64 {
        self.cap.as_ref().map_or(0, |c| c.cut)
    }

    /// Appends `data`, storing every full chunk.
    pub async fn write(&mut self, conn: &mut PgConnection, mut data: &[u8]) -> sqlx::Result<()> {
        while !data.is_empty() {
            let take = (CHUNK_BYTES - self.buf.len()).min(data.len());
            self.buf.extend_from_slice(&data[..take]);
            self.hasher.update(&data[..take]);
            self.read += take as i64;
            data = &data[take..];
            if self.buf.len() == CHUNK_BYTES {
                self.flush(conn).await?;
            }
        }
        Ok(())
    }

    async fn flush(&mut self, conn: &mut PgConnection) -> sqlx::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        if let Some(cap) = &self.cap
            && self.seq == cap.head
        {
            self.seq += 1;
        }
        insert_chunk(conn, self.kind, self.event_id, self.seq, &self.buf).await?;
        let len = self.buf.len() as i64;
        self.stored += len;
        if let Some(cap) = &mut self.cap
            && self.seq > cap.head
        {
            cap.tail.push_back((self.seq, len));
            while self.stored > cap.max && cap.tail.len() > 1 {
                let (seq, len) = cap.tail.pop_front().expect("more than one tail chunk");
                sqlx::query(self.kind.chunk_sql().delete.as_str())
                    .bind(self.event_id)
                    .bind(seq)
                    .execute(&mut *conn)
                    .await?;
                self.stored -= len;
                cap.cut += len;
            }
        }
        self.seq += 1;
        self.buf.clear();
        Ok(())
    }

    /// Stores the last chunk (and the cut marker) and, for the failure's
    /// own log, records the stored log's size and SHA-256 on the event (no
    /// digest for a cut log: it would describe bytes we do not have).
    /// Returns the stored size.
    pub async fn finish(mut self, conn: &mut PgConnection) -> sqlx::Result<i64> {
        self.flush(conn).await?;
        let mut digest = Some(crate::hex(&self.hasher.clone().finalize()));
        if let Some(cap) = self.cap.as_ref().filter(|c| c.cut > 0) {
            let marker = format!(
                "\n[faultline] {} bytes cut from the middle of this log ({} read, {} kept)\n",
                cap.cut, self.read, self.stored
            );
            insert_chunk(conn, self.kind, self.event_id, cap.head, marker.as_bytes()).await?;
            self.stored += marker.len() as i64;
            digest = None;
        }
        if self.kind == LogKind::Baseline {
            return Ok(self.stored);
        }
        sqlx::query("UPDATE failure_events SET log_bytes = $2, log_sha256 = $3 WHERE id = $1")
            .bind(self.event_id)
            .bind(self.stored)
            .bind(digest)
            .execute(&mut *conn)
            .await?;
        Ok(self.stored)
    }
}

async fn insert_chunk(
    conn: &mut PgConnection,
    kind: LogKind,
    event_id: Uuid,
    seq: i32,
    data: &[u8],
) -> sqlx::Result<()> {
    sqlx::query(kind.chunk_sql().insert.as_str())
        .bind(event_id)
        .bind(seq)
        .bind(gzip(data)?)
        .execute(conn)
        .await?;
    Ok(())
}

fn gzip(data: &[u8]) -> io::Result<Vec<u8>> {
    let mut enc = GzEncoder::new(Vec::with_capacity(data.len() / 4), Compression::fast());
    enc.write_all(data)?;
    enc.finish()
}

/// The stored metadata of an event.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
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

/// The columns of [`EventRow`].
pub(crate) const EVENT_COLUMNS: &str = "id, dedup_key, source, job_name, build_number, test_name,
    repository, commit_sha, log_name, log_bytes, received_at";

/// [`get`]'s statement.
pub(crate) static GET: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {EVENT_COLUMNS} FROM failure_events WHERE id = $1"));

/// Reads one event's metadata.
pub async fn get(pool: &PgPool, id: Uuid) -> sqlx::Result<Option<EventRow>> {
    sqlx::query_as(GET.as_str())
        .bind(id)
        .fetch_optional(pool)
        .await
}

/// [`get_with_payload`]'s statement.
pub(crate) static GET_WITH_PAYLOAD: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {EVENT_COLUMNS}, payload FROM failure_events WHERE id = $1"));

/// Reads one event's metadata and its payload in one statement (a page
/// that shows both).
pub async fn get_with_payload(
    pool: &PgPool,
    id: Uuid,
) -> sqlx::Result<Option<(EventRow, Option<Value>)>> {
    #[derive(sqlx::FromRow)]
    struct Row {
        #[sqlx(flatten)]
        event: EventRow,
        payload: Option<Value>,
    }
    let row: Option<Row> = sqlx::query_as(GET_WITH_PAYLOAD.as_str())
        .bind(id)
        .fetch_optional(pool)
        .await?;
    Ok(row.map(|r| (r.event, r.payload)))
}

/// Reads an event's payload (what the CI system sent, minus the log).
pub async fn payload(pool: &PgPool, id: Uuid) -> sqlx::Result<Option<Value>> {
    sqlx::query_scalar("SELECT payload FROM failure_events WHERE id = $1")
        .bind(id)
        .fetch_optional(pool)
        .await
}

/// Reads the first compressed log chunk at or after `seq` of either of an
/// event's logs (a capped log has gaps), with its number and whether it is
/// the last one (so a reader needs no query to find the end).
pub async fn next_chunk_of(
    pool: &PgPool,
    kind: LogKind,
    event_id: Uuid,
    seq: i32,
) -> sqlx::Result<Option<(i32, Vec<u8>, bool)>> {
    sqlx::query_as(kind.chunk_sql().next.as_str())
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
    kind: LogKind,
    event_id: Uuid,
    handle: tokio::runtime::Handle,
    next_seq: i32,
    chunk: Vec<u8>,
    pos: usize,
    done: bool,
}

impl StoredLogReader {
    pub fn new(pool: PgPool, event_id: Uuid, handle: tokio::runtime::Handle) -> Self {
        Self::of(LogKind::Failure, pool, event_id, handle)
    }

    /// A reader of either of an event's logs.
    pub fn of(kind: LogKind, pool: PgPool, event_id: Uuid, handle: tokio::runtime::Handle) -> Self {
        Self {
            pool,
            kind,
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
            .block_on(next_chunk_of(
                &self.pool,
                self.kind,
                self.event_id,
                self.next_seq,
            ))
            .map_err(io::Error::other)?;
        match fetched {
            None => self.done = true,
            Some((seq, gz, last)) => {
                self.chunk.clear();
                GzDecoder::new(&gz[..]).read_to_end(&mut self.chunk)?;
                self.pos = 0;
                self.next_seq = seq + 1;
                self.done = last;
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

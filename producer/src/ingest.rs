//! Submitting logs and waiting for their analyses.

use std::{
    io::{Cursor, Read},
    path::{Path, PathBuf},
    pin::Pin,
    time::Duration,
};

use anyhow::{Context, bail};
use faultline_shared::{
    RunStatus, Settings,
    queue::{Broker, PRIORITY_BULK, PRIORITY_LIVE},
    storage::{
        self, Ingested,
        events::NewEvent,
        runs::{self, FINISHED_CHANNEL, RunLimits, RunRow},
    },
};
use flate2::read::MultiGzDecoder;
use sha2::{Digest, Sha256};
use sqlx::{PgPool, postgres::PgListener};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncSeekExt};
use tokio_util::io::StreamReader;

#[derive(clap::Args, Clone)]
pub struct EnqueueArgs {
    /// The failure log (plain text or gzip; any size, any bytes).
    pub file: PathBuf,
    /// CI job name.
    #[arg(long)]
    pub job: Option<String>,
    /// CI build number.
    #[arg(long)]
    pub build: Option<String>,
    /// Failing test, when known.
    #[arg(long)]
    pub test: Option<String>,
    /// Deduplication key (default: job + build when both are given, else the log's SHA-256).
    #[arg(long)]
    pub dedup_key: Option<String>,
    /// Queue at bulk (low) priority, as nightly reprocessing does.
    #[arg(long)]
    pub bulk: bool,
}

/// Stores the log as an event and creates its run (or finds the existing one).
pub async fn enqueue(
    pool: &PgPool,
    broker: &Broker,
    settings: &Settings,
    args: &EnqueueArgs,
) -> anyhow::Result<Ingested> {
    let path = &args.file;
    let meta = tokio::fs::metadata(path)
        .await
        .with_context(|| format!("cannot read {}", path.display()))?;
    if !meta.is_file() {
        bail!("{} is not a regular file", path.display());
    }
    let dedup_key = match (&args.dedup_key, &args.job, &args.build) {
        (Some(k), _, _) => k.clone(),
        (None, Some(job), Some(build)) => format!("cli:job:{job}:build:{build}"),
        _ => format!("cli:sha256:{}", sha256_file(path).await?),
    };
    let event = NewEvent {
        dedup_key,
        source: "cli".into(),
        job_name: args.job.clone(),
        build_number: args.build.clone(),
        test_name: args.test.clone(),
        log_name: path.file_name().map(|n| n.to_string_lossy().into_owned()),
        payload: serde_json::json!({"path": path.display().to_string()}),
        ..NewEvent::default()
    };
    let limits = RunLimits {
        max_iterations: settings.max_iterations,
        max_attempts: settings.max_attempts,
        priority: if args.bulk {
            PRIORITY_BULK
        } else {
            PRIORITY_LIVE
        },
        shadowed: settings.shadow_reasoner.is_some() && !args.bulk,
    };
    let log = open_log(path)
        .await
        .with_context(|| format!("cannot open {}", path.display()))?;
    storage::ingest(pool, broker, &event, log, limits)
        .await
        .context("failed to store the event")
}

/// The log as it is stored: a gzip file (by its magic bytes) is decompressed,
/// since the worker reads stored logs as text. Decompression runs on a
/// blocking thread and streams through a small channel (bounded memory); a
/// corrupt archive fails the ingest instead of storing a truncated log.
async fn open_log(path: &Path) -> std::io::Result<Pin<Box<dyn AsyncRead + Send>>> {
    let mut file = tokio::fs::File::open(path).await?;
    let mut magic = [0u8; 2];
    let n = file.read(&mut magic).await?;
    file.seek(std::io::SeekFrom::Start(0)).await?;
    if n < 2 || magic != [0x1f, 0x8b] {
        return Ok(Box::pin(tokio::io::BufReader::new(file)));
    }
    let file = file.into_std().await;
    let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<Cursor<Vec<u8>>>>(4);
    tokio::task::spawn_blocking(move || {
        let mut gz = MultiGzDecoder::new(std::io::BufReader::new(file));
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let item = match gz.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => Ok(Cursor::new(buf[..n].to_vec())),
                Err(e) => Err(e),
            };
            let failed = item.is_err();
            if tx.blocking_send(item).is_err() || failed {
                return;
            }
        }
    });
    let chunks = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    Ok(Box::pin(StreamReader::new(chunks)))
}

async fn sha256_file(path: &std::path::Path) -> anyhow::Result<String> {
    let mut file = tokio::fs::File::open(path)
        .await
        .with_context(|| format!("cannot open {}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(faultline_shared::hex(&hasher.finalize()))
}

/// Waits until the run is terminal: woken by NOTIFY, with a poll fallback.
pub async fn wait_for(
    pool: &PgPool,
    run_id: uuid::Uuid,
    timeout: Duration,
) -> anyhow::Result<RunRow> {
    // Listen before the first check so a finish in between is not missed.
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(FINISHED_CHANNEL).await?;
    let deadline = tokio::time::Instant::now() + timeout;
    let mut warned = false;
    let started = tokio::time::Instant::now();
    loop {
        let run = runs::get(pool, run_id)
            .await?
            .with_context(|| format!("run {run_id} not found"))?;
        if run.status.is_terminal() {
            return Ok(run);
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            bail!(
                "run {run_id} is still {} after {}s (is a faultline-worker running?)",
                run.status,
                timeout.as_secs()
            );
        }
        if !warned
            && run.status == RunStatus::Queued
            && run.iteration == 0
            && now - started > Duration::from_secs(15)
        {
            eprintln!(
                "run {run_id} is still queued: is a faultline-worker running against this database?"
            );
            warned = true;
        }
        let wait = (deadline - now).min(Duration::from_secs(2));
        let _ = tokio::time::timeout(wait, listener.recv()).await;
    }
}

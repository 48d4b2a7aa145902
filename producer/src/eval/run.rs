//! Feeding the labelled logs to the workers and collecting the outcomes.
//! Logs are ingested through the same path as `faultline analyze` and kept
//! `window` at a time in flight (enough to fill every worker slot, few
//! enough that an analysis's wall time is its own, not a queue's).

use std::{
    collections::{HashMap, HashSet},
    time::Duration,
};

use anyhow::{Context, bail};
use faultline_shared::{
    Settings,
    queue::Broker,
    storage::{eval, runs::FINISHED_CHANNEL},
};
use indicatif::{ProgressBar, ProgressStyle};
use sqlx::{PgPool, postgres::PgListener};
use tokio::time::Instant;
use uuid::Uuid;

use super::{data::Labelled, scratch::Scratch};
use crate::ingest::{self, EnqueueArgs};

/// How the logs are fed.
pub struct Feed {
    /// Analyses in flight at most.
    pub window: usize,
    /// Give up when no analysis finishes for this long.
    pub stall: Duration,
}

/// Analyses every row; the outcome of row `i` is `outcomes[i]`.
pub async fn analyse(
    scratch: &mut Scratch,
    pool: &PgPool,
    settings: &Settings,
    rows: &[Labelled],
    feed: &Feed,
    label: &str,
) -> anyhow::Result<Vec<eval::Outcome>> {
    let broker = Broker::Postgres;
    // Listen before the first run exists, so no finish is missed.
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(FINISHED_CHANNEL).await?;
    let bar = ProgressBar::new(rows.len() as u64).with_style(
        ProgressStyle::with_template("{prefix}: {pos}/{len} analysed {wide_bar} {elapsed}")
            .expect("a valid template"),
    );
    bar.set_prefix(label.to_string());
    let mut ids: Vec<Uuid> = Vec::with_capacity(rows.len());
    let mut in_flight: HashSet<Uuid> = HashSet::new();
    let mut last_finish = Instant::now();
    loop {
        while in_flight.len() < feed.window && ids.len() < rows.len() {
            let row = &rows[ids.len()];
            let args = EnqueueArgs {
                file: row.path.clone(),
                job: None,
                build: None,
                test: None,
                // Each labelled line is its own analysis, even when two logs are the same.
                dedup_key: Some(format!("eval:{}:{}", ids.len(), row.log)),
                bulk: false,
            };
            let ingested = ingest::enqueue(pool, &broker, settings, &args)
                .await
                .with_context(|| format!("failed to ingest {}", row.log))?;
            ids.push(ingested.run_id);
            in_flight.insert(ingested.run_id);
        }
        if in_flight.is_empty() {
            break;
        }
        scratch.check_workers()?;
        let _ = tokio::time::timeout(Duration::from_millis(500), listener.recv()).await;
        let pending: Vec<Uuid> = in_flight.iter().copied().collect();
        let done = eval::terminal(pool, &pending).await?;
        if !done.is_empty() {
            last_finish = Instant::now();
            bar.inc(done.len() as u64);
        }
        for id in done {
            in_flight.remove(&id);
        }
        if last_finish.elapsed() > feed.stall {
            bail!(
                "{label}: no analysis finished in {} s ({} of {} done; the workers' output is kept)",
                feed.stall.as_secs(),
                ids.len() - in_flight.len(),
                rows.len()
            );
        }
    }
    bar.finish_and_clear();
    let mut by_id: HashMap<Uuid, eval::Outcome> = eval::outcomes(pool, &ids)
        .await?
        .into_iter()
        .map(|o| (o.id, o))
        .collect();
    for o in by_id.values_mut() {
        o.evidence = eval::evidence_of(pool, o.id).await?;
    }
    ids.iter()
        .map(|id| {
            by_id
                .remove(id)
                .with_context(|| format!("run {id} vanished"))
        })
        .collect()
}

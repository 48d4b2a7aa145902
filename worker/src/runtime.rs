//! Running a worker process: the apalis step consumer (LISTEN/NOTIFY wake-ups
//! plus a poll fallback), the lease reconciler, and graceful shutdown.

use std::{sync::Arc, time::Duration};

use apalis::prelude::*;
use apalis_postgres::{Config, PostgresStorage, Pubsub};
use faultline_shared::{
    StepTask,
    queue::STEP_QUEUE,
    storage::{
        runs::{self, Backoff},
        tasks,
    },
};
use tokio::sync::watch;
use tracing::{error, info, warn};

use crate::engine::{Engine, StepOutcome};

/// The apalis handler: one step task. Step failures are recorded in
/// Postgres by the engine, so only an unexpected error (the database is
/// unreachable even for the failure record) is returned to apalis, which
/// then hands the task out again.
async fn handle(task: StepTask, engine: Data<Arc<Engine>>) -> Result<(), BoxDynError> {
    match engine.run_step(task).await {
        Ok(StepOutcome::Stale) => {
            tracing::debug!(run_id = %task.run_id, "stale step task dropped");
            Ok(())
        }
        Ok(_) => Ok(()),
        Err(e) => {
            error!(run_id = %task.run_id, error = %format!("{e:#}"), "step could not be recorded");
            Err(e.into())
        }
    }
}

/// Runs the consumer until `shutdown` flips, rebuilding it after errors
/// (a lost database connection ends an apalis stream).
pub async fn run(engine: Arc<Engine>, mut shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
    let settings = engine.settings.clone();
    let reconciler = tokio::spawn(reconcile_loop(engine.clone(), shutdown.clone()));
    let mut delay = Duration::from_millis(500);
    loop {
        let pool = engine.pool.clone();
        let config = Config::default()
            .queue(STEP_QUEUE)
            .batch_size(settings.worker_concurrency)
            .heartbeat_interval(settings.queue_heartbeat)
            .missed_heartbeats(2);
        let strategy = Strategy::new()
            .stream(Pubsub::new(pool.clone(), STEP_QUEUE.to_string()))
            .interval(settings.poll_interval);
        let backend = PostgresStorage::<StepTask>::new(&pool)
            .with_config(config)
            .poll_with_strategy(strategy);
        let name = format!("{}-{}", engine.worker_id, uuid::Uuid::new_v4().simple());
        let worker = WorkerBuilder::new(name)
            .backend(backend)
            .data(engine.clone())
            .concurrency(settings.worker_concurrency)
            .parallelize(tokio::spawn)
            .build(handle);
        let mut stop = shutdown.clone();
        let signal = async move {
            let _ = stop.wait_for(|s| *s).await;
            Ok::<(), std::io::Error>(())
        };
        match worker.run_until(signal).await {
            Ok(()) if *shutdown.borrow() => break,
            Ok(()) => warn!("step consumer ended; restarting"),
            Err(e) => {
                if *shutdown.borrow() {
                    break;
                }
                warn!(error = %e, "step consumer failed; restarting in {delay:?}");
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = shutdown.wait_for(|s| *s) => break,
        }
        delay = (delay * 2).min(Duration::from_secs(30));
    }
    reconciler.abort();
    info!("worker stopped");
    Ok(())
}

/// Periodically recovers runs whose lease expired (a crashed or hung
/// worker): the attempt counts and the retry is queued (I4).
async fn reconcile_loop(engine: Arc<Engine>, mut shutdown: watch::Receiver<bool>) {
    let backoff = Backoff {
        base: engine.settings.retry_base,
        max: engine.settings.retry_max,
    };
    let mut pass: u64 = 0;
    loop {
        pass += 1;
        // Every ~100 passes, prune step tasks finished over an hour ago.
        if pass % 100 == 1 {
            match tasks::prune_finished(&engine.pool, Duration::from_secs(3600), 10_000).await {
                Ok(0) => {}
                Ok(n) => info!(pruned = n, "pruned finished step tasks"),
                Err(e) => warn!(error = %e, "pruning finished step tasks failed"),
            }
        }
        match runs::reconcile_expired(&engine.pool, backoff, 100).await {
            Ok(0) => {}
            Ok(n) => info!(recovered = n, "re-queued runs whose lease expired"),
            Err(e) => warn!(error = %e, "reconciler pass failed"),
        }
        // Jitter spreads the passes of many workers.
        let jitter = rand::random_range(0.8..1.2);
        let wait = engine.settings.reconcile_interval.mul_f64(jitter);
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
    }
}

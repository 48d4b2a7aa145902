//! Running a worker process: the apalis step consumer of the configured
//! broker (Postgres: LISTEN/NOTIFY wake-ups for new runs, a wake-up of its
//! own after every step, plus a poll fallback; Redis: a
//! live and a bulk queue, polled), the reconciler (expired leases; with
//! Redis also steps missing from the broker), and graceful shutdown.

use std::{sync::Arc, time::Duration};

use apalis::prelude::*;
use apalis_postgres::{Config, PostgresStorage, Pubsub};
use apalis_redis::RedisStorage;
use faultline_shared::{
    StepTask,
    queue::{
        Broker, STEP_QUEUE,
        redis::{RedisBroker, RedisStep, StepCodec},
    },
    storage::{
        runs::{self, Backoff},
        sessions, shadow, tasks,
    },
};
use tokio::sync::watch;
use tracing::{error, info, warn};

use crate::engine::{Engine, StepOutcome};

/// Wakes this process's Postgres consumer to fetch now: a step just ended,
/// so a slot is free, and the step it committed (if any) is waiting in the
/// queue without a NOTIFY (see `runs::commit_step`). Wakes coalesce.
#[derive(Clone)]
struct LocalWake(Option<futures::channel::mpsc::Sender<()>>);

impl LocalWake {
    fn ring(&self) {
        if let Some(tx) = &self.0 {
            // Full means a wake is already pending: nothing to add.
            let _ = tx.clone().try_send(());
        }
    }
}

/// The apalis handler: one step task. Step failures are recorded in
/// Postgres by the engine, so only an unexpected error (the database is
/// unreachable even for the failure record) is returned to apalis, which
/// then hands the task out again.
async fn handle(
    task: StepTask,
    engine: Data<Arc<Engine>>,
    wake: Data<LocalWake>,
) -> Result<(), BoxDynError> {
    let outcome = engine.run_task(task).await;
    wake.ring();
    match outcome {
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

/// The Redis consumer's handler: a task decoded on its own; one that is not
/// a step is dead-lettered with its reason and acknowledged (issue 14), so
/// it neither fails the consumer nor comes back.
async fn handle_redis(
    task: RedisStep,
    engine: Data<Arc<Engine>>,
    wake: Data<LocalWake>,
    config: Data<apalis_redis::Config>,
) -> Result<(), BoxDynError> {
    match task {
        RedisStep::Step(step) => handle(step, engine, wake).await,
        RedisStep::Malformed { reason, data } => {
            warn!(queue = config.queue.as_ref(), %reason, bytes = data.len(),
                "malformed step task dead-lettered");
            if let Broker::Redis(redis) = &engine.broker
                && let Err(e) = redis.dead_letter(&config, &reason, &data).await
            {
                warn!(error = %e, "recording the dead letter failed");
            }
            Ok(())
        }
    }
}

/// Dead-letters the Redis tasks a fetch could not read (bad metadata);
/// returns how many.
async fn quarantine(redis: &RedisBroker) -> usize {
    match redis.quarantine().await {
        Ok(found) => {
            for (queue, id, reason) in &found {
                warn!(%queue, task_id = %id, %reason, "malformed step task dead-lettered");
            }
            found.len()
        }
        Err(e) => {
            warn!(error = %e, "checking Redis for malformed tasks failed");
            0
        }
    }
}

/// Runs the consumer until `shutdown` flips, rebuilding it after errors
/// (a lost database connection ends an apalis stream).
pub async fn run(engine: Arc<Engine>, mut shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
    let reconciler = tokio::spawn(reconcile_loop(engine.clone(), shutdown.clone()));
    let mut delay = Duration::from_millis(500);
    // Tasks left unreadable before this worker started; later ones fail a
    // fetch and are dead-lettered in the error branch below.
    if let Broker::Redis(redis) = &engine.broker {
        quarantine(redis).await;
    }
    loop {
        let consumed = match &engine.broker {
            Broker::Postgres => consume_postgres(&engine, &shutdown).await,
            Broker::Redis(redis) => consume_redis(&engine, redis, &shutdown).await,
        };
        match consumed {
            Ok(()) if *shutdown.borrow() => break,
            Ok(()) => warn!("step consumer ended; restarting"),
            Err(e) => {
                if *shutdown.borrow() {
                    break;
                }
                // A task apalis could not read fails the whole fetch: once
                // it is dead-lettered, the consumer goes on at once.
                if let Broker::Redis(redis) = &engine.broker
                    && quarantine(redis).await > 0
                {
                    warn!(error = %e, "step consumer failed on a malformed task; restarting");
                    delay = Duration::from_millis(500);
                    continue;
                }
                warn!(error = %e, "step consumer failed; restarting in at most {delay:?}");
            }
        }
        // Lost the database (a restart, a failover): start again the moment
        // it answers, not after the backoff (runs taken over meanwhile wait
        // for a consumer). Otherwise the error is ours: back off.
        tokio::select! {
            back = database_back(&engine.pool, delay) => if back {
                delay = Duration::from_millis(500);
                continue;
            },
            _ = shutdown.wait_for(|s| *s) => break,
        }
        delay = (delay * 2).min(Duration::from_secs(30));
    }
    reconciler.abort();
    info!("worker stopped");
    Ok(())
}

/// Waits up to `limit`; true as soon as the database answers after having
/// failed to (probed every 250 ms), false when it answered all along.
async fn database_back(pool: &sqlx::PgPool, limit: Duration) -> bool {
    let end = tokio::time::Instant::now() + limit;
    let mut lost = false;
    loop {
        let up = sqlx::query("SELECT 1").execute(pool).await.is_ok();
        if up && lost {
            return true;
        }
        lost |= !up;
        let now = tokio::time::Instant::now();
        if now >= end {
            return false;
        }
        tokio::time::sleep((end - now).min(Duration::from_millis(250))).await;
    }
}

fn stop_signal(
    shutdown: &watch::Receiver<bool>,
) -> impl Future<Output = Result<(), std::io::Error>> + Send + 'static {
    let mut stop = shutdown.clone();
    async move {
        let _ = stop.wait_for(|s| *s).await;
        Ok(())
    }
}

/// Consumes the Postgres step queue until shutdown or an error.
async fn consume_postgres(
    engine: &Arc<Engine>,
    shutdown: &watch::Receiver<bool>,
) -> Result<(), WorkerError> {
    let settings = &engine.settings;
    let pool = engine.pool.clone();
    let config = Config::default()
        .queue(STEP_QUEUE)
        .batch_size(fetch_batch(settings.worker_concurrency))
        .heartbeat_interval(settings.queue_heartbeat)
        .missed_heartbeats(2);
    let (wake, woken) = futures::channel::mpsc::channel(0);
    let strategy = Strategy::new()
        .stream(Pubsub::new(pool.clone(), STEP_QUEUE.to_string()))
        .stream(woken)
        .interval(settings.poll_interval);
    let backend = PostgresStorage::<StepTask>::new(&pool)
        .with_config(config)
        .poll_with_strategy(strategy);
    WorkerBuilder::new(consumer_name(engine, "pg"))
        .backend(backend)
        .data(engine.clone())
        .data(LocalWake(Some(wake)))
        .concurrency(settings.worker_concurrency)
        .parallelize(tokio::spawn)
        .build(handle)
        .run_until(stop_signal(shutdown))
        .await
}

/// Consumes both Redis queues until shutdown or an error. The live queue
/// gets the configured concurrency, the bulk queue its own smaller share, so
/// bulk tasks never queue in front of live ones.
async fn consume_redis(
    engine: &Arc<Engine>,
    redis: &RedisBroker,
    shutdown: &watch::Receiver<bool>,
) -> Result<(), WorkerError> {
    let settings = &engine.settings;
    let consumer = |config: &apalis_redis::Config, concurrency: usize, kind: &str| {
        let config = config
            .clone()
            .batch_size(fetch_batch(concurrency))
            .heartbeat_interval(settings.queue_heartbeat)
            .missed_heartbeats(2);
        let backend = RedisStorage::<RedisStep>::new(redis.connection())
            .with_config(config.clone())
            .with_codec(StepCodec)
            .poll_with_interval(settings.poll_interval);
        WorkerBuilder::new(consumer_name(engine, kind))
            .backend(backend)
            .data(engine.clone())
            .data(LocalWake(None))
            .data(config)
            .concurrency(concurrency)
            .parallelize(tokio::spawn)
            .build(handle_redis)
            .run_until(stop_signal(shutdown))
    };
    let live = consumer(redis.live_config(), settings.worker_concurrency, "live");
    let bulk = consumer(redis.bulk_config(), settings.bulk_concurrency(), "bulk");
    futures::future::try_join(live, bulk).await.map(drop)
}

/// How many step tasks one fetch takes: half the slots, but at least 4 (or
/// all of them, when fewer). A fetch locks its tasks to this worker until a
/// slot takes them, so a smaller batch lets a run resumed after a crash
/// (queued ahead of new runs) reach a free slot of any worker sooner
/// (chaos, 8 slots: resume p99 8.9 s with batches of 8, 3.8 s with 4); one
/// fetch per task instead would halve the zero-latency throughput (the
/// fetch statement costs ~8 ms), and below 4 it costs small workers too.
fn fetch_batch(concurrency: usize) -> usize {
    (concurrency / 2).max(4).min(concurrency)
}

fn consumer_name(engine: &Engine, kind: &str) -> String {
    format!(
        "{}-{kind}-{}",
        engine.worker_id,
        uuid::Uuid::new_v4().simple()
    )
}

/// Periodically recovers the runs of dead workers: those whose session
/// lock has been gone for the session grace (the process died; retried at
/// once) and those whose lease expired (a hung worker, or one Postgres could
/// not see die); the attempt counts and the retry is queued (I4).
async fn reconcile_loop(engine: Arc<Engine>, mut shutdown: watch::Receiver<bool>) {
    let backoff = Backoff {
        base: engine.settings.retry_base,
        max: engine.settings.retry_max,
    };
    let mut pass: u64 = 0;
    loop {
        pass += 1;
        // Every ~100 passes, prune step tasks finished over an hour ago and
        // sessions gone for a day.
        if pass % 100 == 1 {
            housekeeping(&engine).await;
        }
        let pending = take_over_dead(&engine).await;
        match runs::reconcile_expired(&engine.pool, &engine.broker, backoff, 100).await {
            Ok(0) => {}
            Ok(n) => {
                faultline_shared::metrics::lease_takeovers("lease_expired", n);
                info!(recovered = n, "re-queued runs whose lease expired");
            }
            Err(e) => warn!(error = %e, "reconciler pass failed"),
        }
        // Every ~10 passes, the shadow comparisons no finishing step wrote.
        if pass % 10 == 1 {
            match shadow::compare_pending(&engine.pool, 100).await {
                Ok(written) => written
                    .iter()
                    .for_each(faultline_shared::metrics::shadow_compared),
                Err(e) => warn!(error = %e, "writing pending shadow comparisons failed"),
            }
        }
        if let Broker::Redis(redis) = &engine.broker {
            match requeue_missing(&engine, redis).await {
                Ok(0) => {}
                Ok(n) => info!(requeued = n, "re-pushed steps missing from Redis"),
                Err(e) => warn!(error = %e, "Redis reconciler pass failed"),
            }
        }
        // A session just went missing: look again when its grace is over.
        let interval = if pending {
            engine
                .settings
                .reconcile_interval
                .min(engine.settings.session_grace)
        } else {
            engine.settings.reconcile_interval
        };
        // Jitter spreads the passes of many workers.
        let wait = interval.mul_f64(rand::random_range(0.8..1.2));
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
    }
}

/// Notes which workers' sessions are gone and takes over the runs of those
/// gone for longer than the grace; true while a session is missing but
/// still within its grace.
async fn take_over_dead(engine: &Engine) -> bool {
    let grace = engine.settings.session_grace;
    let pending = match sessions::mark_absent(&engine.pool, grace).await {
        Ok(n) => n > 0,
        Err(e) => {
            warn!(error = %e, "reconciler: reading worker sessions failed");
            return false;
        }
    };
    // Right after a Postgres restart every session is gone for a moment:
    // the workers reconnect (their lease connections are checked every
    // 250 ms); until they have had time to, only a worker already missing
    // before the restart is taken over.
    let after_restart = grace * 5;
    match runs::reconcile_dead_sessions(&engine.pool, &engine.broker, grace, after_restart, 100)
        .await
    {
        Ok(0) => {}
        Ok(n) => {
            faultline_shared::metrics::lease_takeovers("session_ended", n);
            info!(recovered = n, "re-queued the runs of workers that died");
        }
        Err(e) => warn!(error = %e, "reconciler pass failed"),
    }
    pending
}

async fn housekeeping(engine: &Engine) {
    match tasks::prune_finished(&engine.pool, Duration::from_secs(3600), 10_000).await {
        Ok(0) => {}
        Ok(n) => info!(pruned = n, "pruned finished step tasks"),
        Err(e) => warn!(error = %e, "pruning finished step tasks failed"),
    }
    if let Err(e) = sessions::prune(&engine.pool).await {
        warn!(error = %e, "pruning worker sessions failed");
    }
}

/// Redis broker: pushes the step of every run that has waited longer than
/// `requeue_after` and whose task is not waiting in Redis (I6).
async fn requeue_missing(engine: &Engine, redis: &RedisBroker) -> anyhow::Result<usize> {
    let waiting = runs::waiting_steps(&engine.pool, engine.settings.requeue_after, 500).await?;
    if waiting.is_empty() {
        return Ok(0);
    }
    Ok(redis.ensure_queued(&waiting).await?)
}

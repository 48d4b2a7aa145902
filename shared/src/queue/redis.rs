//! The Redis broker (apalis-redis). Live and bulk steps travel on two
//! queues, so a nightly backlog never sits in front of a live analysis; each
//! worker consumes both, the live queue with most of its slots.
//!
//! Every task carries the idempotency key `run_id/iteration/attempt`
//! ([`crate::types::StepTask::key`]): pushing the same step twice (the committer and the
//! reconciler racing) queues it once. Redis holds nothing Postgres does not:
//! [`RedisBroker::ensure_queued`] re-pushes what a FLUSHALL or a restart
//! without persistence lost.
//!
//! `REDIS_URL` carries the connection: `redis://[user:password@]host:port/db`
//! for Redis AUTH (`redis://:password@…`) or an ACL user, `rediss://…` for
//! TLS (rustls; the server certificate is checked against the system roots,
//! `SSL_CERT_FILE` names another CA bundle). A wrong password stops the
//! process at start; the URL is only ever handed to the client, never logged.
//! A task that cannot be read is dead-lettered ([`malformed`]).

mod malformed;

use std::{collections::BTreeMap, sync::LazyLock, time::Duration};

use apalis_core::task::builder::TaskBuilder;
use apalis_redis::{Config, ConnectionManager, RedisTask};
use redis::Script;

use super::{PRIORITY_BULK, PRIORITY_LIVE, Pending, QueueDepth};

pub use self::malformed::{DEAD_LETTER, DEAD_LETTER_CAP, RedisStep, StepCodec};

/// Suffix of the queue of live analyses (priority ≥ [`PRIORITY_LIVE`]),
/// after the namespace (`FAULTLINE_REDIS_NAMESPACE`).
pub const LIVE_QUEUE: &str = "steps-live";
/// Suffix of the queue of bulk reprocessing.
pub const BULK_QUEUE: &str = "steps-bulk";

/// How long an idempotency key outlives its push. Long enough to absorb a
/// racing duplicate; a key that outlived its task is cleared by
/// [`RedisBroker::ensure_queued`] anyway.
const IDEMPOTENCY_TTL: Duration = Duration::from_secs(3600);

/// For each idempotency key (ARGV[4..]), whether its task still waits in
/// Redis: in the active list (ARGV[2]) or the scheduled set (ARGV[3]). The
/// task's status alone is not enough: a task fetched by a worker that was
/// killed can stay "Pending" while sitting in no list. Keys of tasks not
/// waiting are deleted so the caller can push again; returns their 1-based
/// positions.
static MISSING_SCRIPT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local missing = {}
for i = 4, #ARGV do
  local key = ARGV[1] .. ':' .. ARGV[i]
  local id = redis.call('get', key)
  local waiting = false
  if id then
    waiting = redis.call('zscore', ARGV[3], id) ~= false
      or redis.call('lpos', ARGV[2], id) ~= false
  end
  if not waiting then
    if id then redis.call('del', key) end
    table.insert(missing, i - 3)
  end
end
return missing",
    )
});

/// Moves the tasks of the idempotency keys ARGV[2..] (set prefix ARGV[1])
/// to the head of the active list KEYS[1], from the scheduled set KEYS[2]
/// (where apalis-redis parks every new task until a fetch promotes it to
/// the list's tail) or from within the list: the next fetch, which reads
/// the head, takes them. A task already fetched is left alone.
static TO_HEAD_SCRIPT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local moved = 0
for i = #ARGV, 2, -1 do
  local id = redis.call('get', ARGV[1] .. ':' .. ARGV[i])
  if id and (redis.call('zrem', KEYS[2], id) > 0 or redis.call('lrem', KEYS[1], 1, id) > 0) then
    redis.call('lpush', KEYS[1], id)
    moved = moved + 1
  end
end
return moved",
    )
});

/// A connection to the broker plus the two queues' configurations.
#[derive(Clone)]
pub struct RedisBroker {
    conn: ConnectionManager,
    /// `FAULTLINE_REDIS_NAMESPACE`: prefix of every key (dead letters too).
    namespace: String,
    live: Config,
    bulk: Config,
}

impl std::fmt::Debug for RedisBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBroker")
            .field("live", &self.live.queue.as_ref())
            .field("bulk", &self.bulk.queue.as_ref())
            .finish()
    }
}

impl RedisBroker {
    /// Connects (the connection manager reconnects by itself after a Redis restart).
    pub async fn connect(url: &str, namespace: &str) -> Result<Self, apalis_redis::RedisError> {
        let conn = apalis_redis::connect(url).await?;
        let base = Config::default().idempotency_ttl(Some(IDEMPOTENCY_TTL));
        Ok(Self {
            conn,
            namespace: namespace.to_string(),
            live: base.clone().queue(format!("{namespace}-{LIVE_QUEUE}")),
            bulk: base.queue(format!("{namespace}-{BULK_QUEUE}")),
        })
    }

    /// A handle on the shared connection (for consumers).
    pub fn connection(&self) -> ConnectionManager {
        self.conn.clone()
    }

    /// The queue configuration of live steps.
    pub fn live_config(&self) -> &Config {
        &self.live
    }

    /// The queue configuration of bulk steps.
    pub fn bulk_config(&self) -> &Config {
        &self.bulk
    }

    fn config_for(&self, priority: i32) -> &Config {
        if priority >= PRIORITY_LIVE {
            &self.live
        } else {
            &self.bulk
        }
    }

    /// Pushes step tasks, one script call per queue; a step whose
    /// idempotency key is known is skipped by Redis. A step that resumes a
    /// taken-over run ([`super::is_resume`]) and is due goes to the head of
    /// its queue.
    pub async fn push(&self, pending: &[Pending]) -> Result<(), apalis_redis::Error> {
        let now = chrono::Utc::now();
        let mut by_queue: BTreeMap<bool, (Vec<RedisTask>, Vec<String>)> = BTreeMap::new();
        for p in pending {
            let (tasks, ahead) = by_queue.entry(p.priority >= PRIORITY_LIVE).or_default();
            if super::is_resume(p.priority) && p.run_at.is_none_or(|at| at <= now) {
                tasks.push(task(&Pending {
                    run_at: None,
                    ..p.clone()
                }));
                ahead.push(p.step.key());
            } else {
                tasks.push(task(p));
            }
        }
        let mut conn = self.conn.clone();
        for (live, (tasks, ahead)) in by_queue {
            let config = if live { &self.live } else { &self.bulk };
            apalis_redis::queries::push_tasks(&mut conn, config, &tasks).await?;
            if !ahead.is_empty() {
                let mut call = TO_HEAD_SCRIPT.prepare_invoke();
                call.key(config.active_jobs_list())
                    .key(config.scheduled_jobs_set())
                    .arg(config.idempotency_key_set());
                for key in &ahead {
                    call.arg(key);
                }
                let _: i64 = call.invoke_async(&mut conn).await?;
            }
        }
        Ok(())
    }

    /// Pushes every step of `pending` that is not waiting in Redis (lost to
    /// a FLUSHALL, a restart, a crash between commit and push, or fetched by
    /// a worker that died before claiming it). Returns how many were pushed.
    pub async fn ensure_queued(&self, pending: &[Pending]) -> Result<usize, apalis_redis::Error> {
        let mut conn = self.conn.clone();
        let mut missing = Vec::new();
        for live in [true, false] {
            let group: Vec<&Pending> = pending
                .iter()
                .filter(|p| (p.priority >= PRIORITY_LIVE) == live)
                .collect();
            if group.is_empty() {
                continue;
            }
            let config = self.config_for(group[0].priority);
            let mut call = MISSING_SCRIPT.prepare_invoke();
            call.arg(config.idempotency_key_set())
                .arg(config.active_jobs_list())
                .arg(config.scheduled_jobs_set());
            for p in &group {
                call.arg(p.step.key());
            }
            let positions: Vec<usize> = call.invoke_async(&mut conn).await?;
            missing.extend(positions.into_iter().map(|i| group[i - 1].clone()));
        }
        if !missing.is_empty() {
            self.push(&missing).await?;
        }
        Ok(missing.len())
    }

    /// Waiting step tasks of the live and the bulk queue, for the queue-depth
    /// gauge: `ready` is the active list plus scheduled tasks already due
    /// (apalis-redis parks new tasks in the scheduled set until a fetch
    /// promotes them), `scheduled` the ones due later (retries).
    pub async fn depth(&self) -> Result<Vec<QueueDepth>, apalis_redis::RedisError> {
        let mut conn = self.conn.clone();
        let now = chrono::Utc::now().timestamp();
        let mut depths = Vec::with_capacity(2);
        for (priority, config) in [(PRIORITY_LIVE, &self.live), (PRIORITY_BULK, &self.bulk)] {
            let (active, due, later): (i64, i64, i64) = redis::pipe()
                .llen(config.active_jobs_list())
                .zcount(config.scheduled_jobs_set(), "-inf", now)
                .zcount(config.scheduled_jobs_set(), format!("({now}"), "+inf")
                .query_async(&mut conn)
                .await?;
            depths.push(QueueDepth {
                priority,
                ready: active + due,
                scheduled: later,
            });
        }
        Ok(depths)
    }
}

fn task(p: &Pending) -> RedisTask {
    let mut builder = TaskBuilder::new(super::step_args(&p.step))
        .idempotency_key(p.step.key())
        .max_attempts(3);
    if let Some(at) = p.run_at {
        // Whole seconds, rounded up: never before the backoff in Postgres.
        let secs = at.timestamp() + i64::from(at.timestamp_subsec_nanos() > 0);
        builder = builder.run_at_timestamp(secs.max(0) as u64);
    }
    builder.build()
}

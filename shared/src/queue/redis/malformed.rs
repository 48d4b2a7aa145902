//! Malformed tasks in Redis (issue 14, finding 5): a task whose bytes are
//! not a step, or whose metadata apalis-redis cannot read, is dead-lettered
//! with its reason instead of failing the consumer.
//!
//! apalis-redis fails a whole fetch (and so the consumer, which then
//! restarts with a backoff of up to 30 s, again and again) when one task of
//! the batch cannot be decoded. Two guards keep one bad task from stalling
//! the live queue:
//!
//! - [`StepCodec`] decodes each task's bytes on its own: a task that is not
//!   a [`StepTask`] reaches the handler as [`RedisStep::Malformed`], which
//!   dead-letters it and acknowledges it.
//! - [`RedisBroker::quarantine`] moves every task whose metadata a fetch
//!   would choke on (missing or non-numeric `attempts`/`max_attempts`, an
//!   unknown `status`, an id that is not a ULID, no data) out of the
//!   active list, the due part of the scheduled set and the in-flight sets,
//!   into the dead-letter list. The consumer runs it before it starts and
//!   after a failed fetch, and then restarts at once.
//!
//! The dead-letter list (`{namespace}-steps-dead-letter`) holds one JSON
//! object per task, oldest first: `queue`, `id`, `reason`, the first KiB of
//! `data`, `at`. It keeps the newest [`DEAD_LETTER_CAP`] (about 11 MiB at
//! most): a stream of bad tasks cannot grow Redis without bound. What is
//! dropped is logged and counted (`faultline_redis_dead_letters_dropped_total`).

use std::{convert::Infallible, sync::LazyLock};

use apalis_core::backend::codec::Codec;
use apalis_redis::Config;
use redis::Script;
use serde_json::json;

use super::RedisBroker;
use crate::types::StepTask;

/// Suffix of the dead-letter list, after the namespace.
pub const DEAD_LETTER: &str = "steps-dead-letter";

/// Bytes of a malformed task's data kept in its dead letter.
const KEPT_BYTES: usize = 1024;

/// Dead letters kept: the newest ones. Each holds at most [`KEPT_BYTES`] of
/// data, so the list stays near 11 MiB; the oldest are dropped past it.
pub const DEAD_LETTER_CAP: i64 = 10_000;

/// A task read from Redis, decoded on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedisStep {
    Step(StepTask),
    /// Not a step task: why, and the bytes as they were.
    Malformed {
        reason: String,
        data: Vec<u8>,
    },
}

/// The codec of the Redis consumer: JSON like apalis's own, but a task that
/// does not decode is a value ([`RedisStep::Malformed`]), not an error that
/// ends the consumer.
#[derive(Debug, Clone, Copy, Default)]
pub struct StepCodec;

impl Codec<RedisStep> for StepCodec {
    type Error = Infallible;
    type Compact = Vec<u8>;

    fn encode(&self, step: &RedisStep) -> Result<Vec<u8>, Infallible> {
        Ok(match step {
            RedisStep::Step(step) => super::super::step_args(step),
            RedisStep::Malformed { data, .. } => data.clone(),
        })
    }

    fn decode(&self, data: &Vec<u8>) -> Result<RedisStep, Infallible> {
        Ok(match serde_json::from_slice(data) {
            Ok(step) => RedisStep::Step(step),
            Err(e) => RedisStep::Malformed {
                reason: format!("not a step task: {e}"),
                data: data.clone(),
            },
        })
    }
}

/// Moves the tasks a fetch could not read into the dead-letter list, then
/// trims it to its newest ARGV[4] entries.
/// KEYS: active list, scheduled set, workers set, in-flight set prefix,
/// data hash, metadata prefix, dead-letter list. ARGV: now (Unix seconds),
/// queue name, bytes of data kept, cap. Returns the number of entries
/// dropped and the `{id, reason}` pairs.
static QUARANTINE_SCRIPT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local active, scheduled, workers, inflight, data, meta, dead = unpack(KEYS)
local statuses = {Pending=1, Queued=1, Running=1, Done=1, Failed=1, Killed=1}
local function flaw(id)
  if #id ~= 26 or id:find('[^0-9A-Za-z]') then return 'task id is not a ULID' end
  if redis.call('hexists', data, id) == 0 then return 'no task data' end
  local m = redis.call('hmget', meta .. ':' .. id, 'attempts', 'max_attempts', 'status')
  -- apalis reads these as u32 and every field as UTF-8 text.
  local function u32(v)
    v = v and tostring(v)
    return v and #v <= 10 and v:match('^%d+$') and tonumber(v) <= 4294967295
  end
  if not u32(m[1]) then return 'metadata: attempts missing or not a number' end
  if not u32(m[2]) then return 'metadata: max_attempts missing or not a number' end
  local all = redis.call('hgetall', meta .. ':' .. id)
  for i = 1, #all do
    if all[i]:find('[\128-\255]') then return 'metadata: a field is not ASCII text' end
  end
  if not m[3] or not statuses[m[3]] then return 'metadata: status missing or unknown' end
  return nil
end
local found = {}
local function check(id, where)
  local reason = flaw(id)
  if reason then
    local raw = redis.call('hget', data, id)
    redis.call('lrem', active, 0, id)
    redis.call('zrem', scheduled, id)
    if where then redis.call('srem', where, id) end
    redis.call('hdel', data, id)
    redis.call('del', meta .. ':' .. id)
    redis.call('rpush', dead, cjson.encode({queue = ARGV[2], id = id, reason = reason,
      data = raw and string.sub(raw, 1, tonumber(ARGV[3])) or cjson.null, at = tonumber(ARGV[1])}))
    table.insert(found, {id, reason})
  end
end
for _, id in ipairs(redis.call('lrange', active, 0, -1)) do check(id, nil) end
for _, id in ipairs(redis.call('zrangebyscore', scheduled, 0, ARGV[1])) do check(id, nil) end
for _, worker in ipairs(redis.call('zrange', workers, 0, -1)) do
  local set = inflight .. ':' .. worker
  for _, id in ipairs(redis.call('smembers', set)) do check(id, set) end
end
local cap, dropped = tonumber(ARGV[4]), 0
local len = redis.call('llen', dead)
if len > cap then
  redis.call('ltrim', dead, -cap, -1)
  dropped = len - cap
end
return {dropped, found}"#,
    )
});

impl RedisBroker {
    /// The dead-letter list of this namespace.
    pub fn dead_letter_list(&self) -> String {
        format!("{}-{DEAD_LETTER}", self.namespace)
    }

    /// Moves every task of both queues that a fetch could not read into the
    /// dead-letter list; returns `(queue, id, reason)` of each.
    pub async fn quarantine(&self) -> Result<Vec<(String, String, String)>, redis::RedisError> {
        let mut conn = self.conn.clone();
        let now = chrono::Utc::now().timestamp();
        let mut found = Vec::new();
        for config in [&self.live, &self.bulk] {
            let queue = config.queue.as_ref().to_string();
            let (dropped, moved): (i64, Vec<(String, String)>) = QUARANTINE_SCRIPT
                .key(config.active_jobs_list())
                .key(config.scheduled_jobs_set())
                .key(config.workers_set())
                .key(config.inflight_jobs_set())
                .key(config.job_data_hash())
                .key(config.job_meta_hash())
                .key(self.dead_letter_list())
                .arg(now)
                .arg(&queue)
                .arg(KEPT_BYTES)
                .arg(DEAD_LETTER_CAP)
                .invoke_async(&mut conn)
                .await?;
            self.dropped_dead_letters(dropped);
            found.extend(moved.into_iter().map(|(id, why)| (queue.clone(), id, why)));
        }
        Ok(found)
    }

    /// Records a task the handler could not decode in the dead-letter list
    /// (the handler then acknowledges it, so it is not fetched again), and
    /// trims the list to its newest [`DEAD_LETTER_CAP`] entries.
    pub async fn dead_letter(
        &self,
        config: &Config,
        reason: &str,
        data: &[u8],
    ) -> Result<(), redis::RedisError> {
        let kept = String::from_utf8_lossy(&data[..data.len().min(KEPT_BYTES)]).into_owned();
        let entry = json!({
            "queue": config.queue.as_ref().to_string(),
            "reason": reason,
            "data": kept,
            "at": chrono::Utc::now().timestamp(),
        });
        let mut conn = self.conn.clone();
        let list = self.dead_letter_list();
        let (len, ()): (i64, ()) = redis::pipe()
            .atomic()
            .rpush(&list, entry.to_string())
            .ltrim(&list, -(DEAD_LETTER_CAP as isize), -1)
            .query_async(&mut conn)
            .await?;
        self.dropped_dead_letters(len - DEAD_LETTER_CAP);
        Ok(())
    }

    /// Logs and counts the oldest dead letters a trim dropped (if any).
    fn dropped_dead_letters(&self, dropped: i64) {
        if dropped > 0 {
            tracing::warn!(
                list = %self.dead_letter_list(),
                dropped,
                kept = DEAD_LETTER_CAP,
                "dead-letter list full: the oldest entries were dropped"
            );
            crate::metrics::redis_dead_letters_dropped(dropped as u64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_that_is_not_a_step_decodes_to_its_reason() {
        let step = StepTask {
            run_id: uuid::Uuid::nil(),
            iteration: 2,
            attempt: 1,
        };
        let bytes = StepCodec.encode(&RedisStep::Step(step)).unwrap();
        assert_eq!(StepCodec.decode(&bytes).unwrap(), RedisStep::Step(step));
        for bad in [&b"{not json"[..], b"{\"run_id\": 1}", b""] {
            match StepCodec.decode(&bad.to_vec()).unwrap() {
                RedisStep::Malformed { reason, data } => {
                    assert!(reason.starts_with("not a step task"), "{reason}");
                    assert_eq!(data, bad);
                }
                other => panic!("{other:?}"),
            }
        }
    }
}

//! The LLM rate limit shared by every worker process (Postgres-backed):
//! at most `LLM_MAX_CONCURRENT` calls in flight and `LLM_RPM` requests per
//! minute, across all workers. Each HTTP attempt takes a permit first.

use std::time::{Duration, Instant};

use faultline_shared::storage::ratelimit;
use sqlx::PgPool;

use crate::failure::Failure;

#[derive(Clone)]
pub struct SharedLimit {
    pub pool: PgPool,
    pub max_concurrent: Option<i32>,
    pub per_minute: Option<i64>,
    /// Who holds a slot (worker id + a per-call suffix).
    pub holder: String,
    /// A crashed holder's slot frees itself after this long.
    pub slot_ttl: Duration,
    /// Longest wait for a permit before the step is retried later.
    pub max_wait: Duration,
}

/// A held concurrency slot; hand it back with [`SharedLimit::release`].
pub struct Permit {
    slot: Option<(i32, String)>,
}

impl SharedLimit {
    /// Waits for a request token and a concurrency slot.
    pub async fn acquire(&self) -> Result<Permit, Failure> {
        let started = Instant::now();
        let transient = |message: String| Failure::transient(message);
        let db = |e: sqlx::Error| transient(format!("rate limit: {e}"));
        let holder = format!("{}:{}", self.holder, uuid::Uuid::new_v4().simple());
        let mut slot = None;
        loop {
            if slot.is_none() {
                slot = match self.max_concurrent {
                    None => Some(None),
                    Some(max) => ratelimit::acquire_slot(&self.pool, max, &holder, self.slot_ttl)
                        .await
                        .map_err(db)?
                        .map(Some),
                };
            }
            let waited = started.elapsed();
            if let Some(s) = slot {
                match self.per_minute {
                    None => {
                        return Ok(Permit {
                            slot: s.map(|n| (n, holder)),
                        });
                    }
                    Some(rpm) => {
                        match ratelimit::take_request(
                            &self.pool,
                            "llm",
                            rpm,
                            Duration::from_secs(60),
                        )
                        .await
                        .map_err(db)?
                        {
                            None => {
                                return Ok(Permit {
                                    slot: s.map(|n| (n, holder)),
                                });
                            }
                            Some(wait) if waited + wait < self.max_wait => {
                                // Hold nobody else up while we wait for the window.
                                if let Some(n) = s {
                                    ratelimit::release_slot(&self.pool, n, &holder)
                                        .await
                                        .map_err(db)?;
                                }
                                slot = None;
                                tokio::time::sleep(wait).await;
                                continue;
                            }
                            Some(_) => {}
                        }
                    }
                }
            }
            if waited >= self.max_wait {
                return Err(transient(format!(
                    "rate limit: no permit within {:?}",
                    self.max_wait
                )));
            }
            // Slots free up as calls finish; poll briefly.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn release(&self, permit: Permit) {
        if let Some((slot, holder)) = permit.slot
            && let Err(e) = ratelimit::release_slot(&self.pool, slot, &holder).await
        {
            tracing::warn!(error = %e, "could not release an LLM slot; it expires by itself");
        }
    }
}

//! How long a statement waits for a database connection: every 250 ms a
//! probe records the pool's connections in use and idle
//! (`faultline_db_pool_connections`) and the wait a statement would see
//! (`faultline_db_pool_wait_seconds`): none with an idle connection, and,
//! when the pool is full and all its connections are in use, the time the
//! probe itself waits for one. It never opens a connection. A pool
//! too small for the concurrency shows here first, before leases or steps
//! suffer.

use std::time::{Duration, Instant};

use faultline_shared::metrics;
use sqlx::PgPool;

const EVERY: Duration = Duration::from_millis(250);

/// Starts the probe; it ends with the process.
pub fn start(pool: PgPool) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let (size, idle) = (pool.size(), pool.num_idle() as u32);
            metrics::db_pool(size.saturating_sub(idle), idle);
            if idle > 0 {
                metrics::db_pool_wait(Duration::ZERO);
            } else if size >= pool.options().get_max_connections() {
                // Full and all in use: wait like a statement would.
                let started = Instant::now();
                if let Ok(conn) = pool.acquire().await {
                    metrics::db_pool_wait(started.elapsed());
                    drop(conn);
                }
            }
            // Otherwise a statement would open a connection now; the probe
            // does not, so that it never grows the pool itself.
        }
    });
}

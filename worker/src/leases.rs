//! Lease renewal for every run this worker holds: one statement per period
//! (a third of the lease TTL) renews all of them, on a connection of its
//! own, so renewals never wait behind the steps' statements in the pool and
//! their cost does not grow with the number of runs in flight. A step
//! registers its lease ([`Leases::hold`]) and watches [`Hold::lost`]: the
//! renewal that finds the lease gone (taken over, or the run finished
//! elsewhere) flips it, and the step abandons its iteration — unless the
//! step is committing ([`Leases::committing`]): its own commit moves the
//! lease on (a new epoch, or none), and the commit is fenced by the epoch
//! anyway, so a renewal that misses it must not cancel the step mid-commit.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use faultline_shared::{
    config::{ExposeSecret, SecretString},
    metrics,
    storage::{
        runs::{self, Lease},
        sessions,
    },
};
use sqlx::{Connection, PgConnection};
use tokio::sync::watch;
use tracing::warn;
use uuid::Uuid;

/// The leases this worker holds, renewed together.
#[derive(Clone)]
pub struct Leases {
    held: Arc<Mutex<HashMap<Uuid, Entry>>>,
}

struct Entry {
    epoch: i64,
    lost: watch::Sender<bool>,
    committing: bool,
}

/// A registered lease; dropping it stops its renewal.
pub struct Hold {
    held: Arc<Mutex<HashMap<Uuid, Entry>>>,
    run_id: Uuid,
    epoch: i64,
    /// Flips to true when a renewal finds the lease lost.
    pub lost: watch::Receiver<bool>,
}

impl Drop for Hold {
    fn drop(&mut self) {
        let mut held = lock(&self.held);
        if held
            .get(&self.run_id)
            .is_some_and(|e| e.epoch == self.epoch)
        {
            held.remove(&self.run_id);
        }
    }
}

fn lock(held: &Mutex<HashMap<Uuid, Entry>>) -> std::sync::MutexGuard<'_, HashMap<Uuid, Entry>> {
    held.lock().unwrap_or_else(|p| p.into_inner())
}

impl Leases {
    /// Starts renewing, every `ttl / 3`, the leases `owner` registers, on a
    /// connection to `database_url` of its own (reopened after an error),
    /// which also holds the worker's session lock ([`sessions`]): when this
    /// process dies, Postgres drops the lock and other workers take over
    /// its runs after the session grace, without waiting for the leases.
    pub fn start(database_url: SecretString, owner: String, ttl: Duration) -> Self {
        let leases = Self {
            held: Arc::default(),
        };
        tokio::spawn(renew_loop(leases.held.clone(), database_url, owner, ttl));
        leases
    }

    /// The step holding `lease` is about to commit: from now on a renewal
    /// that misses the lease does not cancel it (the commit is fenced).
    pub fn committing(&self, lease: &Lease) {
        if let Some(e) = lock(&self.held).get_mut(&lease.run_id)
            && e.epoch == lease.epoch
        {
            e.committing = true;
        }
    }

    /// Registers `lease` for renewal until the returned [`Hold`] is dropped.
    pub fn hold(&self, lease: &Lease) -> Hold {
        let (tx, rx) = watch::channel(false);
        lock(&self.held).insert(
            lease.run_id,
            Entry {
                epoch: lease.epoch,
                lost: tx,
                committing: false,
            },
        );
        Hold {
            held: self.held.clone(),
            run_id: lease.run_id,
            epoch: lease.epoch,
            lost: rx,
        }
    }
}

/// How often the lease connection is checked between renewals: a dropped
/// connection (Postgres restarted, a network cut) is reopened, and the
/// worker's session lock taken again, well within the session grace.
const CHECK_EVERY: Duration = Duration::from_millis(250);

async fn renew_loop(
    held: Arc<Mutex<HashMap<Uuid, Entry>>>,
    database_url: SecretString,
    owner: String,
    ttl: Duration,
) {
    let mut tick = tokio::time::interval(CHECK_EVERY.min(ttl / 3));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut session = Session::new(owner.clone());
    let mut renewed_at = Instant::now();
    loop {
        tick.tick().await;
        let Some(c) = session.connection(database_url.expose_secret()).await else {
            continue;
        };
        if renewed_at.elapsed() < ttl / 3 {
            if let Err(e) = c.ping().await {
                warn!(error = %e, "lease connection lost: reconnecting");
                session.lost();
            }
            continue;
        }
        renewed_at = Instant::now();
        let batch: Vec<(Uuid, i64)> = lock(&held).iter().map(|(id, e)| (*id, e.epoch)).collect();
        if batch.is_empty() {
            continue;
        }
        match runs::renew_leases(c, &owner, &batch, ttl).await {
            Ok(renewed) => settle(&held, &batch, renewed, renewed_at.elapsed()),
            Err(e) => {
                warn!(error = %e, leases = batch.len(), "lease renewal failed");
                session.lost();
            }
        }
    }
}

/// The lease connection and the worker's session lock on it.
struct Session {
    owner: String,
    conn: Option<PgConnection>,
    /// The lock key, once registered on the current connection.
    key: Option<i32>,
    /// Whether the current connection holds the lock.
    locked: bool,
    warned: bool,
}

impl Session {
    fn new(owner: String) -> Self {
        Self {
            owner,
            conn: None,
            key: None,
            locked: false,
            warned: false,
        }
    }

    fn lost(&mut self) {
        self.conn = None;
        self.key = None;
        self.locked = false;
    }

    /// The lease connection, (re)opened and registered as needed, with the
    /// session lock taken when it can be (retried at every check until it
    /// is); `None` after an error, retried at the next check. A lease
    /// lapses only if renewals keep failing for a whole TTL.
    async fn connection(&mut self, url: &str) -> Option<&mut PgConnection> {
        if self.conn.is_none() {
            match PgConnection::connect(url).await {
                Ok(c) => self.conn = Some(c),
                Err(e) => {
                    warn!(error = %e, "lease renewal: cannot connect");
                    return None;
                }
            }
        }
        if let Err(e) = self.lock().await {
            warn!(error = %e, "lease renewal: cannot register the worker session");
            self.lost();
            return None;
        }
        self.conn.as_mut()
    }

    async fn lock(&mut self) -> sqlx::Result<()> {
        let Some(conn) = self.conn.as_mut() else {
            return Ok(());
        };
        if self.locked {
            return Ok(());
        }
        let key = match self.key {
            Some(k) => k,
            None => *self
                .key
                .insert(sessions::register(conn, &self.owner).await?),
        };
        self.locked = sessions::try_hold(conn, &self.owner, key).await?;
        if !self.locked && !self.warned {
            // A predecessor's connection not closed yet, or two live
            // processes with one id; leases still renew meanwhile.
            warn!(
                owner = %self.owner,
                "another session holds this worker id's lock: retrying (give each live worker its own FAULTLINE_WORKER_ID)"
            );
            self.warned = true;
        }
        Ok(())
    }
}

/// Flags the leases of `batch` that the renewal did not find as lost.
fn settle(
    held: &Mutex<HashMap<Uuid, Entry>>,
    batch: &[(Uuid, i64)],
    renewed: Vec<Uuid>,
    elapsed: Duration,
) {
    let renewed: HashSet<Uuid> = renewed.into_iter().collect();
    let mut lost = 0;
    let mut held = lock(held);
    for (id, epoch) in batch.iter().filter(|(id, _)| !renewed.contains(id)) {
        // The step may have moved on (next iteration, new epoch) since the
        // batch was read: only its own lease is lost.
        if held
            .get(id)
            .is_some_and(|e| e.epoch == *epoch && !e.committing)
        {
            if let Some(e) = held.remove(id) {
                let _ = e.lost.send(true);
            }
            lost += 1;
        }
    }
    metrics::lease_renewal(elapsed, renewed.len(), lost);
}

//! Failed token checks per client address: after `max` wrong tokens within
//! `window`, that address gets 429 (with `Retry-After`) for the rest of the
//! window, before its token is even looked up — so guessing cannot go on,
//! and a right guess cannot be told from a wrong one while blocked.
//!
//! A fixed window per address in a map. Not `governor`: its keyed limiter
//! has no way to ask "is this address over its quota?" without spending a
//! cell, and we must refuse *before* checking the token but count only
//! failures. Behind a reverse proxy every client has the proxy's address.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::Mutex,
    time::{Duration, Instant},
};

/// Entries kept before expired windows are swept out.
const SWEEP_AT: usize = 10_000;

#[derive(Debug)]
pub struct AuthThrottle {
    max: u32,
    window: Duration,
    clients: Mutex<HashMap<IpAddr, Window>>,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    started: Instant,
    failures: u32,
}

impl AuthThrottle {
    pub fn new(max: u32, window: Duration) -> Self {
        Self {
            max,
            window,
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// How long `ip` must wait, while it has used up its failures.
    pub fn blocked(&self, ip: IpAddr) -> Option<Duration> {
        self.blocked_at(ip, Instant::now())
    }

    /// Counts a wrong token presented by `ip`.
    pub fn failed(&self, ip: IpAddr) {
        self.failed_at(ip, Instant::now());
    }

    fn blocked_at(&self, ip: IpAddr, now: Instant) -> Option<Duration> {
        let clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        let w = clients.get(&ip)?;
        let ends = w.started + self.window;
        (w.failures >= self.max && now < ends).then(|| ends - now)
    }

    fn failed_at(&self, ip: IpAddr, now: Instant) {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if clients.len() >= SWEEP_AT {
            clients.retain(|_, w| now < w.started + self.window);
        }
        let w = clients.entry(ip).or_insert(Window {
            started: now,
            failures: 0,
        });
        if now >= w.started + self.window {
            *w = Window {
                started: now,
                failures: 0,
            };
        }
        w.failures = w.failures.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_blocked_after_max_failures_until_its_window_ends() {
        let t = AuthThrottle::new(3, Duration::from_secs(60));
        let (a, b): (IpAddr, IpAddr) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        let t0 = Instant::now();
        for i in 0..3 {
            assert_eq!(t.blocked_at(a, t0), None, "failure {i}");
            t.failed_at(a, t0);
        }
        let wait = t.blocked_at(a, t0 + Duration::from_secs(10)).unwrap();
        assert_eq!(wait, Duration::from_secs(50));
        assert_eq!(t.blocked_at(b, t0), None, "another address is not affected");
        assert_eq!(t.blocked_at(a, t0 + Duration::from_secs(60)), None);
        t.failed_at(a, t0 + Duration::from_secs(61));
        assert_eq!(
            t.blocked_at(a, t0 + Duration::from_secs(61)),
            None,
            "a new window"
        );
    }
}

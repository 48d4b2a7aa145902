//! Failed token checks per client ([`ClientKey`]: an IPv4 address or an
//! IPv6 /64, behind trusted proxies the forwarded client): after `max` wrong
//! tokens within `window`, that client gets 429 (with `Retry-After`) for the
//! rest of the window, before its token is even looked up — so guessing
//! cannot go on, and a right guess cannot be told from a wrong one while
//! blocked.
//!
//! A fixed window per client in a map, bounded: windows are also queued in
//! the order they started, so each failure drops the expired ones from the
//! front and, when the map holds `capacity` clients, forgets the one whose
//! window started first (its count starts again from zero) — O(1) amortised
//! per failure, never a scan of the map.
//!
//! Not `governor`: its keyed limiter has no way to ask "is this client over
//! its quota?" without spending a cell, and we must refuse *before* checking
//! the token but count only failures.

use std::{
    collections::{HashMap, VecDeque},
    sync::Mutex,
    time::{Duration, Instant},
};

use super::client::ClientKey;

/// Clients tracked at most (≈ 100 bytes each): an attacker who fails from
/// more addresses than this pushes out the oldest windows, its own included.
pub const MAX_CLIENTS: usize = 100_000;

#[derive(Debug)]
pub struct AuthThrottle {
    max: u32,
    window: Duration,
    capacity: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    clients: HashMap<ClientKey, Window>,
    /// Every window start, oldest first (an entry whose client no longer has
    /// that window is skipped when it reaches the front).
    started: VecDeque<(ClientKey, Instant)>,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    started: Instant,
    failures: u32,
}

impl AuthThrottle {
    pub fn new(max: u32, window: Duration) -> Self {
        Self::with_capacity(max, window, MAX_CLIENTS)
    }

    fn with_capacity(max: u32, window: Duration, capacity: usize) -> Self {
        Self {
            max,
            window,
            capacity: capacity.max(1),
            state: Mutex::default(),
        }
    }

    /// How long `client` must wait, while it has used up its failures.
    pub fn blocked(&self, client: ClientKey) -> Option<Duration> {
        self.blocked_at(client, Instant::now())
    }

    /// Counts a wrong token presented by `client`.
    pub fn failed(&self, client: ClientKey) {
        self.failed_at(client, Instant::now());
    }

    fn blocked_at(&self, client: ClientKey, now: Instant) -> Option<Duration> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let w = state.clients.get(&client)?;
        let ends = w.started + self.window;
        (w.failures >= self.max && now < ends).then(|| ends - now)
    }

    fn failed_at(&self, client: ClientKey, now: Instant) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let state = &mut *state;
        // Expired windows leave from the front.
        while let Some(&(key, started)) = state.started.front() {
            if now < started + self.window {
                break;
            }
            state.started.pop_front();
            state.forget(key, started);
        }
        let live = state
            .clients
            .get(&client)
            .is_some_and(|w| now < w.started + self.window);
        if !live {
            if !state.clients.contains_key(&client) {
                // Full: forget the window that started first.
                while state.clients.len() >= self.capacity {
                    let Some((key, started)) = state.started.pop_front() else {
                        break;
                    };
                    state.forget(key, started);
                }
            }
            state.clients.insert(
                client,
                Window {
                    started: now,
                    failures: 0,
                },
            );
            state.started.push_back((client, now));
        }
        if let Some(w) = state.clients.get_mut(&client) {
            w.failures = w.failures.saturating_add(1);
        }
    }
}

impl State {
    /// Removes `key` if its window is the one that started at `started`.
    fn forget(&mut self, key: ClientKey, started: Instant) {
        if self.clients.get(&key).is_some_and(|w| w.started == started) {
            self.clients.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> ClientKey {
        s.parse::<std::net::IpAddr>().unwrap().into()
    }

    #[test]
    fn a_client_is_blocked_after_max_failures_until_its_window_ends() {
        let t = AuthThrottle::new(3, Duration::from_secs(60));
        let (a, b) = (key("192.0.2.1"), key("192.0.2.2"));
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

    #[test]
    fn ipv6_addresses_of_one_64_share_a_budget() {
        let t = AuthThrottle::new(2, Duration::from_secs(60));
        let t0 = Instant::now();
        t.failed_at(key("2001:db8:1:2::1"), t0);
        t.failed_at(key("2001:db8:1:2::2"), t0);
        assert!(t.blocked_at(key("2001:db8:1:2:abcd::9"), t0).is_some());
        assert_eq!(t.blocked_at(key("2001:db8:1:3::1"), t0), None);
    }

    #[test]
    fn the_map_is_bounded_and_forgets_the_oldest_window_first() {
        let t = AuthThrottle::with_capacity(1, Duration::from_secs(60), 3);
        let t0 = Instant::now();
        let at = |s| t0 + Duration::from_secs(s);
        for (i, ip) in ["192.0.2.1", "192.0.2.2", "192.0.2.3"].iter().enumerate() {
            t.failed_at(key(ip), at(i as u64));
        }
        // A fourth client pushes out the first, whose window started first.
        t.failed_at(key("192.0.2.4"), at(3));
        let state = t.state.lock().unwrap();
        assert_eq!(state.clients.len(), 3);
        assert!(state.started.len() <= 3);
        drop(state);
        assert_eq!(t.blocked_at(key("192.0.2.1"), at(3)), None);
        for ip in ["192.0.2.2", "192.0.2.3", "192.0.2.4"] {
            assert!(t.blocked_at(key(ip), at(3)).is_some(), "{ip}");
        }
        // Many clients, many windows: the map and the queue stay bounded.
        for i in 0..10_000u32 {
            let ip = std::net::Ipv4Addr::from(0x0a00_0000 + i);
            t.failed_at(
                ClientKey::from(std::net::IpAddr::V4(ip)),
                at(4 + u64::from(i / 50)),
            );
        }
        let state = t.state.lock().unwrap();
        assert_eq!(state.clients.len(), 3);
        assert!(state.started.len() <= 3, "{}", state.started.len());
    }

    #[test]
    fn expired_windows_leave_the_map_as_later_failures_arrive() {
        let t = AuthThrottle::new(5, Duration::from_secs(60));
        let t0 = Instant::now();
        for i in 0..100u32 {
            let ip = std::net::Ipv4Addr::from(0x0a00_0000 + i);
            t.failed_at(ClientKey::from(std::net::IpAddr::V4(ip)), t0);
        }
        // A repeat offender's next failure after its window starts a new one.
        t.failed_at(key("192.0.2.1"), t0);
        t.failed_at(key("192.0.2.1"), t0 + Duration::from_secs(61));
        t.failed_at(key("192.0.2.9"), t0 + Duration::from_secs(62));
        let state = t.state.lock().unwrap();
        assert_eq!(state.clients.len(), 2, "only the two live windows");
        assert_eq!(state.started.len(), 2);
    }
}

//! Who the client of a request is, and what one client may hold at once.
//!
//! The client is the TCP peer, unless the peer is one of
//! `FAULTLINE_TRUSTED_PROXIES`: then it is the right-most address of
//! `X-Forwarded-For` that is not a trusted proxy (each proxy appends the
//! address it got the request from, so everything left of that is what the
//! client wrote and is not believed). Without the setting the header is
//! ignored, so no client can choose its own address.
//!
//! Limits are kept per [`ClientKey`]: an IPv4 address, or the /64 of an IPv6
//! one (a host gets a whole /64 and picks addresses in it at will).

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{Arc, Mutex},
};

use axum::{
    extract::{Request, State},
    http::{HeaderValue, header},
    middleware::Next,
    response::{IntoResponse, Response},
};

pub use faultline_producer::proxies::TrustedProxies;
use ipnet::Ipv6Net;

use super::error::AppError;

/// The resolved client address of a request (set by the accept loop).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

/// What per-client limits count by: an IPv4 address, or an IPv6 /64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientKey(IpAddr);

impl From<IpAddr> for ClientKey {
    fn from(ip: IpAddr) -> Self {
        ClientKey(match ip.to_canonical() {
            IpAddr::V6(v6) => IpAddr::V6(Ipv6Net::new(v6, 64).map_or(v6, |net| net.network())),
            v4 => v4,
        })
    }
}

/// How many of something (connections, requests in flight) each client
/// holds; a client at `limit` gets no more until one is released.
#[derive(Debug)]
pub struct PerClient {
    limit: usize,
    held: Mutex<HashMap<ClientKey, usize>>,
}

/// One thing held by a client; released when dropped.
#[derive(Debug)]
pub struct Held {
    owner: Arc<PerClient>,
    key: ClientKey,
}

impl PerClient {
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            held: Mutex::new(HashMap::new()),
        })
    }

    /// One more for `key`, unless it already holds `limit`. The map only has
    /// clients holding something, so it is no larger than what is held.
    pub fn try_take(self: &Arc<Self>, key: ClientKey) -> Option<Held> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let n = held.entry(key).or_insert(0);
        if *n >= self.limit {
            return None;
        }
        *n += 1;
        Some(Held {
            owner: self.clone(),
            key,
        })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut held = self.owner.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = held.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                held.remove(&self.key);
            }
        }
    }
}

/// Middleware: a client past `FAULTLINE_MAX_IN_FLIGHT_PER_CLIENT` requests
/// in flight gets 503 with `Retry-After: 1` at once (as nginx's `limit_conn`
/// answers), so it cannot take the global in-flight slots from others.
pub async fn in_flight(
    State(per_client): State<Arc<PerClient>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(ClientAddr(ip)) = request.extensions().get::<ClientAddr>().copied() else {
        return next.run(request).await;
    };
    let Some(_held) = per_client.try_take(ip.into()) else {
        tracing::debug!(client = %ip, "per-client in-flight cap reached");
        let mut response = AppError::Unavailable(
            "too many requests in flight from this client; retry shortly".into(),
        )
        .into_response();
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return response;
    };
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn ipv6_clients_are_keyed_by_their_64_and_ipv4_by_address() {
        let key = |s: &str| ClientKey::from(ip(s));
        assert_eq!(
            key("2001:db8:1:2::1"),
            key("2001:db8:1:2:ffff:ffff:ffff:ffff")
        );
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_ne!(key("192.0.2.1"), key("192.0.2.2"));
        assert_eq!(key("::ffff:192.0.2.1"), key("192.0.2.1"));
    }

    #[test]
    fn a_client_holds_at_most_its_limit_and_gets_slots_back_on_release() {
        let p = PerClient::new(2);
        let (a, b) = (
            ClientKey::from(ip("192.0.2.1")),
            ClientKey::from(ip("192.0.2.2")),
        );
        let first = p.try_take(a).unwrap();
        let _second = p.try_take(a).unwrap();
        assert!(p.try_take(a).is_none());
        assert!(p.try_take(b).is_some(), "another client is not affected");
        drop(first);
        assert!(p.try_take(a).is_some());
        assert!(
            p.held.lock().unwrap().get(&b).is_none(),
            "released clients leave the map"
        );
    }
}

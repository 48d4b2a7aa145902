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
    net::{IpAddr, SocketAddr},
    sync::{Arc, Mutex},
};

use axum::{
    extract::{Request, State},
    http::{HeaderMap, HeaderValue, header},
    middleware::Next,
    response::{IntoResponse, Response},
};

use ipnet::{IpNet, Ipv6Net};

use super::error::AppError;

const X_FORWARDED_FOR: &str = "x-forwarded-for";

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

/// An address block, `10.0.0.0/8` or `fd00::/8`; a bare address is one host.
fn block(text: &str) -> Result<IpNet, String> {
    text.parse::<IpNet>()
        .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
        .map(|net| net.trunc())
        .map_err(|_| {
            format!("{text:?} is not an IP address or a CIDR block (10.0.0.0/8, fd00::/8)")
        })
}

/// `FAULTLINE_TRUSTED_PROXIES`: the peers whose `X-Forwarded-For` is believed.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// Comma-separated addresses or CIDR blocks; empty trusts nobody.
    pub fn parse(text: &str) -> Result<Self, String> {
        text.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(block)
            .collect::<Result<_, _>>()
            .map(TrustedProxies)
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|net| net.contains(&ip))
    }

    /// The client of a request that came from `peer` with `headers`.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let mut client = peer.to_canonical();
        if !self.contains(client) {
            return client;
        }
        // Right to left over every X-Forwarded-For line; an entry that is
        // not an address ends the walk at the last (trusted) hop.
        for line in headers.get_all(X_FORWARDED_FOR).iter().rev() {
            let Ok(line) = line.to_str() else {
                return client;
            };
            for hop in line.rsplit(',') {
                let Some(ip) = parse_hop(hop.trim()) else {
                    return client;
                };
                client = ip;
                if !self.contains(ip) {
                    return ip;
                }
            }
        }
        client
    }
}

/// `203.0.113.7`, `2001:db8::1`, or either with a port (some proxies add one).
fn parse_hop(hop: &str) -> Option<IpAddr> {
    hop.parse::<IpAddr>()
        .or_else(|_| hop.parse::<SocketAddr>().map(|s| s.ip()))
        .ok()
        .map(|ip| ip.to_canonical())
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

    fn forwarded(lines: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for l in lines {
            h.append("x-forwarded-for", HeaderValue::from_str(l).unwrap());
        }
        h
    }

    #[test]
    fn cidrs_parse_and_match_by_family_and_prefix() {
        let t = TrustedProxies::parse(" 10.0.0.0/8, 192.0.2.1 ,fd00::/8,").unwrap();
        assert!(t.contains(ip("10.200.0.1")));
        assert!(t.contains(ip("::ffff:10.1.2.3")), "IPv4-mapped");
        assert!(t.contains(ip("192.0.2.1")) && !t.contains(ip("192.0.2.2")));
        assert!(t.contains(ip("fd12::1")) && !t.contains(ip("fe80::1")));
        assert!(!t.contains(ip("11.0.0.1")));
        assert!(
            TrustedProxies::parse("0.0.0.0/0")
                .unwrap()
                .contains(ip("8.8.8.8"))
        );
        assert!(
            !TrustedProxies::parse("0.0.0.0/0")
                .unwrap()
                .contains(ip("::2"))
        );
        assert!(TrustedProxies::parse("10.0.0.0/33").is_err());
        assert!(TrustedProxies::parse("proxy.local").is_err());
        assert!(!TrustedProxies::parse("").unwrap().contains(ip("127.0.0.1")));
    }

    #[test]
    fn the_client_is_the_rightmost_untrusted_forwarded_address() {
        let t = TrustedProxies::parse("127.0.0.1, 10.0.0.0/8").unwrap();
        let proxy = ip("127.0.0.1");
        let h = forwarded(&["198.51.100.9, 203.0.113.7, 10.0.0.5"]);
        assert_eq!(t.client(proxy, &h), ip("203.0.113.7"));
        // Split over two header lines, and with a port.
        let h = forwarded(&["198.51.100.9", "203.0.113.7:4711, 10.0.0.5"]);
        assert_eq!(t.client(proxy, &h), ip("203.0.113.7"));
        let h = forwarded(&["[2001:db8::7]:80"]);
        assert_eq!(t.client(proxy, &h), ip("2001:db8::7"));
        // No header: the proxy itself; only proxies: the left-most.
        assert_eq!(t.client(proxy, &HeaderMap::new()), proxy);
        let h = forwarded(&["10.0.0.9, 10.0.0.5"]);
        assert_eq!(t.client(proxy, &h), ip("10.0.0.9"));
        // Garbage ends the walk at the last trusted hop.
        let h = forwarded(&["203.0.113.7, unknown, 10.0.0.5"]);
        assert_eq!(t.client(proxy, &h), ip("10.0.0.5"));
        // From an untrusted peer the header is not believed.
        let h = forwarded(&["203.0.113.7"]);
        assert_eq!(t.client(ip("192.0.2.1"), &h), ip("192.0.2.1"));
        assert_eq!(
            TrustedProxies::default().client(proxy, &h),
            proxy,
            "no trusted proxies: ignored"
        );
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

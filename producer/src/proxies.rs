//! `FAULTLINE_TRUSTED_PROXIES`: which peers' `X-Forwarded-For` is
//! believed, and the client a request came from through them (the HTTP
//! server's per-client limits and throttle key on it).

use std::net::{IpAddr, SocketAddr};

use axum::http::HeaderMap;
use ipnet::IpNet;

const X_FORWARDED_FOR: &str = "x-forwarded-for";

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

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

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
}

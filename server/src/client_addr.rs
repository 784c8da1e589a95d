//! The client's address: the connection's peer, or — when the peer is a
//! proxy the operator trusts (`--trusted-proxy CIDR`) — the address the
//! proxies say they forwarded for (`Forwarded: for=`, else
//! `X-Forwarded-For`), read from the right: the first address that is not
//! a trusted proxy is the client (what is left of it was written by the
//! client and proves nothing). Users behind one proxy are told apart this
//! way; without a trusted proxy the headers are ignored.
//!
//! ```text
//!  peer 10.0.0.5 (trusted 10.0.0.0/8), X-Forwarded-For: 1.2.3.4, 198.51.100.7, 10.0.0.9
//!     ─▶ 198.51.100.7   (10.0.0.9 is a trusted hop; 1.2.3.4 is the client's own claim)
//! ```

use std::net::{IpAddr, SocketAddr};

use axum::http::HeaderMap;
use ipnet::IpNet;

/// The address of the client of a request from `peer` (see the
/// [module docs](self)).
pub(crate) fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(&canonical(*ip)));
    if trusted.is_empty() || !is_trusted(&peer) {
        return peer;
    }
    let hops = forwarded_for(headers);
    let mut client = peer;
    for hop in hops.iter().rev() {
        match hop {
            Some(ip) if is_trusted(ip) => client = *ip,
            Some(ip) => return *ip,
            // `unknown` or an obfuscated name: nothing further is known.
            None => return client,
        }
    }
    client
}

/// An IPv4 address written as IPv6 (`::ffff:a.b.c.d`) as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The hops of `Forwarded` (its `for=` values), else of
/// `X-Forwarded-For`, in order; `None` for a hop that is no address.
fn forwarded_for(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    let forwarded: Vec<Option<IpAddr>> = headers
        .get_all("forwarded")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|element| {
            element.split(';').find_map(|pair| {
                let (key, value) = pair.split_once('=')?;
                key.trim()
                    .eq_ignore_ascii_case("for")
                    .then(|| parse_hop(value))
            })
        })
        .collect();
    if !forwarded.is_empty() {
        return forwarded;
    }
    headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(parse_hop)
        .collect()
}

/// One hop: `1.2.3.4`, `"[2001:db8::1]:4711"`, `1.2.3.4:80`, `2001:db8::1`.
fn parse_hop(value: &str) -> Option<IpAddr> {
    let value = value.trim().trim_matches('"');
    if let Ok(ip) = value.parse::<IpAddr>() {
        return Some(canonical(ip));
    }
    if let Ok(addr) = value.parse::<SocketAddr>() {
        return Some(canonical(addr.ip()));
    }
    value
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .and_then(|v| v.parse().ok())
        .map(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn the_first_untrusted_hop_from_the_right_is_the_client() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let peer: IpAddr = "10.0.0.5".parse().unwrap();
        let h = headers(&[("x-forwarded-for", "1.2.3.4, 198.51.100.7, 10.0.0.9")]);
        assert_eq!(
            client_ip(peer, &h, &trusted),
            "198.51.100.7".parse::<IpAddr>().unwrap()
        );
        let h = headers(&[(
            "forwarded",
            "for=\"[2001:db8::1]:4711\";proto=https, for=10.0.0.9",
        )]);
        assert_eq!(
            client_ip(peer, &h, &trusted),
            "2001:db8::1".parse::<IpAddr>().unwrap()
        );
        // An untrusted peer's headers prove nothing.
        let stranger: IpAddr = "192.0.2.1".parse().unwrap();
        let h = headers(&[("x-forwarded-for", "1.2.3.4")]);
        assert_eq!(client_ip(stranger, &h, &trusted), stranger);
        assert_eq!(client_ip(peer, &h, &[]), peer);
        // No header: the proxy itself.
        assert_eq!(client_ip(peer, &HeaderMap::new(), &trusted), peer);
    }
}

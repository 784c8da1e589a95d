//! The sandbox's network: [`SandboxNetwork`] (off, on, or a domain
//! allow-list) and [`DomainPattern`]; the allow-list's egress proxy
//! (`proxy.rs`) and, under bubblewrap, the helper that hands the
//! sandbox's connections to it (`helper.rs`).
//!
//! ```text
//!  command ──HTTP_PROXY──▶ 127.0.0.1:PORT
//!    bubblewrap: its own network namespace (loopback only); the helper
//!                (this program, `helper.rs`) listens there and passes each
//!                accepted connection over a socket pair ─┐
//!    Landlock:   the host's network; Landlock lets TCP connect only to the
//!                proxy's port, the filter allows TCP sockets only ───┤
//!                                                                     ▼
//!  proxy.rs (a thread of lc-agent): HTTP forward proxy + CONNECT; the
//!  host name must match an allowed domain; raw IP addresses, other names
//!  and anything but HTTP refused (403 / 400)
//! ```

mod helper;
mod proxy;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub(crate) use helper::{
    helper_main, helper_program, mark_ready, serve_connections, HELPER_ARGUMENT, HELPER_PORT,
};
pub(crate) use proxy::Proxy;

/// The network a sandboxed command gets (serde and CLI names `off`, `on`,
/// `allow`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxNetwork {
    /// No network at all, not even the host's loopback. The default.
    #[default]
    Off,
    /// The host's network, as a plain shell has it (TCP and UDP).
    On,
    /// Only HTTP(S) to the allowed domains, through lc-agent's proxy on
    /// loopback (`HTTP_PROXY`, `HTTPS_PROXY`, … set in the command's
    /// environment); every other connection fails.
    Allow,
}

impl SandboxNetwork {
    /// The name (`off`, `on`, `allow`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::On => "on",
            Self::Allow => "allow",
        }
    }

    /// How wide it is: off < allow < on.
    pub fn width(self) -> u8 {
        match self {
            Self::Off => 0,
            Self::Allow => 1,
            Self::On => 2,
        }
    }
}

impl fmt::Display for SandboxNetwork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SandboxNetwork {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "off" => Ok(Self::Off),
            "on" => Ok(Self::On),
            "allow" => Ok(Self::Allow),
            other => Err(format!(
                "unknown sandbox network `{other}` (off, on, or allow: only the domains given \
                 with --sandbox-allow-domain)"
            )),
        }
    }
}

/// A domain the proxy lets commands reach: a host name (`crates.io`:
/// that name only) or `*.` and a name (`*.crates.io`: its subdomains, not
/// the name itself). Lower case, letters, digits, `-` and `.`; never an
/// IP address.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct DomainPattern {
    /// The name, without `*.`.
    name: String,
    /// Whether it stands for the subdomains of `name`.
    wildcard: bool,
}

impl DomainPattern {
    /// Whether `host` (a name as a client sent it) is allowed by this pattern.
    pub fn matches(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        if self.wildcard {
            host.len() > self.name.len() + 1
                && host.ends_with(&self.name)
                && host.as_bytes()[host.len() - self.name.len() - 1] == b'.'
        } else {
            host == self.name
        }
    }
}

impl fmt::Display for DomainPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.wildcard {
            f.write_str("*.")?;
        }
        f.write_str(&self.name)
    }
}

impl From<DomainPattern> for String {
    fn from(pattern: DomainPattern) -> Self {
        pattern.to_string()
    }
}

impl TryFrom<String> for DomainPattern {
    type Error = String;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl FromStr for DomainPattern {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| format!("`{s}` is not a domain to allow: {why}");
        let lower = s.trim().trim_end_matches('.').to_ascii_lowercase();
        let (wildcard, name) = match lower.strip_prefix("*.") {
            Some(rest) => (true, rest.to_string()),
            None => (false, lower),
        };
        if name.is_empty() {
            return Err(bad("it is empty"));
        }
        if name.parse::<std::net::IpAddr>().is_ok() || name.starts_with('[') {
            return Err(bad("an IP address is never allowed; name a domain"));
        }
        if name.contains('*') {
            return Err(bad("`*` goes only at its start, as in `*.example.com`"));
        }
        for label in name.split('.') {
            let ok = !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !ok {
                return Err(bad(
                    "use letters, digits, `-` and `.` (`crates.io`, `*.example.com`)",
                ));
            }
        }
        if name.len() > 253 {
            return Err(bad("it is longer than 253 characters"));
        }
        Ok(Self { name, wildcard })
    }
}

/// The variables that point a command's HTTP clients at the proxy on
/// `port` (loopback).
pub(crate) fn proxy_env(port: u16) -> Vec<(String, String)> {
    let url = format!("http://127.0.0.1:{port}");
    let mut env: Vec<(String, String)> = [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "npm_config_proxy",
        "npm_config_https_proxy",
    ]
    .iter()
    .map(|name| ((*name).to_string(), url.clone()))
    .collect();
    for name in ["NO_PROXY", "no_proxy"] {
        env.push((name.to_string(), "localhost,127.0.0.1,::1".to_string()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(s: &str) -> DomainPattern {
        s.parse().expect("a pattern")
    }

    #[test]
    fn a_name_matches_itself_and_a_wildcard_its_subdomains() {
        assert!(pattern("crates.io").matches("crates.io"));
        assert!(pattern("crates.io").matches("Crates.IO."));
        assert!(!pattern("crates.io").matches("static.crates.io"));
        assert!(!pattern("crates.io").matches("evilcrates.io"));
        assert!(pattern("*.crates.io").matches("static.crates.io"));
        assert!(pattern("*.crates.io").matches("a.b.crates.io"));
        assert!(!pattern("*.crates.io").matches("crates.io"));
        assert!(!pattern("*.crates.io").matches("evilcrates.io"));
    }

    #[test]
    fn addresses_and_odd_names_are_refused() {
        for bad in [
            "",
            "127.0.0.1",
            "::1",
            "[::1]",
            "a*.b",
            "*",
            "a..b",
            "-a.b",
            "a b",
        ] {
            assert!(bad.parse::<DomainPattern>().is_err(), "{bad}");
        }
        assert_eq!(pattern("*.Example.COM").to_string(), "*.example.com");
    }
}

//! One rule for serving the agent over HTTP, used by every server of the
//! workspace (lc-agent-server's API, the MCP file-tool server):
//!
//! ```text
//!  bind:     a loopback address may go without a token; any other needs one   (bind_allowed)
//!  request:  Authorization: Bearer <token>  (scheme in any case, spaces trimmed) (bearer_token)
//!            compared in constant time                                          (same_token)
//! ```

use std::net::SocketAddr;

/// Whether a server may listen on `addr`: always on loopback, elsewhere
/// only when requests must carry a token.
///
/// ```
/// use lc_agent_deepagent::bind_allowed;
///
/// assert!(bind_allowed("127.0.0.1:8080".parse().unwrap(), false));
/// assert!(bind_allowed("[::1]:8080".parse().unwrap(), false));
/// assert!(!bind_allowed("0.0.0.0:8080".parse().unwrap(), false));
/// assert!(bind_allowed("0.0.0.0:8080".parse().unwrap(), true));
/// ```
pub fn bind_allowed(addr: SocketAddr, has_token: bool) -> bool {
    has_token || addr.ip().is_loopback()
}

/// The token of an `Authorization` header value: `Bearer <token>`, the
/// scheme in any case; `None` for another scheme or an empty token.
///
/// ```
/// use lc_agent_deepagent::bearer_token;
///
/// assert_eq!(bearer_token("Bearer s3cret"), Some("s3cret"));
/// assert_eq!(bearer_token("  bearer   s3cret "), Some("s3cret"));
/// assert_eq!(bearer_token("Basic YTpi"), None);
/// assert_eq!(bearer_token("Bearer "), None);
/// ```
pub fn bearer_token(authorization: &str) -> Option<&str> {
    let (scheme, token) = authorization.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Whether two tokens are the same, compared without stopping at the
/// first difference (a token check must not tell how much of a guess was
/// right by how long it took).
///
/// ```
/// use lc_agent_deepagent::same_token;
///
/// assert!(same_token("s3cret", "s3cret"));
/// assert!(!same_token("s3cret", "s3creT"));
/// assert!(!same_token("s3cret", "s3cre"));
/// ```
pub fn same_token(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::{bearer_token, bind_allowed, same_token};

    #[test]
    fn only_loopback_binds_go_without_a_token() {
        for (addr, open) in [
            ("127.0.0.1:1", true),
            ("127.8.9.1:1", true),
            ("[::1]:1", true),
            ("0.0.0.0:1", false),
            ("[::]:1", false),
            ("192.168.1.5:1", false),
        ] {
            let addr = addr.parse().expect("an address");
            assert_eq!(bind_allowed(addr, false), open, "{addr}");
            assert!(bind_allowed(addr, true), "{addr}");
        }
    }

    #[test]
    fn bearer_headers_are_read_in_one_way() {
        assert_eq!(bearer_token("Bearer a b"), Some("a b"));
        assert_eq!(bearer_token("BEARER t"), Some("t"));
        assert_eq!(bearer_token("Bearer"), None);
        assert_eq!(bearer_token("Token t"), None);
        assert!(same_token("", ""));
        assert!(!same_token("a", ""));
    }
}

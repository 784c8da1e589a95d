//! What a request must be before any handler sees it, and the headers
//! every answer carries.
//!
//! ```text
//!  Host      the server's own address (loopback names with its port), or
//!            an --allow-host; any Host only with tokens and no allow-list  ─▶ else 403
//!            (an absolute-form target's host wins over `Host`; HTTP/1.1
//!            without a `Host` is 400)
//!  Origin    (when a browser sends one on POST/PUT/PATCH/DELETE) this
//!            server's own origin or a --cors origin                        ─▶ else 403
//!  body      on POST/PUT/PATCH, `Content-Type: application/json`           ─▶ else 415
//!  size      URL ≤ 8 KiB, headers ≤ 32 KiB and ≤ 100 of them               ─▶ else 414 / 431
//!  answers   Content-Security-Policy (frame-ancestors 'none'),
//!            X-Frame-Options: DENY, X-Content-Type-Options: nosniff,
//!            Referrer-Policy: no-referrer
//! ```
//!
//! Together these keep a web page of another site from driving the server
//! (a token-less server on loopback included): it cannot name it by a
//! rebound DNS name, cannot post to it, cannot frame the page to have its
//! Approve button clicked.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// The longest URL answered (longer: 414).
pub(crate) const MAX_URI_BYTES: usize = 8 * 1024;
/// The most header bytes answered (more: 431).
pub(crate) const MAX_HEADER_BYTES: usize = 32 * 1024;
/// The most headers answered (more: 431).
pub(crate) const MAX_HEADERS: usize = 100;

/// The page's content security policy: its own scripts only, no frames of
/// it anywhere, no plugins, fetches to itself only.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// What the checks compare with.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    /// The bound address, when known.
    pub(crate) local: Option<SocketAddr>,
    /// `--allow-host` entries (lower case).
    pub(crate) allow_hosts: Vec<String>,
    /// Whether requests carry tokens.
    pub(crate) tokens: bool,
    /// `--cors` origins.
    pub(crate) cors_origins: Vec<String>,
}

impl Guard {
    /// Whether `host` (a `Host` header value) names this server.
    fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        let (name, port) = split_host(&host);
        for allowed in &self.allow_hosts {
            let (a_name, a_port) = split_host(allowed);
            if a_name == name && (a_port.is_none() || a_port == port) {
                return true;
            }
        }
        let Some(local) = self.local else {
            // Not bound through `serve`: only the allow-list applies.
            return self.allow_hosts.is_empty();
        };
        if local.ip().is_unspecified() {
            // Every address of the machine: tokens guard it (a non-loopback
            // bind needs them); an allow-list narrows it.
            return self.allow_hosts.is_empty() && self.tokens;
        }
        if port != Some(local.port()) {
            return self.tokens && self.allow_hosts.is_empty();
        }
        let own = match local.ip() {
            std::net::IpAddr::V4(ip) => ip.to_string(),
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        };
        if name == own {
            return true;
        }
        let loopback_name = matches!(name, "localhost" | "127.0.0.1" | "[::1]");
        if local.ip().is_loopback() && loopback_name {
            return true;
        }
        self.tokens && self.allow_hosts.is_empty()
    }

    /// Whether a browser page of `origin` may change things here.
    fn origin_allowed(&self, origin: &str, host: Option<&str>) -> bool {
        if self.cors_origins.iter().any(|o| o == origin) {
            return true;
        }
        let Some(authority) = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
        else {
            return false; // `null`, file:, extensions ...
        };
        host.is_some_and(|h| h.eq_ignore_ascii_case(authority))
    }
}

/// `name` and `port` of `host[:port]` (IPv6 in brackets).
fn split_host(host: &str) -> (&str, Option<u16>) {
    if let Some(end) = host.find(']') {
        let (name, rest) = host.split_at(end + 1);
        return (name, rest.strip_prefix(':').and_then(|p| p.parse().ok()));
    }
    match host.rsplit_once(':') {
        Some((name, port)) => match port.parse() {
            Ok(port) => (name, Some(port)),
            Err(_) => (host, None),
        },
        None => (host, None),
    }
}

/// The host a request names: an absolute-form target's (or HTTP/2's
/// `:authority`), which RFC 9112 says wins over `Host`, else `Host`.
fn host_of(request: &Request) -> Option<String> {
    request
        .uri()
        .authority()
        .map(|a| a.to_string())
        .or_else(|| {
            request
                .headers()
                .get(header::HOST)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        })
}

fn header_bytes(headers: &HeaderMap) -> usize {
    headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum()
}

fn has_body(headers: &HeaderMap) -> bool {
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match length {
        Some(n) => n > 0,
        None => headers.contains_key(header::TRANSFER_ENCODING),
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .is_some_and(|v| {
            v == "application/json" || (v.starts_with("application/") && v.ends_with("+json"))
        })
}

/// Middleware: the checks of the [module docs](self).
pub(crate) async fn check(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    match refuse(&guard, &request) {
        Some(error) => error.into_response(),
        None => next.run(request).await,
    }
}

fn refuse(guard: &Guard, request: &Request) -> Option<ApiError> {
    use axum::http::StatusCode;
    let uri_len = request.uri().to_string().len();
    if uri_len > MAX_URI_BYTES {
        return Some(ApiError::Status(
            StatusCode::URI_TOO_LONG,
            format!("the URL is {uri_len} bytes long; at most {MAX_URI_BYTES} are answered"),
        ));
    }
    let headers = request.headers();
    if headers.len() > MAX_HEADERS || header_bytes(headers) > MAX_HEADER_BYTES {
        return Some(ApiError::Status(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            format!(
                "the request has {} headers of {} bytes; at most {MAX_HEADERS} headers of {MAX_HEADER_BYTES} bytes are answered",
                headers.len(),
                header_bytes(headers)
            ),
        ));
    }
    let host = host_of(request);
    // HTTP/1.1 requires a Host (RFC 9112 section 3.2: 400 without one).
    if host.is_none() && request.version() == axum::http::Version::HTTP_11 {
        return Some(ApiError::BadRequest(
            "an HTTP/1.1 request needs a `Host` header".to_string(),
        ));
    }
    if let Some(host) = &host
        && !guard.host_allowed(host)
    {
        return Some(ApiError::Refused(format!(
                "this server does not answer to the host `{host}`; if that is its name, start it with --allow-host {host}"
            )));
    }
    let method = request.method();
    let changes = !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    if changes && let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("(not text)");
        if !guard.origin_allowed(origin, host.as_deref()) {
            return Some(ApiError::Refused(format!(
                    "requests from web pages of another origin (`{origin}`) are refused; start the server with --cors {origin} to allow that page"
                )));
        }
    }
    let has_json_body = matches!(*method, Method::POST | Method::PUT | Method::PATCH);
    if has_json_body && has_body(headers) && !is_json(headers) {
        let given = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("none");
        return Some(ApiError::UnsupportedMediaType(format!(
            "the body must be JSON with `Content-Type: application/json` (got {given})"
        )));
    }
    None
}

/// Middleware: the security headers of every answer.
pub(crate) async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    let set = [
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
    ];
    for (name, value) in set {
        headers.entry(name).or_insert(value);
    }
    response
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn guard(local: &str, tokens: bool, allow: &[&str]) -> Guard {
        Guard {
            local: Some(local.parse().unwrap()),
            allow_hosts: allow.iter().map(|s| s.to_string()).collect(),
            tokens,
            cors_origins: vec![],
        }
    }

    #[test]
    fn hosts() {
        let g = guard("127.0.0.1:8080", false, &[]);
        assert!(g.host_allowed("127.0.0.1:8080"));
        assert!(g.host_allowed("localhost:8080"));
        assert!(g.host_allowed("[::1]:8080"));
        assert!(!g.host_allowed("evil.example:8080"));
        assert!(!g.host_allowed("localhost:9090"));
        assert!(!g.host_allowed("localhost"));
        let g = guard("127.0.0.1:8080", false, &["agent.lan"]);
        assert!(g.host_allowed("agent.lan:8080"));
        assert!(g.host_allowed("agent.lan"));
        let g = guard("0.0.0.0:8080", true, &[]);
        assert!(g.host_allowed("anything:1"));
        let g = guard("0.0.0.0:8080", true, &["agent.lan:443"]);
        assert!(!g.host_allowed("anything:1"));
        assert!(g.host_allowed("agent.lan:443"));
    }

    #[test]
    fn origins() {
        let g = guard("127.0.0.1:8080", false, &[]);
        assert!(g.origin_allowed("http://127.0.0.1:8080", Some("127.0.0.1:8080")));
        assert!(!g.origin_allowed("http://localhost:9999", Some("127.0.0.1:8080")));
        assert!(!g.origin_allowed("null", Some("127.0.0.1:8080")));
    }
}

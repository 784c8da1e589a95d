//! `fetch_url`: the agent reads a web page.
//!
//! Off unless a blueprint has `[fetch_url]` (or the CLI `--fetch-url
//! HOST`). A call GETs one `http`/`https` URL and answers with the page as
//! Markdown (HTML converted by `htmd`, scripts and styles left out; plain
//! text, JSON and XML as they are). The rules, checked before anything is
//! sent and again at every redirect:
//!
//! - **Allow-list, deny by default.** A host is fetched only when an entry
//!   of `allow` names it: `docs.rs` (that host), `*.rust-lang.org` (its
//!   subdomains, not the domain itself), `*` (any host with a public
//!   address).
//! - **No private addresses unless named.** A host whose addresses include
//!   a loopback, private (RFC 1918, unique-local), link-local, shared or
//!   unspecified one is refused unless an exact entry names it
//!   (`127.0.0.1`, `localhost`, `intranet.example`): a wildcard never opens
//!   them. The connection goes to the addresses that were checked (no
//!   second lookup between the check and the request).
//! - **Redirects** are followed by hand (at most 5), each
//!   target checked as above.
//! - **Caps**: `timeout_secs` (30 by default) for the whole call, redirects
//!   included; `max_bytes` (2 MiB by default) of body read — a larger page
//!   is cut there, and the answer says so.
//! - **Binary bodies** (images, archives, PDFs: a content type that is not
//!   text, HTML, JSON or XML, or a body with NUL bytes) are an error result
//!   naming the type and size, not bytes in the conversation.
//!
//! Every failure is a result the model reads (`Error: ...`). A large
//! answer is evicted to `/large_tool_results/` like any tool's (the file
//! tools' eviction), so the conversation keeps a preview only.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use async_trait::async_trait;
use lc_agent::{Tool, ToolContext, ToolError, ToolOutput};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The tool's name.
pub(crate) const FETCH_URL: &str = "fetch_url";

/// Redirects followed at most.
const MAX_REDIRECTS: usize = 5;

/// Body bytes read by default.
const DEFAULT_MAX_BYTES: usize = 2 * 1024 * 1024;

/// Seconds a call may take by default.
const DEFAULT_TIMEOUT_SECS: u64 = 30;

/// The blueprint's `[fetch_url]`: the tool is on, for these hosts.
///
/// ```
/// use lc_agent_deepagent::AgentSpec;
///
/// let spec = AgentSpec::from_toml(
///     "[models.main]\nmodel = \"m\"\n[fetch_url]\nallow = [\"docs.rs\", \"*.rust-lang.org\"]\nmax_bytes = 100000",
/// )?;
/// let fetch = spec.fetch_url.unwrap();
/// assert_eq!(fetch.allow, ["docs.rs", "*.rust-lang.org"]);
/// assert_eq!(fetch.max_bytes, Some(100_000));
/// # Ok::<(), lc_agent_deepagent::SpecError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FetchUrlSpec {
    /// Hosts that may be fetched (see the module docs: exact names,
    /// `*.domain`, `*`); empty denies every host.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Body bytes read at most (2 MiB when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<usize>,
    /// Seconds a call may take (30 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

impl FetchUrlSpec {
    /// The tool these settings give.
    pub fn tool(&self) -> FetchUrl {
        FetchUrl {
            allow: self.allow.clone(),
            max_bytes: self.max_bytes.unwrap_or(DEFAULT_MAX_BYTES),
            timeout: Duration::from_secs(self.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS)),
        }
    }
}

/// The `fetch_url` tool (see the module docs); made by
/// [`FetchUrlSpec::tool`].
#[derive(Debug, Clone)]
pub struct FetchUrl {
    allow: Vec<String>,
    max_bytes: usize,
    timeout: Duration,
}

/// How an allow-list entry matched a host.
#[derive(Debug, PartialEq, Eq)]
enum Allowed {
    /// An entry names the host itself: private addresses are allowed.
    Named,
    /// A wildcard matched: public addresses only.
    Wildcard,
}

impl FetchUrl {
    /// How the allow-list lets `host` through, if it does.
    fn allowed(&self, host: &str) -> Option<Allowed> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let mut found = None;
        for entry in &self.allow {
            let entry = entry.trim().trim_end_matches('.').to_ascii_lowercase();
            let entry = entry.trim_start_matches('[').trim_end_matches(']');
            if entry == bare {
                return Some(Allowed::Named);
            }
            let wildcard = entry == "*"
                || entry
                    .strip_prefix("*.")
                    .is_some_and(|domain| bare.ends_with(&format!(".{domain}")));
            if wildcard {
                found = Some(Allowed::Wildcard);
            }
        }
        found
    }

    /// Checks `url` against the rules; the addresses to connect to.
    async fn check(&self, url: &reqwest::Url) -> Result<Vec<SocketAddr>, String> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "{url}: only http and https URLs can be fetched, not {}",
                url.scheme()
            ));
        }
        let Some(host) = url.host_str() else {
            return Err(format!("{url}: the URL has no host"));
        };
        let Some(allowed) = self.allowed(host) else {
            return Err(format!(
                "{host} is not on the fetch_url allow-list ({}); the user can add it \
                 (blueprint [fetch_url] allow, or --fetch-url {host})",
                if self.allow.is_empty() {
                    "it is empty".to_string()
                } else {
                    self.allow.join(", ")
                }
            ));
        };
        let port = url.port_or_known_default().unwrap_or(80);
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let addrs: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => tokio::net::lookup_host((bare, port))
                .await
                .map_err(|e| format!("{host}: cannot resolve it: {e}"))?
                .collect(),
        };
        if addrs.is_empty() {
            return Err(format!("{host}: it resolves to no address"));
        }
        if allowed == Allowed::Wildcard
            && let Some(private) = addrs.iter().find(|a| is_private(a.ip()))
        {
            return Err(format!(
                "{host} resolves to a private or loopback address ({}); only a host the \
                 allow-list names exactly may be one",
                private.ip()
            ));
        }
        Ok(addrs)
    }

    /// Fetches `url`, following redirects: the final answer, or why not.
    async fn fetch(&self, url: &str) -> Result<Page, String> {
        let mut url = reqwest::Url::parse(url.trim()).map_err(|e| format!("{url}: {e}"))?;
        for _ in 0..=MAX_REDIRECTS {
            let addrs = self.check(&url).await?;
            let host = url.host_str().unwrap_or_default().to_string();
            let client = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy()
                .user_agent(concat!(
                    "lc-agent/",
                    env!("CARGO_PKG_VERSION"),
                    " fetch_url"
                ))
                .resolve_to_addrs(&host, &addrs)
                .build()
                .map_err(|e| format!("cannot make the HTTP client: {e}"))?;
            let response = client
                .get(url.clone())
                .header(
                    reqwest::header::ACCEPT,
                    "text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.1",
                )
                .send()
                .await
                .map_err(|e| format!("{url}: {}", error_chain(&e)))?;
            let status = response.status();
            if status.is_redirection() {
                let location = response
                    .headers()
                    .get(reqwest::header::LOCATION)
                    .and_then(|l| l.to_str().ok())
                    .ok_or_else(|| format!("{url}: HTTP {status} without a Location"))?;
                let next = url
                    .join(location)
                    .map_err(|e| format!("{url}: a redirect to {location}: {e}"))?;
                tracing::debug!(from = %url, to = %next, "fetch_url follows a redirect");
                url = next;
                continue;
            }
            return self.read(&url, response).await;
        }
        Err(format!(
            "{url}: more than {MAX_REDIRECTS} redirects; not followed further"
        ))
    }

    /// Reads a final answer (not a redirect): its body up to the cap.
    async fn read(&self, url: &reqwest::Url, response: reqwest::Response) -> Result<Page, String> {
        let status = response.status();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let length = response.content_length();
        if !is_text(&content_type) {
            return Err(format!(
                "{url} is not a text page (content type {content_type}{}); fetch_url reads \
                 HTML and text only",
                length.map(|n| format!(", {n} bytes")).unwrap_or_default()
            ));
        }
        let (body, cut) = self
            .body(response)
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        if body.contains(&0) {
            return Err(format!(
                "{url} is not a text page (its body has binary bytes, content type \
                 {content_type}); fetch_url reads HTML and text only"
            ));
        }
        Ok(Page {
            url: url.to_string(),
            status,
            content_type,
            body,
            cut: cut.then_some(length),
        })
    }

    /// The body, read up to `max_bytes`; whether it was cut.
    async fn body(&self, mut response: reqwest::Response) -> Result<(Vec<u8>, bool), String> {
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| error_chain(&e))? {
            let room = self.max_bytes - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                return Ok((body, true));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((body, false))
    }
}

/// A page as read: what [`FetchUrl::fetch`] gives, before it is
/// converted.
struct Page {
    url: String,
    status: reqwest::StatusCode,
    content_type: String,
    body: Vec<u8>,
    /// Cut at the cap: `Some(the length the server gave)`.
    cut: Option<Option<u64>>,
}

impl Page {
    /// The text the model reads (HTML as Markdown), and whether the
    /// status was a success.
    fn render(self, max_bytes: usize) -> Result<String, String> {
        let text = String::from_utf8_lossy(&self.body);
        let is_html = self.content_type.contains("html")
            || (self.content_type.is_empty() && text.trim_start().starts_with('<'));
        let page = if is_html {
            htmd::HtmlToMarkdown::builder()
                .skip_tags(vec!["script", "style", "noscript", "svg", "head"])
                .build()
                .convert(&text)
                .map_err(|e| format!("{}: the HTML could not be converted: {e}", self.url))?
        } else {
            text.into_owned()
        };
        let mut answer = String::new();
        if !self.status.is_success() {
            answer.push_str(&format!("HTTP {} from {}\n\n", self.status, self.url));
        }
        answer.push_str(page.trim());
        if let Some(length) = self.cut {
            answer.push_str(&format!(
                "\n\n[fetch_url: the page was cut at {max_bytes} bytes{}]",
                length.map(|n| format!(" of {n}")).unwrap_or_default()
            ));
        }
        if self.status.is_success() {
            Ok(answer)
        } else {
            Err(answer)
        }
    }
}

/// Whether a content type is one the tool reads (empty: sniffed later).
fn is_text(content_type: &str) -> bool {
    let mime = content_type.split(';').next().unwrap_or("").trim();
    mime.is_empty()
        || mime.starts_with("text/")
        || mime.ends_with("+xml")
        || mime.ends_with("+json")
        || matches!(
            mime,
            "application/json"
                | "application/xml"
                | "application/xhtml+xml"
                | "application/javascript"
        )
}

/// Whether `ip` is an address a wildcard never opens: loopback, private,
/// link-local, shared (carrier-grade NAT), unspecified, broadcast,
/// documentation, unique-local, or an IPv4 one mapped into IPv6.
fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || (a == 100 && (64..128).contains(&b))
                || a == 0
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_private(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
        }
    }
}

/// An error with its causes, `: `-joined.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[async_trait]
impl Tool for FetchUrl {
    fn name(&self) -> &str {
        FETCH_URL
    }

    fn description(&self) -> &str {
        "Fetches a web page (HTTP GET) and returns it as Markdown. Only hosts the user \
         allowed can be fetched; a large page is cut, and a very large answer is saved to a \
         file you can read in parts."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "The http or https URL to fetch."}
            },
            "required": ["url"]
        })
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Some(url) = args.get("url").and_then(Value::as_str) else {
            return Ok(ToolOutput::error(
                "Error: fetch_url needs `url`, the page's http or https URL",
            ));
        };
        // The time cap is the network's part; converting the page (on a
        // blocking thread: a large page takes a while) is not under it.
        let page = match tokio::time::timeout(self.timeout, self.fetch(url)).await {
            Ok(Ok(page)) => page,
            Ok(Err(why)) => return Ok(ToolOutput::error(format!("Error: {why}"))),
            Err(_) => {
                return Ok(ToolOutput::error(format!(
                    "Error: {url}: no whole answer within {} s (the fetch_url time cap)",
                    self.timeout.as_secs_f32()
                )))
            }
        };
        let max_bytes = self.max_bytes;
        let rendered = tokio::task::spawn_blocking(move || page.render(max_bytes))
            .await
            .map_err(|e| {
                ToolError::Failed(format!("fetch_url: converting the page failed: {e}"))
            })?;
        Ok(match rendered {
            Ok(text) => ToolOutput::ok(text),
            Err(why) => ToolOutput::error(format!("Error: {why}")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(allow: &[&str]) -> FetchUrl {
        FetchUrlSpec {
            allow: allow.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
        .tool()
    }

    #[test]
    fn the_allow_list_matches_names_and_wildcards() {
        let t = tool(&["docs.rs", "*.rust-lang.org", "127.0.0.1", "[::1]"]);
        assert_eq!(t.allowed("docs.rs"), Some(Allowed::Named));
        assert_eq!(t.allowed("DOCS.rs."), Some(Allowed::Named));
        assert_eq!(t.allowed("blog.rust-lang.org"), Some(Allowed::Wildcard));
        assert_eq!(t.allowed("rust-lang.org"), None);
        assert_eq!(t.allowed("evil-rust-lang.org"), None);
        assert_eq!(t.allowed("127.0.0.1"), Some(Allowed::Named));
        assert_eq!(t.allowed("[::1]"), Some(Allowed::Named));
        assert_eq!(t.allowed("localhost"), None);
        assert_eq!(tool(&["*"]).allowed("example.com"), Some(Allowed::Wildcard));
        assert_eq!(tool(&[]).allowed("example.com"), None);
    }

    #[test]
    fn private_addresses() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "172.16.0.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_private(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:2800:220:1::1"] {
            assert!(!is_private(ip.parse().unwrap()), "{ip}");
        }
    }

    #[tokio::test]
    async fn a_wildcard_never_opens_loopback() {
        let t = tool(&["*"]);
        let url = reqwest::Url::parse("http://127.0.0.1:9/").unwrap();
        let err = t.check(&url).await.unwrap_err();
        assert!(err.contains("private or loopback"), "{err}");
        let err = tool(&[]).check(&url).await.unwrap_err();
        assert!(err.contains("not on the fetch_url allow-list"), "{err}");
        let file = reqwest::Url::parse("file:///etc/passwd").unwrap();
        assert!(t.check(&file).await.unwrap_err().contains("only http"));
    }
}

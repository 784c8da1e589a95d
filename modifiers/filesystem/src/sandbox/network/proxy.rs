//! [`Proxy`]: the egress proxy of a domain allow-list — an HTTP forward
//! proxy with `CONNECT` on loopback, run by this process on a thread of
//! its own, that lets a sandboxed command reach only the allowed domains.
//!
//! A request names its host: `CONNECT host:port` (HTTPS and anything
//! tunnelled) or an absolute `http://host/…` URL. The host must be a
//! name that one of the allowed [`DomainPattern`]s matches; an IP
//! address, another name, or a request that is not HTTP is refused (403
//! or 400) and nothing is connected. The proxy resolves the name itself
//! (the sandbox has no resolver it could use); `LC_AGENT_SANDBOX_RESOLVE`
//! (`name=address,…`, read when a proxy starts) makes it resolve some
//! names to given addresses, as `curl --resolve` does — the tests reach
//! loopback servers by name this way.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::helper::receive_fd;
use super::DomainPattern;

/// The variable that makes the proxy resolve names to given addresses.
const RESOLVE_VARIABLE: &str = "LC_AGENT_SANDBOX_RESOLVE";

/// How long connecting to an upstream server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

type Body = BoxBody<Bytes, hyper::Error>;

/// What the proxy lets through.
#[derive(Debug)]
struct Rules {
    domains: Vec<DomainPattern>,
    resolve: Vec<(String, IpAddr)>,
}

/// An allow-list's proxy: listening on `127.0.0.1:port` (the Landlock
/// mechanism's commands connect there) and serving connections handed
/// over a socket pair (bubblewrap's helper passes them). Stops when the
/// last holder drops it.
#[derive(Debug)]
pub(crate) struct Proxy {
    rules: Arc<Rules>,
    port: u16,
    listener: tokio::task::AbortHandle,
}

/// The runtime every proxy runs on (one thread), made on first use.
fn runtime() -> Result<&'static tokio::runtime::Runtime, String> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("lc-agent-proxy")
                .enable_all()
                .build()
                .map_err(|e| format!("the sandbox's proxy cannot start: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The proxies alive, so that the sandboxes of one allow-list share one.
static PROXIES: Mutex<Vec<Weak<Proxy>>> = Mutex::new(Vec::new());

/// `LC_AGENT_SANDBOX_RESOLVE`: `name=address` pairs, comma separated.
fn resolve_overrides() -> Result<Vec<(String, IpAddr)>, String> {
    let Ok(text) = std::env::var(RESOLVE_VARIABLE) else {
        return Ok(Vec::new());
    };
    text.split(',')
        .filter(|pair| !pair.trim().is_empty())
        .map(|pair| {
            let (name, address) = pair
                .split_once('=')
                .ok_or_else(|| format!("{RESOLVE_VARIABLE}: `{pair}` is not name=address"))?;
            let address = address
                .trim()
                .parse()
                .map_err(|_| format!("{RESOLVE_VARIABLE}: `{address}` is not an IP address"))?;
            Ok((name.trim().to_ascii_lowercase(), address))
        })
        .collect()
}

impl Proxy {
    /// The proxy of `domains`: the one running for them, else a new one.
    pub(crate) fn for_domains(domains: &[DomainPattern]) -> Result<Arc<Self>, String> {
        let mut proxies = PROXIES
            .lock()
            .map_err(|_| "the sandbox's proxy list was poisoned".to_string())?;
        proxies.retain(|p| p.strong_count() > 0);
        if let Some(found) = proxies
            .iter()
            .filter_map(Weak::upgrade)
            .find(|p| p.rules.domains == domains)
        {
            return Ok(found);
        }
        let runtime = runtime()?;
        let rules = Arc::new(Rules {
            domains: domains.to_vec(),
            resolve: resolve_overrides()?,
        });
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|e| format!("the sandbox's proxy cannot listen on loopback: {e}"))?;
        let port = listener
            .local_addr()
            .map_err(|e| format!("the sandbox's proxy: {e}"))?
            .port();
        let served = rules.clone();
        let task = runtime.spawn(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            loop {
                if let Ok((stream, _)) = listener.accept().await {
                    tokio::spawn(serve(stream, served.clone()));
                }
            }
        });
        let proxy = Arc::new(Self {
            rules,
            port,
            listener: task.abort_handle(),
        });
        proxies.push(Arc::downgrade(&proxy));
        Ok(proxy)
    }

    /// The loopback port it listens on.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// A socket pair: the proxy serves every connection passed (as a
    /// descriptor) into the returned end, until that end is closed
    /// everywhere.
    pub(crate) fn channel(self: &Arc<Self>) -> Result<OwnedFd, String> {
        let (ours, theirs) = super::helper::socket_pair()?;
        let handle = runtime()?.handle().clone();
        let rules = self.rules.clone();
        let proxy = self.clone();
        std::thread::Builder::new()
            .name("lc-agent-proxy-channel".to_string())
            .spawn(move || {
                let _alive = proxy;
                while let Some(fd) = receive_fd(&ours) {
                    let stream = std::net::TcpStream::from(fd);
                    if stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    let rules = rules.clone();
                    handle.spawn(async move {
                        if let Ok(stream) = TcpStream::from_std(stream) {
                            serve(stream, rules).await;
                        }
                    });
                }
            })
            .map_err(|e| format!("the sandbox's proxy: {e}"))?;
        Ok(theirs)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

/// Serves one client connection (HTTP/1.1, upgrades for `CONNECT`).
async fn serve(stream: TcpStream, rules: Arc<Rules>) {
    let service = hyper::service::service_fn(move |req| handle(req, rules.clone()));
    let _ = hyper::server::conn::http1::Builder::new()
        .preserve_header_case(true)
        .title_case_headers(true)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
}

fn text(status: StatusCode, message: String) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::from(message + "\n"))
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() = status;
    response.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static("text/plain"),
    );
    response
}

impl Rules {
    /// Why `host` is refused, if it is.
    fn refusal(&self, host: &str) -> Option<String> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if bare.parse::<IpAddr>().is_ok() {
            return Some(format!(
                "lc-agent sandbox: {host} is an IP address; only allowed domain names are \
                 reached (--sandbox-allow-domain)"
            ));
        }
        if self.domains.iter().any(|d| d.matches(host)) {
            return None;
        }
        let allowed: Vec<String> = self.domains.iter().map(ToString::to_string).collect();
        Some(format!(
            "lc-agent sandbox: {host} is not an allowed domain (allowed: {}; add one with \
             --sandbox-allow-domain)",
            if allowed.is_empty() {
                "none".to_string()
            } else {
                allowed.join(", ")
            }
        ))
    }

    /// A connection to `host:port`, resolved by the proxy.
    async fn connect(&self, host: &str, port: u16) -> Result<TcpStream, String> {
        let lower = host.trim_end_matches('.').to_ascii_lowercase();
        let addresses: Vec<SocketAddr> = match self.resolve.iter().find(|(name, _)| *name == lower)
        {
            Some((_, ip)) => vec![SocketAddr::new(*ip, port)],
            None => tokio::net::lookup_host((lower.as_str(), port))
                .await
                .map_err(|e| format!("lc-agent sandbox: cannot resolve {host}: {e}"))?
                .collect(),
        };
        let connect = TcpStream::connect(addresses.as_slice());
        match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
            Ok(Ok(stream)) => Ok(stream),
            Ok(Err(e)) => Err(format!(
                "lc-agent sandbox: cannot connect to {host}:{port}: {e}"
            )),
            Err(_) => Err(format!(
                "lc-agent sandbox: connecting to {host}:{port} timed out"
            )),
        }
    }
}

/// One request: `CONNECT` to an allowed name opens a tunnel; an absolute
/// `http://` URL to one is forwarded; anything else is refused.
async fn handle(
    mut req: Request<Incoming>,
    rules: Arc<Rules>,
) -> Result<Response<Body>, Infallible> {
    if req.method() == Method::CONNECT {
        let Some(authority) = req.uri().authority().cloned() else {
            return Ok(text(
                StatusCode::BAD_REQUEST,
                "lc-agent sandbox: CONNECT needs host:port".to_string(),
            ));
        };
        let host = authority.host().to_string();
        if let Some(why) = rules.refusal(&host) {
            tracing::info!(%host, "sandbox proxy refused a CONNECT");
            return Ok(text(StatusCode::FORBIDDEN, why));
        }
        let port = authority.port_u16().unwrap_or(443);
        let mut upstream = match rules.connect(&host, port).await {
            Ok(stream) => stream,
            Err(why) => return Ok(text(StatusCode::BAD_GATEWAY, why)),
        };
        let upgrade = hyper::upgrade::on(&mut req);
        tokio::spawn(async move {
            if let Ok(upgraded) = upgrade.await {
                let mut client = TokioIo::new(upgraded);
                let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
            }
        });
        return Ok(Response::new(
            http_body_util::Empty::new()
                .map_err(|never| match never {})
                .boxed(),
        ));
    }
    let uri = req.uri().clone();
    let (Some("http"), Some(host)) = (uri.scheme_str(), uri.host()) else {
        return Ok(text(
            StatusCode::BAD_REQUEST,
            "lc-agent sandbox: this is a proxy: send an absolute http:// URL, or CONNECT \
             host:port for anything else"
                .to_string(),
        ));
    };
    let host = host.to_string();
    if let Some(why) = rules.refusal(&host) {
        tracing::info!(%host, "sandbox proxy refused a request");
        return Ok(text(StatusCode::FORBIDDEN, why));
    }
    let port = uri.port_u16().unwrap_or(80);
    let upstream = match rules.connect(&host, port).await {
        Ok(stream) => stream,
        Err(why) => return Ok(text(StatusCode::BAD_GATEWAY, why)),
    };
    let (mut sender, connection) =
        match hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await {
            Ok(pair) => pair,
            Err(e) => {
                return Ok(text(
                    StatusCode::BAD_GATEWAY,
                    format!("lc-agent sandbox: {host}: {e}"),
                ))
            }
        };
    tokio::spawn(connection);
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    *req.uri_mut() = match path.parse() {
        Ok(path) => path,
        Err(_) => {
            return Ok(text(
                StatusCode::BAD_REQUEST,
                "lc-agent sandbox: a bad path".to_string(),
            ))
        }
    };
    let headers = req.headers_mut();
    headers.remove("proxy-connection");
    headers.remove("proxy-authorization");
    match sender.send_request(req).await {
        Ok(response) => Ok(response.map(BodyExt::boxed)),
        Err(e) => Ok(text(
            StatusCode::BAD_GATEWAY,
            format!("lc-agent sandbox: {host}: {e}"),
        )),
    }
}

//! Running a server: bind checks, serving, slow clients, and a graceful
//! shutdown that saves the sessions still running.
//!
//! ```text
//!  check_bind(addr, tokens)   a non-loopback address needs tokens
//!  serve(listener, state, shutdown)
//!    accept ─▶ max_connections open? the oldest idle connection of the address with the
//!              most idle ones is closed for it (connections.rs); none idle ─▶ 429 (JSON,
//!              Retry-After) and close (refusals logged once a second at most, with a count)
//!           ─▶ nothing sent within silent_timeout? ─▶ closed (an idle connection holds no
//!              request slot; slots.rs gives those per client, with a reserve)
//!           ─▶ HTTP/1 or HTTP/2; headers must arrive within header_timeout (a kept-alive
//!              connection may idle that long before its next request), then closed;
//!              a body must arrive whole within body_timeout (408)
//!    ... shutdown fires ─▶ no new connections, no more runs taken from the queue;
//!       running requests and runs finish
//!    ─▶ after the grace period: runs still going are handed back (queued again, for another
//!       server or the next start), save_running() saves what still runs, and return
//! ```

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt;
use tower::ServiceExt;

use lc_agent_deepagent::bind_allowed;

use crate::app::app;
use crate::config::Tokens;
use crate::connections::Connections;
use crate::error::{default_message, ApiError};
use crate::state::AppState;

/// Errors of starting or running a server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Binding a non-loopback address without tokens.
    #[error("{0} is not a loopback address: set LC_AGENT_TOKEN (user:token,...) to serve it")]
    NeedsToken(SocketAddr),
    /// The socket failed.
    #[error("server io: {0}")]
    Io(#[from] std::io::Error),
    /// The session store could not be opened.
    #[error(transparent)]
    Store(#[from] lc_agent::ListError),
}

/// Refuses to serve a non-loopback address without tokens.
///
/// ```
/// use lc_agent_server::{check_bind, Tokens};
/// assert!(check_bind("127.0.0.1:8080".parse().unwrap(), &Tokens::none()).is_ok());
/// assert!(check_bind("0.0.0.0:8080".parse().unwrap(), &Tokens::none()).is_err());
/// assert!(check_bind("0.0.0.0:8080".parse().unwrap(), &Tokens::parse("a:t").unwrap()).is_ok());
/// ```
pub fn check_bind(addr: SocketAddr, tokens: &Tokens) -> Result<(), ServeError> {
    if !bind_allowed(addr, !tokens.is_empty()) {
        return Err(ServeError::NeedsToken(addr));
    }
    Ok(())
}

/// How long a refused connection's 429 may take to write.
const REFUSE_WRITE: Duration = Duration::from_secs(2);

/// Serves on `listener` until `shutdown` completes, then stops accepting,
/// lets running requests finish for the configured grace period, and saves
/// the sessions still running.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let local = listener.local_addr()?;
    let router = app(state.clone(), Some(local));
    state.start_runs();
    let config = &state.config;
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_timeout)
        // More than the router answers (it says 431 in JSON); hyper's own
        // answer (no body) only past this.
        .max_headers(crate::guard::MAX_HEADERS * 4);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(config.header_timeout))
        .keep_alive_timeout(config.header_timeout);
    let connections = Connections::new(config.max_connections);
    let silent = config.silent_timeout;
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of file descriptors and the like: wait, go on.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(conn) = connections.enter(remote.ip()) else {
            // Every open connection is busy with a request: no task, no
            // wait for this one.
            connections.refused(remote, "every connection is busy");
            tokio::spawn(refuse(stream));
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = router.clone().map_request({
            let conn = conn.clone();
            move |mut request: axum::http::Request<Incoming>| {
                request.extensions_mut().insert(ConnectInfo(remote));
                request.extensions_mut().insert(conn.clone());
                request.map(Body::new)
            }
        });
        let builder = builder.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            // The header timeout starts at the first byte: a connection
            // that sends nothing at all is closed here, or sooner when a
            // new connection needs its place.
            let mut first = [0u8; 1];
            tokio::select! {
                sent = tokio::time::timeout(silent, stream.peek(&mut first)) => match sent {
                    Ok(Ok(n)) if n > 0 => {}
                    _ => {
                        tracing::debug!(%remote, "a connection sent nothing: closed");
                        return;
                    }
                },
                () = conn.evicted() => {
                    tracing::debug!(%remote, "a silent connection closed to make room");
                    return;
                }
            }
            let connection = builder
                .serve_connection_with_upgrades(
                    TokioIo::new(stream),
                    TowerToHyperService::new(service),
                )
                .into_owned();
            tokio::select! {
                served = watcher.watch(connection) => {
                    if let Err(e) = served {
                        tracing::debug!(%remote, error = %e, "connection ended with an error");
                    }
                }
                () = conn.evicted() => {
                    tracing::debug!(%remote, "an idle connection closed to make room");
                }
            }
            drop(conn);
        });
    }
    drop(listener);
    tracing::info!(running = state.running(), "shutting down");
    // No more runs from the queue; the ones going on get the grace period.
    state.runs.stop_taking();
    let finished = async {
        graceful.shutdown().await;
        while state.runs.executing() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    match tokio::time::timeout(state.config.shutdown_grace, finished).await {
        Ok(()) => {}
        Err(_) => {
            let handed = state.runs.hand_back().await;
            let saved = state.save_running().await;
            tracing::warn!(
                handed,
                saved,
                "grace period over: runs still going were handed back (queued again), sessions saved"
            );
        }
    }
    // Out of the run queue's consumer group: it lists live servers only.
    state.runs.leave().await;
    Ok(())
}

/// The 429 a refused connection gets.
fn refusal() -> String {
    let status = axum::http::StatusCode::TOO_MANY_REQUESTS;
    let body = ApiError::Status(status, default_message(status, &axum::http::Method::GET))
        .body()
        .to_string();
    format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Answers a connection over the limit with a 429 and closes it.
async fn refuse(mut stream: tokio::net::TcpStream) {
    let answer = refusal();
    let _ = tokio::time::timeout(REFUSE_WRITE, async {
        let _ = stream.write_all(answer.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

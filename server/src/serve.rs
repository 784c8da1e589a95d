//! Running a server: bind checks, serving, and a graceful shutdown that
//! saves the sessions still running.
//!
//! ```text
//!  check_bind(addr, tokens)   a non-loopback address needs tokens
//!  serve(listener, state, shutdown)
//!    ─▶ axum::serve ... shutdown fires ─▶ no new connections, no more runs taken from the
//!       queue; running requests and runs finish
//!    ─▶ after the grace period: runs still going are handed back (queued again, for another
//!       server or the next start), save_running() saves what still runs, and return
//! ```

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use crate::app::router;
use crate::config::Tokens;
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
    if tokens.is_empty() && !addr.ip().is_loopback() {
        return Err(ServeError::NeedsToken(addr));
    }
    Ok(())
}

/// Serves on `listener` until `shutdown` completes, then stops accepting,
/// lets running requests finish for the configured grace period, and saves
/// the sessions still running.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let app = router(state.clone());
    state.start_runs();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    // Small writes (SSE events) go out at once, not after a delayed ACK.
    let server = axum::serve(listener, app)
        .tcp_nodelay(true)
        .with_graceful_shutdown(async move {
            shutdown.await;
            let _ = tx.send(());
        });
    let grace = state.config.shutdown_grace;
    let mut server = std::pin::pin!(std::future::IntoFuture::into_future(server));
    tokio::select! {
        result = &mut server => return Ok(result?),
        _ = rx => {}
    }
    tracing::info!(running = state.running(), "shutting down");
    // No more runs from the queue; the ones going on get the grace period.
    state.runs.stop_taking();
    let finished = async {
        let result = (&mut server).await;
        while state.runs.executing() > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        result
    };
    match tokio::time::timeout(grace, finished).await {
        Ok(result) => result?,
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
    Ok(())
}

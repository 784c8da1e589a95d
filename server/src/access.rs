//! The access log: one line per request, in a span with the request's id.
//!
//! ```text
//!  request ─▶ id: its x-request-id (1-64 of A-Z a-z 0-9 . _ -) or a new one
//!          ─▶ span "request" {id, method, route}   (everything the request logs is in it)
//!          ─▶ handler (User records the user)
//!          ─▶ one line, target lc_agent_server::access:
//!             method route path status duration_ms user session id
//!             (a request the client aborted before its answer: status 499, aborted=true)
//!          ─▶ the answer carries x-request-id
//! ```
//!
//! The path is logged without its query (a `?token=` never reaches the
//! log). `duration_ms` is the time to the answer's head: a streamed
//! answer's stream goes on after it. The session is the one in the path,
//! or the one the answer names (`x-lc-agent-session`).

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use parking_lot::Mutex;
use tracing::Instrument;

/// The header carrying a request's id (in and out).
pub(crate) const REQUEST_ID_HEADER: &str = "x-request-id";

/// The header naming (in) or reporting (out) the session of a chat
/// completion (the access log names it too).
pub(crate) const SESSION_HEADER: &str = "x-lc-agent-session";

/// The header naming (out) the run of a chat completion.
pub(crate) const RUN_HEADER: &str = "x-lc-agent-run";

/// What a handler tells the access log (the user, once known).
#[derive(Debug, Clone, Default)]
pub(crate) struct AccessNote(Arc<Mutex<Option<String>>>);

impl AccessNote {
    /// Records the request's user.
    pub(crate) fn user(&self, user: &str) {
        *self.0.lock() = Some(user.to_string());
    }
}

fn request_id(request: &Request) -> String {
    let given = request
        .headers()
        .get(REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            !v.is_empty()
                && v.len() <= 64
                && v.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        });
    match given {
        Some(id) => id.to_string(),
        None => uuid::Uuid::new_v4().simple().to_string(),
    }
}

/// The session id in `/api/sessions/{id}/...`, if any.
fn session_in_path(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/api/sessions/")?;
    let id = rest.split('/').next()?;
    uuid::Uuid::parse_str(id).ok().map(|_| id)
}

/// A request's access line, written once: with its status when the
/// answer's head is ready, or — when the client went away first and the
/// request was dropped — when it drops, as status 499 (`client closed the
/// request`, nginx's number), so aborted requests are in the log too.
struct Line {
    started: Instant,
    method: axum::http::Method,
    route: String,
    path: String,
    note: AccessNote,
    span: tracing::Span,
    written: bool,
}

impl Line {
    fn write(&mut self, status: u16, session: Option<String>) {
        self.written = true;
        let user = self.note.0.lock().clone();
        let duration_ms = self.started.elapsed().as_secs_f64() * 1000.0;
        let (method, route, path) = (&self.method, &self.route, &self.path);
        self.span.in_scope(|| {
            tracing::info!(
                target: "lc_agent_server::access",
                method = %method,
                route = %route,
                path = %path,
                status,
                duration_ms = (duration_ms * 1000.0).round() / 1000.0,
                user = user.as_deref().unwrap_or("-"),
                session = session.as_deref().unwrap_or("-"),
                aborted = status == ABORTED,
                "{method} {path} {status}"
            );
        });
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        if !self.written {
            let session = session_in_path(&self.path).map(str::to_string);
            self.write(ABORTED, session);
        }
    }
}

/// The status an aborted request is logged with (the client closed it).
const ABORTED: u16 = 499;

/// Middleware: the request's span and its access line.
pub(crate) async fn log(mut request: Request, next: Next) -> Response {
    let id = request_id(&request);
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_string())
        .unwrap_or_else(|| "(none)".to_string());
    let note = AccessNote::default();
    request.extensions_mut().insert(note.clone());
    let span = tracing::info_span!("request", id = %id, method = %method, route = %route);
    let mut line = Line {
        started: Instant::now(),
        method,
        route,
        path,
        note,
        span: span.clone(),
        written: false,
    };
    let mut response = next.run(request).instrument(span).await;
    let status = response.status().as_u16();
    let session = session_in_path(&line.path).map(str::to_string).or_else(|| {
        response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    });
    line.write(status, session);
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    response
}

//! A model server for wire-level tests: axum on 127.0.0.1, answering each
//! request with the next canned [`Reply`] (JSON, an error, an event
//! stream cut anywhere, slow or stalled) and recording what it got (body
//! and headers).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use futures::StreamExt;
use parking_lot::Mutex;
use serde_json::Value;

/// One canned answer.
#[derive(Clone)]
pub struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    /// How long the server waits before answering at all.
    delay: Duration,
    /// Body pieces, each sent after its pause (several pieces = a body
    /// that arrives in several network writes).
    pieces: Vec<(Duration, Bytes)>,
}

impl Reply {
    /// A 200 answer with this JSON body.
    pub fn json(body: Value) -> Self {
        Self::raw(200, body.to_string())
    }

    /// An answer with this status and body (as JSON content).
    pub fn raw(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            headers: vec![("content-type", "application/json".into())],
            delay: Duration::ZERO,
            pieces: vec![(Duration::ZERO, Bytes::from(body.into()))],
        }
    }

    /// An event stream of these `data:` payloads, cut into small network
    /// writes that do not respect event boundaries.
    pub fn sse(events: &[String]) -> Self {
        let text: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        Self::sse_text(&text)
    }

    /// This event-stream text, cut into small network writes that do not
    /// respect event boundaries.
    fn sse_text(text: &str) -> Self {
        let pieces = text
            .as_bytes()
            .chunks(37)
            .map(|c| (Duration::from_millis(2), Bytes::copy_from_slice(c)))
            .collect();
        Self {
            status: 200,
            headers: vec![("content-type", "text/event-stream".into())],
            delay: Duration::ZERO,
            pieces,
        }
    }

    /// An event stream of these JSON payloads, each with an `event:` line
    /// naming its `type` (as Anthropic's Messages API sends them), cut
    /// into small network writes.
    pub fn sse_typed(events: &[Value]) -> Self {
        let text: String = events
            .iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
            .collect();
        Self::sse_text(&text)
    }

    /// An event stream of these `data:` payloads, cut into network writes
    /// at these byte offsets (anywhere: inside a line, a UTF-8 character or
    /// the blank line between events).
    pub fn sse_cut(events: &[String], cuts: &[usize]) -> Self {
        let text: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        let bytes = text.as_bytes();
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut pieces = Vec::new();
        let mut start = 0;
        for cut in cuts.into_iter().chain([bytes.len()]) {
            pieces.push((Duration::ZERO, Bytes::copy_from_slice(&bytes[start..cut])));
            start = cut;
        }
        Self {
            status: 200,
            headers: vec![("content-type", "text/event-stream".into())],
            delay: Duration::ZERO,
            pieces,
        }
    }

    /// Adds a response header.
    pub fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// Waits this long before answering.
    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Appends a body piece sent after `pause`.
    pub fn then(mut self, pause: Duration, piece: &str) -> Self {
        self.pieces
            .push((pause, Bytes::copy_from_slice(piece.as_bytes())));
        self
    }
}

/// What the server received.
struct Seen {
    body: Value,
    headers: HeaderMap,
}

struct ServerState {
    replies: Vec<Reply>,
    seen: Mutex<Vec<Seen>>,
}

/// A server answering request `n` with `replies[n]` (the last reply
/// repeats).
pub struct MockServer {
    /// The API root models are pointed at.
    pub base_url: String,
    state: Arc<ServerState>,
}

impl MockServer {
    /// A server on a free loopback port answering `POST
    /// {base_path}{endpoint}`; [`MockServer::base_url`] is the root plus
    /// `base_path`.
    pub async fn start(base_path: &str, endpoint: &str, replies: Vec<Reply>) -> Self {
        let state = Arc::new(ServerState {
            replies,
            seen: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route(&format!("{base_path}{endpoint}"), post(handle))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            base_url: format!("http://{addr}{base_path}"),
            state,
        }
    }

    /// How many requests the server received.
    pub fn requests(&self) -> usize {
        self.state.seen.lock().len()
    }

    /// The JSON body of request `n` (`null` when it was not JSON).
    pub fn body(&self, n: usize) -> Value {
        self.state.seen.lock()[n].body.clone()
    }

    /// The `Authorization` header of request `n`.
    pub fn authorization(&self, n: usize) -> Option<String> {
        self.header(n, "authorization")
    }

    /// The header `name` of request `n`.
    pub fn header(&self, n: usize, name: &str) -> Option<String> {
        self.state.seen.lock()[n]
            .headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
    }
}

async fn handle(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let n = {
        let mut seen = state.seen.lock();
        seen.push(Seen {
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            headers,
        });
        seen.len() - 1
    };
    let reply = state.replies[n.min(state.replies.len() - 1)].clone();
    tokio::time::sleep(reply.delay).await;
    let pieces = futures::stream::iter(reply.pieces).then(|(pause, piece)| async move {
        tokio::time::sleep(pause).await;
        Ok::<_, Infallible>(piece)
    });
    let mut response = Response::builder().status(StatusCode::from_u16(reply.status).unwrap());
    for (name, value) in reply.headers {
        response = response.header(name, value);
    }
    response.body(Body::from_stream(pieces)).unwrap()
}

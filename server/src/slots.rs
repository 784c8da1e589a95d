//! Request slots, shared fairly: every request holds a slot while it is
//! served (a streamed answer until its end), counted per client — its user
//! when it carries a known token, else its address (`client_addr.rs`, so
//! users behind a trusted proxy are told apart) — with a cap per client
//! and a global reserve: the last slots go only to clients holding none,
//! so one client's burst (or many clients' connections) cannot keep
//! another client waiting. A request that finds no slot waits for one
//! (`queue_wait`), then gets 429 with `Retry-After`, which the SDKs retry.
//!
//! A request's body is read before it takes a slot, and must arrive whole
//! within `body_timeout` (then 408): a slow body holds no slot and its
//! connection only that long. A connection is busy (not idle, so never
//! closed to make room: `connections.rs`) from a request's start to the end
//! of its answer.
//!
//! ```text
//!  request ─▶ connection busy ─▶ body within body_timeout? ─▶ else 408
//!          ─▶ client = user (known token) | address ─▶ slot: under the client's cap, and
//!             (the client holds none, or more than the reserve is free)?
//!             ─▶ wait up to queue_wait for one ─▶ else 429 + Retry-After
//!          ─▶ handler ─▶ the answer's body holds the slot until it is sent
//! ```

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body::{Body as HttpBody, Frame, SizeHint};
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::config::{SlotSettings, Tokens};
use crate::connections::{Busy, Conn};
use crate::error::ApiError;

/// Who a slot is counted for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Client {
    User(String),
    Addr(IpAddr),
}

/// The slots of a server (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct Slots {
    settings: SlotSettings,
    tokens: Tokens,
    body_limit: usize,
    held: Mutex<Held>,
    freed: Notify,
}

/// The slots held, in all and per client.
#[derive(Debug, Default)]
struct Held {
    total: usize,
    by: HashMap<Client, usize>,
}

impl Slots {
    /// Slots shared as `settings` say; `tokens` name the users; a body
    /// is read up to `body_limit` bytes (more: 413).
    pub(crate) fn new(settings: SlotSettings, tokens: Tokens, body_limit: usize) -> Arc<Self> {
        Arc::new(Self {
            settings,
            tokens,
            body_limit,
            held: Mutex::new(Held::default()),
            freed: Notify::new(),
        })
    }

    /// A slot for `client` now, if the rules allow one.
    fn try_take(self: &Arc<Self>, client: &Client) -> Option<Slot> {
        let s = &self.settings;
        let mut held = self.held.lock();
        let mine = held.by.get(client).copied().unwrap_or(0);
        let free = s.max_requests.max(1).saturating_sub(held.total);
        let allowed =
            free > 0 && mine < s.max_client_requests.max(1) && (mine == 0 || free > s.reserve);
        if !allowed {
            return None;
        }
        held.total += 1;
        *held.by.entry(client.clone()).or_insert(0) += 1;
        Some(Slot {
            slots: self.clone(),
            client: client.clone(),
        })
    }

    /// A slot for `client`, waiting up to the queue wait for one.
    async fn take(self: &Arc<Self>, client: &Client) -> Option<Slot> {
        let deadline = tokio::time::Instant::now() + self.settings.queue_wait;
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if let Some(slot) = self.try_take(client) {
                return Some(slot);
            }
            if tokio::time::timeout_at(deadline, freed).await.is_err() {
                return self.try_take(client);
            }
        }
    }

    /// Who `request` counts for.
    fn client_of(&self, request: &Request) -> Client {
        let token = request
            .headers()
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(lc_agent_deepagent::bearer_token);
        if let Some(user) = token.and_then(|t| self.tokens.user_of(t)) {
            return Client::User(user.to_string());
        }
        let peer = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map_or(IpAddr::from([127, 0, 0, 1]), |c| c.0.ip());
        Client::Addr(crate::client_addr::client_ip(
            peer,
            request.headers(),
            &self.settings.trusted_proxies,
        ))
    }
}

/// A slot held; freed when dropped.
#[derive(Debug)]
struct Slot {
    slots: Arc<Slots>,
    client: Client,
}

impl Drop for Slot {
    fn drop(&mut self) {
        {
            let mut held = self.slots.held.lock();
            held.total = held.total.saturating_sub(1);
            if let Some(n) = held.by.get_mut(&self.client) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    held.by.remove(&self.client);
                }
            }
        }
        self.slots.freed.notify_waiters();
    }
}

/// The middleware (see the [module docs](self)).
pub(crate) async fn admit(
    State(slots): State<Arc<Slots>>,
    request: Request,
    next: Next,
) -> Response {
    let busy = match request.extensions().get::<Conn>() {
        Some(conn) => match conn.busy() {
            Some(busy) => Some(busy),
            // Closed to make room as the request came: not served.
            None => return too_many("the server is full; try again shortly"),
        },
        None => None,
    };
    let request = match whole_body(request, slots.settings.body_timeout, slots.body_limit).await {
        Ok(request) => request,
        Err(answer) => return *answer,
    };
    let client = slots.client_of(&request);
    let Some(slot) = slots.take(&client).await else {
        tracing::debug!(?client, "no request slot within the queue wait: 429");
        return too_many(
            "too many requests at once from this client (or the server is full); \
             retry after the time in Retry-After",
        );
    };
    let response = next.run(request).await;
    response.map(|body| {
        Body::new(Holding {
            body,
            _slot: slot,
            _busy: busy,
        })
    })
}

/// The request with its body read whole within `timeout` (408 if not; 413
/// past `limit` bytes).
async fn whole_body(
    request: Request,
    timeout: Duration,
    limit: usize,
) -> Result<Request, Box<Response>> {
    let (parts, body) = request.into_parts();
    let hint = body.size_hint();
    if hint.exact() == Some(0) {
        return Ok(Request::from_parts(parts, body));
    }
    let too_large = || {
        Box::new(
            ApiError::Status(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the request body is larger than the server's --body-limit".into(),
            )
            .into_response(),
        )
    };
    if hint.lower() > limit as u64 {
        return Err(too_large());
    }
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(bytes)) => Ok(Request::from_parts(parts, Body::from(bytes))),
        Ok(Err(e)) => {
            let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&e);
            while let Some(c) = cause {
                if c.is::<http_body_util::LengthLimitError>() {
                    return Err(too_large());
                }
                cause = c.source();
            }
            let answer = ApiError::BadRequest(format!("the request body could not be read: {e}"));
            Err(Box::new(answer.into_response()))
        }
        Err(_) => Err(Box::new(
            ApiError::Status(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive within {} s (--body-timeout); send it again, \
                     whole",
                    timeout.as_secs_f64()
                ),
            )
            .into_response(),
        )),
    }
}

/// A 429 with `Retry-After: 1`.
fn too_many(message: &str) -> Response {
    let mut answer =
        ApiError::Status(StatusCode::TOO_MANY_REQUESTS, message.to_string()).into_response();
    answer
        .headers_mut()
        .insert("retry-after", HeaderValue::from_static("1"));
    answer
}

/// An answer's body holding its request's slot (and its connection busy)
/// until it is sent.
struct Holding {
    body: Body,
    _slot: Slot,
    _busy: Option<Busy>,
}

impl HttpBody for Holding {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

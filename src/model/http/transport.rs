//! Getting an answer over HTTP, for every provider: [`Transport`] posts a
//! request ([`Outgoing`]) to the endpoint with the provider's key header
//! ([`Auth`]) and fixed headers, retries what is worth retrying, applies
//! the timeouts, and
//! turns the HTTP client's failures into [`ModelError`]s (with the API key
//! erased from their text and the client's error kept as their source).
//! It hands back the body as text or, for a streamed answer, the data of
//! each server-sent event ([`Events`]).
//!
//! - **Retries**: only what can succeed when tried again: HTTP 429, 502,
//!   503, 504 and 529 (Anthropic's "overloaded") and dropped connections,
//!   up to `max_retries` times; a 500
//!   at most once (it is usually the server refusing this very request);
//!   each after exponential backoff with jitter or as long as
//!   `Retry-After` (in seconds) says, never more than 60 s. Other 4xx,
//!   timeouts, a server saying a feature is not supported and a prompt
//!   that does not fit fail at once. Every retry is logged (a warning naming the status, the wait
//!   and the attempt), except the first retry of a kept-alive connection
//!   the server had closed (servers close idle connections; the retry on a
//!   fresh one is routine): that one is a debug line, and only its failure
//!   is said.
//! - **Timeouts**: a non-streamed request has reqwest's whole-request
//!   timeout; a streamed one is limited while waiting for the response,
//!   then for each next event.

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{Stream, StreamExt};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::redact::{describe, excerpt, ApiKey, MAX_ERROR_BODY_CHARS};
use crate::error::ModelError;
use crate::model::settings::Resolved;

/// No wait between two attempts is longer than this, whatever
/// `Retry-After` says.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(60);

/// A request body a [`Transport`] sends: its JSON, and what the logs say
/// of it.
pub(crate) trait Outgoing: serde::Serialize + Sync {
    /// The model asked.
    fn model(&self) -> &str;
    /// Whether the answer is asked as an event stream.
    fn stream(&self) -> bool;
    /// How many messages and tools the request carries (for the logs).
    fn counts(&self) -> (usize, usize);
}

/// How the API key is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Auth {
    /// `Authorization: Bearer <key>` (OpenAI and the servers copying it).
    Bearer,
    /// The key alone in this header (Anthropic's `x-api-key`).
    #[cfg_attr(not(feature = "anthropic"), allow(dead_code))]
    Header(&'static str),
}

/// Sends model requests to one endpoint; clones share the HTTP connection
/// pool.
#[derive(Clone)]
pub(crate) struct Transport {
    client: reqwest::Client,
    pub(crate) endpoint: reqwest::Url,
    pub(crate) api_key: Option<ApiKey>,
    auth: Auth,
    headers: HeaderMap,
    pub(crate) timeout: Duration,
    pub(crate) max_retries: u32,
    pub(crate) retry_base_delay: Duration,
}

impl Transport {
    /// A transport to `endpoint` with these settings, with its own HTTP
    /// client.
    pub(crate) fn new(endpoint: reqwest::Url, settings: &Resolved) -> Result<Self, ModelError> {
        let client = reqwest::Client::builder()
            .user_agent(concat!("lc-agent/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ModelError::Config {
                message: format!("cannot create the HTTP client: {e}"),
                source: Some(Arc::new(e)),
            })?;
        Ok(Self {
            client,
            endpoint,
            api_key: settings.api_key.clone().map(ApiKey),
            auth: Auth::Bearer,
            headers: HeaderMap::new(),
            timeout: settings.timeout,
            max_retries: settings.max_retries,
            retry_base_delay: settings.retry_base_delay,
        })
    }

    /// Sends the key as `auth` says (default: a bearer token).
    #[cfg_attr(not(feature = "anthropic"), allow(dead_code))]
    pub(crate) fn with_auth(mut self, auth: Auth) -> Self {
        self.auth = auth;
        self
    }

    /// Sends this header with every request (e.g. an API version).
    #[cfg_attr(not(feature = "anthropic"), allow(dead_code))]
    pub(crate) fn with_header(mut self, name: &'static str, value: &'static str) -> Self {
        self.headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
        self
    }

    /// The HTTP client (for requests other than chat completions).
    #[cfg_attr(not(feature = "openai"), allow(dead_code))]
    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// Posts `body`, retrying what is worth retrying; returns a response
    /// with a success status.
    pub(crate) async fn post(&self, body: &impl Outgoing) -> Result<reqwest::Response, ModelError> {
        let (messages, tools) = body.counts();
        tracing::debug!(
            model = %body.model(),
            endpoint = %self.endpoint,
            messages,
            tools,
            stream = body.stream(),
            "model request"
        );
        let mut attempt = 0;
        let mut retried_once = false;
        loop {
            match self.post_once(body).await {
                Ok(response) => return Ok(response),
                Err(failure)
                    if attempt < self.max_retries
                        && match failure.retry {
                            Retry::Always => true,
                            Retry::Once => !retried_once,
                            Retry::Never => false,
                        } =>
                {
                    retried_once |= failure.retry == Retry::Once;
                    let delay = self.retry_delay(attempt, failure.retry_after);
                    attempt += 1;
                    let delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
                    if failure.closed_connection && attempt == 1 {
                        tracing::debug!(
                            model = %body.model(),
                            delay_ms,
                            error = %failure.error,
                            "the server closed a kept-alive connection; trying on a new one"
                        );
                    } else {
                        tracing::warn!(
                            model = %body.model(),
                            attempt,
                            max_retries = self.max_retries,
                            delay_ms,
                            error = %failure.error,
                            "model request failed; retrying"
                        );
                    }
                    tokio::time::sleep(delay).await;
                }
                Err(failure) => return Err(failure.error),
            }
        }
    }

    /// One attempt. Non-streamed requests use reqwest's whole-request
    /// timeout; streamed ones limit only the wait for the response here.
    async fn post_once(&self, body: &impl Outgoing) -> Result<reqwest::Response, Failure> {
        if body.stream() {
            tokio::time::timeout(self.timeout, self.send(body))
                .await
                .unwrap_or_else(|_| Err(Failure::fatal(ModelError::Timeout(self.timeout))))
        } else {
            self.send(body).await
        }
    }

    async fn send(&self, body: &impl Outgoing) -> Result<reqwest::Response, Failure> {
        let mut request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .json(body);
        if let Some(key) = &self.api_key {
            request = match self.auth {
                Auth::Bearer => request.bearer_auth(&key.0),
                Auth::Header(name) => request.header(name, &key.0),
            };
        }
        if !body.stream() {
            request = request.timeout(self.timeout);
        }
        let response = request.send().await.map_err(|e| self.send_failure(e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = retry_after(response.headers());
        let html = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/html"));
        let text = response.text().await.unwrap_or_default();
        let html = html || text.trim_start().starts_with('<');
        // Recognised before any masking, so a key that happens to appear in
        // the server's words cannot hide what they say.
        if let Some(overflow) = super::overflow::overflow_in(&text) {
            return Err(Failure::fatal(ModelError::ContextOverflow {
                tokens: overflow.tokens,
                window: overflow.window,
            }));
        }
        let retry = match status.as_u16() {
            _ if !html && refuses_a_feature(&text) => Retry::Never,
            429 | 502..=504 | 529 => Retry::Always,
            500 => Retry::Once,
            _ => Retry::Never,
        };
        Err(Failure {
            error: ModelError::Http {
                status: status.as_u16(),
                body: if html {
                    // A web page (a proxy's, or a server that is not this
                    // API) says nothing an API user can act on.
                    format!(
                        "a web page{} where an API answer was expected: is {} the model's API?",
                        page_title(&text)
                            .map(|t| format!(" (\"{}\")", excerpt(self.api_key.as_ref(), t, 80)))
                            .unwrap_or_default(),
                        self.endpoint
                    )
                } else {
                    excerpt(self.api_key.as_ref(), text.trim(), MAX_ERROR_BODY_CHARS)
                },
            },
            retry,
            retry_after,
            closed_connection: false,
        })
    }

    /// How long to wait before retry number `attempt + 1`: `Retry-After`
    /// when the server sent it, otherwise exponential backoff with equal
    /// jitter (half fixed, half random).
    fn retry_delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(delay) = retry_after {
            return delay.min(MAX_RETRY_DELAY);
        }
        let backoff = self
            .retry_base_delay
            .saturating_mul(2u32.saturating_pow(attempt))
            .min(MAX_RETRY_DELAY);
        let half = backoff / 2;
        half + half.mul_f64(rand::random::<f64>())
    }

    /// The whole body of `response` as text. The body of a streamed
    /// request (from a server that answered in one piece) is read within
    /// the timeout, as such a request has no whole-request timeout.
    pub(crate) async fn text(
        &self,
        response: reqwest::Response,
        streamed: bool,
    ) -> Result<String, ModelError> {
        let read = response.text();
        let text = if streamed {
            tokio::time::timeout(self.timeout, read)
                .await
                .map_err(|_| ModelError::Timeout(self.timeout))?
        } else {
            read.await
        };
        text.map_err(|e| self.read_error(e))
    }

    /// The server-sent events of a streamed `response`.
    pub(crate) fn events(
        &self,
        response: reqwest::Response,
    ) -> Events<
        '_,
        impl Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Unpin + use<>,
    > {
        Events {
            events: response.bytes_stream().eventsource(),
            transport: self,
        }
    }

    /// Classifies a failure to get a response at all.
    fn send_failure(&self, error: reqwest::Error) -> Failure {
        if error.is_timeout() {
            Failure::fatal(ModelError::Timeout(self.timeout))
        } else if error.is_builder() {
            Failure::fatal(ModelError::Config {
                message: describe(self.api_key.as_ref(), &error),
                source: Some(self.shared(error)),
            })
        } else {
            Failure {
                // Not a connection that could not be made: one that was
                // (a pooled, kept-alive one) and got closed under the request.
                closed_connection: !error.is_connect(),
                error: self.connect_error(error),
                retry: Retry::Always,
                retry_after: None,
            }
        }
    }

    /// Maps a failure while reading the response body.
    fn read_error(&self, error: reqwest::Error) -> ModelError {
        if error.is_timeout() {
            ModelError::Timeout(self.timeout)
        } else {
            self.connect_error(error)
        }
    }

    fn connect_error(&self, error: reqwest::Error) -> ModelError {
        ModelError::Connect {
            message: describe(self.api_key.as_ref(), &error),
            source: self.shared(error),
        }
    }

    fn sse_error(&self, error: EventStreamError<reqwest::Error>) -> ModelError {
        match error {
            EventStreamError::Transport(e) => self.read_error(e),
            EventStreamError::Utf8(e) => ModelError::InvalidResponse {
                message: format!("event stream is not UTF-8: {e}"),
                source: Some(Arc::new(e)),
            },
            EventStreamError::Parser(e) => ModelError::InvalidResponse {
                message: format!("malformed event stream: {e}"),
                source: Some(Arc::new(e)),
            },
        }
    }

    /// `error`, to keep as the source of a [`ModelError`]. Its text names
    /// the URL, so the URL is dropped should it contain the key.
    fn shared(&self, error: reqwest::Error) -> Arc<dyn Error + Send + Sync> {
        let shows_key = match (&self.api_key, error.url()) {
            (Some(ApiKey(key)), Some(url)) => !key.is_empty() && url.as_str().contains(key),
            _ => false,
        };
        Arc::new(if shows_key {
            error.without_url()
        } else {
            error
        })
    }
}

/// The server-sent events of one streamed response, each awaited for at
/// most the timeout.
pub(crate) struct Events<'a, S> {
    events: S,
    transport: &'a Transport,
}

impl<S> Events<'_, S>
where
    S: Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Unpin,
{
    /// The data of the next event; `None` once the stream has closed.
    pub(crate) async fn next(&mut self) -> Result<Option<String>, ModelError> {
        let timeout = self.transport.timeout;
        match tokio::time::timeout(timeout, self.events.next()).await {
            Err(_) => Err(ModelError::Timeout(timeout)),
            Ok(None) => Ok(None),
            Ok(Some(Ok(event))) => Ok(Some(event.data)),
            Ok(Some(Err(error))) => Err(self.transport.sse_error(error)),
        }
    }
}

/// Whether `response` is an event stream (a response without a
/// content type is taken for one).
pub(crate) fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|v| v.starts_with("text/event-stream"))
}

/// One failed attempt, and whether it is worth another.
struct Failure {
    error: ModelError,
    retry: Retry,
    retry_after: Option<Duration>,
    /// An open connection was closed under the request (the server ended
    /// a kept-alive connection): its first retry is routine.
    closed_connection: bool,
}

/// Whether a failed attempt is worth another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Retry {
    /// Up to `max_retries` times (429, 502-504, 529, dropped connections).
    Always,
    /// At most once per request (500).
    Once,
    /// Never: trying again gets the same answer.
    Never,
}

impl Failure {
    fn fatal(error: ModelError) -> Self {
        Self {
            error,
            retry: Retry::Never,
            retry_after: None,
            closed_connection: false,
        }
    }
}

/// The `<title>` of an HTML page, trimmed, when it has one.
fn page_title(html: &str) -> Option<&str> {
    let lower = html.to_ascii_lowercase();
    let start = lower.find("<title>")? + "<title>".len();
    let end = start + lower[start..].find("</title>")?;
    Some(html.get(start..end)?.trim()).filter(|t| !t.is_empty())
}

/// Whether an error body says the server does not support something the
/// request asked for (asking again cannot help).
pub(crate) fn refuses_a_feature(body: &str) -> bool {
    let body = body.to_ascii_lowercase();
    body.contains("not supported") || body.contains("unsupported")
}

/// `Retry-After` in (possibly fractional) seconds; the HTTP-date form is
/// ignored (backoff applies instead).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let seconds: f64 = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (seconds.is_finite() && seconds >= 0.0)
        .then(|| Duration::from_secs_f64(seconds.min(MAX_RETRY_DELAY.as_secs_f64())))
}

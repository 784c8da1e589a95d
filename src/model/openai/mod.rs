//! The OpenAI-compatible chat model: chat completions over HTTP.
//!
//! [`OpenAiChatModel`] speaks `POST {base_url}/chat/completions`, the
//! protocol OpenAI defined and most model servers copy (vLLM, Ollama,
//! llama.cpp's server, LM Studio, ...). It sends the conversation and the
//! tools, and reads back text, tool calls, token usage, the model name and
//! the finish reason — in one piece ([`ChatModel::complete`]) or streamed as
//! server-sent events ([`ChatModel::stream`]).
//!
//! # Behaviour
//!
//! - **Messages** go out in protocol order ([`ChatRequest::messages`]):
//!   `system`, `user`, `assistant` (with `tool_calls`; `content` is `null`
//!   when it is empty and there are calls; blank arguments are sent as
//!   `{}`) and `tool` (with `tool_call_id`). `tools` is omitted when there
//!   are none.
//! - **Lenient reading**: unknown fields, missing optional fields,
//!   `content: null`, unknown finish reasons and tool-call arguments that
//!   are not valid JSON are all accepted; the arguments are kept as the raw
//!   text the model produced (`""` included) and the tool node turns bad
//!   ones into an error result the model reads. A body that is not JSON at
//!   all is a [`ModelError::InvalidResponse`].
//! - **Retries**: HTTP 429, 5xx and connection failures are retried with
//!   exponential backoff and jitter (honouring `Retry-After` in seconds, up
//!   to 60 s), `max_retries` times (3 by default); other 4xx and timeouts are
//!   not retried.
//! - **Timeout** (120 s by default): the limit for a whole non-streamed
//!   request; when streaming, the limit for the response to start and then
//!   for each next event.
//! - **Secrets**: the API key is only ever sent in the `Authorization`
//!   header. It is not logged, not shown by `Debug`, and erased (`***`) from
//!   any error text that echoes it.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::{ChatModel, ChatRequest, ChatResponse, DeltaSink, StreamDelta, Usage};
use crate::error::ModelError;
use crate::message::{Message, ToolCall};
use crate::tool::ToolSpec;

/// The endpoint used when neither the builder nor [`BASE_URL_ENV`] names
/// one.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The environment variable read for the base URL.
pub const BASE_URL_ENV: &str = "OPENAI_BASE_URL";
/// The environment variable read for the API key.
pub const API_KEY_ENV: &str = "OPENAI_API_KEY";

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
const DEFAULT_MAX_RETRIES: u32 = 3;
const DEFAULT_RETRY_BASE_DELAY: Duration = Duration::from_millis(500);
/// No wait between two attempts is longer than this, whatever
/// `Retry-After` says.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(60);
/// How much of an error body is kept in [`ModelError::Http`].
const MAX_ERROR_BODY_CHARS: usize = 2000;
/// How much of a malformed body is quoted in [`ModelError::InvalidResponse`].
const MAX_EXCERPT_CHARS: usize = 200;

/// An API key; its `Debug` never shows it.
#[derive(Clone)]
struct ApiKey(String);

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"***\"")
    }
}

/// A chat model behind an OpenAI-compatible `/chat/completions` endpoint.
///
/// Build one with [`OpenAiChatModel::builder`] or
/// [`OpenAiChatModel::from_env`]; clones share the HTTP connection pool.
/// See the [module docs](self) for retries, timeouts and how lenient the
/// response parsing is.
///
/// ```no_run
/// use lc_agent::model::openai::OpenAiChatModel;
/// use lc_agent::{ChatModel, ChatRequest, History, Message};
///
/// # async fn run() -> Result<(), lc_agent::ModelError> {
/// // A local Ollama server: no API key needed.
/// let model = OpenAiChatModel::builder()
///     .model("llama3.1")
///     .base_url("http://localhost:11434/v1")
///     .temperature(0.2)
///     .build()?;
///
/// let request = ChatRequest::new(History::from_messages([
///     Message::system("Answer in one sentence."),
///     Message::human("Why is the sky blue?"),
/// ]));
/// let answer = model.complete(&request).await?;
/// println!("{}", answer.content);
///
/// // The same, streamed: print the text as it arrives.
/// let answer = model
///     .stream(&request, &mut |delta| {
///         if let lc_agent::model::StreamDelta::Text(text) = delta {
///             print!("{text}");
///         }
///     })
///     .await?;
/// println!("\n({:?} tokens)", answer.usage.map(|u| u.total_tokens));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct OpenAiChatModel {
    client: reqwest::Client,
    endpoint: reqwest::Url,
    base_url: String,
    model: String,
    api_key: Option<ApiKey>,
    timeout: Duration,
    max_retries: u32,
    retry_base_delay: Duration,
    temperature: Option<f32>,
    max_tokens: Option<u32>,
}

impl fmt::Debug for OpenAiChatModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiChatModel")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("retry_base_delay", &self.retry_base_delay)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .finish_non_exhaustive()
    }
}

/// Configures an [`OpenAiChatModel`]; see [`OpenAiChatModel::builder`].
///
/// ```
/// use std::time::Duration;
/// use lc_agent::model::openai::OpenAiChatModel;
///
/// let model = OpenAiChatModel::builder()
///     .model("gpt-4o-mini")
///     .api_key("sk-not-a-real-key")
///     .timeout(Duration::from_secs(30))
///     .max_retries(5)
///     .build()?;
/// assert_eq!(model.model_name(), "gpt-4o-mini");
/// assert!(!format!("{model:?}").contains("sk-not-a-real-key"));
/// # Ok::<(), lc_agent::ModelError>(())
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiChatModelBuilder {
    model: Option<String>,
    base_url: Option<String>,
    api_key: Option<ApiKey>,
    timeout: Duration,
    max_retries: u32,
    retry_base_delay: Duration,
    temperature: Option<f32>,
    max_tokens: Option<u32>,
}

impl Default for OpenAiChatModelBuilder {
    fn default() -> Self {
        Self {
            model: None,
            base_url: None,
            api_key: None,
            timeout: DEFAULT_TIMEOUT,
            max_retries: DEFAULT_MAX_RETRIES,
            retry_base_delay: DEFAULT_RETRY_BASE_DELAY,
            temperature: None,
            max_tokens: None,
        }
    }
}

impl OpenAiChatModelBuilder {
    /// The model name sent with every request (required), e.g.
    /// `gpt-4o-mini` or `llama3.1`.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The API root, e.g. `http://localhost:8000/v1`; requests go to
    /// `{base_url}/chat/completions`. Defaults to [`BASE_URL_ENV`], then
    /// [`DEFAULT_BASE_URL`].
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = Some(base_url.into());
        self
    }

    /// The API key, sent as `Authorization: Bearer <key>`. Defaults to
    /// [`API_KEY_ENV`]; may be left out when a base URL is set (local
    /// servers usually need none).
    pub fn api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(ApiKey(api_key.into()));
        self
    }

    /// The request timeout (default 120 s): for a whole request, or, when
    /// streaming, for the response to start and then for each next event.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How many times a request that failed with 429, 5xx or a connection
    /// error is tried again (default 3; 0 disables retries).
    pub fn max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// The first retry waits about this long, and each next one twice as
    /// long, with jitter (default 500 ms). A `Retry-After` header wins.
    pub fn retry_base_delay(mut self, delay: Duration) -> Self {
        self.retry_base_delay = delay;
        self
    }

    /// The sampling temperature; the server's default when not set.
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// The most tokens to generate (`max_tokens`); the server's default
    /// when not set.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Builds the model, reading [`BASE_URL_ENV`] and [`API_KEY_ENV`] for
    /// whatever was not set explicitly.
    ///
    /// Fails with [`ModelError::Config`] when the model name is missing,
    /// the base URL is not a valid URL, or there is no API key for the
    /// default (OpenAI) endpoint.
    pub fn build(self) -> Result<OpenAiChatModel, ModelError> {
        let model = non_empty(self.model).ok_or_else(|| {
            ModelError::Config("a model name is required, e.g. `.model(\"gpt-4o-mini\")`".into())
        })?;
        let base_url = non_empty(self.base_url).or_else(|| env_var(BASE_URL_ENV));
        let api_key = non_empty(self.api_key.map(|k| k.0))
            .or_else(|| env_var(API_KEY_ENV))
            .map(ApiKey);
        if api_key.is_none() && base_url.is_none() {
            return Err(ModelError::Config(format!(
                "no API key for {DEFAULT_BASE_URL}: set {API_KEY_ENV} or call `.api_key(..)` \
                 (a local server needs only a base URL: set {BASE_URL_ENV} or call `.base_url(..)`)"
            )));
        }
        let base_url = base_url
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_string())
            .trim_end_matches('/')
            .to_string();
        let endpoint = parse_endpoint(&base_url)?;
        let client = reqwest::Client::builder()
            .user_agent(concat!("lc-agent/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ModelError::Config(format!("cannot create the HTTP client: {e}")))?;
        Ok(OpenAiChatModel {
            client,
            endpoint,
            base_url,
            model,
            api_key,
            timeout: self.timeout,
            max_retries: self.max_retries,
            retry_base_delay: self.retry_base_delay,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
        })
    }
}

fn non_empty(value: Option<String>) -> Option<String> {
    value
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

fn env_var(name: &str) -> Option<String> {
    non_empty(std::env::var(name).ok())
}

fn parse_endpoint(base_url: &str) -> Result<reqwest::Url, ModelError> {
    let invalid = |why: String| ModelError::Config(format!("invalid base URL `{base_url}`: {why}"));
    let endpoint = reqwest::Url::parse(&format!("{base_url}/chat/completions"))
        .map_err(|e| invalid(e.to_string()))?;
    match endpoint.scheme() {
        "http" | "https" => Ok(endpoint),
        other => Err(invalid(format!("scheme `{other}` is not http or https"))),
    }
}

impl OpenAiChatModel {
    /// A builder; see [`OpenAiChatModelBuilder`].
    pub fn builder() -> OpenAiChatModelBuilder {
        OpenAiChatModelBuilder::default()
    }

    /// The model `model` at [`BASE_URL_ENV`] (default
    /// [`DEFAULT_BASE_URL`]) with the key in [`API_KEY_ENV`], and default
    /// settings otherwise.
    pub fn from_env(model: impl Into<String>) -> Result<Self, ModelError> {
        Self::builder().model(model).build()
    }

    /// The model name sent with every request.
    pub fn model_name(&self) -> &str {
        &self.model
    }

    /// The API root requests go under (without a trailing `/`).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The request body for `request`.
    fn body<'a>(
        &'a self,
        request: &'a ChatRequest,
        messages: &'a [Cow<'a, Message>],
        stream: bool,
    ) -> WireRequest<'a> {
        WireRequest {
            model: &self.model,
            messages: messages.iter().map(|m| WireMessage::from(&**m)).collect(),
            tools: request.tools.iter().map(WireTool::from).collect(),
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            stream,
            stream_options: stream.then_some(StreamOptions {
                include_usage: true,
            }),
        }
    }

    /// Posts `body`, retrying what is worth retrying; returns a response
    /// with a success status.
    async fn post(&self, body: &WireRequest<'_>) -> Result<reqwest::Response, ModelError> {
        tracing::debug!(
            model = %self.model,
            endpoint = %self.endpoint,
            messages = body.messages.len(),
            tools = body.tools.len(),
            stream = body.stream,
            "chat completion request"
        );
        let mut attempt = 0;
        loop {
            match self.post_once(body).await {
                Ok(response) => return Ok(response),
                Err(failure) if failure.retryable && attempt < self.max_retries => {
                    let delay = self.retry_delay(attempt, failure.retry_after);
                    attempt += 1;
                    tracing::warn!(
                        model = %self.model,
                        attempt,
                        max_retries = self.max_retries,
                        delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                        error = %failure.error,
                        "chat completion failed; retrying"
                    );
                    tokio::time::sleep(delay).await;
                }
                Err(failure) => return Err(failure.error),
            }
        }
    }

    /// One attempt. Non-streamed requests use reqwest's whole-request
    /// timeout; streamed ones limit only the wait for the response here.
    async fn post_once(&self, body: &WireRequest<'_>) -> Result<reqwest::Response, Failure> {
        if body.stream {
            tokio::time::timeout(self.timeout, self.send(body))
                .await
                .unwrap_or_else(|_| Err(Failure::fatal(ModelError::Timeout(self.timeout))))
        } else {
            self.send(body).await
        }
    }

    async fn send(&self, body: &WireRequest<'_>) -> Result<reqwest::Response, Failure> {
        let mut request = self.client.post(self.endpoint.clone()).json(body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(&key.0);
        }
        if !body.stream {
            request = request.timeout(self.timeout);
        }
        let response = request.send().await.map_err(|e| self.send_failure(&e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = retry_after(response.headers());
        let text = response.text().await.unwrap_or_default();
        Err(Failure {
            error: ModelError::Http {
                status: status.as_u16(),
                body: self.redact(&shorten(text.trim(), MAX_ERROR_BODY_CHARS)),
            },
            retryable: status.as_u16() == 429 || status.is_server_error(),
            retry_after,
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

    /// Classifies a failure to get a response at all.
    fn send_failure(&self, error: &reqwest::Error) -> Failure {
        if error.is_timeout() {
            Failure::fatal(ModelError::Timeout(self.timeout))
        } else if error.is_builder() {
            Failure::fatal(ModelError::Config(self.describe(error)))
        } else {
            Failure {
                error: ModelError::Connect(self.describe(error)),
                retryable: true,
                retry_after: None,
            }
        }
    }

    /// Maps a failure while reading the response body.
    fn read_error(&self, error: &reqwest::Error) -> ModelError {
        if error.is_timeout() {
            ModelError::Timeout(self.timeout)
        } else {
            ModelError::Connect(self.describe(error))
        }
    }

    fn sse_error(&self, error: EventStreamError<reqwest::Error>) -> ModelError {
        match error {
            EventStreamError::Transport(e) => self.read_error(&e),
            EventStreamError::Utf8(e) => {
                ModelError::InvalidResponse(format!("event stream is not UTF-8: {e}"))
            }
            EventStreamError::Parser(e) => {
                ModelError::InvalidResponse(format!("malformed event stream: {e}"))
            }
        }
    }

    /// An error and its causes on one line, without the key.
    fn describe(&self, error: &dyn std::error::Error) -> String {
        let mut text = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            source = cause.source();
        }
        self.redact(&text)
    }

    fn invalid_json(&self, error: &serde_json::Error, text: &str) -> ModelError {
        ModelError::InvalidResponse(format!(
            "{error} in `{}`",
            self.redact(&shorten(text, MAX_EXCERPT_CHARS))
        ))
    }

    /// `text` with every occurrence of the API key replaced by `***`.
    fn redact(&self, text: &str) -> String {
        match &self.api_key {
            Some(ApiKey(key)) if !key.is_empty() => text.replace(key.as_str(), "***"),
            _ => text.to_string(),
        }
    }

    /// Parses a non-streamed answer.
    fn parse_completion(&self, text: &str) -> Result<ChatResponse, ModelError> {
        let wire: WireCompletion =
            serde_json::from_str(text).map_err(|e| self.invalid_json(&e, text))?;
        let Some(choice) = wire.choices.into_iter().next() else {
            let detail = wire
                .error
                .map(|e| {
                    format!(
                        ": {}",
                        self.redact(&shorten(&e.to_string(), MAX_EXCERPT_CHARS))
                    )
                })
                .unwrap_or_default();
            return Err(ModelError::InvalidResponse(format!(
                "the response has no choices{detail}"
            )));
        };
        let message = choice.message.unwrap_or_default();
        let mut content = message
            .content
            .map(WireContent::into_text)
            .unwrap_or_default();
        if content.is_empty() {
            content = message.refusal.unwrap_or_default();
        }
        Ok(ChatResponse {
            content,
            tool_calls: message
                .tool_calls
                .into_iter()
                .map(WireToolCallIn::into_tool_call)
                .collect(),
            usage: wire.usage.map(Usage::from),
            finish_reason: choice.finish_reason,
            model: wire.model,
        })
    }

    /// Reads a server-sent event stream, reporting deltas as they arrive.
    async fn read_stream(
        &self,
        response: reqwest::Response,
        on_delta: DeltaSink<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let mut events = response.bytes_stream().eventsource();
        let mut state = StreamState::default();
        loop {
            let next = tokio::time::timeout(self.timeout, events.next())
                .await
                .map_err(|_| ModelError::Timeout(self.timeout))?;
            let Some(event) = next else {
                return state.finish_without_done();
            };
            let event = event.map_err(|e| self.sse_error(e))?;
            let data = event.data.trim();
            if data == "[DONE]" {
                return Ok(state.finish());
            }
            if data.is_empty() {
                continue;
            }
            let chunk: WireChunk =
                serde_json::from_str(data).map_err(|e| self.invalid_json(&e, data))?;
            if let Some(error) = chunk.error {
                return Err(ModelError::Other(format!(
                    "the model endpoint reported an error mid-stream: {}",
                    self.redact(&shorten(&error.to_string(), MAX_ERROR_BODY_CHARS))
                )));
            }
            state.apply(chunk, &mut *on_delta);
        }
    }
}

#[async_trait]
impl ChatModel for OpenAiChatModel {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let messages = request.messages();
        let body = self.body(request, &messages, false);
        let response = self.post(&body).await?;
        let text = response.text().await.map_err(|e| self.read_error(&e))?;
        self.parse_completion(&text)
    }

    async fn stream(
        &self,
        request: &ChatRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let messages = request.messages();
        let body = self.body(request, &messages, true);
        let response = self.post(&body).await?;
        if !is_event_stream(&response) {
            // Some servers ignore `stream: true` and answer in one piece.
            let text = tokio::time::timeout(self.timeout, response.text())
                .await
                .map_err(|_| ModelError::Timeout(self.timeout))?
                .map_err(|e| self.read_error(&e))?;
            let answer = self.parse_completion(&text)?;
            report_whole(&answer, on_delta);
            return Ok(answer);
        }
        self.read_stream(response, on_delta).await
    }
}

/// One failed attempt, and whether it is worth another.
struct Failure {
    error: ModelError,
    retryable: bool,
    retry_after: Option<Duration>,
}

impl Failure {
    fn fatal(error: ModelError) -> Self {
        Self {
            error,
            retryable: false,
            retry_after: None,
        }
    }
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

fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|v| v.starts_with("text/event-stream"))
}

/// Reports a whole answer as deltas (for servers that do not stream).
fn report_whole(answer: &ChatResponse, on_delta: DeltaSink<'_>) {
    if !answer.content.is_empty() {
        on_delta(StreamDelta::Text(answer.content.clone()));
    }
    for (index, call) in answer.tool_calls.iter().enumerate() {
        on_delta(StreamDelta::ToolCall {
            index,
            id: Some(call.id.clone()),
            name: Some(call.name.clone()),
            arguments: call.arguments.clone(),
        });
    }
}

/// `text` cut to `max` characters, marked with `…` when cut.
fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// An id for a tool call the server sent without one.
fn generated_call_id() -> String {
    format!("call_{}", uuid::Uuid::new_v4().simple())
}

/// Tool-call arguments as raw text: strings as they are, `null` or missing
/// as `""`, anything else (an object some servers send) as its JSON.
fn arguments_text(arguments: Option<Value>) -> String {
    match arguments {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text,
        Some(other) => other.to_string(),
    }
}

/// Reads `null` as the type's default (serde's `default` covers only a
/// missing field).
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

// ---------------------------------------------------------------------------
// The streamed answer, assembled.

/// What the stream said so far.
#[derive(Default)]
struct StreamState {
    content: String,
    calls: BTreeMap<usize, PartialCall>,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    model: Option<String>,
}

/// A tool call being assembled from its fragments.
#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

impl StreamState {
    fn apply(&mut self, chunk: WireChunk, on_delta: DeltaSink<'_>) {
        if self.model.is_none() {
            self.model = non_empty(chunk.model);
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.into());
        }
        // Only the first choice is read (the request never asks for more).
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if choice.finish_reason.is_some() {
                self.finish_reason = choice.finish_reason;
            }
            let delta = choice.delta.unwrap_or_default();
            let text = delta
                .content
                .map(WireContent::into_text)
                .unwrap_or_default();
            if !text.is_empty() {
                self.content.push_str(&text);
                on_delta(StreamDelta::Text(text));
            }
            for call in delta.tool_calls {
                self.apply_call(call, &mut *on_delta);
            }
        }
    }

    fn apply_call(&mut self, call: WireToolCallDelta, on_delta: DeltaSink<'_>) {
        let id = non_empty(call.id);
        let index = call
            .index
            .unwrap_or_else(|| self.guess_index(id.as_deref()));
        let function = call.function.unwrap_or_default();
        let name = non_empty(function.name);
        let arguments = arguments_text(function.arguments);
        let partial = self.calls.entry(index).or_default();
        if let (true, Some(id)) = (partial.id.is_empty(), &id) {
            partial.id.clone_from(id);
        }
        if let Some(name) = &name {
            partial.name.push_str(name);
        }
        partial.arguments.push_str(&arguments);
        if id.is_some() || name.is_some() || !arguments.is_empty() {
            on_delta(StreamDelta::ToolCall {
                index,
                id,
                name,
                arguments,
            });
        }
    }

    /// The index of a fragment that came without one: a new call when it
    /// brings a new id, otherwise the latest call.
    fn guess_index(&self, id: Option<&str>) -> usize {
        match (self.calls.last_key_value(), id) {
            (None, _) => 0,
            (Some((&last, partial)), Some(id)) if !partial.id.is_empty() && partial.id != id => {
                last + 1
            }
            (Some((&last, _)), _) => last,
        }
    }

    fn finish(self) -> ChatResponse {
        let tool_calls = self
            .calls
            .into_values()
            .map(|call| ToolCall {
                id: if call.id.is_empty() {
                    generated_call_id()
                } else {
                    call.id
                },
                name: call.name,
                arguments: call.arguments,
            })
            .collect();
        ChatResponse {
            content: self.content,
            tool_calls,
            usage: self.usage,
            finish_reason: self.finish_reason,
            model: self.model,
        }
    }

    /// The stream closed without `[DONE]`: fine when the answer said it
    /// was finished, a cut-off answer otherwise.
    fn finish_without_done(self) -> Result<ChatResponse, ModelError> {
        if self.finish_reason.is_some() {
            tracing::debug!("event stream ended without [DONE] after a finish reason");
            Ok(self.finish())
        } else {
            Err(ModelError::InvalidResponse(
                "the event stream ended before the answer finished (no finish reason, no [DONE])"
                    .into(),
            ))
        }
    }
}

// ---------------------------------------------------------------------------
// The protocol: what is sent.

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    Assistant {
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireToolCallOut<'a>>,
    },
    Tool {
        content: &'a str,
        tool_call_id: &'a str,
    },
}

impl<'a> From<&'a Message> for WireMessage<'a> {
    fn from(message: &'a Message) -> Self {
        match message {
            Message::System { content } => WireMessage::System { content },
            Message::Human { content } => WireMessage::User { content },
            Message::Ai {
                content,
                tool_calls,
            } => WireMessage::Assistant {
                content: (!content.is_empty() || tool_calls.is_empty()).then_some(content.as_str()),
                tool_calls: tool_calls.iter().map(WireToolCallOut::from).collect(),
            },
            Message::Tool {
                content,
                tool_call_id,
                ..
            } => WireMessage::Tool {
                content,
                tool_call_id,
            },
        }
    }
}

#[derive(Serialize)]
struct WireToolCallOut<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionOut<'a>,
}

#[derive(Serialize)]
struct WireFunctionOut<'a> {
    name: &'a str,
    arguments: &'a str,
}

impl<'a> From<&'a ToolCall> for WireToolCallOut<'a> {
    /// Blank arguments go back as `{}` (what they mean): some servers'
    /// chat templates parse them as JSON.
    fn from(call: &'a ToolCall) -> Self {
        let arguments = match call.arguments.trim() {
            "" => "{}",
            _ => call.arguments.as_str(),
        };
        Self {
            id: &call.id,
            kind: "function",
            function: WireFunctionOut {
                name: &call.name,
                arguments,
            },
        }
    }
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: &'a ToolSpec,
}

impl<'a> From<&'a ToolSpec> for WireTool<'a> {
    fn from(spec: &'a ToolSpec) -> Self {
        Self {
            kind: "function",
            function: spec,
        }
    }
}

// ---------------------------------------------------------------------------
// The protocol: what comes back. Every field is optional and unknown fields
// are ignored.

#[derive(Deserialize)]
struct WireCompletion {
    #[serde(default)]
    model: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    message: Option<WireAnswer>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Default, Deserialize)]
struct WireAnswer {
    #[serde(default)]
    content: Option<WireContent>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    tool_calls: Vec<WireToolCallIn>,
}

/// Message content: a string, or (some servers) a list of text parts.
#[derive(Deserialize)]
#[serde(untagged)]
enum WireContent {
    Text(String),
    Parts(Vec<WireContentPart>),
    Other(serde::de::IgnoredAny),
}

#[derive(Deserialize)]
struct WireContentPart {
    #[serde(default)]
    text: Option<String>,
}

impl WireContent {
    fn into_text(self) -> String {
        match self {
            WireContent::Text(text) => text,
            WireContent::Parts(parts) => parts.into_iter().filter_map(|p| p.text).collect(),
            WireContent::Other(_) => String::new(),
        }
    }
}

#[derive(Deserialize)]
struct WireToolCallIn {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunctionIn>,
}

#[derive(Default, Deserialize)]
struct WireFunctionIn {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

impl WireToolCallIn {
    fn into_tool_call(self) -> ToolCall {
        let function = self.function.unwrap_or_default();
        ToolCall {
            id: non_empty(self.id).unwrap_or_else(generated_call_id),
            name: function.name.unwrap_or_default(),
            arguments: arguments_text(function.arguments),
        }
    }
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    fn from(usage: WireUsage) -> Self {
        let prompt_tokens = usage.prompt_tokens.unwrap_or(0);
        let completion_tokens = usage.completion_tokens.unwrap_or(0);
        Usage {
            prompt_tokens,
            completion_tokens,
            total_tokens: usage
                .total_tokens
                .unwrap_or(prompt_tokens.saturating_add(completion_tokens)),
        }
    }
}

#[derive(Deserialize)]
struct WireChunk {
    #[serde(default)]
    model: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    choices: Vec<WireChunkChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireChunkChoice {
    #[serde(default, deserialize_with = "null_as_default")]
    index: u32,
    #[serde(default)]
    delta: Option<WireDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Default, Deserialize)]
struct WireDelta {
    #[serde(default)]
    content: Option<WireContent>,
    #[serde(default, deserialize_with = "null_as_default")]
    tool_calls: Vec<WireToolCallDelta>,
}

#[derive(Deserialize)]
struct WireToolCallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunctionIn>,
}

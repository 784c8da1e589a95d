//! The OpenAI-compatible chat model: chat completions over HTTP.
//!
//! (The full description is on the [`OpenAiChatModel`] docs.)

mod redact;
mod stream;
mod transport;
mod wire;

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::{replay_as_deltas, ChatModel, ChatRequest, ChatResponse, DeltaSink};
use crate::error::ModelError;
use crate::message::Message;
use redact::ApiKey;
use transport::Transport;
use wire::{StreamOptions, WireMessage, WireRequest, WireTool};

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
const DEFAULT_MAX_RETRIES: u32 = 3;
const DEFAULT_RETRY_BASE_DELAY: Duration = Duration::from_millis(500);

impl OpenAiChatModel {
    /// The endpoint used when neither the builder nor [`Self::BASE_URL_ENV`] names
    /// one.
    pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
    /// The environment variable read for the base URL.
    pub const BASE_URL_ENV: &str = "OPENAI_BASE_URL";
    /// The environment variable read for the API key.
    pub const API_KEY_ENV: &str = "OPENAI_API_KEY";
    /// The environment variable read for the model name.
    pub const MODEL_ENV: &str = "OPENAI_MODEL";
    /// The model used when neither the builder nor [`Self::MODEL_ENV`] names one and
    /// the endpoint is OpenAI's own ([`Self::DEFAULT_BASE_URL`]). Any other server
    /// must be told which of its models to use.
    pub const DEFAULT_MODEL: &str = "gpt-4o-mini";
}

/// The OpenAI-compatible chat model: chat completions over HTTP.
///
/// [`OpenAiChatModel`] speaks `POST {base_url}/chat/completions`, the
/// protocol OpenAI defined and most model servers copy (vLLM, Ollama,
/// llama.cpp's server, LM Studio, ...). It sends the conversation and the
/// tools, and reads back text, tool calls, token usage, the model name and
/// the finish reason — in one piece ([`ChatModel::complete`]) or streamed as
/// server-sent events ([`ChatModel::stream`]).
///
/// # Behaviour
///
/// - **Messages** go out in protocol order ([`ChatRequest::messages`]):
///   `system`, `user`, `assistant` (with `tool_calls`; `content` is `null`
///   when it is empty and there are calls; blank arguments are sent as
///   `{}`) and `tool` (with `tool_call_id`). `tools` is omitted when there
///   are none.
/// - **Lenient reading**: unknown fields, missing optional fields,
///   `content: null`, unknown finish reasons and tool-call arguments that
///   are not valid JSON are all accepted; the arguments are kept as the raw
///   text the model produced (`""` included) and the tool node turns bad
///   ones into an error result the model reads. A body that is not JSON at
///   all is a [`ModelError::InvalidResponse`].
/// - **Retries**: HTTP 429, 5xx and connection failures are retried with
///   exponential backoff and jitter (honouring `Retry-After` in seconds, up
///   to 60 s), `max_retries` times (3 by default); other 4xx and timeouts are
///   not retried.
/// - **Timeout** (120 s by default): the limit for a whole non-streamed
///   request; when streaming, the limit for the response to start and then
///   for each next event.
/// - **Secrets**: the API key is only ever sent in the `Authorization`
///   header. It is not logged, not shown by `Debug`, and erased (`***`) from
///   any error text that echoes it.
///
/// # Layout
///
/// ```text
///                      ChatRequest
///                           │  wire: WireRequest, the JSON sent
///                           ▼
///          transport: Transport::post  (retries, Retry-After, timeouts)
///                           │
///             ┌─────────────┴──────────────┐
///     a JSON body                    text/event-stream
///     wire::parse_completion         stream::read_stream (chunks → deltas)
///             └─────────────┬──────────────┘
///                           ▼
///                      ChatResponse
/// ```
///
/// - `mod.rs` — [`OpenAiChatModel`], its builder and the environment it
///   reads, and the [`ChatModel`] impl that ties the parts together.
/// - `transport.rs` — sending: retries, backoff, `Retry-After`, timeouts,
///   and the HTTP client's failures as [`ModelError`]s.
/// - `wire.rs` — the protocol's JSON as Rust types, and their conversions
///   from and to messages, tool calls, tool specs, usage and answers.
/// - `stream.rs` — a server-sent event stream assembled into deltas and
///   one answer.
/// - `redact.rs` — the API key, and error text without it.
///
/// A chat model behind an OpenAI-compatible `/chat/completions` endpoint.
///
/// Build one with [`OpenAiChatModel::builder`] or
/// [`OpenAiChatModel::from_env`]; clones share the HTTP connection pool.
/// See above for retries, timeouts and how lenient the
/// response parsing is.
///
/// ```no_run
/// use lc_agent::OpenAiChatModel;
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
///         if let lc_agent::StreamDelta::Text(text) = delta {
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
    transport: Transport,
    base_url: String,
    model: String,
    temperature: Option<f32>,
    max_tokens: Option<u32>,
}

impl fmt::Debug for OpenAiChatModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiChatModel")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.transport.api_key)
            .field("timeout", &self.transport.timeout)
            .field("max_retries", &self.transport.max_retries)
            .field("retry_base_delay", &self.transport.retry_base_delay)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .finish_non_exhaustive()
    }
}

/// Configures an [`OpenAiChatModel`]; see [`OpenAiChatModel::builder`].
///
/// ```
/// use std::time::Duration;
/// use lc_agent::OpenAiChatModel;
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
    /// `{base_url}/chat/completions`. Defaults to [`OpenAiChatModel::BASE_URL_ENV`], then
    /// [`OpenAiChatModel::DEFAULT_BASE_URL`].
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = Some(base_url.into());
        self
    }

    /// The API key, sent as `Authorization: Bearer <key>`. Defaults to
    /// [`OpenAiChatModel::API_KEY_ENV`]; may be left out when a base URL is set (local
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

    /// Builds the model, reading [`OpenAiChatModel::MODEL_ENV`], [`OpenAiChatModel::BASE_URL_ENV`] and
    /// [`OpenAiChatModel::API_KEY_ENV`] for whatever was not set explicitly.
    ///
    /// Fails with [`ModelError::Config`] when a server other than OpenAI's
    /// has no model name,
    /// the base URL is not a valid URL, or there is no API key for the
    /// default (OpenAI) endpoint.
    pub fn build(self) -> Result<OpenAiChatModel, ModelError> {
        let base_url = non_empty(self.base_url).or_else(|| env_var(OpenAiChatModel::BASE_URL_ENV));
        let model = match (
            non_empty(self.model).or_else(|| env_var(OpenAiChatModel::MODEL_ENV)),
            &base_url,
        ) {
            (Some(model), _) => model,
            (None, None) => OpenAiChatModel::DEFAULT_MODEL.to_string(),
            (None, Some(url)) => {
                return Err(config_error(format!(
                    "no model name for {url}: set {} to a model that server serves, \
                     or call `.model(..)`",
                    OpenAiChatModel::MODEL_ENV
                )))
            }
        };
        let api_key = non_empty(self.api_key.map(|k| k.0))
            .or_else(|| env_var(OpenAiChatModel::API_KEY_ENV))
            .map(ApiKey);
        if api_key.is_none() && base_url.is_none() {
            return Err(config_error(format!(
                "no API key for {}: set {} or call `.api_key(..)` \
                 (a local server needs only a base URL: set {} or call `.base_url(..)`)",
                OpenAiChatModel::DEFAULT_BASE_URL,
                OpenAiChatModel::API_KEY_ENV,
                OpenAiChatModel::BASE_URL_ENV
            )));
        }
        let base_url = base_url
            .unwrap_or_else(|| OpenAiChatModel::DEFAULT_BASE_URL.to_string())
            .trim_end_matches('/')
            .to_string();
        let endpoint = parse_endpoint(&base_url)?;
        let transport = Transport::new(
            endpoint,
            api_key,
            self.timeout,
            self.max_retries,
            self.retry_base_delay,
        )?;
        Ok(OpenAiChatModel {
            transport,
            base_url,
            model,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
        })
    }
}

/// `value` trimmed, or `None` when nothing is left: for settings, and for
/// names and ids a server may send blank.
fn non_empty(value: Option<String>) -> Option<String> {
    value
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

fn env_var(name: &str) -> Option<String> {
    non_empty(std::env::var(name).ok())
}

fn parse_endpoint(base_url: &str) -> Result<reqwest::Url, ModelError> {
    let invalid = |why: &dyn fmt::Display| format!("invalid base URL `{base_url}`: {why}");
    let endpoint = reqwest::Url::parse(&format!("{base_url}/chat/completions")).map_err(|e| {
        ModelError::Config {
            message: invalid(&e),
            source: Some(Arc::new(e)),
        }
    })?;
    match endpoint.scheme() {
        "http" | "https" => Ok(endpoint),
        other => Err(config_error(invalid(&format_args!(
            "scheme `{other}` is not http or https"
        )))),
    }
}

/// A configuration error with no underlying error.
fn config_error(message: String) -> ModelError {
    ModelError::Config {
        message,
        source: None,
    }
}

impl OpenAiChatModel {
    /// A builder; see [`OpenAiChatModelBuilder`].
    pub fn builder() -> OpenAiChatModelBuilder {
        OpenAiChatModelBuilder::default()
    }

    /// The model configured by the environment, as a newcomer sets it:
    /// [`OpenAiChatModel::MODEL_ENV`] at [`OpenAiChatModel::BASE_URL_ENV`] (default [`OpenAiChatModel::DEFAULT_BASE_URL`])
    /// with the key in [`OpenAiChatModel::API_KEY_ENV`], and default settings otherwise.
    ///
    /// Without [`OpenAiChatModel::MODEL_ENV`], OpenAI's own endpoint gets
    /// [`OpenAiChatModel::DEFAULT_MODEL`]; any other server is a [`ModelError::Config`]
    /// naming the variable (a local server rarely has OpenAI's models).
    pub fn from_env() -> Result<Self, ModelError> {
        Self::builder().build()
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
}

#[async_trait]
impl ChatModel for OpenAiChatModel {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let messages = request.messages();
        let body = self.body(request, &messages, false);
        let response = self.transport.post(&body).await?;
        let text = self.transport.text(response, false).await?;
        wire::parse_completion(&text, self.transport.api_key.as_ref())
    }

    async fn stream(
        &self,
        request: &ChatRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let messages = request.messages();
        let body = self.body(request, &messages, true);
        let response = self.transport.post(&body).await?;
        if !transport::is_event_stream(&response) {
            // Some servers ignore `stream: true` and answer in one piece.
            let text = self.transport.text(response, true).await?;
            let answer = wire::parse_completion(&text, self.transport.api_key.as_ref())?;
            replay_as_deltas([answer.content.as_str()], &answer.tool_calls, on_delta);
            return Ok(answer);
        }
        stream::read_stream(&self.transport, response, on_delta).await
    }
}

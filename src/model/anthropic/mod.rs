//! The Anthropic chat model: the Messages API over HTTP.
//!
//! (The full description is on the [`AnthropicChatModel`] docs.)

mod stream;
mod wire;

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::http::overflow::LearnedWindow;
use super::http::redact::ApiKey;
use super::http::transport::{self, Auth, Transport};
use super::http::{config_error, endpoint, env_var, non_empty};
use super::http::{DEFAULT_MAX_RETRIES, DEFAULT_RETRY_BASE_DELAY, DEFAULT_TIMEOUT};
use super::{replay_as_deltas, ChatModel, ChatRequest, ChatResponse, DeltaSink};
use crate::error::ModelError;
use crate::message::Message;
use wire::{Settings, WireRequest};

impl AnthropicChatModel {
    /// The API root used when neither the builder nor
    /// [`Self::BASE_URL_ENV`] names one; requests go to
    /// `{base_url}/v1/messages`.
    pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
    /// The environment variable read for the base URL.
    pub const BASE_URL_ENV: &str = "ANTHROPIC_BASE_URL";
    /// The environment variable read for the API key.
    pub const API_KEY_ENV: &str = "ANTHROPIC_API_KEY";
    /// The environment variable read for the model name.
    pub const MODEL_ENV: &str = "ANTHROPIC_MODEL";
    /// The model used when neither the builder nor [`Self::MODEL_ENV`]
    /// names one.
    pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
    /// The most tokens an answer may have unless the builder says
    /// otherwise (the API requires a limit; every current Claude model
    /// writes at least this many).
    pub const DEFAULT_MAX_TOKENS: u32 = 8192;
    /// The `anthropic-version` header sent with every request.
    pub const API_VERSION: &str = "2023-06-01";
}

/// The Anthropic chat model: the Messages API (`POST {base_url}/v1/messages`)
/// over HTTP, behind the same [`ChatModel`] trait as every model.
///
/// It sends the conversation, the system prompt and the tools, and reads
/// back text, tool calls, token usage (prompt-cache reads and writes
/// included), the model name and the stop reason — in one piece
/// ([`ChatModel::complete`]) or streamed as server-sent events
/// ([`ChatModel::stream`]). Any server speaking the Messages API works:
/// Anthropic's, or a gateway such as LiteLLM's proxy.
///
/// # Behaviour
///
/// - **Messages** go out as the API requires: system messages (and the
///   request's extra system sections) in the top-level `system`; human
///   messages and tool results in `user` messages (a result as a
///   `tool_result` block, `is_error` when the tool failed); AI messages as
///   `assistant` messages with `text` and `tool_use` blocks (the arguments
///   as the JSON object `input`). Consecutive messages of one role are
///   merged into one; blank text is left out (the API refuses empty text
///   blocks).
/// - **Tools** go with their `input_schema`; `tool_choice` goes with them:
///   the request's ([`ChatRequest::tool_choice`]: `auto`, `required` as the
///   API's `any`, `none`, or a named tool), else `auto`.
/// - **Prompt caching** (on by default, [`AnthropicChatModelBuilder::prompt_caching`]):
///   the last system block and the last tool are marked
///   `cache_control: {"type": "ephemeral"}`, so the prefix that stays the
///   same from turn to turn — instructions and tools — is read from the
///   cache. [`Usage::cache_read_tokens`](crate::Usage::cache_read_tokens)
///   and [`Usage::cache_write_tokens`](crate::Usage::cache_write_tokens)
///   say what it saved; `prompt_tokens` counts all of the prompt.
/// - **`max_tokens`** is required by the API: [`Self::DEFAULT_MAX_TOKENS`]
///   unless set.
/// - **Stop reasons** are reported in the words every provider uses:
///   `end_turn` as `stop`, `tool_use` as `tool_calls`, `max_tokens` as
///   `length` — a cut-off answer ([`ChatResponse::is_cut_off`]).
/// - **Streaming**: `message_start`, `content_block_start/delta/stop`
///   (`text_delta`, `input_json_delta` for a tool call's arguments),
///   `message_delta` (stop reason, usage), `message_stop`; `ping` and
///   unknown events are skipped, an `error` event is the error.
/// - **Context window** ([`ChatModel::context_window`]): the one set with
///   [`AnthropicChatModelBuilder::context_window`], else what an error said
///   when a prompt did not fit (`prompt is too long: N tokens > M
///   maximum`, then [`ModelError::ContextOverflow`]); otherwise `None`,
///   and the caller's table of known models has every `claude` model.
/// - **Retries** (shared with [`OpenAiChatModel`](crate::OpenAiChatModel)):
///   only what can succeed: HTTP 429 (honouring `Retry-After`), 529
///   (overloaded), 502-504 and dropped connections, `max_retries` times
///   (3 by default) with exponential backoff and jitter; a 500 at most
///   once; other 4xx and timeouts fail at once. The server's error body is
///   part of the error ([`ModelError::Http`]).
/// - **Secrets**: the key is only ever sent in the `x-api-key` header,
///   never logged, not shown by `Debug`, and erased (`***`) from any error
///   text that echoes it.
///
/// # Layout
///
/// - `mod.rs` — [`AnthropicChatModel`], its builder and the environment it
///   reads, and the [`ChatModel`] impl.
/// - `wire.rs` — the API's JSON as Rust types and the conversions from and
///   to messages, tools, usage and answers.
/// - `stream.rs` — the stream's events assembled into deltas and one
///   answer.
/// - shared with the OpenAI-compatible client (`model/http/`): sending,
///   retries and timeouts, key redaction, context overflow errors.
///
/// ```no_run
/// use lc_agent::AnthropicChatModel;
/// use lc_agent::{ChatModel, ChatRequest, History, Message};
///
/// # async fn run() -> Result<(), lc_agent::ModelError> {
/// // ANTHROPIC_API_KEY (and ANTHROPIC_MODEL, ANTHROPIC_BASE_URL if set).
/// let model = AnthropicChatModel::from_env()?;
/// let request = ChatRequest::new(History::from_messages([
///     Message::system("Answer in one sentence."),
///     Message::human("Why is the sky blue?"),
/// ]));
/// let answer = model.complete(&request).await?;
/// println!("{} ({:?})", answer.content, answer.usage);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct AnthropicChatModel {
    transport: Transport,
    base_url: String,
    model: String,
    temperature: Option<f32>,
    max_tokens: u32,
    prompt_caching: bool,
    context_window: Option<usize>,
    /// The window an error gave (shared by clones).
    learned: Arc<LearnedWindow>,
}

impl fmt::Debug for AnthropicChatModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicChatModel")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.transport.api_key)
            .field("max_tokens", &self.max_tokens)
            .field("prompt_caching", &self.prompt_caching)
            .field("context_window", &self.context_window)
            .finish_non_exhaustive()
    }
}

/// Configures an [`AnthropicChatModel`]; see
/// [`AnthropicChatModel::builder`].
///
/// ```
/// use lc_agent::AnthropicChatModel;
///
/// let model = AnthropicChatModel::builder()
///     .model("claude-haiku-4-5")
///     .api_key("sk-ant-not-a-real-key")
///     .max_tokens(1024)
///     .build()?;
/// assert_eq!(model.model_name(), "claude-haiku-4-5");
/// assert!(!format!("{model:?}").contains("sk-ant-not-a-real-key"));
/// # Ok::<(), lc_agent::ModelError>(())
/// ```
#[derive(Debug, Clone)]
pub struct AnthropicChatModelBuilder {
    model: Option<String>,
    base_url: Option<String>,
    api_key: Option<ApiKey>,
    timeout: Duration,
    max_retries: u32,
    retry_base_delay: Duration,
    temperature: Option<f32>,
    max_tokens: Option<u32>,
    prompt_caching: bool,
    context_window: Option<usize>,
}

impl Default for AnthropicChatModelBuilder {
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
            prompt_caching: true,
            context_window: None,
        }
    }
}

impl AnthropicChatModelBuilder {
    /// The model name sent with every request, e.g. `claude-sonnet-4-5`.
    /// Defaults to [`AnthropicChatModel::MODEL_ENV`], then
    /// [`AnthropicChatModel::DEFAULT_MODEL`].
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The API root, e.g. `http://127.0.0.1:4000` (a trailing `/v1` is
    /// dropped); requests go to `{base_url}/v1/messages`. Defaults to
    /// [`AnthropicChatModel::BASE_URL_ENV`], then
    /// [`AnthropicChatModel::DEFAULT_BASE_URL`].
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = Some(base_url.into());
        self
    }

    /// The API key, sent as `x-api-key`. Defaults to
    /// [`AnthropicChatModel::API_KEY_ENV`]; may be left out when a base
    /// URL is set (a local gateway may need none).
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

    /// How many times a request that failed with 429, 529, 502-504 or a
    /// connection error is tried again (default 3; 0 disables retries).
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

    /// The sampling temperature; the API's default when not set.
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// The most tokens an answer may have (default
    /// [`AnthropicChatModel::DEFAULT_MAX_TOKENS`]).
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens).filter(|n| *n > 0);
        self
    }

    /// Whether the system prompt and the tools are marked for prompt
    /// caching (default on).
    pub fn prompt_caching(mut self, on: bool) -> Self {
        self.prompt_caching = on;
        self
    }

    /// How many tokens the model reads at most (prompt and answer), when
    /// you know better than the table of known models.
    pub fn context_window(mut self, tokens: usize) -> Self {
        self.context_window = Some(tokens).filter(|n| *n > 0);
        self
    }

    /// Builds the model, reading [`AnthropicChatModel::MODEL_ENV`],
    /// [`AnthropicChatModel::BASE_URL_ENV`] and
    /// [`AnthropicChatModel::API_KEY_ENV`] for whatever was not set
    /// explicitly.
    ///
    /// Fails with [`ModelError::Config`] when the base URL is not a valid
    /// URL, or there is no API key for Anthropic's own endpoint.
    pub fn build(self) -> Result<AnthropicChatModel, ModelError> {
        let base_url =
            non_empty(self.base_url).or_else(|| env_var(AnthropicChatModel::BASE_URL_ENV));
        let model = non_empty(self.model)
            .or_else(|| env_var(AnthropicChatModel::MODEL_ENV))
            .unwrap_or_else(|| AnthropicChatModel::DEFAULT_MODEL.to_string());
        let api_key = non_empty(self.api_key.map(|k| k.0))
            .or_else(|| env_var(AnthropicChatModel::API_KEY_ENV))
            .map(ApiKey);
        if api_key.is_none() && base_url.is_none() {
            return Err(config_error(format!(
                "no API key for {}: set {} or call `.api_key(..)` \
                 (a gateway that needs none: set {} or call `.base_url(..)`)",
                AnthropicChatModel::DEFAULT_BASE_URL,
                AnthropicChatModel::API_KEY_ENV,
                AnthropicChatModel::BASE_URL_ENV
            )));
        }
        let base_url = base_url.unwrap_or_else(|| AnthropicChatModel::DEFAULT_BASE_URL.to_string());
        let base_url = base_url.trim_end_matches('/');
        let base_url = base_url.strip_suffix("/v1").unwrap_or(base_url).to_string();
        let transport = Transport::new(
            endpoint(&base_url, "v1/messages")?,
            api_key,
            self.timeout,
            self.max_retries,
            self.retry_base_delay,
        )?
        .with_auth(Auth::Header("x-api-key"))
        .with_header("anthropic-version", AnthropicChatModel::API_VERSION);
        Ok(AnthropicChatModel {
            transport,
            base_url,
            model,
            temperature: self.temperature,
            max_tokens: self
                .max_tokens
                .unwrap_or(AnthropicChatModel::DEFAULT_MAX_TOKENS),
            prompt_caching: self.prompt_caching,
            context_window: self.context_window,
            learned: Arc::default(),
        })
    }
}

impl AnthropicChatModel {
    /// A builder; see [`AnthropicChatModelBuilder`].
    pub fn builder() -> AnthropicChatModelBuilder {
        AnthropicChatModelBuilder::default()
    }

    /// The model configured by the environment:
    /// [`AnthropicChatModel::MODEL_ENV`] (default
    /// [`AnthropicChatModel::DEFAULT_MODEL`]) at
    /// [`AnthropicChatModel::BASE_URL_ENV`] (default
    /// [`AnthropicChatModel::DEFAULT_BASE_URL`]) with the key in
    /// [`AnthropicChatModel::API_KEY_ENV`], default settings otherwise.
    pub fn from_env() -> Result<Self, ModelError> {
        Self::builder().build()
    }

    /// The model name sent with every request.
    pub fn model_name(&self) -> &str {
        &self.model
    }

    /// The API root requests go under (without a trailing `/` or `/v1`).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    fn body<'a>(
        &'a self,
        request: &'a ChatRequest,
        messages: &'a [Cow<'a, Message>],
        stream: bool,
    ) -> WireRequest<'a> {
        let settings = Settings {
            model: &self.model,
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            prompt_caching: self.prompt_caching,
        };
        WireRequest::new(&settings, request, messages, stream)
    }

    /// The window known without asking: configured, else learned from an
    /// error.
    fn known_window(&self) -> Option<usize> {
        self.context_window.or_else(|| self.learned.get())
    }

    /// Posts `body`; a prompt that does not fit is a
    /// [`ModelError::ContextOverflow`].
    async fn post(&self, body: &WireRequest<'_>) -> Result<reqwest::Response, ModelError> {
        self.transport
            .post(body)
            .await
            .map_err(|e| self.learned.overflow_or(e, self.known_window()))
    }
}

#[async_trait]
impl ChatModel for AnthropicChatModel {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let messages = request.messages();
        let response = self.post(&self.body(request, &messages, false)).await?;
        let text = self.transport.text(response, false).await?;
        wire::parse_message(&text, self.transport.api_key.as_ref())
    }

    async fn stream(
        &self,
        request: &ChatRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let messages = request.messages();
        let response = self.post(&self.body(request, &messages, true)).await?;
        if !transport::is_event_stream(&response) {
            // A server that ignores `stream: true` and answers in one piece.
            let text = self.transport.text(response, true).await?;
            let answer = wire::parse_message(&text, self.transport.api_key.as_ref())?;
            replay_as_deltas([answer.content.as_str()], &answer.tool_calls, on_delta);
            return Ok(answer);
        }
        stream::read_stream(&self.transport, response, on_delta).await
    }

    async fn context_window(&self) -> Option<usize> {
        self.known_window()
    }
}

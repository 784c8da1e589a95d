//! The Anthropic chat model: the Messages API over HTTP.
//!
//! (The full description is on the [`AnthropicChatModel`] docs.)

mod stream;
mod wire;

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

use super::http::endpoint;
use super::http::overflow::LearnedWindow;
use super::http::transport::{self, Auth, Transport};
use super::provider::table::Provider;
use super::settings::{http_setters, HttpSettings};
use super::{replay_as_deltas, ChatModel, ChatRequest, ChatResponse, DeltaSink};
use crate::error::ModelError;
use crate::message::Message;
use wire::{Settings, WireRequest};

impl AnthropicChatModel {
    /// The most tokens an answer may have unless the builder says
    /// otherwise (the API requires a limit; every current Claude model
    /// writes at least this many).
    pub(crate) const DEFAULT_MAX_TOKENS: u32 = 8192;
    /// The `anthropic-version` header sent with every request.
    pub(crate) const API_VERSION: &str = "2023-06-01";
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
/// - **`max_tokens`** is required by the API: 8192 unless set.
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
    images: Option<bool>,
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
    http: HttpSettings,
    prompt_caching: bool,
}

impl Default for AnthropicChatModelBuilder {
    fn default() -> Self {
        Self {
            http: HttpSettings::default(),
            prompt_caching: true,
        }
    }
}

impl AnthropicChatModelBuilder {
    http_setters!(http);

    /// Whether the system prompt and the tools are marked for prompt
    /// caching (default on).
    pub fn prompt_caching(mut self, on: bool) -> Self {
        self.prompt_caching = on;
        self
    }

    /// Builds the model, reading `ANTHROPIC_MODEL` (default
    /// `claude-sonnet-4-5`), `ANTHROPIC_BASE_URL` (default
    /// `https://api.anthropic.com`; a trailing `/v1` is dropped, requests
    /// go to `{base_url}/v1/messages`) and `ANTHROPIC_API_KEY` (the
    /// provider's row, [`Provider::row`]) for whatever was not set
    /// explicitly. The answer's limit is
    /// 8192 tokens unless set.
    ///
    /// Fails with [`ModelError::Config`] when the base URL is not a valid
    /// URL, or there is no API key for Anthropic's own endpoint.
    pub fn build(self) -> Result<AnthropicChatModel, ModelError> {
        let row = Provider::Anthropic.row();
        let settings = self.http.resolve(row)?;
        let model = settings
            .model
            .clone()
            .unwrap_or_else(|| row.default_model.to_string());
        let base_url = settings.base_url.as_str();
        let base_url = base_url.strip_suffix("/v1").unwrap_or(base_url).to_string();
        let transport = Transport::new(endpoint(&base_url, "v1/messages")?, &settings)?
            .with_auth(Auth::Header("x-api-key"))
            .with_header("anthropic-version", AnthropicChatModel::API_VERSION);
        Ok(AnthropicChatModel {
            transport,
            base_url,
            model,
            temperature: self.http.temperature,
            max_tokens: self
                .http
                .max_tokens
                .unwrap_or(AnthropicChatModel::DEFAULT_MAX_TOKENS),
            prompt_caching: self.prompt_caching,
            context_window: self.http.context_window,
            images: self.http.images,
            learned: Arc::default(),
        })
    }
}

/// The provider table's constructor for `anthropic`.
pub(crate) fn open(settings: HttpSettings) -> Result<Arc<dyn ChatModel>, ModelError> {
    let builder = AnthropicChatModelBuilder {
        http: settings,
        ..AnthropicChatModelBuilder::default()
    };
    Ok(Arc::new(builder.build()?))
}

impl AnthropicChatModel {
    /// A builder; see [`AnthropicChatModelBuilder`].
    pub fn builder() -> AnthropicChatModelBuilder {
        AnthropicChatModelBuilder::default()
    }

    /// The model configured by the environment: `ANTHROPIC_MODEL`
    /// (default `claude-sonnet-4-5`) at `ANTHROPIC_BASE_URL` (default
    /// `https://api.anthropic.com`) with the key in `ANTHROPIC_API_KEY`,
    /// default settings otherwise (the provider's row, [`Provider::row`]).
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

/// An output schema goes as a forced tool (the Messages API has no
/// `response_format`); a call of it is read back as the answer's text.
#[async_trait]
impl ChatModel for AnthropicChatModel {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let request = crate::model::forced_tool::as_forced_tool(request);
        let messages = request.messages();
        let response = self.post(&self.body(&request, &messages, false)).await?;
        let text = self.transport.text(response, false).await?;
        let mut answer = wire::parse_message(&text, self.transport.api_key.as_ref())?;
        crate::model::forced_tool::answer_from_forced_tool(&request, &mut answer);
        Ok(answer)
    }

    async fn stream(
        &self,
        request: &ChatRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let request = crate::model::forced_tool::as_forced_tool(request);
        let mut answer = self.stream_raw(&request, &mut *on_delta).await?;
        if crate::model::forced_tool::answer_from_forced_tool(&request, &mut answer) {
            on_delta(super::StreamDelta::Text(answer.content.clone()));
        }
        Ok(answer)
    }

    fn reads_images(&self) -> Option<bool> {
        self.images
    }

    async fn context_window(&self) -> Option<usize> {
        self.known_window()
    }
}

impl AnthropicChatModel {
    /// Streams `request` as it is.
    async fn stream_raw(
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
}

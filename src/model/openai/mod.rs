//! The OpenAI-compatible chat model: chat completions over HTTP.
//!
//! (The full description is on the [`OpenAiChatModel`] docs.)

mod discover;
mod embeddings;
mod remembered;
mod stream;
mod tokenize;
mod window;
mod wire;

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;

use super::http::overflow::{rough_tokens, LearnedWindow};
use super::http::transport::{self, Transport};
use super::http::{config_error, endpoint};
use super::provider::table::Provider;
use super::settings::{http_setters, HttpSettings};
use super::{replay_as_deltas, ChatModel, ChatRequest, ChatResponse, DeltaSink, ToolChoice};
use crate::error::ModelError;
use crate::message::Message;
use wire::{StreamOptions, WireRequest, WireTool, WireToolChoice};

pub use embeddings::OpenAiEmbedder;
pub use remembered::remember_servers_in;

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
/// - **Messages** go out in protocol order ([`ChatRequest::messages`]),
///   the system messages they start with joined into one (blank-line
///   separated: many chat templates accept one system message, at the
///   start): `system`, `user`, `assistant` (with `tool_calls`; `content` is always
///   a string, `""` beside calls, as some servers refuse `null`; blank
///   arguments are sent as `{}`) and `tool` (with `tool_call_id`). `tools`
///   is omitted when there are none; when there are, `tool_choice` goes
///   with them: the request's ([`ChatRequest::tool_choice`]), else `auto`
///   (llama-cpp-python's function-calling format leaves the tools out of
///   the prompt without it).
/// - **Streaming refused**: a server that will not stream with this tool
///   choice (an error saying it is not supported, or, as llama-cpp-python
///   does for `auto`, an empty event stream) gets the same request
///   unstreamed, and with `auto` this model (and its clones) asks that way
///   from then on — as do the next processes, for a day, once
///   [`remember_servers_in`] was called; the answer is still reported as
///   deltas.
/// - **Empty answers with tools**: an answer with no text and no tool call
///   (and not ended for a tool call it lost) to a request that let the
///   model choose (`auto`) is asked again once
///   with `tool_choice: none` (llama-cpp-python's function-calling format
///   loses the text of every answer that is not a tool call). Any other empty
///   stream is asked again unstreamed once too, so the server says what
///   went wrong.
/// - **Streamed tool calls** are joined by their index: a name or id a
///   server repeats in every chunk (llama-cpp-python does) counts once.
/// - **Context window** ([`ChatModel::context_window`]): the one set with
///   [`OpenAiChatModelBuilder::context_window`], else what the server says
///   (llama.cpp's `/props`, `/v1/models` metadata as vLLM, llama.cpp and
///   LM Studio give it, Ollama's `/api/show`; asked once), else what an
///   error said when a prompt did not fit. Such an error becomes
///   [`ModelError::ContextOverflow`] with the sizes the server gave; a
///   stream that ends without an answer is an error saying so, and how the
///   prompt compares to the window.
/// - **Lenient reading**: unknown fields, missing optional fields,
///   `content: null`, unknown finish reasons and tool-call arguments that
///   are not valid JSON are all accepted; the arguments are kept as the raw
///   text the model produced (`""` included) and the tool node turns bad
///   ones into an error result the model reads. A body that is not JSON at
///   all is a [`ModelError::InvalidResponse`].
/// - **Retries**: only what can succeed: HTTP 429, 502-504 and dropped
///   connections are retried with exponential backoff and jitter
///   (honouring `Retry-After` in seconds, up to 60 s), `max_retries` times
///   (3 by default); a 500 at most once; other 4xx, timeouts and "not
///   supported" answers are not retried. The server's error body is part
///   of the error ([`ModelError::Http`]).
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
/// - `wire.rs` — the protocol's JSON as Rust types, and their conversions
///   from and to messages, tool calls, tool specs, usage and answers.
/// - `stream.rs` — a server-sent event stream assembled into deltas and
///   one answer.
/// - `window.rs` — the context window, asked of the server.
/// - `tokenize.rs` — tokens counted by the server's own tokenizer.
/// - `discover.rs` — the only model a server lists, when none is named.
/// - `remembered.rs` — what a server cannot do, kept across processes
///   ([`remember_servers_in`]).
/// - shared with the other providers (`model/http/`): `transport.rs`
///   (sending: retries, backoff, `Retry-After`, timeouts, the HTTP
///   client's failures as [`ModelError`]s), `redact.rs` (the API key, and
///   error text without it), `overflow.rs` (a prompt that does not fit,
///   read from the server's errors).
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
    context_window: Option<usize>,
    images: Option<bool>,
    learned: Arc<Learned>,
}

/// What this model learned about its server (shared by clones).
#[derive(Default)]
struct Learned {
    /// The window the server reported, once asked (`None` inside: it did
    /// not say).
    probed: tokio::sync::OnceCell<Option<usize>>,
    /// The window an error gave.
    from_errors: LearnedWindow,
    /// The server's tokenizer endpoint, once looked for (`None` inside:
    /// it has none).
    tokenizer: tokio::sync::OnceCell<Option<tokenize::Endpoint>>,
    /// The server refused to stream a request with tools and `auto`.
    no_streaming_with_tools: AtomicBool,
    /// The server refused `response_format` with a JSON Schema: output
    /// schemas go as a forced tool.
    schema_as_tool: AtomicBool,
    /// The server failed `tool_choice: required`: an output schema's tool
    /// is forced by name, even beside other tools.
    schema_tool_by_name: AtomicBool,
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
            .field("context_window", &self.context_window)
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
#[derive(Debug, Clone, Default)]
pub struct OpenAiChatModelBuilder {
    http: HttpSettings,
}

impl OpenAiChatModelBuilder {
    http_setters!(http);

    /// Builds the model, reading `OPENAI_MODEL`, `OPENAI_BASE_URL` and
    /// `OPENAI_API_KEY` (the provider's row, [`Provider::row`]) for
    /// whatever was not set explicitly.
    ///
    /// Without a model name, OpenAI's own endpoint gets `gpt-4o-mini`; any
    /// other server is asked for its models (`GET {base_url}/models`,
    /// once per process) and, when it lists exactly one, that one is used
    /// and a warning says so.
    ///
    /// Fails with [`ModelError::Config`] when a server other than OpenAI's
    /// has no model name and does not list exactly one model,
    /// the base URL is not a valid URL, or there is no API key for the
    /// default (OpenAI) endpoint.
    pub fn build(self) -> Result<OpenAiChatModel, ModelError> {
        let row = Provider::OpenAi.row();
        let settings = self.http.resolve(row)?;
        let model = match (&settings.model, settings.base_url_given) {
            (Some(model), _) => model.clone(),
            (None, false) => row.default_model.to_string(),
            (None, true) => discover::only_model(&settings.base_url, settings.api_key.as_deref())
                .map_err(|why| {
                config_error(format!(
                    "no model name for {} ({why}): set {} to a model that server \
                             serves, or call `.model(..)`",
                    settings.base_url, row.model_env
                ))
            })?,
        };
        let transport =
            Transport::new(endpoint(&settings.base_url, "chat/completions")?, &settings)?;
        let learned = Learned::default();
        if let Some(entry) = remembered::recall(&settings.base_url, &model) {
            tracing::debug!(base_url = %settings.base_url, model = %model, ?entry, "remembered of this server");
            learned
                .no_streaming_with_tools
                .store(entry.no_streaming_with_tools, Ordering::Relaxed);
            learned
                .schema_as_tool
                .store(entry.schema_as_tool, Ordering::Relaxed);
            learned
                .schema_tool_by_name
                .store(entry.schema_tool_by_name, Ordering::Relaxed);
        }
        Ok(OpenAiChatModel {
            transport,
            base_url: settings.base_url,
            model,
            temperature: self.http.temperature,
            max_tokens: self.http.max_tokens,
            context_window: self.http.context_window,
            images: self.http.images,
            learned: Arc::new(learned),
        })
    }
}

/// The provider table's constructor for `openai`.
pub(crate) fn open(settings: HttpSettings) -> Result<Arc<dyn ChatModel>, ModelError> {
    Ok(Arc::new(OpenAiChatModelBuilder { http: settings }.build()?))
}

impl OpenAiChatModel {
    /// A builder; see [`OpenAiChatModelBuilder`].
    pub fn builder() -> OpenAiChatModelBuilder {
        OpenAiChatModelBuilder::default()
    }

    /// The model configured by the environment, as a newcomer sets it:
    /// `OPENAI_MODEL` at `OPENAI_BASE_URL` (default
    /// `https://api.openai.com/v1`) with the key in `OPENAI_API_KEY`, and
    /// default settings otherwise (the provider's row, [`Provider::row`]).
    ///
    /// Without `OPENAI_MODEL`, OpenAI's own endpoint gets `gpt-4o-mini`;
    /// any other server its only model, when it lists exactly one (a
    /// warning says so), else a [`ModelError::Config`] naming the
    /// variable (a local server rarely has OpenAI's models).
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
            messages: wire::messages(messages),
            tools: request.tools.iter().map(WireTool::from).collect(),
            tool_choice: WireToolChoice::for_request(
                request.tool_choice.as_ref(),
                !request.tools.is_empty(),
            ),
            response_format: request
                .output_schema
                .as_ref()
                .filter(|_| !self.learned.schema_as_tool.load(Ordering::Relaxed))
                .map(wire::ResponseFormat::from),
            // The request's own sampling first, then the model's settings.
            temperature: request.sampling.temperature.or(self.temperature),
            max_tokens: request.sampling.max_tokens.or(self.max_tokens),
            top_p: request.sampling.top_p,
            stop: &request.sampling.stop,
            seed: request.sampling.seed,
            presence_penalty: request.sampling.presence_penalty,
            frequency_penalty: request.sampling.frequency_penalty,
            stream,
            stream_options: stream.then_some(StreamOptions {
                include_usage: true,
            }),
        }
    }
}

impl OpenAiChatModel {
    /// This server will not stream a request with tools and `auto`: asked
    /// unstreamed from now on, by this model, its clones and (when
    /// [`remember_servers_in`] was called) the next processes.
    fn no_streaming_with_tools(&self) {
        if !self
            .learned
            .no_streaming_with_tools
            .swap(true, Ordering::Relaxed)
        {
            remembered::remember(
                &self.base_url,
                &self.model,
                "no streaming with tools",
                |e| e.no_streaming_with_tools = true,
            );
        }
    }

    /// The window known without asking the server: configured, else
    /// learned from an error, else the server's answer if it was asked.
    fn known_window(&self) -> Option<usize> {
        self.context_window
            .or_else(|| self.learned.from_errors.get())
            .or_else(|| self.learned.probed.get().copied().flatten())
    }

    /// `error`, read for a prompt that does not fit: such an error becomes
    /// [`ModelError::ContextOverflow`], and the window it gives is kept.
    fn overflow_or(&self, error: ModelError) -> ModelError {
        self.learned
            .from_errors
            .overflow_or(error, self.known_window())
    }

    /// Posts `body` and reads the whole answer.
    async fn complete_body(&self, body: &WireRequest<'_>) -> Result<ChatResponse, ModelError> {
        let response = self
            .transport
            .post(body)
            .await
            .map_err(|e| self.overflow_or(e))?;
        let text = self.transport.text(response, false).await?;
        wire::parse_completion(&text, self.transport.api_key.as_ref())
    }

    /// The request unstreamed, its answer reported as deltas.
    async fn complete_as_stream(
        &self,
        request: &ChatRequest,
        messages: &[Cow<'_, Message>],
        on_delta: DeltaSink<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let answer = self
            .complete_body(&self.body(request, messages, false))
            .await?;
        replay_as_deltas([answer.content.as_str()], &answer.tool_calls, on_delta);
        Ok(answer)
    }

    /// Why an event stream that ended with nothing at all may have: how
    /// the prompt compares to the window, as far as known.
    fn empty_stream_hint(&self, body: &WireRequest<'_>) -> String {
        let bytes = serde_json::to_vec(body).map_or(0, |b| b.len());
        let tokens = rough_tokens(bytes);
        match self.known_window() {
            Some(window) if tokens >= window => format!(
                "; the prompt (about {tokens} tokens) is larger than the model's \
                 context window ({window} tokens)"
            ),
            Some(window) => format!(
                "; the prompt is about {tokens} tokens and the model's context window \
                 {window}, so it should fit"
            ),
            None => format!(
                "; servers do this when the prompt (about {tokens} tokens) does not fit \
                 the model's context window, which this server does not report"
            ),
        }
    }
}

impl OpenAiChatModel {
    /// Whether the request's output schema goes as a forced tool: the
    /// server refused `response_format` before.
    fn schema_as_tool(&self, request: &ChatRequest) -> bool {
        request.output_schema.is_some() && self.learned.schema_as_tool.load(Ordering::Relaxed)
    }

    /// Whether `error` is the server refusing `response_format` (a 4xx, or
    /// a 500, naming it: llama-cpp-python takes only `json_object` and says
    /// so with a 500; other servers none): output schemas go as a forced
    /// tool from then on.
    fn refused_response_format(&self, request: &ChatRequest, error: &ModelError) -> bool {
        // Also when it came as the unstreamed retry of an empty stream.
        let Some((status, body)) = http_failure(error) else {
            return false;
        };
        let body = body.to_ascii_lowercase();
        // (llama-cpp-python answers its validation error with a 500.)
        let refused = request.output_schema.is_some()
            && (400..=500).contains(&status)
            && (body.contains("response_format") || body.contains("json_schema"));
        if refused {
            tracing::warn!(
                model = %self.model,
                status,
                "the server refused response_format with a JSON Schema; asking for \
                 output schemas with a forced tool from now on"
            );
            if !self.learned.schema_as_tool.swap(true, Ordering::Relaxed) {
                remembered::remember(
                    &self.base_url,
                    &self.model,
                    "output schemas as a tool",
                    |e| e.schema_as_tool = true,
                );
            }
        }
        refused
    }

    /// Sends `request` once, whole or streamed as `send` says.
    async fn send_once(
        &self,
        request: &ChatRequest,
        send: &mut Sending<'_>,
    ) -> Result<ChatResponse, ModelError> {
        match send {
            Sending::Whole => {
                let messages = wire::one_system_message(request.messages());
                self.complete_body(&self.body(request, &messages, false))
                    .await
            }
            Sending::Streamed(on_delta) => self.stream_raw(request, &mut **on_delta).await,
        }
    }

    /// Sends `request` with its output schema as a forced tool (a streamed
    /// answer, once read, is reported as a text delta).
    async fn send_forced(
        &self,
        request: &ChatRequest,
        send: &mut Sending<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let by_name = self.learned.schema_tool_by_name.load(Ordering::Relaxed);
        let mut forced = if by_name {
            crate::model::forced_tool::as_forced_tool_by_name(request)
        } else {
            crate::model::forced_tool::as_forced_tool(request)
        };
        let mut answer = match self.send_once(&forced, send).await {
            Err(error)
                if !by_name
                    && forced.tool_choice == Some(ToolChoice::Required)
                    && refused_required(&error) =>
            {
                tracing::warn!(
                    model = %self.model,
                    error = %error,
                    "the server failed tool_choice: required; forcing the output schema's \
                     tool by name from now on (the model answers without calling other \
                     tools first)"
                );
                if !self
                    .learned
                    .schema_tool_by_name
                    .swap(true, Ordering::Relaxed)
                {
                    remembered::remember(
                        &self.base_url,
                        &self.model,
                        "the output schema's tool forced by name",
                        |e| e.schema_tool_by_name = true,
                    );
                }
                forced = crate::model::forced_tool::as_forced_tool_by_name(request);
                self.send_once(&forced, send).await?
            }
            other => other?,
        };
        if crate::model::forced_tool::answer_from_forced_tool(&forced, &mut answer)
            && let Sending::Streamed(on_delta) = send
        {
            on_delta(super::StreamDelta::Text(answer.content.clone()));
        }
        Ok(answer)
    }

    /// The one rule of `complete` and `stream`: the output schema as a
    /// forced tool once the server refused `response_format` (now, or
    /// before), and an empty answer to a request that let the model choose
    /// asked again without tools.
    async fn drive(
        &self,
        request: &ChatRequest,
        mut send: Sending<'_>,
    ) -> Result<ChatResponse, ModelError> {
        if self.schema_as_tool(request) {
            return self.send_forced(request, &mut send).await;
        }
        let answer = match self.send_once(request, &mut send).await {
            Err(error) if self.refused_response_format(request, &error) => {
                return self.send_forced(request, &mut send).await
            }
            other => other?,
        };
        match without_tools_if_empty(request, &answer) {
            Some(again) => self.send_once(&again, &mut send).await,
            None => Ok(answer),
        }
    }
}

/// How [`OpenAiChatModel::drive`] sends a request.
enum Sending<'d> {
    /// Unstreamed, the answer read whole.
    Whole,
    /// Streamed, each delta reported here.
    Streamed(DeltaSink<'d>),
}

#[async_trait]
impl ChatModel for OpenAiChatModel {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.drive(request, Sending::Whole).await
    }

    async fn stream(
        &self,
        request: &ChatRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ChatResponse, ModelError> {
        self.drive(request, Sending::Streamed(on_delta)).await
    }

    fn reads_images(&self) -> Option<bool> {
        self.images
    }

    async fn context_window(&self) -> Option<usize> {
        self.window().await
    }

    async fn count_tokens(&self, text: &str) -> Option<usize> {
        let key = self.transport.api_key.as_ref().map(|k| k.0.as_str());
        let client = self.transport.client();
        let endpoint = (*self
            .learned
            .tokenizer
            .get_or_init(|| async {
                let found = tokenize::find(client, &self.base_url, key, &self.model).await;
                tracing::debug!(model = %self.model, ?found, "the server's tokenizer endpoint");
                found
            })
            .await)?;
        tokenize::count(client, &self.base_url, key, &self.model, endpoint, text).await
    }
}

/// Whether `error` is a server failing `tool_choice: required`: a 4xx or
/// 500 naming the tool choice, or a bare 500 with no word of why
/// (llama-cpp-python's function-calling format asserts on it), also when
/// it came as the unstreamed retry of an empty stream.
fn refused_required(error: &ModelError) -> bool {
    let Some((status, body)) = http_failure(error) else {
        return false;
    };
    let lower = body.to_ascii_lowercase();
    let names_it = lower.contains("tool_choice") || lower.contains("required");
    let says_nothing = body.trim().is_empty() || lower.contains("\"message\":\"\"");
    ((400..=500).contains(&status) && names_it) || (status == 500 && says_nothing)
}

/// The HTTP status and body of a failed request: `error` itself, or the
/// failure of the unstreamed retry an empty stream led to.
fn http_failure(error: &ModelError) -> Option<(u16, &str)> {
    match error {
        ModelError::Http { status, body } => Some((*status, body.as_str())),
        ModelError::InvalidResponse {
            source: Some(source),
            ..
        } => source.downcast_ref::<ModelError>().and_then(http_failure),
        _ => None,
    }
}

/// `request` again with `tool_choice: none`, when `answer` is empty (no
/// text, no tool call) and the model was left to choose (`auto`): a
/// server may lose the text of an answer that is not a tool call
/// (llama-cpp-python's function-calling format does, always).
fn without_tools_if_empty(request: &ChatRequest, answer: &ChatResponse) -> Option<ChatRequest> {
    let auto = matches!(request.tool_choice, None | Some(ToolChoice::Auto));
    let empty = answer.content.trim().is_empty() && answer.tool_calls.is_empty();
    // A call the server lost (`finish_reason: tool_calls`) stays flagged.
    let lost_call = answer.finish_reason.as_deref() == Some("tool_calls");
    if request.tools.is_empty() || !auto || !empty || lost_call || answer.is_cut_off() {
        return None;
    }
    tracing::debug!("an empty answer with tools offered; asking again with tool_choice none");
    Some(ChatRequest {
        tool_choice: Some(ToolChoice::None),
        ..request.clone()
    })
}

impl OpenAiChatModel {
    /// Streams `request` as it is (see the type's docs: refusals, empty
    /// streams).
    async fn stream_raw(
        &self,
        request: &ChatRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let messages = wire::one_system_message(request.messages());
        let body = self.body(request, &messages, true);
        let auto_tools = body
            .tool_choice
            .as_ref()
            .is_some_and(WireToolChoice::is_auto);
        if auto_tools && self.learned.no_streaming_with_tools.load(Ordering::Relaxed) {
            return self.complete_as_stream(request, &messages, on_delta).await;
        }
        let response = match self.transport.post(&body).await {
            Ok(response) => response,
            // (Not 404, 405 or 501: those say the endpoint itself is not
            // served, whatever the body words.)
            Err(ModelError::Http { status, body: text })
                if !request.tools.is_empty()
                    && !matches!(status, 404 | 405 | 501)
                    && transport::refuses_a_feature(&text) =>
            {
                tracing::warn!(
                    model = %self.model,
                    status,
                    error = %text,
                    "the server refused to stream with tools; asking without streaming \
                     from now on"
                );
                if auto_tools {
                    self.no_streaming_with_tools();
                }
                return self.complete_as_stream(request, &messages, on_delta).await;
            }
            // llama-cpp-python fails a streamed request whose tool choice
            // is forced (a named tool, `required`: an output schema sent as
            // a tool) with a bare 500 and no word of why; unstreamed, it
            // answers. Not remembered: only this kind of request is refused.
            Err(ModelError::Http {
                status: 500,
                body: text,
            }) if !request.tools.is_empty() && !auto_tools && text.trim().is_empty() => {
                tracing::info!(
                    model = %self.model,
                    "the server failed a streamed request with a forced tool choice without \
                     saying why; asking it without streaming"
                );
                return self.complete_as_stream(request, &messages, on_delta).await;
            }
            Err(error) => return Err(self.overflow_or(error)),
        };
        if !transport::is_event_stream(&response) {
            // Some servers ignore `stream: true` and answer in one piece.
            let text = self.transport.text(response, true).await?;
            let answer = wire::parse_completion(&text, self.transport.api_key.as_ref())?;
            replay_as_deltas([answer.content.as_str()], &answer.tool_calls, on_delta);
            return Ok(answer);
        }
        let hint = || self.empty_stream_hint(&body);
        if let Some(answer) =
            stream::read_stream(&self.transport, response, &mut *on_delta, &hint).await?
        {
            return Ok(answer);
        }
        // Not a single chunk: the server failed after answering 200. Asked
        // unstreamed, it says why (a prompt that does not fit) or answers
        // (a tool choice it cannot stream, remembered).
        tracing::warn!(
            model = %self.model,
            "the server ended the stream without an answer; asking again without streaming"
        );
        let answer = self
            .complete_as_stream(request, &messages, on_delta)
            .await
            .map_err(|error| match error {
                ModelError::ContextOverflow { .. } => error,
                other => ModelError::InvalidResponse {
                    message: format!(
                        "the server ended the stream without an answer{}, and asked again \
                         without streaming it failed: {other}",
                        hint()
                    ),
                    source: Some(Arc::new(other)),
                },
            })?;
        if auto_tools {
            self.no_streaming_with_tools();
        }
        Ok(answer)
    }

    /// The context window: known, else asked of the server once.
    async fn window(&self) -> Option<usize> {
        if let Some(window) = self.known_window() {
            return Some(window);
        }

        *self
            .learned
            .probed
            .get_or_init(|| async {
                let key = self.transport.api_key.as_ref().map(|k| k.0.as_str());
                let window =
                    window::probe(self.transport.client(), &self.base_url, key, &self.model).await;
                tracing::debug!(model = %self.model, ?window, "context window from the server");
                window
            })
            .await
    }
}

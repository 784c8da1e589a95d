//! Chat models: the [`ChatModel`] trait, its request and response, and the
//! [`ChatModelRegistry`] that finds models by name.

#[cfg(feature = "anthropic")]
pub(crate) mod anthropic;
pub(crate) mod cassette;
mod embed;
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) mod forced_tool;
#[cfg(any(feature = "openai", feature = "anthropic"))]
mod http;
#[cfg(feature = "openai")]
pub(crate) mod openai;
pub(crate) mod provider;
mod sampling;
pub(crate) mod scripted;
mod settings;
mod tool_choice;

pub use embed::Embedder;
pub use sampling::Sampling;
pub use settings::HttpSettings;
pub use tool_choice::{ToolChoice, ToolChoiceError};

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::history::History;
use crate::message::{Message, ToolCall};
use crate::node::NodeId;

/// What a chat node asks a model.
#[derive(Debug, Clone, Default)]
pub struct ChatRequest {
    /// The conversation so far (the chat node's ancestors' outputs).
    pub history: History,
    /// Extra system-prompt sections (e.g. from modifiers), sent after the
    /// conversation's own system messages.
    pub system: Vec<String>,
    /// Tools the model may call.
    pub tools: crate::tool_specs::ToolSpecs,
    /// The chat node making the request, when there is one.
    pub node_id: Option<NodeId>,
    /// Whether and which tool the model must call; `None` leaves it to
    /// the provider's default ([`ToolChoice::Auto`] when tools are
    /// offered).
    pub tool_choice: Option<ToolChoice>,
    /// The JSON Schema the final answer must follow, when there is one:
    /// each provider asks for it its own way (`response_format`, or a
    /// forced tool; see [`OutputSchema`](crate::OutputSchema)).
    pub output_schema: Option<crate::OutputSchema>,
    /// How the answer is sampled, when the request asks (a client's
    /// `temperature`, `max_tokens`, `stop`, …): set fields override the
    /// model's own settings.
    pub sampling: Sampling,
}

impl ChatRequest {
    /// A request with this history and nothing else.
    pub fn new(history: History) -> Self {
        Self {
            history,
            ..Self::default()
        }
    }

    /// The messages in protocol order: the system messages, then
    /// `system`, the latest summary and what follows its cut; a tool call
    /// without a result gets a synthetic error result, a result that
    /// answers no call is dropped.
    pub fn messages(&self) -> Vec<std::borrow::Cow<'_, Message>> {
        self.history.assemble(&self.system)
    }
}

/// Token counts reported by the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens in the prompt.
    pub prompt_tokens: u64,
    /// Tokens generated.
    pub completion_tokens: u64,
    /// Both together.
    pub total_tokens: u64,
    /// Of the prompt's tokens, those read from the provider's prompt
    /// cache (Anthropic reports them; 0 when not reported).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
    /// Of the prompt's tokens, those written to the provider's prompt
    /// cache (Anthropic reports them; 0 when not reported).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// Of the completion's tokens, those the model spent reasoning
    /// (OpenAI's `completion_tokens_details.reasoning_tokens`; 0 when not
    /// reported).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
    /// The server reported no usage: these counts are an estimate (see
    /// [`UsageEstimator`](crate::UsageEstimator)).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What a model answered.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatResponse {
    /// The answer text.
    pub content: String,
    /// Tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Token usage, when reported.
    pub usage: Option<Usage>,
    /// Why the model stopped (`stop`, `tool_calls`, `length`, or anything
    /// else the server says), when reported.
    pub finish_reason: Option<String>,
    /// The model name the server reported.
    pub model: Option<String>,
}

impl ChatResponse {
    /// A text answer.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }

    /// Whether the model stopped because it reached its output limit
    /// (`finish_reason` `length`, or `max_tokens` as some providers say):
    /// the answer is cut off.
    pub fn is_cut_off(&self) -> bool {
        matches!(self.finish_reason.as_deref(), Some("length" | "max_tokens"))
    }

    /// Whether the answer has neither text (beyond whitespace) nor tool
    /// calls.
    pub(crate) fn is_empty(&self) -> bool {
        self.content.trim().is_empty() && self.tool_calls.is_empty()
    }

    /// The answer as an AI message.
    pub fn to_message(&self) -> Message {
        Message::ai_with_tools(self.content.clone(), self.tool_calls.clone())
    }

    /// The answer as an AI message, without copying its text and calls.
    pub(crate) fn into_message(self) -> Message {
        Message::ai_with_tools(self.content, self.tool_calls)
    }
}

/// A piece of a streamed answer.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamDelta {
    /// More answer text.
    Text(String),
    /// A fragment of a tool call (`index` identifies the call within the
    /// answer; `id` and `name` arrive once, `arguments` in pieces).
    ToolCall {
        /// Position of the call in the answer.
        index: usize,
        /// The call id, on the first fragment.
        id: Option<String>,
        /// The tool name, on the first fragment.
        name: Option<String>,
        /// A piece of the arguments text.
        arguments: String,
    },
}

/// Receives stream deltas as they arrive.
pub type DeltaSink<'a> = &'a mut (dyn FnMut(StreamDelta) + Send);

/// A chat-completion model.
///
/// ```
/// use lc_agent::{ChatModel, ChatRequest, ChatResponse, ModelError};
///
/// /// Answers with the length of the conversation.
/// struct Counter;
///
/// #[async_trait::async_trait]
/// impl ChatModel for Counter {
///     async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
///         Ok(ChatResponse::text(format!("{} messages", request.history.len())))
///     }
/// }
/// ```
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// Answers the request in one piece.
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError>;

    /// Answers the request, calling `on_delta` as pieces arrive, and
    /// returns the whole answer. The default completes in one piece and
    /// reports the text as one delta.
    async fn stream(
        &self,
        request: &ChatRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let response = self.complete(request).await?;
        replay_as_deltas([response.content.as_str()], &[], on_delta);
        Ok(response)
    }

    /// How many tokens (prompt and answer together) the model reads at
    /// most, when the model knows: configured, or learned from its server.
    /// `None` (the default) leaves it to the caller's table of known
    /// models.
    async fn context_window(&self) -> Option<usize> {
        None
    }

    /// How many tokens the model's own tokenizer makes of `text`, when its
    /// server has an endpoint that says (llama-cpp-python's
    /// `/extras/tokenize/count`, llama.cpp's and vLLM's `/tokenize`).
    /// `None` (the default) when it cannot say: a caller estimates, and
    /// corrects the estimate by each answer's `usage.prompt_tokens`.
    async fn count_tokens(&self, _text: &str) -> Option<usize> {
        None
    }

    /// Whether the model reads images: `Some(false)` when its settings
    /// say it does not (a request with an image then fails with
    /// [`ModelError::ImagesNotSupported`] before it is sent), `None` (the
    /// default) when unknown (images are sent; a server's refusal becomes
    /// the same error).
    fn reads_images(&self) -> Option<bool> {
        None
    }
}

/// `error`, for a request that carried images to `model`: a client error
/// (4xx) whose body speaks of images becomes
/// [`ModelError::ImagesNotSupported`] naming the server's words.
pub(crate) fn images_refused(error: ModelError, model: &str) -> ModelError {
    match error {
        ModelError::Http { status, body }
            if (400..500).contains(&status) && body.to_lowercase().contains("image") =>
        {
            ModelError::ImagesNotSupported {
                model: model.to_string(),
                reason: format!("its server refused them: HTTP {status}: {body}"),
            }
        }
        other => other,
    }
}

/// Reports a whole answer as stream deltas, for a model that does not
/// stream: each piece of `text` as a [`StreamDelta::Text`] (empty pieces
/// are skipped), then each of `tool_calls` as one complete
/// [`StreamDelta::ToolCall`] fragment (id, name and all the arguments).
pub(crate) fn replay_as_deltas<'a>(
    text: impl IntoIterator<Item = &'a str>,
    tool_calls: &[ToolCall],
    on_delta: DeltaSink<'_>,
) {
    for piece in text.into_iter().filter(|piece| !piece.is_empty()) {
        on_delta(StreamDelta::Text(piece.to_string()));
    }
    for (index, call) in tool_calls.iter().enumerate() {
        on_delta(StreamDelta::ToolCall {
            index,
            id: Some(call.id.clone()),
            name: Some(call.name.clone()),
            arguments: call.arguments.clone(),
        });
    }
}

/// Chat models by name.
#[derive(Clone, Default)]
pub(crate) struct ChatModelRegistry {
    models: HashMap<String, Arc<dyn ChatModel>>,
}

impl ChatModelRegistry {
    /// An empty registry.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Registers (or replaces) the model called `name`.
    pub(crate) fn register(&mut self, name: impl Into<String>, model: impl ChatModel + 'static) {
        self.models.insert(name.into(), Arc::new(model));
    }

    /// Registers a shared model.
    pub(crate) fn register_shared(&mut self, name: impl Into<String>, model: Arc<dyn ChatModel>) {
        self.models.insert(name.into(), model);
    }

    /// The model called `name`.
    pub(crate) fn get(&self, name: &str) -> Option<Arc<dyn ChatModel>> {
        self.models.get(name).cloned()
    }

    /// Registered names, sorted.
    pub(crate) fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.models.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }
}

impl std::fmt::Debug for ChatModelRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatModelRegistry")
            .field("models", &self.names())
            .finish()
    }
}

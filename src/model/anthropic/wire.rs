//! The Messages API's JSON, in Rust: the request that is sent
//! ([`WireRequest`], built by [`WireRequest::new`] from a
//! [`ChatRequest`]), the message that comes back ([`WireMessageIn`]) and
//! the events of a stream ([`WireEvent`]), with their conversions to
//! [`ChatResponse`], [`Usage`] and finish reasons.
//!
//! Sending follows the API's rules: system messages go in the top-level
//! `system`; user and assistant messages alternate (consecutive messages of
//! one role are merged, tool results travel in a user message as
//! `tool_result` blocks); text blocks are never empty; a tool call's
//! arguments go as the JSON object `input`. Reading is lenient: unknown
//! fields and block types are ignored, missing fields read as empty.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::ModelError;
use crate::message::{ContentPart, Message, ToolCall, ToolStatus};
use crate::model::http::redact::ApiKey;
use crate::model::http::transport::Outgoing;
use crate::model::http::{decode, non_empty, null_as_default};
use crate::model::{ChatRequest, ChatResponse, ToolChoice, Usage};
use crate::tool::ToolSpec;

// ---------------------------------------------------------------------------
// The protocol: what is sent.

/// The body of `POST /v1/messages`.
#[derive(Debug, Serialize)]
pub(super) struct WireRequest<'a> {
    pub(super) model: &'a str,
    pub(super) max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) system: Option<System<'a>>,
    pub(super) messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_choice: Option<WireToolChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) top_p: Option<f32>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub(super) stop_sequences: &'a [String],
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) stream: bool,
}

/// What a request needs besides the conversation.
pub(super) struct Settings<'a> {
    pub(super) model: &'a str,
    pub(super) max_tokens: u32,
    pub(super) temperature: Option<f32>,
    /// Mark the system prompt and the tools for prompt caching.
    pub(super) prompt_caching: bool,
}

impl<'a> WireRequest<'a> {
    /// The body for `request`, whose messages (in protocol order) are
    /// `messages`.
    pub(super) fn new(
        settings: &Settings<'a>,
        request: &'a ChatRequest,
        messages: &'a [Cow<'a, Message>],
        stream: bool,
    ) -> Self {
        let cache = settings.prompt_caching.then_some(CacheControl::EPHEMERAL);
        let mut system: Vec<TextBlock<'a>> = messages
            .iter()
            .filter_map(|m| match &**m {
                Message::System { content } if !content.trim().is_empty() => Some(TextBlock {
                    kind: "text",
                    text: content,
                    cache_control: None,
                }),
                _ => None,
            })
            .collect();
        let system = match system.last_mut() {
            None => None,
            Some(last) if cache.is_some() => {
                last.cache_control = cache;
                Some(System::Blocks(system))
            }
            // Without a cache marker, one string: what every gateway
            // passes on (LiteLLM hands a list on as a list, which
            // llama-cpp-python refuses in a system message).
            Some(_) => Some(System::Text(
                system
                    .iter()
                    .map(|block| block.text)
                    .collect::<Vec<_>>()
                    .join("\n\n"),
            )),
        };
        let mut tools: Vec<WireTool<'a>> = request.tools.iter().map(WireTool::from).collect();
        if let Some(last) = tools.last_mut() {
            last.cache_control = cache;
        }
        Self {
            model: settings.model,
            // The request's own sampling first (Anthropic has no seed
            // or penalties), then the model's settings.
            max_tokens: request.sampling.max_tokens.unwrap_or(settings.max_tokens),
            system,
            messages: conversation(messages),
            tool_choice: WireToolChoice::for_request(
                request.tool_choice.as_ref(),
                !tools.is_empty(),
            ),
            tools,
            temperature: request.sampling.temperature.or(settings.temperature),
            top_p: request.sampling.top_p,
            stop_sequences: &request.sampling.stop,
            stream,
        }
    }
}

impl Outgoing for WireRequest<'_> {
    fn model(&self) -> &str {
        self.model
    }

    fn stream(&self) -> bool {
        self.stream
    }

    fn counts(&self) -> (usize, usize) {
        (self.messages.len(), self.tools.len())
    }
}

/// `cache_control`: where a cached prompt prefix ends.
#[derive(Debug, Clone, Copy, Serialize)]
pub(super) struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

impl CacheControl {
    const EPHEMERAL: Self = Self { kind: "ephemeral" };
}

/// The system prompt: text blocks (the last one marked for caching), or
/// one string.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum System<'a> {
    Blocks(Vec<TextBlock<'a>>),
    Text(String),
}

/// A text block of the system prompt.
#[derive(Debug, Serialize)]
pub(super) struct TextBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

/// One message: a role and its content blocks.
#[derive(Debug, Serialize)]
pub(super) struct WireMessage<'a> {
    role: Role,
    content: Vec<Block<'a>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Role {
    User,
    Assistant,
}

/// A content block of a message sent.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
    },
    ToolUse {
        id: Cow<'a, str>,
        name: &'a str,
        input: Value,
    },
    Image {
        source: ImageSource<'a>,
    },
    ToolResult {
        tool_use_id: Cow<'a, str>,
        content: ToolResultContent<'a>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

/// An image block's source: base64 data or a URL.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum ImageSource<'a> {
    Base64 { media_type: &'a str, data: &'a str },
    Url { url: &'a str },
}

/// A tool result's content: its text alone, or blocks when it carries
/// images.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ToolResultContent<'a> {
    Text(&'a str),
    Blocks(Vec<Block<'a>>),
}

/// The message's parts as blocks: text and images, in order.
fn part_blocks(parts: &[ContentPart]) -> impl Iterator<Item = Block<'_>> {
    parts.iter().filter_map(|part| match part {
        ContentPart::Text { text } => text_block(text),
        ContentPart::Image(image) => {
            let source = match (image.data(), image.url()) {
                (Some(data), _) => ImageSource::Base64 {
                    media_type: image.media_type().unwrap_or("image/png"),
                    data,
                },
                (None, Some(url)) => ImageSource::Url { url },
                (None, None) => return None,
            };
            Some(Block::Image { source })
        }
    })
}

/// The conversation as the API takes it: no system messages, roles
/// alternating (consecutive messages of one role merged), no empty text
/// blocks, no empty messages.
fn conversation<'a>(messages: &'a [Cow<'a, Message>]) -> Vec<WireMessage<'a>> {
    let mut out: Vec<WireMessage<'a>> = Vec::new();
    for message in messages {
        let (role, blocks) = match &**message {
            Message::System { .. } => continue,
            Message::Human { content, parts } => (
                Role::User,
                text_block(content)
                    .into_iter()
                    .chain(part_blocks(parts))
                    .collect(),
            ),
            Message::Ai {
                content,
                tool_calls,
            } => (
                Role::Assistant,
                text_block(content)
                    .into_iter()
                    .chain(tool_calls.iter().map(tool_use))
                    .collect::<Vec<_>>(),
            ),
            Message::Tool {
                content,
                tool_call_id,
                status,
                parts,
                ..
            } => (
                Role::User,
                vec![Block::ToolResult {
                    tool_use_id: block_id(tool_call_id),
                    content: if parts.is_empty() {
                        ToolResultContent::Text(content)
                    } else {
                        ToolResultContent::Blocks(
                            text_block(content)
                                .into_iter()
                                .chain(part_blocks(parts))
                                .collect(),
                        )
                    },
                    is_error: *status == ToolStatus::Error,
                }],
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => out.push(WireMessage {
                role,
                content: blocks,
            }),
        }
    }
    out
}

/// A text block, unless the text is blank (the API refuses empty ones).
fn text_block(text: &str) -> Option<Block<'_>> {
    (!text.trim().is_empty()).then_some(Block::Text { text })
}

/// A tool call as a `tool_use` block: its arguments as a JSON object
/// (blank or unreadable arguments, which the tool answered with an error,
/// go as `{}`; any other JSON value as `{"value": ...}`).
fn tool_use(call: &ToolCall) -> Block<'_> {
    let input = match serde_json::from_str::<Value>(&call.arguments) {
        Ok(Value::Object(map)) => Value::Object(map),
        Ok(Value::Null) | Err(_) => Value::Object(Map::new()),
        Ok(other) => serde_json::json!({ "value": other }),
    };
    Block::ToolUse {
        id: block_id(&call.id),
        name: &call.name,
        input,
    }
}

/// A tool call id as the API accepts it (letters, digits, `_` and `-`):
/// other characters become `_`, the same in the call and its result.
fn block_id(id: &str) -> Cow<'_, str> {
    let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !id.is_empty() && id.chars().all(ok) {
        Cow::Borrowed(id)
    } else if id.is_empty() {
        Cow::Borrowed("toolu_missing")
    } else {
        Cow::Owned(id.chars().map(|c| if ok(c) { c } else { '_' }).collect())
    }
}

/// A tool: its name, description and arguments schema (`input_schema`).
#[derive(Debug, Serialize)]
pub(super) struct WireTool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    description: &'a str,
    input_schema: Cow<'a, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

impl<'a> From<&'a ToolSpec> for WireTool<'a> {
    /// A schema that is not an object schema (the API requires one) is
    /// sent as an object with no properties.
    fn from(spec: &'a ToolSpec) -> Self {
        let input_schema = if spec.parameters.get("type").and_then(Value::as_str) == Some("object")
        {
            Cow::Borrowed(&spec.parameters)
        } else {
            Cow::Owned(serde_json::json!({"type": "object", "properties": {}}))
        };
        Self {
            name: &spec.name,
            description: &spec.description,
            input_schema,
            cache_control: None,
        }
    }
}

/// `tool_choice`: `{"type": "auto" | "any" | "none"}` or
/// `{"type": "tool", "name": ...}`.
#[derive(Debug, Serialize)]
pub(super) struct WireToolChoice<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
}

impl<'a> WireToolChoice<'a> {
    /// The choice sent when tools are offered: the request's own
    /// ([`ToolChoice::Required`] is the API's `any`), else `auto`. Nothing
    /// is sent when no tools are.
    fn for_request(choice: Option<&'a ToolChoice>, has_tools: bool) -> Option<Self> {
        if !has_tools {
            return None;
        }
        let (kind, name) = match choice {
            None | Some(ToolChoice::Auto) => ("auto", None),
            Some(ToolChoice::Required) => ("any", None),
            Some(ToolChoice::None) => ("none", None),
            Some(ToolChoice::Tool(name)) => ("tool", Some(name.as_str())),
        };
        Some(Self { kind, name })
    }
}

// ---------------------------------------------------------------------------
// The protocol: what comes back.

/// A message the API answered (the whole answer, or the start of a
/// stream).
#[derive(Debug, Default, Deserialize)]
pub(super) struct WireMessageIn {
    #[serde(default)]
    pub(super) model: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(super) content: Vec<BlockIn>,
    #[serde(default)]
    pub(super) stop_reason: Option<String>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
}

/// A content block of an answer.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum BlockIn {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        #[serde(default)]
        id: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        input: Value,
    },
    /// Thinking, redacted thinking, server tools...: not part of the
    /// answer.
    #[serde(other)]
    Other,
}

/// Token counts: `input_tokens` are the prompt's tokens that were not
/// read from or written to the prompt cache.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default, deserialize_with = "null_as_default")]
    pub(super) input_tokens: u64,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(super) output_tokens: u64,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(super) cache_creation_input_tokens: u64,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(super) cache_read_input_tokens: u64,
}

impl WireUsage {
    /// `later` over `self`: a stream's `message_delta` counts replace the
    /// ones `message_start` gave, where it has them.
    pub(super) fn update(&mut self, later: &Value) {
        let set = |field: &mut u64, key: &str| {
            if let Some(n) = later.get(key).and_then(Value::as_u64) {
                *field = n;
            }
        };
        set(&mut self.input_tokens, "input_tokens");
        set(&mut self.output_tokens, "output_tokens");
        set(
            &mut self.cache_creation_input_tokens,
            "cache_creation_input_tokens",
        );
        set(&mut self.cache_read_input_tokens, "cache_read_input_tokens");
    }
}

impl From<WireUsage> for Usage {
    /// The prompt's tokens are all of them: uncached, written to the cache
    /// and read from it.
    fn from(usage: WireUsage) -> Self {
        let prompt_tokens = usage
            .input_tokens
            .saturating_add(usage.cache_creation_input_tokens)
            .saturating_add(usage.cache_read_input_tokens);
        Usage {
            prompt_tokens,
            completion_tokens: usage.output_tokens,
            total_tokens: prompt_tokens.saturating_add(usage.output_tokens),
            cache_read_tokens: usage.cache_read_input_tokens,
            cache_write_tokens: usage.cache_creation_input_tokens,
            ..Usage::default()
        }
    }
}

/// A stop reason in the words every provider's answers use: `end_turn` and
/// `stop_sequence` are `stop`, `tool_use` is `tool_calls`, `max_tokens`
/// (and `model_context_window_exceeded`) is `length` — a cut-off answer
/// ([`ChatResponse::is_cut_off`]); `refusal` is `content_filter`; anything
/// else stays as the API said it.
pub(super) fn finish_reason(stop_reason: String) -> String {
    match stop_reason.as_str() {
        "end_turn" | "stop_sequence" => "stop".into(),
        "tool_use" => "tool_calls".into(),
        "max_tokens" | "model_context_window_exceeded" => "length".into(),
        "refusal" => "content_filter".into(),
        _ => stop_reason,
    }
}

/// A tool call's `input` as arguments text (an empty object for none).
pub(super) fn input_text(input: &Value) -> String {
    match input {
        Value::Null => "{}".to_string(),
        other => other.to_string(),
    }
}

impl WireMessageIn {
    /// The answer, as every model gives it.
    pub(super) fn into_response(self) -> ChatResponse {
        let mut content = String::new();
        let mut tool_calls = Vec::new();
        for block in self.content {
            match block {
                BlockIn::Text { text } => content.push_str(&text),
                BlockIn::ToolUse { id, name, input } => tool_calls.push(ToolCall {
                    id: non_empty(Some(id)).unwrap_or_else(generated_call_id),
                    name,
                    arguments: input_text(&input),
                }),
                BlockIn::Other => {}
            }
        }
        ChatResponse {
            content,
            tool_calls,
            usage: self.usage.map(Usage::from),
            finish_reason: self.stop_reason.map(finish_reason),
            model: non_empty(self.model),
        }
    }
}

/// An id for a tool call the server sent without one.
pub(super) fn generated_call_id() -> String {
    format!("toolu_{}", uuid::Uuid::new_v4().simple())
}

/// Reads a non-streamed answer.
pub(super) fn parse_message(text: &str, key: Option<&ApiKey>) -> Result<ChatResponse, ModelError> {
    let wire: WireMessageIn = decode(text, key)?;
    Ok(wire.into_response())
}

// ---------------------------------------------------------------------------
// The protocol: what a stream sends, one event each (read by `stream.rs`).

/// One server-sent event's data (its `type` says which).
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum WireEvent {
    MessageStart {
        #[serde(default)]
        message: WireMessageIn,
    },
    ContentBlockStart {
        #[serde(default)]
        index: usize,
        content_block: BlockIn,
    },
    ContentBlockDelta {
        #[serde(default)]
        index: usize,
        delta: BlockDelta,
    },
    ContentBlockStop,
    MessageDelta {
        #[serde(default)]
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: Option<Value>,
    },
    MessageStop,
    Ping,
    Error {
        #[serde(default)]
        error: Value,
    },
    /// An event type this client does not know: ignored, as the API asks.
    #[serde(other)]
    Unknown,
}

/// A piece of a content block.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum BlockDelta {
    TextDelta {
        #[serde(default)]
        text: String,
    },
    InputJsonDelta {
        #[serde(default)]
        partial_json: String,
    },
    /// Thinking, signatures, citations: not part of the answer.
    #[serde(other)]
    Other,
}

/// What `message_delta` says of the whole message.
#[derive(Debug, Default, Deserialize)]
pub(super) struct MessageDeltaBody {
    #[serde(default)]
    pub(super) stop_reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::history::History;

    fn body(request: &ChatRequest) -> Value {
        let messages = request.messages();
        let settings = Settings {
            model: "claude-test",
            max_tokens: 100,
            temperature: None,
            prompt_caching: true,
        };
        serde_json::to_value(WireRequest::new(&settings, request, &messages, false)).unwrap()
    }

    #[test]
    fn consecutive_roles_merge_and_tool_results_travel_as_user_blocks() {
        let call = ToolCall::new("call.1", "lookup", json!({"word": "hi"}));
        let request = ChatRequest::new(History::from_messages([
            Message::system("Be brief."),
            Message::human("one"),
            Message::human("two"),
            Message::ai_with_tools("", vec![call]),
            Message::tool_error("Error: no such word", "call.1"),
            Message::human("and now?"),
        ]));

        let body = body(&request);

        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "lookup", "input": {"word": "hi"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": "Error: no such word", "is_error": true},
                    {"type": "text", "text": "and now?"}
                ]}
            ])
        );
        assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
    }

    #[test]
    fn stop_reasons_in_common_words() {
        assert_eq!(finish_reason("end_turn".into()), "stop");
        assert_eq!(finish_reason("tool_use".into()), "tool_calls");
        let cut = ChatResponse {
            finish_reason: Some(finish_reason("max_tokens".into())),
            ..ChatResponse::default()
        };
        assert!(cut.is_cut_off());
        assert_eq!(finish_reason("pause_turn".into()), "pause_turn");
    }
}

//! The protocol's JSON, in Rust: the request that is sent
//! ([`WireRequest`]), the answer and the stream chunks that come back
//! ([`WireCompletion`], [`WireChunk`]), and their conversions from and to
//! [`Message`], [`ToolCall`], [`ToolSpec`], [`Usage`] and
//! [`ChatResponse`].
//!
//! Reading is lenient: every field of an answer is optional, unknown
//! fields are ignored, `null` reads as empty, content may be a string or a
//! list of text parts, and tool-call arguments stay the raw text the model
//! produced. Only a body that is not JSON at all is an error.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ModelError;
use crate::message::{ContentPart, Message, ToolCall};
pub(super) use crate::model::http::decode;
use crate::model::http::non_empty;
use crate::model::http::null_as_default;
use crate::model::http::redact::{excerpt, ApiKey, MAX_EXCERPT_CHARS};
use crate::model::http::transport::Outgoing;
use crate::model::{ChatResponse, ToolChoice, Usage};
use crate::tool::ToolSpec;

/// Reads a non-streamed answer.
pub(super) fn parse_completion(
    text: &str,
    key: Option<&ApiKey>,
) -> Result<ChatResponse, ModelError> {
    let wire: WireCompletion = decode(text, key)?;
    let Some(choice) = wire.choices.into_iter().next() else {
        let detail = wire
            .error
            .map(|e| format!(": {}", excerpt(key, &e.to_string(), MAX_EXCERPT_CHARS)))
            .unwrap_or_default();
        return Err(ModelError::InvalidResponse {
            message: format!("the response has no choices{detail}"),
            source: None,
        });
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

/// An id for a tool call the server sent without one.
pub(super) fn generated_call_id() -> String {
    format!("call_{}", uuid::Uuid::new_v4().simple())
}

/// Tool-call arguments as raw text: strings as they are, `null` or missing
/// as `""`, anything else (an object some servers send) as its JSON.
pub(super) fn arguments_text(arguments: Option<Value>) -> String {
    match arguments {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text,
        Some(other) => other.to_string(),
    }
}

// ---------------------------------------------------------------------------
// The protocol: what is sent.

#[derive(Serialize)]
pub(super) struct WireRequest<'a> {
    pub(super) model: &'a str,
    pub(super) messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_choice: Option<WireToolChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) response_format: Option<ResponseFormat<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) top_p: Option<f32>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub(super) stop: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) seed: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) presence_penalty: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) frequency_penalty: Option<f32>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) stream_options: Option<StreamOptions>,
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

/// `response_format`: `{"type": "json_schema", "json_schema": {"name",
/// "schema", "strict"}}`.
#[derive(Serialize)]
pub(super) struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: JsonSchemaFormat<'a>,
}

#[derive(Serialize)]
struct JsonSchemaFormat<'a> {
    name: &'a str,
    schema: &'a serde_json::Value,
    strict: bool,
}

impl<'a> From<&'a crate::OutputSchema> for ResponseFormat<'a> {
    fn from(schema: &'a crate::OutputSchema) -> Self {
        Self {
            kind: "json_schema",
            json_schema: JsonSchemaFormat {
                name: schema.name(),
                schema: schema.schema(),
                strict: schema.is_strict(),
            },
        }
    }
}

/// `tool_choice`: `"auto"`, `"required"`, `"none"`, or
/// `{"type": "function", "function": {"name": ...}}`.
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum WireToolChoice<'a> {
    Mode(&'static str),
    Named {
        #[serde(rename = "type")]
        kind: &'static str,
        function: WireToolName<'a>,
    },
}

#[derive(Serialize)]
pub(super) struct WireToolName<'a> {
    name: &'a str,
}

impl<'a> WireToolChoice<'a> {
    /// The choice sent for `choice` when tools are offered: the request's
    /// own, else `auto` (some servers, llama-cpp-python's function-calling
    /// format among them, leave the tools out of the prompt without it).
    /// Nothing is sent when no tools are.
    pub(super) fn for_request(choice: Option<&'a ToolChoice>, has_tools: bool) -> Option<Self> {
        if !has_tools {
            return None;
        }
        Some(match choice {
            None | Some(ToolChoice::Auto) => WireToolChoice::Mode("auto"),
            Some(ToolChoice::Required) => WireToolChoice::Mode("required"),
            Some(ToolChoice::None) => WireToolChoice::Mode("none"),
            Some(ToolChoice::Tool(name)) => WireToolChoice::Named {
                kind: "function",
                function: WireToolName { name },
            },
        })
    }

    /// Whether the model decides (`auto`).
    pub(super) fn is_auto(&self) -> bool {
        matches!(self, WireToolChoice::Mode("auto"))
    }
}

#[derive(Serialize)]
pub(super) struct StreamOptions {
    pub(super) include_usage: bool,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(super) enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: WireUserContent<'a>,
    },
    Assistant {
        content: &'a str,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireToolCallOut<'a>>,
    },
    Tool {
        content: &'a str,
        tool_call_id: &'a str,
    },
}

/// A user message's content: its text alone, or parts when it carries
/// images (`[{"type": "text", ...}, {"type": "image_url", "image_url":
/// {"url": ...}}]`).
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum WireUserContent<'a> {
    Text(&'a str),
    Parts(Vec<WireUserPart<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum WireUserPart<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: WireImageUrl<'a> },
}

#[derive(Serialize)]
pub(super) struct WireImageUrl<'a> {
    url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'a str>,
}

/// The text (unless blank) then the parts, as OpenAI's content parts.
fn user_parts<'a>(text: &'a str, parts: &'a [ContentPart]) -> Vec<WireUserPart<'a>> {
    let text = (!text.is_empty()).then_some(WireUserPart::Text {
        text: Cow::Borrowed(text),
    });
    text.into_iter()
        .chain(parts.iter().map(|part| match part {
            ContentPart::Text { text } => WireUserPart::Text {
                text: Cow::Borrowed(text),
            },
            ContentPart::Image(image) => WireUserPart::ImageUrl {
                image_url: WireImageUrl {
                    url: image.as_url(),
                    detail: image.detail(),
                },
            },
        }))
        .collect()
}

/// The conversation as the protocol takes it. Tool messages carry text
/// only, so the images a tool returned (`read_file` on a PNG) follow the
/// run of tool results as one user message that names the calls.
pub(super) fn messages<'a>(messages: &'a [Cow<'a, Message>]) -> Vec<WireMessage<'a>> {
    let mut out = Vec::with_capacity(messages.len());
    let mut pending: Vec<WireUserPart<'a>> = Vec::new();
    for message in messages {
        let message: &'a Message = message;
        if !matches!(message, Message::Tool { .. }) && !pending.is_empty() {
            out.push(WireMessage::User {
                content: WireUserContent::Parts(std::mem::take(&mut pending)),
            });
        }
        if let Message::Tool {
            tool_call_id,
            parts,
            ..
        } = message
            && !parts.is_empty()
        {
            pending.push(WireUserPart::Text {
                text: Cow::Owned(format!("The result of tool call {tool_call_id}:")),
            });
            pending.extend(user_parts("", parts));
        }
        out.push(WireMessage::from(message));
    }
    if !pending.is_empty() {
        out.push(WireMessage::User {
            content: WireUserContent::Parts(pending),
        });
    }
    out
}

impl<'a> From<&'a Message> for WireMessage<'a> {
    fn from(message: &'a Message) -> Self {
        match message {
            Message::System { content } => WireMessage::System { content },
            Message::Human { content, parts } if parts.is_empty() => WireMessage::User {
                content: WireUserContent::Text(content),
            },
            Message::Human { content, parts } => WireMessage::User {
                content: WireUserContent::Parts(user_parts(content, parts)),
            },
            Message::Ai {
                content,
                tool_calls,
            } => WireMessage::Assistant {
                // Always a string, `""` beside tool calls: several servers
                // (llama-cpp-python among them) refuse `null`.
                content,
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
pub(super) struct WireToolCallOut<'a> {
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
pub(super) struct WireTool<'a> {
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
pub(super) enum WireContent {
    Text(String),
    Parts(Vec<WireContentPart>),
    Other(serde::de::IgnoredAny),
}

#[derive(Deserialize)]
pub(super) struct WireContentPart {
    #[serde(default)]
    text: Option<String>,
}

impl WireContent {
    pub(super) fn into_text(self) -> String {
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
pub(super) struct WireFunctionIn {
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) arguments: Option<Value>,
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
pub(super) struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<WireTokenDetails>,
    #[serde(default)]
    completion_tokens_details: Option<WireTokenDetails>,
}

/// `prompt_tokens_details` / `completion_tokens_details` (what a server
/// leaves out or sets to null counts 0).
#[derive(Deserialize, Default)]
pub(super) struct WireTokenDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
    #[serde(default)]
    reasoning_tokens: Option<u64>,
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
            cache_read_tokens: usage
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            reasoning_tokens: usage
                .completion_tokens_details
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
            ..Usage::default()
        }
    }
}

// ---------------------------------------------------------------------------
// The protocol: what a stream sends, one chunk per event (read by
// `stream.rs`).

#[derive(Deserialize)]
pub(super) struct WireChunk {
    #[serde(default)]
    pub(super) model: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(super) choices: Vec<WireChunkChoice>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
    #[serde(default)]
    pub(super) error: Option<Value>,
}

#[derive(Deserialize)]
pub(super) struct WireChunkChoice {
    #[serde(default, deserialize_with = "null_as_default")]
    pub(super) index: u32,
    #[serde(default)]
    pub(super) delta: Option<WireDelta>,
    #[serde(default)]
    pub(super) finish_reason: Option<String>,
}

#[derive(Default, Deserialize)]
pub(super) struct WireDelta {
    #[serde(default)]
    pub(super) content: Option<WireContent>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(super) tool_calls: Vec<WireToolCallDelta>,
}

#[derive(Deserialize)]
pub(super) struct WireToolCallDelta {
    #[serde(default)]
    pub(super) index: Option<usize>,
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) function: Option<WireFunctionIn>,
}

/// `messages` with the system messages they start with joined into one
/// (blank-line separated): many servers' chat templates accept a single
/// system message, and only at the start.
pub(super) fn one_system_message(messages: Vec<Cow<'_, Message>>) -> Vec<Cow<'_, Message>> {
    let leading = messages
        .iter()
        .take_while(|m| matches!(&***m, Message::System { .. }))
        .count();
    if leading < 2 {
        return messages;
    }
    let mut rest = messages.into_iter();
    let joined: Vec<String> = rest
        .by_ref()
        .take(leading)
        .filter_map(|m| match m.into_owned() {
            Message::System { content } => Some(content),
            _ => None,
        })
        .collect();
    std::iter::once(Cow::Owned(Message::system(joined.join("\n\n"))))
        .chain(rest)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::error::Error;

    use super::*;

    #[test]
    fn cached_and_reasoning_tokens_are_read_from_the_details() {
        let usage: WireUsage = serde_json::from_str(
            r#"{"prompt_tokens": 100, "completion_tokens": 30, "total_tokens": 130,
                "prompt_tokens_details": {"cached_tokens": 64, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 12}}"#,
        )
        .unwrap();
        let usage = Usage::from(usage);
        assert_eq!((usage.cache_read_tokens, usage.reasoning_tokens), (64, 12));
        let bare: WireUsage = serde_json::from_str(
            r#"{"prompt_tokens": 1, "completion_tokens": 2, "prompt_tokens_details": null}"#,
        )
        .unwrap();
        assert_eq!(Usage::from(bare).total_tokens, 3);
    }

    #[test]
    fn invalid_json_keeps_the_parser_error_as_its_source() {
        let text = "{\"choices\": [ this is not json";

        let error = parse_completion(text, None).unwrap_err();

        let ModelError::InvalidResponse {
            message,
            source: Some(source),
        } = &error
        else {
            panic!("expected InvalidResponse with a source, got {error:?}");
        };
        let json_error = source
            .downcast_ref::<serde_json::Error>()
            .expect("the source is the serde_json error");
        assert!(json_error.is_syntax());
        assert_eq!((json_error.line(), json_error.column()), (1, 16));
        assert!(message.starts_with(&json_error.to_string()), "{message}");
        // `Error::source` leads to the same error.
        let walked = error.source().expect("a source");
        assert_eq!(walked.to_string(), json_error.to_string());
    }
}

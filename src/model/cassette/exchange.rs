//! One line of a cassette: [`Exchange`], and reading a whole cassette.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{CassetteError, ModelError};
use crate::message::{Message, ToolCall};
use crate::model::{ChatRequest, ChatResponse, StreamDelta, ToolChoice, Usage};
use crate::tool::ToolSpec;

/// The format version on every line of a cassette.
pub(crate) const CASSETTE_FORMAT: &str = "lc-agent-cassette/1";

/// One request and what the model did with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Exchange {
    /// [`CASSETTE_FORMAT`].
    pub(super) format: String,
    /// The name the recording gave its model, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) model_name: Option<String>,
    /// The model's context window before the request, when it knew one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) context_window: Option<usize>,
    /// `stream` or `complete`.
    pub(super) mode: Mode,
    /// What was asked.
    pub(super) request: RecordedRequest,
    /// The streamed pieces, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) deltas: Vec<RecordedDelta>,
    /// The answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) response: Option<RecordedResponse>,
    /// The failure, when the model failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) error: Option<RecordedError>,
}

/// Whether the request was streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Mode {
    /// [`ChatModel::stream`](crate::ChatModel::stream).
    Stream,
    /// [`ChatModel::complete`](crate::ChatModel::complete).
    Complete,
}

/// A request as it is stable from run to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct RecordedRequest {
    /// The assembled messages (system sections included).
    pub(super) messages: Vec<Message>,
    /// The tools offered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) tools: Vec<ToolSpec>,
    /// The tool choice, when the request made one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) tool_choice: Option<ToolChoice>,
}

impl RecordedRequest {
    /// The stable part of `request`.
    pub(super) fn of(request: &ChatRequest) -> Self {
        Self {
            messages: request
                .messages()
                .into_iter()
                .map(|m| m.into_owned())
                .collect(),
            tools: request.tools.to_vec(),
            tool_choice: request.tool_choice.clone(),
        }
    }
}

/// A streamed piece.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum RecordedDelta {
    /// [`StreamDelta::Text`].
    Text(String),
    /// [`StreamDelta::ToolCall`].
    ToolCall {
        /// Position of the call in the answer.
        index: usize,
        /// The call id, on the first fragment.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The tool name, on the first fragment.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// A piece of the arguments text.
        #[serde(default)]
        arguments: String,
    },
}

impl From<&StreamDelta> for RecordedDelta {
    fn from(delta: &StreamDelta) -> Self {
        match delta {
            StreamDelta::Text(text) => RecordedDelta::Text(text.clone()),
            StreamDelta::ToolCall {
                index,
                id,
                name,
                arguments,
            } => RecordedDelta::ToolCall {
                index: *index,
                id: id.clone(),
                name: name.clone(),
                arguments: arguments.clone(),
            },
        }
    }
}

impl From<RecordedDelta> for StreamDelta {
    fn from(delta: RecordedDelta) -> Self {
        match delta {
            RecordedDelta::Text(text) => StreamDelta::Text(text),
            RecordedDelta::ToolCall {
                index,
                id,
                name,
                arguments,
            } => StreamDelta::ToolCall {
                index,
                id,
                name,
                arguments,
            },
        }
    }
}

/// A whole answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct RecordedResponse {
    #[serde(default)]
    content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    finish_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
}

impl From<&ChatResponse> for RecordedResponse {
    fn from(response: &ChatResponse) -> Self {
        Self {
            content: response.content.clone(),
            tool_calls: response.tool_calls.clone(),
            usage: response.usage,
            finish_reason: response.finish_reason.clone(),
            model: response.model.clone(),
        }
    }
}

impl From<RecordedResponse> for ChatResponse {
    fn from(response: RecordedResponse) -> Self {
        ChatResponse {
            content: response.content,
            tool_calls: response.tool_calls,
            usage: response.usage,
            finish_reason: response.finish_reason,
            model: response.model,
        }
    }
}

/// A model failure, kept with its kind so that replaying it gives the
/// same [`ModelError`] variant (its text; the Rust error underneath is
/// not kept).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(super) enum RecordedError {
    /// [`ModelError::Connect`].
    Connect {
        /// Its message.
        message: String,
    },
    /// [`ModelError::Http`].
    Http {
        /// The status.
        status: u16,
        /// The body.
        body: String,
    },
    /// [`ModelError::Timeout`].
    Timeout {
        /// The limit, in milliseconds.
        millis: u64,
    },
    /// [`ModelError::InvalidResponse`].
    InvalidResponse {
        /// Its message.
        message: String,
    },
    /// [`ModelError::Config`].
    Config {
        /// Its message.
        message: String,
    },
    /// [`ModelError::ContextOverflow`].
    ContextOverflow {
        /// The request's size.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens: Option<usize>,
        /// The window.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        window: Option<usize>,
    },
    /// Any other failure: its text.
    Other {
        /// The error's text.
        message: String,
    },
}

/// The cause of a replayed [`ModelError::Connect`]: the recorded text.
#[derive(Debug, thiserror::Error)]
#[error("{0} (replayed from a cassette)")]
struct Recorded(String);

impl From<&ModelError> for RecordedError {
    fn from(error: &ModelError) -> Self {
        match error {
            ModelError::Connect { message, .. } => RecordedError::Connect {
                message: message.clone(),
            },
            ModelError::Http { status, body } => RecordedError::Http {
                status: *status,
                body: body.clone(),
            },
            ModelError::Timeout(limit) => RecordedError::Timeout {
                millis: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
            },
            ModelError::InvalidResponse { message, .. } => RecordedError::InvalidResponse {
                message: message.clone(),
            },
            ModelError::Config { message, .. } => RecordedError::Config {
                message: message.clone(),
            },
            ModelError::ContextOverflow { tokens, window } => RecordedError::ContextOverflow {
                tokens: *tokens,
                window: *window,
            },
            other => RecordedError::Other {
                message: other.to_string(),
            },
        }
    }
}

impl From<RecordedError> for ModelError {
    fn from(error: RecordedError) -> Self {
        match error {
            RecordedError::Connect { message } => ModelError::Connect {
                source: std::sync::Arc::new(Recorded(message.clone())),
                message,
            },
            RecordedError::Http { status, body } => ModelError::Http { status, body },
            RecordedError::Timeout { millis } => {
                ModelError::Timeout(std::time::Duration::from_millis(millis))
            }
            RecordedError::InvalidResponse { message } => ModelError::InvalidResponse {
                message,
                source: None,
            },
            RecordedError::Config { message } => ModelError::Config {
                message,
                source: None,
            },
            RecordedError::ContextOverflow { tokens, window } => {
                ModelError::ContextOverflow { tokens, window }
            }
            RecordedError::Other { message } => ModelError::Other(message),
        }
    }
}

/// Every exchange of the cassette at `path` (an empty file has none).
pub(super) fn read_cassette(path: &Path) -> Result<Vec<Exchange>, CassetteError> {
    let text = std::fs::read_to_string(path).map_err(|e| CassetteError::Read {
        path: path.to_path_buf(),
        source: std::sync::Arc::new(e),
    })?;
    parse_cassette(path, &text)
}

/// The exchanges of a cassette's `text` (`path` names it in errors).
pub(super) fn parse_cassette(path: &Path, text: &str) -> Result<Vec<Exchange>, CassetteError> {
    let not_a_cassette = |line: usize, reason: String| CassetteError::NotACassette {
        path: path.to_path_buf(),
        line,
        reason,
    };
    let mut exchanges = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line)
            .map_err(|e| not_a_cassette(number, format!("not JSON: {e}")))?;
        match value.get("format").and_then(Value::as_str) {
            Some(CASSETTE_FORMAT) => {}
            Some(other) if other.starts_with("lc-agent-cassette/") => {
                return Err(CassetteError::Version {
                    path: path.to_path_buf(),
                    line: number,
                    found: other.to_string(),
                    expected: CASSETTE_FORMAT.to_string(),
                })
            }
            _ => {
                return Err(not_a_cassette(
                    number,
                    format!("no \"format\": \"{CASSETTE_FORMAT}\""),
                ))
            }
        }
        let exchange: Exchange =
            serde_json::from_value(value).map_err(|e| not_a_cassette(number, e.to_string()))?;
        if exchange.response.is_none() && exchange.error.is_none() {
            return Err(not_a_cassette(
                number,
                "neither a \"response\" nor an \"error\"".to_string(),
            ));
        }
        exchanges.push(exchange);
    }
    Ok(exchanges)
}

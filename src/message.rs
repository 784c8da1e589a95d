//! Messages: what nodes output and what chat models read.

use serde::{Deserialize, Serialize};

pub use crate::content::{ContentPart, ImagePart};

/// One tool call requested by the model in an AI message.
///
/// `arguments` keeps the raw JSON text the model produced, exactly; it is
/// parsed only when the tool runs, so arguments that are not valid JSON
/// become an error result the model can read instead of a crash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id the tool result must echo back.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as raw JSON text (`""` means `{}`).
    #[serde(default)]
    pub arguments: String,
}

impl ToolCall {
    /// A tool call with JSON arguments.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: serde_json::Value,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments: arguments.to_string(),
        }
    }

    /// Parses the arguments: `""` (or only whitespace) means `{}`.
    pub fn parsed_arguments(&self) -> Result<serde_json::Value, serde_json::Error> {
        if self.arguments.trim().is_empty() {
            return Ok(serde_json::Value::Object(Default::default()));
        }
        serde_json::from_str(&self.arguments)
    }
}

/// Whether a tool result reports success or an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolStatus {
    /// The tool did its work.
    #[default]
    Ok,
    /// The tool failed; the content explains why (`Error: ...`).
    Error,
}

impl ToolStatus {
    fn is_ok(&self) -> bool {
        *self == ToolStatus::Ok
    }
}

/// A chat message: what every built-in node outputs.
///
/// Saved as an object tagged by `role` (`system`, `human`, `ai`, `tool`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase", try_from = "WireMessage")]
pub enum Message {
    /// Instructions for the model.
    System {
        /// The instruction text.
        content: String,
    },
    /// What the user said.
    Human {
        /// The user's text.
        content: String,
        /// What follows the text, in order: images (and text between
        /// them). Saved only when there are some, so a text-only message
        /// saves exactly as before.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        parts: Vec<ContentPart>,
    },
    /// What the model answered: text and/or tool calls.
    Ai {
        /// The answer text (may be empty when the model only calls tools).
        #[serde(default)]
        content: String,
        /// Tools the model asked to run, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool {
        /// What the tool returned (errors start with `Error: `).
        content: String,
        /// The id of the call this answers.
        tool_call_id: String,
        /// The tool's name, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// Success or error.
        #[serde(default, skip_serializing_if = "ToolStatus::is_ok")]
        status: ToolStatus,
        /// What follows the text, in order (`read_file` on an image
        /// returns the image here). Saved only when there are some.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        parts: Vec<ContentPart>,
    },
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message::System {
            content: content.into(),
        }
    }

    /// A human message.
    pub fn human(content: impl Into<String>) -> Self {
        Message::Human {
            content: content.into(),
            parts: Vec::new(),
        }
    }

    /// An AI message with text only.
    pub fn ai(content: impl Into<String>) -> Self {
        Message::Ai {
            content: content.into(),
            tool_calls: Vec::new(),
        }
    }

    /// An AI message with tool calls.
    pub fn ai_with_tools(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Message::Ai {
            content: content.into(),
            tool_calls,
        }
    }

    /// A successful tool result.
    pub fn tool(content: impl Into<String>, tool_call_id: impl Into<String>) -> Self {
        Message::Tool {
            content: content.into(),
            tool_call_id: tool_call_id.into(),
            name: None,
            status: ToolStatus::Ok,
            parts: Vec::new(),
        }
    }

    /// A failed tool result; `content` should start with `Error: `.
    pub fn tool_error(content: impl Into<String>, tool_call_id: impl Into<String>) -> Self {
        Message::Tool {
            content: content.into(),
            tool_call_id: tool_call_id.into(),
            name: None,
            status: ToolStatus::Error,
            parts: Vec::new(),
        }
    }

    /// The message's text.
    pub fn text(&self) -> &str {
        match self {
            Message::System { content }
            | Message::Human { content, .. }
            | Message::Ai { content, .. }
            | Message::Tool { content, .. } => content,
        }
    }

    /// The role name: `system`, `human`, `ai` or `tool`.
    pub fn role(&self) -> &'static str {
        match self {
            Message::System { .. } => "system",
            Message::Human { .. } => "human",
            Message::Ai { .. } => "ai",
            Message::Tool { .. } => "tool",
        }
    }

    /// The parts after the text (empty for system and AI messages, and
    /// for text-only messages).
    pub(crate) fn parts(&self) -> &[ContentPart] {
        match self {
            Message::Human { parts, .. } | Message::Tool { parts, .. } => parts,
            _ => &[],
        }
    }

    /// Whether the message carries an image.
    pub fn has_images(&self) -> bool {
        self.parts()
            .iter()
            .any(|p| matches!(p, ContentPart::Image(_)))
    }

    /// The tool calls of an AI message (empty for other roles).
    pub fn tool_calls(&self) -> &[ToolCall] {
        match self {
            Message::Ai { tool_calls, .. } => tool_calls,
            _ => &[],
        }
    }
}

/// The flat shape messages are read from: one pass, no buffering (serde's
/// internally tagged enums buffer every field first, which is slow for
/// ten thousand saved nodes).
#[derive(Deserialize)]
struct WireMessage {
    role: String,
    #[serde(default)]
    content: String,
    #[serde(default)]
    tool_calls: Vec<ToolCall>,
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    status: ToolStatus,
    #[serde(default)]
    parts: Vec<ContentPart>,
}

impl TryFrom<WireMessage> for Message {
    type Error = String;

    fn try_from(w: WireMessage) -> Result<Self, Self::Error> {
        Ok(match w.role.as_str() {
            "system" => Message::System { content: w.content },
            "human" => Message::Human {
                content: w.content,
                parts: w.parts,
            },
            "ai" => Message::Ai {
                content: w.content,
                tool_calls: w.tool_calls,
            },
            "tool" => Message::Tool {
                content: w.content,
                tool_call_id: w
                    .tool_call_id
                    .ok_or("a tool message needs a `tool_call_id`")?,
                name: w.name,
                status: w.status,
                parts: w.parts,
            },
            other => return Err(format!("unknown message role `{other}`")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_round_trip_through_json() {
        let all = [
            Message::system("s"),
            Message::human("h"),
            Message::ai("a"),
            Message::ai_with_tools("", vec![ToolCall::new("c", "ls", json!({"p": 1}))]),
            Message::tool("t", "c"),
            Message::tool_error("Error: no", "c"),
        ];
        for m in all {
            let text = serde_json::to_string(&m).unwrap();
            assert_eq!(serde_json::from_str::<Message>(&text).unwrap(), m, "{text}");
        }
        assert_eq!(
            serde_json::to_value(Message::tool_error("Error: x", "c1")).unwrap(),
            json!({"role": "tool", "content": "Error: x", "tool_call_id": "c1", "status": "error"})
        );
        let err = serde_json::from_str::<Message>(r#"{"role":"robot","content":""}"#);
        assert!(err
            .unwrap_err()
            .to_string()
            .contains("unknown message role `robot`"));
        let err = serde_json::from_str::<Message>(r#"{"role":"tool","content":""}"#);
        assert!(err.unwrap_err().to_string().contains("tool_call_id"));
    }
}

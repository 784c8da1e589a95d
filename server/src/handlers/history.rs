//! A chat completion's messages: what each one says (its text, and a
//! user message's image parts), and a stateless history — the whole
//! conversation a plain SDK loop sends each turn — as a new session's
//! first nodes (questions to run, answers given), so the model reads it
//! in order and answers its last message. An assistant message's
//! `tool_calls` and the client's `tool` messages answering them become the
//! tool calls and tool results the model reads (a `tool` message answering
//! no call of the assistant message before it is OpenAI's 400).

use lc_agent::{
    ChatNode, ContentPart, HumanNode, Message, NodeRef, RunnableNetwork, SystemNode, ToolCall,
    ToolNode,
};
use serde::Deserialize;
use serde_json::Value;

use crate::error::ApiError;

/// One message of the request (only what the agent uses is read).
#[derive(Debug, Deserialize)]
pub(crate) struct InMessage {
    pub(crate) role: String,
    #[serde(default)]
    pub(crate) content: Option<Value>,
    /// An assistant message's tool calls.
    #[serde(default)]
    pub(crate) tool_calls: Option<Vec<InToolCall>>,
    /// The call a `tool` message answers.
    #[serde(default)]
    pub(crate) tool_call_id: Option<String>,
}

/// One tool call of an assistant message, as OpenAI writes it.
#[derive(Debug, Deserialize)]
pub(crate) struct InToolCall {
    id: String,
    function: InFunction,
}

/// The function a tool call names.
#[derive(Debug, Deserialize)]
struct InFunction {
    name: String,
    #[serde(default)]
    arguments: String,
}

impl InToolCall {
    fn to_call(&self) -> ToolCall {
        ToolCall {
            id: self.id.clone(),
            name: self.function.name.clone(),
            arguments: self.function.arguments.clone(),
        }
    }
}

impl InMessage {
    /// The text: a string, or the text parts of a list of parts (other
    /// parts were refused by the completion's checks, `openai.rs`).
    pub(crate) fn text(&self) -> Result<String, ApiError> {
        match &self.content {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(Value::Array(parts)) => Ok(parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("")),
            Some(other) => Err(ApiError::BadRequest(format!(
                "message content must be a string or a list of parts, got `{other}`"
            ))),
        }
    }

    /// A user message's text and the parts after it: the leading text
    /// parts are the text; from the first image on, every part is kept in
    /// order (`image_url` parts as images, with their `detail`).
    pub(crate) fn text_and_parts(&self) -> Result<(String, Vec<ContentPart>), ApiError> {
        let Some(Value::Array(items)) = &self.content else {
            return Ok((self.text()?, Vec::new()));
        };
        let mut text = String::new();
        let mut parts = Vec::new();
        for item in items {
            match (item.get("text").and_then(Value::as_str), image_url(item)) {
                (Some(t), _) if parts.is_empty() => text.push_str(t),
                (Some(t), _) => parts.push(ContentPart::Text { text: t.into() }),
                (None, Some((url, detail))) => parts.push(match ContentPart::image_url(url) {
                    ContentPart::Image(image) => ContentPart::Image(image.with_detail(detail)),
                    other => other,
                }),
                (None, None) => {}
            }
        }
        Ok((text, parts))
    }
}

/// An `image_url` part's URL and `detail`.
pub(crate) fn image_url(part: &Value) -> Option<(&str, Option<String>)> {
    if part.get("type").and_then(Value::as_str) != Some("image_url") {
        return None;
    }
    let image = part.get("image_url")?;
    let url = image.get("url").and_then(Value::as_str)?;
    let detail = image
        .get("detail")
        .and_then(Value::as_str)
        .map(str::to_string);
    Some((url, detail))
}

/// OpenAI's checks of a history, before anything runs: a user message
/// has content; a `tool` message names (`tool_call_id`) a call of the
/// assistant message before it, answered once; every call of an assistant
/// message is answered before the next message that is no tool result.
pub(crate) fn check_messages(messages: &[InMessage]) -> Result<(), ApiError> {
    let invalid = |param: String, code: &'static str, message: String| ApiError::Invalid {
        param,
        code,
        message,
    };
    // The calls of the latest assistant message still waiting for their
    // result, and where that message is.
    let mut open: Vec<&str> = Vec::new();
    let mut asked_at = 0;
    for (i, m) in messages.iter().enumerate() {
        if m.role != "tool" && !open.is_empty() {
            return Err(invalid(
                format!("messages[{asked_at}].tool_calls"),
                "invalid_value",
                format!(
                    "an assistant message with `tool_calls` must be followed by `tool` messages \
                     answering each `tool_call_id`; these have none: {}",
                    open.join(", ")
                ),
            ));
        }
        match m.role.as_str() {
            "user" if matches!(m.content, None | Some(Value::Null)) => {
                return Err(invalid(
                    format!("messages[{i}].content"),
                    "invalid_value",
                    "a user message needs `content`: a string or a list of parts".into(),
                ));
            }
            "assistant" => {
                open = m
                    .tool_calls
                    .iter()
                    .flatten()
                    .map(|c| c.id.as_str())
                    .collect();
                asked_at = i;
            }
            "tool" => {
                let param = format!("messages[{i}].tool_call_id");
                let Some(id) = m.tool_call_id.as_deref() else {
                    return Err(invalid(
                        param,
                        "missing_required_parameter",
                        format!("`messages[{i}]` is a `tool` message without `tool_call_id`"),
                    ));
                };
                let Some(at) = open.iter().position(|c| *c == id) else {
                    return Err(invalid(
                        param,
                        "invalid_value",
                        format!(
                            "`messages[{i}].tool_call_id` is `{id}`, which answers no tool call: \
                             a `tool` message must follow an assistant message with `tool_calls` \
                             and answer one of its calls, once"
                        ),
                    ));
                };
                open.remove(at);
            }
            "function" => {
                return Err(invalid(
                    format!("messages[{i}].role"),
                    "invalid_value",
                    "`function` messages are the legacy form: send `tool` messages with a \
                     `tool_call_id` instead"
                        .into(),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The request's messages as a new session's first nodes ([`check_messages`]
/// passed): an assistant message's tool calls and the `tool` messages
/// answering them are the tool calls and tool results of the conversation.
pub(crate) fn add_messages(net: &RunnableNetwork, messages: &[InMessage]) -> Result<(), ApiError> {
    let _scope = net.enter();
    let mut calls: Vec<ToolCall> = Vec::new();
    for m in messages {
        let text = m.text()?;
        match m.role.as_str() {
            "system" | "developer" => {
                SystemNode::new(text);
            }
            "user" => {
                let (text, parts) = m.text_and_parts()?;
                HumanNode::with_parts(text, parts);
            }
            "assistant" => {
                calls = m
                    .tool_calls
                    .iter()
                    .flatten()
                    .map(InToolCall::to_call)
                    .collect();
                ChatNode::new().set_output(Message::ai_with_tools(text, calls.clone()));
            }
            "tool" => {
                let id = m.tool_call_id.clone().unwrap_or_default();
                let Some(call) = calls.iter().find(|c| c.id == id).cloned() else {
                    return Err(ApiError::BadRequest(format!(
                        "a `tool` message answers no tool call (`{id}`)"
                    )));
                };
                let name = call.name.clone();
                NodeRef::create(ToolNode { tool_call: call }).set_output(Message::Tool {
                    content: text,
                    tool_call_id: id,
                    name: Some(name),
                    status: lc_agent::ToolStatus::Ok,
                    parts: Vec::new(),
                });
            }
            other => {
                return Err(ApiError::BadRequest(format!(
                    "unknown message role `{other}`"
                )))
            }
        }
    }
    Ok(())
}

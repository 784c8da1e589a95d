//! A chat completion's messages: what each one says (its text, and a
//! user message's image parts), and a stateless history — the whole
//! conversation a plain SDK loop sends each turn — as a new session's
//! first nodes (questions to run, answers given), so the model reads it
//! in order and answers its last message.

use lc_agent::{ChatNode, ContentPart, HumanNode, Message, RunnableNetwork, SystemNode};
use serde::Deserialize;
use serde_json::Value;

use crate::error::ApiError;

/// One message of the request (only what the agent uses is read).
#[derive(Debug, Deserialize)]
pub(crate) struct InMessage {
    pub(crate) role: String,
    #[serde(default)]
    pub(crate) content: Option<Value>,
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

/// The request's messages as a new session's first nodes.
pub(crate) fn add_messages(net: &RunnableNetwork, messages: &[InMessage]) -> Result<(), ApiError> {
    let _scope = net.enter();
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
            "assistant" => ChatNode::new().set_output(Message::ai(text)),
            // The agent runs its tools itself; a client's tool messages
            // have nothing to answer here.
            "tool" | "function" => {}
            other => {
                return Err(ApiError::BadRequest(format!(
                    "unknown message role `{other}`"
                )))
            }
        }
    }
    Ok(())
}

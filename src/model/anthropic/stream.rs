//! Assembling a streamed answer: [`read_stream`] reads the server-sent
//! events of a streamed response and [`StreamState`] turns them into
//! deltas as they arrive and into one [`ChatResponse`] at the end.
//!
//! The events, in order: `message_start` (the model, the prompt's usage),
//! then per content block `content_block_start` (a `text` block, or a
//! `tool_use` block with its id and name), `content_block_delta`s
//! (`text_delta` text, `input_json_delta` pieces of the call's arguments)
//! and `content_block_stop`; then `message_delta` (the stop reason, the
//! final usage) and `message_stop`. `ping`s come at any time and are
//! skipped, as are block and event types this client does not know; an
//! `error` event ends the answer with that error.
//!
//! A tool call is one `tool_use` block, except from a gateway that
//! translates another provider's stream chunk by chunk: LiteLLM's proxy in
//! front of llama-cpp-python opens a new block for every piece of the
//! arguments, each repeating the call's id and name. A block that repeats
//! the id of the call before it continues that call.
//!
//! A stream that closes without `message_stop` is accepted once a stop
//! reason came, and is a cut-off answer otherwise.

use std::collections::HashMap;

use super::wire::{finish_reason, generated_call_id, input_text, BlockDelta, BlockIn, WireEvent};
use super::wire::{WireMessageIn, WireUsage};
use crate::error::ModelError;
use crate::message::ToolCall;
use crate::model::http::redact::{excerpt, MAX_ERROR_BODY_CHARS};
use crate::model::http::transport::Transport;
use crate::model::http::{decode, non_empty};
use crate::model::{ChatResponse, DeltaSink, StreamDelta, Usage};

/// Reads the server-sent events of `response`, reporting deltas as they
/// arrive, and returns the whole answer.
pub(super) async fn read_stream(
    transport: &Transport,
    response: reqwest::Response,
    on_delta: DeltaSink<'_>,
) -> Result<ChatResponse, ModelError> {
    let key = transport.api_key.as_ref();
    let mut events = transport.events(response);
    let mut state = StreamState::default();
    loop {
        let Some(data) = events.next().await? else {
            return state.finish_without_stop(on_delta);
        };
        let data = data.trim();
        if data.is_empty() {
            continue;
        }
        match decode::<WireEvent>(data, key)? {
            WireEvent::MessageStop => return Ok(state.finish(on_delta)),
            WireEvent::Error { error } => {
                return Err(ModelError::Other(format!(
                    "the model endpoint reported an error mid-stream: {}",
                    excerpt(key, &error.to_string(), MAX_ERROR_BODY_CHARS)
                )))
            }
            event => state.apply(event, &mut *on_delta),
        }
    }
}

/// What the stream said so far.
#[derive(Default)]
struct StreamState {
    /// Whether `message_start` came.
    started: bool,
    content: String,
    /// Tool calls, in order.
    calls: Vec<PartialCall>,
    /// Content block index -> the tool call it holds (a position in
    /// `calls`).
    blocks: HashMap<usize, usize>,
    usage: Option<WireUsage>,
    stop_reason: Option<String>,
    model: Option<String>,
}

/// A tool call being assembled from its block's events.
struct PartialCall {
    id: String,
    name: String,
    /// The `input` its start gave (used when no pieces follow).
    start_input: String,
    arguments: String,
}

impl StreamState {
    fn apply(&mut self, event: WireEvent, on_delta: DeltaSink<'_>) {
        match event {
            WireEvent::MessageStart { message } => self.start(message),
            WireEvent::ContentBlockStart {
                index,
                content_block,
            } => match content_block {
                BlockIn::Text { text } => self.text(text, on_delta),
                BlockIn::ToolUse { id, name, input } => {
                    let id = non_empty(Some(id));
                    if let Some(last) = self.calls.len().checked_sub(1)
                        && id.as_deref() == Some(self.calls[last].id.as_str())
                    {
                        // The same call again (a gateway's quirk).
                        self.blocks.insert(index, last);
                        return;
                    }
                    let ordinal = self.calls.len();
                    let id = id.unwrap_or_else(generated_call_id);
                    on_delta(StreamDelta::ToolCall {
                        index: ordinal,
                        id: Some(id.clone()),
                        name: Some(name.clone()),
                        arguments: String::new(),
                    });
                    // `{}` is what every start says; anything else is a
                    // server that sends the whole input at once.
                    let start_input = match &input {
                        serde_json::Value::Object(map) if map.is_empty() => String::new(),
                        serde_json::Value::Null => String::new(),
                        other => input_text(other),
                    };
                    self.blocks.insert(index, ordinal);
                    self.calls.push(PartialCall {
                        id,
                        name,
                        start_input,
                        arguments: String::new(),
                    });
                }
                BlockIn::Other => {}
            },
            WireEvent::ContentBlockDelta { index, delta } => match delta {
                BlockDelta::TextDelta { text } => self.text(text, on_delta),
                BlockDelta::InputJsonDelta { partial_json } => {
                    let ordinal = self.blocks.get(&index).copied();
                    if let Some((ordinal, call)) =
                        ordinal.and_then(|n| Some((n, self.calls.get_mut(n)?)))
                        && !partial_json.is_empty()
                    {
                        call.arguments.push_str(&partial_json);
                        on_delta(StreamDelta::ToolCall {
                            index: ordinal,
                            id: None,
                            name: None,
                            arguments: partial_json,
                        });
                    }
                }
                BlockDelta::Other => {}
            },
            WireEvent::MessageDelta { delta, usage } => {
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
                if let Some(usage) = usage {
                    self.usage
                        .get_or_insert_with(WireUsage::default)
                        .update(&usage);
                }
            }
            WireEvent::ContentBlockStop
            | WireEvent::MessageStop
            | WireEvent::Ping
            | WireEvent::Error { .. }
            | WireEvent::Unknown => {}
        }
    }

    fn start(&mut self, message: WireMessageIn) {
        self.started = true;
        self.model = non_empty(message.model);
        if message.usage.is_some() {
            self.usage = message.usage;
        }
    }

    fn text(&mut self, text: String, on_delta: DeltaSink<'_>) {
        if !text.is_empty() {
            self.content.push_str(&text);
            on_delta(StreamDelta::Text(text));
        }
    }

    /// The whole answer; a call whose arguments never came in pieces gets
    /// the input its start gave, else `{}` (reported as a delta).
    fn finish(self, on_delta: DeltaSink<'_>) -> ChatResponse {
        let tool_calls = self
            .calls
            .into_iter()
            .enumerate()
            .map(|(index, mut call)| {
                if call.arguments.is_empty() {
                    call.arguments = match std::mem::take(&mut call.start_input) {
                        input if input.is_empty() => "{}".to_string(),
                        input => input,
                    };
                    on_delta(StreamDelta::ToolCall {
                        index,
                        id: None,
                        name: None,
                        arguments: call.arguments.clone(),
                    });
                }
                ToolCall {
                    id: call.id,
                    name: call.name,
                    arguments: call.arguments,
                }
            })
            .collect();
        ChatResponse {
            content: self.content,
            tool_calls,
            usage: self.usage.map(Usage::from),
            finish_reason: self.stop_reason.map(finish_reason),
            model: self.model,
        }
    }

    /// The stream closed without `message_stop`: fine when the answer said
    /// why it stopped, an error otherwise.
    fn finish_without_stop(self, on_delta: DeltaSink<'_>) -> Result<ChatResponse, ModelError> {
        if self.stop_reason.is_some() {
            tracing::debug!("event stream ended without message_stop after a stop reason");
            return Ok(self.finish(on_delta));
        }
        let message = if !self.started {
            "the server ended the stream without an answer (no message_start)"
        } else if self.content.is_empty() && self.calls.is_empty() {
            "the server ended the stream without an answer (no text, no tool call, \
             no stop reason)"
        } else {
            "the event stream ended before the answer finished (no stop reason, no message_stop)"
        };
        Err(ModelError::InvalidResponse {
            message: message.into(),
            source: None,
        })
    }
}

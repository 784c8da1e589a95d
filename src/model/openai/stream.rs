//! Assembling a streamed answer: [`read_stream`] reads the server-sent
//! events of a streamed response, and [`StreamState`] turns each chunk into
//! deltas as it arrives and all of them into one [`ChatResponse`] at the
//! end — text appended, tool-call fragments joined by their index (an index
//! or id the server left out is guessed or generated), usage, model name and
//! finish reason kept.
//!
//! The stream ends with `[DONE]`; a stream that closes without it is
//! accepted once a finish reason came, and is a cut-off answer otherwise.

use std::collections::BTreeMap;

use super::wire::{
    arguments_text, decode, generated_call_id, WireChunk, WireContent, WireToolCallDelta,
};
use crate::error::ModelError;
use crate::message::ToolCall;
use crate::model::http::non_empty;
use crate::model::http::redact::{excerpt, MAX_ERROR_BODY_CHARS};
use crate::model::http::transport::Transport;
use crate::model::{ChatResponse, DeltaSink, StreamDelta, Usage};

/// Reads the server-sent events of `response`, reporting deltas as they
/// arrive, and returns the whole answer; `None` when the stream ended
/// without a single chunk (llama-cpp-python does that when it fails after
/// answering 200: a prompt that does not fit, a tool choice it cannot
/// stream), so the caller may ask again unstreamed and get the real
/// answer or error.
///
/// `no_answer_hint` adds to the error for a stream that ended with
/// nothing of an answer (why a server may do that).
pub(super) async fn read_stream(
    transport: &Transport,
    response: reqwest::Response,
    on_delta: DeltaSink<'_>,
    no_answer_hint: &(dyn Fn() -> String + Sync),
) -> Result<Option<ChatResponse>, ModelError> {
    let key = transport.api_key.as_ref();
    let mut events = transport.events(response);
    let mut state = StreamState::default();
    loop {
        let Some(data) = events.next().await? else {
            if state.chunks == 0 {
                return Ok(None);
            }
            return state.finish_without_done(no_answer_hint).map(Some);
        };
        let data = data.trim();
        if data == "[DONE]" {
            if state.chunks == 0 {
                return Ok(None);
            }
            return Ok(Some(state.finish()));
        }
        if data.is_empty() {
            continue;
        }
        let chunk: WireChunk = decode(data, key)?;
        if let Some(error) = chunk.error {
            return Err(ModelError::Other(format!(
                "the model endpoint reported an error mid-stream: {}",
                excerpt(key, &error.to_string(), MAX_ERROR_BODY_CHARS)
            )));
        }
        state.apply(chunk, &mut *on_delta);
    }
}

/// The error for a stream that brought no chunk at all, or nothing of an
/// answer.
fn no_answer(hint: &(dyn Fn() -> String + Sync)) -> ModelError {
    ModelError::InvalidResponse {
        message: format!(
            "the server ended the stream without an answer (no text, no tool call, \
             no finish reason){}",
            hint()
        ),
        source: None,
    }
}

/// What the stream said so far.
#[derive(Default)]
struct StreamState {
    /// Chunks read so far.
    chunks: usize,
    content: String,
    calls: BTreeMap<usize, PartialCall>,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    model: Option<String>,
}

/// A tool call being assembled from its fragments.
#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

impl StreamState {
    fn apply(&mut self, chunk: WireChunk, on_delta: DeltaSink<'_>) {
        self.chunks += 1;
        if self.model.is_none() {
            self.model = non_empty(chunk.model);
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.into());
        }
        // Only the first choice is read (the request never asks for more).
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if choice.finish_reason.is_some() {
                self.finish_reason = choice.finish_reason;
            }
            let delta = choice.delta.unwrap_or_default();
            let text = delta
                .content
                .map(WireContent::into_text)
                .unwrap_or_default();
            if !text.is_empty() {
                self.content.push_str(&text);
                on_delta(StreamDelta::Text(text));
            }
            for call in delta.tool_calls {
                self.apply_call(call, &mut *on_delta);
            }
        }
    }

    fn apply_call(&mut self, call: WireToolCallDelta, on_delta: DeltaSink<'_>) {
        let id = non_empty(call.id);
        let index = call
            .index
            .unwrap_or_else(|| self.guess_index(id.as_deref()));
        let function = call.function.unwrap_or_default();
        let name = non_empty(function.name);
        let arguments = arguments_text(function.arguments);
        let partial = self.calls.entry(index).or_default();
        // Likewise an id: the first one counts, and is reported once.
        let id = id.filter(|_| partial.id.is_empty());
        if let Some(id) = &id {
            partial.id.clone_from(id);
        }
        // A name arrives once per call. Some servers (llama-cpp-python)
        // repeat the whole name in every fragment: a repeat is not appended,
        // and not reported again.
        let name = name.filter(|name| *name != partial.name);
        if let Some(name) = &name {
            partial.name.push_str(name);
        }
        partial.arguments.push_str(&arguments);
        if id.is_some() || name.is_some() || !arguments.is_empty() {
            on_delta(StreamDelta::ToolCall {
                index,
                id,
                name,
                arguments,
            });
        }
    }

    /// The index of a fragment that came without one: a new call when it
    /// brings a new id, otherwise the latest call.
    fn guess_index(&self, id: Option<&str>) -> usize {
        match (self.calls.last_key_value(), id) {
            (None, _) => 0,
            (Some((&last, partial)), Some(id)) if !partial.id.is_empty() && partial.id != id => {
                last + 1
            }
            (Some((&last, _)), _) => last,
        }
    }

    fn finish(self) -> ChatResponse {
        let tool_calls = self
            .calls
            .into_values()
            .map(|call| ToolCall {
                id: if call.id.is_empty() {
                    generated_call_id()
                } else {
                    call.id
                },
                name: call.name,
                arguments: call.arguments,
            })
            .collect();
        ChatResponse {
            content: self.content,
            tool_calls,
            usage: self.usage,
            finish_reason: self.finish_reason,
            model: self.model,
        }
    }

    /// The stream closed without `[DONE]`: fine when the answer said it
    /// was finished, a cut-off answer otherwise.
    fn finish_without_done(
        self,
        no_answer_hint: &(dyn Fn() -> String + Sync),
    ) -> Result<ChatResponse, ModelError> {
        if self.finish_reason.is_some() {
            tracing::debug!("event stream ended without [DONE] after a finish reason");
            Ok(self.finish())
        } else if self.content.is_empty() && self.calls.is_empty() {
            Err(no_answer(no_answer_hint))
        } else {
            Err(ModelError::InvalidResponse {
                message:
                    "the event stream ended before the answer finished (no finish reason, no [DONE])"
                        .into(),
                source: None,
            })
        }
    }
}

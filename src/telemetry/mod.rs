//! What a run looks like in a trace viewer: `tracing` spans named and
//! attributed after the OpenTelemetry GenAI semantic conventions, made
//! only with the cargo feature `otel` (without it every function here
//! returns [`Span::none`] and records nothing).
//!
//! ```text
//!  invoke_agent {network}          one per RunnableNetwork::invoke (gen_ai.conversation.id,
//!  │                               session.id, user.id, gen_ai.usage.* of the run)
//!  ├── chat {model}                one per chat node (gen_ai.request.model, response.model,
//!  │                               usage.input_tokens / output_tokens, finish_reasons)
//!  ├── execute_tool {tool}         one per tool node (gen_ai.tool.name, tool.call.id, status)
//!  │   └── invoke_agent {agent}    a sub-network that answers the call (the `task` tool's
//!  │       └── chat / execute_tool ...   sub-agent) runs inside the call's span
//!  └── summarize                   a summary of the conversation (the deep agent's)
//!      └── chat {model}
//! ```
//!
//! Every span has the target [`TARGET`] (`gen_ai`), level INFO, so a
//! subscriber can keep them apart from the logs; `lc_agent::otel` (feature
//! `otel`) exports them over OTLP. Prompts, answers, tool arguments and
//! results go into the spans only when asked
//! (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`, or
//! [`set_capture_content`]); by default a trace holds names, ids, models,
//! token counts and statuses, never what was said.

use std::sync::atomic::{AtomicU8, Ordering};

pub use tracing::Span;

use crate::model::{ChatRequest, ChatResponse, Usage};

/// The target of every span here.
pub const TARGET: &str = "gen_ai";

/// The variable that lets prompts and answers into the spans (`true` or
/// `1`), as OpenTelemetry's GenAI instrumentations name it.
#[cfg(feature = "otel")]
pub(crate) const CAPTURE_CONTENT_ENV: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// 0: not decided yet (read the environment), 1: off, 2: on.
static CAPTURE: AtomicU8 = AtomicU8::new(0);

/// Whether spans carry what was said (prompts, answers, tool arguments and
/// results): [`set_capture_content`] when called, else
/// [`CAPTURE_CONTENT_ENV`] (off unless `true` or `1`).
#[cfg(feature = "otel")]
pub(crate) fn capture_content() -> bool {
    match CAPTURE.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => {
            let on = std::env::var(CAPTURE_CONTENT_ENV)
                .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "true" | "1"));
            CAPTURE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
            on
        }
    }
}

/// Lets (or keeps) prompts and answers into the spans of this process,
/// whatever the environment says.
pub fn set_capture_content(on: bool) {
    CAPTURE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
}

/// The span of a chat-model call outside a chat node (a summary's):
/// `chat {model}`; record the answer with [`record_chat`].
pub fn chat_span(model: &str, step: &str) -> Span {
    #[cfg(feature = "otel")]
    {
        spans::chat(model, step, None)
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = (model, step);
        Span::none()
    }
}

/// The span of a summary of the conversation (`summarize`); the model
/// call goes in a [`chat_span`] inside it.
pub fn summary_span() -> Span {
    #[cfg(feature = "otel")]
    {
        tracing::info_span!(
            target: TARGET,
            "summarize",
            "gen_ai.operation.name" = "summarize",
            "openinference.span.kind" = "CHAIN",
        )
    }
    #[cfg(not(feature = "otel"))]
    {
        Span::none()
    }
}

/// Records a model's answer in its `chat` span: the model that answered,
/// the token counts (`usage`: reported or estimated), the finish reason
/// and, when content capture is on ([`set_capture_content`]), the messages.
pub fn record_chat(span: &Span, request: &ChatRequest, response: &ChatResponse, usage: &Usage) {
    #[cfg(feature = "otel")]
    spans::record_chat(span, request, response, usage);
    #[cfg(not(feature = "otel"))]
    let _ = (span, request, response, usage);
}

#[cfg(feature = "otel")]
mod run;
#[cfg(feature = "otel")]
mod spans;

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
use crate::network::RunnableNetwork;
use crate::node::NodeRef;

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

/// The span of one `invoke` of `net` (none without the feature).
pub(crate) fn agent_span(net: &RunnableNetwork) -> Span {
    #[cfg(feature = "otel")]
    {
        spans::agent(net)
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = net;
        Span::none()
    }
}

/// Records how a run ended and what it used.
pub(crate) fn finish_agent(
    span: &Span,
    usage: Option<crate::usage::UsageTotals>,
    net: &RunnableNetwork,
    error: Option<&crate::error::NetworkError>,
) {
    #[cfg(feature = "otel")]
    spans::finish_agent(span, usage, net, error);
    #[cfg(not(feature = "otel"))]
    let _ = (span, usage, net, error);
}

/// The span a node runs in (none for a node that is not a model call, a
/// tool call or a call's sub-network).
pub(crate) fn node_span(net: &RunnableNetwork, node: &NodeRef) -> Span {
    #[cfg(feature = "otel")]
    {
        spans::node(net, node)
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = (net, node);
        Span::none()
    }
}

/// Records a node's result in its span.
pub(crate) fn finish_node(
    span: &Span,
    result: std::result::Result<&crate::message::Message, &crate::error::NetworkError>,
) {
    #[cfg(feature = "otel")]
    spans::finish_node(span, result);
    #[cfg(not(feature = "otel"))]
    let _ = (span, result);
}

/// Closes the spans of calls whose sub-network ran but whose own node did
/// not (a run that stopped in between).
pub(crate) fn end_run(net: &RunnableNetwork) {
    #[cfg(feature = "otel")]
    net.0.runtime.read().open_spans.lock().clear();
    #[cfg(not(feature = "otel"))]
    let _ = net;
}

#[cfg(feature = "otel")]
mod spans {
    use crate::routing::ModelRoutes;
    use crate::usage::UsageExt;
    use tracing::field::Empty;

    use super::*;
    use crate::message::{Message, ToolStatus};
    use crate::nodes::{ChatNode, NetworkNode, ToolNode};

    pub(super) fn agent(net: &RunnableNetwork) -> Span {
        // A sub-network is its agent (`subagent:writer`); a session's own
        // name is its title, not an agent's.
        let name = match (net.outer(), net.name()) {
            (Some(_), n) if !n.trim().is_empty() => n,
            _ => "lc-agent".to_string(),
        };
        let session = net.session();
        let span = tracing::info_span!(
            target: TARGET,
            "invoke_agent",
            "otel.name" = %format_args!("invoke_agent {name}"),
            "gen_ai.operation.name" = "invoke_agent",
            "gen_ai.agent.name" = %name,
            "gen_ai.agent.id" = %net.id(),
            "gen_ai.conversation.id" = %session.id(),
            "session.id" = %session.id(),
            "user.id" = Empty,
            "gen_ai.usage.input_tokens" = Empty,
            "gen_ai.usage.output_tokens" = Empty,
            "openinference.span.kind" = "AGENT",
            "otel.status_code" = Empty,
            "otel.status_description" = Empty,
            "error.type" = Empty,
        );
        if let Some(user) = net.user_id() {
            span.record("user.id", user.as_str());
        }
        span
    }

    pub(super) fn finish_agent(
        span: &Span,
        before: Option<crate::usage::UsageTotals>,
        net: &RunnableNetwork,
        error: Option<&crate::error::NetworkError>,
    ) {
        if let Some(before) = before {
            let run = net.usage().since(&before);
            span.record("gen_ai.usage.input_tokens", int(run.all.prompt_tokens));
            span.record("gen_ai.usage.output_tokens", int(run.all.completion_tokens));
        }
        if let Some(e) = error {
            failed(span, e);
        }
    }

    /// A count as OpenTelemetry's integer (a `u64` would go as text).
    fn int(n: u64) -> i64 {
        i64::try_from(n).unwrap_or(i64::MAX)
    }

    fn failed(span: &Span, e: &crate::error::NetworkError) {
        span.record("otel.status_code", "ERROR");
        span.record("otel.status_description", e.to_string().as_str());
        span.record("error.type", error_type(e));
    }

    fn error_type(e: &crate::error::NetworkError) -> &'static str {
        use crate::error::NetworkError as E;
        match e {
            E::NodeFailed { source, .. } => match source.downcast_ref::<E>() {
                Some(inner) => error_type(inner),
                None => "lc_agent_error",
            },
            E::StepLimit { .. } => "step_limit",
            E::Model(_) => "model_error",
            _ => "lc_agent_error",
        }
    }

    pub(super) fn chat(model: &str, step: &str, node: Option<&NodeRef>) -> Span {
        tracing::info_span!(
            target: TARGET,
            "chat",
            "otel.name" = %format_args!("chat {model}"),
            "otel.kind" = "client",
            "gen_ai.operation.name" = "chat",
            "gen_ai.request.model" = model,
            "gen_ai.response.model" = Empty,
            "gen_ai.usage.input_tokens" = Empty,
            "gen_ai.usage.output_tokens" = Empty,
            "gen_ai.usage.cache_read.input_tokens" = Empty,
            "gen_ai.response.finish_reasons" = Empty,
            "lc_agent.usage.estimated" = Empty,
            "lc_agent.step" = step,
            "lc_agent.node.id" = node.map(|n| tracing::field::display(n.id())),
            "gen_ai.input.messages" = Empty,
            "gen_ai.output.messages" = Empty,
            "openinference.span.kind" = "LLM",
            "otel.status_code" = Empty,
            "otel.status_description" = Empty,
            "error.type" = Empty,
        )
    }

    pub(super) fn record_chat(
        span: &Span,
        request: &ChatRequest,
        response: &ChatResponse,
        usage: &Usage,
    ) {
        if span.is_disabled() {
            return;
        }
        if let Some(model) = response.model.as_deref().filter(|m| !m.is_empty()) {
            span.record("gen_ai.response.model", model);
        }
        span.record("gen_ai.usage.input_tokens", int(usage.prompt_tokens));
        span.record("gen_ai.usage.output_tokens", int(usage.completion_tokens));
        if usage.cache_read_tokens > 0 {
            span.record(
                "gen_ai.usage.cache_read.input_tokens",
                int(usage.cache_read_tokens),
            );
        }
        span.record("lc_agent.usage.estimated", usage.estimated);
        if let Some(reason) = &response.finish_reason {
            // A string array in the conventions; tracing has none, so
            // its JSON text.
            let reasons = serde_json::json!([reason]).to_string();
            span.record("gen_ai.response.finish_reasons", reasons.as_str());
        }
        if capture_content() {
            let input: Vec<serde_json::Value> =
                request.messages().iter().map(|m| message_json(m)).collect();
            let input = serde_json::Value::Array(input).to_string();
            span.record("gen_ai.input.messages", input.as_str());
            let output = serde_json::json!([message_json(&response.to_message())]).to_string();
            span.record("gen_ai.output.messages", output.as_str());
        }
    }

    /// A message as the conventions' JSON: role and parts.
    fn message_json(m: &Message) -> serde_json::Value {
        let mut parts = Vec::new();
        if !m.text().is_empty() {
            parts.push(serde_json::json!({"type": "text", "content": m.text()}));
        }
        for call in m.tool_calls() {
            parts.push(serde_json::json!({"type": "tool_call", "id": call.id,
                "name": call.name, "arguments": call.arguments}));
        }
        let role = match m {
            Message::System { .. } => "system",
            Message::Human { .. } => "user",
            Message::Ai { .. } => "assistant",
            Message::Tool { .. } => "tool",
        };
        serde_json::json!({"role": role, "parts": parts})
    }

    fn tool(node: &NodeRef, tool: &ToolNode) -> Span {
        let call = &tool.tool_call;
        let span = tracing::info_span!(
            target: TARGET,
            "execute_tool",
            "otel.name" = %format_args!("execute_tool {}", call.name),
            "gen_ai.operation.name" = "execute_tool",
            "gen_ai.tool.name" = %call.name,
            "gen_ai.tool.call.id" = %call.id,
            "gen_ai.tool.type" = "function",
            "lc_agent.node.id" = %node.id(),
            "lc_agent.tool.status" = Empty,
            "gen_ai.tool.call.arguments" = Empty,
            "gen_ai.tool.call.result" = Empty,
            "openinference.span.kind" = "TOOL",
            "otel.status_code" = Empty,
            "otel.status_description" = Empty,
            "error.type" = Empty,
        );
        if capture_content() && !span.is_disabled() {
            span.record("gen_ai.tool.call.arguments", call.arguments.as_str());
        }
        span
    }

    pub(super) fn node(net: &RunnableNetwork, node: &NodeRef) -> Span {
        if let Some(logic) = node.downcast::<ChatNode>() {
            let step = logic.step.as_deref().unwrap_or(crate::routing::CHAT_STEP);
            let model = logic
                .chat_model_name
                .clone()
                .or_else(|| net.model_for_step(step))
                .unwrap_or_default();
            return chat(&model, step, Some(node));
        }
        if let Some(call) = node.downcast::<ToolNode>() {
            // Opened already when a sub-network answered the call first.
            let open = net.0.runtime.read().open_spans.lock().remove(&node.id());
            return open.unwrap_or_else(|| tool(node, call));
        }
        if node.downcast::<NetworkNode>().is_some() {
            // A sub-network that answers a tool call (the `task` tool's
            // sub-agent): it runs inside the call's span, opened now and
            // kept for the call's own node.
            let children = net.children(node.id());
            if let [child] = children.as_slice()
                && let Some(call) = child.downcast::<ToolNode>()
                && !child.is_invoked()
            {
                let span = tool(child, call);
                if !span.is_disabled() {
                    net.0
                        .runtime
                        .read()
                        .open_spans
                        .lock()
                        .insert(child.id(), span.clone());
                }
                return span;
            }
        }
        Span::none()
    }

    pub(super) fn finish_node(
        span: &Span,
        result: std::result::Result<&Message, &crate::error::NetworkError>,
    ) {
        if span.is_disabled() {
            return;
        }
        match result {
            Err(e) => failed(span, e),
            Ok(Message::Tool {
                status, content, ..
            }) => {
                let error = *status == ToolStatus::Error;
                span.record("lc_agent.tool.status", if error { "error" } else { "ok" });
                if error {
                    span.record("otel.status_code", "ERROR");
                    span.record("error.type", "tool_error");
                }
                if capture_content() {
                    span.record("gen_ai.tool.call.result", content.as_str());
                }
            }
            Ok(_) => {}
        }
    }
}

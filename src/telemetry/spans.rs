//! The spans' shared parts: a model call's span, what it records, and
//! how an error is written.

use tracing::field::Empty;
use tracing::Span;

use super::{capture_content, TARGET};
use crate::message::Message;
use crate::model::{ChatRequest, ChatResponse, Usage};
use crate::node::NodeRef;

/// A count as OpenTelemetry's integer (a `u64` would go as text).
pub(super) fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub(super) fn failed(span: &Span, e: &crate::error::NetworkError) {
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

//! The spans of a run (`invoke_agent`) and of its nodes (`chat`,
//! `execute_tool`), given to the floor as its tracer (`run/tracer.rs`).

use tracing::field::Empty;
use tracing::Span;

use super::spans::{chat, failed, int};
use super::{capture_content, TARGET};
use crate::message::{Message, ToolStatus};
use crate::network::RunnableNetwork;
use crate::node::NodeRef;
use crate::nodes::{ChatNode, NetworkNode, ToolNode};
use crate::routing::ModelRoutes;
use crate::usage::UsageExt;

/// The floor's spans (`run/tracer.rs`), drawn here.
#[linkme::distributed_slice(crate::run::tracer::RUN_TRACERS)]
static TRACER: crate::run::tracer::RunTracer = crate::run::tracer::RunTracer {
    agent_span: agent,
    begin_agent: |net| {
        use crate::usage::UsageExt;
        Box::new(net.usage())
    },
    finish_agent: |span, begun, net, error| {
        let before = begun
            .downcast::<crate::usage::UsageTotals>()
            .ok()
            .map(|b| *b);
        finish_agent(span, before, net, error);
    },
    node_span: node,
    finish_node,
    // Closes the spans of calls whose sub-network ran but whose own node
    // did not (a run that stopped in between).
    end_run: |net| net.0.runtime.read().open_spans.lock().clear(),
};

fn agent(net: &RunnableNetwork) -> Span {
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

fn finish_agent(
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

fn node(net: &RunnableNetwork, node: &NodeRef) -> Span {
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

fn finish_node(span: &Span, result: std::result::Result<&Message, &crate::error::NetworkError>) {
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

//! Tracing a run: the span of an `invoke` and of each node. The floor
//! opens and closes spans through this table and never names what a span
//! reads (usage, routes, node kinds); `telemetry.rs` fills it when the
//! `otel` feature is on. With no row every span is `Span::none()`, which
//! costs a branch.

use std::any::Any;

use linkme::distributed_slice;
use tracing::Span;

use crate::error::NetworkError;
use crate::message::Message;
use crate::network::RunnableNetwork;
use crate::node::NodeRef;

/// What a run is when traced: each hook of the floor's spans.
pub(crate) struct RunTracer {
    /// The span of one `invoke` of a network.
    pub(crate) agent_span: fn(&RunnableNetwork) -> Span,
    /// What the agent span needs to remember from the start of a run
    /// (the usage so far), taken only when the span records.
    pub(crate) begin_agent: fn(&RunnableNetwork) -> Box<dyn Any + Send>,
    /// Records how a run ended, given what `begin_agent` kept.
    pub(crate) finish_agent:
        fn(&Span, Box<dyn Any + Send>, &RunnableNetwork, Option<&NetworkError>),
    /// The span a node runs in.
    pub(crate) node_span: fn(&RunnableNetwork, &NodeRef) -> Span,
    /// Records a node's result in its span.
    pub(crate) finish_node: fn(&Span, std::result::Result<&Message, &NetworkError>),
    /// Closes what a run left open.
    pub(crate) end_run: fn(&RunnableNetwork),
}

/// The tracer, when a feature adds one (at most one row).
#[distributed_slice]
pub(crate) static RUN_TRACERS: [RunTracer];

fn tracer() -> Option<&'static RunTracer> {
    RUN_TRACERS.first()
}

/// The span of one `invoke` of `net`.
pub(crate) fn agent_span(net: &RunnableNetwork) -> Span {
    tracer().map_or_else(Span::none, |t| (t.agent_span)(net))
}

/// What the run's span keeps from its start (nothing when it is off).
pub(crate) fn begin_agent(span: &Span, net: &RunnableNetwork) -> Option<Box<dyn Any + Send>> {
    if span.is_disabled() {
        return None;
    }
    tracer().map(|t| (t.begin_agent)(net))
}

/// Records how the run ended and closes what it left open.
pub(crate) fn finish_agent(
    span: &Span,
    begun: Option<Box<dyn Any + Send>>,
    net: &RunnableNetwork,
    error: Option<&NetworkError>,
) {
    if let (Some(t), Some(begun)) = (tracer(), begun) {
        (t.finish_agent)(span, begun, net, error);
        (t.end_run)(net);
    }
}

/// The span a node runs in.
pub(crate) fn node_span(net: &RunnableNetwork, node: &NodeRef) -> Span {
    tracer().map_or_else(Span::none, |t| (t.node_span)(net, node))
}

/// Records a node's result in its span.
pub(crate) fn finish_node(span: &Span, result: std::result::Result<&Message, &NetworkError>) {
    if let Some(t) = tracer() {
        (t.finish_node)(span, result);
    }
}

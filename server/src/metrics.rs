//! The metrics recorder: the server's counters and histograms
//! (`metrics` + `metrics-exporter-prometheus`), rendered in Prometheus
//! text by `GET /metrics` (handlers/metrics.rs).
//!
//! ```text
//!  lc_agent_http_requests_total{method, route, status}      counter   every request (route: the matched pattern)
//!  lc_agent_http_request_duration_seconds{method, route}    histogram
//!  lc_agent_runs_total{status}                              counter   done | failed | cancelled: once per
//!                                                                     run, when it ends (not at each approval pause)
//!  lc_agent_run_duration_seconds{status}                    histogram the last stretch of the run (after its last pause)
//!  lc_agent_approval_pauses_total                           counter   a run stopped to wait for decisions
//!  lc_agent_model_call_duration_seconds{model}              histogram every chat call of a run, sub-agents' too
//!  lc_agent_tokens_total{model, kind}                       counter   kind: prompt | completion | cached | reasoning
//!  lc_agent_cost_usd{model}                                 gauge     USD spent (a running sum) at the session's prices
//!                                                                     (its blueprint's [prices] over prices.toml over
//!                                                                     the built-ins); a model without a price: absent
//!  lc_agent_tool_calls_total{tool, status}                  counter   status: ok | error; a call held for
//!                                                                     approval counts when it runs
//!  lc_agent_active_runs                                     gauge     runs going on in this process
//!  lc_agent_active_sessions                                 gauge     sessions claimed by a run here (at scrape time)
//!  lc_agent_queued_runs                                     gauge     runs waiting in the queue for a server (at
//!                                                                     scrape time; the deployment's, on Redis)
//! ```
//!
//! One recorder per process (the `metrics` facade is global): servers
//! started in one process share it. A run is counted when it ends, from
//! the nodes it added (model calls, tool calls) and its usage.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use lc_agent::{
    ChatNode, Events, Message, NetworkNode, NodeRef, RunnableNetwork, ToolNode, ToolStatus,
};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Latency buckets, seconds: from a fast tool to a long agent run.
const BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The process's recorder, installed on first use; `None` when another
/// recorder was installed first (then `/metrics` says so).
pub(crate) fn handle() -> Option<&'static PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let built = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), BUCKETS)
                .and_then(|b| b.install_recorder());
            match built {
                Ok(handle) => Some(handle),
                Err(e) => {
                    tracing::warn!(error = %e, "metrics are off: a recorder could not be installed");
                    None
                }
            }
        })
        .as_ref()
}

/// Counts every request by method, matched route and status, and times it.
pub(crate) async fn track(request: Request, next: Next) -> Response {
    // Installed before the first request, so nothing is lost.
    let _ = handle();
    let method = request.method().to_string();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let started = Instant::now();
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    metrics::counter!("lc_agent_http_requests_total", "method" => method.clone(), "route" => route.clone(), "status" => status)
        .increment(1);
    metrics::histogram!("lc_agent_http_request_duration_seconds", "method" => method, "route" => route)
        .record(started.elapsed().as_secs_f64());
    response
}

/// A run going on: counted in `lc_agent_active_runs` until it drops.
pub(crate) struct ActiveRun(Instant);

impl ActiveRun {
    /// A run starts.
    pub(crate) fn start() -> Self {
        let _ = handle();
        metrics::gauge!("lc_agent_active_runs").increment(1.0);
        Self(Instant::now())
    }

    /// The run stopped with `status` (`done`, `waiting`, `failed`,
    /// `cancelled`) having used `usage` (since it went on, priced by
    /// `prices`, the session's) and run `ran` (the nodes that ran in it:
    /// see [`ran_in_run`]): counts its model calls, tokens, cost and tool
    /// calls, and the run itself once, when it ends (a pause for
    /// decisions is counted apart).
    pub(crate) fn finish(
        self,
        ran: &[NodeRef],
        status: &'static str,
        usage: &lc_agent::UsageTotals,
        prices: &lc_agent::Prices,
    ) {
        if status == "waiting" {
            metrics::counter!("lc_agent_approval_pauses_total").increment(1);
        } else {
            metrics::counter!("lc_agent_runs_total", "status" => status).increment(1);
            metrics::histogram!("lc_agent_run_duration_seconds", "status" => status)
                .record(self.0.elapsed().as_secs_f64());
        }
        for (model, counts) in &usage.by_model {
            if let Some(price) = prices.of(model) {
                // A running sum of dollars: the `metrics` facade's
                // counters count whole numbers, so a gauge keeps it.
                metrics::gauge!("lc_agent_cost_usd", "model" => model.clone())
                    .increment(price.cost(counts));
            }
            for (kind, n) in [
                ("prompt", counts.prompt_tokens),
                ("completion", counts.completion_tokens),
                ("cached", counts.cache_read_tokens),
                ("reasoning", counts.reasoning_tokens),
            ] {
                if n > 0 {
                    metrics::counter!("lc_agent_tokens_total", "model" => model.clone(), "kind" => kind)
                        .increment(n);
                }
            }
        }
        for node in ran {
            count_node(node);
        }
    }
}

/// The nodes that ran in a run of `net`: of `pending_before` (the nodes
/// not run when it went on: a call held for approval runs in the run)
/// and of the nodes added since `mark` (`net.additions()` when it went
/// on), those that have run now. Costs O(nodes of the run), however long
/// the session.
pub(crate) fn ran_in_run(
    net: &RunnableNetwork,
    pending_before: &[NodeRef],
    mark: u64,
) -> Vec<NodeRef> {
    let mut ran: Vec<NodeRef> = pending_before
        .iter()
        .filter(|n| n.is_invoked() && n.network().is_some_and(|owner| owner == *net))
        .cloned()
        .collect();
    ran.extend(
        net.nodes_added_since(mark)
            .into_iter()
            .filter(NodeRef::is_invoked),
    );
    ran
}

impl Drop for ActiveRun {
    fn drop(&mut self) {
        metrics::gauge!("lc_agent_active_runs").decrement(1.0);
    }
}

/// Counts a node of the run: a model call's latency, a tool call's
/// status; a sub-network's nodes all belong to the run.
fn count_node(node: &lc_agent::NodeRef) {
    if let Some(inner) = node.downcast::<NetworkNode>() {
        for n in inner.network().nodes() {
            count_node(&n);
        }
        return;
    }
    if !node.is_invoked() {
        return;
    }
    if node.kind() == ChatNode::KIND {
        let meta = node.metadata();
        let model = meta
            .get(lc_agent::RESPONSE_MODEL_KEY)
            .or_else(|| meta.get("chat_model_name"))
            .and_then(|v| v.as_str())
            .unwrap_or("unknown")
            .to_string();
        if let Some(us) = meta
            .get("timings")
            .and_then(|t| t.get("elapsed_us"))
            .and_then(|v| v.as_u64())
        {
            metrics::histogram!("lc_agent_model_call_duration_seconds", "model" => model)
                .record(Duration::from_micros(us).as_secs_f64());
        }
    } else if let Some(tool) = node.downcast::<ToolNode>() {
        let status = match node.output().as_deref() {
            Some(Message::Tool {
                status: ToolStatus::Error,
                ..
            }) => "error",
            _ => "ok",
        };
        metrics::counter!("lc_agent_tool_calls_total", "tool" => tool.tool_call.name.clone(), "status" => status)
            .increment(1);
    }
}

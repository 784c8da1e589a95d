//! Running a network: begin hooks, passes over pending nodes, end hooks.

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use tracing::Instrument;

use super::{hook, with_hook, InvokeOutcome, NetworkModifier, NodeHook};
use crate::error::{NetworkError, Result};
use crate::event::NetworkEvent;
use crate::message::Message;
use crate::network::runtime::Attachments;
use crate::network::runtime::Events;
use crate::network::RunnableNetwork;
use crate::node::{NodeContext, NodeId, NodeRef};

type Modifiers = Arc<[Arc<dyn NetworkModifier>]>;

/// The modifiers of one run that have each per-node hook, sorted out once
/// per run (see [`super::has_hook`]).
struct NodeHooks {
    pre: smallvec::SmallVec<[Arc<dyn NetworkModifier>; 2]>,
    /// With whether each is called directly (`on_post_invoke_now`).
    post: smallvec::SmallVec<[(Arc<dyn NetworkModifier>, bool); 2]>,
}

pub(crate) async fn invoke_traced(net: &RunnableNetwork, span: &tracing::Span) -> Result<Message> {
    let _running = net.0.invoke_lock.lock().await;
    net.0
        .run_calls
        .lock()
        .iter_mut()
        .for_each(|calls| calls.clear());
    // What the run's span needs from its start: only when someone records it.
    let begun = super::tracer::begin_agent(span, net);
    let clock = Instant::now();
    net.emit(&NetworkEvent::InvokeStarted);
    let modifiers = net.modifiers();
    let mut result = async {
        // Sub-network nodes that waited on work inside, which can go
        // on now (a nested call was decided), run again.
        super::hold::settle(net);
        for m in modifiers.iter() {
            let hooks = m.hooks();
            if hooks.begin_invoke_now {
                // A hook that never waits: no future to box.
                super::hook_sync(m, || m.on_begin_invoke_now(net))?;
            } else if hooks.begin_invoke {
                hook(m, m.on_begin_invoke(net)).await?;
            }
        }
        run_passes(net, &modifiers).await
    }
    .await;
    let outcome = outcome_of(net, &result);
    for m in modifiers.iter() {
        if !m.hooks().end_invoke {
            continue;
        }
        if let Err(e) = hook(m, m.on_end_invoke(net, &outcome)).await {
            if result.is_ok() {
                result = Err(e);
            } else {
                tracing::warn!(modifier = m.id(), error = %e, "on_end_invoke failed after an earlier error");
            }
        }
    }
    super::tracer::finish_agent(span, begun, net, result.as_ref().err());
    let elapsed = clock.elapsed();
    net.emit_with(|| NetworkEvent::InvokeFinished {
        outcome: outcome_of(net, &result),
        elapsed,
    });
    result
}

async fn run_passes(net: &RunnableNetwork, modifiers: &Modifiers) -> Result<Message> {
    let hooks = NodeHooks {
        pre: with_hook(modifiers, NodeHook::PreInvoke).collect(),
        post: with_hook(modifiers, NodeHook::PostInvoke)
            .map(|m| {
                let now = m.hooks().post_invoke_now;
                (m, now)
            })
            .collect(),
    };
    let limit = net.step_limit();
    let mut turns = 0usize;
    let mut last: Option<Arc<Message>> = None;
    loop {
        let order = super::hold::ready(net.pending_in_order());
        if order.is_empty() {
            break;
        }
        // Nodes that held themselves this pass, and the nodes below
        // them: later waves of the pass leave them for a later invoke.
        let mut waiting = crate::node::IdSet::default();
        let staged = waves(order, |id| net.node(id).map(|n| n.seq()));
        for wave in staged.chunk_by(|a, b| a.0 == b.0) {
            let wave: smallvec::SmallVec<[&NodeRef; 4]> = wave
                .iter()
                .map(|(_, n)| n)
                .filter(|n| {
                    let waits = !waiting.is_empty()
                        && n.with_parent_ids(|ps| ps.iter().any(|p| waiting.contains(p)));
                    if waits {
                        waiting.insert(n.id());
                    }
                    !waits
                })
                .collect();
            let model_turns = wave.iter().filter(|n| n.logic().is_model_turn()).count();
            if let Some(limit) = limit
                && turns + model_turns > limit
            {
                return Err(NetworkError::StepLimit { limit });
            }
            turns += model_turns;
            if let [node] = wave.as_slice() {
                match run_node(net, node, &hooks).await? {
                    Some(message) => last = Some(message),
                    None => {
                        waiting.insert(node.id());
                    }
                }
                continue;
            }
            let results =
                futures::future::join_all(wave.iter().map(|n| run_node(net, n, &hooks))).await;
            for (node, r) in wave.iter().zip(results) {
                match r? {
                    Some(message) => last = Some(message),
                    None => {
                        waiting.insert(node.id());
                    }
                }
            }
        }
    }
    match last {
        Some(m) => Ok(Message::clone(&m)),
        None => net
            .current_leaf()
            .and_then(|leaf| leaf.output())
            // Below a held node the leaf has not run: the newest output.
            .or_else(|| net.nodes().iter().rev().find_map(NodeRef::output))
            .map(|m| Message::clone(&m))
            .ok_or(NetworkError::Empty),
    }
}

/// Runs one node; `None` when the node held itself instead of
/// finishing (a sub-network whose inner network waits, see
/// [`super::HELD_INSIDE`]): it stays pending, with no output.
async fn run_node(
    net: &RunnableNetwork,
    node: &NodeRef,
    hooks: &NodeHooks,
) -> Result<Option<Arc<Message>>> {
    for m in &hooks.pre {
        hook(m, m.on_pre_invoke(net, node)).await?;
    }
    // A node held or answered before it runs does not run: a pre-invoke
    // hook (or a sibling's post-invoke hook in this pass) held it, so it
    // waits like any held node, or gave it its output (`set_output`), so
    // it is done.
    if node.held().is_some() {
        return Ok(None);
    }
    if let Some(answered) = node.output() {
        net.emit(&NetworkEvent::NodeInvoked { node_id: node.id() });
        run_post_hooks(net, node, hooks).await?;
        return Ok(Some(answered));
    }
    let input = net.input_of(node);
    let started_at = chrono::Utc::now();
    let clock = Instant::now();
    let ctx = NodeContext {
        network: net.clone(),
        node: node.clone(),
        input: input.clone(),
    };
    let logic = node.0.logic.clone();
    let span = super::tracer::node_span(net, node);
    let result = if span.is_disabled() {
        logic.invoke(ctx).await
    } else {
        let result = logic.invoke(ctx).instrument(span.clone()).await;
        super::tracer::finish_node(&span, result.as_ref());
        result
    };
    drop(span);
    let message = match result {
        Ok(message) => Arc::new(message),
        Err(e) => {
            let message = e.to_string();
            node.set_metadata("error", json!(message));
            net.emit(&NetworkEvent::NodeFailed {
                node_id: node.id(),
                error: message.clone(),
            });
            return Err(NetworkError::NodeFailed {
                node: node.id(),
                kind: node.kind().to_string(),
                message,
                source: Box::new(e),
            });
        }
    };
    // Only a sub-network holds itself while it runs (work inside waits);
    // the kind check spares every other node the metadata lookup.
    if node.logic().inner_network().is_some() && node.held().is_some() {
        return Ok(None);
    }
    let elapsed_us = u64::try_from(clock.elapsed().as_micros()).unwrap_or(u64::MAX);
    let history = crate::node::speak(&*logic, input, message.clone());
    node.record_output(message.clone(), Some(history), |m| {
        m.remove("error");
        m.insert(
            "timings",
            crate::node::metadata::Entry::Timings(crate::node::metadata::Timings {
                started_at,
                elapsed_us,
            }),
        );
    });
    net.mark_pending_done(node);
    net.emit(&NetworkEvent::NodeInvoked { node_id: node.id() });
    run_post_hooks(net, node, hooks).await?;
    Ok(Some(message))
}

/// The post-invoke hooks of a node that is done.
async fn run_post_hooks(net: &RunnableNetwork, node: &NodeRef, hooks: &NodeHooks) -> Result<()> {
    for (m, now) in &hooks.post {
        if *now {
            // A hook that never waits: no future to box.
            super::hook_sync(m, || m.on_post_invoke_now(net, node))?;
            continue;
        }
        hook(m, m.on_post_invoke(net, node)).await?;
    }
    Ok(())
}

/// How a run ended: failed, held (some nodes wait to be released), or
/// completed.
fn outcome_of(network: &RunnableNetwork, result: &Result<Message>) -> InvokeOutcome {
    match result {
        Err(e) => InvokeOutcome::Failed(e.to_string()),
        Ok(_) => {
            let held: Vec<_> = network.held().iter().map(NodeRef::id).collect();
            if held.is_empty() {
                InvokeOutcome::Completed
            } else {
                InvokeOutcome::Held(held)
            }
        }
    }
}

/// Splits a topological order into waves: a node's wave is one past the
/// latest wave of its parents within `order` (`seq_of` gives a node's
/// sequence number, for parents outside it). The nodes with their wave,
/// sorted by wave (ties keep the order): one list, however many waves.
fn waves(
    order: crate::network::Ordered,
    seq_of: impl Fn(NodeId) -> Option<u64>,
) -> smallvec::SmallVec<[(usize, NodeRef); 4]> {
    let mut level = crate::node::SmallIdMap::with_capacity(order.len());
    let mut out = smallvec::SmallVec::<[(usize, NodeRef); 4]>::with_capacity(order.len());
    let mut waves = 0;
    // A parent that ran (or was given its output) before every pending
    // node was added stands above all of them. One added later may stand
    // below a pending node — a transcript whose answers were given with
    // `set_output` while the questions before them wait to run — so a
    // node under it waits for every wave before it.
    let oldest = order.iter().map(NodeRef::seq).min().unwrap_or(u64::MAX);
    for node in order {
        let l = node.with_parent_ids(|parents| {
            parents
                .iter()
                .map(|p| match level.get(p) {
                    Some(l) => l + 1,
                    None if seq_of(*p).is_some_and(|s| s > oldest) => waves,
                    None => 0,
                })
                .max()
                .unwrap_or(0)
        });
        level.insert(node.id(), l);
        waves = waves.max(l + 1);
        out.push((l, node));
    }
    // Stable: within a wave, the topological order.
    out.sort_by_key(|(l, _)| *l);
    out
}

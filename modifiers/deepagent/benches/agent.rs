//! What a sub-agent task and a supervisor hop cost on top of a plain tool
//! call, with scripted instant models (so only lc-agent's own work is
//! timed): each case runs 50 turns of its kind in one `invoke`.
//!
//! Run: `cargo bench -p lc-agent-deepagent --bench agent`
//! (per hop: the case's time per turn minus `plain_tool`'s).
#![allow(clippy::unwrap_used, unreachable_pub, missing_docs)] // criterion_group! declares an undocumented pub fn

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use lc_agent::{
    FnTool, HumanNode, NetworkNode, RunnableNetwork, ScriptedChatModel, SystemNode, ToolOutput,
    Turn,
};
use lc_agent_deepagent::{Route, SubAgent, SubAgentModifier, Supervisor};
use serde_json::json;

const TURNS: usize = 50;

/// A case: its name and how to build its network.
type Case = (&'static str, fn() -> RunnableNetwork);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn script(tool: &str, args: impl Fn(usize) -> serde_json::Value) -> ScriptedChatModel {
    let mut turns: Vec<Turn> = (0..TURNS)
        .map(|i| Turn::call(&format!("c{i}"), tool, args(i)))
        .collect();
    turns.push(Turn::text("done"));
    ScriptedChatModel::new(turns)
}

fn echo() -> FnTool {
    FnTool::new("echo", "Echoes.", json!({"type": "object"}), |_, _| async {
        Ok(ToolOutput::ok("echoed"))
    })
}

fn plain() -> RunnableNetwork {
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("main")
        .model("main", script("echo", |i| json!({"i": i})))
        .tool(echo())
        .build();
    let _s = net.enter();
    HumanNode::new("go");
    drop(_s);
    net
}

fn tasks() -> RunnableNetwork {
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("main")
        .model(
            "main",
            script(
                "task",
                |i| json!({"description": format!("task {i}"), "subagent_type": "worker"}),
            ),
        )
        .model("worker", ScriptedChatModel::new(["report"]).cycled())
        .modifier(
            SubAgentModifier::new().subagent(SubAgent::new("worker", "Works").model("worker")),
        )
        .build();
    let _s = net.enter();
    HumanNode::new("go");
    drop(_s);
    net
}

fn supervised() -> RunnableNetwork {
    let route = Route::new("worker", "Works.", || {
        RunnableNetwork::builder()
            .default_node("chat")
            .chat_model("worker")
            .build()
    });
    let supervisor = Supervisor::new("Delegate.")
        .route(route)
        .max_iterations(TURNS + 1)
        .build();
    let net = RunnableNetwork::builder()
        .chat_model("main")
        .model(
            "main",
            script("worker", |i| json!({"prompt": format!("job {i}")})),
        )
        .model("worker", ScriptedChatModel::new(["report"]).cycled())
        .build();
    let _s = net.enter();
    SystemNode::new("You coordinate.");
    HumanNode::new("go");
    NetworkNode::new(supervisor);
    drop(_s);
    net
}

fn hops(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("agent_hops");
    group.sample_size(20);
    group.throughput(Throughput::Elements(TURNS as u64));
    let cases: [Case; 3] = [
        ("plain_tool", plain),
        ("task_round_trip", tasks),
        ("supervisor_hop", supervised),
    ];
    for (name, build) in cases {
        group.bench_function(name, |b| {
            b.iter_batched(
                build,
                |net| {
                    let reply = rt.block_on(net.invoke()).expect("invoke");
                    assert_eq!(reply.text(), "done");
                    net
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, hops);
criterion_main!(benches);

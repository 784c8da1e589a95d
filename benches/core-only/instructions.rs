//! The core in instructions (Callgrind, through gungraun): figures that do
//! not move with the machine's load, so a change's cost is read from one
//! run. Each benchmark counts only its own body; building the network it
//! works on (the setup) is not counted.
//!
//! - `chat_turn`: a turn through the README's tour API (a `HumanNode` in a
//!   scope guard, then `invoke`, a scripted model) on a session that has
//!   1,000 or 10,000 turns already: the cost must stay flat;
//! - `agent_tool_turns`: one question answered after 50 tool-call turns
//!   (`lookup`, in memory) and a final answer: divide by 51 for a turn;
//! - `save_load_10k` / `value_save_load_10k`: a 10,000-node session (1 KB a
//!   node) saved and loaded, beside serde_json's `Value` round trip of the
//!   same document;
//! - `load_10k`: loading it alone (the yardstick of a fork);
//! - `fork_10k_at_half`: a fork at the middle of that session.
//!
//! Run: `cargo bench --bench instructions` (needs Valgrind and
//! `gungraun-runner` of the same version as the `gungraun` crate:
//! `cargo install gungraun-runner --version 0.20.0`). Before/after a
//! change: run it on both commits; gungraun prints the difference against
//! the previous run of each benchmark.
#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)] // the macros declare undocumented items

use std::hint::black_box;

use gungraun::{library_benchmark, library_benchmark_group, main};
use lc_agent::prelude::*;
use lc_agent::ScriptedChatModel;
use support::{agent, big_network, runtime};

#[path = "../support/mod.rs"]
mod support;

/// A session of `turns` answered turns, built as the README's tour builds
/// one, and the runtime that ran it.
fn session(turns: usize) -> (tokio::runtime::Runtime, RunnableNetwork) {
    let rt = runtime();
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("scripted")
        .model("scripted", ScriptedChatModel::new(["Two files."]).cycled())
        .unlimited_steps()
        .build();
    for i in 0..turns {
        {
            let _scope = net.enter();
            HumanNode::new(format!("What files are there? ({i})"));
        }
        rt.block_on(net.invoke()).expect("invoke");
    }
    (rt, net)
}

#[library_benchmark]
#[bench::after_1000(setup = session, args = (1_000,))]
#[bench::after_10000(setup = session, args = (10_000,))]
fn chat_turn(
    (rt, net): (tokio::runtime::Runtime, RunnableNetwork),
) -> (tokio::runtime::Runtime, RunnableNetwork) {
    {
        let _scope = net.enter();
        HumanNode::new("What files are there?");
    }
    let reply = rt.block_on(net.invoke()).expect("invoke");
    black_box(reply);
    (rt, net)
}

/// One question, 50 tool-call turns and a final answer, nothing run yet.
fn fifty_tool_turns() -> (tokio::runtime::Runtime, RunnableNetwork) {
    (runtime(), agent(50))
}

#[library_benchmark]
#[bench::fifty_tool_turns(setup = fifty_tool_turns)]
fn agent_tool_turns(
    (rt, net): (tokio::runtime::Runtime, RunnableNetwork),
) -> (tokio::runtime::Runtime, RunnableNetwork) {
    let reply = rt.block_on(net.invoke()).expect("invoke");
    assert_eq!(reply.text(), "done");
    (rt, net)
}

/// The saved form of 10,000 invoked nodes with ~1 KB of text each.
fn saved_10k() -> String {
    big_network().to_json().expect("save")
}

#[library_benchmark]
#[bench::ten_thousand_nodes(setup = saved_10k)]
fn save_load_10k(saved: String) -> String {
    // A loaded network has no cached node JSON: the save serializes every node.
    let net = RunnableNetwork::from_json(black_box(&saved)).expect("load");
    black_box(net.to_json().expect("save"))
}

#[library_benchmark]
#[bench::ten_thousand_nodes(setup = saved_10k)]
fn load_10k(saved: String) -> RunnableNetwork {
    black_box(RunnableNetwork::from_json(black_box(&saved)).expect("load"))
}

#[library_benchmark]
#[bench::ten_thousand_nodes(setup = saved_10k)]
fn value_save_load_10k(saved: String) -> String {
    let value: serde_json::Value = serde_json::from_str(black_box(&saved)).expect("parse");
    black_box(serde_json::to_string(&value).expect("write"))
}

fn loaded_10k() -> RunnableNetwork {
    RunnableNetwork::from_json(&saved_10k()).expect("load")
}

#[library_benchmark]
#[bench::ten_thousand_nodes(setup = loaded_10k)]
fn fork_10k_at_half(net: RunnableNetwork) -> (RunnableNetwork, RunnableNetwork) {
    let middle = net.nodes()[net.len() / 2].id();
    let fork = net.fork_at(black_box(middle)).expect("fork");
    (net, fork)
}

library_benchmark_group!(name = turns, benchmarks = [chat_turn, agent_tool_turns]);

library_benchmark_group!(
    name = saving,
    benchmarks = [
        save_load_10k,
        load_10k,
        value_save_load_10k,
        fork_10k_at_half
    ]
);

main!(library_benchmark_groups = turns, saving);

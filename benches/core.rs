//! Core benchmarks: `invoke_chain`, `agent_loop`, `json_roundtrip` (with
//! `fork_10k_nodes` beside `load_10k_nodes`: a fork should cost no more
//! than loading), `file_snapshots` (a write-heavy agent turn on a disk
//! workspace with the file tools that keep snapshots, and with the same
//! calls run without them: snapshots should add at most 5 %).
//!
//! Run: `cargo bench --bench core` (all) or `cargo bench --bench core -- invoke_chain`.
//! Every model here is a `ScriptedChatModel` (instant, offline), so the
//! figures measure lc-agent itself. Before the criterion groups run, the
//! bench prints the memory a saved-and-loaded node takes (bytes per node).
//!
//! `invoke_chain`'s throughput (turns a second) must stay about flat from
//! 100 to 10,000 turns: work per turn that grows with the conversation
//! (an estimate re-counting the whole history at every turn did) shows
//! here as a drop of orders of magnitude at 10,000.
#![allow(clippy::unwrap_used, unreachable_pub, missing_docs)] // criterion_group! declares an undocumented pub fn

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use lc_agent::{
    ChatNode, FnTool, HumanNode, RunnableNetwork, ScriptedChatModel, TimeTravelExt, Tool, ToolCall,
    Turn,
};
use lc_agent_filesystem::{run_tool, EditFile, FilesystemBackend, WriteFile};
use serde_json::json;
use support::{agent, big_network, runtime};

mod support;

/// Counts live heap bytes, for the bytes-per-node figure.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
            System.alloc(layout)
        }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe {
            LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
            System.dealloc(ptr, layout)
        }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
            System.realloc(ptr, layout, new_size)
        }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// N turns of human -> chat, built in a scope guard, nothing invoked yet.
fn chain(turns: usize) -> RunnableNetwork {
    let net = RunnableNetwork::builder()
        .chat_model("scripted")
        .model("scripted", ScriptedChatModel::new(["ok"]).cycled())
        .unlimited_steps()
        .build();
    let _scope = net.enter();
    for i in 0..turns {
        HumanNode::new(format!("question {i}"));
        ChatNode::new();
    }
    drop(_scope);
    net
}

fn invoke_chain(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("invoke_chain");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    for turns in [100usize, 1_000, 10_000] {
        group.throughput(Throughput::Elements(turns as u64));
        group.bench_with_input(BenchmarkId::from_parameter(turns), &turns, |b, &turns| {
            b.iter_batched(
                || chain(turns),
                |net| {
                    rt.block_on(net.invoke()).expect("invoke");
                    net
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

fn agent_loop(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("agent_loop");
    group.sample_size(20);
    let turns = 50usize;
    group.throughput(Throughput::Elements(turns as u64));
    group.bench_function("50_tool_turns", |b| {
        b.iter_batched(
            || agent(turns),
            |net| {
                let reply = rt.block_on(net.invoke()).expect("invoke");
                assert_eq!(reply.text(), "done");
                net
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

fn json_roundtrip(c: &mut Criterion) {
    // Built on first use: a run filtered to other benchmarks (e.g.
    // `-- file_snapshots`) does not build and save 10,000 nodes first.
    let built = std::cell::OnceCell::new();
    let network = || {
        built.get_or_init(|| {
            let net = big_network();
            let text = net.to_json().expect("save");
            let value: serde_json::Value = serde_json::from_str(&text).expect("parse");
            (net, text, value)
        })
    };
    let mut group = c.benchmark_group("json_roundtrip");
    group.sample_size(10);
    // A freshly loaded network has no cached node JSON: its first save
    // serializes every node.
    group.bench_function("first_save_10k_nodes", |b| {
        let (_, text, _) = network();
        b.iter_batched(
            || RunnableNetwork::from_json(text).expect("load"),
            |fresh| fresh.to_json().expect("save"),
            BatchSize::PerIteration,
        )
    });
    // Later saves (checkpoints) copy the invoked nodes' cached JSON.
    group.bench_function("repeat_save_10k_nodes", |b| {
        let (net, _, _) = network();
        b.iter(|| net.to_json().expect("save"))
    });
    group.bench_function("load_10k_nodes", |b| {
        let (_, text, _) = network();
        b.iter(|| RunnableNetwork::from_json(text).expect("load"))
    });
    // A fork of the whole session (at its leaf) and of its first half.
    group.bench_function("fork_10k_nodes", |b| {
        let (net, _, _) = network();
        let leaf = net.current_leaf().expect("a leaf").id();
        b.iter(|| net.fork_at(leaf).expect("fork"))
    });
    group.bench_function("fork_10k_nodes_at_half", |b| {
        let (net, _, _) = network();
        let middle = net.nodes()[net.len() / 2].id();
        b.iter(|| net.fork_at(middle).expect("fork"))
    });
    group.bench_function("first_save_then_load_10k_nodes", |b| {
        let (_, text, _) = network();
        b.iter_batched(
            || RunnableNetwork::from_json(text).expect("load"),
            |fresh| RunnableNetwork::from_json(&fresh.to_json().expect("save")).expect("load"),
            BatchSize::PerIteration,
        )
    });
    // The yardstick: serde_json alone on the same document.
    group.bench_function("serde_json_value_save_load", |b| {
        let (_, _, value) = network();
        b.iter(|| {
            let s = serde_json::to_string(value).expect("to_string");
            serde_json::from_str::<serde_json::Value>(&s).expect("from_str")
        })
    });
    group.finish();
}

/// One question answered by `turns` model turns of four file calls each
/// (two files written, ~4 KB each, and two edits of the first file) on a
/// fresh directory, then a final answer; `snapshots`: the file tools
/// (`WriteFile`, `EditFile`) that keep each file's previous content on
/// the session, else the same tools as the model sees them (names,
/// descriptions, schemas) running the calls through `run_tool` (no
/// snapshot), so the two differ by the snapshots alone.
fn writing_agent(turns: usize, snapshots: bool) -> (RunnableNetwork, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let backend = FilesystemBackend::new(dir.path()).expect("the workspace");
    let body = "a line of generated code, about forty bytes\n".repeat(100);
    let mut script: Vec<Turn> = Vec::new();
    for t in 0..turns {
        script.push(Turn::tool_calls([
            ToolCall::new(
                format!("w{t}a"),
                "write_file",
                json!({"file_path": format!("/src/a{t}.rs"), "content": body, "overwrite": true}),
            ),
            ToolCall::new(
                format!("w{t}b"),
                "write_file",
                json!({"file_path": "/src/shared.rs", "content": format!("{t}\n{body}"), "overwrite": true}),
            ),
        ]));
        script.push(Turn::tool_calls([ToolCall::new(
            format!("e{t}"),
            "edit_file",
            json!({"file_path": format!("/src/a{t}.rs"), "old_string": "a line", "new_string": "one line", "replace_all": true}),
        )]));
    }
    script.push(Turn::text("done"));
    let mut builder = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("scripted")
        .model("scripted", ScriptedChatModel::new(script))
        .unlimited_steps();
    if snapshots {
        builder = builder
            .tool(WriteFile::new(backend.clone()))
            .tool(EditFile::new(backend.clone()));
    } else {
        // The same tools as the model sees them (names, descriptions,
        // schemas: a chat turn costs the same), run without snapshots.
        let specs = [
            WriteFile::new(backend.clone()).spec(),
            EditFile::new(backend.clone()).spec(),
        ];
        for (name, spec) in ["write_file", "edit_file"].into_iter().zip(specs) {
            let backend = backend.clone();
            builder = builder.tool(FnTool::new(
                name,
                spec.description,
                spec.parameters,
                move |args, _| {
                    let backend = backend.clone();
                    async move { Ok(run_tool(&backend, name, &args).await.expect("a file tool")) }
                },
            ));
        }
    }
    let net = builder.build();
    let _scope = net.enter();
    HumanNode::new("write the code");
    drop(_scope);
    (net, dir)
}

fn file_snapshots(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("file_snapshots");
    group.sample_size(20);
    let turns = 20usize;
    group.throughput(Throughput::Elements(3 * turns as u64));
    for (name, snapshots) in [
        ("write_heavy_turn_without", false),
        ("write_heavy_turn_with", true),
    ] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || writing_agent(turns, snapshots),
                |(net, dir)| {
                    let reply = rt.block_on(net.invoke()).expect("invoke");
                    assert_eq!(reply.text(), "done");
                    (net, dir)
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

fn report_memory() {
    let text = big_network().to_json().expect("save");
    let before = LIVE.load(Ordering::Relaxed);
    let loaded = RunnableNetwork::from_json(&text).expect("load");
    let after_load = LIVE.load(Ordering::Relaxed);
    let saved = loaded.to_json().expect("save");
    drop(saved);
    let after_save = LIVE.load(Ordering::Relaxed);
    let nodes = loaded.len() as f64;
    // Human nodes hold their ~1 KB text twice (the `text` field and the
    // output message), chat nodes once: ~1.5 KB of payload per node.
    println!(
        "memory: {nodes} loaded nodes take {:.0} heap bytes each ({:.0} with the JSON cached by a save); the saved JSON takes {:.0} bytes per node",
        (after_load - before) as f64 / nodes,
        (after_save - before) as f64 / nodes,
        text.len() as f64 / nodes
    );
    drop(loaded);
}

/// The memory figure is printed unless the run is filtered to benchmarks
/// whose names do not contain "memory" (criterion's filter is the first
/// argument that is not a flag).
fn memory(c: &mut Criterion) {
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    if filter.is_none_or(|f| "memory".contains(f.as_str()) || f.contains("memory")) {
        report_memory();
    }
    let _ = c;
}

criterion_group!(
    benches,
    memory,
    invoke_chain,
    agent_loop,
    json_roundtrip,
    file_snapshots
);
criterion_main!(benches);

//! The per-call overhead of an MCP tool over stdio against the same tool
//! called natively: `read_file` of a small file, once through
//! [`ReadFile`] directly, once through [`McpTool`] to a `FileToolServer`
//! over stdio in a child process (this bench binary, started again with
//! `LC_MCP_BENCH_ROOT` set, serves it). The difference is the MCP cost:
//! JSON-RPC encoding, two pipe hops, the SDK's dispatch.
//!
//! Run: `cargo bench -p lc-agent-deepagent --features mcp --bench mcp`.
#![allow(clippy::unwrap_used, unreachable_pub, missing_docs)] // criterion_group! declares an undocumented pub fn

use std::sync::Arc;

use criterion::{criterion_group, Criterion};
use lc_agent::{RunnableNetwork, Tool, ToolContext};
use lc_agent_deepagent::mcp::{FileToolServer, McpConfig, McpServerConfig, McpTools};
use lc_agent_filesystem::{FilesystemBackend, ReadFile};
use serde_json::json;

const ROOT_ENV: &str = "LC_MCP_BENCH_ROOT";

fn context() -> ToolContext {
    let network = RunnableNetwork::new();
    let node_id = {
        let _scope = network.enter();
        lc_agent::HumanNode::new("bench").id()
    };
    ToolContext {
        network,
        node_id,
        tool_call_id: "bench".into(),
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello\nworld\n").unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let ctx = context();
    let args = json!({"file_path": "/a.txt"});

    let native = ReadFile::new(FilesystemBackend::new(dir.path()).unwrap());
    let mut group = c.benchmark_group("read_file");
    group.bench_function("native", |b| {
        b.iter(|| rt.block_on(native.call(args.clone(), &ctx)).unwrap())
    });

    let exe = std::env::current_exe().unwrap();
    let server = McpServerConfig::stdio(exe.display().to_string(), Vec::<String>::new())
        .with_env(ROOT_ENV, dir.path().display().to_string());
    let mcp = McpTools::new(McpConfig {
        mcp_servers: [("files".to_string(), server)].into_iter().collect(),
    });
    let failures = rt.block_on(mcp.connect());
    assert!(failures.is_empty(), "{failures:?}");
    let tool: Arc<dyn Tool> = mcp
        .tool_list()
        .into_iter()
        .find(|t| t.name() == "read_file")
        .unwrap();
    let out = rt.block_on(tool.call(args.clone(), &ctx)).unwrap();
    assert_eq!(out.content, "     1\thello\n     2\tworld");
    group.bench_function("mcp_stdio", |b| {
        b.iter(|| rt.block_on(tool.call(args.clone(), &ctx)).unwrap())
    });
    group.finish();
    rt.block_on(mcp.disconnect());
}

criterion_group!(benches, bench);

fn main() {
    // Started again by the bench: serve the file tools over stdio.
    if let Ok(root) = std::env::var(ROOT_ENV) {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let server = FileToolServer::new(FilesystemBackend::new(root).unwrap());
        rt.block_on(server.serve_stdio()).unwrap();
        return;
    }
    benches();
    criterion::Criterion::default()
        .configure_from_args()
        .final_summary();
}

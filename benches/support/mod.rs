//! What the core benches share: a runtime, the agent of N tool-call turns,
//! and the 10,000-node session.

use lc_agent::prelude::*;
use lc_agent::{FnTool, ScriptedChatModel, ToolOutput, Turn};
use serde_json::json;

/// A single-threaded runtime, as a CLI turn uses.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// One question, then `turns` tool-call turns (`lookup`, in memory) and a
/// final answer `done`; nothing run yet.
pub fn agent(turns: usize) -> RunnableNetwork {
    let mut script: Vec<Turn> = (0..turns)
        .map(|i| Turn::call(&format!("call-{i}"), "lookup", json!({"key": i})))
        .collect();
    script.push(Turn::text("done"));
    let lookup = FnTool::new(
        "lookup",
        "Looks `key` up in memory.",
        json!({"type": "object", "properties": {"key": {"type": "integer"}}}),
        |args, _| async move { Ok(ToolOutput::ok(format!("value-{}", args["key"]))) },
    );
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("scripted")
        .model("scripted", ScriptedChatModel::new(script))
        .tool(lookup)
        .build();
    let _scope = net.enter();
    HumanNode::new("look everything up");
    drop(_scope);
    net
}

/// 10,000 invoked nodes with ~1 KB of text each.
pub fn big_network() -> RunnableNetwork {
    let rt = runtime();
    let answer = "lorem ipsum dolor sit amet ".repeat(38); // ~1 KB
    let net = RunnableNetwork::builder()
        .chat_model("scripted")
        .model(
            "scripted",
            ScriptedChatModel::new([answer.as_str()]).cycled(),
        )
        .unlimited_steps()
        .build();
    {
        let _scope = net.enter();
        for i in 0..5_000 {
            HumanNode::new(format!("{i}: {answer}"));
            ChatNode::new();
        }
    }
    rt.block_on(net.invoke()).expect("invoke");
    net
}

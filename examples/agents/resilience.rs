//! # Resilience
//!
//! Shows: a blueprint's `[resilience]`: the main model cannot be reached
//! (a closed port), so its step's fallback model answers and the chat
//! node says so (`model_fallback`); a flaky tool marked idempotent is
//! called again after a backoff (`tool_retries` on its node); a third call
//! of a tool limited to two per run gets a result the model reads instead
//! of running.
//!
//! Needs: nothing; the fallback is a `ScriptedChatModel` that replays
//! fixed turns (the unreachable main model is a real OpenAI-compatible
//! client aimed at a port nothing listens on).
//!
//! Run: `cargo run --example resilience`

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use lc_agent::{
    ChatModel, FnTool, HumanNode, Message, OpenAiChatModel, ScriptedChatModel, ToolOutput, Turn,
};
use lc_agent_deepagent::AgentSpec;
use serde_json::json;

const BLUEPRINT: &str = r#"
[models.main]
model = "main-model"
[models.backup]
model = "backup-model"

[resilience.fallbacks]
chat = ["backup"]
[resilience.tool_retry]
lookup = { attempts = 3, backoff_ms = 50 }
[resilience.call_limits.tools]
lookup = 2
"#;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let spec = AgentSpec::from_toml(BLUEPRINT)?;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")?;
    let unreachable = OpenAiChatModel::builder()
        .model("main-model")
        .base_url(format!("http://{}/v1", closed.local_addr()?))
        .max_retries(0)
        .build()?;
    drop(closed);
    let backup = ScriptedChatModel::new([
        Turn::call("c1", "lookup", json!({"word": "tide"})),
        Turn::call("c2", "lookup", json!({"word": "ebb"})),
        Turn::call("c3", "lookup", json!({"word": "neap"})),
        Turn::text("Two words looked up; the third was over the limit."),
    ]);
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let lookup = FnTool::new(
        "lookup",
        "Looks a word up.",
        json!({"type": "object", "properties": {"word": {"type": "string"}}}),
        move |_args, _ctx| {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            async move {
                Ok(if n == 0 {
                    ToolOutput::error("the dictionary is busy")
                } else {
                    ToolOutput::ok(format!("meaning #{n}"))
                })
            }
        },
    );
    let net = spec
        .builder(|name, _| {
            Ok(match name {
                "main" => Arc::new(unreachable.clone()) as Arc<dyn ChatModel>,
                _ => Arc::new(backup.clone()),
            })
        })?
        .tool(lookup)
        .build()?;
    {
        let _s = net.enter();
        HumanNode::new("Look up tide, ebb and neap.");
    }
    let answer = net.invoke().await?;
    println!("answer: {}", answer.text());
    for node in net.nodes() {
        if let Some(fallback) = node.metadata_value("model_fallback") {
            println!("{} node: {fallback}", node.kind());
            break;
        }
    }
    for node in net.nodes() {
        if let Some(Message::Tool { content, .. }) = node.output().as_deref() {
            println!("tool result: {content}");
            if let Some(retries) = node.metadata_value("tool_retries") {
                println!("  after failed attempts: {retries}");
            }
        }
    }
    println!("lookup ran {} times", calls.load(Ordering::SeqCst));
    Ok(())
}

//! # MCP: a network uses tools from an MCP server
//!
//! Shows: the file tools served over MCP ([`FileToolServer`], what
//! `lc-agent mcp` runs) on a loopback HTTP port with a bearer token, and a
//! network that reaches them through [`McpTools`] — configured the way
//! desktop MCP clients write it (`mcpServers`, the token a `${VAR}`
//! reference, never written down). The scripted model greps, edits and
//! reads a file in a temporary directory through MCP; every result,
//! errors included (a path escape), is what the model reads.
//!
//! Needs: nothing (offline, `ScriptedChatModel`, the server in this
//! process). With an argument, the MCP server is that program over stdio
//! instead, e.g. the built CLI: `cargo build -p lc-agent-cli` then
//! `cargo run --example mcp -- target/debug/lc-agent` (it runs
//! `lc-agent mcp --root <tmp>`).
//!
//! Run: `cargo run --example mcp`

use std::process::ExitCode;

use lc_agent::{HumanNode, Message, RunnableNetwork, ScriptedChatModel, Tool, Turn};
use lc_agent_deepagent::mcp::{FileToolServer, McpConfig, McpTools};
use lc_agent_filesystem::FilesystemBackend;
use serde_json::json;

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("greeting.txt"),
        "hello, world\nTODO: be nicer\n",
    )?;
    let root = dir.path().display().to_string();

    let config = match std::env::args().nth(1) {
        Some(program) => {
            println!("MCP server: `{program} mcp --root {root}` over stdio");
            McpConfig::from_json(
                &json!({"mcpServers": {"files": {"command": program, "args": ["mcp", "--root", root]}}})
                    .to_string(),
            )?
        }
        None => {
            // The server, in this process: loopback HTTP with a bearer token.
            let token = "example-token";
            // SAFETY: set at start-up, before any task that reads the environment runs.
            unsafe { std::env::set_var("FILES_TOKEN", token) };
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let url = format!("http://{}/mcp", listener.local_addr()?);
            let server = FileToolServer::new(FilesystemBackend::new(dir.path())?);
            tokio::spawn(server.serve_http(listener, Some(token.into()), std::future::pending()));
            println!("MCP server: {url} (streamable HTTP, bearer token)");
            McpConfig::from_json(
                &json!({"mcpServers": {"files": {
                    "url": url, "headers": {"Authorization": "Bearer ${FILES_TOKEN}"}}}})
                .to_string(),
            )?
        }
    };

    let mcp = McpTools::new(config);
    if let Some(failure) = mcp.connect().await.into_iter().next() {
        return Err(failure.into());
    }
    let names: Vec<String> = mcp
        .tool_list()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    println!("tools: {}", names.join(", "));

    println!("(offline: a ScriptedChatModel replays the model's turns)\n");
    let model = ScriptedChatModel::new([
        Turn::call(
            "c1",
            "grep",
            json!({"pattern": "TODO", "output_mode": "content"}),
        ),
        Turn::call(
            "c2",
            "edit_file",
            json!({"file_path": "/greeting.txt", "old_string": "hello, world", "new_string": "Hello, dear world!"}),
        ),
        Turn::call("c3", "read_file", json!({"file_path": "/../etc/passwd"})),
        Turn::call("c4", "read_file", json!({"file_path": "/greeting.txt"})),
        Turn::text("The greeting is friendlier now."),
    ]);
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("scripted")
        .model("scripted", model)
        .modifier(mcp.clone())
        .build();
    {
        let _scope = net.enter();
        HumanNode::new("Make the greeting friendlier.");
    }
    let reply = net.invoke().await?;
    for node in net.nodes() {
        match node.output().as_deref() {
            Some(Message::Ai { tool_calls, .. }) => {
                for call in tool_calls {
                    println!("> {} {}", call.name, call.arguments);
                }
            }
            Some(Message::Tool { content, .. }) => println!("{content}\n"),
            _ => {}
        }
    }
    println!("answer: {}", reply.text());
    println!(
        "on disk: {:?}",
        std::fs::read_to_string(dir.path().join("greeting.txt"))?
    );
    mcp.disconnect().await;
    Ok(())
}

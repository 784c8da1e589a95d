//! # Quickstart: an agent conversation with file tools, drawn, saved and reloaded
//!
//! Shows: building a network in a scope guard, a tool the model calls
//! (`word_count`), the chat loop and the tool loop, a second turn that
//! reuses every cached output, the file tools of the `FilesystemModifier`
//! (a file written, grepped and read back, kept in the session's own
//! `files`), the Mermaid drawing, and the session saved in the embedded
//! session list (`JsonNetworkList`, under `$LC_AGENT_HOME/sessions` or
//! `~/.lc-agent/sessions`, where `lc-agent sessions list` finds it) and
//! loaded back byte for byte, files included. The session is saved even
//! when a turn fails or stops at the step limit.
//!
//! Needs: nothing. By default it runs offline with `ScriptedChatModel`,
//! which replays fixed answers (and says so). With `OPENAI_BASE_URL` (a
//! local server) or `OPENAI_API_KEY` (OpenAI) set it talks to a real
//! OpenAI-compatible server instead: the model is `OPENAI_MODEL` (required
//! for a server other than OpenAI's; `gpt-4o-mini` on OpenAI).
//!
//! Run: `cargo run --example quickstart`

use std::process::ExitCode;
use std::sync::Arc;

use lc_agent::{
    Attachments, ChatModel, FnTool, HumanNode, JsonNetworkList, NetworkList, OpenAiChatModel,
    RunnableNetwork, ScriptedChatModel, SystemNode, ToolCall, ToolError, ToolNode, ToolOutput,
    Turn,
};
use lc_agent_filesystem::{FilesystemModifier, StateBackend};
use serde_json::json;

fn word_count_tool() -> FnTool {
    FnTool::new(
        "word_count",
        "Counts the words in `text` (split on whitespace) and returns the number.",
        json!({
            "type": "object",
            "properties": {"text": {"type": "string", "description": "The text to count."}},
            "required": ["text"]
        }),
        |args, _ctx| async move {
            let text = args["text"]
                .as_str()
                .ok_or_else(|| ToolError::InvalidArguments {
                    tool: "word_count".into(),
                    reason: "`text` must be a string".into(),
                })?;
            Ok(ToolOutput::ok(text.split_whitespace().count().to_string()))
        },
    )
}

fn choose_model() -> Result<(Arc<dyn ChatModel>, String), Box<dyn std::error::Error>> {
    let online = std::env::var_os("OPENAI_API_KEY").is_some()
        || std::env::var_os("OPENAI_BASE_URL").is_some();
    if online {
        // OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL, as everywhere.
        let model = OpenAiChatModel::from_env()?;
        let about = format!(
            "real model `{}` at {}",
            model.model_name(),
            model.base_url()
        );
        return Ok((Arc::new(model), about));
    }
    let scripted = ScriptedChatModel::new([
        Turn::tool_calls([
            ToolCall::new(
                "call-1",
                "word_count",
                json!({"text": "the quick brown fox"}),
            ),
            ToolCall::new(
                "call-2",
                "word_count",
                json!({"text": "jumps over the lazy dog"}),
            ),
        ]),
        Turn::text("The first phrase has 4 words and the second has 5."),
        Turn::text("Together that makes 9 words."),
        Turn::call(
            "call-3",
            "write_file",
            json!({"file_path": "/notes.md", "content": "# Word counts\n- the quick brown fox: 4\n- jumps over the lazy dog: 5\n- total: 9\n"}),
        ),
        Turn::call(
            "call-4",
            "grep",
            json!({"pattern": "total", "output_mode": "content"}),
        ),
        Turn::call("call-5", "read_file", json!({"file_path": "/notes.md"})),
        Turn::text("Saved the counts to /notes.md (total: 9) and read them back."),
    ]);
    let about = "ScriptedChatModel (offline: replays fixed answers; for a real model set \
                 OPENAI_BASE_URL and OPENAI_MODEL, plus OPENAI_API_KEY if the server needs one)"
        .to_string();
    Ok((Arc::new(scripted), about))
}

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
    let (model, about) = choose_model()?;
    println!("model: {about}\n");

    let net = RunnableNetwork::builder()
        .name("quickstart")
        .default_node("chat")
        .chat_model("main")
        .tool(word_count_tool())
        // File tools over the session's own files (saved with the network).
        .modifier(FilesystemModifier::new(StateBackend::factory()))
        .build();
    net.register_model_shared("main", model);

    // The session is saved whatever happens (a failed turn, the step
    // limit): the graph stays valid, and `lc-agent sessions list` finds it.
    let sessions = JsonNetworkList::open_default();
    let outcome = converse(&net).await;
    let info = sessions.save(&net).await?;
    println!(
        "\nsaved session {} ({} nodes, {} bytes) under {}\n(see it with `cargo run -p lc-agent-cli -- sessions show {}`)",
        info.id,
        info.node_count,
        info.bytes,
        sessions.root().display(),
        info.id,
    );
    outcome?;

    let loaded = sessions.load(net.id()).await?;
    let identical = loaded.to_json()? == net.to_json()?;
    let files_kept = loaded.with_files(|files| files.contains_key("/notes.md"));
    println!(
        "loaded back: {} nodes, files kept: {files_kept}, re-saved JSON identical: {identical}",
        loaded.len()
    );
    if !identical || !files_kept {
        return Err("the reloaded network differs from the saved one".into());
    }
    Ok(())
}

/// Three turns: a tool, a follow-up from cached outputs, the file tools.
async fn converse(net: &RunnableNetwork) -> Result<(), Box<dyn std::error::Error>> {
    // Turn 1: nodes created inside the scope attach to `net`, in a chain.
    {
        let _scope = net.enter();
        SystemNode::new("You are concise. Use the word_count tool to count words.");
        HumanNode::new(
            "How many words are in 'the quick brown fox' and in 'jumps over the lazy dog'?",
        );
    }
    let reply = net.invoke().await?;
    println!("turn 1: {}", reply.text());

    // Turn 2: only the new nodes run; earlier outputs are reused.
    {
        let _scope = net.enter();
        HumanNode::new("And both together?");
    }
    let reply = net.invoke().await?;
    println!("turn 2: {}", reply.text());

    // Turn 3: the file tools write, search and read the session's files.
    {
        let _scope = net.enter();
        HumanNode::new(
            "Write the counts to /notes.md, find the total with grep, and read the file back.",
        );
    }
    let reply = net.invoke().await?;
    println!("turn 3: {}", reply.text());
    for node in net.nodes() {
        if let (Some(tool), Some(result)) = (node.downcast::<ToolNode>(), node.output()) {
            let first = result.text().lines().next().unwrap_or("");
            println!("  {} -> {first}", tool.tool_call.name);
        }
    }
    let notes = net.with_files(|files| files.get("/notes.md").map(|f| f.text()));
    let notes = notes.ok_or("the agent did not write /notes.md")?;
    println!("/notes.md:\n{notes}");

    println!("{}", net.to_mermaid());

    Ok(())
}

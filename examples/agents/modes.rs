//! # Permission modes: plan, default, accept-edits, bypass
//!
//! Shows the four permission modes of a session
//! (`lc_agent_deepagent::PermissionMode`) on one agent with a shell in a
//! temporary directory:
//! - `plan`: a read runs, an edit is refused (the model reads why), the
//!   model hands its plan over with `exit_plan_mode`, which waits for the
//!   user; approved, the session switches to `default` and the edit runs;
//! - `default`: `execute` waits for approval (the shell's rule);
//! - `accept-edits`: a write runs without asking, `execute` still waits;
//! - `bypass`: nothing waits.
//!
//! The mode is in the session's metadata: it is saved and loaded with it.
//!
//! Needs: nothing (a scripted, offline model; files in a temporary
//! directory; the shell runs with `SandboxMode::Full` so bubblewrap is not
//! needed — see `cargo run --example sandbox` for the sandbox).
//!
//! Run: `cargo run --example modes`

use lc_agent::{HumanNode, RunnableNetwork, ScriptedChatModel, ToolCall, Turn};
use lc_agent_deepagent::{
    decide, pending_approvals, permission_mode, set_permission_mode, Decision, DeepAgent,
    PermissionMode, Workspace,
};
use lc_agent_filesystem::SandboxMode;
use serde_json::json;

fn agent(
    model: ScriptedChatModel,
    dir: &std::path::Path,
) -> Result<RunnableNetwork, Box<dyn std::error::Error>> {
    let workspace = Workspace::directory(dir)
        .shell(true)
        .sandbox(SandboxMode::Full);
    Ok(DeepAgent::builder()
        .model(model)
        .workspace(&workspace)?
        .build()?)
}

fn ask(net: &RunnableNetwork, text: &str) {
    let _scope = net.enter();
    HumanNode::new(text);
}

fn waiting(net: &RunnableNetwork) -> Vec<String> {
    pending_approvals(net)
        .into_iter()
        .map(|p| p.tool_call.name)
        .collect()
}

/// A write and a command in one turn, then an answer.
fn write_and_run() -> ScriptedChatModel {
    ScriptedChatModel::new([
        Turn::tool_calls([
            ToolCall::new(
                "w",
                "write_file",
                json!({"file_path": "/a.txt", "content": "a\n"}),
            ),
            ToolCall::new("e", "execute", json!({"command": "echo ran > ran.txt"})),
        ]),
        Turn::text("Done."),
    ])
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("(offline: a ScriptedChatModel replays fixed answers)");

    // plan: read, refused edit, the plan approved, then the edit.
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("notes.md"), "draft\n")?;
    let model = ScriptedChatModel::new([
        Turn::tool_calls([
            ToolCall::new("r", "read_file", json!({"file_path": "/notes.md"})),
            ToolCall::new(
                "w",
                "edit_file",
                json!({"file_path": "/notes.md", "old_string": "draft", "new_string": "final"}),
            ),
        ]),
        Turn::call(
            "p",
            "exit_plan_mode",
            json!({"plan": "1. Replace the draft in notes.md with the final text."}),
        ),
        Turn::call(
            "w2",
            "edit_file",
            json!({"file_path": "/notes.md", "old_string": "draft", "new_string": "final"}),
        ),
        Turn::text("notes.md is final."),
    ]);
    let net = agent(model, dir.path())?;
    set_permission_mode(&net, PermissionMode::Plan);
    ask(&net, "Finish the notes.");
    net.invoke().await?;
    let refused = net
        .nodes()
        .into_iter()
        .filter_map(|n| n.output())
        .map(|m| m.text().to_string())
        .find(|t| t.contains("plan mode"))
        .unwrap_or_default();
    println!(
        "plan: the edit was refused: {}",
        &refused[..70.min(refused.len())]
    );
    println!(
        "plan: notes.md still says {:?}; waiting for you: {:?}",
        std::fs::read_to_string(dir.path().join("notes.md"))?,
        waiting(&net)
    );
    // Saved and loaded, the session is still in plan mode.
    let loaded = RunnableNetwork::from_json(&net.to_json()?)?;
    println!("plan: after a save and load: {}", permission_mode(&loaded));
    let plan = &pending_approvals(&net)[0];
    decide(&net, plan.node_id, Decision::Approve)?;
    let answer = net.invoke().await?;
    println!(
        "plan approved: mode now {}, notes.md says {:?}, the model: {}",
        permission_mode(&net),
        std::fs::read_to_string(dir.path().join("notes.md"))?,
        answer.text()
    );

    for mode in [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Bypass,
    ] {
        let dir = tempfile::tempdir()?;
        let net = agent(write_and_run(), dir.path())?;
        set_permission_mode(&net, mode);
        ask(&net, "Write a.txt and run the command.");
        net.invoke().await?;
        println!(
            "{mode}: a.txt written: {}, the command ran: {}, waiting for you: {:?}",
            dir.path().join("a.txt").exists(),
            dir.path().join("ran.txt").exists(),
            waiting(&net)
        );
    }
    Ok(())
}

//! # Hooks: the user's commands decide about the agent's tool calls
//!
//! Shows: hooks in the Claude Code settings format (`{"hooks":
//! {"PreToolUse": [{"matcher": ..., "hooks": [{"type": "command", ...}]}]}}`)
//! on a deep agent: a `PreToolUse` hook refuses writes under `/secrets`
//! (exit code 2, its stderr is the reason the model reads; the session
//! goes on), another only logs each call to a file (it decides nothing),
//! a `PostToolUse` hook adds a note for the model with a JSON answer, and
//! a `Stop` hook sends the agent back once with an instruction. Every
//! hook run is reported as a `NetworkEvent::HookRan`, printed here.
//!
//! Needs: nothing (a scripted model stands in for a real one; `sh`).
//! Offline.
//!
//! Run: `cargo run --example hooks`

use lc_agent::{Events, HumanNode, NetworkEvent, ScriptedChatModel, ToolCall, Turn};
use lc_agent_deepagent::{DeepAgent, HookSettings, HooksModifier};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let log = dir.path().join("calls.jsonl");
    // What a user keeps in `.lc-agent/settings.json` (or passes with
    // `lc-agent chat --settings FILE`).
    let settings = json!({"hooks": {
        "PreToolUse": [{"matcher": "write_file|edit_file", "hooks": [
            {"type": "command", "timeout": 10,
             "command": "grep -q '\"file_path\":\"/secrets/' && { echo 'files under /secrets are off limits' >&2; exit 2; }; exit 0"},
            {"type": "command", "command": format!("cat >> {0}; echo >> {0}", log.display())}
        ]}],
        "PostToolUse": [{"matcher": "write_file", "hooks": [{"type": "command",
            "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PostToolUse\", \"additionalContext\": \"the notes are read by the whole team\"}}'"}]}],
        "Stop": [{"hooks": [{"type": "command",
            "command": "grep -q '\"stop_hook_active\":true' && exit 0; echo '{\"decision\": \"block\", \"reason\": \"Add a line saying when the notes were written.\"}'"}]}]
    }});
    let path = dir.path().join("settings.json");
    std::fs::write(&path, settings.to_string())?;
    let hooks = HooksModifier::new(HookSettings::from_file(&path)?, dir.path());

    // The scripted model: a forbidden write, an allowed one, an answer,
    // then (sent back by the Stop hook) one more edit and its answer.
    let model = ScriptedChatModel::new([
        Turn::tool_calls([ToolCall::new(
            "c1",
            "write_file",
            json!({"file_path": "/secrets/token.md", "content": "t0k3n"}),
        )]),
        Turn::tool_calls([ToolCall::new(
            "c2",
            "write_file",
            json!({"file_path": "/notes.md", "content": "Notes\n"}),
        )]),
        Turn::text("I could not write /secrets/token.md (a hook refused it); I wrote /notes.md."),
        Turn::tool_calls([ToolCall::new(
            "c3",
            "edit_file",
            json!({"file_path": "/notes.md", "old_string": "Notes\n", "new_string": "Notes (written today)\n"}),
        )]),
        Turn::text("Done: /notes.md says when it was written."),
    ]);
    let net = DeepAgent::builder()
        .model(model)
        .modifier_shared(std::sync::Arc::new(hooks))
        .build()?;
    net.on_event(|event| {
        if let NetworkEvent::HookRan {
            event,
            outcome,
            message,
            ..
        } = event
        {
            println!("hook {event}: {outcome} {message}");
        }
    });
    {
        let _scope = net.enter();
        HumanNode::new("Save the token and write the notes.");
    }
    let answer = net.invoke().await?;
    println!("\nanswer: {}", answer.text());

    let files = net.files();
    assert!(
        !files.contains_key("/secrets/token.md"),
        "the hook refused it"
    );
    let notes = files
        .get("/notes.md")
        .map(|f| f.content.join("\n"))
        .unwrap_or_default();
    println!("/notes.md: {notes:?}");
    let calls = std::fs::read_to_string(&log)?;
    println!(
        "the logging hook saw {} calls",
        calls.lines().filter(|l| !l.trim().is_empty()).count()
    );
    let refused = net
        .nodes()
        .into_iter()
        .filter_map(|n| n.output())
        .find(|m| m.text().contains("off limits"))
        .map(|m| m.text().to_string())
        .unwrap_or_default();
    println!("what the model read for the refused call: {refused}");
    Ok(())
}

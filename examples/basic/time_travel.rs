//! # Time travel: fork, branch, edit and re-run, rewind files
//!
//! Shows: an agent (scripted, offline) writes and edits a file in a
//! directory workspace over two turns; `fork_at` makes a new session from
//! the first answer (ids, outputs and files as they were there, and
//! `forked_from`); `edit_at` says the second message differently and runs
//! only the new turn (the old answer stays as a branch); `rewind_files`
//! puts the directory back as it was after the first turn, and a file the
//! user changed meanwhile is reported, not overwritten; `rewind_to` sends
//! the next message below the first answer.
//!
//! Needs: nothing (a `ScriptedChatModel` replays fixed answers; a temp
//! directory is the workspace).
//!
//! Run: `cargo run --example time_travel`

use lc_agent::{
    Attachments, HumanNode, RunnableNetwork, ScriptedChatModel, TimeTravelExt, ToolCall, Turn,
};
use lc_agent_filesystem::{rewind_files, FilesystemBackend, FilesystemModifier};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let workspace = FilesystemBackend::new(dir.path())?;
    println!("(offline: a scripted model replays fixed answers)");
    let model = ScriptedChatModel::new([
        Turn::tool_calls([
            ToolCall::new(
                "c1",
                "write_file",
                json!({"file_path": "/plan.md", "content": "step 1\n"}),
            ),
            ToolCall::new(
                "c2",
                "write_file",
                json!({"file_path": "/notes.md", "content": "mine\n"}),
            ),
        ]),
        Turn::text("Wrote the plan."),
        Turn::call(
            "c3",
            "edit_file",
            json!({"file_path": "/plan.md", "old_string": "step 1", "new_string": "step 1\nstep 2"}),
        ),
        Turn::text("Added step 2."),
        Turn::text("Step 2 it is, said differently."),
        Turn::text("Back at the first answer."),
    ]);
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("scripted")
        .model("scripted", model.clone())
        .build();
    net.add_modifier(FilesystemModifier::new(workspace.clone()))?;

    let say = |text: &str| {
        let _scope = net.enter();
        HumanNode::new(text)
    };
    say("Write a plan");
    net.invoke().await?;
    let first_answer = net.current_leaf().ok_or("no answer")?;
    let second = say("Add a step");
    net.invoke().await?;
    let read = |p: &str| std::fs::read_to_string(dir.path().join(p)).unwrap_or_default();
    println!("after two turns, plan.md: {:?}", read("plan.md"));

    // A fork: the first turn only, a session of its own.
    let fork = net.fork_at(first_answer.id())?;
    println!(
        "fork {} has {} nodes, forked_from = {}",
        fork.id(),
        fork.len(),
        fork.metadata_value("forked_from").unwrap_or_default()
    );

    // Edit the second message and run from there: one model call.
    let calls = model.calls();
    net.edit_at(second.id(), "Add a step, please")?;
    let reply = net.invoke().await?;
    println!(
        "edited turn answered {:?} with {} model call(s); {} messages now branch below the first answer",
        reply.text(),
        model.calls() - calls,
        net.children(first_answer.id()).len()
    );

    // Files: back to the first turn.
    let report = rewind_files(&net, &workspace, Some(first_answer.id())).await?;
    println!(
        "rewind files to the first turn: restored {:?}; plan.md: {:?}",
        report.restored,
        read("plan.md")
    );
    // The user edits plan.md; a rewind to before everything removes what
    // the agent made but keeps the user's file, and says so.
    std::fs::write(dir.path().join("plan.md"), "the user's plan\n")?;
    let report = rewind_files(&net, &workspace, None).await?;
    println!(
        "rewind files to the start: restored {:?}, changed outside {:?}; plan.md: {:?}",
        report.restored,
        report.changed_outside,
        read("plan.md")
    );

    // Conversation: the next message goes below the first answer.
    net.rewind_to(Some(first_answer.id()))?;
    let again = say("Let us start over from here");
    net.invoke().await?;
    assert_eq!(again.parents(), [first_answer.id()]);
    println!(
        "conversation rewound: {} messages in the branch",
        net.history().len()
    );
    Ok(())
}

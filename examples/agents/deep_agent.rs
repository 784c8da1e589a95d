//! # A deep agent: a plan, a sub-agent, an approval, model routing
//!
//! Shows: the `DeepAgent` preset, which attaches all of these to one
//! network (and again to a loaded session): `TodoListModifier` (the model
//! plans with `write_todos`),
//! `SubAgentModifier` (a `task` runs as an isolated sub-network in the
//! graph, on its own model, with only the tools of its allow-list: its
//! attempt to write a file is refused, it reads instead),
//! `ApprovalModifier` (a `write_file` waits for a person: the run returns,
//! the session is saved, reloaded as another process would, approved, and
//! finished), all over the session's own files.
//!
//! Needs: nothing; it runs offline with `ScriptedChatModel`s that replay
//! fixed answers (a stand-in for real models).
//!
//! Run: `cargo run --example deep_agent`

use lc_agent::{HumanNode, NetworkNode, RunnableNetwork, ScriptedChatModel, ToolCall, Turn};
use lc_agent_deepagent::{
    decide, pending_approvals, todos_of, Decision, Decisions, DeepAgent, DeepAgentBuilder, SubAgent,
};
use serde_json::json;

/// The agent: models, sub-agent, approval and route. The same
/// description builds a new session and re-attaches everything to a loaded
/// one (models, tools and modifiers are never saved).
fn agent(main: &ScriptedChatModel, researcher: &ScriptedChatModel) -> DeepAgentBuilder {
    DeepAgent::builder()
        .name("deep agent")
        .model(main.clone())
        .model_named("small", researcher.clone())
        .instructions("You answer questions about the team's notes.")
        .subagent(
            SubAgent::new("researcher", "Finds facts in the notes.")
                .instructions("You read the notes and report facts, briefly.")
                .model("small")
                // Offered only these; a call of any other tool is refused.
                .allow_tools(["read_file", "grep"]),
        )
        .interrupt_on("write_file", Decisions::approve_or_reject())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("models: ScriptedChatModel (offline: replays fixed answers)\n");
    let main_model = ScriptedChatModel::new([
        Turn::call(
            "t1",
            "write_todos",
            json!({"todos": [
                {"content": "Find the release date", "status": "in_progress"},
                {"content": "Write /summary.md", "status": "pending"}
            ]}),
        ),
        Turn::call(
            "t2",
            "task",
            json!({"description": "Read /notes.md and report the release date.", "subagent_type": "researcher"}),
        ),
        Turn::tool_calls([ToolCall::new(
            "t3",
            "write_file",
            json!({"file_path": "/summary.md", "content": "Release: 2026-12-01\n"}),
        )]),
        Turn::call(
            "t4",
            "write_todos",
            json!({"todos": [
                {"content": "Find the release date", "status": "completed"},
                {"content": "Write /summary.md", "status": "completed"}
            ]}),
        ),
        Turn::text("The release is on 2026-12-01; /summary.md says so."),
    ]);
    let researcher = ScriptedChatModel::new([
        Turn::call(
            "r0",
            "write_file",
            json!({"file_path": "/notes.md", "content": "overwritten"}),
        ),
        Turn::call("r1", "read_file", json!({"file_path": "/notes.md"})),
        Turn::text("The notes give 2026-12-01 as the release date."),
    ]);

    let net = agent(&main_model, &researcher).build()?;
    net.with_files_mut(|files| {
        files.insert(
            "/notes.md".into(),
            lc_agent::FileData::new("Team notes\nrelease: 2026-12-01\n"),
        );
    });
    {
        let _s = net.enter();
        HumanNode::new("When is the release? Write it to /summary.md.");
    }

    // The run stops at the write: it waits for a person.
    net.invoke().await?;
    let pending = pending_approvals(&net);
    println!(
        "waiting for approval: {} {}",
        pending[0].tool_call.name, pending[0].tool_call.arguments
    );
    println!(
        "plan so far: {:?}",
        todos_of(&net)
            .iter()
            .map(|t| (&t.content, t.status))
            .collect::<Vec<_>>()
    );
    let task = net
        .nodes()
        .into_iter()
        .find_map(|n| n.downcast::<NetworkNode>().map(|s| s.network().clone()))
        .ok_or("the task did not run")?;
    println!(
        "the sub-agent's own graph has {} nodes (saved inside the session)",
        task.len()
    );
    let refused = task
        .nodes()
        .into_iter()
        .filter_map(|n| n.output())
        .find(|m| m.text().contains("may not call"))
        .ok_or("the sub-agent's write was not refused")?;
    println!("the sub-agent's write_file: {}", refused.text());

    // Another process: load the saved session, attach the agent, approve.
    let saved = net.to_json()?;
    let resumed = RunnableNetwork::from_json(&saved)?;
    agent(&main_model, &researcher).attach(&resumed)?;
    let pending = pending_approvals(&resumed);
    decide(&resumed, pending[0].node_id, Decision::Approve)?;
    let reply = resumed.invoke().await?;
    println!("\nanswer: {}", reply.text());
    println!("/summary.md: {:?}", resumed.files()["/summary.md"].text());
    println!(
        "plan: {:?}",
        todos_of(&resumed)
            .iter()
            .map(|t| (&t.content, t.status))
            .collect::<Vec<_>>()
    );
    Ok(())
}

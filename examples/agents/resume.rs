//! # Resume: a saved session rebuilds the same agent, from its blueprint
//!
//! Shows how an agent is composed (`lc_agent_deepagent::Blueprint`): a
//! caller's blueprint and overrides (here a directory workspace with a
//! shell, as `lc-agent run --root DIR --shell` gives) become the session's
//! stored blueprint; a second "process" loads the session from its
//! `ListConfig` and `Blueprint::resolve` rebuilds the same agent from it —
//! except what the workspace may reach: a session never turns a shell on
//! by itself (it could have been imported), so the stored shell is
//! narrowed and said, and the caller names the workspace with its shell
//! again, as `lc-agent chat --session ID --root DIR --shell` does (the
//! model writes into the same directory, and `execute` still waits for
//! approval); an override on resume replaces the stored setting and says
//! so.
//!
//! Needs: nothing (a scripted, offline model; files in a temporary
//! directory).
//!
//! Run: `cargo run --example resume`

use std::sync::Arc;

use lc_agent::{ChatModel, HumanNode, ListConfig, ScriptedChatModel, Turn};
use lc_agent_deepagent::{pending_approvals, AgentContext, Blueprint, Overrides, Workspace};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("(offline: a ScriptedChatModel replays fixed answers)");
    let dir = tempfile::tempdir()?;
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work)?;
    let sessions = ListConfig::json(dir.path().join("sessions"));
    let list = sessions.open()?.user("default")?;
    let context = AgentContext::new(sessions.clone(), "default");

    // First process: the caller's flags become the session's blueprint.
    let model = ScriptedChatModel::new([
        Turn::call(
            "w1",
            "write_file",
            json!({"file_path": "/notes.txt", "content": "first run\n"}),
        ),
        Turn::text("Wrote /notes.txt."),
    ]);
    let overrides = Overrides {
        workspace: Some(Workspace::directory(&work).shell(true)),
        ..Overrides::default()
    };
    let blueprint = Blueprint::resolve(None, None, &overrides)?.main_model_or(|| "scripted".into());
    let main: Arc<dyn ChatModel> = Arc::new(model);
    let agent = blueprint.builder(|_, _| Ok(main.clone()), &context)?;
    let net = agent.build()?;
    blueprint.spec.store_in(&net)?;
    {
        let _scope = net.enter();
        HumanNode::new("Start the notes.");
    }
    println!("first run: {}", net.invoke().await?.text());
    list.save(&net).await?;

    // Second process: only the session id. The stored blueprint wins, but
    // its shell is the caller's to give.
    let loaded = list.load(net.id()).await?;
    let bare = Blueprint::resolve(Some(&loaded), None, &Overrides::default())?;
    for said in &bare.narrowed {
        println!("narrowed: {said}");
    }
    let again = Overrides {
        workspace: Some(Workspace::directory(&work).shell(true)),
        ..Overrides::default()
    };
    let resumed = Blueprint::resolve(Some(&loaded), None, &again)?;
    println!("workspace on resume: {}", resumed.spec.backend.describe());
    let model = ScriptedChatModel::new([
        Turn::call("x1", "execute", json!({"command": "ls"})),
        Turn::text("Listed."),
    ]);
    let main: Arc<dyn ChatModel> = Arc::new(model);
    resumed
        .builder(|_, _| Ok(main.clone()), &context)?
        .attach(&loaded)?;
    {
        let _scope = loaded.enter();
        HumanNode::new("What is there?");
    }
    loaded.invoke().await?;
    for pending in pending_approvals(&loaded) {
        println!(
            "waits for approval: {} {}",
            pending.tool_call.name, pending.tool_call.arguments
        );
    }
    println!(
        "the file is on disk: {:?}",
        std::fs::read_to_string(work.join("notes.txt"))?
    );

    // A caller's override on resume replaces the stored setting, and says so.
    let other = Overrides {
        workspace: Some(Workspace::directory(dir.path())),
        ..Overrides::default()
    };
    for change in Blueprint::resolve(Some(&loaded), None, &other)?.overridden {
        println!("note: {change}");
    }
    Ok(())
}

//! The `DeepAgent` preset: one network with the file tools, todos,
//! sub-agents, approvals and routes; the same builder re-attaches all of it
//! to a loaded session; no main model is a clear error. Scripted models
//! stand in for real ones.

use lc_agent::{Attachments, ModelRoutes, NetworkError, RunnableNetwork, ScriptedChatModel, Turn};
use lc_agent_deepagent::{pending_approvals, Decisions, DeepAgent, SubAgent, BASE_PROMPT};
use serde_json::json;

#[tokio::test]
async fn the_preset_offers_every_piece_and_reattaches_to_a_loaded_session() {
    let model = ScriptedChatModel::new([
        Turn::call(
            "c1",
            "write_todos",
            json!({"todos": [{"content": "write", "status": "in_progress"}]}),
        ),
        Turn::call(
            "c2",
            "write_file",
            json!({"file_path": "/a.md", "content": "a"}),
        ),
    ]);
    let builder = DeepAgent::builder()
        .model(model.clone())
        .model_named("small", ScriptedChatModel::new(["ok"]))
        .instructions("Be careful.")
        .subagent(SubAgent::new("researcher", "Finds facts"))
        .route_model("summary", "small")
        .interrupt_on("write_file", Decisions::approve_or_reject());
    let net = builder.build().unwrap();

    let first = &net.nodes()[0];
    let system = first
        .downcast::<lc_agent::SystemNode>()
        .unwrap()
        .text
        .clone();
    assert_eq!(system, format!("{BASE_PROMPT}\n\nBe careful."));
    let mut tools: Vec<String> = net.tools().iter().map(|t| t.name().to_string()).collect();
    tools.sort();
    assert_eq!(
        tools,
        // (`execute` is dropped from the model's request on a backend that
        // cannot run commands.)
        [
            "delete",
            "edit_file",
            "execute",
            "glob",
            "grep",
            "ls",
            "read_file",
            "task",
            "write_file",
            "write_todos"
        ]
    );
    assert_eq!(net.model_for_step("summary").as_deref(), Some("small"));

    {
        let _s = net.enter();
        lc_agent::HumanNode::new("Write a.md");
    }
    net.invoke().await.unwrap();
    assert_eq!(
        pending_approvals(&net).len(),
        1,
        "write_file waits for a person"
    );

    let loaded = RunnableNetwork::from_json(&net.to_json().unwrap()).unwrap();
    builder.attach(&loaded).unwrap();
    assert_eq!(loaded.tools().len(), net.tools().len());
    assert_eq!(pending_approvals(&loaded).len(), 1);
    assert_eq!(loaded.model_for_step("chat").as_deref(), Some("main"));

    let no_model = DeepAgent::builder().build().unwrap_err();
    assert!(matches!(no_model, NetworkError::NoChatModel), "{no_model}");
}

//! Approvals driven by a scripted model (a stand-in for a real one): calls
//! held for a person, the free calls of the same turn running at once, each
//! decision, decisions a tool does not allow, and a pending call decided
//! after the session was saved and loaded again.

mod common;

use lc_agent::{
    HumanNode, InvokeOutcome, NetworkEvent, RunnableNetwork, ScriptedChatModel, ToolCall,
    ToolStatus, Turn,
};
use lc_agent_modifiers::approvals::{
    decide, pending_approvals, ApprovalError, ApprovalModifier, Decision, DecisionKind, Decisions,
};
use lc_agent_modifiers::filesystem::{FilesystemModifier, StateBackend};
use serde_json::json;

fn attach(net: &RunnableNetwork, model: &ScriptedChatModel) {
    net.register_model("m", model.clone());
    net.add_modifier(FilesystemModifier::new(StateBackend::factory()))
        .unwrap();
    net.add_modifier(
        ApprovalModifier::new()
            .interrupt_on("write_file", Decisions::approve_or_reject())
            .interrupt_on("edit_file", Decisions::all()),
    )
    .unwrap();
}

fn agent(model: &ScriptedChatModel) -> RunnableNetwork {
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("m")
        .build();
    attach(&net, model);
    net.with_files_mut(|f| {
        f.insert("/notes.md".into(), lc_agent::FileData::new("draft"));
    });
    {
        let _s = net.enter();
        HumanNode::new("Tidy the notes.");
    }
    net
}

#[tokio::test]
async fn a_rejected_write_is_read_by_the_model_and_free_calls_run_at_once() {
    let model = ScriptedChatModel::new([
        Turn::tool_calls([
            ToolCall::new(
                "c1",
                "write_file",
                json!({"file_path": "/out.md", "content": "x"}),
            ),
            ToolCall::new("c2", "ls", json!({"path": "/"})),
        ]),
        Turn::text("I will not write it."),
    ]);
    let net = agent(&model);
    let mut events = net.subscribe();
    net.invoke().await.unwrap();

    // ls ran; the write waits; the model was asked once.
    assert_eq!(
        common::tool_results(&net),
        [(ToolStatus::Ok, "/notes.md".to_string())]
    );
    let pending = pending_approvals(&net);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool_call.name, "write_file");
    assert_eq!(
        pending[0].allowed,
        [DecisionKind::Approve, DecisionKind::Reject]
    );
    assert_eq!(model.calls(), 1);
    let got: Vec<NetworkEvent> = std::iter::from_fn(|| events.try_recv().ok()).collect();
    assert!(matches!(
        got.last(),
        Some(NetworkEvent::InvokeFinished { outcome: InvokeOutcome::Held(ids), .. }) if *ids == [pending[0].node_id]
    ));

    // Edit is not allowed for write_file.
    let refused = decide(&net, pending[0].node_id, Decision::Edit(json!({})));
    assert!(
        matches!(&refused, Err(ApprovalError::NotAllowed { decision: "edit", tool, allowed }) if tool == "write_file" && allowed == "approve, reject"),
        "{refused:?}"
    );
    decide(
        &net,
        pending[0].node_id,
        Decision::Reject("not today".into()),
    )
    .unwrap();
    assert_eq!(net.invoke().await.unwrap().text(), "I will not write it.");
    assert!(!net.files().contains_key("/out.md"));
    assert!(common::tool_results(&net).contains(&(
        ToolStatus::Error,
        "Error: the user rejected this call: not today".to_string()
    )));
    assert!(pending_approvals(&net).is_empty());
    // A decided call cannot be decided again.
    assert!(matches!(
        decide(&net, pending[0].node_id, Decision::Approve),
        Err(ApprovalError::NotPending(_))
    ));
}

#[tokio::test]
async fn a_pending_call_survives_a_reload_and_is_approved_edited_or_answered() {
    let model = ScriptedChatModel::new([
        Turn::call(
            "c1",
            "write_file",
            json!({"file_path": "/a.md", "content": "A"}),
        ),
        Turn::call(
            "c2",
            "edit_file",
            json!({"file_path": "/notes.md", "old_string": "draft", "new_string": "final?"}),
        ),
        Turn::call(
            "c3",
            "edit_file",
            json!({"file_path": "/notes.md", "old_string": "final", "new_string": "x"}),
        ),
        Turn::text("All settled."),
    ]);
    let net = agent(&model);
    net.invoke().await.unwrap();

    // Another process: load the saved session, attach the same agent, decide.
    let reload = |net: &RunnableNetwork| {
        let loaded = RunnableNetwork::from_json(&net.to_json().unwrap()).unwrap();
        attach(&loaded, &model);
        loaded
    };
    let net = reload(&net);
    let pending = pending_approvals(&net);
    assert_eq!(pending[0].tool_call.name, "write_file");
    decide(&net, pending[0].node_id, Decision::Approve).unwrap();
    net.invoke().await.unwrap();
    assert_eq!(net.files()["/a.md"].text(), "A");

    // The edit of turn 2 runs with the person's arguments instead.
    let net = reload(&net);
    let pending = pending_approvals(&net);
    assert_eq!(pending[0].tool_call.id, "c2");
    decide(
        &net,
        pending[0].node_id,
        Decision::Edit(
            json!({"file_path": "/notes.md", "old_string": "draft", "new_string": "final"}),
        ),
    )
    .unwrap();
    net.invoke().await.unwrap();
    assert_eq!(net.files()["/notes.md"].text(), "final");
    let edited = net
        .nodes()
        .into_iter()
        .find(|n| {
            n.metadata_value("approval")
                .is_some_and(|a| a["status"] == "edited")
        })
        .unwrap();
    assert_eq!(
        edited.metadata_value("approval").unwrap()["detail"]["original_arguments"],
        json!("{\"file_path\":\"/notes.md\",\"old_string\":\"draft\",\"new_string\":\"final?\"}")
    );

    // Turn 3's edit is answered by the person: it never runs.
    let pending = pending_approvals(&net);
    assert_eq!(pending[0].tool_call.id, "c3");
    decide(
        &net,
        pending[0].node_id,
        Decision::Respond("Left as it is.".into()),
    )
    .unwrap();
    assert_eq!(net.invoke().await.unwrap().text(), "All settled.");
    assert_eq!(net.files()["/notes.md"].text(), "final");
    assert!(common::tool_results(&net).contains(&(ToolStatus::Ok, "Left as it is.".to_string())));
    let saved = net.to_json().unwrap();
    assert_eq!(
        RunnableNetwork::from_json(&saved)
            .unwrap()
            .to_json()
            .unwrap(),
        saved
    );
}

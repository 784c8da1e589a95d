//! Approvals driven by a scripted model (a stand-in for a real one): calls
//! held for a person, the free calls of the same turn running at once, each
//! decision, decisions a tool does not allow, and a pending call decided
//! after the session was saved and loaded again.

use crate::common;

use lc_agent::{
    Attachments, Events, HumanNode, InvokeOutcome, NetworkEvent, RunnableNetwork,
    ScriptedChatModel, ToolCall, ToolStatus, Turn,
};
use lc_agent_deepagent::{
    decide, pending_approvals, ApprovalError, ApprovalModifier, Decision, DecisionKind, Decisions,
};
use lc_agent_filesystem::{FilesystemModifier, StateBackend};
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

/// An agent whose `task` calls wait for a person; the writer sub-agent
/// has its own model.
fn delegating(main: &ScriptedChatModel, writer: &ScriptedChatModel) -> RunnableNetwork {
    use lc_agent_deepagent::{SubAgent, SubAgentModifier};
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("m")
        .model("m", main.clone())
        .model("w", writer.clone())
        .build();
    net.add_modifier(FilesystemModifier::new(StateBackend::factory()))
        .unwrap();
    net.add_modifier(
        SubAgentModifier::new().subagent(SubAgent::new("writer", "Writes").model("w")),
    )
    .unwrap();
    net.add_modifier(ApprovalModifier::new().interrupt_on("task", Decisions::all()))
        .unwrap();
    {
        let _s = net.enter();
        HumanNode::new("Get the report written.");
    }
    net
}

fn task_call(description: &str) -> Turn {
    Turn::call(
        "t1",
        "task",
        json!({"description": description, "subagent_type": "writer"}),
    )
}

/// The task descriptions the sub-agents of `net` were given.
fn delegated(net: &RunnableNetwork) -> Vec<String> {
    net.nodes()
        .iter()
        .filter_map(|n| n.downcast::<lc_agent::NetworkNode>())
        .flat_map(|inner| {
            inner
                .network()
                .nodes()
                .iter()
                .filter_map(|n| n.downcast::<HumanNode>().map(|h| h.text.clone()))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[tokio::test]
async fn a_task_call_waits_with_its_subagent_and_an_edit_reaches_the_subagent() {
    let main = ScriptedChatModel::new([task_call("Write it in French."), Turn::text("Done.")]);
    let writer = ScriptedChatModel::new(["C'est fait."]);
    let net = delegating(&main, &writer);
    net.invoke().await.unwrap();
    assert_eq!(writer.calls(), 0, "the sub-agent waits for the decision");
    let pending = pending_approvals(&net);
    assert_eq!(pending.len(), 1);

    decide(
        &net,
        pending[0].node_id,
        Decision::Edit(json!({"description": "Write it in English.", "subagent_type": "writer"})),
    )
    .unwrap();
    let answer = net.invoke().await.unwrap();
    assert_eq!(answer.text(), "Done.");
    assert_eq!(writer.calls(), 1);
    // The sub-agent worked on the edited task; no sub-network is left
    // behind unrun.
    assert_eq!(delegated(&net), ["Write it in English."]);
    assert!(net.pending().is_empty());
    assert!(net.held().is_empty());
}

#[tokio::test]
async fn a_rejected_or_answered_task_never_runs_its_subagent() {
    for decision in [
        Decision::Reject("not now".into()),
        Decision::Respond("I wrote it myself.".into()),
    ] {
        let main = ScriptedChatModel::new([task_call("Write it."), Turn::text("Understood.")]);
        let writer = ScriptedChatModel::new(["written"]);
        let net = delegating(&main, &writer);
        net.invoke().await.unwrap();
        let pending = pending_approvals(&net);
        decide(&net, pending[0].node_id, decision.clone()).unwrap();
        assert_eq!(net.invoke().await.unwrap().text(), "Understood.");
        assert_eq!(writer.calls(), 0, "{decision:?}");
        assert!(delegated(&net).is_empty(), "{decision:?}");
        assert!(net.pending().is_empty() && net.held().is_empty());
    }
}

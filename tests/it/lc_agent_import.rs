//! Networks saved by NVIDIA's LC Agent (`tests/fixtures/lc_agent/`, written
//! by `make.py` after LC Agent's serialization code), read with
//! `LcAgentImport::from_lc_agent`: every built-in class mapped, unknown
//! ones kept, the notes, the round trip, and a resumed run.

use std::path::PathBuf;

use lc_agent::{
    Attachments, GenericNode, HumanNode, LcAgentImport, Message, NetworkNode, RunnableNetwork,
    ScriptedChatModel, ToolStatus,
};
use serde_json::Value;

fn fixture(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/lc_agent")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn kinds(net: &RunnableNetwork) -> Vec<String> {
    net.nodes().iter().map(|n| n.kind().to_string()).collect()
}

#[test]
fn a_chat_with_tools_maps_every_node() {
    let saved = fixture("0000_Weather.json");
    let (net, notes) = RunnableNetwork::from_lc_agent(&saved).unwrap();
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(net.id().to_string(), "0b8f5a52-4d0e-4f7e-9a0f-3c1b2a9d7e01");
    assert_eq!(net.name(), "Weather");
    // The system append of both chat-model nodes is one system node.
    assert_eq!(
        kinds(&net),
        ["human", "system", "chat", "tool", "tool", "chat", "chat"]
    );
    let nodes = net.nodes();
    assert_eq!(
        nodes[0].id().to_string(),
        "1a6f1f38-2f3e-4d8b-9a57-0c7e8f1d2a01"
    );
    // What the last model call read, as sent: the system message first.
    let request = lc_agent::ChatRequest::new(net.history_of(&nodes[6]));
    let sent = request.messages();
    let messages: Vec<&Message> = sent.iter().map(|m| m.as_ref()).collect();
    assert_eq!(
        messages[0],
        &Message::system("You are a weather assistant.")
    );
    assert_eq!(
        messages[1],
        &Message::human("What is the weather in Paris and in Oslo?")
    );
    let Message::Ai { tool_calls, .. } = messages[2] else {
        panic!("{messages:?}")
    };
    assert_eq!(tool_calls.len(), 2);
    assert_eq!(tool_calls[1].name, "get_weather");
    assert_eq!(tool_calls[1].arguments, r#"{"city":"Oslo"}"#);
    let Message::Tool { status, name, .. } = messages[4] else {
        panic!("{messages:?}")
    };
    assert_eq!(
        (*status, name.as_deref()),
        (ToolStatus::Error, Some("get_weather"))
    );
    assert_eq!(messages.last().unwrap().text(), "Anything else?");
    // Every node is answered: nothing would run again.
    assert!(net.pending().is_empty());
    // LC Agent's usage counts as this crate's; the original metadata is kept.
    let meta = nodes[2].metadata();
    assert_eq!(meta["token_usage"]["prompt_tokens"], 100);
    assert_eq!(meta["model"], "gpt-4o");
    assert_eq!(meta["lc_agent"]["node_type"], "RunnableNode");
    assert_eq!(
        meta["lc_agent"]["metadata"]["token_usage"]["tokens_per_second"],
        41.5
    );
    // Saved in this crate's format, it loads back byte for byte.
    let json = net.to_json().unwrap();
    assert_eq!(
        RunnableNetwork::from_json(&json)
            .unwrap()
            .to_json()
            .unwrap(),
        json
    );
    // The input is only read.
    assert_eq!(saved, fixture("0000_Weather.json"));
}

#[test]
fn image_parts_old_type_key_chunks_and_a_pending_node() {
    let (net, notes) = RunnableNetwork::from_lc_agent(&fixture("0001_Pictures.json")).unwrap();
    assert_eq!(
        kinds(&net),
        ["human", "chat", "human", "chat", "human", "chat"]
    );
    let nodes = net.nodes();
    assert_eq!(
        nodes[0].downcast::<HumanNode>().unwrap().text,
        "What is in this picture?"
    );
    assert_eq!(
        nodes[1].output().unwrap().text(),
        "A red cube, drawn like this:"
    );
    assert_eq!(nodes[2].output().unwrap().text(), "Make it blue.");
    assert_eq!(nodes[3].output().unwrap().text(), "Done: the cube is blue.");
    assert_eq!(
        nodes[1].metadata()["lc_agent"]["fields"]["images"][0],
        "data:image/png;base64,iVBORw0KGgo="
    );
    // The unanswered chat-model node runs on the next invoke.
    assert_eq!(net.pending().len(), 1);
    let joined = notes.join("\n");
    assert!(
        joined.contains(
            "node 0 (RunnableHumanImageNode): 1 non-text content part(s) (images) dropped"
        ),
        "{joined}"
    );
    assert!(
        joined.contains("node 1 (RunnableAIImageNode): 1 non-text content part(s)"),
        "{joined}"
    );
    assert!(
        joined.contains("fields kept in metadata.lc_agent only: images"),
        "{joined}"
    );
}

#[test]
fn sub_networks_routing_and_unknown_classes() {
    let (net, notes) = RunnableNetwork::from_lc_agent(&fixture("0002_Multi_agent.json")).unwrap();
    assert_eq!(
        kinds(&net),
        [
            "human",
            "network",
            "system",
            "USDAssistantNode",
            "RunnableSupervisorNode"
        ]
    );
    let nodes = net.nodes();
    let multi = nodes[1].downcast::<NetworkNode>().unwrap();
    assert_eq!(
        multi
            .network()
            .nodes()
            .iter()
            .map(|n| n.kind().to_string())
            .collect::<Vec<_>>(),
        ["system", "chat", "network", "tool", "chat"]
    );
    let stage = multi.network().nodes()[2].clone();
    let stage = stage.downcast::<NetworkNode>().unwrap();
    assert_eq!(kinds(stage.network()), ["chat", "chat"]);
    // A wrapped runnable's two outputs: the last is the node's output.
    assert_eq!(
        stage.network().nodes()[1].output().unwrap().text(),
        "3 prims: /World, /World/Cube, /World/Light"
    );
    // The routing call is found for the tool result.
    let tool = multi.network().nodes()[3].clone();
    assert_eq!(
        tool.output().unwrap().text(),
        "3 prims: /World, /World/Cube, /World/Light"
    );
    assert_eq!(
        tool.metadata()["lc_agent"]["metadata"]["multi_agent_invoked_node"],
        true
    );
    // An application's class: generic, answered, fields kept.
    let usd = nodes[3].downcast::<GenericNode>().unwrap();
    assert_eq!(usd.raw()["chat_model_name"], "llama-3.1-70b");
    assert_eq!(
        nodes[3].output().unwrap().text(),
        "Use Usd.Stage.Traverse() to list them."
    );
    // An unanswered supervisor cannot run here: generic and pending.
    assert!(nodes[4].output().is_none());
    let joined = notes.join("\n");
    for expected in [
        "the default node `USDAssistantNode` is LC Agent's",
        "node 1 (MultiAgentNetworkNode): fields kept in metadata.lc_agent only: ",
        "route_nodes",
        "node 1 (MultiAgentNetworkNode): node 1 (NetworkNode): node 1 (FromRunnableNode): 2 output messages",
        "node 2 (USDAssistantNode): a class lc-agent does not know",
        "node 3 (RunnableSupervisorNode): not answered yet, and only LC Agent can run it",
    ] {
        assert!(joined.contains(expected), "{expected:?} not in\n{joined}");
    }
    let json = net.to_json().unwrap();
    assert_eq!(
        RunnableNetwork::from_json(&json)
            .unwrap()
            .to_json()
            .unwrap(),
        json
    );
}

#[test]
fn not_an_lc_agent_network_is_refused() {
    let err = RunnableNetwork::from_lc_agent(&serde_json::json!({"name": "x"})).unwrap_err();
    assert!(err.to_string().contains("no `nodes` list"), "{err}");
}

#[tokio::test]
async fn an_imported_network_runs_on() {
    let (net, _) = RunnableNetwork::from_lc_agent(&fixture("0000_Weather.json")).unwrap();
    net.register_model("gpt-4o", ScriptedChatModel::new(["Lyon: 20 C."]));
    {
        let _scope = net.enter();
        HumanNode::new("And Lyon?");
    }
    let answer = net.invoke().await.unwrap();
    assert_eq!(answer.text(), "Lyon: 20 C.");
    // The model saw the imported conversation, system message first.
    let leaf = net.current_leaf().unwrap();
    let request = lc_agent::ChatRequest::new(net.input_of(&leaf));
    let sent = request.messages();
    let sent: Vec<&Message> = sent.iter().map(|m| m.as_ref()).collect();
    assert_eq!(sent[0], &Message::system("You are a weather assistant."));
    assert_eq!(sent.last().unwrap(), &&Message::human("And Lyon?"));
    assert!(sent.iter().any(|m| m.text() == "Anything else?"));
}

/// A pending node of a class only LC Agent can run never kills the
/// session: it is kept as data, marked run with no output, and the next
/// turn goes on without it; the notes say so in one line.
#[tokio::test]
async fn an_unknown_pending_node_is_skipped_and_the_session_runs_on() {
    use lc_agent::ModelRoutes;
    let (net, notes) = RunnableNetwork::from_lc_agent(&fixture("0002_Multi_agent.json")).unwrap();
    let supervisor = net.nodes()[4].clone();
    assert_eq!(supervisor.kind(), "RunnableSupervisorNode");
    assert!(supervisor.is_invoked() && supervisor.output().is_none());
    assert!(supervisor.metadata()["skipped"]
        .as_str()
        .is_some_and(|s| s.contains("skipped by the run")));
    let line = notes
        .iter()
        .find(|n| n.contains("RunnableSupervisorNode"))
        .unwrap();
    assert!(line.contains("skipped by the run"), "{line}");
    assert!(!line.contains('\n'));
    let model = net.chat_model_name().unwrap_or_else(|| "m".into());
    net.set_chat_model_name(Some(model.clone()));
    net.register_model(model, ScriptedChatModel::new(["Still here."]));
    {
        let _scope = net.enter();
        HumanNode::new("Go on");
    }
    let answer = net.invoke().await.unwrap();
    assert_eq!(answer.text(), "Still here.");
    // Saved and loaded, it stays skipped and the fields are kept.
    let json = net.to_json().unwrap();
    let loaded = RunnableNetwork::from_json(&json).unwrap();
    assert!(loaded.nodes()[4].is_invoked());
    assert_eq!(loaded.to_json().unwrap(), json);
}

/// An unknown class holding a human message, not answered: the human
/// message it holds.
#[test]
fn an_unknown_human_ish_node_becomes_the_human_message() {
    let saved = serde_json::json!({
        "nodes": [{"__node_type__": "MyHumanNode", "human_message": "Hello there",
                   "outputs": null, "metadata": {}}],
        "__connections__": {},
    });
    let (net, notes) = RunnableNetwork::from_lc_agent(&saved).unwrap();
    let node = net.nodes()[0].clone();
    assert_eq!(node.kind(), "human");
    assert_eq!(node.output().unwrap().text(), "Hello there");
    assert_eq!(node.metadata()["lc_agent"]["node_type"], "MyHumanNode");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("MyHumanNode") && n.contains("imported as that human message")),
        "{notes:?}"
    );
}

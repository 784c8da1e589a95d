//! Model routing: a step -> model map in the network's metadata decides
//! which model each chat node calls, and the node records the one used.

use lc_agent::{
    ChatNode, HumanNode, ModelRoutes, NetworkNode, NodeRef, RunnableNetwork, ScriptedChatModel,
    SystemNode,
};
use serde_json::json;

fn model(name: &str) -> ScriptedChatModel {
    ScriptedChatModel::new([format!("answer from {name}")]).cycled()
}

fn used(node: &lc_agent::NodeRef) -> serde_json::Value {
    node.metadata_value("chat_model_name").unwrap()
}

#[tokio::test]
async fn steps_use_their_routes_and_fall_back_to_the_chat_model() {
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("big")
        .model("big", model("big"))
        .model("small", model("small"))
        .model("pinned", model("pinned"))
        .route_model("summary", "small")
        .build();
    let (plain, summary, pinned) = {
        let _s = net.enter();
        HumanNode::new("hi");
        let plain = ChatNode::new();
        HumanNode::new("summarize");
        let summary = ChatNode::for_step("summary");
        HumanNode::new("again");
        let pinned = NodeRef::create(ChatNode {
            chat_model_name: Some("pinned".into()),
            ..ChatNode::default()
        });
        (plain, summary, pinned)
    };
    net.invoke().await.unwrap();
    assert_eq!(plain.output().unwrap().text(), "answer from big");
    assert_eq!(used(&plain), json!("big"));
    assert_eq!(summary.output().unwrap().text(), "answer from small");
    assert_eq!(used(&summary), json!("small"));
    assert_eq!(used(&pinned), json!("pinned"), "a node's own model wins");

    // A route for `chat` overrides the network's chat model; routes are
    // saved with the session.
    net.set_model_route("chat", "small");
    let next = {
        let _s = net.enter();
        HumanNode::new("and now?");
        ChatNode::new()
    };
    net.invoke().await.unwrap();
    assert_eq!(used(&next), json!("small"));
    let loaded = RunnableNetwork::from_json(&net.to_json().unwrap()).unwrap();
    assert_eq!(loaded.model_routes(), net.model_routes());
    assert_eq!(loaded.model_for_step("summary").as_deref(), Some("small"));
    let saved_summary = loaded.node(summary.id()).unwrap();
    assert_eq!(
        saved_summary
            .downcast::<ChatNode>()
            .unwrap()
            .step
            .as_deref(),
        Some("summary")
    );
    assert_eq!(net.remove_model_route("chat").as_deref(), Some("small"));
    assert_eq!(net.model_for_step("chat").as_deref(), Some("big"));
}

#[tokio::test]
async fn a_sub_network_follows_the_outer_routes() {
    let inner = RunnableNetwork::builder().name("researcher").build();
    {
        let _s = inner.enter();
        SystemNode::new("You research.");
        ChatNode::for_step("subagent:researcher");
    }
    let net = RunnableNetwork::builder()
        .chat_model("big")
        .model("big", model("big"))
        .model("fast", model("fast"))
        .route_model("subagent:researcher", "fast")
        .build();
    {
        let _s = net.enter();
        HumanNode::new("find it");
        NetworkNode::new(inner.clone());
    }
    assert_eq!(net.invoke().await.unwrap().text(), "answer from fast");
    assert_eq!(used(&inner.current_leaf().unwrap()), json!("fast"));
}

//! A sub-network node's input (what it sees, where its answer goes) is one
//! of three states, saved as the flags `"isolated": true`, `"routed":
//! true` or neither, and loaded back exactly.

use lc_agent::{HumanNode, NetworkInput, NetworkNode, NodeLogic, RunnableNetwork, SystemNode};
use serde_json::{json, Value};

fn inner(text: &str) -> RunnableNetwork {
    let net = RunnableNetwork::builder().build();
    {
        let _s = net.enter();
        SystemNode::new(text);
    }
    net
}

#[test]
fn each_input_saves_its_flag_and_loads_back_exactly() {
    let outer = RunnableNetwork::builder().build();
    {
        let _s = outer.enter();
        HumanNode::new("hi");
    }
    let nodes = [
        NetworkNode::with_input(inner("plain"), NetworkInput::Conversation),
        NetworkNode::with_input(inner("isolated"), NetworkInput::Isolated),
        NetworkNode::with_input(inner("routed"), NetworkInput::Routed),
        NetworkNode::with_input(inner("routed again"), NetworkInput::Routed),
    ];
    let root = outer.nodes()[0].id();
    for logic in nodes {
        outer.add(logic, &[root]).unwrap();
    }
    let saved = outer.to_json().unwrap();
    let doc: Value = serde_json::from_str(&saved).unwrap();
    let flags: Vec<(Value, Value)> = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["__node_type__"] == "network")
        .map(|n| (n["isolated"].clone(), n["routed"].clone()))
        .collect();
    assert_eq!(
        flags,
        [
            (Value::Null, Value::Null),
            (json!(true), Value::Null),
            (Value::Null, json!(true)),
            (Value::Null, json!(true)),
        ]
    );

    let loaded = RunnableNetwork::from_json(&saved).unwrap();
    assert_eq!(loaded.to_json().unwrap(), saved);
    let inputs: Vec<(NetworkInput, bool)> = loaded
        .nodes()
        .iter()
        .filter_map(|n| n.downcast::<NetworkNode>())
        .map(|n| (n.input(), n.in_conversation()))
        .collect();
    assert_eq!(
        inputs,
        [
            (NetworkInput::Conversation, true),
            (NetworkInput::Isolated, false),
            (NetworkInput::Routed, false),
            (NetworkInput::Routed, false),
        ]
    );
    assert_eq!(NetworkInput::default(), NetworkInput::Conversation);
}

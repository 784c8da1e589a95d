//! A sub-network node's input (what it sees, where its answer goes) is one
//! of three states, saved as the flags `"isolated": true`, `"routed":
//! true` or neither, and loaded back exactly.
#![allow(clippy::unwrap_used, unreachable_pub)]

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
        NetworkNode::logic(inner("plain")),
        NetworkNode::isolated(inner("isolated")),
        NetworkNode::routed(inner("routed")),
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
    let inputs: Vec<(NetworkInput, bool, bool, bool)> = loaded
        .nodes()
        .iter()
        .filter_map(|n| n.downcast::<NetworkNode>())
        .map(|n| {
            (
                n.input(),
                n.is_isolated(),
                n.is_routed(),
                n.in_conversation(),
            )
        })
        .collect();
    assert_eq!(
        inputs,
        [
            (NetworkInput::Conversation, false, false, true),
            (NetworkInput::Isolated, true, false, false),
            (NetworkInput::Routed, false, true, false),
            (NetworkInput::Routed, false, true, false),
        ]
    );
    assert_eq!(NetworkInput::default(), NetworkInput::Conversation);
}

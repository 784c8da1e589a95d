//! `CheckpointModifier::input_saved`: a caller that saved the network with
//! its input just before the `invoke` (a server run) is not saved again at
//! the start nor after the input node, only after the nodes that do work
//! and at the end; the store ends equal to the network.

use std::sync::Arc;

use lc_agent::{
    revision_of, Attachments, CheckpointModifier, CheckpointPolicy, HumanNode, JsonNetworkList,
    NetworkList,
};
use lc_agent::{RunnableNetwork, ScriptedChatModel};

async fn saves_of_a_turn(input_saved: bool) -> (usize, bool) {
    let dir = tempfile::tempdir().unwrap();
    let sessions = Arc::new(JsonNetworkList::new(dir.path()));
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("scripted")
        .model("scripted", ScriptedChatModel::new(["Hello!"]))
        .build();
    {
        let _scope = net.enter();
        HumanNode::new("Hi");
    }
    // The caller saves the input, then runs it.
    sessions.save(&net).await.unwrap();
    let mut checkpoint =
        CheckpointModifier::new(sessions.clone()).policy(CheckpointPolicy::EachNode);
    if input_saved {
        checkpoint = checkpoint.input_saved();
    }
    net.add_modifier(checkpoint).unwrap();
    let answer = net.invoke().await.unwrap();
    assert_eq!(answer.text(), "Hello!");
    let stored = sessions.load(net.id()).await.unwrap();
    // Every save adds one to the revision; the caller's made it 1.
    (
        revision_of(&stored) as usize - 1,
        stored.to_json().unwrap() == net.to_json().unwrap(),
    )
}

#[tokio::test]
async fn a_saved_input_is_not_saved_again_before_the_first_node_that_does_work() {
    // At the start, after the human node, after the chat node, at the end.
    assert_eq!(saves_of_a_turn(false).await, (4, true));
    // After the chat node and at the end.
    assert_eq!(saves_of_a_turn(true).await, (2, true));
}

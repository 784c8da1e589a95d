//! # Steering a live run: messages sent while the agent works
//!
//! Shows: while a (scripted, offline) agent runs a slow tool, the person
//! sends messages to its `Inbox`; the `SteeringModifier` reads them at
//! the run's next node boundary: an `inject` joins before the next model
//! call, a `queue` after the answer (the run goes on to answer it); the
//! events say when each joined (`NetworkEvent::Steered`).
//!
//! Needs: nothing (a `ScriptedChatModel` replays fixed answers).
//!
//! Run: `cargo run --example steering`

use std::time::Duration;

use lc_agent::{
    Events, FnTool, HumanNode, Inbox, NetworkEvent, RunnableNetwork, ScriptedChatModel,
    SteerMessage, SteerMode, SteeringModifier, ToolOutput, Turn,
};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("(offline: a scripted model replays fixed answers)");
    let inbox = Inbox::default();
    let build = FnTool::new(
        "build",
        "Builds the project.",
        json!({"type": "object"}),
        |_, _| async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            Ok(ToolOutput::ok("built"))
        },
    );
    let model = ScriptedChatModel::new([
        Turn::call("c1", "build", json!({})),
        Turn::text("Built, and I noted the tests."),
        Turn::text("Deployed."),
    ]);
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("m")
        .model("m", model)
        .tool(build)
        .modifier(SteeringModifier::new(inbox.clone()))
        .build();
    net.on_event(|e| {
        if let NetworkEvent::Steered { mode, node_id, .. } = e {
            println!("  a message joined the run ({mode}) as node {node_id:?}");
        }
    });
    {
        let _scope = net.enter();
        HumanNode::new("Build the project.");
    }
    // The person types while the tool works.
    let person = {
        let inbox = inbox.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let _ = inbox.send(SteerMessage::new("Also run the tests.", SteerMode::Inject));
            let _ = inbox.send(SteerMessage::new("Then deploy.", SteerMode::Queue));
        })
    };
    let reply = net.invoke().await?;
    person.await?;
    // A message sent after the last boundary waits: invoke again.
    while !inbox.close_if_empty() {
        net.invoke().await?;
    }
    println!("answer: {}", reply.text());
    for node in net.topological_order() {
        if let Some(out) = node.output() {
            println!("  {:<5} {}", node.kind(), out.text());
        }
    }
    Ok(())
}

//! # A supervisor and its routes
//!
//! Shows: `Supervisor` (LC Agent's multi-agent network) as a node of an
//! outer conversation: its chat model calls the `weather` and `budget`
//! routes as tools; each route is a fresh network that sees the outer
//! conversation plus the supervisor's prompt; a repeated call gets a loop
//! error the model reads; the final answer joins the outer conversation.
//! The graph, routes included, is drawn as Mermaid.
//!
//! Needs: nothing; it runs offline with `ScriptedChatModel`s that replay
//! fixed answers (a stand-in for real models).
//!
//! Run: `cargo run --example supervisor`

use lc_agent::{HumanNode, NetworkNode, RunnableNetwork, ScriptedChatModel, SystemNode, Turn};
use lc_agent_deepagent::{Route, Supervisor};
use serde_json::json;

/// A route: a small network with its own instructions and model.
fn route(name: &'static str, about: &'static str, model: &'static str) -> Route {
    Route::new(name, about, move || {
        let net = RunnableNetwork::builder()
            .default_node("chat")
            .chat_model(model)
            .build();
        {
            let _s = net.enter();
            SystemNode::new(format!("You answer questions about {name}, briefly."));
        }
        net
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("models: ScriptedChatModel (offline: replays fixed answers)\n");
    let supervisor = Supervisor::new("You plan trips. Ask your routes, then answer.")
        .route(route(
            "weather",
            "Knows the weather of a city.",
            "weather-model",
        ))
        .route(route("budget", "Knows what a trip costs.", "budget-model"))
        .max_iterations(8)
        .build();
    let net = RunnableNetwork::builder()
        .name("trip planner")
        .chat_model("boss")
        .model(
            "boss",
            ScriptedChatModel::new([
                Turn::call(
                    "c1",
                    "weather",
                    json!({"prompt": "Weather in Lisbon next week?"}),
                ),
                Turn::call("c2", "budget", json!({"prompt": "Three days in Lisbon?"})),
                Turn::call(
                    "c3",
                    "weather",
                    json!({"prompt": "Weather in Lisbon next week?"}),
                ),
                Turn::text("Go: sunny all week, about 450 EUR for three days."),
            ]),
        )
        .model(
            "weather-model",
            ScriptedChatModel::new(["Sunny, 24 °C all week."]),
        )
        .model("budget-model", ScriptedChatModel::new(["About 450 EUR."]))
        .build();
    {
        let _s = net.enter();
        HumanNode::new("Should I go to Lisbon next week?");
        NetworkNode::new(supervisor.clone());
    }
    let reply = net.invoke().await?;
    for node in supervisor.nodes() {
        if let (Some(tool), Some(out)) = (node.downcast::<lc_agent::ToolNode>(), node.output()) {
            println!("route {} -> {}", tool.tool_call.name, out.text());
        }
    }
    println!("\nanswer: {}\n", reply.text());
    println!("{}", net.to_mermaid());
    Ok(())
}

//! # Typed answers
//!
//! Shows: `invoke_typed::<T>()` with a `schemars` type: the schema is asked
//! of the model (OpenAI's `response_format`, or a forced tool where a
//! server has none), the answer is checked, an answer that does not fit is
//! asked again with the errors, and the value comes back as a `T` (also
//! saved on the chat node, `metadata["structured_output"]`). Then a
//! blueprint whose sub-agent declares an `output_schema` its `task` result
//! follows.
//!
//! Needs: nothing; it runs offline with `ScriptedChatModel`s that replay
//! fixed answers (the first one not JSON, to show the retry).
//!
//! Run: `cargo run --example typed_answers`

use std::sync::Arc;

use lc_agent::{ChatModel, HumanNode, OutputSchemaExt, RunnableNetwork, ScriptedChatModel, Turn};
use lc_agent_deepagent::AgentSpec;
use serde::Deserialize;
use serde_json::json;

/// What the agent must answer.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct City {
    /// The city's name.
    name: String,
    /// How many people live there.
    people: u64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. A typed answer from a plain network.
    let model = ScriptedChatModel::new([
        "Lyon has about 520,000 people.",
        "{\"name\": \"Lyon\", \"people\": 520000}",
    ]);
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("main")
        .model("main", model)
        .build();
    {
        let _s = net.enter();
        HumanNode::new("How big is Lyon?");
    }
    let city: City = net.invoke_typed().await?;
    println!("typed answer: {} has {} people", city.name, city.people);
    let leaf = net.current_leaf().ok_or("no answer")?;
    println!(
        "rejected first: {}",
        leaf.metadata_value("schema_rejected").unwrap_or_default()
    );

    // 2. A blueprint: the reader's task result follows its schema.
    let spec = AgentSpec::from_toml(
        r#"
[models.main]
model = "main"

[[subagents]]
name = "reader"
description = "Counts lines"
output_schema = { type = "object", properties = { lines = { type = "integer" } }, required = ["lines"] }
"#,
    )?;
    // One scripted model plays the agent and the reader (which has no
    // model of its own): the call, the reader's answer, the agent's.
    let main = ScriptedChatModel::new([
        Turn::call(
            "t1",
            "task",
            json!({"description": "Count the lines of /notes.md", "subagent_type": "reader"}),
        ),
        Turn::text("{\"lines\": 3}"),
        Turn::text("The notes have 3 lines."),
    ]);
    let net = spec
        .builder(move |_, _| Ok(Arc::new(main.clone()) as Arc<dyn ChatModel>))?
        .build()?;
    {
        let _s = net.enter();
        HumanNode::new("How long are my notes?");
    }
    println!("agent: {}", net.invoke().await?.text());
    Ok(())
}

//! # Usage: what an agent run used and cost, sub-agent included
//!
//! Shows: a deep agent that delegates to a sub-agent; each model call's
//! usage on its node (`metadata["token_usage"]`), the session's totals by
//! model in `metadata["usage"]` (the sub-agent's call counted in the
//! parent), one run's usage (after minus before), and the cost from the
//! price table (`Prices`: built in, extended by a `prices.toml` text here;
//! a model without a price shows tokens only).
//!
//! Needs: nothing. It runs offline with `ScriptedChatModel` stand-ins that
//! report fixed usage as a server would (and say so).
//!
//! Run: `cargo run --example usage`

use lc_agent::{HumanNode, Prices, ScriptedChatModel, Turn, Usage, UsageExt};
use lc_agent_deepagent::DeepAgent;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("(offline: scripted models stand in for real ones)");
    let reports = |prompt: u64, completion: u64| Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        ..Usage::default()
    };
    // The main model, priced by the built-in table; it delegates, then answers.
    let main = ScriptedChatModel::new([
        Turn::call(
            "t1",
            "task",
            json!({"description": "Count the planets", "subagent_type": "general-purpose"}),
        ),
        Turn::text("There are eight planets."),
    ])
    .named("gpt-4o-mini-2024-07-18")
    .with_usage(reports(1_200, 40));
    // The sub-agent's model: a local one, priced by our own table below.
    let local = ScriptedChatModel::new(["Eight."])
        .named("qwen2.5-coder:7b")
        .with_usage(reports(300, 5));
    let agent = DeepAgent::builder()
        .model(main)
        .model_named("local", local)
        .route_model("subagent:general-purpose", "local")
        .build()?;
    let before = agent.usage();
    {
        let _scope = agent.enter();
        HumanNode::new("How many planets are there?");
    }
    let answer = agent.invoke().await?;
    println!("answer: {}", answer.text());

    let mut prices = Prices::built_in();
    prices.extend_toml("[models.\"qwen2.5-coder\"]\ninput = 0.05\noutput = 0.10\n")?;
    let run = agent.usage().since(&before);
    println!(
        "this run: {} calls, {} tokens",
        run.all.calls, run.all.total_tokens
    );
    for (model, counts) in &run.by_model {
        let cost = prices.of(model).map(|p| p.cost(counts));
        println!(
            "  {model}: {} in, {} out, {}",
            counts.prompt_tokens,
            counts.completion_tokens,
            cost.map_or("no price".to_string(), |c| format!("${c:.6}"))
        );
    }
    println!(
        "session totals (metadata \"usage\"):\n{}",
        serde_json::to_string_pretty(&agent.usage().priced(&prices))?
    );
    Ok(())
}

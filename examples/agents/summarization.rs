//! # Long conversations: summaries and skills
//!
//! Shows: a `DeepAgent` with `.summarization(..)` and `.skills_dir(..)`.
//! Every 3 human turns (the default is 8, and also 85% of the model's
//! context window) the older messages are summarized by the model of the
//! `summary` step: a summary node joins the graph, the next requests send
//! the system prompt + the summary + the recent messages, the older
//! messages are appended to `/conversation_history/<session-id>.md`, and
//! nothing is deleted from the graph. The system prompt lists the skills
//! found in a directory (name and description); the model reads one with
//! `read_file`. The session is saved, loaded as another process would and
//! continued with the same summary; then `compact` writes a summary on
//! demand (a chat's `/compact`), by the same path, and says how many
//! tokens the next request saves. Token counts use `tiktoken-rs`.
//!
//! Needs: nothing; it runs offline with `ScriptedChatModel`s that replay
//! fixed answers (stand-ins for real models), and a temporary skills
//! directory.
//!
//! Run: `cargo run --example summarization`

use lc_agent::{
    Events, HumanNode, NetworkEvent, RunnableNetwork, ScriptedChatModel, SummaryNode, Turn,
};
use lc_agent_deepagent::{
    compact, counter_for_model, ContextWindows, DeepAgent, DeepAgentBuilder, SummarizationConfig,
    SUMMARY_STEP,
};
use serde_json::json;

fn agent(
    main: &ScriptedChatModel,
    summarizer: &ScriptedChatModel,
    skills: &std::path::Path,
) -> DeepAgentBuilder {
    DeepAgent::builder()
        .name("long conversation")
        .model(main.clone())
        .model_named("small", summarizer.clone())
        .route_model(SUMMARY_STEP, "small")
        .skills_dir(skills)
        .summarization(SummarizationConfig {
            every_human_turns: Some(3),
            keep_messages: 4,
            context_windows: ContextWindows::new().with("main", 128_000),
            ..SummarizationConfig::default()
        })
}

async fn say(net: &RunnableNetwork, text: &str) -> Result<String, lc_agent::NetworkError> {
    {
        let _scope = net.enter();
        HumanNode::new(text);
    }
    println!("> {text}");
    let reply = net.invoke().await?.text().to_string();
    println!("  {reply}");
    Ok(reply)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A skills directory: one folder per skill, each with a SKILL.md.
    let skills = tempfile::tempdir()?;
    std::fs::create_dir_all(skills.path().join("trip-planner"))?;
    std::fs::write(
        skills.path().join("trip-planner/SKILL.md"),
        "---\nname: trip-planner\ndescription: Plan a trip: dates, budget, bookings\n---\n\
         1. Ask for the dates and the budget.\n2. List the bookings to make.\n",
    )?;

    let main = ScriptedChatModel::new([
        Turn::call(
            "c1",
            "read_file",
            json!({"file_path": "/skills/trip-planner/SKILL.md"}),
        ),
        Turn::text("The trip-planner skill says: dates and budget first. When do you go?"),
        Turn::text("Noted: 12 to 19 May."),
        Turn::text("Noted: 1,500 euros."),
        Turn::text("Book the flight, then the hotel near the Old Town."),
        Turn::text("You go to Prague, 12 to 19 May, with 1,500 euros."),
    ]);
    let summarizer = ScriptedChatModel::new([
        "The user plans a trip to Prague (12-19 May, budget 1,500 euros), following the \
         trip-planner skill.",
        "Prague, 12-19 May, 1,500 euros: book the flight, then the hotel near the Old Town.",
    ]);
    let net = agent(&main, &summarizer, skills.path()).build()?;
    net.on_event(|event| {
        if let NetworkEvent::SummaryWritten {
            kept, summarized, ..
        } = event
        {
            println!("  [summary written: {summarized} messages summarized, {kept} kept]");
        }
    });

    say(&net, "Help me plan a trip to Prague.").await?;
    say(&net, "From 12 to 19 May.").await?;
    say(&net, "My budget is 1,500 euros.").await?; // the 3rd turn: a summary first
    say(&net, "What should I book first?").await?;

    let history = net.history();
    let summary = history.latest_summary().ok_or("no summary was written")?;
    let counter = counter_for_model("main");
    let request = lc_agent::ChatRequest::new(history.clone());
    println!(
        "\nThe graph keeps all {} messages; the next request sends {} ({} tokens, {}).",
        history.len(),
        request.messages().len(),
        counter.count_request(&request),
        counter.name()
    );
    println!(
        "The summary ({} messages kept after it):\n{}",
        summary.kept,
        summary.message.text()
    );
    let path = format!("/conversation_history/{}.md", net.id());
    let file = net.files().get(&path).map(|f| f.text()).unwrap_or_default();
    println!("\n{path}:\n{file}");

    // Save, load as another process would, re-attach, continue.
    let loaded = RunnableNetwork::from_json(&net.to_json()?)?;
    agent(&main, &summarizer, skills.path()).attach(&loaded)?;
    say(&loaded, "Remind me of the plan.").await?;
    let summaries = loaded
        .nodes()
        .iter()
        .filter(|n| n.kind() == SummaryNode::KIND)
        .count();
    println!(
        "\nThe loaded session has {summaries} summary node and {} nodes.",
        loaded.nodes().len()
    );

    // A summary now (what `/compact` does in `lc-agent chat`).
    let done = compact(&loaded).await?;
    println!(
        "compact: {} messages summarized; the next request: {} -> {} tokens",
        done.summarized, done.tokens_before, done.tokens_after
    );
    Ok(())
}

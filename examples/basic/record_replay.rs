//! # Record and replay: a real run once, offline forever
//!
//! Shows: a model wrapped in `RecordingChatModel` answers an agent that
//! calls a tool, and every request with its answer (the streamed pieces
//! too) goes to a JSON-lines cassette, secrets erased; the same agent then
//! runs on `ReplayChatModel` with no model at all and gets the same
//! answers, tool calls and tool call ids; a request that differs from the
//! recorded one fails with a diff of what differs, unless the replay
//! compares less (`Match`).
//!
//! Needs: nothing. By default the recorded model is a `ScriptedChatModel`
//! (fixed answers, offline; it says so). With `OPENAI_BASE_URL` (a local
//! server) or `OPENAI_API_KEY` (OpenAI) set, it records a real
//! OpenAI-compatible server instead (`OPENAI_MODEL` names the model); the
//! replay never needs it. From the command line: `lc-agent run "..."
//! --record run.jsonl`, then `lc-agent run "..." --replay run.jsonl`.
//!
//! Run: `cargo run --example record_replay`

use std::process::ExitCode;
use std::sync::Arc;

use lc_agent::{
    error_chain, Attachments, ChatModel, FnTool, HumanNode, Match, OpenAiChatModel,
    RecordingChatModel, ReplayChatModel, RunnableNetwork, ScriptedChatModel, ToolOutput, Turn,
};
use serde_json::json;

/// The agent: one tool, streaming, on `model`.
fn agent(model: Arc<dyn ChatModel>) -> RunnableNetwork {
    let shout = FnTool::new(
        "shout",
        "Upper-cases `text`.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        |args, _| async move {
            Ok(ToolOutput::ok(
                args["text"].as_str().unwrap_or("").to_uppercase(),
            ))
        },
    );
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("main")
        .tool(shout)
        .streaming(true)
        .build();
    net.register_model_shared("main", model);
    net
}

/// One turn of `agent(model)`: the answer and the tool calls' ids.
async fn run(
    model: Arc<dyn ChatModel>,
    task: &str,
) -> Result<(String, Vec<String>), lc_agent::NetworkError> {
    let net = agent(model);
    {
        let _scope = net.enter();
        HumanNode::new(task);
    }
    let answer = net.invoke().await?.text().to_string();
    let ids = net
        .nodes()
        .iter()
        .filter_map(|n| n.output())
        .flat_map(|m| {
            m.tool_calls()
                .iter()
                .map(|c| c.id.clone())
                .collect::<Vec<_>>()
        })
        .collect();
    Ok((answer, ids))
}

/// The model to record: a real server when `OPENAI_*` says so, else a
/// scripted stand-in.
fn model_to_record() -> Result<Arc<dyn ChatModel>, lc_agent::ModelError> {
    let real = std::env::var_os("OPENAI_BASE_URL").is_some()
        || std::env::var_os("OPENAI_API_KEY").is_some();
    if real {
        println!("recording the model of OPENAI_* (a real server)");
        return Ok(Arc::new(OpenAiChatModel::from_env()?));
    }
    println!("recording a scripted model (offline stand-in; set OPENAI_BASE_URL for a real one)");
    Ok(Arc::new(ScriptedChatModel::new([
        Turn::call("call-1", "shout", json!({"text": "hello"})),
        Turn::text("The tool said HELLO."),
    ])))
}

async fn example() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let cassette = dir.path().join("run.jsonl");
    let task = "Shout 'hello' with the shout tool, then tell me what it said.";

    // 1. Record.
    let recorder = Arc::new(RecordingChatModel::create(model_to_record()?, &cassette)?);
    let (recorded, recorded_ids) = run(recorder.clone(), task).await?;
    println!(
        "recorded {} answers in {}: {recorded:?}",
        recorder.recorded(),
        cassette.display()
    );
    for line in std::fs::read_to_string(&cassette)?.lines() {
        let shown: String = line.chars().take(140).collect();
        println!("  {shown}…");
    }

    // 2. Replay: no model, same answers.
    let replay = Arc::new(ReplayChatModel::open(&cassette)?);
    let (replayed, replayed_ids) = run(replay.clone(), task).await?;
    println!(
        "replayed {} of {}: {replayed:?}",
        replay.played(),
        replay.recorded()
    );
    assert_eq!((&replayed, &replayed_ids), (&recorded, &recorded_ids));

    // 3. A different request fails, saying what differs...
    let strict = Arc::new(ReplayChatModel::open(&cassette)?);
    match run(strict, "Shout 'goodbye'.").await {
        Ok(_) => println!("unexpected: a different task replayed"),
        Err(e) => println!("a different task, strict replay:\n{}", error_chain(&e)),
    }
    // ...unless the replay compares less: here only the tools offered.
    let loose = Arc::new(ReplayChatModel::open(&cassette)?.matching([Match::Tools]));
    let (answer, _) = run(loose, "Shout 'goodbye'.").await?;
    println!("a different task, comparing tools only: {answer:?}");
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    match example().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", error_chain(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}

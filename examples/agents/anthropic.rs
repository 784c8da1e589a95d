//! # Anthropic: Claude through the Messages API as the agent's model
//!
//! Shows: `AnthropicChatModel` behind the same `ChatModel` trait as every
//! model — the system prompt, a tool the model calls (`word_count`, run by
//! the tool loop and answered with a `tool_result`), the answer streamed as
//! it arrives, the stop reason and the token usage (prompt-cache reads and
//! writes included: the system prompt and the tools are marked for
//! caching).
//!
//! Needs: nothing. By default it runs offline against a stand-in Messages
//! API server on loopback (started here; it answers a `word_count` call,
//! then a sentence, and says it is a stand-in). With `ANTHROPIC_API_KEY`
//! set it asks the real API instead (`ANTHROPIC_MODEL`, default
//! `claude-sonnet-4-5`; `ANTHROPIC_BASE_URL` for a gateway such as
//! LiteLLM's proxy).
//!
//! Run: `cargo run --example anthropic`

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::routing::post;
use axum::{Json, Router};
use lc_agent::{
    AnthropicChatModel, Events, FnTool, HumanNode, NetworkEvent, RunnableNetwork, StreamDelta,
    SystemNode, ToolOutput,
};
use serde_json::{json, Value};

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let model = if std::env::var("ANTHROPIC_API_KEY").is_ok_and(|k| !k.is_empty()) {
        AnthropicChatModel::from_env()?
    } else {
        let url = stand_in().await?;
        eprintln!(
            "(offline: a stand-in Messages API server at {url}; set ANTHROPIC_API_KEY for Claude)"
        );
        AnthropicChatModel::builder()
            .base_url(url)
            .api_key("not-needed-by-the-stand-in")
            .build()?
    };
    eprintln!("model: {} at {}", model.model_name(), model.base_url());

    let word_count = FnTool::new(
        "word_count",
        "Counts the words of `text`.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        |args, _| async move {
            let words = args["text"]
                .as_str()
                .unwrap_or("")
                .split_whitespace()
                .count();
            Ok(ToolOutput::ok(words.to_string()))
        },
    );
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("claude")
        .model("claude", model)
        .tool(word_count)
        .streaming(true)
        .build();
    net.on_event(|event| {
        if let NetworkEvent::Delta {
            delta: StreamDelta::Text(text),
            ..
        } = event
        {
            print!("{text}");
            let _ = std::io::stdout().flush();
        }
    });
    {
        let _scope = net.enter();
        SystemNode::new("You are terse. Use the word_count tool to count words.");
        HumanNode::new("How many words are in 'the quick brown fox jumps'?");
    }
    net.invoke().await?;
    println!();

    for node in net.nodes() {
        match node.kind() {
            "tool" => eprintln!(
                "tool result: {}",
                node.output()
                    .map(|m| m.text().to_string())
                    .unwrap_or_default()
            ),
            "chat" => eprintln!(
                "chat node: finish reason {}, usage {}",
                node.metadata_value("finish_reason").unwrap_or(Value::Null),
                node.metadata_value("token_usage").unwrap_or(Value::Null)
            ),
            _ => {}
        }
    }
    Ok(())
}

/// A stand-in Messages API server on a free loopback port: the first
/// request gets a `word_count` call, every later one a sentence with the
/// tool's result. Returns its root URL.
async fn stand_in() -> std::io::Result<String> {
    let turns = Arc::new(AtomicUsize::new(0));
    let app = Router::new().route(
        "/v1/messages",
        post(move |Json(request): Json<Value>| {
            let turn = turns.fetch_add(1, Ordering::SeqCst);
            async move { Json(stand_in_answer(turn, &request)) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

/// The stand-in's answer (never streamed: the client reads it whole and
/// still reports it as deltas).
fn stand_in_answer(turn: usize, request: &Value) -> Value {
    let usage = json!({"input_tokens": 40, "output_tokens": 12,
                       "cache_creation_input_tokens": if turn == 0 { 120 } else { 0 },
                       "cache_read_input_tokens": if turn == 0 { 0 } else { 120 }});
    if turn == 0 {
        return json!({
            "type": "message", "role": "assistant", "model": "stand-in",
            "content": [
                {"type": "text", "text": "(stand-in) Let me count. "},
                {"type": "tool_use", "id": "toolu_1", "name": "word_count",
                 "input": {"text": "the quick brown fox jumps"}}
            ],
            "stop_reason": "tool_use", "usage": usage
        });
    }
    // The tool's result is the last block the client sent.
    let result = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_array())
        .and_then(|blocks| blocks.iter().find(|b| b["type"] == "tool_result"))
        .and_then(|b| b["content"].as_str())
        .unwrap_or("?")
        .to_string();
    json!({
        "type": "message", "role": "assistant", "model": "stand-in",
        "content": [{"type": "text", "text": format!("(stand-in) It has {result} words.")}],
        "stop_reason": "end_turn", "usage": usage
    })
}

//! # Long-term memory: what one session learns, the next one knows
//!
//! Shows: a deep agent with `MemoryModifier` (`DeepAgent::builder()
//! .memory(..)`) over the JSON-file `MemoryStore`. In a first session
//! Alice's model stores a fact with `remember`; in a second session
//! (another network, another store opened on the same directory, as a new
//! process would) the fact and the earlier turn are in the system prompt
//! before the model answers. Bob's session, on the same memory, is told
//! nothing of Alice's. A summary of Alice's turns is written in the
//! background by the model of the `summary` step.
//!
//! Needs: nothing; it runs offline with `ScriptedChatModel`s that replay
//! fixed answers (a stand-in for real models), and keeps the memory in a
//! temporary directory (`LC_AGENT_MEMORY_DIR=DIR` to keep it).
//!
//! Run: `cargo run --example memory`

use async_trait::async_trait;
use lc_agent::{
    ChatModel, ChatRequest, ChatResponse, HumanNode, ModelError, RunnableNetwork,
    ScriptedChatModel, Turn,
};
use lc_agent_deepagent::memory::{MemoryKind, MemoryModifier, MemoryStore, USER_KEY};
use lc_agent_deepagent::DeepAgent;
use serde_json::json;

/// A scripted model that also prints the memory section of each request.
struct ShowMemory(ScriptedChatModel);

#[async_trait]
impl ChatModel for ShowMemory {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        if let Some(section) = request
            .system
            .iter()
            .find(|s| s.starts_with("## Long-term memory"))
        {
            let known: Vec<&str> = section
                .lines()
                .skip_while(|l| !l.starts_with("Summary of") && !l.starts_with("What you remember"))
                .collect();
            if known.is_empty() {
                println!("    (the prompt holds no memories yet)");
            }
            for line in known {
                println!("    prompt| {line}");
            }
        }
        self.0.complete(request).await
    }
}

/// A stand-in summary model: it lists what the user said in the turns
/// it is given (a real model would write a summary).
struct ListQuestions;

#[async_trait]
impl ChatModel for ListQuestions {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let input = request.history.last().map(|m| m.text()).unwrap_or_default();
        let said: Vec<&str> = input
            .lines()
            .filter_map(|l| l.split_once("User: ").map(|(_, q)| q))
            .collect();
        Ok(ChatResponse {
            content: format!("Earlier the user said: {}", said.join(" / ")),
            ..ChatResponse::default()
        })
    }
}

/// One session of `user`: a deep agent with memory, a human turn, the answer.
async fn session(
    store: &MemoryStore,
    user: &str,
    turns: Vec<Turn>,
    question: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    // A summary after every turn, for the demo (the default is every 8).
    let memory = MemoryModifier::new(store.clone()).summary_every(1);
    let agent = DeepAgent::builder()
        .model(ShowMemory(ScriptedChatModel::new(turns)))
        .model_named("summarizer", ListQuestions)
        .route_model("summary", "summarizer")
        .memory(memory.clone());
    let net: RunnableNetwork = agent.build()?;
    net.set_metadata(USER_KEY, json!(user));
    println!("{user}: {question}");
    {
        let _scope = net.enter();
        HumanNode::new(question);
    }
    let reply = net.invoke().await?;
    println!("  model: {}", reply.text());
    // The summary is written in the background; wait for it before the
    // next session (a server would just go on).
    memory.flush().await;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let dir = std::env::var_os("LC_AGENT_MEMORY_DIR")
        .map_or_else(|| tmp.path().to_path_buf(), Into::into);

    // Session 1: Alice tells the agent something worth keeping.
    let store = MemoryStore::open(&dir)?;
    session(
        &store,
        "alice",
        vec![
            Turn::call(
                "c1",
                "remember",
                json!({"text": "Alice's project is codenamed Bluebird"}),
            ),
            Turn::text("Noted: your project is Bluebird."),
        ],
        "Remember that my project is codenamed Bluebird.",
    )
    .await?;
    drop(store);

    // Session 2, as a new process: the memory is in the prompt.
    let store = MemoryStore::open(&dir)?;
    session(
        &store,
        "alice",
        vec![Turn::text("Your project is codenamed Bluebird.")],
        "What is my project's codename?",
    )
    .await?;
    if let Some(summary) = store.latest("alice", MemoryKind::Summary).await? {
        println!("  summary (background): {}", summary.text);
    }

    // Bob shares the memory store, never Alice's memories.
    session(
        &store,
        "bob",
        vec![Turn::text("I don't know yet.")],
        "What is my project's codename?",
    )
    .await?;

    let alice = store.entries("alice").await?;
    let bob = store.entries("bob").await?;
    println!(
        "memory at {}: {} entries of alice, {} of bob",
        dir.display(),
        alice.len(),
        bob.len()
    );
    assert!(alice
        .iter()
        .any(|e| e.kind == MemoryKind::Fact && e.text.contains("Bluebird")));
    assert!(bob.iter().all(|e| !e.text.contains("Bluebird")));
    Ok(())
}

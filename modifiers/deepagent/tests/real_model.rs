//! Summaries with a real model server: llama-cpp-python serving
//! SmolLM2-135M-Instruct with a 2,048-token window (see
//! `lc_agent_test_support::LlamaServer`). A long chat goes past the window
//! and keeps answering; a message that cannot fit is a clear error before
//! it is sent. Assertions are on behaviour, never on the model's wording.
//! A binary of its own: the model runs on the CPU, and its tests must not
//! compete with the parallel tests of `tests/it` for the cores.

// Test code: a failed step is a failed test.
#![allow(clippy::unwrap_used, unreachable_pub)]

use lc_agent_test_support::{needs, LlamaServer};

use lc_agent::{
    Attachments, HumanNode, ModelError, NetworkError, OpenAiChatModel, RunnableNetwork,
    SummaryNode, SystemNode,
};
use lc_agent_deepagent::{SummarizationConfig, SummarizationModifier};

fn chat(server: &LlamaServer, window: Option<usize>) -> RunnableNetwork {
    let mut builder = OpenAiChatModel::builder()
        .model("smollm2")
        .base_url(server.base_url())
        .max_tokens(24)
        .temperature(0.0);
    if let Some(tokens) = window {
        builder = builder.context_window(tokens);
    }
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("smollm2")
        .model("smollm2", builder.build().unwrap())
        .build();
    net.add_modifier(SummarizationModifier::new(SummarizationConfig {
        every_human_turns: None,
        ..SummarizationConfig::default()
    }))
    .unwrap();
    {
        let _scope = net.enter();
        SystemNode::new("You are a helpful assistant. Answer in one sentence.");
    }
    net
}

/// About 200 tokens of a user's message.
fn long_turn(n: usize) -> String {
    format!(
        "Question {n}: tell me one thing about the river. {}",
        "The river runs past the old mill and the green fields towards the sea. ".repeat(12)
    )
}

fn summaries(net: &RunnableNetwork) -> usize {
    net.nodes()
        .iter()
        .filter(|n| n.kind() == SummaryNode::KIND)
        .count()
}

async fn say(net: &RunnableNetwork, text: &str) -> Result<String, NetworkError> {
    {
        let _scope = net.enter();
        HumanNode::new(text);
    }
    net.invoke().await.map(|reply| reply.text().to_string())
}

/// Twelve turns of about 200 tokens each, with the window given (as
/// `--context-window 2048` does): summaries keep every request inside it.
#[needs(llama)]
#[tokio::test]
async fn a_long_chat_goes_past_the_window_and_keeps_answering() {
    let server = LlamaServer::shared();
    let _turn = server.conversation().await;
    let net = chat(server, Some(2048));

    for n in 0..12 {
        if let Err(e) = say(&net, &long_turn(n)).await {
            panic!("turn {n} failed: {e}\n{}", server.log());
        }
    }

    assert!(summaries(&net) >= 1, "the conversation was summarized");
    let words: usize = net
        .nodes()
        .iter()
        .filter(|n| n.kind() == "human")
        .map(|n| {
            n.output()
                .map_or(0, |m| m.text().split_whitespace().count())
        })
        .sum();
    assert!(
        words > 2048,
        "the chat is longer than the window ({words} words)"
    );
}

/// llama-cpp-python does not say its window: the model recognises the
/// server and assumes its default window, so summaries keep every turn
/// inside it and no turn fails. (Were the guess too large, the first turn
/// that does not fit would fail with the server's sizes, the window would
/// be learned from it, and the next `invoke` would summarize and answer:
/// at most one turn fails.)
#[needs(llama)]
#[tokio::test]
async fn a_window_the_server_does_not_say_keeps_the_chat_going() {
    let server = LlamaServer::shared();
    let _turn = server.conversation().await;
    let net = chat(server, None);

    let mut failed = 0;
    for n in 0..14 {
        match say(&net, &long_turn(n)).await {
            Ok(_) => {}
            Err(e) => {
                assert!(
                    e.to_string()
                        .contains("does not fit the model's context window"),
                    "{e}"
                );
                failed += 1;
                // The failed chat node runs again, now with a summary.
                net.invoke()
                    .await
                    .unwrap_or_else(|e| panic!("after learning: {e}"));
            }
        }
    }

    assert!(failed <= 1, "{failed} turns failed");
    assert!(summaries(&net) >= 1);
}

/// A message larger than the whole window fails before it is sent, with
/// its size and the window.
#[needs(llama)]
#[tokio::test]
async fn a_message_that_cannot_fit_fails_before_it_is_sent() {
    let server = LlamaServer::shared();
    let _turn = server.conversation().await;
    let net = chat(server, Some(2048));

    let error = say(&net, &"word ".repeat(3000)).await.unwrap_err();

    let NetworkError::NodeFailed { source, .. } = &error else {
        panic!("expected NodeFailed, got {error:?}");
    };
    let Some(NetworkError::Model(ModelError::ContextOverflow {
        tokens: Some(tokens),
        window: Some(2048),
    })) = source.downcast_ref::<NetworkError>()
    else {
        panic!("expected ContextOverflow, got {error:?}");
    };
    assert!(*tokens > 2048, "{tokens}");
    assert!(error.to_string().contains("and 2048 fit"), "{error}");
}

/// Memory that finds meaning, with real embeddings: llama-cpp-python
/// serving SmolLM2 with `--embedding` behind `[memory] embedder` in a
/// blueprint. SmolLM2 is a small chat model, not an embedding model: its
/// averaged token vectors do not reliably rank "what is my dog's name?"
/// first among eight facts (runs put "I have a puppy called Rex" from
/// first to below third), so what is asserted is robust: the vectors'
/// dimension (576), the vector and model stored through the blueprint,
/// words alone never reaching the fact, the hybrid search reaching it
/// (through the vectors only), and the users kept apart.
#[needs(llama)]
#[tokio::test]
async fn memory_finds_meaning_with_real_embeddings() {
    use std::sync::Arc;

    use lc_agent::{ChatModel, Embedder, HttpSettings, OpenAiEmbedder, ScriptedChatModel, Turn};
    use lc_agent_deepagent::memory::{MemoryEntry, MemoryKind, MemoryQuery, MemoryStore};

    let server = LlamaServer::start_embeddings();
    let embedder = OpenAiEmbedder::new(
        HttpSettings::default()
            .base_url(server.base_url())
            .model("smollm2"),
    )
    .unwrap();
    let texts = ["a dog".to_string(), "a puppy".into(), "a database".into()];
    let vectors = embedder
        .embed(&texts)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", server.log()));
    assert_eq!(vectors.len(), 3);
    assert!(
        vectors.iter().all(|v| v.len() == 576),
        "SmolLM2-135M's width"
    );

    // Through the blueprint: the fact the agent remembers is stored with
    // its vector.
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "[models.main]\nmodel = \"m\"\n\n[memory]\ndir = {:?}\nsummary_every = 0\n\
         embedder = {{ model = \"smollm2\", base_url = \"{}\" }}\n",
        dir.path().to_str().unwrap(),
        server.base_url()
    );
    let spec = lc_agent_deepagent::AgentSpec::from_toml(&toml).unwrap();
    let model: Arc<dyn ChatModel> = Arc::new(ScriptedChatModel::new([
        Turn::call(
            "m1",
            "remember",
            serde_json::json!({"text": "I have a puppy called Rex"}),
        ),
        Turn::text("Noted."),
    ]));
    let net = spec
        .builder(move |_, _| Ok(model.clone()))
        .unwrap()
        .build()
        .unwrap();
    net.set_metadata("user", serde_json::json!("alice"));
    {
        let _scope = net.enter();
        HumanNode::new("Please remember my pet.");
    }
    net.invoke().await.unwrap();
    drop(net);

    let store = MemoryStore::open(dir.path())
        .unwrap()
        .with_embedder(Arc::new(embedder));
    let others = [
        "The meeting with the bank is on Tuesday",
        "My favourite colour is green",
        "I live in Lisbon near the river",
        "Python is my main programming language",
        "We use PostgreSQL for the orders database",
        "My sister's birthday is in March",
        "I am allergic to peanuts",
    ];
    let mut entries: Vec<MemoryEntry> = others
        .iter()
        .map(|t| MemoryEntry::new("alice", MemoryKind::Fact, *t))
        .collect();
    entries.push(MemoryEntry::new(
        "bob",
        MemoryKind::Fact,
        "My dog's name is Max",
    ));
    store.add_many(&entries).await.unwrap();
    let stored = store.entries("alice").await.unwrap();
    let rex = stored
        .iter()
        .find(|e| e.text == "I have a puppy called Rex")
        .expect("remembered");
    let embedding = rex.embedding.as_ref().expect("stored with its vector");
    assert_eq!(
        (embedding.model.as_str(), embedding.vector.len()),
        ("smollm2", 576)
    );

    let question = MemoryQuery::new("what is my dog's name?")
        .kind(MemoryKind::Fact)
        .limit(8);
    let words_only = MemoryStore::open(dir.path()).unwrap();
    let hits = words_only.search("alice", &question).await.unwrap();
    assert!(
        hits.iter().all(|h| !h.entry.text.contains("Rex")),
        "no word in common: {hits:?}"
    );
    let hits = store.search("alice", &question).await.unwrap();
    let found: Vec<&str> = hits.iter().map(|h| h.entry.text.as_str()).collect();
    assert!(found.contains(&"I have a puppy called Rex"), "{found:?}");
    assert!(hits.iter().all(|h| h.entry.user == "alice"), "{found:?}");
}

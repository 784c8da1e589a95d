//! `MemoryModifier` in real conversations (scripted models): what one
//! session of a user remembers, another session of that user is told —
//! and another user never is; the same on every backend (in memory, the
//! JSON file, a redis-server started by the test). Summaries are written
//! in the background every N turns, never block a reply, and a failed
//! one is tried again after the next turn.
//!
//! ```text
//!  alice session 1: remember(codename Bluebird) ──▶ store ──▶ alice session 2: prompt has it
//!                                                        └──▶ bob: prompt and recall without it
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use lc_agent::{
    Attachments, ChatModel, ChatRequest, ChatResponse, HumanNode, Message, ModelError, ModelRoutes,
    RunnableNetwork, ScriptedChatModel, Turn,
};
use lc_agent_deepagent::memory::{MemoryKind, MemoryModifier, MemoryStore};
use lc_agent_deepagent::memory::{SUMMARIZED_KEY, TURNS_KEY, TURN_KEY};
use lc_agent_test_support::{needs, RedisServer};
use parking_lot::Mutex;
use serde_json::json;

/// A scripted model that keeps every request it got.
#[derive(Clone)]
struct Recording {
    inner: ScriptedChatModel,
    requests: Arc<Mutex<Vec<ChatRequest>>>,
}

impl Recording {
    fn new<T: Into<Turn>>(turns: impl IntoIterator<Item = T>) -> Self {
        Self {
            inner: ScriptedChatModel::new(turns),
            requests: Arc::default(),
        }
    }

    /// The system sections of request `i`, joined.
    fn system(&self, i: usize) -> String {
        self.requests.lock()[i].system.join("\n\n")
    }
}

#[async_trait]
impl ChatModel for Recording {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.requests.lock().push(request.clone());
        self.inner.complete(request).await
    }
}

fn session(
    user: &str,
    memory: &MemoryModifier,
    model: impl ChatModel + 'static,
) -> RunnableNetwork {
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("main")
        .model("main", model)
        .build();
    net.set_metadata("user", json!(user));
    net.add_modifier(memory.clone()).unwrap();
    net
}

async fn say(net: &RunnableNetwork, text: &str) -> String {
    {
        let _s = net.enter();
        HumanNode::new(text);
    }
    net.invoke().await.unwrap().text().to_string()
}

fn tool_results(net: &RunnableNetwork) -> Vec<String> {
    net.nodes()
        .iter()
        .filter_map(|n| match n.output().as_deref() {
            Some(Message::Tool { content, .. }) => Some(content.clone()),
            _ => None,
        })
        .collect()
}

/// What every backend must do; `open` gives a store on the same memory
/// (a new process or server).
async fn across_sessions(open: impl Fn() -> MemoryStore) {
    // Alice, session 1: the model remembers a fact.
    let first = MemoryModifier::new(open());
    let model = Recording::new([
        Turn::call(
            "c1",
            "remember",
            json!({"text": "Alice's project is codenamed Bluebird", "tags": ["project"]}),
        ),
        Turn::text("Noted: Bluebird."),
    ]);
    let one = session("alice", &first, model.clone());
    assert_eq!(
        say(&one, "Please remember: my project is codenamed Bluebird.").await,
        "Noted: Bluebird."
    );
    assert_eq!(
        tool_results(&one),
        ["Remembered: Alice's project is codenamed Bluebird"]
    );
    assert!(
        !model.system(0).contains("Bluebird"),
        "nothing known before"
    );

    // Alice, session 2 (another store on the same memory): the fact and
    // the earlier turn are in the prompt; recall finds the fact.
    let second = MemoryModifier::new(open());
    let model = Recording::new([
        Turn::text("Bluebird."),
        Turn::call("r1", "recall", json!({"query": "project codename"})),
        Turn::text("It is Bluebird."),
    ]);
    let two = session("alice", &second, model.clone());
    say(&two, "What is my project's codename?").await;
    let prompt = model.system(0);
    assert!(
        prompt.contains("- [fact ") && prompt.contains("Alice's project is codenamed Bluebird"),
        "{prompt}"
    );
    assert!(
        prompt.contains("User: Please remember: my project is codenamed Bluebird."),
        "{prompt}"
    );
    say(&two, "Look it up to be sure.").await;
    assert!(tool_results(&two)[0].contains("Alice's project is codenamed Bluebird"));
    // This session's own turns stay out of its memory section (they are in
    // the conversation already).
    assert!(
        !model
            .system(1)
            .contains("User: What is my project's codename?"),
        "{}",
        model.system(1)
    );

    // Bob never sees Alice's memories: not in the prompt, not by recall.
    let third = MemoryModifier::new(open());
    let model = Recording::new([
        Turn::call(
            "r1",
            "recall",
            json!({"query": "Bluebird project codename"}),
        ),
        Turn::text("I do not know."),
    ]);
    let bob = session("bob", &third, model.clone());
    say(&bob, "What is my project's codename? Is it Bluebird?").await;
    assert!(!model.system(0).contains("Bluebird"), "{}", model.system(0));
    assert_eq!(tool_results(&bob), ["No memories match."]);

    // Every finished turn was stored once, tagged with its session.
    let store = open();
    let turns: Vec<_> = store
        .entries("alice")
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == MemoryKind::Turn)
        .collect();
    assert_eq!(turns.len(), 3);
    assert_eq!(turns[0].tags, [format!("session:{}", one.id())]);
    assert_eq!(two.metadata_value(TURNS_KEY), Some(json!(2)));
    let human = two
        .nodes()
        .into_iter()
        .find(|n| matches!(n.output().as_deref(), Some(Message::Human { .. })))
        .unwrap();
    assert!(human.metadata_value(TURN_KEY).is_some());
    assert_eq!(store.entries("bob").await.unwrap().len(), 1);
}

#[tokio::test]
async fn across_sessions_in_memory() {
    let backend = lc_agent_deepagent::memory::InMemoryBackend::new();
    across_sessions(|| MemoryStore::with_backend(backend.clone()).unwrap()).await;
}

#[tokio::test]
async fn across_sessions_json_file() {
    let dir = tempfile::tempdir().unwrap();
    across_sessions(|| MemoryStore::open(dir.path()).unwrap()).await;
}

#[needs(redis)]
#[tokio::test]
async fn across_sessions_redis() {
    let server = RedisServer::start();
    let url = server.url();
    across_sessions(|| MemoryStore::redis(url.clone()).unwrap()).await;
}

/// A summary model that waits for a go and fails its first call.
struct Summarizer {
    calls: AtomicUsize,
    gate: Arc<tokio::sync::Semaphore>,
}

#[async_trait]
impl ChatModel for Summarizer {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        self.gate.acquire().await.unwrap().forget();
        if n == 0 {
            return Err(ModelError::Timeout(Duration::from_secs(1)));
        }
        let input = request.history.last().unwrap().text().to_string();
        assert!(
            input.contains("User: turn 1") && input.contains("User: turn 3"),
            "{input}"
        );
        Ok(ChatResponse {
            content: "Alice is testing summaries (turns 1 to 3).".into(),
            ..ChatResponse::default()
        })
    }
}

#[tokio::test]
async fn summaries_in_background() {
    let store = MemoryStore::in_memory().unwrap();
    let memory = MemoryModifier::new(store.clone()).summary_every(2);
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let summarizer = Arc::new(Summarizer {
        calls: AtomicUsize::new(0),
        gate: gate.clone(),
    });
    let model = Recording::new(["one", "two", "three", "four"]);
    let net = session("alice", &memory, model.clone());
    net.register_model_shared("small", summarizer.clone());
    net.set_model_route("summary", "small");

    say(&net, "turn 1").await;
    // The second turn starts a summary; the reply does not wait for it
    // (the summary model is held until we let it go).
    let reply = tokio::time::timeout(Duration::from_secs(10), say(&net, "turn 2"))
        .await
        .unwrap();
    assert_eq!(reply, "two");
    tokio::time::timeout(Duration::from_secs(10), async {
        while summarizer.calls.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap();
    // It fails: nothing is lost, nothing summarized.
    gate.add_permits(1);
    memory.flush().await;
    assert_eq!(
        store.latest("alice", MemoryKind::Summary).await.unwrap(),
        None
    );
    assert_eq!(net.metadata_value(SUMMARIZED_KEY), None);

    // The next turn tries again, and this time it works.
    gate.add_permits(1);
    say(&net, "turn 3").await;
    memory.flush().await;
    assert_eq!(summarizer.calls.load(Ordering::SeqCst), 2);
    let summary = store
        .latest("alice", MemoryKind::Summary)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(summary.text, "Alice is testing summaries (turns 1 to 3).");
    assert_eq!(summary.tags, [format!("session:{}", net.id())]);
    assert_eq!(net.metadata_value(SUMMARIZED_KEY), Some(json!(3)));
    assert_eq!(net.metadata_value(TURNS_KEY), Some(json!(3)));

    // The latest summary is in the next prompt.
    say(&net, "turn 4").await;
    assert!(
        model
            .system(3)
            .contains("Summary of earlier conversations:\nAlice is testing summaries"),
        "{}",
        model.system(3)
    );
    assert_eq!(
        store
            .entries("alice")
            .await
            .unwrap()
            .iter()
            .filter(|e| e.kind == MemoryKind::Turn)
            .count(),
        4
    );
}

/// `[memory]` in an `AgentSpec` builds the agent with memory in that
/// directory; the spec (and so the session) keeps only the settings.
#[tokio::test]
async fn agent_spec_memory() {
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "[models.main]\nmodel = \"m\"\n\n[memory]\ndir = {:?}\ntop_k = 3\nsummary_every = 0\n",
        dir.path().to_str().unwrap()
    );
    let spec = lc_agent_deepagent::AgentSpec::from_toml(&toml).unwrap();
    assert_eq!(spec.memory.as_ref().unwrap().top_k, Some(3));
    let model: Arc<dyn ChatModel> = Arc::new(ScriptedChatModel::new([
        Turn::call("m1", "remember", json!({"text": "Prefers metric units"})),
        Turn::text("Noted."),
    ]));
    let agent = spec.builder(move |_, _| Ok(model.clone())).unwrap();
    assert!(agent.memory_modifier().is_some());
    let net = agent.build().unwrap();
    net.set_metadata("user", json!("erin"));
    say(&net, "I prefer metric units.").await;
    let store = MemoryStore::open(dir.path());
    drop(net);
    let entries = store.unwrap().entries("erin").await.unwrap();
    assert_eq!(entries[0].text, "Prefers metric units");
    assert_eq!(entries[1].kind, MemoryKind::Turn);
    let back =
        lc_agent_deepagent::AgentSpec::from_json(&serde_json::to_string(&spec).unwrap()).unwrap();
    assert_eq!(back, spec);
}

//! Memory that finds meaning, not only words: `MemoryStore::with_embedder`
//! with a deterministic embedder whose vectors put words of one meaning
//! on one axis ("dog" and "puppy" close, "database" and "postgres" close),
//! on every backend: found by meaning where words fail, users kept apart,
//! vectors stored (JSON-lines file, Redis) and taken in again after a
//! restart, older entries without vectors still found by words, another
//! model's vectors never compared, and an embedder that fails leaving
//! search by words.
//!
//! ```text
//!  "what is my dog's name?"  ── words ──▶ nothing in common with "I have a puppy called Rex"
//!                            ── meaning ─▶ dog≈puppy, name≈called ─▶ found first
//! ```

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{Embedder, ModelError};
use lc_agent_deepagent::memory::{MemoryEntry, MemoryHit, MemoryKind, MemoryQuery, MemoryStore};
use lc_agent_test_support::{needs, RedisServer};

/// Words of one meaning share an axis; any other word gets a small
/// weight on an axis of its own (by hash), so unrelated texts are far.
struct MeaningEmbedder {
    name: &'static str,
    calls: AtomicUsize,
    fail: AtomicBool,
}

const CONCEPTS: &[&[&str]] = &[
    &["dog", "dogs", "puppy", "puppies", "hound"],
    &["name", "named", "called", "call"],
    &["database", "postgres", "postgresql", "sql", "db"],
    &["car", "vehicle", "automobile", "drive"],
    &["cat", "kitten", "cats"],
];
const DIMS: usize = 48;

impl MeaningEmbedder {
    fn new(name: &'static str) -> Arc<Self> {
        Arc::new(Self {
            name,
            calls: AtomicUsize::new(0),
            fail: AtomicBool::new(false),
        })
    }

    fn vector(text: &str) -> Vec<f32> {
        let mut v = vec![0f32; DIMS];
        for word in text
            .to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 1)
        {
            match CONCEPTS.iter().position(|c| c.contains(&word)) {
                Some(axis) => v[axis] += 1.0,
                None => {
                    let h = word
                        .bytes()
                        .fold(7usize, |h, b| h.wrapping_mul(31).wrapping_add(b as usize));
                    v[CONCEPTS.len() + h % (DIMS - CONCEPTS.len())] += 0.3;
                }
            }
        }
        v
    }
}

#[async_trait]
impl Embedder for MeaningEmbedder {
    fn model_name(&self) -> &str {
        self.name
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if self.fail.load(Ordering::Relaxed) {
            return Err(ModelError::Other("the embeddings server is down".into()));
        }
        Ok(texts.iter().map(|t| Self::vector(t)).collect())
    }
}

fn fact(user: &str, text: &str) -> MemoryEntry {
    MemoryEntry::new(user, MemoryKind::Fact, text)
}

fn texts(hits: &[MemoryHit]) -> Vec<&str> {
    hits.iter().map(|h| h.entry.text.as_str()).collect()
}

const REX: &str = "I have a puppy called Rex";
const QUESTION: &str = "what is my dog's name?";

/// Alice's and Bob's memories (Bob's own puppy is nearer in meaning to
/// Alice's question than most of hers).
async fn fill(store: &MemoryStore) {
    store
        .add_many(&[
            fact("alice", "The orders service uses PostgreSQL 16"),
            fact("alice", "Alice prefers tabs over spaces"),
            fact("alice", REX),
            fact("alice", "The deploy runs every Friday at noon"),
            fact("bob", "Bob's puppy is called Max"),
            fact("bob", "Bob drives an electric car"),
        ])
        .await
        .unwrap();
}

/// What every backend does; `open` gives a new store on the same data
/// (another process or server) with the embedder given.
async fn suite(open: impl Fn(Option<Arc<MeaningEmbedder>>) -> MemoryStore) {
    let embedder = MeaningEmbedder::new("meaning-v1");
    let store = open(Some(embedder.clone()));
    fill(&store).await;
    // One call for the six texts.
    assert_eq!(embedder.calls.load(Ordering::Relaxed), 1);

    // Words alone do not find it: nothing in common.
    let words_only = open(None);
    let hits = words_only
        .search("alice", &MemoryQuery::new(QUESTION))
        .await
        .unwrap();
    assert!(!texts(&hits).contains(&REX), "{:?}", texts(&hits));

    // Meaning does, first; and never another user's.
    for store in [&store, &open(Some(embedder.clone()))] {
        let hits = store
            .search("alice", &MemoryQuery::new(QUESTION).limit(3))
            .await
            .unwrap();
        assert_eq!(texts(&hits).first(), Some(&REX), "{:?}", texts(&hits));
        assert!(hits.iter().all(|h| h.entry.user == "alice"));
        let hits = store
            .search("bob", &MemoryQuery::new(QUESTION).limit(10))
            .await
            .unwrap();
        assert_eq!(texts(&hits).first(), Some(&"Bob's puppy is called Max"));
        assert!(
            hits.iter().all(|h| h.entry.user == "bob"),
            "{:?}",
            texts(&hits)
        );
    }

    // Words still count: a word match ranks first, by both rankings.
    let hits = store
        .search(
            "alice",
            &MemoryQuery::new("which database for orders?").limit(2),
        )
        .await
        .unwrap();
    assert_eq!(texts(&hits)[0], "The orders service uses PostgreSQL 16");

    // The filters hold for what meaning finds too.
    let turn = MemoryEntry::new("alice", MemoryKind::Turn, "User: my hound is named Bo")
        .with_tags(["session:x"]);
    store.add(&turn).await.unwrap();
    let hits = store
        .search(
            "alice",
            &MemoryQuery::new(QUESTION).kind(MemoryKind::Fact).limit(10),
        )
        .await
        .unwrap();
    assert!(hits.iter().all(|h| h.entry.kind == MemoryKind::Fact));
    let hits = store
        .search(
            "alice",
            &MemoryQuery::new(QUESTION)
                .exclude_tag("session:x")
                .limit(10),
        )
        .await
        .unwrap();
    assert!(!texts(&hits).contains(&turn.text.as_str()));
    let hits = store
        .search("alice", &MemoryQuery::new(QUESTION).limit(2))
        .await
        .unwrap();
    assert!(
        texts(&hits).contains(&turn.text.as_str()),
        "{:?}",
        texts(&hits)
    );

    // Stored with the entries: the vector and its model.
    let stored = store.entries("alice").await.unwrap();
    let rex = stored.iter().find(|e| e.text == REX).unwrap();
    let embedding = rex.embedding.as_ref().expect("stored with its embedding");
    assert_eq!(embedding.model, "meaning-v1");
    assert_eq!(embedding.vector, MeaningEmbedder::vector(REX));

    // Another model's vectors are not compared: found by words only.
    let other = open(Some(MeaningEmbedder::new("meaning-v2")));
    let hits = other
        .search("alice", &MemoryQuery::new(QUESTION))
        .await
        .unwrap();
    assert!(!texts(&hits).contains(&REX), "{:?}", texts(&hits));
    let hits = other
        .search("alice", &MemoryQuery::new("Rex"))
        .await
        .unwrap();
    assert_eq!(texts(&hits), [REX]);
}

#[tokio::test]
async fn in_memory() {
    let backend = lc_agent_deepagent::memory::InMemoryBackend::new();
    suite(|embedder| {
        let store = MemoryStore::with_backend(backend.clone()).unwrap();
        match embedder {
            Some(e) => store.with_embedder(e),
            None => store,
        }
    })
    .await;
}

#[tokio::test]
async fn json_file() {
    let dir = tempfile::tempdir().unwrap();
    suite(|embedder| {
        let store = MemoryStore::open(dir.path()).unwrap();
        match embedder {
            Some(e) => store.with_embedder(e),
            None => store,
        }
    })
    .await;
    // The line carries the vector as base64 beside the model's name.
    let file = std::fs::read_to_string(dir.path().join("entries.jsonl")).unwrap();
    let line = file
        .lines()
        .find(|l| l.contains("puppy called Rex"))
        .unwrap();
    let json: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(json["embedding"]["model"], "meaning-v1");
    assert_eq!(
        json["embedding"]["vector"].as_str().unwrap().len(),
        (DIMS * 4).div_ceil(3) * 4
    );
}

#[needs(redis)]
#[tokio::test]
async fn redis() {
    let server = RedisServer::start();
    let url = server.url();
    suite(|embedder| {
        let store = MemoryStore::redis(url.clone()).unwrap();
        match embedder {
            Some(e) => store.with_embedder(e),
            None => store,
        }
    })
    .await;
}

/// A file written before embeddings existed: its entries load and are
/// found by words in a store with an embedder; new ones are found by
/// meaning; after a restart the vectors are taken in again from the file
/// while the index on disk goes on where it stopped.
#[tokio::test]
async fn older_entries_and_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let old = r#"{"id":"old-1","user":"alice","kind":"fact","text":"The old server is called Atlas","tags":[],"created_at":"2025-01-02T03:04:05Z"}"#;
    std::fs::write(dir.path().join("entries.jsonl"), format!("{old}\n")).unwrap();
    let embedder = MeaningEmbedder::new("meaning-v1");
    {
        let store = MemoryStore::open(dir.path())
            .unwrap()
            .with_embedder(embedder.clone());
        let hits = store
            .search("alice", &MemoryQuery::new("Atlas server"))
            .await
            .unwrap();
        assert_eq!(texts(&hits), ["The old server is called Atlas"]);
        store.add(&fact("alice", REX)).await.unwrap();
        let entries = store.entries("alice").await.unwrap();
        assert!(entries[0].embedding.is_none());
        assert!(entries[1].embedding.is_some());
    }
    // The old line is as it was.
    let file = std::fs::read_to_string(dir.path().join("entries.jsonl")).unwrap();
    assert_eq!(file.lines().next(), Some(old));

    let store = MemoryStore::open(dir.path())
        .unwrap()
        .with_embedder(embedder);
    let hits = store
        .search("alice", &MemoryQuery::new(QUESTION).limit(1))
        .await
        .unwrap();
    assert_eq!(texts(&hits), [REX]);
    let hits = store
        .search("alice", &MemoryQuery::new("Atlas"))
        .await
        .unwrap();
    assert_eq!(texts(&hits)[0], "The old server is called Atlas");
}

/// An embedder that fails: entries are stored (for words), the question
/// is searched by words, nothing fails; once it is back, new entries and
/// questions use meaning again.
#[tokio::test]
async fn a_failing_embedder_leaves_words() {
    let embedder = MeaningEmbedder::new("meaning-v1");
    let store = MemoryStore::in_memory()
        .unwrap()
        .with_embedder(embedder.clone());
    embedder.fail.store(true, Ordering::Relaxed);
    store.add(&fact("alice", REX)).await.unwrap();
    assert!(store.entries("alice").await.unwrap()[0].embedding.is_none());
    let hits = store
        .search("alice", &MemoryQuery::new("Rex"))
        .await
        .unwrap();
    assert_eq!(texts(&hits), [REX]);
    assert!(store
        .search("alice", &MemoryQuery::new(QUESTION))
        .await
        .unwrap()
        .is_empty());

    embedder.fail.store(false, Ordering::Relaxed);
    store
        .add(&fact("alice", "Alice's hound is named Bo"))
        .await
        .unwrap();
    let hits = store
        .search("alice", &MemoryQuery::new(QUESTION).limit(1))
        .await
        .unwrap();
    assert_eq!(texts(&hits), ["Alice's hound is named Bo"]);
}

//! # Memory search speed: 100,000 entries, p50 / p99 of one search
//!
//! Shows: how fast `MemoryStore::search` answers over 100,000 memories of
//! one user (and 20,000 of other users beside them), in memory (RAM index)
//! and in the JSON-file store (index on disk): each query is a few words
//! drawn from the entries' vocabulary, ranked by relevance and recency.
//! Then the same searches by words and meaning (hybrid: reciprocal rank
//! fusion of the words' ranking and the vectors'), with 576-dimensional
//! vectors (SmolLM2-135M's width): synthetic ones, clustered by topic, and
//! a synthetic embedder for the questions (microseconds, so the figures
//! are the search's own); how often the vector stage finds the exact 10
//! nearest (recall against a brute-force scan); and, when an embeddings
//! server is named, the time of one real embedding call (the embedder's
//! own time, apart: it adds to every hybrid search).
//!
//! Needs: nothing (a temporary directory for the file store); for the real
//! embedder's time, an OpenAI-compatible embeddings server in
//! `LC_AGENT_EMBEDDINGS_URL` (e.g. `python3 -m llama_cpp.server --model
//! SmolLM2-135M-Instruct.Q4_1.gguf --embedding true --port 8090`, then
//! `LC_AGENT_EMBEDDINGS_URL=http://127.0.0.1:8090/v1`; the model name in
//! `LC_AGENT_EMBEDDINGS_MODEL`, default `smollm2`). Build it in release
//! mode, the figures are meaningless otherwise.
//!
//! Run: `cargo run --release --example memory_search`

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::Utc;
use lc_agent::{Embedder, ModelError};
use lc_agent_deepagent::memory::{MemoryEntry, MemoryKind, MemoryQuery, MemoryStore};

const ENTRIES: usize = 100_000;
const OTHERS: usize = 20_000;
const QUERIES: usize = 2_000;
const SETTLE_SECS: u64 = 3;
/// SmolLM2-135M's embedding width.
const DIMS: usize = 576;
/// Topics the synthetic vectors cluster around.
const TOPICS: u64 = 1_000;
const RECALL_QUERIES: usize = 100;

/// A deterministic vector for `seed`: its topic's centre plus noise.
fn synthetic(seed: u64) -> Vec<f32> {
    let mut centre = Rng(0x51_7cc1_b727_220a ^ (seed % TOPICS).wrapping_mul(0x9e37_79b9));
    let mut noise = Rng(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1);
    (0..DIMS)
        .map(|_| {
            let c = centre.below(2001) as f32 / 1000.0 - 1.0;
            let n = noise.below(2001) as f32 / 1000.0 - 1.0;
            c + 0.7 * n
        })
        .collect()
}

fn text_seed(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// Questions' vectors in microseconds (see [`synthetic`]).
struct SyntheticEmbedder;

#[async_trait]
impl Embedder for SyntheticEmbedder {
    fn model_name(&self) -> &str {
        "synthetic-576"
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        Ok(texts.iter().map(|t| synthetic(text_seed(t))).collect())
    }
}

fn unit(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / norm).collect()
}

/// A small xorshift generator (fixed seed: the same data every run).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn vocabulary() -> Vec<String> {
    let syllables = [
        "ka", "lo", "mi", "ter", "van", "sul", "dre", "po", "gin", "ra", "tu", "bel",
    ];
    let mut words = Vec::new();
    for a in syllables {
        for b in syllables {
            for c in ["", "n", "s", "ro", "la"] {
                words.push(format!("{a}{b}{c}"));
            }
        }
    }
    words
}

fn sentence(rng: &mut Rng, words: &[String], n: usize) -> String {
    (0..n)
        .map(|_| {
            // A skewed choice: some words are common, most are rare.
            let i = rng.below(words.len()).min(rng.below(words.len()));
            words[i].as_str()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

async fn measure(name: &str, store: &MemoryStore, rng: &mut Rng, words: &[String]) {
    let queries: Vec<String> = (0..QUERIES).map(|_| sentence(rng, words, 4)).collect();
    // Warm up (the first search of a user also checks the index).
    for q in queries.iter().take(50) {
        store
            .search("alice", &MemoryQuery::new(q.as_str()))
            .await
            .expect("search");
    }
    let mut times: Vec<Duration> = Vec::with_capacity(QUERIES);
    let mut hits = 0;
    for q in &queries {
        let start = Instant::now();
        let found = store
            .search("alice", &MemoryQuery::new(q.as_str()))
            .await
            .expect("search");
        times.push(start.elapsed());
        hits += found.len();
    }
    times.sort();
    let at = |p: f64| times[((times.len() as f64 * p) as usize).min(times.len() - 1)];
    println!(
        "{name}: {QUERIES} searches over {ENTRIES} entries: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms ({:.1} hits per search)",
        at(0.50).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        times[times.len() - 1].as_secs_f64() * 1e3,
        hits as f64 / QUERIES as f64,
    );
}

/// Hybrid search over the same entries with vectors; recall of the
/// vector stage against an exact scan.
async fn hybrid(
    entries: &[MemoryEntry],
    rng: &mut Rng,
    words: &[String],
) -> Result<(), Box<dyn std::error::Error>> {
    let with_vectors: Vec<MemoryEntry> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            e.clone()
                .with_embedding("synthetic-576", synthetic(i as u64))
        })
        .collect();
    let store = MemoryStore::in_memory()?.with_embedder(Arc::new(SyntheticEmbedder));
    let start = Instant::now();
    for chunk in with_vectors.chunks(10_000) {
        store.add_many(chunk).await?;
    }
    println!(
        "hybrid, in memory: stored and indexed {} entries with {DIMS}-dimensional vectors in {:.2} s",
        with_vectors.len(),
        start.elapsed().as_secs_f64()
    );
    tokio::time::sleep(Duration::from_secs(SETTLE_SECS)).await;
    measure("hybrid, in memory", &store, rng, words).await;

    // Recall@10 of the vector stage: questions that share no word with
    // any entry are ranked by meaning alone.
    let alice: Vec<(usize, Vec<f32>)> = with_vectors
        .iter()
        .enumerate()
        .filter(|(_, e)| e.user == "alice")
        .map(|(i, e)| {
            (
                i,
                unit(
                    &e.embedding
                        .as_ref()
                        .map(|m| m.vector.clone())
                        .unwrap_or_default(),
                ),
            )
        })
        .collect();
    let mut found = 0;
    for q in 0..RECALL_QUERIES {
        let text = format!("zq{q}");
        let query = unit(&synthetic(text_seed(&text)));
        let mut exact: Vec<(f32, usize)> = alice
            .iter()
            .map(|(i, v)| (v.iter().zip(&query).map(|(a, b)| a * b).sum::<f32>(), *i))
            .collect();
        exact.sort_by(|a, b| b.0.total_cmp(&a.0));
        let exact: Vec<&str> = exact[..10]
            .iter()
            .map(|(_, i)| with_vectors[*i].id.as_str())
            .collect();
        let hits = store
            .search("alice", &MemoryQuery::new(text).limit(10))
            .await?;
        found += hits
            .iter()
            .filter(|h| exact.contains(&h.entry.id.as_str()))
            .count();
    }
    println!(
        "hybrid: recall@10 of the vector stage against an exact scan: {:.3} ({RECALL_QUERIES} questions)",
        found as f64 / (RECALL_QUERIES * 10) as f64
    );
    Ok(())
}

/// One real embedding call, when a server is named.
async fn real_embedder() -> Result<(), Box<dyn std::error::Error>> {
    let Ok(url) = std::env::var("LC_AGENT_EMBEDDINGS_URL") else {
        println!("embedder: set LC_AGENT_EMBEDDINGS_URL to time one real embedding call");
        return Ok(());
    };
    let model = std::env::var("LC_AGENT_EMBEDDINGS_MODEL").unwrap_or_else(|_| "smollm2".into());
    let embedder = lc_agent::OpenAiEmbedder::new(
        lc_agent::HttpSettings::default()
            .base_url(url.clone())
            .model(model.clone()),
    )?;
    let question = ["what is my dog's name?".to_string()];
    embedder.embed(&question).await?; // a warm connection
    let mut times = Vec::new();
    let mut dims = 0;
    for _ in 0..20 {
        let start = Instant::now();
        dims = embedder.embed(&question).await?[0].len();
        times.push(start.elapsed());
    }
    times.sort();
    println!(
        "embedder {model} at {url}: one question ({dims} dimensions): p50 {:.1} ms, max {:.1} ms (20 calls; add it to each hybrid search)",
        times[times.len() / 2].as_secs_f64() * 1e3,
        times[times.len() - 1].as_secs_f64() * 1e3,
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let words = vocabulary();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let now = Utc::now();
    let mut entries: Vec<MemoryEntry> = (0..ENTRIES)
        .map(|i| {
            let kind = if i % 10 == 0 {
                MemoryKind::Fact
            } else {
                MemoryKind::Turn
            };
            MemoryEntry::new("alice", kind, sentence(&mut rng, &words, 24))
                .created_at(now - chrono::Duration::minutes((ENTRIES - i) as i64))
        })
        .collect();
    entries.extend((0..OTHERS).map(|i| {
        MemoryEntry::new(
            format!("user-{}", i % 50),
            MemoryKind::Turn,
            sentence(&mut rng, &words, 24),
        )
    }));

    let dir = tempfile::tempdir()?;
    for (name, store) in [
        ("in memory", MemoryStore::in_memory()?),
        ("json file", MemoryStore::open(dir.path())?),
    ] {
        let start = Instant::now();
        for chunk in entries.chunks(10_000) {
            store.add_many(chunk).await?;
        }
        println!(
            "{name}: stored and indexed {} entries in {:.2} s",
            entries.len(),
            start.elapsed().as_secs_f64()
        );
        // The index merges its segments in the background after a bulk
        // load; measure the settled index, as a long-lived memory is.
        tokio::time::sleep(Duration::from_secs(SETTLE_SECS)).await;
        measure(name, &store, &mut rng, &words).await;
    }
    drop(dir);
    hybrid(&entries, &mut rng, &words).await?;
    real_embedder().await
}

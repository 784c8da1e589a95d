//! # Memory search speed: 100,000 entries, p50 / p99 of one search
//!
//! Shows: how fast `MemoryStore::search` answers over 100,000 memories of
//! one user (and 20,000 of other users beside them), in memory (RAM index)
//! and in the JSON-file store (index on disk): each query is a few words
//! drawn from the entries' vocabulary, ranked by relevance and recency.
//!
//! Needs: nothing (a temporary directory for the file store). Build it in
//! release mode, the figures are meaningless otherwise.
//!
//! Run: `cargo run --release --example memory_search`

use std::time::{Duration, Instant};

use chrono::Utc;
use lc_agent_deepagent::memory::{MemoryEntry, MemoryKind, MemoryQuery, MemoryStore};

const ENTRIES: usize = 100_000;
const OTHERS: usize = 20_000;
const QUERIES: usize = 2_000;
const SETTLE_SECS: u64 = 3;

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
    Ok(())
}

//! `MemoryStore` on every backend: the same suite in memory, in the JSON
//! file and in Redis (a redis-server started by the test), then what only
//! the file must survive: a restart, a lost or stale index, a torn line,
//! and a writer killed with SIGKILL in the middle of its appends.
//!
//! ```text
//!  suite(open)            open() twice = two sessions / processes / servers on one memory
//!    per user, never across users · relevance beats recency · recency breaks ties
//!    empty query = newest · kinds and tags · bad input stores nothing
//!  kill_mid_append        child: add, print id, add, ... ◀── SIGKILL at a random moment
//!                         parent: every printed id is in the file and found by search
//! ```
#![allow(clippy::unwrap_used, unreachable_pub)]

#[path = "../../../tests/support/redis.rs"]
mod redis_server;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chrono::Utc;
use lc_agent_deepagent::memory::{
    MemoryEntry, MemoryError, MemoryKind, MemoryQuery, MemoryStore, RedisMemoryBackend,
};

fn fact(user: &str, text: &str) -> MemoryEntry {
    MemoryEntry::new(user, MemoryKind::Fact, text)
}

fn texts(hits: &[lc_agent_deepagent::memory::MemoryHit]) -> Vec<&str> {
    hits.iter().map(|h| h.entry.text.as_str()).collect()
}

/// The suite every backend passes; `open` gives a new store on the same
/// data (another session, process or server).
async fn suite(open: impl Fn() -> MemoryStore) {
    let first = open();

    // Per user: alice's facts reach alice only, in another store too.
    first
        .add(&fact("alice", "Alice's cat is called Miso"))
        .await
        .unwrap();
    first
        .add(&fact("bob", "Bob's cat is called Tiger"))
        .await
        .unwrap();
    let second = open();
    let q = MemoryQuery::new("what is the cat called?");
    assert_eq!(
        texts(&second.search("alice", &q).await.unwrap()),
        ["Alice's cat is called Miso"]
    );
    assert_eq!(
        texts(&second.search("bob", &q).await.unwrap()),
        ["Bob's cat is called Tiger"]
    );
    assert!(second.search("carol", &q).await.unwrap().is_empty());
    // Query words that look like syntax are words.
    let sneaky = MemoryQuery::new("user:bob Tiger cat");
    assert!(second
        .search("alice", &sneaky)
        .await
        .unwrap()
        .iter()
        .all(|h| h.entry.user == "alice"));

    // Relevance beats recency: an old turn that matches wins over many
    // new ones that match a little.
    let old = MemoryEntry::new(
        "alice",
        MemoryKind::Turn,
        "User: which database should billing use?\nAssistant: We picked PostgreSQL 16 for the billing database.",
    )
    .created_at(Utc::now() - chrono::Duration::days(120));
    first.add(&old).await.unwrap();
    let recent: Vec<MemoryEntry> = (0..30)
        .map(|i| {
            MemoryEntry::new(
                "alice",
                MemoryKind::Turn,
                format!("User: note {i} about the garden, lunch plans and the weather\nAssistant: the nightly database backup ran fine"),
            )
        })
        .collect();
    first.add_many(&recent).await.unwrap();
    let hits = second
        .search(
            "alice",
            &MemoryQuery::new("Which database did we pick for billing?"),
        )
        .await
        .unwrap();
    assert_eq!(hits[0].entry.id, old.id, "{:?}", texts(&hits));
    assert_eq!(hits.len(), MemoryQuery::DEFAULT_LIMIT);

    // Recency breaks a tie of relevance.
    let older = fact("dave", "The deploy window is Tuesday")
        .created_at(Utc::now() - chrono::Duration::days(60));
    let newer = fact("dave", "The deploy window is Thursday");
    first
        .add_many(&[older.clone(), newer.clone()])
        .await
        .unwrap();
    let hits = second
        .search("dave", &MemoryQuery::new("deploy window"))
        .await
        .unwrap();
    assert_eq!(hits[0].entry.id, newer.id);
    assert!(hits[0].score > hits[1].score);

    // No words: the newest first; kinds and tags filter.
    let summary = MemoryEntry::new("dave", MemoryKind::Summary, "Dave ships on Thursdays")
        .with_tags(["session:s1"]);
    first.add(&summary).await.unwrap();
    let newest = second
        .search("dave", &MemoryQuery::new("").limit(2))
        .await
        .unwrap();
    assert_eq!(newest[0].entry, summary);
    assert_eq!(newest[1].entry.id, newer.id);
    assert_eq!(
        second.latest("dave", MemoryKind::Summary).await.unwrap(),
        Some(summary.clone())
    );
    assert_eq!(second.latest("dave", MemoryKind::Turn).await.unwrap(), None);
    let facts = second
        .search("dave", &MemoryQuery::new("Thursday").kind(MemoryKind::Fact))
        .await
        .unwrap();
    assert_eq!(texts(&facts), ["The deploy window is Thursday"]);
    let tagged = second
        .search("dave", &MemoryQuery::new("Thursday").tag("session:s1"))
        .await
        .unwrap();
    assert_eq!(texts(&tagged), ["Dave ships on Thursdays"]);
    let untagged = second
        .search(
            "dave",
            &MemoryQuery::new("Thursday").exclude_tag("session:s1"),
        )
        .await
        .unwrap();
    assert_eq!(texts(&untagged), ["The deploy window is Thursday"]);

    // Bad input is refused and stores nothing.
    let before = second.entries("alice").await.unwrap().len();
    assert!(matches!(
        first.add(&fact("../etc", "x")).await,
        Err(MemoryError::User { .. })
    ));
    let err = first
        .add_many(&[fact("alice", "fine"), fact("alice", "  ")])
        .await
        .unwrap_err();
    assert!(err.to_string().contains("has no text"), "{err}");
    let huge = fact("alice", &"x".repeat(70_000));
    assert!(matches!(
        first.add(&huge).await,
        Err(MemoryError::Invalid(_))
    ));
    assert!(matches!(
        second.search("bad user", &q).await,
        Err(MemoryError::User { .. })
    ));
    assert_eq!(second.entries("alice").await.unwrap().len(), before);
    assert_eq!(
        second.entries("alice").await.unwrap()[0].text,
        "Alice's cat is called Miso"
    );
}

#[tokio::test]
async fn in_memory_suite() {
    let backend = lc_agent_deepagent::memory::InMemoryBackend::new();
    suite(|| MemoryStore::with_backend(backend.clone()).unwrap()).await;
}

#[tokio::test]
async fn json_file_suite() {
    let dir = tempfile::tempdir().unwrap();
    // Each store opens the directory anew; the first one writes the index
    // on disk, the others (the index is locked) build theirs in RAM.
    suite(|| MemoryStore::open(dir.path()).unwrap()).await;
}

#[tokio::test]
async fn redis_suite() {
    let Some(server) = redis_server::RedisServer::start("redis_suite") else {
        return;
    };
    let url = server.url();
    suite(|| MemoryStore::redis(url.clone()).unwrap()).await;

    // One list per user, hash-tagged like the user's sessions.
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut conn)
        .await
        .unwrap();
    keys.sort();
    assert_eq!(
        keys,
        [
            "lc-agent:user:{alice}:memory",
            "lc-agent:user:{bob}:memory",
            "lc-agent:user:{dave}:memory"
        ]
    );
    assert_eq!(
        RedisMemoryBackend::new(&url).unwrap().key("alice"),
        "lc-agent:user:{alice}:memory"
    );

    // A server that is gone is an error, not an empty memory.
    drop(server);
    let gone = MemoryStore::redis(url).unwrap();
    let err = gone
        .search("alice", &MemoryQuery::new("cat"))
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::Redis { .. }), "{err}");
}

/// The file store after a restart, a lost index, a stale index and a
/// torn last line.
#[tokio::test]
async fn json_file_restart_and_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let entries: Vec<MemoryEntry> = (0..50)
        .map(|i| fact("alice", &format!("fact number {i} about kiwi")))
        .collect();
    {
        let store = MemoryStore::open(dir.path()).unwrap();
        store.add_many(&entries).await.unwrap();
    }
    let all = |store: MemoryStore| async move {
        let hits = store
            .search("alice", &MemoryQuery::new("kiwi").limit(1000))
            .await
            .unwrap();
        let mut ids: Vec<String> = hits.into_iter().map(|h| h.entry.id).collect();
        ids.sort();
        ids
    };
    let mut want: Vec<String> = entries.iter().map(|e| e.id.clone()).collect();
    want.sort();

    // Restart: the same entries, the index on disk as it was.
    let store = MemoryStore::open(dir.path()).unwrap();
    assert_eq!(store.entries("alice").await.unwrap(), entries);
    assert_eq!(all(store).await, want);

    // The index is lost: rebuilt from the entries.
    std::fs::remove_dir_all(dir.path().join("index")).unwrap();
    assert_eq!(all(MemoryStore::open(dir.path()).unwrap()).await, want);

    // The index is garbage: rebuilt.
    std::fs::write(dir.path().join("index").join("meta.json"), "not json").unwrap();
    assert_eq!(all(MemoryStore::open(dir.path()).unwrap()).await, want);

    // The entries were replaced (a backup restored): the stale index is rebuilt.
    let file = dir.path().join("entries.jsonl");
    let replaced: Vec<MemoryEntry> = (0..3)
        .map(|i| fact("alice", &format!("restored kiwi {i}")))
        .collect();
    let lines: String = replaced
        .iter()
        .map(|e| serde_json::to_string(e).unwrap() + "\n")
        .collect();
    std::fs::write(&file, lines).unwrap();
    let store = MemoryStore::open(dir.path()).unwrap();
    let mut ids: Vec<String> = replaced.iter().map(|e| e.id.clone()).collect();
    ids.sort();
    assert_eq!(all(store.clone()).await, ids);
    drop(store);

    // A torn last line (a killed writer) is never read and is cut by the next append.
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    f.write_all(br#"{"id":"torn","user":"alice","ki"#).unwrap();
    drop(f);
    let store = MemoryStore::open(dir.path()).unwrap();
    assert_eq!(store.entries("alice").await.unwrap(), replaced);
    let next = fact("alice", "after the tear, kiwi");
    store.add(&next).await.unwrap();
    let mut want = replaced.clone();
    want.push(next);
    assert_eq!(store.entries("alice").await.unwrap(), want);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        !text.contains("torn") && text.lines().count() == 4,
        "{text}"
    );
}

/// Set in the child's environment: the memory directory.
const CHILD_DIR: &str = "LC_AGENT_KILL_MEMORY_DIR";

/// The child: adds entries one by one, printing each id once committed.
#[test]
#[ignore = "helper process of kill_mid_append (it runs it with its environment)"]
fn kill_memory_child() {
    let Ok(dir) = std::env::var(CHILD_DIR) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = MemoryStore::open(&dir).unwrap();
        for i in 0..100_000 {
            // Big enough that a line takes several writes now and then.
            let text = format!("kiwi entry {i} {}", "padding ".repeat(i % 5 * 1500));
            let entry = fact("alice", &text);
            store.add(&entry).await.unwrap();
            println!("{}", entry.id);
        }
    });
}

#[test]
fn kill_mid_append() {
    const ROUNDS: usize = 8;
    let dir = tempfile::tempdir().unwrap();
    let mut acked: Vec<String> = Vec::new();
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for round in 0..ROUNDS {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "kill_memory_child",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_DIR, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                // The first id shares its line with the harness's "test ... ".
                .filter_map(|l| {
                    l.split_whitespace()
                        .last()
                        .filter(|w| w.len() == 36)
                        .map(str::to_string)
                })
                .collect::<Vec<String>>()
        });
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // An add is an fsynced append and an index commit (~0.1 s in a
        // debug build): kill within the first few.
        let delay = Duration::from_millis(300 + seed % 800);
        let start = Instant::now();
        while start.elapsed() < delay {
            assert!(
                child.try_wait().unwrap().is_none(),
                "round {round}: the writer stopped early"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        acked.extend(reader.join().unwrap());

        // Every entry the writer reported is in the file and found by search.
        runtime.block_on(check(dir.path(), &acked, round));
    }
    assert!(
        acked.len() >= ROUNDS,
        "only {} entries were committed",
        acked.len()
    );
    eprintln!(
        "kill_mid_append: {} committed entries survived {ROUNDS} kills",
        acked.len()
    );
}

async fn check(dir: &Path, acked: &[String], round: usize) {
    let store = MemoryStore::open(dir).unwrap();
    let stored: std::collections::HashSet<String> = store
        .entries("alice")
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    let found: std::collections::HashSet<String> = store
        .search("alice", &MemoryQuery::new("kiwi").limit(1_000_000))
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.entry.id)
        .collect();
    for id in acked {
        assert!(
            stored.contains(id),
            "round {round}: committed entry {id} lost from the file"
        );
        assert!(
            found.contains(id),
            "round {round}: committed entry {id} not found by search"
        );
    }
    assert_eq!(
        stored, found,
        "round {round}: the index and the file disagree"
    );
}

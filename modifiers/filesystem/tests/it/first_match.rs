//! grep's `files_with_matches` mode searches each file only to its first
//! match (no line is reported, so one settles the file), and `max_count`
//! there counts files: the same answers on every backend. Once `max_count`
//! stops an answer, notes name only the files before the last one printed
//! (the disk backend does not search further; the in-memory ones, which
//! search every file, leave the later notes out the same way).

use lc_agent::RunnableNetwork;
use lc_agent_filesystem::{
    Backend, CompositeBackend, FilesystemBackend, InMemoryStore, StateBackend, StoreBackend,
};
use serde_json::json;

use crate::common::{self, case, Case};

/// The files: `a` with 50 matching lines, `b` and `c` with one, `d` with
/// none, and `long` whose first line matches and whose second is longer
/// than grep's line limit (8 MiB).
fn files(prefix: &str) -> Vec<(String, Vec<u8>)> {
    let mut long = b"hit\n".to_vec();
    long.extend(std::iter::repeat_n(b'a', 9 << 20));
    long.push(b'\n');
    vec![
        (format!("{prefix}/g/a.txt"), "hit\n".repeat(50).into_bytes()),
        (format!("{prefix}/g/b.txt"), b"miss\nhit\n".to_vec()),
        (format!("{prefix}/g/c.txt"), b"hit\n".to_vec()),
        (format!("{prefix}/g/d.txt"), b"miss\n".to_vec()),
        (format!("{prefix}/g/long.txt"), long.clone()),
        // Long lines (not searched: a note) before and after matches.
        (format!("{prefix}/n/a_long.txt"), long[4..].to_vec()),
        (format!("{prefix}/n/b.txt"), b"hit\nhit\n".to_vec()),
        (format!("{prefix}/n/c_long.txt"), long[4..].to_vec()),
        (format!("{prefix}/n/d.txt"), b"hit\n".to_vec()),
    ]
}

fn table() -> Vec<Case> {
    let note = "Note: {R}/g/long.txt was not searched: it has a line longer than 8 MiB.";
    let a_long = "Note: {R}/n/a_long.txt was not searched: it has a line longer than 8 MiB.";
    let c_long = "Note: {R}/n/c_long.txt was not searched: it has a line longer than 8 MiB.";
    vec![
        // The file with 50 matches is one file: max_count counts files.
        case(
            "grep",
            json!({"pattern": "hit", "path": "{R}/g", "max_count": 2}),
            "{R}/g/a.txt\n{R}/g/b.txt\n... (stopped after 2 matches; narrow the search)",
        ),
        case(
            "grep",
            json!({"pattern": "hit", "path": "{R}/g", "max_count": 4}),
            "{R}/g/a.txt\n{R}/g/b.txt\n{R}/g/c.txt\n{R}/g/long.txt",
        ),
        // The search of `long` stopped at its first line: it is listed, not
        // skipped for its long line.
        case(
            "grep",
            json!({"pattern": "hit", "path": "{R}/g"}),
            "{R}/g/a.txt\n{R}/g/b.txt\n{R}/g/c.txt\n{R}/g/long.txt",
        ),
        case(
            "grep",
            json!({"pattern": "hit", "path": "{R}/g/long.txt"}),
            "{R}/g/long.txt",
        ),
        // The other modes read on: they report lines.
        case(
            "grep",
            json!({"pattern": "hit", "path": "{R}/g", "output_mode": "count"}),
            format!("{note}\n{{R}}/g/a.txt: 50\n{{R}}/g/b.txt: 1\n{{R}}/g/c.txt: 1"),
        ),
        // `max_count` stops the answer before `long`: no note for it.
        case(
            "grep",
            json!({"pattern": "hit", "path": "{R}/g", "output_mode": "count", "max_count": 50}),
            "{R}/g/a.txt: 50\n... (stopped after 50 matches; narrow the search)",
        ),
        case(
            "grep",
            json!({"pattern": "hit", "path": "{R}/g", "output_mode": "count", "max_count": 51}),
            "{R}/g/a.txt: 50\n{R}/g/b.txt: 1\n... (stopped after 51 matches; narrow the search)",
        ),
        // A file before the last one printed keeps its note; one after it
        // (`c_long`, searched by the disk backend on its way to the match
        // that proves more exist) has none.
        case(
            "grep",
            json!({"pattern": "hit", "path": "{R}/n", "output_mode": "count", "max_count": 1}),
            format!("{a_long}\n{{R}}/n/b.txt: 1\n... (stopped after 1 matches; narrow the search)"),
        ),
        case(
            "grep",
            json!({"pattern": "hit", "path": "{R}/n", "output_mode": "count", "max_count": 2}),
            format!("{a_long}\n{{R}}/n/b.txt: 2\n... (stopped after 2 matches; narrow the search)"),
        ),
        case(
            "grep",
            json!({"pattern": "hit", "path": "{R}/n", "output_mode": "content", "max_count": 1}),
            format!(
                "{a_long}\n{{R}}/n/b.txt:1:hit\n... (stopped after 1 matches; narrow the search)"
            ),
        ),
        case(
            "grep",
            json!({"pattern": "hit", "path": "{R}/n", "max_count": 1}),
            format!("{a_long}\n{{R}}/n/b.txt\n... (stopped after 1 matches; narrow the search)"),
        ),
        // Not stopped: every note.
        case(
            "grep",
            json!({"pattern": "hit", "path": "{R}/n", "output_mode": "count"}),
            format!("{a_long}\n{c_long}\n{{R}}/n/b.txt: 2\n{{R}}/n/d.txt: 1"),
        ),
    ]
}

async fn golden(backend: &dyn Backend, prefix: &str) {
    for put in backend.upload_files(files(prefix)).await {
        assert_eq!(put.error, None, "{}", put.path);
    }
    let failures = common::run_cases(backend, prefix, table()).await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[tokio::test]
async fn first_match_state_backend() {
    golden(&StateBackend::new(RunnableNetwork::new()), "").await;
}

#[tokio::test]
async fn first_match_filesystem_backend() {
    let dir = tempfile::tempdir().unwrap();
    golden(&FilesystemBackend::new(dir.path()).unwrap(), "").await;
}

#[tokio::test]
async fn first_match_store_backend() {
    golden(&StoreBackend::new(InMemoryStore::new(), ["u", "fs"]), "").await;
}

#[tokio::test]
async fn first_match_composite_routes() {
    let dir = tempfile::tempdir().unwrap();
    let composite = CompositeBackend::new(StateBackend::factory())
        .route("/disk/", FilesystemBackend::new(dir.path()).unwrap())
        .route("/store/", StoreBackend::new(InMemoryStore::new(), ["n"]))
        .resolve(&RunnableNetwork::new());
    golden(&*composite, "/disk").await;
    golden(&*composite, "/store").await;
}

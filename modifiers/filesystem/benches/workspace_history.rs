//! The turn-boundary record and the rewind of a directory workspace on a
//! generated 10,000-file tree (issue 51's targets: nothing changed
//! ≤ 30 ms, 10 files changed ≤ 40 ms, a rewind of 100 changed files
//! ≤ 200 ms).
//!
//! Run: `cargo bench -p lc-agent-filesystem --bench workspace_history`
//! (release). It prints min / median / p90 of each over `ITERS` runs; the
//! tree lives under the target directory (`CARGO_TARGET_TMPDIR` is not
//! set for benches, so under `target/bench-workspace`), its store beside it.
#![allow(clippy::unwrap_used, clippy::print_stdout, missing_docs)]

use std::path::Path;
use std::time::{Duration, Instant};

use lc_agent::{HumanNode, RunnableNetwork};
use lc_agent_filesystem::{
    rewind, FilesystemBackend, HistoryStore, RewindWhat, WorkspaceHistory, WORKSPACE_TREE,
};
use serde_json::json;

const FILES: usize = 10_000;
const ITERS: usize = 30;

fn generate(root: &Path) {
    for i in 0..FILES {
        let dir = root.join(format!("d{:02}/e{:02}", i % 50, (i / 50) % 4));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("f{i:05}.rs")),
            format!("// file {i}\nfn f{i}() -> usize {{ {i} }}\n").repeat(8),
        )
        .unwrap();
    }
}

fn path_of(i: usize) -> String {
    format!("d{:02}/e{:02}/f{i:05}.rs", i % 50, (i / 50) % 4)
}

fn change(root: &Path, first: usize, count: usize, round: usize) {
    for i in first..first + count {
        std::fs::write(root.join(path_of(i)), format!("changed {round} {i}\n")).unwrap();
    }
}

fn report(name: &str, target_ms: u64, mut times: Vec<Duration>) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let median = times[times.len() / 2];
    println!(
        "{name:<34} min {:>7.2} ms  median {:>7.2} ms  p90 {:>7.2} ms  (target ≤ {target_ms} ms: {})",
        ms(times[0]),
        ms(median),
        ms(times[times.len() * 9 / 10]),
        if median <= Duration::from_millis(target_ms) { "met" } else { "MISSED" }
    );
}

fn main() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-workspace");
    let _ = std::fs::remove_dir_all(&base);
    let root = base.join("work");
    std::fs::create_dir_all(&root).unwrap();
    generate(&root);
    // Older than a second: not racily clean.
    std::thread::sleep(Duration::from_millis(1100));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let history = WorkspaceHistory::with_store(&root, HistoryStore::new(base.join("store")));
    let net = RunnableNetwork::new();
    let t = Instant::now();
    let first = rt.block_on(history.record(&net)).unwrap();
    println!(
        "first record (hashes and stores all {FILES} files): {:.1} ms",
        t.elapsed().as_secs_f64() * 1000.0
    );
    let start = HumanNode::new("start");
    net.add_node(&start).unwrap();
    start.set_metadata(WORKSPACE_TREE, json!(first.tree));

    let mut nothing = Vec::new();
    for _ in 0..ITERS {
        let t = Instant::now();
        let r = rt.block_on(history.record(&net)).unwrap();
        nothing.push(t.elapsed());
        assert!(r.changed.is_empty());
    }
    report("record, nothing changed", 30, nothing);

    let mut ten = Vec::new();
    for round in 0..ITERS {
        change(&root, (round * 10) % FILES, 10, round);
        let t = Instant::now();
        let r = rt.block_on(history.record(&net)).unwrap();
        ten.push(t.elapsed());
        assert!(r.changed.len() >= 10);
    }
    report("record, 10 files changed", 40, ten);

    let backend = FilesystemBackend::new(&root).unwrap();
    let mut hundred = Vec::new();
    for round in 0..ITERS {
        change(&root, 5_000, 100, round + 1000);
        rt.block_on(history.record(&net)).unwrap();
        let t = Instant::now();
        let r = rt
            .block_on(rewind(
                &net,
                Some(&history),
                &backend,
                Some(start.id()),
                RewindWhat::Files,
            ))
            .unwrap();
        hundred.push(t.elapsed());
        let files = r.files.unwrap();
        assert!(files.restored.len() >= 100, "{files:?}");
    }
    report("rewind of 100 changed files", 200, hundred);
    let _ = std::fs::remove_dir_all(&base);
}

//! No torn files: a writer process killed with SIGKILL at a random moment
//! of `write_file` / `edit_file` (several MB each) leaves every file with
//! exactly its old or its new bytes, and whatever temp file it left behind
//! is invisible to `ls`, `glob` and `grep`.
//!
//! ```text
//!  kill_mid_write (parent)                 kill_writer_child (this binary again)
//!    spawn ─────────────────────────────▶  write_file / edit_file on 3 files
//!    sleep random 0..T, SIGKILL ───────▶ ✗  (T = shortest whole run, measured first)
//!    each file == old || new; repeat >= 20 rounds; tools never show temp names
//! ```
#![allow(clippy::unwrap_used, unreachable_pub)]

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lc_agent_filesystem::{run_tool, FilesystemBackend};
use serde_json::json;

/// Set in the child's environment: `<root>` and `write` or `edit`.
const CHILD_ROOT: &str = "LC_AGENT_KILL_WRITER_ROOT";
const CHILD_OP: &str = "LC_AGENT_KILL_WRITER_OP";
/// The files each run rewrites (`/link.txt` is a symlink to `/c.txt`).
const FILES: [&str; 3] = ["/a.txt", "/sub/b.txt", "/link.txt"];
const ROUNDS: usize = 30;
const LINES: usize = 120_000;

fn content(word: &str) -> String {
    (0..LINES)
        .map(|i| format!("line {i:06} {word} padding padding\n"))
        .collect()
}

/// The child: rewrites every file from one word to the other.
#[test]
#[ignore = "helper process of kill_mid_write (it runs it with its environment)"]
fn kill_writer_child() {
    let (Ok(root), Ok(op)) = (std::env::var(CHILD_ROOT), std::env::var(CHILD_OP)) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let backend = FilesystemBackend::new(&root).unwrap();
        for file in FILES {
            let current = std::fs::read_to_string(Path::new(&root).join(&file[1..])).unwrap();
            let (from, to) = if current.contains("alpha") {
                ("alpha", "omega")
            } else {
                ("omega", "alpha")
            };
            let args = if op == "write" {
                json!({"file_path": file, "content": content(to), "overwrite": true})
            } else {
                json!({"file_path": file, "old_string": from, "new_string": to, "replace_all": true})
            };
            let tool = if op == "write" { "write_file" } else { "edit_file" };
            let out = run_tool(&backend, tool, &args).await.unwrap();
            assert!(out.content.starts_with("Success"), "{}", out.content);
        }
    });
}

fn spawn_child(root: &Path, op: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["kill_writer_child", "--exact", "--ignored", "--nocapture"])
        .env(CHILD_ROOT, root)
        .env(CHILD_OP, op)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// A small xorshift generator (the seed is printed, `KILL_TEST_SEED` replays it).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

#[tokio::test]
async fn kill_mid_write() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (alpha, omega) = (content("alpha"), content("omega"));
    std::fs::create_dir_all(root.join("sub")).unwrap();
    for file in ["a.txt", "sub/b.txt", "c.txt"] {
        std::fs::write(root.join(file), &alpha).unwrap();
    }
    std::os::unix::fs::symlink("c.txt", root.join("link.txt")).unwrap();
    let check = |round: usize| {
        for file in ["a.txt", "sub/b.txt", "c.txt"] {
            let bytes = std::fs::read(root.join(file)).unwrap();
            assert!(
                bytes == alpha.as_bytes() || bytes == omega.as_bytes(),
                "round {round}: {file} is torn ({} bytes)",
                bytes.len()
            );
        }
        assert!(std::fs::symlink_metadata(root.join("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink());
    };

    // Whole runs (not killed) set the range of delays: the shortest one.
    let mut full = Duration::MAX;
    for op in ["write", "edit", "write", "edit"] {
        let start = Instant::now();
        let status = spawn_child(root, op).wait().unwrap();
        assert!(status.success(), "{op} child failed");
        full = full.min(start.elapsed());
        check(0);
    }
    let seed = std::env::var("KILL_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    let mut rng = Rng(seed);
    let mut killed_running = 0;
    for round in 1..=ROUNDS {
        let op = if round % 2 == 0 { "write" } else { "edit" };
        let mut child = spawn_child(root, op);
        let delay = rng.below(full.as_micros() as u64);
        std::thread::sleep(Duration::from_micros(delay));
        if child.try_wait().unwrap().is_none() {
            killed_running += 1;
        }
        child.kill().unwrap_or(());
        child.wait().unwrap();
        check(round);
    }
    eprintln!(
        "kill_mid_write: seed {seed}, {ROUNDS} rounds, {killed_running} killed while running, \
         whole run {full:?}, {} temp files left",
        common::temp_files(root).len()
    );
    assert!(
        killed_running >= ROUNDS / 2,
        "only {killed_running} of {ROUNDS} kills landed while the writer ran"
    );

    // Left-over temp files are never shown by the tools.
    let backend = FilesystemBackend::new(root).unwrap();
    let call = |tool: &'static str, args: serde_json::Value| {
        let backend = backend.clone();
        async move { run_tool(&backend, tool, &args).await.unwrap().content }
    };
    assert_eq!(
        call("ls", json!({"path": "/", "recursive": true})).await,
        "/a.txt\n/c.txt\n/link.txt\n/sub/\n/sub/b.txt"
    );
    assert_eq!(call("ls", json!({"path": "/sub"})).await, "/sub/b.txt");
    assert_eq!(
        call("glob", json!({"pattern": "**"})).await,
        "/a.txt\n/c.txt\n/link.txt\n/sub/b.txt"
    );
    assert_eq!(
        call("grep", json!({"pattern": "line 000000 (alpha|omega)"})).await,
        "/a.txt\n/c.txt\n/link.txt\n/sub/b.txt"
    );
}

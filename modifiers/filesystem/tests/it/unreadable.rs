//! Folders the process cannot read are named, not silently skipped
//! (issue 36 item 3): `ls` (recursive), `glob` and `grep` print a note per
//! path they could not read (at most 20, then how many more), then their
//! answer.
//!
//! Root reads every folder whatever its mode, so when the tests run as root
//! the cases run in a child process (this binary again) under `setpriv` as
//! the `nobody` user, without capabilities; as any other user they run in
//! the test process itself.
//!
//! ```text
//!  unreadable_folders_are_named (parent)    unreadable_child (as nobody)
//!    tree: /t/open/ok.txt, /t/locked/ (000),   cases on FilesystemBackend,
//!    /t/shut.txt (000), /many/d00..d21 (000)   LocalShellBackend, a composite
//!    setpriv --reuid 65534 ... ─────────────▶  route to disk, path rules
//! ```
//!
//! In-memory backends (state, store) hold no folder they cannot read, so
//! the same calls there print no note (checked on the state backend).

use crate::common::{case, run_cases, Case};

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use lc_agent::RunnableNetwork;
use lc_agent_filesystem::{
    Backend, CompositeBackend, FilesystemBackend, LocalShellBackend, PermissionRule, Permissions,
    RuleMode, StateBackend,
};
use serde_json::json;

/// Set in the child's environment: the tree's root.
const CHILD_ROOT: &str = "LC_AGENT_UNREADABLE_ROOT";
/// Unreadable folders under `/many` (more than the 20 named).
const MANY: usize = 22;

fn build_tree(root: &Path) {
    let mode =
        |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    std::fs::create_dir_all(root.join("t/open")).unwrap();
    std::fs::create_dir_all(root.join("t/locked")).unwrap();
    std::fs::write(root.join("t/open/ok.txt"), "needle\n").unwrap();
    std::fs::write(root.join("t/locked/secret.txt"), "needle\n").unwrap();
    std::fs::write(root.join("t/shut.txt"), "needle\n").unwrap();
    for i in 0..MANY {
        std::fs::create_dir_all(root.join(format!("many/d{i:02}"))).unwrap();
        std::fs::write(root.join(format!("many/d{i:02}/x.txt")), "x\n").unwrap();
    }
    // Readable by others up to the locked parts (the child runs as nobody).
    for dir in [
        root,
        &root.join("t"),
        &root.join("t/open"),
        &root.join("many"),
    ] {
        mode(dir, 0o755);
    }
    mode(&root.join("t/open/ok.txt"), 0o644);
    mode(&root.join("t/locked"), 0o000);
    mode(&root.join("t/shut.txt"), 0o000);
    for i in 0..MANY {
        mode(&root.join(format!("many/d{i:02}")), 0o000);
    }
}

fn table() -> Vec<Case> {
    let many_notes: String = (0..20)
        .map(|i| format!("Note: could not read {{R}}/many/d{i:02}/; not searched.\n"))
        .collect();
    vec![
        case("grep", json!({"pattern": "needle", "path": "{R}/t"}), "Note: could not read {R}/t/locked/; not searched.\nNote: could not read {R}/t/shut.txt; not searched.\n{R}/t/open/ok.txt"),
        case("grep", json!({"pattern": "needle", "path": "{R}/t", "output_mode": "count"}), "Note: could not read {R}/t/locked/; not searched.\nNote: could not read {R}/t/shut.txt; not searched.\n{R}/t/open/ok.txt: 1"),
        case("grep", json!({"pattern": "needle", "path": "{R}/t", "output_mode": "content"}), "Note: could not read {R}/t/locked/; not searched.\nNote: could not read {R}/t/shut.txt; not searched.\n{R}/t/open/ok.txt:1:needle"),
        case("grep", json!({"pattern": "nothing", "path": "{R}/t"}), "Note: could not read {R}/t/locked/; not searched.\nNote: could not read {R}/t/shut.txt; not searched.\nNo matches found"),
        case("grep", json!({"pattern": "needle", "path": "{R}/t/open"}), "{R}/t/open/ok.txt"),
        case("grep", json!({"pattern": "x", "path": "{R}/many"}), format!("{many_notes}Note: could not read 2 more paths; not searched.\nNo matches found")),
        case("glob", json!({"pattern": "*.txt", "path": "{R}/t"}), "Note: could not read {R}/t/locked/; not searched.\n{R}/t/open/ok.txt\n{R}/t/shut.txt"),
        case("glob", json!({"pattern": "*.rs", "path": "{R}/t"}), "Note: could not read {R}/t/locked/; not searched.\nNo files found"),
        case("glob", json!({"pattern": "*", "path": "{R}/many"}), format!("{many_notes}Note: could not read 2 more paths; not searched.\nNo files found")),
        case("ls", json!({"path": "{R}/t", "recursive": true}), "Note: could not read {R}/t/locked/; not listed.\n{R}/t/locked/\n{R}/t/open/\n{R}/t/open/ok.txt\n{R}/t/shut.txt"),
        case("ls", json!({"path": "{R}/t"}), "{R}/t/locked/\n{R}/t/open/\n{R}/t/shut.txt"),
        case("ls", json!({"path": "{R}/t/locked"}), "Error: Permission denied: {R}/t/locked"),
    ]
}

/// Runs the table on every backend over the directory `root`.
async fn run_all(root: &Path) -> Vec<String> {
    let mut failures = Vec::new();
    let disk = FilesystemBackend::new(root).unwrap();
    failures.extend(run_cases(&disk, "", table()).await);
    let shell = LocalShellBackend::new(root).unwrap();
    failures.extend(run_cases(&shell, "", table()).await);
    let net = RunnableNetwork::new();
    let composite = CompositeBackend::new(StateBackend::factory())
        .route("/ws/", FilesystemBackend::new(root).unwrap())
        .resolve(&net);
    failures.extend(run_cases(&*composite, "/ws", table()).await);
    let rules =
        Permissions::new([PermissionRule::parse(RuleMode::Deny, "read:/nothing/**").unwrap()])
            .unwrap();
    let guarded = rules
        .guard(FilesystemBackend::new(root).unwrap(), false)
        .resolve(&net);
    failures.extend(run_cases(&*guarded, "", table()).await);
    failures
}

/// The child: runs the table as an unprivileged user.
#[test]
#[ignore = "helper process of unreadable_folders_are_named (it runs it with its environment)"]
fn unreadable_child() {
    let Ok(root) = std::env::var(CHILD_ROOT) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let failures = runtime.block_on(run_all(Path::new(&root)));
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[tokio::test]
async fn unreadable_folders_are_named() {
    let dir = tempfile::tempdir().unwrap();
    build_tree(dir.path());
    // Which user runs the tests: `id -u`.
    let uid = Command::new("id").arg("-u").output().unwrap();
    let is_root = String::from_utf8_lossy(&uid.stdout).trim() == "0";
    if !is_root {
        let failures = run_all(dir.path()).await;
        assert!(
            failures.is_empty(),
            "{} mismatches:\n{}",
            failures.len(),
            failures.join("\n\n")
        );
        return;
    }
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
        ])
        .arg(std::env::current_exe().unwrap())
        .args([
            "unreadable::unreadable_child",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_ROOT, dir.path())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "child failed:\n{text}");
    assert!(text.contains("1 passed"), "the child ran no case:\n{text}");
    // Let the temp dir be removed.
    for i in 0..MANY {
        let _ = std::fs::set_permissions(
            dir.path().join(format!("many/d{i:02}")),
            std::fs::Permissions::from_mode(0o755),
        );
    }
    let _ = std::fs::set_permissions(
        dir.path().join("t/locked"),
        std::fs::Permissions::from_mode(0o755),
    );
}

/// An in-memory backend holds no folder it cannot read: no note.
#[tokio::test]
async fn in_memory_backends_print_no_note() {
    let backend = StateBackend::new(RunnableNetwork::new());
    backend
        .write("/t/open/ok.txt", "needle\n", false)
        .await
        .unwrap();
    let cases = vec![
        case(
            "grep",
            json!({"pattern": "needle", "path": "/t"}),
            "/t/open/ok.txt",
        ),
        case(
            "glob",
            json!({"pattern": "*.txt", "path": "/t"}),
            "/t/open/ok.txt",
        ),
        case(
            "ls",
            json!({"path": "/t", "recursive": true}),
            "/t/open/\n/t/open/ok.txt",
        ),
    ];
    let failures = run_cases(&backend, "", cases).await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

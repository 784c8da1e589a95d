//! Rewind anything: a scripted agent changes a disk workspace over three
//! turns with the file tools **and** the sandboxed shell; the workspace
//! records at the turn boundaries put back exactly each turn's tree, redo
//! takes a rewind back, and a user's own change is reported and kept.
//! The workspace lives under the target directory, not `/tmp` (which the
//! sandbox replaces with its own).

use std::collections::BTreeMap;
use std::path::Path;

use lc_agent::{
    Attachments, HumanNode, NodeId, RunnableNetwork, ScriptedChatModel, ToolCall, Turn,
};
use lc_agent_filesystem::{
    redo, rewind, FilesystemBackend, FilesystemModifier, HistoryStore, LocalShellBackend,
    RewindWhat, Sandbox, SandboxPolicy, WorkspaceHistory, WORKSPACE_TREE,
};
use lc_agent_test_support::needs;
use serde_json::json;

fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall::new(id, name, args)
}

fn sh(id: &str, command: &str) -> ToolCall {
    call(id, "execute", json!({"command": command, "timeout": 30}))
}

/// Turn 1: write a.txt; the shell makes s.txt and gen/g.txt.
/// Turn 2: edit a.txt; the shell removes s.txt, makes t.txt, rewrites gen/g.txt.
/// Turn 3: delete a.txt; the shell removes gen/, rewrites t.txt, makes n.txt
/// (executable).
fn script() -> Vec<Turn> {
    vec![
        Turn::tool_calls([
            call(
                "1",
                "write_file",
                json!({"file_path": "/a.txt", "content": "a1"}),
            ),
            sh(
                "2",
                "echo s1 > s.txt && mkdir -p gen && echo g1 > gen/g.txt",
            ),
        ]),
        Turn::text("turn 1 done"),
        Turn::tool_calls([
            call(
                "3",
                "edit_file",
                json!({"file_path": "/a.txt", "old_string": "a1", "new_string": "a2"}),
            ),
            sh("4", "rm s.txt && echo t2 > t.txt && printf g2 > gen/g.txt"),
        ]),
        Turn::text("turn 2 done"),
        Turn::tool_calls([
            call("5", "delete", json!({"path": "/a.txt"})),
            sh(
                "6",
                "rm -r gen && echo t3 > t.txt && printf '#!/bin/sh\\n' > n.sh && chmod +x n.sh",
            ),
        ]),
        Turn::text("turn 3 done"),
    ]
}

/// Every file under `root` (but `.git`) and its content.
fn on_disk(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                let name = format!("/{}", p.strip_prefix(root).unwrap().display());
                out.insert(name, std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    out
}

struct Site {
    _base: tempfile::TempDir,
    root: std::path::PathBuf,
    history: WorkspaceHistory,
    shell: LocalShellBackend,
    net: RunnableNetwork,
}

fn site(model: ScriptedChatModel) -> Site {
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = base.path().join("work");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    let shell = LocalShellBackend::sandboxed(
        FilesystemBackend::new(&root).unwrap(),
        Sandbox::open(SandboxPolicy::default()).unwrap(),
    );
    let history = WorkspaceHistory::with_store(&root, HistoryStore::new(base.path().join("store")));
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("m")
        .model("m", model)
        .build();
    net.add_modifier(FilesystemModifier::new(shell.clone()))
        .unwrap();
    net.add_modifier(history.clone()).unwrap();
    Site {
        _base: base,
        root,
        history,
        shell,
        net,
    }
}

async fn turns(site: &Site, n: usize) -> Vec<(NodeId, BTreeMap<String, String>)> {
    let mut out = Vec::new();
    for i in 0..n {
        {
            let _scope = site.net.enter();
            HumanNode::new(format!("turn {}", i + 1));
        }
        site.net.invoke().await.unwrap();
        let leaf = site.net.current_leaf().unwrap();
        assert!(
            leaf.metadata_value(WORKSPACE_TREE).is_some(),
            "the turn's end is recorded"
        );
        out.push((leaf.id(), on_disk(&site.root)));
    }
    out
}

async fn files_to(site: &Site, to: Option<NodeId>) -> lc_agent_filesystem::FileRewind {
    let report = rewind(
        &site.net,
        Some(&site.history),
        &site.shell,
        to,
        RewindWhat::Files,
    )
    .await
    .unwrap();
    assert_eq!(report.source, Some("workspace"));
    report.files.unwrap()
}

#[needs(bwrap)]
#[tokio::test]
async fn rewinding_to_each_turn_restores_what_the_tools_and_the_shell_did() {
    let site = site(ScriptedChatModel::new(script()));
    let t = turns(&site, 3).await;
    // The shell really did its part.
    assert_eq!(t[0].1.get("/gen/g.txt").map(String::as_str), Some("g1\n"));
    assert!(!t[1].1.contains_key("/s.txt"));
    assert_eq!(t[2].1.get("/t.txt").map(String::as_str), Some("t3\n"));
    assert!(!t[2].1.contains_key("/a.txt"));

    for (leaf, tree) in t.iter().rev() {
        let report = files_to(&site, Some(*leaf)).await;
        assert!(report.changed_outside.is_empty(), "{report:?}");
        assert!(
            report.not_kept.is_empty() && report.failed.is_empty(),
            "{report:?}"
        );
        assert_eq!(&on_disk(&site.root), tree);
    }
    // Before the first message: the empty workspace (gen/ removed too).
    files_to(&site, None).await;
    assert!(on_disk(&site.root).is_empty(), "{:?}", on_disk(&site.root));
    assert!(!site.root.join("gen").exists());

    // Redo takes the last rewind back (to turn 1's tree), and again.
    let back = redo(&site.net, Some(&site.history)).await.unwrap();
    assert_eq!(back.what, RewindWhat::Files);
    assert_eq!(on_disk(&site.root), t[0].1);
    redo(&site.net, Some(&site.history)).await.unwrap();
    assert!(on_disk(&site.root).is_empty());

    // Straight to turn 3 and back to turn 1, then redo: turn 3 again,
    // the executable bit too.
    files_to(&site, Some(t[2].0)).await;
    assert_eq!(on_disk(&site.root), t[2].1);
    files_to(&site, Some(t[0].0)).await;
    assert_eq!(on_disk(&site.root), t[0].1);
    redo(&site.net, Some(&site.history)).await.unwrap();
    assert_eq!(on_disk(&site.root), t[2].1);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(site.root.join("n.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "n.sh is executable again");

    // Saved and loaded, the session rewinds the same way.
    let loaded = RunnableNetwork::from_json(&site.net.to_json().unwrap()).unwrap();
    let report = rewind(
        &loaded,
        Some(&site.history),
        &site.shell,
        Some(t[1].0),
        RewindWhat::Files,
    )
    .await
    .unwrap();
    assert_eq!(report.source, Some("workspace"));
    assert_eq!(on_disk(&site.root), t[1].1);
}

#[needs(bwrap)]
#[tokio::test]
async fn a_users_own_changes_are_reported_and_kept() {
    let site = site(ScriptedChatModel::new(script()));
    let t = turns(&site, 2).await;
    // Between turns 2 and 3 the user writes notes.txt; turn 3 runs.
    std::fs::write(site.root.join("notes.txt"), "mine").unwrap();
    {
        let _scope = site.net.enter();
        HumanNode::new("turn 3");
    }
    site.net.invoke().await.unwrap();
    let t3 = on_disk(&site.root);
    // After turn 3 the user edits t.txt (the shell's file) too.
    std::fs::write(site.root.join("t.txt"), "the user's t").unwrap();

    let report = files_to(&site, Some(t[0].0)).await;
    assert_eq!(report.changed_outside, ["/notes.txt", "/t.txt"]);
    let now = on_disk(&site.root);
    assert_eq!(now["/notes.txt"], "mine");
    assert_eq!(now["/t.txt"], "the user's t");
    let mut expected = t[0].1.clone();
    expected.insert("/notes.txt".into(), "mine".into());
    expected.insert("/t.txt".into(), "the user's t".into());
    assert_eq!(now, expected);

    // Redo: turn 3's tree, the user's files as they are.
    redo(&site.net, Some(&site.history)).await.unwrap();
    let mut expected = t3;
    expected.insert("/t.txt".into(), "the user's t".into());
    assert_eq!(on_disk(&site.root), expected);
}

/// The conversation and the files together; a redo puts both back.
#[needs(bwrap)]
#[tokio::test]
async fn both_rewinds_the_conversation_too_and_redo_returns() {
    let site = site(ScriptedChatModel::new(script()));
    let t = turns(&site, 2).await;
    let report = rewind(
        &site.net,
        Some(&site.history),
        &site.shell,
        Some(t[0].0),
        RewindWhat::Both,
    )
    .await
    .unwrap();
    assert_eq!(report.what, RewindWhat::Both);
    assert_eq!(site.net.current_leaf().unwrap().id(), t[0].0);
    assert_eq!(on_disk(&site.root), t[0].1);
    redo(&site.net, Some(&site.history)).await.unwrap();
    assert_eq!(site.net.current_leaf().unwrap().id(), t[1].0);
    assert_eq!(on_disk(&site.root), t[1].1);
}

/// A file over the size cap is named, not kept: a rewind says so and
/// leaves it.
#[tokio::test]
async fn a_file_over_the_cap_is_said_not_kept() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("work");
    std::fs::create_dir_all(&root).unwrap();
    let history =
        WorkspaceHistory::with_store(&root, HistoryStore::new(base.path().join("s"))).file_cap(4);
    let net = RunnableNetwork::new();
    std::fs::write(root.join("big.bin"), "0123456789").unwrap();
    let first = history.record(&net).await.unwrap();
    assert_eq!(first.not_kept, ["/big.bin"]);
    let node = HumanNode::new("x");
    net.add_node(&node).unwrap();
    node.set_metadata(WORKSPACE_TREE, json!(first.tree));
    std::fs::write(root.join("big.bin"), "abcdefghijklmnop").unwrap();
    history.record(&net).await.unwrap();
    let backend = FilesystemBackend::new(&root).unwrap();
    let report = rewind(
        &net,
        Some(&history),
        &backend,
        Some(node.id()),
        RewindWhat::Files,
    )
    .await
    .unwrap();
    assert_eq!(report.files.unwrap().not_kept, ["/big.bin"]);
}

/// Nothing changed: the same tree, nothing stored; a racily clean file
/// (changed within the second of the last scan, same size) is still seen.
#[tokio::test]
async fn an_unchanged_workspace_records_the_same_tree_and_racy_files_are_hashed_again() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("work");
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::write(root.join("d/x.txt"), "aaaa").unwrap();
    std::fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
    std::fs::create_dir_all(root.join("ignored")).unwrap();
    std::fs::write(root.join("ignored/junk"), "junk").unwrap();
    let history = WorkspaceHistory::with_store(&root, HistoryStore::new(base.path().join("s")));
    let net = RunnableNetwork::new();
    let first = history.record(&net).await.unwrap();
    assert_eq!(
        first.changed,
        ["/.gitignore", "/d/x.txt"],
        "ignored files are not recorded"
    );
    let again = history.record(&net).await.unwrap();
    assert_eq!(again.tree, first.tree);
    assert!(again.changed.is_empty());
    // Same size, within the same second: the stat may not tell.
    std::fs::write(root.join("d/x.txt"), "bbbb").unwrap();
    let third = history.record(&net).await.unwrap();
    assert_eq!(third.changed, ["/d/x.txt"]);
    assert_ne!(third.tree, first.tree);
}

/// Pruning a session frees what only it used; what another session
/// shares stays.
#[tokio::test]
async fn forgetting_a_session_collects_only_what_no_other_uses() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("work");
    std::fs::create_dir_all(&root).unwrap();
    let store = HistoryStore::new(base.path().join("s"));
    std::fs::write(root.join("shared.txt"), "shared").unwrap();
    let a = RunnableNetwork::new();
    let b = RunnableNetwork::new();
    WorkspaceHistory::with_store(&root, store.clone())
        .record(&a)
        .await
        .unwrap();
    WorkspaceHistory::with_store(&root, store.clone())
        .record(&b)
        .await
        .unwrap();
    std::fs::write(root.join("only_a.txt"), "only a").unwrap();
    WorkspaceHistory::with_store(&root, store.clone())
        .record(&a)
        .await
        .unwrap();
    // Old enough to be collected.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for fan in std::fs::read_dir(store.dir().join("blobs")).unwrap() {
        for f in std::fs::read_dir(fan.unwrap().path()).unwrap() {
            let f = std::fs::File::options()
                .write(true)
                .open(f.unwrap().path())
                .unwrap();
            f.set_modified(old).unwrap();
        }
    }
    let removed = store.forget(&a.id().to_string()).unwrap();
    // a's second tree and only_a.txt's content.
    assert_eq!(removed, 2);
    assert_eq!(
        store.forget(&b.id().to_string()).unwrap(),
        2,
        "b's tree and shared.txt"
    );
}

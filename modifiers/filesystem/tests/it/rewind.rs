//! Files follow the conversation: a scripted agent writes and edits files
//! over several turns on a disk workspace; rewinding to each turn puts
//! exactly that turn's files back; a file the user changed meanwhile is
//! reported, not overwritten; a fork of an in-graph session has the files
//! of its node.

use std::collections::BTreeMap;
use std::path::Path;

use lc_agent::{HumanNode, NodeId, RunnableNetwork, ScriptedChatModel, ToolCall, Turn};
use lc_agent_filesystem::{rewind_files, FilesystemBackend, FilesystemModifier, StateBackend};
use serde_json::json;

fn write(id: &str, path: &str, content: &str) -> ToolCall {
    ToolCall::new(
        id,
        "write_file",
        json!({"file_path": path, "content": content, "overwrite": true}),
    )
}

fn edit(id: &str, path: &str, old: &str, new: &str) -> ToolCall {
    ToolCall::new(
        id,
        "edit_file",
        json!({"file_path": path, "old_string": old, "new_string": new}),
    )
}

/// Three turns: create a and b; edit a, create c; rewrite b, edit c.
fn script() -> Vec<Turn> {
    vec![
        Turn::tool_calls([write("1", "/a.txt", "a1"), write("2", "/b.txt", "b1")]),
        Turn::text("turn 1 done"),
        Turn::tool_calls([
            edit("3", "/a.txt", "a1", "a2"),
            write("4", "/dir/c.txt", "c2"),
        ]),
        Turn::text("turn 2 done"),
        Turn::tool_calls([
            write("5", "/b.txt", "b3"),
            edit("6", "/dir/c.txt", "c2", "c3"),
        ]),
        Turn::text("turn 3 done"),
    ]
}

fn on_disk(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
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

fn agent(
    model: ScriptedChatModel,
    backend: impl Into<lc_agent_filesystem::BackendSource>,
) -> RunnableNetwork {
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("m")
        .model("m", model)
        .build();
    net.add_modifier(FilesystemModifier::new(backend)).unwrap();
    net
}

/// Runs the three turns; the leaf after each and the files then.
async fn three_turns(
    net: &RunnableNetwork,
    files: impl Fn() -> BTreeMap<String, String>,
) -> Vec<(NodeId, BTreeMap<String, String>)> {
    let mut turns = Vec::new();
    for text in ["one", "two", "three"] {
        {
            let _scope = net.enter();
            HumanNode::new(text);
        }
        net.invoke().await.unwrap();
        turns.push((net.current_leaf().unwrap().id(), files()));
    }
    turns
}

#[tokio::test]
async fn rewinding_to_each_turn_restores_exactly_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let backend = FilesystemBackend::new(&root).unwrap();
    let net = agent(ScriptedChatModel::new(script()), backend.clone());
    let turns = three_turns(&net, || on_disk(&root)).await;
    assert_eq!(turns[2].1["/b.txt"], "b3");
    assert_eq!(turns[2].1["/dir/c.txt"], "c3");

    for (leaf, files) in turns.iter().rev() {
        let report = rewind_files(&net, &backend, Some(*leaf)).await.unwrap();
        assert!(report.changed_outside.is_empty(), "{report:?}");
        assert!(report.not_kept.is_empty(), "{report:?}");
        assert_eq!(&on_disk(&root), files);
    }
    // Before the first turn: the files the agent made are gone again.
    let report = rewind_files(&net, &backend, None).await.unwrap();
    assert_eq!(report.restored, ["/a.txt", "/b.txt", "/dir/c.txt"]);
    assert!(on_disk(&root).is_empty(), "{:?}", on_disk(&root));
    // Saved and loaded, the snapshots come along: the loaded session goes
    // to turn 1's files from there (the kept contents name them).
    let loaded = RunnableNetwork::from_json(&net.to_json().unwrap()).unwrap();
    let report = rewind_files(&loaded, &backend, Some(turns[0].0))
        .await
        .unwrap();
    assert!(report.changed_outside.is_empty(), "{report:?}");
    assert_eq!(on_disk(&root), turns[0].1);
}

#[tokio::test]
async fn a_file_changed_outside_the_agent_is_reported_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let backend = FilesystemBackend::new(&root).unwrap();
    let net = agent(ScriptedChatModel::new(script()), backend.clone());
    let turns = three_turns(&net, || on_disk(&root)).await;
    std::fs::write(root.join("b.txt"), "the user's b").unwrap();

    let report = rewind_files(&net, &backend, Some(turns[0].0))
        .await
        .unwrap();
    assert_eq!(report.changed_outside, ["/b.txt"]);
    assert_eq!(report.restored, ["/a.txt", "/dir/c.txt"]);
    let now = on_disk(&root);
    assert_eq!(now["/b.txt"], "the user's b", "not clobbered");
    assert_eq!(now["/a.txt"], "a1");
    assert!(!now.contains_key("/dir/c.txt"));
}

#[tokio::test]
async fn a_fork_of_an_in_graph_session_has_the_files_of_its_node() {
    let net = agent(ScriptedChatModel::new(script()), StateBackend::factory());
    let files = |n: &RunnableNetwork| -> BTreeMap<String, String> {
        n.files().into_iter().map(|(p, d)| (p, d.text())).collect()
    };
    let turns = {
        let net2 = net.clone();
        three_turns(&net, move || files(&net2)).await
    };
    for (leaf, expected) in &turns {
        let fork = net.fork_at(*leaf).unwrap();
        assert_eq!(&files(&fork), expected);
    }
    // The session's own files rewind the same way.
    let backend = StateBackend::new(net.clone());
    rewind_files(&net, &backend, Some(turns[0].0))
        .await
        .unwrap();
    assert_eq!(files(&net), turns[0].1);
}

/// A disk backend reports the file before and after a write or an edit
/// from the change itself (one blocking task): the bytes kept before when
/// small enough, the hash of what it holds after, `None` where there was
/// no file; a change that fails reports nothing.
#[tokio::test]
async fn a_disk_change_reports_the_file_before_and_after() {
    use lc_agent_filesystem::Backend;
    let dir = tempfile::tempdir().unwrap();
    let backend = FilesystemBackend::new(dir.path()).unwrap();
    let created = backend
        .write_recorded("/a.txt", "one", false, 1024)
        .await
        .unwrap();
    assert_eq!(created.before, None);
    let after = created.after.expect("a file after");
    assert_eq!(
        Some(after.clone()),
        backend.fingerprint("/a.txt", 0).await,
        "the hash of what was written"
    );
    let edited = backend
        .edit_recorded("/a.txt", ("one", "two", false), 1024, None)
        .await
        .unwrap();
    assert_eq!(edited.value, 1);
    let before = edited.before.expect("a file before");
    assert_eq!(before.sha256, after.sha256);
    assert_eq!(before.bytes.as_deref(), Some(&b"one"[..]));
    assert_eq!(
        edited.after,
        backend.fingerprint("/a.txt", 0).await,
        "what the file holds now"
    );
    // Over the size kept: named by hash only.
    let big = backend
        .write_recorded("/a.txt", "three", true, 2)
        .await
        .unwrap();
    assert_eq!(big.before.and_then(|b| b.bytes), None);
    assert!(backend
        .write_recorded("/a.txt", "four", false, 1024)
        .await
        .is_err());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "three"
    );
}

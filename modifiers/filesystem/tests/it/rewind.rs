//! Files follow the conversation: a scripted agent writes and edits files
//! over several turns on a disk workspace; rewinding to each turn puts
//! exactly that turn's files back; a file the user changed meanwhile is
//! reported, not overwritten; a fork of an in-graph session has the files
//! of its node.

use std::collections::BTreeMap;
use std::path::Path;

use lc_agent::{
    Attachments, HumanNode, NodeId, RunnableNetwork, ScriptedChatModel, TimeTravelExt, ToolCall,
    Turn,
};
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

/// The SHA-256 of bytes, lowercase hex (how changes name contents).
fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(bytes))
}

/// A recorded edit names exactly what the file held before (its bytes
/// when small enough) and what it holds after, whichever way the edit
/// ran: a small UTF-8 file read once into memory (LF or CRLF), a file
/// with a BOM or in UTF-16, or one over the size kept; and it leaves the
/// same bytes as the plain edit.
#[tokio::test]
async fn a_recorded_edit_names_exactly_the_file_before_and_after() {
    use lc_agent_filesystem::Backend;
    let dir = tempfile::tempdir().unwrap();
    let backend = FilesystemBackend::new(dir.path()).unwrap();
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(
            "x = 1\r\ny = 2\r\n"
                .encode_utf16()
                .flat_map(u16::to_le_bytes),
        )
        .collect();
    let cases: Vec<(&str, Vec<u8>, usize)> = vec![
        ("lf", b"x = 1\ny = 2\n".to_vec(), 1024),
        ("crlf", b"x = 1\r\ny = 2\r\n".to_vec(), 1024),
        ("bom", b"\xEF\xBB\xBFx = 1\ny = 2\n".to_vec(), 1024),
        ("utf16", utf16, 1024),
        ("over_kept", b"x = 1\ny = 2\n".to_vec(), 4),
    ];
    for (name, bytes, keep) in cases {
        let (recorded, plain) = (format!("/{name}.txt"), format!("/{name}.plain.txt"));
        std::fs::write(dir.path().join(&recorded[1..]), &bytes).unwrap();
        std::fs::write(dir.path().join(&plain[1..]), &bytes).unwrap();
        let edited = backend
            .edit_recorded(&recorded, ("x = 1\ny", "x = 3\ny", false), keep, None)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        backend
            .edit(&plain, "x = 1\ny", "x = 3\ny", false)
            .await
            .unwrap();
        let now = std::fs::read(dir.path().join(&recorded[1..])).unwrap();
        assert_eq!(
            now,
            std::fs::read(dir.path().join(&plain[1..])).unwrap(),
            "{name}: the same bytes as the plain edit"
        );
        assert_ne!(now, bytes, "{name}: edited");
        assert_eq!(edited.value, 1, "{name}");
        let before = edited.before.expect("a file before");
        assert_eq!(before.sha256, sha256(&bytes), "{name}: the hash before");
        let kept = (bytes.len() <= keep).then_some(bytes);
        assert_eq!(before.bytes, kept, "{name}: the bytes before");
        let after = edited.after.expect("a file after");
        assert_eq!(after.sha256, sha256(&now), "{name}: the hash after");
    }
    // A failed edit changes nothing and reports nothing.
    std::fs::write(dir.path().join("lf.txt"), "x = 1\n").unwrap();
    assert!(backend
        .edit_recorded("/lf.txt", ("absent", "b", false), 1024, None)
        .await
        .is_err());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("lf.txt")).unwrap(),
        "x = 1\n"
    );
}

/// The user rewrites a file in place between two agent changes, within
/// the same second and to the same size (what a check of size and mtime
/// alone would miss): the agent's next change keeps the user's bytes as
/// its `before`, so a rewind gives the user's version back, never the
/// agent's; and a same-size change after the agent's last write is
/// reported at the rewind, not overwritten.
#[tokio::test]
async fn a_same_size_change_in_the_same_second_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let backend = FilesystemBackend::new(&root).unwrap();
    let script = vec![
        Turn::tool_calls([write("1", "/a.txt", "agent one")]),
        Turn::text("turn 1 done"),
        Turn::tool_calls([
            write("2", "/a.txt", "agent two"),
            edit("3", "/b.txt", "one", "two"),
        ]),
        Turn::text("turn 2 done"),
    ];
    let net = agent(ScriptedChatModel::new(script), backend.clone());
    std::fs::write(root.join("b.txt"), "bee one").unwrap();
    let mut leaves = Vec::new();
    for text in ["one", "two"] {
        {
            let _scope = net.enter();
            HumanNode::new(text);
        }
        net.invoke().await.unwrap();
        leaves.push(net.current_leaf().unwrap().id());
        // In place (same inode), same size, right away.
        if text == "one" {
            let md = std::fs::metadata(root.join("a.txt")).unwrap();
            std::fs::write(root.join("a.txt"), "user! one").unwrap();
            std::fs::write(root.join("b.txt"), "BEE one").unwrap();
            let now = std::fs::metadata(root.join("a.txt")).unwrap();
            assert_eq!(md.len(), now.len());
        }
    }
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "agent two"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("b.txt")).unwrap(),
        "BEE two"
    );
    // What turn 2 recorded as before is the user's.
    let changes: Vec<serde_json::Value> = net
        .nodes()
        .iter()
        .filter_map(|n| n.metadata_value("file_changes"))
        .flat_map(|v| v.as_array().cloned().unwrap_or_default())
        .collect();
    let befores: Vec<_> = changes.iter().map(|c| c["before"].clone()).collect();
    assert!(
        befores.contains(&json!(sha256(b"user! one"))),
        "{changes:?}"
    );
    assert!(befores.contains(&json!(sha256(b"BEE one"))), "{changes:?}");

    // Rewound to turn 1: the user's versions come back.
    let report = rewind_files(&net, &backend, Some(leaves[0])).await.unwrap();
    assert!(report.changed_outside.is_empty(), "{report:?}");
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "user! one"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("b.txt")).unwrap(),
        "BEE one"
    );

    // A same-size change after the agent's (or the rewind's) last write
    // is reported, and kept.
    std::fs::write(root.join("a.txt"), "USER! one").unwrap();
    let report = rewind_files(&net, &backend, None).await.unwrap();
    assert_eq!(report.changed_outside, ["/a.txt"]);
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "USER! one"
    );
}

/// A diff walks the whole turn: parallel tool calls (both files, every
/// node), not only first parents.
#[tokio::test]
async fn a_diff_counts_every_node_and_file_of_a_turn_with_parallel_calls() {
    let script = vec![
        Turn::text("one"),
        Turn::tool_calls([write("1", "/a.txt", "a"), write("2", "/b.txt", "b")]),
        Turn::text("two"),
    ];
    let net = agent(ScriptedChatModel::new(script), StateBackend::factory());
    for text in ["first", "second"] {
        {
            let _scope = net.enter();
            HumanNode::new(text);
        }
        net.invoke().await.unwrap();
    }
    let one = net
        .nodes()
        .into_iter()
        .find(|n| n.output().is_some_and(|m| m.text() == "one"))
        .unwrap();
    let fork = net.fork_at(one.id()).unwrap();
    let diff = lc_agent_filesystem::diff_branches(&net, &fork);
    assert_eq!(diff.last_shared, Some(one.id()));
    assert_eq!(diff.shared, fork.len());
    // second, the call, two tool results, the answer.
    assert_eq!(diff.a.nodes.len(), 5, "{:?}", diff.a.nodes);
    assert_eq!(diff.a.files_changed, ["/a.txt", "/b.txt"]);
    assert_eq!(diff.a.tool_calls, ["write_file", "write_file"]);
    assert!(diff.b.nodes.is_empty());
}

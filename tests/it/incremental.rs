//! Incremental saves: a save writes what changed since the last one (a
//! journal record), and loading gives exactly what a full save would.
//! `list_redis` runs [`many_turns_round_trip`] and
//! [`stale_copies_are_refused`] on Redis; kill -9 during incremental saves
//! is in `list_json` and `list_redis`.

use lc_agent::{
    FileData, HumanNode, JsonNetworkList, ListError, ListQuery, NetworkList, RunnableNetwork,
    ScriptedChatModel, SnapshotsExt, TimeTravelExt,
};
use serde_json::json;

/// A chat network answering every turn from a script.
pub(crate) fn chat_network() -> RunnableNetwork {
    RunnableNetwork::builder()
        .name("incremental")
        .default_node("chat")
        .chat_model("scripted")
        .model(
            "scripted",
            ScriptedChatModel::new(["an answer of a few words"]).cycled(),
        )
        .build()
}

/// One turn: a human message and the model's answer.
pub(crate) async fn turn(net: &RunnableNetwork, i: usize) {
    {
        let _scope = net.enter();
        HumanNode::new(format!("question {i}"));
    }
    net.invoke().await.expect("invoke");
}

/// Many turns saved as a server saves them (the input, the turn, the end),
/// with metadata, files and names changing now and then: every load (by a
/// fresh list, as another process would) is byte for byte the network.
pub(crate) async fn many_turns_round_trip(list: &dyn NetworkList, fresh: &dyn NetworkList) {
    let net = chat_network();
    net.set_metadata("payload", json!("x".repeat(20_000)));
    list.save(&net).await.expect("first save");
    for i in 0..60 {
        {
            let _scope = net.enter();
            HumanNode::new(format!("question {i}"));
        }
        // The input is saved before the model runs: a pending node.
        list.save(&net).await.expect("save input");
        net.invoke().await.expect("invoke");
        list.save(&net).await.expect("save turn");
        if i % 7 == 3 {
            net.with_files_mut(|f| {
                f.insert(
                    format!("/notes/{i}.md"),
                    FileData::new(&format!("note {i}")),
                );
                if i > 10 {
                    f.remove(&format!("/notes/{}.md", i - 7));
                }
            });
            net.set_metadata("todos", json!([format!("todo {i}")]));
        }
        if i % 11 == 5 {
            net.with_metadata_mut(|m| m.shift_remove("todos"));
            net.set_name(format!("renamed {i}"));
        }
        if i % 13 == 0 {
            net.set_metadata("todos", json!({"i": i}));
        }
        // Old nodes change too (a saved node's metadata, name or output);
        // now and then the newest node goes (the next save is a full one).
        if i % 6 == 2 {
            let nodes = net.nodes();
            nodes[nodes.len() / 3].set_metadata("note", json!(i));
            nodes[1].set_name(format!("node one at {i}"));
        }
        if i % 8 == 5 {
            let nodes = net.nodes();
            nodes[nodes.len() / 2].set_output(lc_agent::Message::ai(format!("rewritten at {i}")));
        }
        if i % 19 == 7 {
            let last = net.nodes().last().map(|n| n.id()).expect("a node");
            net.remove_node(last).expect("remove the newest node");
        }
        // Rewind snapshots: contents kept now and then, trimmed to the
        // last turns now and then (records add and drop contents).
        if i % 5 == 1 {
            net.keep_file_snapshot(&format!("h{i}"), &format!("content {i}"), usize::MAX);
        }
        if i % 17 == 16 {
            net.retain_file_snapshots(|h| h != format!("h{}", i - 15));
        }
        list.save(&net).await.expect("save end");
        if i % 9 == 0 {
            let loaded = fresh.load(net.id()).await.expect("load");
            assert_eq!(
                loaded.to_json().unwrap(),
                net.to_json().unwrap(),
                "turn {i}"
            );
        }
    }
    let want = net.to_json().unwrap();
    let loaded = fresh.load(net.id()).await.expect("load");
    assert_eq!(loaded.to_json().unwrap(), want);
    assert_eq!(fresh.load_json(net.id()).await.expect("json"), want);
    // save -> load -> save: the same bytes.
    fresh.save(&loaded).await.expect("save the loaded copy");
    let again = list.load(net.id()).await.expect("load again");
    loaded.set_metadata("x", json!(1));
    again.set_metadata("x", json!(1));
    assert_eq!(again.to_json().unwrap(), loaded.to_json().unwrap());
    let page = fresh.list(&ListQuery::default()).await.expect("list");
    let info = page
        .sessions
        .iter()
        .find(|s| s.id == net.id())
        .expect("listed");
    assert_eq!(info.node_count, net.len());
    assert_eq!(info.name, net.name());
    assert_eq!(info.revision, lc_agent::revision_of(&loaded));
}

/// Two copies of one session: the first saves incrementally, the stale
/// one is refused, as with full saves.
pub(crate) async fn stale_copies_are_refused(list: &dyn NetworkList) {
    let net = chat_network();
    turn(&net, 0).await;
    list.save(&net).await.expect("save");
    let a = list.load(net.id()).await.expect("a");
    let b = list.load(net.id()).await.expect("b");
    a.set_metadata("who", json!("a"));
    list.save(&a).await.expect("a saves");
    b.set_metadata("who", json!("b"));
    assert!(matches!(
        list.save(&b).await,
        Err(ListError::Conflict { .. })
    ));
    // `a` goes on saving incrementally; a reload of `b` sees it.
    a.set_metadata("n", json!(2));
    list.save(&a).await.expect("a again");
    let b = list.load(net.id()).await.expect("b reloads");
    assert_eq!(b.metadata_value("who"), Some(json!("a")));
    assert_eq!(b.metadata_value("n"), Some(json!(2)));
}

#[tokio::test]
async fn json_many_turns_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let list = JsonNetworkList::new(dir.path());
    many_turns_round_trip(&list, &JsonNetworkList::new(dir.path())).await;
}

#[tokio::test]
async fn json_stale_copies_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    stale_copies_are_refused(&JsonNetworkList::new(dir.path())).await;
}

/// A turn appends a record far smaller than the session, and the journal
/// never outgrows the snapshot (it is compacted into it).
#[tokio::test]
async fn json_a_turn_writes_a_record_not_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let list = JsonNetworkList::new(dir.path());
    let net = chat_network();
    net.set_metadata("payload", json!("x".repeat(100_000)));
    list.save(&net).await.unwrap();
    let snapshot = list.path_of(net.id());
    let journal = snapshot.with_extension("journal");
    let mut compactions = 0;
    let mut last = 0;
    for i in 0..200 {
        turn(&net, i).await;
        list.save(&net).await.unwrap();
        let snap = std::fs::metadata(&snapshot).unwrap().len();
        let jour = std::fs::metadata(&journal).map_or(0, |m| m.len());
        assert!(jour <= snap, "journal {jour} > snapshot {snap}");
        if jour < last {
            compactions += 1;
        } else {
            assert!(jour - last < 2_000, "turn {i} wrote {} bytes", jour - last);
        }
        last = jour;
    }
    assert!(compactions >= 1);
    let loaded = JsonNetworkList::new(dir.path())
        .load(net.id())
        .await
        .unwrap();
    assert_eq!(loaded.to_json().unwrap(), net.to_json().unwrap());
}

/// A save killed while appending leaves a torn line: it is ignored on
/// load, and the next save cuts it off.
#[tokio::test]
async fn json_a_torn_journal_tail_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let list = JsonNetworkList::new(dir.path());
    let net = chat_network();
    net.set_metadata("payload", json!("x".repeat(20_000)));
    list.save(&net).await.unwrap();
    for i in 0..3 {
        turn(&net, i).await;
        list.save(&net).await.unwrap();
    }
    let complete = net.to_json().unwrap();
    let journal = list.path_of(net.id()).with_extension("journal");
    let whole = std::fs::read(&journal).unwrap();
    assert!(!whole.is_empty());
    // A fourth record, cut short.
    turn(&net, 3).await;
    list.save(&net).await.unwrap();
    let four = std::fs::read(&journal).unwrap();
    std::fs::write(
        &journal,
        &four[..whole.len() + (four.len() - whole.len()) / 2],
    )
    .unwrap();
    let fresh = JsonNetworkList::new(dir.path());
    let loaded = fresh
        .load(net.id())
        .await
        .expect("loads at the last whole record");
    assert_eq!(loaded.to_json().unwrap(), complete);
    // Garbage after the last record is ignored too.
    let mut garbage = whole.clone();
    garbage.extend_from_slice(b"\0\0\0not json\n{\"journal\":");
    std::fs::write(&journal, &garbage).unwrap();
    let loaded = fresh.load(net.id()).await.unwrap();
    assert_eq!(loaded.to_json().unwrap(), complete);
    // The next save (of the loaded copy) cuts the tail and appends.
    loaded.set_metadata("after", json!(true));
    fresh.save(&loaded).await.unwrap();
    let again = JsonNetworkList::new(dir.path())
        .load(net.id())
        .await
        .unwrap();
    assert_eq!(again.to_json().unwrap(), loaded.to_json().unwrap());
    assert!(!std::fs::read(&journal)
        .unwrap()
        .windows(8)
        .any(|w| w == b"not json"));
}

/// A file in the format before journals (a lone snapshot) loads, and the
/// next saves go on incrementally; a record of a newer journal format is
/// an error naming the file, not a silent loss.
#[tokio::test]
async fn json_old_files_load_and_newer_journals_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let list = JsonNetworkList::new(dir.path());
    let net = chat_network();
    turn(&net, 0).await;
    net.set_metadata("revision", json!(4));
    let path = list.path_of(net.id());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, net.to_json().unwrap()).unwrap();
    let loaded = list.load(net.id()).await.expect("old file loads");
    assert_eq!(loaded.to_json().unwrap(), net.to_json().unwrap());
    loaded.set_metadata("more", json!(1));
    list.save(&loaded).await.unwrap();
    let journal = path.with_extension("journal");
    assert!(journal.exists(), "the second save is incremental");
    let again = JsonNetworkList::new(dir.path())
        .load(net.id())
        .await
        .unwrap();
    assert_eq!(again.to_json().unwrap(), loaded.to_json().unwrap());
    std::fs::write(
        &journal,
        "{\"journal\":\"lc-agent-journal/9\",\"base\":5,\"rev\":6}\n",
    )
    .unwrap();
    match JsonNetworkList::new(dir.path()).load(net.id()).await {
        Err(ListError::Corrupt {
            location, reason, ..
        }) => {
            assert!(location.ends_with(".journal"), "{location}");
            assert!(reason.contains("lc-agent-journal/9"), "{reason}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

/// Rewind snapshots live beside the graph, not in its metadata: a turn
/// that keeps a content sends that content alone (not the ones kept
/// before), a listing never carries them, and the document that holds
/// them says so in its format tag.
#[tokio::test]
async fn json_a_turn_sends_only_the_new_file_contents() {
    let dir = tempfile::tempdir().unwrap();
    let list = JsonNetworkList::new(dir.path());
    let net = chat_network();
    net.set_metadata("payload", json!("x".repeat(200_000)));
    let first = "a".repeat(50_000);
    assert!(net.keep_file_snapshot("h-first", &first, usize::MAX));
    list.save(&net).await.unwrap();
    let saved = std::fs::read_to_string(list.path_of(net.id())).unwrap();
    assert!(
        saved.starts_with(r#"{"format":"lc-agent/2""#),
        "{}",
        &saved[..40]
    );
    let journal = list.path_of(net.id()).with_extension("journal");
    let mut last = 0;
    for i in 0..5 {
        turn(&net, i).await;
        let text = format!("turn {i} ").repeat(1_000);
        net.keep_file_snapshot(&format!("h{i}"), &text, usize::MAX);
        // Kept again: deduplicated, nothing new to send.
        net.keep_file_snapshot(&format!("h{i}"), &text, usize::MAX);
        list.save(&net).await.unwrap();
        let lines = std::fs::read_to_string(&journal).unwrap();
        let record = &lines[last..];
        last = lines.len();
        assert!(record.contains(&text), "turn {i}: the new content is sent");
        assert!(record.contains(r#""journal":"lc-agent-journal/2""#));
        assert!(
            !record.contains(&first),
            "turn {i}: an old content is sent again"
        );
        assert!(
            record.len() < text.len() + 2_000,
            "turn {i}: {} bytes",
            record.len()
        );
    }
    assert!(net.metadata_value("file_snapshots").is_none());
    let info = &list.list(&ListQuery::default()).await.unwrap().sessions[0];
    assert!(!info.metadata.contains_key("file_snapshots"));
    let loaded = JsonNetworkList::new(dir.path())
        .load(net.id())
        .await
        .unwrap();
    assert_eq!(loaded.to_json().unwrap(), net.to_json().unwrap());
    assert_eq!(
        loaded.file_snapshot("h-first").as_deref(),
        Some(first.as_str())
    );
    // A fork takes them along.
    let fork = loaded.fork_at(loaded.nodes()[1].id()).unwrap();
    assert_eq!(fork.file_snapshot("h3"), loaded.file_snapshot("h3"));
}

/// A session saved when the contents lived in the metadata
/// (`metadata.file_snapshots`, `lc-agent/1`) still loads: the contents
/// move beside the graph, and the next save is a full one in the new
/// layout.
#[tokio::test]
async fn json_an_old_session_with_snapshots_in_its_metadata_loads() {
    let dir = tempfile::tempdir().unwrap();
    let list = JsonNetworkList::new(dir.path());
    let net = chat_network();
    turn(&net, 0).await;
    net.set_metadata("file_snapshots", json!({"h1": "old one", "h2": "old two"}));
    list.save(&net).await.unwrap();
    let saved = std::fs::read_to_string(list.path_of(net.id())).unwrap();
    assert!(saved.starts_with(r#"{"format":"lc-agent/1""#));
    let loaded = JsonNetworkList::new(dir.path())
        .load(net.id())
        .await
        .unwrap();
    assert_eq!(loaded.file_snapshot("h2").as_deref(), Some("old two"));
    assert!(loaded.metadata_value("file_snapshots").is_none());
    // (A loaded network has no model attached: a change without a run.)
    loaded.set_name("saved again");
    list.save(&loaded).await.unwrap();
    let journal = list.path_of(net.id()).with_extension("journal");
    assert_eq!(
        std::fs::metadata(&journal).map_or(0, |m| m.len()),
        0,
        "a full save"
    );
    let saved = std::fs::read_to_string(list.path_of(net.id())).unwrap();
    assert!(saved.starts_with(r#"{"format":"lc-agent/2""#));
    let again = JsonNetworkList::new(dir.path())
        .load(net.id())
        .await
        .unwrap();
    assert_eq!(again.to_json().unwrap(), loaded.to_json().unwrap());
    assert_eq!(again.file_snapshot("h1").as_deref(), Some("old one"));
}

/// Retention of snapshots: only what rewinds to the last turns need is
/// kept.
#[tokio::test]
async fn trimming_keeps_the_contents_of_the_last_turns() {
    let net = chat_network();
    for i in 0..4 {
        turn(&net, i).await;
        let node = net.nodes().last().cloned().unwrap();
        net.keep_file_snapshot(&format!("h{i}"), &format!("v{i}"), usize::MAX);
        node.set_metadata(
            "file_changes",
            json!([{"path": "/a.md", "before": format!("h{i}"), "after": "x", "in_graph": false}]),
        );
    }
    assert!((0..4).all(|i| net.file_snapshot(&format!("h{i}")).is_some()));
    assert_eq!(net.trim_file_snapshots(10), 0);
    assert_eq!(net.trim_file_snapshots(2), 2);
    assert!(net.file_snapshot("h1").is_none());
    assert_eq!(net.file_snapshot("h2").as_deref(), Some("v2"));
    assert_eq!(net.file_snapshot("h3").as_deref(), Some("v3"));
}

/// A small new session (a snapshot of a few KiB) is not rewritten whole
/// every other save: its journal grows to 32 KiB before a compaction, so
/// a short run is one full save and appends.
#[tokio::test]
async fn json_a_small_session_appends_instead_of_compacting() {
    let dir = tempfile::tempdir().unwrap();
    let list = JsonNetworkList::new(dir.path());
    let net = chat_network();
    list.save(&net).await.unwrap();
    let snapshot = list.path_of(net.id());
    let first = std::fs::read(&snapshot).unwrap();
    for i in 0..10 {
        turn(&net, i).await;
        list.save(&net).await.unwrap();
    }
    assert_eq!(
        std::fs::read(&snapshot).unwrap(),
        first,
        "the snapshot was rewritten"
    );
    let journal = std::fs::metadata(snapshot.with_extension("journal"))
        .unwrap()
        .len();
    assert!(journal > first.len() as u64, "journal {journal} bytes");
    let loaded = JsonNetworkList::new(dir.path())
        .load(net.id())
        .await
        .unwrap();
    assert_eq!(loaded.to_json().unwrap(), net.to_json().unwrap());
}

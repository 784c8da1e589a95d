//! Sessions written by every earlier version of the saved format load.
//!
//! `tests/fixtures/format/` holds one document per layout found in the
//! history, each written by the code of its day:
//!
//! - `lc-agent-1_2026-11-21.json` and `lc-agent-1_2026-11-25.json`: the
//!   representative session of `persist.rs` as the code of commits 5f922af
//!   and 826cbbd saved it (its snapshot then; the snapshot's placeholders
//!   for ids, times and durations replaced by fixed values). The second
//!   adds the network's `usage` totals and each call's `token_usage`.
//! - `lc-agent-1_current.json`: the same session loaded and saved by
//!   today's code, kept so a later format change is seen against it.
//!
//! Each loads with every node, output, file and inner network; a loaded
//! old document re-saves to a document that loads back to itself; today's
//! file re-saves byte for byte. Set `LC_AGENT_WRITE_FIXTURES=1` to write
//! `lc-agent-1_current.json` again after a deliberate format change (and
//! keep the old one under a dated name).

use std::path::PathBuf;

use lc_agent::{GenericNode, NetworkNode, RunnableNetwork, Saving};
use serde_json::Value;

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/format")
        .join(name)
}

fn read(name: &str) -> String {
    std::fs::read_to_string(path(name)).unwrap()
}

/// What a loaded session must hold, whichever version wrote it.
fn check_representative(net: &RunnableNetwork) {
    let kinds: Vec<String> = net.nodes().iter().map(|n| n.kind().to_string()).collect();
    assert_eq!(
        kinds,
        ["system", "human", "chat", "tool", "tool", "chat", "network"]
    );
    for node in net.nodes() {
        assert!(node.is_invoked(), "{} is not invoked", node.kind());
        assert!(node.output().is_some(), "{} lost its output", node.kind());
        assert!(node.downcast::<GenericNode>().is_none());
    }
    let nodes = net.nodes();
    assert_eq!(
        nodes[1].output().unwrap().text(),
        "Count the words of both texts."
    );
    assert_eq!(nodes[2].output().unwrap().tool_calls().len(), 2);
    assert_eq!(nodes[3].parents(), vec![nodes[2].id()]);
    assert_eq!(nodes[5].parents(), vec![nodes[3].id(), nodes[4].id()]);
    let inner = nodes[6].downcast::<NetworkNode>().unwrap().network();
    assert!(!inner.nodes().is_empty());
    let files = net.files();
    assert!(files.contains_key("/notes.md") && files.contains_key("/src/main.rs"));
}

#[test]
fn every_earlier_layout_loads_and_resaves_stably() {
    for name in ["lc-agent-1_2026-11-21.json", "lc-agent-1_2026-11-25.json"] {
        let text = read(name);
        let net = RunnableNetwork::from_json(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        check_representative(&net);
        // Nothing of the old document is lost on the way through.
        let saved = net.to_json().unwrap();
        let old: Value = serde_json::from_str(&text).unwrap();
        let new: Value = serde_json::from_str(&saved).unwrap();
        assert_eq!(old["nodes"], new["nodes"], "{name}: nodes changed");
        assert_eq!(old["files"], new["files"], "{name}: files changed");
        assert_eq!(old["metadata"], new["metadata"], "{name}: metadata changed");
        assert_eq!(old["__connections__"], new["__connections__"]);
        // And what it re-saves is stable.
        let again = RunnableNetwork::from_json(&saved).unwrap();
        check_representative(&again);
        assert_eq!(again.to_json().unwrap(), saved, "{name}: not stable");
    }
}

#[test]
fn todays_file_resaves_byte_for_byte() {
    if std::env::var_os("LC_AGENT_WRITE_FIXTURES").is_some() {
        let net = RunnableNetwork::from_json(&read("lc-agent-1_2026-11-25.json")).unwrap();
        std::fs::write(path("lc-agent-1_current.json"), net.to_json().unwrap()).unwrap();
    }
    let text = read("lc-agent-1_current.json");
    let net = RunnableNetwork::from_json(&text).unwrap();
    check_representative(&net);
    assert_eq!(net.to_json().unwrap(), text);
    // Written afresh (no node's loaded text kept): the same bytes.
    let fresh = serde_json::to_string(&net.to_value().unwrap()).unwrap();
    assert_eq!(fresh, text, "today's writer no longer writes today's file");
}

/// A node read from compact text keeps it as its saved form: the save
/// after a load copies it, an edit drops it, and text written any other
/// way (spaced, indented) is written afresh.
#[test]
fn loaded_text_is_kept_until_a_node_changes() {
    let text = read("lc-agent-1_current.json");

    // An edit: that node is written afresh, the others as they were.
    let net = RunnableNetwork::from_json(&text).unwrap();
    let human = net.nodes()[1].clone();
    human.set_name("asked");
    let saved = net.to_json().unwrap();
    let old: Value = serde_json::from_str(&text).unwrap();
    let new: Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(new["nodes"][1]["name"], "asked");
    assert_eq!(old["nodes"][0], new["nodes"][0]);
    assert_eq!(old["nodes"][2], new["nodes"][2]);
    let again = RunnableNetwork::from_json(&saved).unwrap();
    assert_eq!(again.nodes()[1].name(), "asked");

    // A node written with spaces is not kept: the save is today's form.
    let first = text.find("{\"__node_type__\":\"").unwrap();
    let mut spaced = text.clone();
    spaced.replace_range(first..first + 18, "{ \"__node_type__\": \"");
    assert_ne!(spaced, text);
    let net = RunnableNetwork::from_json(&spaced).unwrap();
    assert_eq!(net.to_json().unwrap(), text);

    // Indented: every node written afresh.
    let pretty = RunnableNetwork::from_json(&text)
        .unwrap()
        .to_json_pretty()
        .unwrap();
    let net = RunnableNetwork::from_json(&pretty).unwrap();
    assert_eq!(net.to_json().unwrap(), text);
}

//! `lc-agent sessions fork | diff | import` on a session a scripted chat
//! saved.

use std::path::Path;
use std::process::Output;

use serde_json::json;

use crate::common;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `lc-agent sessions --sessions <dir>/sessions <args>`.
fn sessions(dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new(common::own_binary(dir))
        .arg("sessions")
        .arg("--sessions")
        .arg(dir.join("sessions"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn fork_diff_and_import_a_saved_session() {
    let dir = tempfile::tempdir().unwrap();
    let script = json!([{"content": "First."}, {"content": "Second."}]);
    let out = common::lc_agent(
        dir.path(),
        &["chat"],
        &script.to_string(),
        &[] as &[&str],
        "one\ntwo\n/exit\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let list = ok(sessions(dir.path(), &["list"]));
    let id = list
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let exported: serde_json::Value =
        serde_json::from_str(&ok(sessions(dir.path(), &["export", &id]))).unwrap();
    let first = exported["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["outputs"]["content"] == "First.")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();

    // `show --ids` names the nodes the way `fork --at` takes them: the
    // first answer ends turn 1; its label and turn:1 fork there too.
    let ids = ok(sessions(dir.path(), &["show", &id, "--ids"]));
    let turn1 = ids
        .lines()
        .find(|l| l.ends_with("<- turn:1"))
        .unwrap_or_else(|| panic!("{ids}"));
    assert!(turn1.contains(&first) && turn1.contains("First."), "{ids}");
    assert!(
        ids.lines()
            .any(|l| l.ends_with("<- turn:2") && l.contains("Second.")),
        "{ids}"
    );
    let label = turn1.split_whitespace().nth(1).unwrap().to_string();
    assert!(label.starts_with('n'), "{ids}");
    for at in [label.as_str(), "turn:1"] {
        let forked = ok(sessions(dir.path(), &["fork", &id, "--at", at]));
        assert!(
            forked.contains(&format!("at node {first} ")),
            "{at}: {forked}"
        );
    }
    let bad = sessions(dir.path(), &["fork", &id, "--at", "turn:3"]);
    assert!(!bad.status.success());
    assert!(
        text(&bad.stderr).contains("the current branch has 2 turn(s)"),
        "{}",
        text(&bad.stderr)
    );

    // Fork at the first answer: a new session with that conversation.
    let forked = ok(sessions(dir.path(), &["fork", &id, "--at", &first[..8]]));
    let fork_id = forked
        .strip_prefix("forked ")
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("{forked}"))
        .to_string();
    let shown = ok(sessions(dir.path(), &["show", &fork_id]));
    assert!(shown.contains("First."), "{shown}");
    assert!(!shown.contains("Second."), "{shown}");
    // Usage belongs to nodes: the fork made no call of its own; the one
    // above the fork point is shown apart, counted in the origin.
    let line = |text: &str, start: &str| {
        text.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no `{start}` line: {text}"))
            .to_string()
    };
    assert!(line(&shown, "usage ").contains(" 0 call(s)"), "{shown}");
    let inherited = line(&shown, "inherited ");
    assert!(inherited.contains(" 1 call(s)"), "{shown}");
    assert!(inherited.contains(&format!("from {id}")), "{shown}");
    let origin = ok(sessions(dir.path(), &["show", &id]));
    assert!(line(&origin, "usage ").contains(" 2 call(s)"), "{origin}");
    assert!(!origin.contains("inherited"), "{origin}");
    let fork_json: serde_json::Value =
        serde_json::from_str(&ok(sessions(dir.path(), &["export", &fork_id]))).unwrap();
    assert_eq!(fork_json["metadata"]["forked_from"]["session"], id.as_str());
    assert_eq!(fork_json["metadata"]["forked_from"]["node"], first.as_str());

    // Diff: they share the first turn (and the system prompt above it);
    // the origin has the second.
    let diff = ok(sessions(dir.path(), &["diff", &id, &fork_id]));
    assert!(
        diff.contains(&format!(" nodes, up to node {first}\n")),
        "{diff}"
    );
    assert!(diff.contains("- [human] two"), "{diff}");
    assert!(diff.contains("- [ai] Second."), "{diff}");
    assert!(
        diff.contains(&format!("+++ {fork_id} (0 nodes after)")),
        "{diff}"
    );

    // Import: refused while the id exists, saved once it does not.
    let file = dir.path().join("fork.json");
    std::fs::write(&file, serde_json::to_string(&fork_json).unwrap()).unwrap();
    let refused = sessions(dir.path(), &["import", file.to_str().unwrap()]);
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("exists already"),
        "{}",
        text(&refused.stderr)
    );
    // Another user's list does not hold it: imported there, the same nodes.
    let imported = ok(sessions(
        dir.path(),
        &["--user", "other", "import", file.to_str().unwrap()],
    ));
    assert!(
        imported.starts_with(&format!("imported {fork_id}")),
        "{imported}"
    );
    let again: serde_json::Value = serde_json::from_str(&ok(sessions(
        dir.path(),
        &["--user", "other", "export", &fork_id],
    )))
    .unwrap();
    assert_eq!(again["nodes"], fork_json["nodes"]);
}

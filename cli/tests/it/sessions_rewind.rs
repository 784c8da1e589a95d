//! `lc-agent sessions rewind` through the real binary: a scripted chat in
//! a directory workspace changes files with the file tools and the
//! sandboxed shell over three turns; the headless rewind puts back each
//! turn's tree, `--redo` takes it back, a user's change is reported and
//! kept. The workspace lives under the target directory, not `/tmp`
//! (which the sandbox replaces with its own).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Output, Stdio};

use lc_agent_test_support::needs;
use serde_json::{json, Value};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
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

fn binary() -> std::process::Command {
    lc_agent_test_support::own_binary::offline(Path::new(env!("CARGO_BIN_EXE_lc-agent")))
}

fn sessions(base: &Path, args: &[&str]) -> Output {
    binary()
        .arg("sessions")
        .arg("--sessions")
        .arg(base.join("sessions"))
        .args(args)
        .env("LC_AGENT_HOME", base.join("home"))
        .output()
        .unwrap()
}

fn call(id: &str, name: &str, args: Value) -> Value {
    json!({"id": id, "name": name, "arguments": args})
}

#[needs(bwrap)]
#[test]
fn a_headless_rewind_puts_back_what_the_tools_and_the_shell_did_and_redo_returns() {
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = base.path().join("work");
    std::fs::create_dir_all(&root).unwrap();
    let script = json!([
        {"tool_calls": [
            call("1", "write_file", json!({"file_path": "/a.txt", "content": "a1"})),
            call("2", "execute", json!({"command": "echo s1 > s.txt && mkdir -p gen && echo g1 > gen/g.txt"})),
        ]},
        {"content": "One."},
        {"tool_calls": [
            call("3", "edit_file", json!({"file_path": "/a.txt", "old_string": "a1", "new_string": "a2"})),
            call("4", "execute", json!({"command": "rm s.txt && echo t2 > t.txt"})),
        ]},
        {"content": "Two."},
        {"tool_calls": [
            call("5", "execute", json!({"command": "rm -r gen a.txt && echo t3 > t.txt"})),
        ]},
        {"content": "Three."},
    ]);
    let script_path = base.path().join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let mut chat = binary();
    chat.args(["chat", "--shell", "--yes"])
        .arg("--root")
        .arg(&root)
        .arg("--script")
        .arg(&script_path)
        .arg("--sessions")
        .arg(base.path().join("sessions"))
        .env("LC_AGENT_HOME", base.path().join("home"))
        .env_remove("LC_AGENT_SANDBOX_MECHANISM")
        .stdin(Stdio::piped());
    let out =
        lc_agent_test_support::own_binary::run_with_stdin(&mut chat, "one\ntwo\nthree\n/exit\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let after3 = on_disk(&root);
    assert_eq!(
        after3.get("/t.txt").map(String::as_str),
        Some("t3\n"),
        "{after3:?}"
    );
    assert!(!after3.contains_key("/a.txt"));

    let list = ok(sessions(base.path(), &["list"]));
    let id = list
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();

    // Turn 1's tree: a.txt, s.txt and gen/g.txt back, t.txt gone.
    let said = ok(sessions(
        base.path(),
        &["rewind", &id, "--to", "turn:1", "--files"],
    ));
    assert!(said.contains("files restored: "), "{said}");
    let turn1: BTreeMap<String, String> =
        [("/a.txt", "a1"), ("/gen/g.txt", "g1\n"), ("/s.txt", "s1\n")]
            .into_iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
    assert_eq!(on_disk(&root), turn1);

    // Turn 2's, as JSON.
    let report: Value = serde_json::from_str(&ok(sessions(
        base.path(),
        &["rewind", &id, "--to", "turn:2", "--files", "--json"],
    )))
    .unwrap();
    assert_eq!(report["source"], "workspace", "{report}");
    let turn2_end = report["node"].as_str().unwrap().to_string();
    let turn2 = on_disk(&root);
    assert_eq!(turn2["/a.txt"], "a2");
    assert_eq!(turn2["/t.txt"], "t2\n");
    assert!(!turn2.contains_key("/s.txt"));

    // Redo: turn 1's tree again (the state before the last rewind).
    let said = ok(sessions(base.path(), &["rewind", &id, "--redo"]));
    assert!(said.starts_with("redone: files"), "{said}");
    assert_eq!(on_disk(&root), turn1);

    // The user edits a file; a rewind to the start reports and keeps it.
    std::fs::write(root.join("s.txt"), "the user's s").unwrap();
    let said = ok(sessions(
        base.path(),
        &["rewind", &id, "--to", "start", "--both"],
    ));
    assert!(
        said.contains("files changed outside the agent since, left as they are: /s.txt"),
        "{said}"
    );
    assert_eq!(
        on_disk(&root),
        BTreeMap::from([("/s.txt".to_string(), "the user's s".to_string())])
    );
    // ...and the conversation went back too: the session's current branch is empty.
    let shown = ok(sessions(base.path(), &["show", &id]));
    assert!(!shown.contains("[human] one"), "{shown}");

    // `exec resume --rewind-to`: back to turn 2's end (conversation and
    // files; by id: the current branch is empty after the rewind to start),
    // a `rewind` item in the JSON stream, then the turn runs from there.
    let script_path = base.path().join("script-exec.json");
    std::fs::write(&script_path, json!([{"content": "Resumed."}]).to_string()).unwrap();
    let out = binary()
        .current_dir(&root)
        .args([
            "exec",
            "resume",
            &id,
            "Go on.",
            "--json",
            "--shell",
            "--yes",
            "--rewind-to",
            &turn2_end,
        ])
        .arg("--root")
        .arg(&root)
        .arg("--script")
        .arg(&script_path)
        .arg("--sessions")
        .arg(base.path().join("sessions"))
        .env("LC_AGENT_HOME", base.path().join("home"))
        .env_remove("LC_AGENT_SANDBOX_MECHANISM")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = ok(out);
    let rewind: Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["item"]["type"] == "rewind")
        .unwrap_or_else(|| panic!("no rewind item: {stdout}"));
    assert_eq!(rewind["type"], "item.completed", "{rewind}");
    assert_eq!(rewind["item"]["source"], "workspace", "{rewind}");
    assert_eq!(rewind["item"]["what"], "both", "{rewind}");
    assert_eq!(
        rewind["item"]["files"]["changed_outside"],
        json!(["/s.txt"]),
        "{rewind}"
    );
    assert!(stdout.contains("Resumed."), "{stdout}");
    let now = on_disk(&root);
    assert_eq!(now["/t.txt"], "t2\n");
    assert_eq!(now["/a.txt"], "a2");
    assert_eq!(now["/s.txt"], "the user's s");
    let shown = ok(sessions(base.path(), &["show", &id]));
    assert!(
        shown.contains("[human] two") && !shown.contains("[human] three"),
        "{shown}"
    );

    // An unknown turn is a clear error.
    let bad = sessions(base.path(), &["rewind", &id, "--to", "turn:9"]);
    assert!(!bad.status.success());
    assert!(
        text(&bad.stderr).contains("turn:9"),
        "{}",
        text(&bad.stderr)
    );
}

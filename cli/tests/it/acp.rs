//! `lc-agent acp` as an editor drives it: the Agent Client Protocol's
//! official TypeScript SDK (`@agentclientprotocol/sdk` from npm, under
//! `.ci/node_modules`) is the client, in `acp_client.mjs`, talking to the
//! real binary over stdio; a scripted model answers (offline). The script
//! prints what the editor saw as a JSON report.

use std::path::Path;
use std::process::Command;

use lc_agent_test_support::needs;
use lc_agent_test_support::own_binary::MODEL_VARIABLES;
use serde_json::{json, Value};

use crate::common;

/// Runs `acp_client.mjs` against `lc-agent acp --script SCRIPT --sessions
/// DIR/sessions <extra>` with these variables; its report.
fn editor(dir: &Path, script: Value, extra: &[&str], vars: &[(&str, String)]) -> Value {
    static SCRIPTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SCRIPTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let script_path = dir.join(format!("script-{n}.json"));
    std::fs::write(&script_path, script.to_string()).unwrap();
    let bin = common::own_binary(dir);
    let mut command = vec![
        bin.display().to_string(),
        "acp".to_string(),
        "--script".to_string(),
        script_path.display().to_string(),
        "--sessions".to_string(),
        dir.join("sessions").display().to_string(),
    ];
    command.extend(extra.iter().map(|s| s.to_string()));
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut node = Command::new("node");
    node.arg(manifest.join("tests/it/acp_client.mjs"))
        .env("ACP_CI_DIR", manifest.join("../.ci"))
        .env("ACP_COMMAND", json!(command).to_string())
        .env("LC_AGENT_HOME", dir.join("home"));
    for name in MODEL_VARIABLES {
        node.env_remove(name);
    }
    for (name, value) in vars {
        node.env(name, value);
    }
    let out = node.output().expect("node runs (apt-get install nodejs)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "the editor's report is not JSON ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        report.get("error").is_none() && report["exitCode"] == 0,
        "the editor's connection failed: {}\nagent's stderr: {}",
        report["error"],
        report["stderr"]
    );
    report
}

/// The `update`s of a list of `session/update` params.
fn updates(list: &Value) -> Vec<&Value> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|n| &n["update"])
        .collect()
}

/// The agent's text in these updates, and how many chunks it came in.
fn agent_text(updates: &[&Value]) -> (String, usize) {
    let chunks: Vec<&str> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect();
    (chunks.concat(), chunks.len())
}

/// The id of the tool call titled `title`, and the statuses it went through.
fn call_titled(updates: &[&Value], title: &str) -> (String, Vec<String>) {
    let start = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call" && u["title"] == title)
        .unwrap_or_else(|| panic!("no tool call `{title}` in {updates:#?}"));
    let id = start["toolCallId"].as_str().unwrap().to_string();
    let statuses = updates
        .iter()
        .filter(|u| u["toolCallId"] == id.as_str())
        .filter_map(
            |u| match (u["status"].as_str(), u["sessionUpdate"].as_str()) {
                (Some(status), _) => Some(status.to_string()),
                // A new call's status defaults to pending (left out on the wire).
                (None, Some("tool_call")) => Some("pending".to_string()),
                (None, _) => None,
            },
        )
        .collect();
    (id, statuses)
}

/// The plans sent, as `content: status` lists.
fn plans(updates: &[&Value]) -> Vec<Vec<String>> {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "plan")
        .map(|u| {
            u["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    format!(
                        "{}: {}",
                        e["content"].as_str().unwrap(),
                        e["status"].as_str().unwrap()
                    )
                })
                .collect()
        })
        .collect()
}

/// Three turns: a plan, a write the editor allows, a read and an edit of a
/// file whose open buffer differs from the disk; a read through a link
/// out of the workspace and a write the editor rejects; a write during
/// which the editor cancels.
fn three_turns() -> Value {
    json!([
        {"tool_calls": [{"id": "t1", "name": "write_todos", "arguments":
            {"todos": [{"content": "Greet", "status": "in_progress"}]}}]},
        {"content": "Writing the greeting.", "tool_calls": [{"id": "t2", "name": "write_file",
            "arguments": {"file_path": "/hello.txt", "content": "hello\n"}}]},
        {"tool_calls": [{"id": "t3", "name": "read_file", "arguments": {"file_path": "/notes.txt"}}]},
        {"tool_calls": [{"id": "t4", "name": "edit_file", "arguments":
            {"file_path": "/notes.txt", "old_string": "unsaved", "new_string": "saved"}}]},
        {"tool_calls": [{"id": "t5", "name": "write_todos", "arguments":
            {"todos": [{"content": "Greet", "status": "completed"}]}}]},
        {"content": "Wrote the greeting."},
        {"tool_calls": [{"id": "t6a", "name": "read_file", "arguments":
            {"file_path": "/outside/secret.txt"}}]},
        {"tool_calls": [{"id": "t6", "name": "write_file", "arguments":
            {"file_path": "/second.txt", "content": "2\n"}}]},
        {"content": "Skipped it."},
        {"tool_calls": [{"id": "t7", "name": "write_file", "arguments":
            {"file_path": "/third.txt", "content": "3\n"}}]},
        {"content": "Never said."}
    ])
}

#[needs(acp_sdk)]
#[test]
fn an_editor_runs_turns_asks_permissions_serves_files_cancels_and_loads_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let work = std::fs::canonicalize(&work).unwrap();
    std::fs::write(work.join("notes.txt"), "on disk\n").unwrap();
    // A link out of the workspace: the editor is never asked for it.
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
    std::os::unix::fs::symlink(&outside, work.join("outside")).unwrap();
    let notes = work.join("notes.txt").display().to_string();
    let hello = work.join("hello.txt").display().to_string();

    let report = editor(
        dir.path(),
        three_turns(),
        &["--ask", "write:**"],
        &[
            ("ACP_WORK", work.display().to_string()),
            (
                "ACP_BUFFERS",
                json!({ &notes: "unsaved edit\n" }).to_string(),
            ),
            (
                "ACP_ANSWERS",
                json!(["allow_once", "reject_once", "cancel"]).to_string(),
            ),
            (
                "ACP_PROMPTS",
                json!(["Write the greeting", "And a second file", "A third"]).to_string(),
            ),
        ],
    );

    // initialize: protocol version 1, sessions load, the agent named.
    let init = &report["initialize"];
    assert_eq!(init["protocolVersion"], 1, "{init}");
    assert_eq!(init["agentCapabilities"]["loadSession"], true, "{init}");
    assert_eq!(init["agentInfo"]["name"], "lc-agent", "{init}");
    let turns = report["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 3, "{report:#}");
    // The session's permission mode is its session mode.
    assert_eq!(report["modes"]["currentModeId"], "default", "{report:#}");
    let modes: Vec<&str> = report["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["plan", "default", "accept-edits", "bypass"]);

    // Turn 1: streamed text, a plan, a write allowed by the editor and
    // done through it, a read of the editor's buffer, an edit of it.
    let first = updates(&turns[0]["updates"]);
    assert_eq!(turns[0]["stopReason"], "end_turn", "{:#}", turns[0]);
    let (text, chunks) = agent_text(&first);
    assert_eq!(text, "Writing the greeting.Wrote the greeting.");
    assert!(chunks > 2, "the answer streams in pieces: {chunks} chunks");
    assert_eq!(
        plans(&first),
        [
            vec!["Greet: in_progress".to_string()],
            vec!["Greet: completed".to_string()]
        ]
    );
    let (write_id, statuses) = call_titled(&first, "Write /hello.txt");
    assert_eq!(statuses, ["pending", "in_progress", "completed"]);
    let write = first
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == write_id.as_str())
        .unwrap();
    assert_eq!(write["kind"], "edit");
    assert_eq!(write["locations"], json!([{ "path": hello }]));
    assert_eq!(write["content"][0]["type"], "diff");
    let asked = &report["permissions"][0];
    assert_eq!(
        asked["toolCall"]["toolCallId"],
        write_id.as_str(),
        "{asked:#}"
    );
    let options: Vec<&str> = asked["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(options, ["allow_once", "allow_always", "reject_once"]);
    assert_eq!(
        report["writes"],
        json!([{"path": hello, "content": "hello\n"}, {"path": notes, "content": "saved edit\n"}])
    );
    assert_eq!(
        std::fs::read_to_string(work.join("hello.txt")).unwrap(),
        "hello\n"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("notes.txt")).unwrap(),
        "saved edit\n"
    );
    let (read_id, statuses) = call_titled(&first, "Read /notes.txt");
    assert_eq!(statuses, ["in_progress", "completed"]);
    let read = first
        .iter()
        .find(|u| {
            u["sessionUpdate"] == "tool_call_update"
                && u["toolCallId"] == read_id.as_str()
                && u["status"] == "completed"
        })
        .unwrap();
    let seen = read["content"][0]["content"]["text"].as_str().unwrap();
    assert!(
        seen.contains("unsaved edit") && !seen.contains("on disk"),
        "the editor's buffer is read: {seen}"
    );
    assert_eq!(report["reads"], json!([notes, notes]));
    let (_, statuses) = call_titled(&first, "Update the plan");
    assert_eq!(statuses, ["in_progress", "completed"]);

    // Turn 2: a read through the link fails (confined as on disk; the
    // editor is not asked); the editor rejects the write; the model goes on.
    let second = updates(&turns[1]["updates"]);
    assert_eq!(turns[1]["stopReason"], "end_turn", "{:#}", turns[1]);
    let (_, statuses) = call_titled(&second, "Read /outside/secret.txt");
    assert_eq!(statuses, ["in_progress", "failed"]);
    assert!(
        !format!("{:?}", second).contains("secret\\n"),
        "{second:#?}"
    );
    let (_, statuses) = call_titled(&second, "Write /second.txt");
    assert_eq!(statuses, ["pending", "failed"]);
    assert_eq!(agent_text(&second).0, "Skipped it.");
    assert!(!work.join("second.txt").exists());

    // Turn 3: the editor cancels while it is asked.
    let third = updates(&turns[2]["updates"]);
    assert_eq!(turns[2]["stopReason"], "cancelled", "{:#}", turns[2]);
    let (_, statuses) = call_titled(&third, "Write /third.txt");
    assert_eq!(statuses, ["pending", "failed"]);
    assert!(!work.join("third.txt").exists());
    assert_eq!(report["permissions"].as_array().unwrap().len(), 3);

    // Another editor process loads the session: its history replayed,
    // then a turn that goes on from it.
    let session = report["sessionId"].as_str().unwrap().to_string();
    let loaded = editor(
        dir.path(),
        json!([{"content": "Back again."}]),
        &[],
        &[
            ("ACP_SCENARIO", "load".to_string()),
            ("ACP_SESSION", session.clone()),
            ("ACP_WORK", work.display().to_string()),
            ("ACP_PROMPTS", json!(["Are you there?"]).to_string()),
            ("ACP_SET_MODE", "plan".to_string()),
        ],
    );
    assert_eq!(loaded["sessionId"], session.as_str());
    let replayed = updates(&loaded["replayed"]);
    let said: Vec<&str> = replayed
        .iter()
        .filter(|u| u["sessionUpdate"] == "user_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(said, ["Write the greeting", "And a second file", "A third"]);
    assert_eq!(
        agent_text(&replayed).0,
        "Writing the greeting.Wrote the greeting.Skipped it."
    );
    let (_, statuses) = call_titled(&replayed, "Write /hello.txt");
    assert_eq!(statuses, ["in_progress", "completed"]);
    let (_, statuses) = call_titled(&replayed, "Write /third.txt");
    assert_eq!(statuses, ["in_progress", "failed"]);
    assert_eq!(plans(&replayed), [vec!["Greet: completed".to_string()]]);
    let turn = &loaded["turns"][0];
    assert_eq!(turn["stopReason"], "end_turn", "{turn:#}");
    assert_eq!(agent_text(&updates(&turn["updates"])).0, "Back again.");

    // The mode set in the editor is the session's: loaded again, it is
    // still `plan`, and the conversation has the new turn.
    assert_eq!(loaded["setMode"], json!({}), "{loaded:#}");
    let again = editor(
        dir.path(),
        json!([]),
        &[],
        &[
            ("ACP_SCENARIO", "load".to_string()),
            ("ACP_SESSION", session),
            ("ACP_WORK", work.display().to_string()),
        ],
    );
    assert_eq!(again["modes"]["currentModeId"], "plan", "{again:#}");
    let replayed = updates(&again["replayed"]);
    assert!(agent_text(&replayed).0.ends_with("Back again."));
}

/// Issue 49 item 5: `acp --shell` without `--root`: an editor's folder
/// can have a shell. The command runs in the session's `cwd` once the
/// editor allows it.
#[needs(acp_sdk)]
#[test]
fn a_shell_without_root_runs_in_the_editors_folder() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let work = std::fs::canonicalize(&work).unwrap();
    let script = json!([
        {"tool_calls": [{"id": "x1", "name": "execute", "arguments":
            {"command": "echo made > made.txt"}}]},
        {"content": "Ran it."}
    ]);
    let report = editor(
        dir.path(),
        script,
        &["--shell", "--sandbox", "full"],
        &[
            ("ACP_WORK", work.display().to_string()),
            ("ACP_ANSWERS", json!(["allow_once"]).to_string()),
            ("ACP_PROMPTS", json!(["Make the file"]).to_string()),
        ],
    );
    let turns = report["turns"].as_array().unwrap();
    assert_eq!(turns[0]["stopReason"], "end_turn", "{report:#}");
    assert_eq!(
        std::fs::read_to_string(work.join("made.txt")).unwrap(),
        "made\n",
        "{report:#}"
    );
}

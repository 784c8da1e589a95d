//! End to end: a scripted model (a stand-in for a real one) drives
//! write_file, grep, edit_file, read_file and execute across several turns
//! over a `LocalShellBackend`; the final files and the transcript are
//! snapshotted (ids are the script's own; no timestamps are printed).

use lc_agent::{
    Attachments, HumanNode, Message, RunnableNetwork, ScriptedChatModel, ToolCall, Turn,
};
use lc_agent_filesystem::{FilesystemModifier, LocalShellBackend};
use serde_json::json;

fn script() -> Vec<Turn> {
    vec![
        Turn::tool_calls([
            ToolCall::new(
                "call_1",
                "write_file",
                json!({
                    "file_path": "/app/greet.sh",
                    "content": "#!/bin/sh\ngreet() {\n    echo \"Hello $1\"\n}\ngreet world\n"
                }),
            ),
            ToolCall::new(
                "call_2",
                "write_file",
                json!({
                    "file_path": "/app/NOTES.md",
                    "content": "TODO: make the greeting friendlier\n"
                }),
            ),
        ]),
        Turn::call(
            "call_3",
            "grep",
            json!({"pattern": "greet|TODO", "output_mode": "content"}),
        ),
        Turn::call(
            "call_4",
            "edit_file",
            json!({
                "file_path": "/app/greet.sh",
                "old_string": "echo \"Hello $1\"",
                "new_string": "echo \"Hello, $1!\""
            }),
        ),
        Turn::call(
            "call_5",
            "read_file",
            json!({"file_path": "/app/greet.sh", "offset": 1, "limit": 3}),
        ),
        Turn::call(
            "call_6",
            "execute",
            json!({"command": "sh app/greet.sh && echo oops >&2 && exit 3"}),
        ),
        Turn::call(
            "call_7",
            "edit_file",
            json!({
                "file_path": "/app/NOTES.md",
                "old_string": "TODO: make the greeting friendlier",
                "new_string": "DONE: the greeting is friendlier"
            }),
        ),
        Turn::text("The greeting now says \"Hello, world!\"."),
    ]
}

fn transcript(net: &RunnableNetwork) -> String {
    let mut out = String::new();
    for node in net.nodes() {
        let Some(message) = node.output() else {
            continue;
        };
        match message.as_ref() {
            Message::Ai { .. } => {
                out.push_str(&format!("[ai] {}\n", message.text()));
                for call in message.tool_calls() {
                    out.push_str(&format!(
                        "  -> {} {} {}\n",
                        call.id,
                        call.name,
                        call.parsed_arguments().unwrap()
                    ));
                }
            }
            Message::Tool {
                tool_call_id,
                status,
                ..
            } => {
                out.push_str(&format!(
                    "[tool {tool_call_id} {status:?}]\n{}\n",
                    message.text()
                ));
            }
            other => out.push_str(&format!("[{}] {}\n", other.role(), other.text())),
        }
    }
    out
}

fn files_on_disk(root: &std::path::Path) -> String {
    let mut paths = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p)
            } else {
                paths.push(p)
            }
        }
    }
    paths.sort();
    paths
        .iter()
        .map(|p| {
            format!(
                "== /{}\n{}",
                p.strip_prefix(root).unwrap().display(),
                std::fs::read_to_string(p).unwrap()
            )
        })
        .collect()
}

#[tokio::test]
async fn scripted_agent_edits_and_runs_files() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedChatModel::new(script());
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("scripted")
        .model("scripted", model.clone())
        .build();
    net.add_modifier(FilesystemModifier::new(
        LocalShellBackend::new(dir.path()).unwrap(),
    ))
    .unwrap();
    {
        let _s = net.enter();
        HumanNode::new("Make the greeting friendlier and run it.");
    }
    let reply = net.invoke().await.unwrap();
    assert_eq!(reply.text(), "The greeting now says \"Hello, world!\".");
    assert_eq!(model.calls(), 7);
    let transcript = transcript(&net);
    assert!(transcript.contains("Hello, world!\noops\nExit code: 3"));
    let files = files_on_disk(dir.path());
    insta::with_settings!({snapshot_path => "../../../../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("filesystem_e2e_transcript", transcript);
        insta::assert_snapshot!("filesystem_e2e_files", files);
    });
}

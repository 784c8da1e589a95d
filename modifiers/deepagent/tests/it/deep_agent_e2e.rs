//! One end-to-end run of the `DeepAgent` preset, scripted (stand-ins for
//! real models): the agent plans with `write_todos`, hands the report to a
//! named sub-agent through `task` — a call that waits for a person, who
//! approves it after the session was saved and loaded in a "new process" —
//! reads the merged file back, closes its todos and answers. The
//! transcript (sub-networks indented) and the saved graph (ids and times
//! redacted) are snapshotted.

use lc_agent::{HumanNode, NetworkNode, RunnableNetwork, ScriptedChatModel, ToolCall, Turn};
use lc_agent_deepagent::{
    decide, pending_approvals, Decision, Decisions, DeepAgent, DeepAgentBuilder, SubAgent,
};
use serde_json::{json, Value};

fn todos(first: &str, second: &str) -> Value {
    json!({"todos": [
        {"content": "Have the writer draft /report.md", "status": first},
        {"content": "Check the report", "status": second},
    ]})
}

/// The main agent's turns, then the writer's model.
fn scripts() -> (Vec<Turn>, ScriptedChatModel) {
    let main = vec![
        Turn::call("p1", "write_todos", todos("in_progress", "pending")),
        Turn::call(
            "t1",
            "task",
            json!({"description": "Write /report.md: two lines about the parser.",
                   "subagent_type": "writer"}),
        ),
        Turn::call("r1", "read_file", json!({"file_path": "/report.md"})),
        Turn::call("p2", "write_todos", todos("completed", "completed")),
        Turn::text("Done: /report.md describes the parser."),
    ];
    let writer = ScriptedChatModel::new([
        Turn::tool_calls([ToolCall::new(
            "w1",
            "write_file",
            json!({"file_path": "/report.md", "content": "# Parser\nIt parses.\n"}),
        )]),
        Turn::text("Wrote /report.md (2 lines)."),
    ]);
    (main, writer)
}

fn builder(main: &ScriptedChatModel, writer: &ScriptedChatModel) -> DeepAgentBuilder {
    DeepAgent::builder()
        .model(main.clone())
        .model_named("writer-model", writer.clone())
        .instructions("You write short technical reports.")
        .subagent(
            SubAgent::new("writer", "Writes reports into files")
                .instructions("You write the report you are asked for, then say where it is.")
                .model("writer-model"),
        )
        .interrupt_on("task", Decisions::approve_or_reject())
}

/// Each node as a line: its kind and its message; a sub-network's nodes
/// follow, indented.
fn transcript(net: &RunnableNetwork, indent: usize, out: &mut String) {
    for node in net.topological_order() {
        let pad = " ".repeat(indent);
        let Some(message) = node.output() else {
            out.push_str(&format!("{pad}[{}] (not run)\n", node.kind()));
            continue;
        };
        let text = message.text().replace('\n', "\\n");
        let text: String = text.chars().take(100).collect();
        out.push_str(&format!(
            "{pad}[{}/{}] {text}\n",
            node.kind(),
            message.role()
        ));
        for call in message.tool_calls() {
            out.push_str(&format!(
                "{pad}    -> {} {} {}\n",
                call.id, call.name, call.arguments
            ));
        }
        if let Some(inner) = node.downcast::<NetworkNode>() {
            transcript(inner.network(), indent + 4, out);
        }
    }
}

/// Ids, times and durations vary from run to run.
fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                match key.as_str() {
                    // Uuids vary; the script's tool-call ids do not.
                    "id" if v
                        .as_str()
                        .is_some_and(|s| s.len() == 36 && s.matches('-').count() == 4) =>
                    {
                        *v = json!("[id]")
                    }
                    "created_at" | "modified_at" | "started_at" | "requested_at" | "decided_at" => {
                        *v = json!("[time]")
                    }
                    "elapsed_us" | "elapsed_ms" => *v = json!("[duration]"),
                    // The scripted models report no usage: the tokenizer's
                    // estimate of prompts that change with every prompt
                    // edit. The calls and the `estimated` marks stay.
                    "prompt_tokens" | "completion_tokens" | "total_tokens" => {
                        *v = json!("[tokens]")
                    }
                    _ => redact(v),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

#[tokio::test]
async fn plan_delegate_approve_after_a_restart_and_answer() {
    let (turns, writer) = scripts();
    let main = ScriptedChatModel::new(turns.clone());
    let net = builder(&main, &writer).build().unwrap();
    {
        let _s = net.enter();
        HumanNode::new("Write a short report on the parser into /report.md.");
    }

    // The plan is written, then the task waits for a person.
    net.invoke().await.unwrap();
    // Held: the call and the sub-agent's network that serves it.
    assert_eq!(net.held().len(), 2);
    let pending = pending_approvals(&net);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool_call.name, "task");
    assert_eq!(writer.calls(), 0, "nothing delegated before the approval");

    // "Another process": the saved session, loaded and re-attached.
    let saved = net.to_json().unwrap();
    // The first process played the main model's first two turns.
    let main2 = ScriptedChatModel::new(turns[2..].to_vec());
    let (_, writer2) = scripts();
    let loaded = RunnableNetwork::from_json(&saved).unwrap();
    builder(&main2, &writer2).attach(&loaded).unwrap();
    let pending = pending_approvals(&loaded);
    assert_eq!(pending.len(), 1);
    decide(&loaded, pending[0].node_id, Decision::Approve).unwrap();
    let answer = loaded.invoke().await.unwrap();
    assert!(loaded.held().is_empty());
    assert_eq!(answer.text(), "Done: /report.md describes the parser.");
    assert_eq!(writer2.calls(), 2);
    assert_eq!(main2.calls(), 3);

    // The sub-agent's file merged back; the todos closed.
    let report = loaded.with_files(|f| f.get("/report.md").map(|d| d.text()));
    assert_eq!(report.as_deref(), Some("# Parser\nIt parses.\n"));
    let plan = loaded.metadata_value("todos").unwrap();
    assert!(plan
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["status"] == "completed"));

    let mut lines = String::new();
    transcript(&loaded, 0, &mut lines);
    assert!(
        lines.contains("[tool/tool] Wrote /report.md (2 lines)."),
        "{lines}"
    );
    let mut graph: Value = serde_json::from_str(&loaded.to_json().unwrap()).unwrap();
    redact(&mut graph);
    insta::with_settings!({snapshot_path => "../../../../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("deep_agent_e2e_transcript", lines);
        insta::assert_json_snapshot!("deep_agent_e2e_graph", graph);
    });
}

//! Running networks with tools: the tool loop, concurrent calls of one
//! turn, failures the model reads, and the events calls and failures
//! report.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lc_agent::{
    Attachments, Events, FnTool, InvokeOutcome, Message, NetworkEvent, RunnableNetwork,
    ScriptedChatModel, ToolOutput, ToolStatus, Turn,
};
use serde_json::json;

use crate::invoke::{chat_net, echo_tool, say, ReadsAMissingFile};

#[tokio::test]
async fn the_tool_loop_runs_calls_then_the_next_turn() {
    let model = ScriptedChatModel::new([
        Turn::tool_calls([
            lc_agent::ToolCall::new("c1", "echo", json!({"text": "one"})),
            lc_agent::ToolCall::new("c2", "echo", json!({"text": "two"})),
        ]),
        Turn::text("both echoed"),
    ]);
    let net = chat_net(&model);
    net.add_tool(echo_tool());
    say(&net, "echo twice");
    assert_eq!(net.invoke().await.unwrap().text(), "both echoed");
    let kinds: Vec<String> = net.nodes().iter().map(|n| n.kind().to_string()).collect();
    assert_eq!(kinds, ["human", "chat", "tool", "tool", "chat"]);
    let nodes = net.nodes();
    assert_eq!(nodes[4].parents(), [nodes[2].id(), nodes[3].id()]);
    assert_eq!(
        nodes[2].metadata_value("added_by"),
        Some(json!("lc-agent/tool-loop"))
    );
    // The second model turn saw the results right after the AI message.
    let seen: Vec<String> = net
        .input_of(&nodes[4])
        .to_vec()
        .iter()
        .map(|m| format!("{}={}", m.role(), m.text()))
        .collect();
    assert_eq!(seen, ["human=echo twice", "ai=", "tool=one", "tool=two"]);
}

#[tokio::test]
async fn tool_calls_of_one_turn_run_concurrently() {
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (r, p) = (running.clone(), peak.clone());
    let slow = FnTool::new("slow", "Sleeps.", json!({"type": "object"}), move |_, _| {
        let (r, p) = (r.clone(), p.clone());
        async move {
            let now = r.fetch_add(1, Ordering::SeqCst) + 1;
            p.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(50)).await;
            r.fetch_sub(1, Ordering::SeqCst);
            Ok(ToolOutput::ok("slept"))
        }
    });
    let calls = (0..4).map(|i| lc_agent::ToolCall::new(format!("c{i}"), "slow", json!({})));
    let model = ScriptedChatModel::new([Turn::tool_calls(calls), Turn::text("done")]);
    let net = chat_net(&model);
    net.add_tool(slow);
    say(&net, "go");
    net.invoke().await.unwrap();
    assert_eq!(peak.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn tool_failures_become_error_results_the_model_reads() {
    let sleepy = FnTool::new(
        "sleepy",
        "Never ends.",
        json!({"type": "object"}),
        |_, _| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(ToolOutput::ok("unreachable"))
        },
    )
    .with_timeout(Duration::from_millis(20));
    let bad_json = lc_agent::ToolCall {
        id: "c2".into(),
        name: "echo".into(),
        arguments: "{not json".into(),
    };
    let model = ScriptedChatModel::new([
        Turn::tool_calls([
            lc_agent::ToolCall::new("c1", "nope", json!({})),
            bad_json,
            lc_agent::ToolCall::new("c3", "echo", json!({"text": 5})),
            lc_agent::ToolCall::new("c4", "echo", json!([1, 2])),
            lc_agent::ToolCall::new("c5", "sleepy", json!({})),
            lc_agent::ToolCall {
                id: "c6".into(),
                name: "echo".into(),
                arguments: String::new(),
            },
        ]),
        Turn::text("noted"),
    ]);
    let net = chat_net(&model);
    net.add_tool(echo_tool());
    net.add_tool(sleepy);
    say(&net, "break things");
    assert_eq!(net.invoke().await.unwrap().text(), "noted");
    let results: Vec<(String, ToolStatus)> = net
        .nodes()
        .iter()
        .filter(|n| n.kind() == "tool")
        .map(|n| match &*n.output().unwrap() {
            Message::Tool {
                content, status, ..
            } => (content.clone(), *status),
            other => panic!("{other:?}"),
        })
        .collect();
    let texts: Vec<&str> = results.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        texts[0],
        "Error: Unknown tool `nope`. Available tools: echo, sleepy"
    );
    assert!(
        texts[1].starts_with("Error: Invalid arguments for echo: not valid JSON"),
        "{}",
        texts[1]
    );
    assert_eq!(
        texts[2],
        "Error: Invalid arguments for echo: `text` must be a string"
    );
    assert_eq!(
        texts[3],
        "Error: Invalid arguments for echo: expected a JSON object, got [1,2]"
    );
    assert_eq!(texts[4], "Error: Tool `sleepy` timed out after 0.02 s");
    // `""` means `{}`: the tool runs and reports the missing field itself.
    assert_eq!(
        texts[5],
        "Error: Invalid arguments for echo: `text` must be a string"
    );
    assert!(results.iter().all(|(_, s)| *s == ToolStatus::Error));
}

#[tokio::test]
async fn tool_calls_failures_and_empty_answers_are_reported_as_events() {
    let model = ScriptedChatModel::new([
        Turn::call("call-1", "shout", json!({"text": "hi"})),
        // A server that lost the streamed tool call answers with nothing.
        Turn::text(""),
    ]);
    let net = chat_net(&model);
    net.add_tool(FnTool::new(
        "shout",
        "Upper-cases `text`.",
        json!({"type": "object"}),
        |args, _| async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok(ToolOutput::ok(
                args["text"].as_str().unwrap_or("").to_uppercase(),
            ))
        },
    ));
    let mut events = net.subscribe();
    say(&net, "shout hi");
    let reply = net.invoke().await.unwrap();
    assert_eq!(reply.text(), "", "an empty answer is not an error");
    let got: Vec<NetworkEvent> = std::iter::from_fn(|| events.try_recv().ok()).collect();

    let tool = net
        .nodes()
        .into_iter()
        .find(|n| n.kind() == "tool")
        .unwrap();
    let started = got.iter().position(|e| {
        *e == NetworkEvent::ToolCallStarted {
            node_id: tool.id(),
            tool_call_id: "call-1".into(),
            name: "shout".into(),
        }
    });
    let finished = got.iter().position(|e| {
        matches!(e, NetworkEvent::ToolCallFinished { node_id, tool_call_id, name, status: ToolStatus::Ok, elapsed }
            if *node_id == tool.id() && tool_call_id == "call-1" && name == "shout" && *elapsed >= Duration::from_millis(5))
    });
    assert!(started.is_some() && finished.is_some(), "{got:?}");
    assert!(started < finished);

    let last_chat = net.current_leaf().unwrap();
    assert_eq!(last_chat.metadata_value("empty_answer"), Some(json!(true)));
    assert!(got.contains(&NetworkEvent::EmptyAnswer {
        node_id: last_chat.id()
    }));
    let first_chat = net
        .nodes()
        .into_iter()
        .find(|n| n.kind() == "chat")
        .unwrap();
    assert_eq!(first_chat.metadata_value("empty_answer"), None);
    // The network stays valid and saveable.
    let saved = net.to_json().unwrap();
    assert_eq!(
        RunnableNetwork::from_json(&saved)
            .unwrap()
            .to_json()
            .unwrap(),
        saved
    );

    // A failing node is reported with its error, and the run's finish says
    // it failed.
    let net = RunnableNetwork::new();
    let mut events = net.subscribe();
    let node = net.add(ReadsAMissingFile, &[]).unwrap();
    net.invoke().await.unwrap_err();
    let got: Vec<NetworkEvent> = std::iter::from_fn(|| events.try_recv().ok()).collect();
    assert!(
        got.iter()
            .any(|e| matches!(e, NetworkEvent::NodeFailed { node_id, error }
        if *node_id == node.id() && error.contains("No such file"))),
        "{got:?}"
    );
    assert!(matches!(
        got.last(),
        Some(NetworkEvent::InvokeFinished {
            outcome: InvokeOutcome::Failed(_),
            ..
        })
    ));
}

//! Sub-agents driven by scripted models (stand-ins for real ones): a task
//! whose file changes reach the parent, two tasks of one turn running at
//! once, an unknown sub-agent, the depth limit, and the sub-network saved
//! in the parent's JSON.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use lc_agent::{
    Attachments, ChatModel, ChatRequest, ChatResponse, HumanNode, ModelError, NetworkNode,
    RunnableNetwork, ScriptedChatModel, ToolStatus, Turn,
};
use lc_agent_deepagent::{SubAgent, SubAgentModifier};
use lc_agent_filesystem::{FilesystemModifier, StateBackend};
use serde_json::json;

fn network(main: ScriptedChatModel, subagents: SubAgentModifier) -> RunnableNetwork {
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("main")
        .model("main", main)
        .modifier(FilesystemModifier::new(StateBackend::factory()))
        .modifier(subagents)
        .build();
    {
        let _s = net.enter();
        HumanNode::new("Write a report on the parser.");
    }
    net
}

fn sub_networks(net: &RunnableNetwork) -> Vec<RunnableNetwork> {
    net.nodes()
        .iter()
        .filter_map(|n| n.downcast::<NetworkNode>().map(|s| s.network().clone()))
        .collect()
}

#[tokio::test]
async fn a_task_runs_isolated_and_its_files_and_answer_reach_the_parent() {
    let main = ScriptedChatModel::new([
        Turn::call(
            "call_1",
            "task",
            json!({"description": "Write /report.md about the parser.", "subagent_type": "writer"}),
        ),
        Turn::text("The report is in /report.md."),
    ]);
    // The sub-agent explains, writes, then ends with an empty answer: its
    // last non-empty text is the report.
    let writer = ScriptedChatModel::new([
        Turn {
            content: "Writing /report.md (2 lines).".into(),
            tool_calls: vec![lc_agent::ToolCall::new(
                "w1",
                "write_file",
                json!({"file_path": "/report.md", "content": "# Parser\nIt parses."}),
            )],
            delay: None,
        },
        Turn::text(""),
    ]);
    let net = network(
        main,
        SubAgentModifier::new().subagent(
            SubAgent::new("writer", "Writes reports")
                .instructions("You write short reports.")
                .model("writer-model"),
        ),
    );
    net.register_model("writer-model", writer.clone());
    let reply = net.invoke().await.unwrap();
    assert_eq!(reply.text(), "The report is in /report.md.");

    // The parent's file changed; the tool result is the sub-agent's last
    // non-empty answer.
    assert_eq!(net.files()["/report.md"].text(), "# Parser\nIt parses.");
    let results = common::tool_results(&net);
    assert_eq!(
        results,
        [(ToolStatus::Ok, "Writing /report.md (2 lines).".to_string())],
        "one result: the sub-agent's own tool results stay inside it"
    );

    // The sub-network saw only its instructions and the task.
    let subs = sub_networks(&net);
    assert_eq!(subs.len(), 1);
    let first_input: Vec<String> = subs[0]
        .nodes()
        .iter()
        .take(2)
        .map(|n| n.output().unwrap().text().to_string())
        .collect();
    assert_eq!(
        first_input,
        [
            "You write short reports.",
            "Write /report.md about the parser."
        ]
    );
    let chats: Vec<_> = subs[0]
        .nodes()
        .into_iter()
        .filter(|n| n.kind() == "chat")
        .collect();
    assert_eq!(
        chats[0].metadata_value("chat_model_name"),
        Some(json!("writer-model"))
    );
    assert_eq!(writer.calls(), 2);

    // The parent's next turn read the report as the tool result, not the
    // sub-agent's conversation.
    let last = net.current_leaf().unwrap();
    let input = net.input_of(&last);
    let texts: Vec<&str> = input.iter_rev().map(|m| m.text()).collect();
    assert!(texts.contains(&"Writing /report.md (2 lines)."));
    assert!(!texts.contains(&"You write short reports."));

    // Saved inside the parent, isolated, and loaded back byte for byte.
    let saved = net.to_json().unwrap();
    let doc: serde_json::Value = serde_json::from_str(&saved).unwrap();
    let sub = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["__node_type__"] == "network")
        .unwrap();
    assert_eq!(sub["isolated"], json!(true));
    assert_eq!(sub["metadata"]["task_call_id"], json!("call_1"));
    assert_eq!(sub["name"], json!("subagent:writer"));
    assert!(sub["network"]["nodes"].as_array().unwrap().len() >= 5);
    let loaded = RunnableNetwork::from_json(&saved).unwrap();
    assert_eq!(loaded.to_json().unwrap(), saved);
}

/// Answers only once `n` requests are waiting at the same time: tasks that
/// ran one after the other would never get an answer.
#[derive(Clone)]
struct Together {
    barrier: Arc<tokio::sync::Barrier>,
    answer: &'static str,
}

#[async_trait]
impl ChatModel for Together {
    async fn complete(&self, _request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.barrier.wait().await;
        Ok(ChatResponse::text(self.answer))
    }
}

#[tokio::test]
async fn the_tasks_of_one_turn_run_at_the_same_time() {
    let main = ScriptedChatModel::new([
        Turn::tool_calls([
            lc_agent::ToolCall::new(
                "call_a",
                "task",
                json!({"description": "Count the tests.", "subagent_type": "counter"}),
            ),
            lc_agent::ToolCall::new(
                "call_b",
                "task",
                json!({"description": "List the modules.", "subagent_type": "lister"}),
            ),
        ]),
        Turn::text("Both done."),
    ]);
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let net = network(
        main,
        SubAgentModifier::new()
            .subagent(SubAgent::new("counter", "Counts").model("counter"))
            .subagent(SubAgent::new("lister", "Lists").model("lister")),
    );
    net.register_model(
        "counter",
        Together {
            barrier: barrier.clone(),
            answer: "42 tests",
        },
    );
    net.register_model(
        "lister",
        Together {
            barrier,
            answer: "3 modules",
        },
    );
    let reply = tokio::time::timeout(Duration::from_secs(10), net.invoke())
        .await
        .expect("the two tasks must run concurrently")
        .unwrap();
    assert_eq!(reply.text(), "Both done.");
    assert_eq!(
        common::tool_results(&net),
        [
            (ToolStatus::Ok, "42 tests".to_string()),
            (ToolStatus::Ok, "3 modules".to_string())
        ]
    );
}

#[tokio::test]
async fn unknown_sub_agents_and_bad_arguments_are_tool_errors() {
    let main = ScriptedChatModel::new([
        Turn::call(
            "c1",
            "task",
            json!({"description": "x", "subagent_type": "wizard"}),
        ),
        Turn::call(
            "c2",
            "task",
            json!({"description": "x", "subagent_type": "general-purpose", "priority": 1}),
        ),
        Turn::text("I will do it myself."),
    ]);
    let net = network(main, SubAgentModifier::new());
    net.invoke().await.unwrap();
    assert_eq!(
        common::tool_results(&net),
        [
            (
                ToolStatus::Error,
                "Error: We cannot invoke subagent wizard because it does not exist, the only allowed types are [`general-purpose`]".to_string()
            ),
            (
                ToolStatus::Error,
                "Error: Invalid arguments for task: unknown argument `priority`, expected `description` or `subagent_type`".to_string()
            ),
        ]
    );
    assert!(sub_networks(&net).is_empty(), "nothing ran");
}

#[tokio::test]
async fn the_depth_limit_stops_sub_agents_from_nesting() {
    // The parent and the general-purpose sub-agent share one script: the
    // sub-agent tries to start a task of its own, which the limit refuses.
    let main = ScriptedChatModel::new([
        Turn::call(
            "c1",
            "task",
            json!({"description": "Research it.", "subagent_type": "general-purpose"}),
        ),
        Turn::call(
            "c2",
            "task",
            json!({"description": "Research deeper.", "subagent_type": "general-purpose"}),
        ),
        Turn::text("I researched it myself."),
        Turn::text("Done."),
    ]);
    let net = network(main, SubAgentModifier::new().max_depth(1));
    assert_eq!(net.invoke().await.unwrap().text(), "Done.");
    let subs = sub_networks(&net);
    assert_eq!(subs.len(), 1);
    let inner = common::tool_results(&subs[0]);
    assert_eq!(
        inner,
        [(
            ToolStatus::Error,
            "Error: sub-agents may nest 1 level(s) deep and this one is at the limit: do this task yourself".to_string()
        )]
    );
    assert!(sub_networks(&subs[0]).is_empty());
    assert_eq!(
        common::tool_results(&net),
        [(ToolStatus::Ok, "I researched it myself.".to_string())]
    );
}

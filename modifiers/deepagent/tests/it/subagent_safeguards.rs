//! A sub-agent (a `task`) or a supervisor's route works under the
//! safeguards of the agent that started it: the parent's approvals hold
//! its calls (and the outer run stops until a person decides, also after
//! a save and a reload), its huge results are evicted, `execute` is not
//! offered without a sandbox, and its conversation is summarized. Scripted
//! models stand in for real ones.

use crate::common;

use std::collections::VecDeque;
use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{
    Attachments, ChatModel, ChatRequest, ChatResponse, Events, FnTool, HumanNode, InvokeOutcome,
    ModelError, ModelRoutes, NetworkEvent, NetworkNode, NodeRef, RunnableNetwork,
    ScriptedChatModel, SummaryNode, ToolNode, ToolOutput, ToolStatus, Turn,
};
use lc_agent_deepagent::{
    decide, pending_approvals, ApprovalModifier, Decision, Decisions, Route, SubAgent,
    SubAgentModifier, SummarizationConfig, SummarizationModifier, Supervisor, SUMMARY_STEP,
};
use lc_agent_filesystem::{BackendSource, FilesystemModifier, LocalShellBackend, StateBackend};
use parking_lot::Mutex;
use serde_json::json;

/// A scripted model that records, for every request, the tools it was
/// offered.
#[derive(Clone, Default)]
struct Recorder {
    turns: Arc<Mutex<VecDeque<Turn>>>,
    offered: Arc<Mutex<Vec<Vec<String>>>>,
}

impl Recorder {
    fn new(turns: impl IntoIterator<Item = Turn>) -> Self {
        Self {
            turns: Arc::new(Mutex::new(turns.into_iter().collect())),
            offered: Arc::default(),
        }
    }

    fn offered(&self) -> Vec<Vec<String>> {
        self.offered.lock().clone()
    }
}

#[async_trait]
impl ChatModel for Recorder {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.offered
            .lock()
            .push(request.tools.iter().map(|t| t.name.clone()).collect());
        let turn = self
            .turns
            .lock()
            .pop_front()
            .ok_or_else(|| ModelError::ScriptExhausted {
                name: "recorder".into(),
                played: 0,
            })?;
        Ok(ChatResponse {
            content: turn.content,
            tool_calls: turn.tool_calls,
            ..ChatResponse::default()
        })
    }
}

fn task(description: &str) -> Turn {
    Turn::call(
        "t1",
        "task",
        json!({"description": description, "subagent_type": "worker"}),
    )
}

/// Attaches what a program attaches to a new or a loaded session: the
/// models, the file tools over `backend`, the `worker` sub-agent (model
/// `w`) and the approvals.
fn attach(
    net: &RunnableNetwork,
    main: Arc<dyn ChatModel>,
    worker: Arc<dyn ChatModel>,
    backend: BackendSource,
    approvals: ApprovalModifier,
) {
    net.register_model_shared("main", main);
    net.register_model_shared("w", worker);
    net.set_chat_model_name(Some("main".into()));
    net.add_modifier(FilesystemModifier::new(backend)).unwrap();
    net.add_modifier(SubAgentModifier::new().subagent(SubAgent::new("worker", "Works").model("w")))
        .unwrap();
    net.add_modifier(approvals).unwrap();
}

fn agent(
    main: Arc<dyn ChatModel>,
    worker: Arc<dyn ChatModel>,
    backend: BackendSource,
    approvals: ApprovalModifier,
) -> RunnableNetwork {
    let net = RunnableNetwork::builder().default_node("chat").build();
    attach(&net, main, worker, backend, approvals);
    {
        let _s = net.enter();
        HumanNode::new("Get it done.");
    }
    net
}

fn writes_need_approval() -> ApprovalModifier {
    ApprovalModifier::new().interrupt_on("write_file", Decisions::approve_or_reject())
}

/// The sub-network nodes of a network.
fn sub_nodes(net: &RunnableNetwork) -> Vec<NodeRef> {
    net.nodes()
        .into_iter()
        .filter(|n| n.downcast::<NetworkNode>().is_some())
        .collect()
}

fn inner(node: &NodeRef) -> RunnableNetwork {
    node.downcast::<NetworkNode>().unwrap().network().clone()
}

fn write_call() -> Turn {
    Turn::call(
        "w1",
        "write_file",
        json!({"file_path": "/r.md", "content": "the report"}),
    )
}

#[tokio::test]
async fn a_sub_agents_write_waits_for_the_parents_approval_then_runs() {
    let main = ScriptedChatModel::new([task("Write /r.md."), Turn::text("Done: /r.md.")]);
    let worker = ScriptedChatModel::new([write_call(), Turn::text("Wrote /r.md.")]);
    let net = agent(
        Arc::new(main.clone()),
        Arc::new(worker.clone()),
        StateBackend::factory().into(),
        writes_need_approval(),
    );
    let mut events = net.subscribe();

    // The run stops (not an error) with the sub-agent's write waiting.
    net.invoke().await.unwrap();
    assert!(
        !net.files().contains_key("/r.md"),
        "nothing is written before the decision"
    );
    let subs = sub_nodes(&net);
    assert_eq!(subs.len(), 1);
    assert!(!subs[0].is_invoked(), "the sub-agent has not finished");
    assert_eq!(net.held().len(), 1, "the sub-network waits");
    let mut outcome = None;
    while let Ok(event) = events.try_recv() {
        if let NetworkEvent::InvokeFinished { outcome: o, .. } = event {
            outcome = Some(o);
        }
    }
    assert_eq!(outcome, Some(InvokeOutcome::Held(vec![subs[0].id()])));
    let pending = pending_approvals(&net);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool_call.name, "write_file");
    assert_eq!(pending[0].tool_call.id, "w1");
    assert_eq!(pending[0].within, [subs[0].id()]);
    // The task's tool node waits below the sub-network.
    let task_node = net
        .nodes()
        .into_iter()
        .find(|n| n.downcast::<ToolNode>().is_some())
        .unwrap();
    assert!(!task_node.is_invoked());

    // A second invoke without a decision changes nothing.
    net.invoke().await.unwrap();
    assert_eq!(worker.calls(), 1);
    assert_eq!(pending_approvals(&net).len(), 1);

    decide(&net, pending[0].node_id, Decision::Approve).unwrap();
    assert_eq!(net.invoke().await.unwrap().text(), "Done: /r.md.");
    assert_eq!(net.files()["/r.md"].text(), "the report");
    // The sub-agent went on where it stopped: its first turn did not run
    // again, and the task's result is its answer.
    assert_eq!(worker.calls(), 2);
    assert_eq!(main.calls(), 2);
    assert_eq!(
        common::tool_results(&net),
        [(ToolStatus::Ok, "Wrote /r.md.".to_string())]
    );
    assert!(net.held().is_empty() && net.pending().is_empty());
    let chats = inner(&subs[0])
        .nodes()
        .iter()
        .filter(|n| n.kind() == "chat")
        .count();
    assert_eq!(chats, 2);
}

#[tokio::test]
async fn a_rejected_sub_agent_write_is_read_by_the_sub_agent() {
    let main = ScriptedChatModel::new([task("Write /r.md."), Turn::text("It was refused.")]);
    let worker = ScriptedChatModel::new([write_call(), Turn::text("I was not allowed to write.")]);
    let net = agent(
        Arc::new(main.clone()),
        Arc::new(worker.clone()),
        StateBackend::factory().into(),
        writes_need_approval(),
    );
    net.invoke().await.unwrap();
    let pending = pending_approvals(&net);
    decide(&net, pending[0].node_id, Decision::Reject("no".into())).unwrap();
    assert_eq!(net.invoke().await.unwrap().text(), "It was refused.");
    assert!(!net.files().contains_key("/r.md"));
    assert_eq!(
        common::tool_results(&inner(&sub_nodes(&net)[0])),
        [(
            ToolStatus::Error,
            "Error: the user rejected this call: no".to_string()
        )]
    );
    assert_eq!(
        common::tool_results(&net),
        [(ToolStatus::Ok, "I was not allowed to write.".to_string())]
    );
}

#[tokio::test]
async fn a_held_sub_agent_call_survives_a_save_and_a_reload() {
    let main = ScriptedChatModel::new([task("Write /r.md."), Turn::text("Done: /r.md.")]);
    let worker = ScriptedChatModel::new([write_call(), Turn::text("Wrote /r.md.")]);
    let net = agent(
        Arc::new(main.clone()),
        Arc::new(worker.clone()),
        StateBackend::factory().into(),
        writes_need_approval(),
    );
    net.invoke().await.unwrap();
    let saved = net.to_json().unwrap();
    drop(net);

    // Another process loads the session and re-attaches the agent; the
    // models go on from where the first process left them.
    let loaded = RunnableNetwork::from_json(&saved).unwrap();
    assert_eq!(loaded.to_json().unwrap(), saved, "saved and loaded exactly");
    let main_rest = ScriptedChatModel::new([Turn::text("Done: /r.md.")]);
    let worker_rest = ScriptedChatModel::new([Turn::text("Wrote /r.md.")]);
    attach(
        &loaded,
        Arc::new(main_rest.clone()),
        Arc::new(worker_rest.clone()),
        StateBackend::factory().into(),
        writes_need_approval(),
    );
    let pending = pending_approvals(&loaded);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool_call.name, "write_file");
    decide(&loaded, pending[0].node_id, Decision::Approve).unwrap();
    assert_eq!(loaded.invoke().await.unwrap().text(), "Done: /r.md.");
    assert_eq!(loaded.files()["/r.md"].text(), "the report");
    assert_eq!(worker_rest.calls(), 1, "only the sub-agent's last turn ran");
    assert_eq!(main_rest.calls(), 1);
    assert_eq!(
        common::tool_results(&loaded),
        [(ToolStatus::Ok, "Wrote /r.md.".to_string())]
    );
}

#[tokio::test]
async fn a_sub_agents_execute_waits_for_approval() {
    let dir = tempfile::tempdir().unwrap();
    let main = ScriptedChatModel::new([task("Make the file."), Turn::text("Made.")]);
    let worker = ScriptedChatModel::new([
        Turn::call("x1", "execute", json!({"command": "echo hi > made.txt"})),
        Turn::text("Ran it."),
    ]);
    let net = agent(
        Arc::new(main),
        Arc::new(worker.clone()),
        LocalShellBackend::new(dir.path()).unwrap().into(),
        ApprovalModifier::new().interrupt_on("execute", Decisions::all()),
    );
    net.invoke().await.unwrap();
    assert!(!dir.path().join("made.txt").exists(), "nothing ran yet");
    let pending = pending_approvals(&net);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool_call.name, "execute");
    decide(&net, pending[0].node_id, Decision::Approve).unwrap();
    assert_eq!(net.invoke().await.unwrap().text(), "Made.");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("made.txt")).unwrap(),
        "hi\n"
    );
    assert_eq!(
        common::tool_results(&net),
        [(ToolStatus::Ok, "Ran it.".to_string())]
    );
}

#[tokio::test]
async fn a_sub_agents_huge_result_is_evicted() {
    let main = ScriptedChatModel::new([task("Dump it."), Turn::text("Dumped.")]);
    let worker = ScriptedChatModel::new([
        Turn::call("d1", "dump", json!({})),
        Turn::text("It was large."),
    ]);
    let net = agent(
        Arc::new(main),
        Arc::new(worker),
        StateBackend::factory().into(),
        ApprovalModifier::new(),
    );
    net.add_tool(FnTool::new(
        "dump",
        "Dumps a lot.",
        json!({"type": "object", "properties": {}}),
        |_, _| async move { Ok(ToolOutput::ok("line of output\n".repeat(10_000))) },
    ));
    assert_eq!(net.invoke().await.unwrap().text(), "Dumped.");
    let evicted = net.files()["/large_tool_results/d1"].text();
    assert_eq!(evicted.len(), 150_000);
    let results = common::tool_results(&inner(&sub_nodes(&net)[0]));
    assert_eq!(results.len(), 1);
    assert!(
        results[0]
            .1
            .starts_with("Tool result too large (150000 chars"),
        "{}",
        results[0].1
    );
    assert!(results[0].1.contains("Saved to /large_tool_results/d1."));
}

#[tokio::test]
async fn a_sub_agent_without_a_sandbox_is_not_offered_execute() {
    let main = Recorder::new([task("Look around."), Turn::text("Looked.")]);
    let worker = Recorder::new([Turn::text("Nothing here.")]);
    let net = agent(
        Arc::new(main.clone()),
        Arc::new(worker.clone()),
        StateBackend::factory().into(),
        ApprovalModifier::new(),
    );
    assert_eq!(net.invoke().await.unwrap().text(), "Looked.");
    for offered in main.offered().iter().chain(worker.offered().iter()) {
        assert!(offered.contains(&"write_file".to_string()), "{offered:?}");
        assert!(offered.contains(&"task".to_string()), "{offered:?}");
        assert!(!offered.contains(&"execute".to_string()), "{offered:?}");
    }
    assert_eq!(worker.offered().len(), 1);
}

#[tokio::test]
async fn a_sub_agents_conversation_is_summarized() {
    let main = ScriptedChatModel::new([task("Research it."), Turn::text("Researched.")]);
    let worker = ScriptedChatModel::new([
        Turn::call("l1", "lookup", json!({"topic": "a"})),
        Turn::call("l2", "lookup", json!({"topic": "b"})),
        Turn::call("l3", "lookup", json!({"topic": "c"})),
        Turn::text("Found a, b and c."),
    ]);
    let summarizer = ScriptedChatModel::new(["The sub-agent looked up a and b."]).cycled();
    let net = agent(
        Arc::new(main),
        Arc::new(worker),
        StateBackend::factory().into(),
        ApprovalModifier::new(),
    );
    net.register_model("summarizer", summarizer.clone());
    net.set_model_route(SUMMARY_STEP, "summarizer");
    net.add_modifier(SummarizationModifier::new(SummarizationConfig {
        trigger_fraction: None,
        trigger_tokens: Some(1_500),
        keep_messages: 2,
        ..SummarizationConfig::default()
    }))
    .unwrap();
    net.add_tool(FnTool::new(
        "lookup",
        "Looks a topic up.",
        json!({"type": "object", "properties": {"topic": {"type": "string"}}}),
        |args, _| async move {
            let topic = args["topic"].as_str().unwrap_or("").to_string();
            Ok(ToolOutput::ok(format!("{topic}: {}", "fact ".repeat(400))))
        },
    ));
    assert_eq!(net.invoke().await.unwrap().text(), "Researched.");
    let sub = inner(&sub_nodes(&net)[0]);
    assert!(
        sub.nodes().iter().any(|n| n.kind() == SummaryNode::KIND),
        "the sub-agent's long conversation got a summary"
    );
    assert!(summarizer.calls() >= 1);
}

#[tokio::test]
async fn a_supervisor_routes_write_waits_for_the_outer_approval() {
    let supervisor_model = ScriptedChatModel::new([
        Turn::call("r1", "writer", json!({"prompt": "Write /r.md."})),
        Turn::text("The writer wrote /r.md."),
    ]);
    let writer_model = ScriptedChatModel::new([write_call(), Turn::text("Wrote it.")]);
    let writer = writer_model.clone();
    let supervisor = Supervisor::new("Delegate writing to `writer`.")
        .route(Route::new("writer", "Writes files.", move || {
            RunnableNetwork::builder()
                .default_node("chat")
                .chat_model("writer")
                .model("writer", writer.clone())
                .build()
        }))
        .build();
    supervisor.register_model("supervisor", supervisor_model);
    supervisor.set_model_route("supervisor", "supervisor");
    let net = RunnableNetwork::builder().build();
    net.add_modifier(FilesystemModifier::new(StateBackend::factory()))
        .unwrap();
    net.add_modifier(writes_need_approval()).unwrap();
    {
        let _s = net.enter();
        HumanNode::new("Get /r.md written.");
        NetworkNode::new(supervisor);
    }
    net.invoke().await.unwrap();
    assert!(!net.files().contains_key("/r.md"));
    let pending = pending_approvals(&net);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool_call.name, "write_file");
    assert_eq!(pending[0].within.len(), 2, "inside the supervisor's route");
    decide(&net, pending[0].node_id, Decision::Approve).unwrap();
    assert_eq!(
        net.invoke().await.unwrap().text(),
        "The writer wrote /r.md."
    );
    assert_eq!(net.files()["/r.md"].text(), "the report");
    assert_eq!(writer_model.calls(), 2);
}

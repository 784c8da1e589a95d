//! Checkpoints reach into sub-agents: a crash in the middle of a sub-agent's
//! task (here its model fails on its second turn) leaves the session saved
//! with the sub-agent's finished nodes, and the resumed session does not
//! run them again. Scripted models stand in for real ones.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::CheckpointModifier;
use lc_agent::{
    Attachments, ChatModel, ChatRequest, ChatResponse, HumanNode, ModelError, ModelRoutes,
    NetworkNode, RunnableNetwork, ScriptedChatModel, ToolCall, Turn,
};
use lc_agent::{JsonNetworkList, NetworkList};
use lc_agent_deepagent::{SubAgent, SubAgentModifier};
use lc_agent_filesystem::{FilesystemModifier, StateBackend};
use serde_json::json;

/// Writes a file on its first turn; on its second the process "dies": it
/// keeps what the session list holds at that instant (what a restarted
/// process would find) and fails.
struct CrashesOnSecondTurn {
    calls: AtomicUsize,
    list: Arc<dyn NetworkList>,
    session: lc_agent::SessionId,
    at_crash: Arc<parking_lot::Mutex<Option<String>>>,
}

#[async_trait]
impl ChatModel for CrashesOnSecondTurn {
    async fn complete(&self, _request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            Ok(ChatResponse {
                tool_calls: vec![ToolCall::new(
                    "w1",
                    "write_file",
                    json!({"file_path": "/r.md", "content": "found it"}),
                )],
                ..ChatResponse::default()
            })
        } else {
            let saved = self.list.load_json(self.session).await.ok();
            *self.at_crash.lock() = saved;
            Err(ModelError::Other("the process died".into()))
        }
    }
}

fn attach(net: &RunnableNetwork, list: Arc<dyn NetworkList>, worker: Arc<dyn ChatModel>) {
    net.register_model_shared("worker", worker);
    net.add_modifier(FilesystemModifier::new(StateBackend::factory()))
        .unwrap();
    net.add_modifier(
        SubAgentModifier::new().subagent(SubAgent::new("worker", "Works").model("worker")),
    )
    .unwrap();
    net.add_modifier(CheckpointModifier::new(list)).unwrap();
}

#[tokio::test]
async fn a_crashed_sub_agent_resumes_without_redoing_its_finished_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let list: Arc<dyn NetworkList> = Arc::new(JsonNetworkList::new(dir.path()));
    let main = ScriptedChatModel::new([
        Turn::call(
            "t1",
            "task",
            json!({"description": "Find it and write /r.md.", "subagent_type": "worker"}),
        ),
        Turn::text("Done: see /r.md."),
    ]);
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("main")
        .model("main", main.clone())
        .build();
    let at_crash = Arc::new(parking_lot::Mutex::new(None));
    attach(
        &net,
        list.clone(),
        Arc::new(CrashesOnSecondTurn {
            calls: AtomicUsize::new(0),
            list: list.clone(),
            session: net.id(),
            at_crash: at_crash.clone(),
        }),
    );
    {
        let _s = net.enter();
        HumanNode::new("Find it.");
    }
    assert!(net.invoke().await.is_err(), "the sub-agent crashed");

    // Another process finds what the checkpoints had saved when it died
    // (no end-of-run save happens after a kill).
    let saved = at_crash
        .lock()
        .clone()
        .expect("a checkpoint before the crash");
    let resumed = RunnableNetwork::from_json(&saved).unwrap();
    let sub = resumed
        .nodes()
        .into_iter()
        .find_map(|n| n.downcast::<NetworkNode>().map(|s| s.network().clone()))
        .expect("the sub-agent's network was saved mid-task");
    let done: Vec<String> = sub
        .nodes()
        .iter()
        .filter(|n| n.is_invoked())
        .map(|n| n.kind().to_string())
        .collect();
    assert_eq!(done, ["system", "human", "chat", "tool"], "saved mid-task");
    assert_eq!(resumed.files()["/r.md"].text(), "found it");

    // (The dead process's list moved on in this test, since the "crash"
    // returned instead of killing it: the restarted one gets a list of its
    // own holding what was saved.)
    let restart_dir = tempfile::tempdir().unwrap();
    let restart_list: Arc<dyn NetworkList> = Arc::new(JsonNetworkList::new(restart_dir.path()));
    restart_list.save_force(&resumed).await.unwrap();
    let worker = ScriptedChatModel::new(["Wrote /r.md."]);
    resumed.register_model("main", main.clone());
    resumed.set_chat_model_name(Some("main".into()));
    attach(&resumed, restart_list, Arc::new(worker.clone()));
    assert_eq!(resumed.invoke().await.unwrap().text(), "Done: see /r.md.");
    // Only the failed turn ran again: the write was not repeated.
    assert_eq!(worker.calls(), 1);
    let writes = sub_tool_runs(&resumed);
    assert_eq!(
        writes, 1,
        "the finished write_file ran once, before the crash"
    );
}

fn sub_tool_runs(net: &RunnableNetwork) -> usize {
    net.nodes()
        .iter()
        .filter_map(|n| n.downcast::<NetworkNode>().map(|s| s.network().clone()))
        .map(|sub| sub.nodes().iter().filter(|n| n.kind() == "tool").count())
        .sum()
}

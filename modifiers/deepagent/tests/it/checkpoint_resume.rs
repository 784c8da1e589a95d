//! Checkpoints and resume after `kill -9`, for real, with two processes.
//!
//! The child (this test binary run again with `LC_RESUME_CHILD` set; the
//! `child_main` test plays its part) runs a multi-step tool loop with a
//! [`CheckpointModifier`] saving to a [`JsonNetworkList`] after every node.
//! The parent kills it with SIGKILL at a different point each round, loads
//! the session in-process, attaches the model and tool again, invokes to
//! completion, and checks with the logs that both processes append to:
//!
//! - every node that the checkpoint had saved as invoked ran in the child
//!   and never again in the parent;
//! - the parent ran exactly the nodes that were not saved;
//! - at most the one node in flight at the kill ran twice;
//! - the final conversation is complete and in order.
//!
//! The model is deterministic from the history (step `k` = number of tool
//! results so far), so both processes play the same conversation.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use lc_agent::{
    Attachments, ChatModel, ChatRequest, ChatResponse, FnTool, HumanNode, Message, ModelError,
    RunnableNetwork, ToolCall, ToolOutput,
};
use lc_agent::{CheckpointModifier, CheckpointPolicy};
use lc_agent::{JsonNetworkList, ListQuery, NetworkList};
use serde_json::json;

const STEPS: usize = 6;
const ROUNDS: usize = 24;

fn append(path: &Path, line: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open log");
    f.write_all(format!("{line}\n").as_bytes())
        .expect("append log");
}

/// Calls the `step` tool until `STEPS` tool results are in the history,
/// then answers. Logs every call.
struct StepModel {
    log: PathBuf,
    role: &'static str,
}

#[async_trait]
impl ChatModel for StepModel {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let done = request
            .messages()
            .iter()
            .filter(|m| matches!(m.as_ref(), Message::Tool { .. }))
            .count();
        append(&self.log, &format!("model {done} {}", self.role));
        Ok(if done < STEPS {
            ChatResponse {
                tool_calls: vec![ToolCall::new(
                    format!("call-{done}"),
                    "step",
                    json!({"k": done}),
                )],
                ..ChatResponse::default()
            }
        } else {
            ChatResponse::text(format!("finished {STEPS} steps"))
        })
    }
}

fn step_tool(log: PathBuf, role: &'static str) -> FnTool {
    FnTool::new(
        "step",
        "Does step `k`.",
        json!({"type": "object", "properties": {"k": {"type": "integer"}}}),
        move |args, _| {
            let log = log.clone();
            async move {
                let k = args["k"].as_u64().unwrap_or(u64::MAX);
                append(&log, &format!("tool {k} {role}"));
                tokio::time::sleep(Duration::from_millis(2)).await;
                Ok(ToolOutput::ok(format!("step {k} ok")))
            }
        },
    )
}

fn attach(net: &RunnableNetwork, dir: &Path, role: &'static str, list: &JsonNetworkList) {
    net.register_model(
        "steps",
        StepModel {
            log: dir.join("model.log"),
            role,
        },
    );
    net.add_tool(step_tool(dir.join("tool.log"), role));
    net.add_modifier(
        CheckpointModifier::new(Arc::new(list.clone())).policy(CheckpointPolicy::EachNode),
    )
    .expect("checkpoint modifier");
}

fn fresh_network() -> RunnableNetwork {
    let net = RunnableNetwork::builder()
        .name("resume me")
        .default_node("chat")
        .chat_model("steps")
        .build();
    {
        let _s = net.enter();
        HumanNode::new("go");
    }
    net
}

/// (kind, k, role) entries of a log.
fn read_log(path: &Path) -> Vec<(String, usize, String)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut parts = l.split(' ');
            Some((
                parts.next()?.to_string(),
                parts.next()?.parse().ok()?,
                parts.next()?.to_string(),
            ))
        })
        .collect()
}

fn events(dir: &Path) -> usize {
    read_log(&dir.join("model.log")).len() + read_log(&dir.join("tool.log")).len()
}

/// What the checkpoint holds: invoked chat nodes, and the steps of invoked
/// tool nodes.
fn saved_state(net: &RunnableNetwork) -> (usize, BTreeSet<usize>) {
    let mut chats = 0;
    let mut tools = BTreeSet::new();
    for node in net.nodes() {
        if !node.is_invoked() {
            continue;
        }
        match node.kind() {
            "chat" => chats += 1,
            "tool" => {
                let text = node
                    .output()
                    .map(|m| m.text().to_string())
                    .unwrap_or_default();
                let k = text
                    .strip_prefix("step ")
                    .and_then(|t| t.strip_suffix(" ok"))
                    .and_then(|k| k.parse().ok())
                    .expect("tool output");
                tools.insert(k);
            }
            _ => {}
        }
    }
    (chats, tools)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_after_kill_9_at_many_points() {
    let mut kill_points = BTreeSet::new();
    let mut duplicates = 0;
    let started = Instant::now();
    for round in 0..ROUNDS {
        let dir = tempfile::tempdir().expect("tempdir");
        let list = JsonNetworkList::new(dir.path().join("sessions"));
        let mut child = Command::new(std::env::current_exe().expect("exe"))
            .args([
                "--exact",
                "checkpoint_resume::child_main",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("LC_RESUME_CHILD", dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn child");
        // Kill after `target` logged model/tool calls, plus a jitter that
        // moves the kill inside the following step or save.
        let target = round % (2 * STEPS + 2);
        let deadline = Instant::now() + Duration::from_secs(20);
        while events(dir.path()) < target && Instant::now() < deadline {
            if child.try_wait().expect("try_wait").is_some() {
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        std::thread::sleep(Duration::from_micros((round as u64 * 397) % 2500));
        child.kill().expect("SIGKILL"); // Child::kill sends SIGKILL on Unix
        child.wait().expect("wait");

        // What the child left behind.
        let child_models = read_log(&dir.path().join("model.log"));
        let child_tools = read_log(&dir.path().join("tool.log"));
        let page = list.list(&ListQuery::default()).await.expect("list");
        assert!(page.errors.is_empty(), "round {round}: {:?}", page.errors);
        let (net, saved_chats, saved_tools) = match page.sessions.first() {
            Some(info) => {
                let net = list.load(info.id).await.unwrap_or_else(|e| {
                    panic!("round {round}: checkpoint unreadable after kill -9: {e}")
                });
                let (c, t) = saved_state(&net);
                (net, c, t)
            }
            None => {
                // Killed before the first checkpoint, which comes before
                // any node runs.
                assert!(child_models.is_empty() && child_tools.is_empty());
                (fresh_network(), 0, BTreeSet::new())
            }
        };
        let id = net.id();
        kill_points.insert((saved_chats, saved_tools.len()));
        let child_tool_ks: BTreeSet<usize> = child_tools.iter().map(|e| e.1).collect();
        assert!(
            saved_tools.is_subset(&child_tool_ks),
            "round {round}: saved tool results the child never produced"
        );
        assert!(child_models.len() >= saved_chats);
        assert!(
            child_models.len() - saved_chats <= 1,
            "round {round}: more than one model turn unsaved"
        );
        assert!(
            child_tools.len() - saved_tools.len() <= 1,
            "round {round}: more than one tool call unsaved"
        );

        // Resume in this process.
        attach(&net, dir.path(), "parent", &list);
        let out = net.invoke().await.expect("resume");
        assert_eq!(out.text(), format!("finished {STEPS} steps"));

        let all_models = read_log(&dir.path().join("model.log"));
        let all_tools = read_log(&dir.path().join("tool.log"));
        let parent_models = all_models.iter().filter(|e| e.2 == "parent").count();
        let parent_tools: BTreeSet<usize> = all_tools
            .iter()
            .filter(|e| e.2 == "parent")
            .map(|e| e.1)
            .collect();
        let parent_tool_calls = all_tools.iter().filter(|e| e.2 == "parent").count();
        // The parent ran exactly what the checkpoint did not hold ...
        assert_eq!(
            parent_models,
            STEPS + 1 - saved_chats,
            "round {round}: model calls"
        );
        assert_eq!(parent_tool_calls, parent_tools.len());
        assert!(
            parent_tools.is_disjoint(&saved_tools),
            "round {round}: a saved tool node ran again"
        );
        let union: BTreeSet<usize> = parent_tools.union(&saved_tools).copied().collect();
        assert_eq!(union, (0..STEPS).collect(), "round {round}: steps missing");
        // ... and only the node in flight at the kill ran twice.
        let ran_twice = child_tool_ks.intersection(&parent_tools).count();
        assert!(ran_twice <= 1);
        duplicates += ran_twice + (child_models.len() - saved_chats);

        // The final checkpoint holds the complete conversation, in order.
        let done = list.load(id).await.expect("final checkpoint");
        assert_eq!(done.len(), 2 * STEPS + 2);
        assert!(done.nodes().iter().all(|n| n.is_invoked()));
        let texts: Vec<String> = done
            .history()
            .iter_rev()
            .map(|m| format!("{}:{}", m.role(), m.text()))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let mut want = vec!["human:go".to_string()];
        for k in 0..STEPS {
            want.push("ai:".to_string());
            want.push(format!("tool:step {k} ok"));
        }
        want.push(format!("ai:finished {STEPS} steps"));
        assert_eq!(texts, want, "round {round}");
    }
    println!(
        "kill -9 resume: {ROUNDS} rounds in {:?}, {} distinct kill points (saved chats, saved tools): {:?}; {duplicates} in-flight steps re-ran",
        started.elapsed(),
        kill_points.len(),
        kill_points
    );
    assert!(
        kill_points.len() >= 8,
        "kills landed at too few points: {kill_points:?}"
    );
}

/// The child's side (does nothing in a normal test run).
#[test]
fn child_main() {
    let Ok(dir) = std::env::var("LC_RESUME_CHILD") else {
        return;
    };
    let dir = PathBuf::from(dir);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let list = JsonNetworkList::new(dir.join("sessions"));
        let net = fresh_network();
        attach(&net, &dir, "child", &list);
        net.invoke().await.expect("child invoke");
    });
}

//! An approval asked for in one process and decided in another: the first
//! process runs the agent until a `write_file` waits for a person and saves
//! the session; a second process loads it, approves the call and finishes.
//! Both are this test binary started again as a child, with the session in
//! a JSON list and in Redis (a server the test starts on loopback).
//! The models are scripted stand-ins for real ones.

use std::process::Command;

use lc_agent::{Attachments, HumanNode, RunnableNetwork, ScriptedChatModel, Turn};
use lc_agent::{JsonNetworkList, NetworkList, RedisConnector, RedisNetworkList};
use lc_agent_deepagent::{decide, pending_approvals, ApprovalModifier, Decision, Decisions};
use lc_agent_filesystem::{FilesystemModifier, StateBackend};
use lc_agent_test_support::{needs, RedisServer};
use serde_json::json;

const PHASE: &str = "LC_APPROVAL_PHASE";
const STORE: &str = "LC_APPROVAL_STORE";
const SESSION: &str = "LC_APPROVAL_SESSION";

fn sessions(store: &str) -> Box<dyn NetworkList> {
    match store.strip_prefix("redis=") {
        Some(url) => Box::new(
            RedisNetworkList::builder(RedisConnector::new(url).expect("connector"))
                .build()
                .unwrap(),
        ),
        None => Box::new(JsonNetworkList::new(store)),
    }
}

/// What every process attaches: the model (its remaining script) and the
/// modifiers. None of it is saved with the session.
fn attach(net: &RunnableNetwork, turns: Vec<Turn>) {
    net.register_model("m", ScriptedChatModel::new(turns));
    net.add_modifier(FilesystemModifier::new(StateBackend::factory()))
        .unwrap();
    net.add_modifier(
        ApprovalModifier::new().interrupt_on("write_file", Decisions::approve_or_reject()),
    )
    .unwrap();
}

/// The child: one phase of the approval, printing what the parent checks.
#[tokio::test]
async fn approval_phase_child() {
    let (Ok(phase), Ok(store)) = (std::env::var(PHASE), std::env::var(STORE)) else {
        return; // Run as a child only.
    };
    let list = sessions(&store);
    match phase.as_str() {
        "ask" => {
            let net = RunnableNetwork::builder()
                .default_node("chat")
                .chat_model("m")
                .build();
            attach(
                &net,
                vec![Turn::call(
                    "c1",
                    "write_file",
                    json!({"file_path": "/plan.md", "content": "ship it"}),
                )],
            );
            {
                let _s = net.enter();
                HumanNode::new("Write the plan.");
            }
            net.invoke().await.unwrap();
            assert_eq!(pending_approvals(&net).len(), 1);
            list.save(&net).await.unwrap();
            println!("SESSION {}", net.id());
        }
        "decide" => {
            let id = std::env::var(SESSION).unwrap().parse().unwrap();
            let net = list.load(id).await.unwrap();
            attach(&net, vec![Turn::text("The plan is written.")]);
            let pending = pending_approvals(&net);
            println!("PENDING {}", pending[0].tool_call.name);
            decide(&net, pending[0].node_id, Decision::Approve).unwrap();
            let reply = net.invoke().await.unwrap();
            list.save(&net).await.unwrap();
            println!("ANSWER {}", reply.text());
        }
        other => panic!("unknown phase {other}"),
    }
}

fn run_phase(store: &str, phase: &str, session: Option<&str>) -> String {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "approvals_across_processes::approval_phase_child",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(PHASE, phase)
    .env(STORE, store);
    if let Some(id) = session {
        cmd.env(SESSION, id);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{phase} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn line<'a>(out: &'a str, key: &str) -> &'a str {
    // The test harness may print on the same line first.
    out.lines()
        .find_map(|l| l.split_once(key).map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("no `{key}` in:\n{out}"))
        .trim()
}

async fn ask_then_decide(store: &str) {
    let asked = run_phase(store, "ask", None);
    let id = line(&asked, "SESSION ").to_string();
    let decided = run_phase(store, "decide", Some(&id));
    assert_eq!(line(&decided, "PENDING "), "write_file");
    assert_eq!(line(&decided, "ANSWER "), "The plan is written.");

    // The stored session holds the approved, finished run.
    let net = sessions(store).load(id.parse().unwrap()).await.unwrap();
    assert_eq!(net.files()["/plan.md"].text(), "ship it");
    assert!(pending_approvals(&net).is_empty());
    assert!(net.held().is_empty());
}

#[tokio::test]
async fn an_approval_crosses_processes_through_a_json_list() {
    if std::env::var(PHASE).is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    ask_then_decide(dir.path().to_str().unwrap()).await;
}

#[needs(redis)]
#[tokio::test]
async fn an_approval_crosses_processes_through_redis() {
    if std::env::var(PHASE).is_ok() {
        return;
    }
    let server = RedisServer::start();
    ask_then_decide(&format!("redis={}", server.url())).await;
}

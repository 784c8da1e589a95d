//! Record and replay with the real model server: a run recorded against
//! llama-cpp-python serving SmolLM2-135M-Instruct (see
//! `lc_agent_test_support::LlamaServer`), then replayed offline with the server gone,
//! gives the same saved session byte for byte once what the network draws
//! from the clock and the random generator is masked (node and session
//! ids, timestamps, durations: `lc_agent_test_support::masked`). Node ids are
//! uuid v4 by design and there is no seeded mode; everything the model
//! decides — text, tool calls and their ids, finish reasons, usage — is in
//! the cassette and comes back exactly.

use std::sync::Arc;

use lc_agent::{
    Attachments, ChatModel, ChatNode, FnTool, HumanNode, JsonNetworkList, ModelRoutes, NetworkList,
    NodeRef, OpenAiChatModel, RecordingChatModel, ReplayChatModel, RunnableNetwork, ToolChoice,
    ToolOutput,
};
use serde_json::{json, Value};

use lc_agent_test_support::{masked, needs, LlamaServer};

const KEY: &str = "sk-local-test-key-0123456789abcdef";

/// The agent of both runs: one tool, streaming, the model under `smollm2`.
fn agent(model: Arc<dyn ChatModel>) -> RunnableNetwork {
    let lookup = FnTool::new(
        "lookup",
        "Looks up a word in the dictionary.",
        json!({"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}),
        |_args, _ctx| async { Ok(ToolOutput::ok("a greeting")) },
    );
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("smollm2")
        .tool(lookup)
        .streaming(true)
        .name("record and replay")
        .build();
    net.register_model_shared("smollm2", model);
    // After the forced call, answers in words (a 135M model would call
    // `lookup` until the window is full).
    net.set_tool_choice_route("chat", Some(ToolChoice::None));
    net
}

/// Two turns: a forced tool call and its answer, then a plain question.
/// Returns the saved session.
async fn conversation(model: Arc<dyn ChatModel>, sessions: &std::path::Path) -> String {
    let net = agent(model);
    {
        let _scope = net.enter();
        HumanNode::new("What does the word 'hello' mean? Look it up.");
        NodeRef::create(ChatNode {
            tool_choice: Some(ToolChoice::Tool("lookup".into())),
            ..ChatNode::default()
        });
    }
    net.invoke().await.unwrap();
    {
        let _scope = net.enter();
        HumanNode::new("Say it in one word.");
    }
    net.invoke().await.unwrap();
    let list = JsonNetworkList::new(sessions);
    list.save(&net).await.unwrap();
    std::fs::read_to_string(list.path_of(net.id())).unwrap()
}

fn tool_call_ids(saved: &str) -> Vec<String> {
    let session: Value = serde_json::from_str(saved).unwrap();
    session["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|n| {
            n["outputs"]["tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

#[needs(llama)]
#[tokio::test]
async fn a_run_on_the_real_model_replays_offline_to_the_same_saved_session() {
    // A server of its own: the test stops it to replay offline.
    let server = LlamaServer::start(2048);
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("real.jsonl");
    let base_url = server.base_url();

    let real = OpenAiChatModel::builder()
        .model("smollm2")
        .base_url(base_url.clone())
        .api_key(KEY)
        .max_tokens(24)
        .temperature(0.0)
        .build()
        .unwrap();
    let recorder = Arc::new(
        RecordingChatModel::create(Arc::new(real), &cassette)
            .unwrap()
            .named("smollm2")
            .redact(KEY),
    );
    let recorded = conversation(recorder.clone(), &dir.path().join("recorded")).await;
    assert_eq!(
        recorder.recorded(),
        3,
        "the forced call, its answer, the second turn"
    );
    let ids = tool_call_ids(&recorded);
    assert_eq!(ids.len(), 1, "{recorded}");

    // The server is gone: nothing listens where it was.
    drop(server);
    let port = base_url.rsplit(':').next().unwrap().trim_end_matches("/v1");
    let gone = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        std::net::TcpStream::connect(format!("127.0.0.1:{port}")).is_err()
    });
    assert!(gone, "the server still listens on {port}");

    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(!text.contains(KEY), "the key is never written");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert!(lines.iter().all(|l| l["format"] == "lc-agent-cassette/1"));
    assert_eq!(lines[0]["request"]["tool_choice"], "lookup");
    assert!(
        lines[0]["deltas"].as_array().is_some_and(|d| !d.is_empty()),
        "the streamed pieces are kept: {}",
        lines[0]
    );

    let replay = Arc::new(ReplayChatModel::open(&cassette).unwrap());
    let replayed = conversation(replay.clone(), &dir.path().join("replayed")).await;
    assert_eq!(replay.played(), 3);
    assert_eq!(
        tool_call_ids(&replayed),
        ids,
        "the model's call ids come back"
    );
    assert_ne!(replayed, recorded, "node ids and times differ");
    assert_eq!(masked(&replayed), masked(&recorded));
}

//! Model fallback against real servers: two llama-cpp-python servers, the
//! first stopped in the middle of a run (by a tool the model calls); the
//! next turn of the same run is answered by the second, and the node says
//! which model answered and why the first did not.

use std::sync::Arc;

use lc_agent::{
    ChatNode, FallbackExt, FnTool, HumanNode, ModelRoutes, NodeRef, OpenAiChatModel,
    RunnableNetwork, ToolChoice, ToolOutput,
};
use parking_lot::Mutex;
use serde_json::json;

use lc_agent_test_support::{needs, LlamaServer};

fn model(server: &LlamaServer) -> OpenAiChatModel {
    OpenAiChatModel::builder()
        .model("smollm2")
        .base_url(server.base_url())
        .max_tokens(24)
        .temperature(0.0)
        // A refused connection is retried once: the fallback comes quickly.
        .max_retries(1)
        .build()
        .unwrap()
}

#[needs(llama)]
#[tokio::test]
async fn a_server_stopped_mid_run_falls_back_to_the_second_and_says_so() {
    let backup = LlamaServer::shared();
    let _turn = backup.conversation().await;
    let primary = Arc::new(Mutex::new(Some(LlamaServer::start(2048))));
    let main = model(primary.lock().as_ref().unwrap());

    // The tool stops the primary server: the run's next turn finds it gone.
    let held = primary.clone();
    let stop = FnTool::new(
        "stop_server",
        "Stops the server.",
        json!({"type": "object", "properties": {}}),
        move |_args, _ctx| {
            if let Some(server) = held.lock().take() {
                server.kill();
            }
            async { Ok(ToolOutput::ok("stopped")) }
        },
    );
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("main")
        .model("main", main)
        .model("backup", model(backup))
        .tool(stop)
        .build();
    net.set_model_fallbacks("chat", ["backup"]);
    net.set_tool_choice_route("chat", Some(ToolChoice::None));
    let first = {
        let _scope = net.enter();
        HumanNode::new("Stop the server.");
        NodeRef::create(ChatNode {
            tool_choice: Some(ToolChoice::Tool("stop_server".into())),
            ..ChatNode::default()
        })
    };

    let reply = net.invoke().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        primary.lock().is_none(),
        "the tool ran and stopped the server"
    );
    assert!(reply.tool_calls().is_empty(), "{reply:?}");

    // The first turn was the primary's, with no fallback.
    assert_eq!(first.metadata_value("chat_model_name"), Some(json!("main")));
    assert_eq!(first.metadata_value("model_fallback"), None);
    // The turn after the tool: the backup answered, the node says why.
    let last = net.current_leaf().unwrap();
    assert_eq!(last.kind(), "chat");
    assert_eq!(
        last.metadata_value("chat_model_name"),
        Some(json!("backup"))
    );
    let fallback = last.metadata_value("model_fallback").unwrap();
    assert_eq!(fallback["answered_by"], "backup", "{fallback}");
    let failed = fallback["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{fallback}");
    assert_eq!(failed[0]["model"], "main");
    assert!(
        failed[0]["error"]
            .as_str()
            .unwrap()
            .contains("could not reach the model endpoint"),
        "{fallback}"
    );
    // Saved and loaded, the chain and the record are there.
    let loaded = RunnableNetwork::from_json(&net.to_json().unwrap()).unwrap();
    assert_eq!(loaded.model_fallbacks_for_step("chat"), ["backup"]);
    assert_eq!(
        loaded
            .node(last.id())
            .unwrap()
            .metadata_value("model_fallback"),
        Some(fallback)
    );
}

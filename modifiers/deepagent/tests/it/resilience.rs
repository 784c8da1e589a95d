//! The blueprint's `[resilience]`: a step's fallback model answers when
//! its own cannot be reached (recorded on the node), call limits per tool
//! (a result the model reads) and per model (the run's error), tools
//! retried. Scripted models stand in, except the unreachable one, a real
//! OpenAI-compatible client aimed at a closed port.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use lc_agent::{
    ChatModel, FallbackExt, FnTool, HumanNode, NetworkError, OpenAiChatModel, RunnableNetwork,
    ScriptedChatModel, ToolOutput, ToolStatus, Turn,
};
use lc_agent_deepagent::{AgentSpec, ModelSpec, SpecError};
use serde_json::json;

use crate::common::tool_results;

const BLUEPRINT: &str = r#"
[models.main]
model = "main-model"
[models.backup]
model = "backup-model"

[resilience.fallbacks]
chat = ["backup"]
[resilience.tool_retry]
lookup = { attempts = 3, backoff_ms = 10 }
[resilience.call_limits.tools]
lookup = 2
[resilience.call_limits.models]
backup = 4
"#;

/// A port nothing listens on.
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    url
}

/// `main` cannot be reached; `backup` plays `turns`.
fn agent(turns: Vec<Turn>, lookups: Arc<AtomicUsize>) -> RunnableNetwork {
    let spec = AgentSpec::from_toml(BLUEPRINT).unwrap();
    let backup = ScriptedChatModel::new(turns);
    let unreachable = OpenAiChatModel::builder()
        .model("main-model")
        .base_url(closed_port())
        .max_retries(0)
        .build()
        .unwrap();
    let resolve = move |name: &str, _: &ModelSpec| -> Result<Arc<dyn ChatModel>, SpecError> {
        Ok(match name {
            "main" => Arc::new(unreachable.clone()),
            _ => Arc::new(backup.clone()),
        })
    };
    // Fails its first call, then answers.
    let lookup = FnTool::new(
        "lookup",
        "Looks a word up.",
        json!({"type": "object", "properties": {"word": {"type": "string"}}}),
        move |_args, _ctx| {
            let n = lookups.fetch_add(1, Ordering::SeqCst);
            async move {
                Ok(if n == 0 {
                    ToolOutput::error("the dictionary is busy")
                } else {
                    ToolOutput::ok(format!("meaning #{n}"))
                })
            }
        },
    );
    let net = spec.builder(resolve).unwrap().tool(lookup).build().unwrap();
    spec.store_in(&net).unwrap();
    {
        let _s = net.enter();
        HumanNode::new("Look up three words.");
    }
    net
}

#[tokio::test]
async fn fallback_retry_and_a_tool_limit_in_one_run() {
    let lookups = Arc::new(AtomicUsize::new(0));
    let net = agent(
        vec![
            Turn::call("c1", "lookup", json!({"word": "a"})),
            Turn::call("c2", "lookup", json!({"word": "b"})),
            Turn::call("c3", "lookup", json!({"word": "c"})),
            Turn::text("Two meanings found."),
        ],
        lookups.clone(),
    );
    let answer = net.invoke().await.unwrap();
    assert_eq!(answer.text(), "Two meanings found.");

    // Every chat node was answered by the backup, and says why.
    let chats: Vec<_> = net
        .nodes()
        .into_iter()
        .filter(|n| n.kind() == "chat")
        .collect();
    assert_eq!(chats.len(), 4);
    for chat in &chats {
        assert_eq!(
            chat.metadata_value("chat_model_name"),
            Some(json!("backup"))
        );
        let fallback = chat.metadata_value("model_fallback").unwrap();
        assert_eq!(fallback["answered_by"], "backup");
        assert_eq!(fallback["failed"][0]["model"], "main");
        assert!(
            fallback["failed"][0]["error"]
                .as_str()
                .unwrap()
                .contains("could not reach the model endpoint"),
            "{fallback}"
        );
    }

    // The first lookup failed once and was called again; the third call
    // was past the limit and not made.
    let results = tool_results(&net);
    assert_eq!(results[0], (ToolStatus::Ok, "meaning #1".to_string()));
    assert_eq!(results[1], (ToolStatus::Ok, "meaning #2".to_string()));
    assert_eq!(results[2].0, ToolStatus::Error);
    assert!(
        results[2]
            .1
            .starts_with("Error: call limit reached: `lookup` may be called 2 times in one run"),
        "{}",
        results[2].1
    );
    assert_eq!(lookups.load(Ordering::SeqCst), 3, "2 calls + 1 retry");
    let first_tool = net
        .nodes()
        .into_iter()
        .find(|n| n.kind() == "tool")
        .unwrap();
    assert_eq!(
        first_tool.metadata_value("tool_retries"),
        Some(json!(["Error: the dictionary is busy"]))
    );

    // The rules are in the session: a loaded one keeps them.
    let loaded = RunnableNetwork::from_json(&net.to_json().unwrap()).unwrap();
    assert_eq!(loaded.model_fallbacks_for_step("chat"), ["backup"]);
    assert_eq!(
        loaded.metadata_value("call_limits"),
        Some(json!({"tools": {"lookup": 2}, "models": {"backup": 4}}))
    );
}

#[tokio::test]
async fn a_model_past_its_limit_ends_the_run_with_a_clear_error() {
    // Each turn a new file (progress: the stuck detector has nothing to say).
    let turns: Vec<Turn> = (0..6)
        .map(|i| {
            Turn::call(
                &format!("c{i}"),
                "write_file",
                json!({"file_path": format!("/f{i}.md"), "content": "x"}),
            )
        })
        .collect();
    let net = agent(turns, Arc::new(AtomicUsize::new(0)));
    let error = net.invoke().await.unwrap_err();
    let NetworkError::NodeFailed { source, .. } = &error else {
        panic!("{error}");
    };
    match source.downcast_ref::<NetworkError>() {
        Some(NetworkError::CallLimit { model, limit }) => {
            assert_eq!(model, "backup");
            assert_eq!(*limit, 4);
        }
        other => panic!("{other:?}: {error}"),
    }
    assert!(error.to_string().contains("call limit reached"), "{error}");
    // Four answers were read; the graph is valid and saves.
    let answered = net
        .nodes()
        .into_iter()
        .filter(|n| n.kind() == "chat" && n.output().is_some())
        .count();
    assert_eq!(answered, 4);
    RunnableNetwork::from_json(&net.to_json().unwrap()).unwrap();
}

#[test]
fn a_fallback_that_names_no_model_is_a_clear_error() {
    let spec = AgentSpec::from_toml(
        "[models.main]\nmodel = \"m\"\n[resilience.fallbacks]\nchat = [\"spare\"]\n",
    )
    .unwrap();
    let err = spec
        .builder(|_, _| Ok(Arc::new(ScriptedChatModel::new(["x"]))))
        .err()
        .unwrap();
    assert!(err.to_string().contains("no model named `spare`"), "{err}");
}

/// A model that records what each request sent, answering from a script.
struct Recording {
    script: ScriptedChatModel,
    sent: Arc<parking_lot::Mutex<Vec<Vec<lc_agent::Message>>>>,
}

#[async_trait::async_trait]
impl ChatModel for Recording {
    async fn complete(
        &self,
        request: &lc_agent::ChatRequest,
    ) -> Result<lc_agent::ChatResponse, lc_agent::ModelError> {
        self.sent.lock().push(
            request
                .messages()
                .into_iter()
                .map(|m| m.into_owned())
                .collect(),
        );
        self.script.complete(request).await
    }
}

/// Old tool results are left out of the request past the budget; the
/// newest stays, and the graph keeps every result whole.
#[tokio::test]
async fn old_tool_results_are_cleared_from_the_request_not_the_graph() {
    let spec = AgentSpec::from_toml(
        "[models.main]\nmodel = \"m\"\n\
         [resilience.clear_tool_results]\nkeep = 1\nbudget_tokens = 300\n",
    )
    .unwrap();
    let sent = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let model = Arc::new(Recording {
        script: ScriptedChatModel::new([
            Turn::call("c1", "page", json!({})),
            Turn::call("c2", "page", json!({})),
            Turn::call("c3", "page", json!({})),
            Turn::text("Read three pages."),
        ]),
        sent: sent.clone(),
    });
    let page = FnTool::new(
        "page",
        "A long page.",
        json!({"type": "object", "properties": {}}),
        |_args, _ctx| async { Ok(ToolOutput::ok("words ".repeat(200))) },
    );
    let net = spec
        .builder(move |_, _| Ok(model.clone() as Arc<dyn ChatModel>))
        .unwrap()
        .tool(page)
        .build()
        .unwrap();
    {
        let _s = net.enter();
        HumanNode::new("Read the pages.");
    }
    net.invoke().await.unwrap();
    let sent = sent.lock().clone();
    assert_eq!(sent.len(), 4);
    let tool_texts = |messages: &[lc_agent::Message]| -> Vec<String> {
        messages
            .iter()
            .filter_map(|m| match m {
                lc_agent::Message::Tool { content, .. } => Some(content.clone()),
                _ => None,
            })
            .collect()
    };
    // The last request: three results, about 300 tokens each; the newest
    // whole, the two before it cleared (past the 300-token budget).
    let last = tool_texts(&sent[3]);
    assert_eq!(last.len(), 3);
    assert_eq!(last[2], "words ".repeat(200));
    for cleared in &last[..2] {
        assert!(
            cleared.starts_with("[An older result of `page`") && cleared.contains("cleared"),
            "{cleared}"
        );
    }
    let chats: Vec<_> = net
        .nodes()
        .into_iter()
        .filter(|n| n.kind() == "chat")
        .collect();
    assert_eq!(
        chats[3].metadata_value("cleared_tool_results"),
        Some(json!(2))
    );
    // The graph keeps every result.
    assert!(tool_results(&net)
        .iter()
        .all(|(_, text)| *text == "words ".repeat(200)));
}

/// A cleared result leaves its image out of the request too (a
/// screenshot is what makes a result large); the newest keeps its image,
/// and the graph keeps every one.
#[tokio::test]
async fn a_cleared_result_leaves_its_image_out_of_the_request() {
    let spec = AgentSpec::from_toml(
        "[models.main]\nmodel = \"m\"\n\
         [resilience.clear_tool_results]\nkeep = 1\nbudget_tokens = 1\n",
    )
    .unwrap();
    let sent = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let model = Arc::new(Recording {
        script: ScriptedChatModel::new([
            Turn::call("c1", "shot", json!({})),
            Turn::call("c2", "shot", json!({})),
            Turn::text("Two screenshots."),
        ]),
        sent: sent.clone(),
    });
    let shot = FnTool::new(
        "shot",
        "A screenshot.",
        json!({"type": "object", "properties": {}}),
        |_args, _ctx| async {
            Ok(ToolOutput::with_parts(
                "Image: /shot.png (PNG, 1x1 px, 68 bytes)",
                vec![lc_agent::ContentPart::image_base64(
                    "image/png",
                    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
                )],
            ))
        },
    );
    let net = spec
        .builder(move |_, _| Ok(model.clone() as Arc<dyn ChatModel>))
        .unwrap()
        .tool(shot)
        .build()
        .unwrap();
    {
        let _s = net.enter();
        HumanNode::new("Take two screenshots.");
    }
    net.invoke().await.unwrap();
    let sent = sent.lock().clone();
    assert_eq!(sent.len(), 3);
    let tools: Vec<(String, usize)> = sent[2]
        .iter()
        .filter_map(|m| match m {
            lc_agent::Message::Tool { content, parts, .. } => Some((content.clone(), parts.len())),
            _ => None,
        })
        .collect();
    assert_eq!(tools.len(), 2, "{tools:?}");
    let (older, older_parts) = &tools[0];
    assert!(
        older.starts_with("[An older result of `shot` (about 10 tokens and an image), cleared"),
        "{older}"
    );
    assert_eq!(*older_parts, 0, "the cleared result's image is left out");
    assert_eq!(
        tools[1],
        ("Image: /shot.png (PNG, 1x1 px, 68 bytes)".to_string(), 1)
    );
    // The graph keeps both images.
    let images_kept = net
        .nodes()
        .iter()
        .filter(|n| matches!(n.output().as_deref(), Some(m @ lc_agent::Message::Tool { .. }) if m.has_images()))
        .count();
    assert_eq!(images_kept, 2);
}

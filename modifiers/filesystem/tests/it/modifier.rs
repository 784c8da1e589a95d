//! The modifier in a running network: tools offered, system prompt,
//! eviction of large tool results (threshold, ids, exclusions, paging,
//! save/load, write failures).

use std::sync::Arc;

use lc_agent::{
    Attachments, ChatModel, ChatRequest, ChatResponse, FnTool, HumanNode, Message, ModelError,
    NodeRef, RunnableNetwork, ScriptedChatModel, ToolOutput, Turn,
};
use lc_agent_filesystem::evict::file_name_for;
use lc_agent_filesystem::{
    Backend, FilesystemBackend, FilesystemModifier, LocalShellBackend, StateBackend,
};
use parking_lot::Mutex;
use serde_json::json;

/// Replays scripted turns and records every request it gets.
struct Recording {
    inner: ScriptedChatModel,
    requests: Arc<Mutex<Vec<ChatRequest>>>,
}

#[async_trait::async_trait]
impl ChatModel for Recording {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.requests.lock().push(request.clone());
        self.inner.complete(request).await
    }
}

/// A tool returning `text` verbatim.
fn echo_tool() -> FnTool {
    FnTool::new(
        "echo",
        "Returns `text`.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        |args, _| async move { Ok(ToolOutput::ok(args["text"].as_str().unwrap_or_default())) },
    )
}

fn network(turns: Vec<Turn>) -> (RunnableNetwork, Arc<Mutex<Vec<ChatRequest>>>) {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let model = Recording {
        inner: ScriptedChatModel::new(turns),
        requests: requests.clone(),
    };
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("m")
        .model("m", model)
        .tool(echo_tool())
        .build();
    (net, requests)
}

async fn run(net: &RunnableNetwork) {
    {
        let _s = net.enter();
        HumanNode::new("go");
    }
    net.invoke().await.unwrap();
}

fn tool_nodes(net: &RunnableNetwork) -> Vec<NodeRef> {
    net.nodes()
        .into_iter()
        .filter(|n| n.kind() == "tool")
        .collect()
}

fn tool_text(node: &NodeRef) -> String {
    node.output().unwrap().text().to_string()
}

#[tokio::test]
async fn offers_tools_and_system_section() {
    let (net, requests) = network(vec![Turn::text("hi")]);
    net.add_modifier(FilesystemModifier::new(StateBackend::factory()))
        .unwrap();
    run(&net).await;
    let req = requests.lock()[0].clone();
    let mut names: Vec<&str> = req.tools.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "delete",
            "echo",
            "edit_file",
            "glob",
            "grep",
            "ls",
            "read_file",
            "write_file"
        ]
    );
    assert_eq!(req.system.len(), 1);
    let section = &req.system[0];
    for needle in [
        "ls, read_file, write_file, edit_file, glob, grep, delete",
        "absolute",
        "offset",
        "limit",
        "/large_tool_results/",
    ] {
        assert!(section.contains(needle), "{needle} missing from {section}");
    }
    assert!(!section.contains("execute"));
    // Schemas state their defaults.
    let grep = req.tools.iter().find(|t| t.name == "grep").unwrap();
    assert_eq!(grep.parameters["required"], json!(["pattern"]));
    assert!(grep.description.contains("default"));
    // The section is not saved in any node output.
    assert!(!net.to_json().unwrap().contains("large_tool_results"));

    let dir = tempfile::tempdir().unwrap();
    let (net, requests) = network(vec![Turn::text("hi")]);
    net.add_modifier(FilesystemModifier::new(
        LocalShellBackend::new(dir.path()).unwrap(),
    ))
    .unwrap();
    run(&net).await;
    let req = requests.lock()[0].clone();
    assert!(req.tools.iter().any(|t| t.name == "execute"));
    assert!(req.system[0].contains("execute"));
}

#[tokio::test]
async fn execute_without_sandbox_is_an_error_result() {
    let (net, _) = network(vec![
        Turn::call("c1", "execute", json!({"command": "ls"})),
        Turn::text("ok"),
    ]);
    net.add_modifier(FilesystemModifier::new(StateBackend::factory()))
        .unwrap();
    run(&net).await;
    let node = &tool_nodes(&net)[0];
    assert_eq!(
        tool_text(node),
        "Error: execute is not available: the backend cannot run commands"
    );
}

fn lines(n: usize, width: usize) -> String {
    (0..n)
        .map(|i| format!("{i:0width$}"))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn evict_case(
    limit: usize,
    id: &str,
    tool: &str,
    args: serde_json::Value,
) -> (RunnableNetwork, NodeRef) {
    let (net, _) = network(vec![Turn::call(id, tool, args), Turn::text("done")]);
    net.add_modifier(
        FilesystemModifier::new(StateBackend::factory()).tool_token_limit_before_evict(Some(limit)),
    )
    .unwrap();
    run(&net).await;
    let node = tool_nodes(&net).remove(0);
    (net, node)
}

#[tokio::test]
async fn threshold_below_at_above() {
    // limit 10 tokens -> 40 chars.
    for (len, evicted) in [(39, false), (40, false), (41, true)] {
        let text = "x".repeat(len);
        let (net, node) = evict_case(10, "c1", "echo", json!({"text": text})).await;
        assert_eq!(
            net.files().contains_key("/large_tool_results/c1"),
            evicted,
            "len {len}"
        );
        if !evicted {
            assert_eq!(tool_text(&node), text);
        }
    }
}

#[tokio::test]
async fn preview_text_is_exact() {
    let text = lines(30, 3);
    let (net, node) = evict_case(10, "c1", "echo", json!({"text": text})).await;
    let expected = format!(
        "Tool result too large ({} chars, ~{} tokens). Saved to /large_tool_results/c1.\n\nFirst 10 lines:\n{}\n...\nLast 5 lines:\n{}\n\n[Use read_file('/large_tool_results/c1', offset=0, limit=100) to view more]",
        text.len(),
        text.len() / 4,
        lines(10, 3),
        (25..30).map(|i| format!("{i:03}")).collect::<Vec<_>>().join("\n"),
    );
    assert_eq!(tool_text(&node), expected);
    assert_eq!(net.files()["/large_tool_results/c1"].text(), text);
    // Each preview line is cut at 500 chars.
    let wide = format!("{}\nshort", "w".repeat(800));
    let (_, node) = evict_case(10, "c2", "echo", json!({"text": wide})).await;
    let out = tool_text(&node);
    assert!(
        out.contains(&format!("First 10 lines:\n{}\nshort\n...", "w".repeat(500))),
        "{out}"
    );
}

#[tokio::test]
async fn odd_and_long_ids() {
    assert_eq!(file_name_for("call/../x y"), "call____x_y");
    assert_eq!(file_name_for("call_ABC-123"), "call_ABC-123");
    assert_eq!(file_name_for("é"), "_");
    let (net, node) = evict_case(10, "call/../x y", "echo", json!({"text": "z".repeat(100)})).await;
    assert!(net.files().contains_key("/large_tool_results/call____x_y"));
    assert!(tool_text(&node).contains("Saved to /large_tool_results/call____x_y."));
    let long_id = "i".repeat(101);
    let name = file_name_for(&long_id);
    assert_eq!(name.len(), 5 + 64);
    assert!(name.starts_with("call-") && name[5..].chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(file_name_for(&"i".repeat(100)), "i".repeat(100));
    let (net, _) = evict_case(10, &long_id, "echo", json!({"text": "z".repeat(100)})).await;
    assert!(net
        .files()
        .contains_key(&format!("/large_tool_results/{name}")));
}

#[tokio::test]
async fn file_tools_and_excluded_tools_are_never_evicted() {
    let big = lines(200, 4);
    let (net, _) = network(vec![
        Turn::call(
            "w",
            "write_file",
            json!({"file_path": "/big.txt", "content": big}),
        ),
        Turn::call("r", "read_file", json!({"file_path": "/big.txt"})),
        Turn::call(
            "g",
            "grep",
            json!({"pattern": "0", "output_mode": "content"}),
        ),
        Turn::call("e", "echo", json!({"text": big})),
        Turn::text("done"),
    ]);
    net.add_modifier(
        FilesystemModifier::new(StateBackend::factory())
            .tool_token_limit_before_evict(Some(10))
            .never_evict("echo"),
    )
    .unwrap();
    run(&net).await;
    let keys: Vec<String> = net.files().keys().cloned().collect();
    assert_eq!(keys, ["/big.txt"]);
    let nodes = tool_nodes(&net);
    assert!(tool_text(&nodes[1]).starts_with("     1\t0000\n"));
    assert_eq!(tool_text(&nodes[3]), big);
}

#[tokio::test]
async fn page_through_evicted_result_and_survive_save_load() {
    let text = lines(300, 4);
    let (net, _) = network(vec![
        Turn::call("c1", "echo", json!({"text": text})),
        Turn::call(
            "r1",
            "read_file",
            json!({"file_path": "/large_tool_results/c1", "offset": 0, "limit": 100}),
        ),
        Turn::call(
            "r2",
            "read_file",
            json!({"file_path": "/large_tool_results/c1", "offset": 100, "limit": 100}),
        ),
        Turn::text("done"),
    ]);
    net.add_modifier(
        FilesystemModifier::new(StateBackend::factory()).tool_token_limit_before_evict(Some(50)),
    )
    .unwrap();
    run(&net).await;
    let nodes = tool_nodes(&net);
    assert!(tool_text(&nodes[0]).starts_with("Tool result too large (1499 chars, ~374 tokens)"));
    let page1 = tool_text(&nodes[1]);
    assert!(
        page1.len() > 200,
        "paging output is larger than the threshold"
    );
    assert!(page1.starts_with("     1\t0000\n"));
    assert!(
        page1.ends_with("   100\t0099\n[Showing lines 1-100 of 300. Use offset=100 to read more.]")
    );
    assert!(tool_text(&nodes[2]).starts_with("   101\t0100\n"));
    assert_eq!(net.files().len(), 1);

    let saved = net.to_json().unwrap();
    let loaded = RunnableNetwork::from_json(&saved).unwrap();
    assert_eq!(loaded.files()["/large_tool_results/c1"].text(), text);
    let loaded_tool = loaded
        .nodes()
        .into_iter()
        .find(|n| n.kind() == "tool")
        .unwrap();
    assert!(loaded_tool
        .output()
        .unwrap()
        .text()
        .starts_with("Tool result too large"));
    assert_eq!(loaded.to_json().unwrap(), saved);
    // The loaded network pages the file through a fresh backend.
    let backend = StateBackend::new(loaded);
    let page = backend
        .read("/large_tool_results/c1", 299, 5)
        .await
        .unwrap();
    assert_eq!(page.lines, [lc_agent_filesystem::PageLine::whole("0299")]);
}

#[tokio::test]
async fn disabled_and_failed_eviction() {
    let (net, _) = network(vec![
        Turn::call("c1", "echo", json!({"text": "y".repeat(500)})),
        Turn::text("done"),
    ]);
    net.add_modifier(
        FilesystemModifier::new(StateBackend::factory()).tool_token_limit_before_evict(None),
    )
    .unwrap();
    run(&net).await;
    assert!(net.files().is_empty());
    assert_eq!(tool_text(&tool_nodes(&net)[0]), "y".repeat(500));

    // A file where the directory should be: the write fails, the result stays.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("large_tool_results"), "in the way").unwrap();
    let (net, _) = network(vec![
        Turn::call("c1", "echo", json!({"text": "y".repeat(500)})),
        Turn::text("done"),
    ]);
    net.add_modifier(
        FilesystemModifier::new(FilesystemBackend::new(dir.path()).unwrap())
            .tool_token_limit_before_evict(Some(10)),
    )
    .unwrap();
    run(&net).await;
    let node = &tool_nodes(&net)[0];
    assert_eq!(tool_text(node), "y".repeat(500));
    assert_eq!(
        node.metadata_value("eviction_error"),
        Some(json!(
            "Cannot create /large_tool_results/c1: /large_tool_results is a file"
        ))
    );
    assert!(matches!(
        node.output().unwrap().as_ref(),
        Message::Tool { .. }
    ));
}

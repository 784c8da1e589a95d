//! ToolExecutor and openai_tools: a batch of OpenAI tool calls against real
//! file tools (a directory), run concurrently, bad calls as per-call errors.

use std::sync::Arc;
use std::time::Duration;

use lc_agent::{openai_tools, FnTool, RunnableNetwork, Tool, ToolExecutor, ToolOutput};
use lc_agent_filesystem::{all_tools, FilesystemBackend, StateBackend, TOOL_NAMES};
use serde_json::json;

fn call(id: &str, name: &str, args: serde_json::Value) -> serde_json::Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
}

#[tokio::test]
async fn file_tools_over_a_directory_with_bad_calls_as_per_call_errors() {
    let dir = tempfile::tempdir().unwrap();
    let backend = FilesystemBackend::new(dir.path()).unwrap();
    let executor = ToolExecutor::from_shared(all_tools(backend));
    let defs = openai_tools(executor.tools());
    let names: Vec<&str> = defs
        .iter()
        .map(|d| d["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, TOOL_NAMES);
    assert!(defs.iter().all(|d| d["type"] == "function"
        && d["function"]["parameters"]["type"] == "object"
        && !d["function"]["description"].as_str().unwrap().is_empty()));

    let results = executor
        .execute_openai(&[
            call("w", "write_file", json!({"file_path": "/a.txt", "content": "hi"})),
            call("u", "no_such_tool", json!({})),
            call("x", "read_file", json!({"file_path": "/../../etc/passwd"})),
            json!({"id": "bad-json", "type": "function", "function": {"name": "ls", "arguments": "{not json"}}),
            json!({"id": "no-function"}),
            json!({"id": "obj", "type": "function", "function": {"name": "ls", "arguments": {"path": "/"}}}),
            json!({"id": "num", "type": "function", "function": {"name": "ls", "arguments": 3}}),
        ])
        .await;
    assert_eq!(results.len(), 7);
    assert_eq!(results[0].tool_call_id, "w");
    assert_eq!(results[0].function_name, "write_file");
    assert!(results[0].success, "{:?}", results[0]);
    assert_eq!(
        results[0].result.as_deref(),
        Some("Successfully wrote to /a.txt")
    );
    assert_eq!(results[0].error, None);
    assert!(results[0].execution_time_ms >= 0.0);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "hi"
    );

    assert!(!results[1].success);
    assert!(results[1]
        .error
        .as_deref()
        .unwrap()
        .contains("Unknown tool `no_such_tool`"));
    assert!(!results[2].success);
    assert!(results[2]
        .error
        .as_deref()
        .unwrap()
        .contains("Path traversal not allowed"));
    assert!(!results[3].success);
    assert!(
        results[3]
            .error
            .as_deref()
            .unwrap()
            .contains("not valid JSON"),
        "{:?}",
        results[3]
    );
    assert_eq!(results[4].tool_call_id, "no-function");
    assert!(results[4]
        .error
        .as_deref()
        .unwrap()
        .contains("not an OpenAI tool call object"));
    assert!(results[5].success, "{:?}", results[5]);
    // (ls ran alongside write_file: whether it saw a.txt is a race.)
    assert!(results[6]
        .error
        .as_deref()
        .unwrap()
        .contains("must be a JSON object"));
}

#[tokio::test]
async fn calls_of_one_batch_run_concurrently() {
    // Each call waits until the other has started: run one after the
    // other, the batch would never finish.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let tool = {
        let barrier = barrier.clone();
        FnTool::new(
            "meet",
            "Waits for the other call.",
            json!({"type": "object"}),
            move |_, _| {
                let barrier = barrier.clone();
                async move {
                    barrier.wait().await;
                    Ok(ToolOutput::ok("met"))
                }
            },
        )
    };
    let executor = ToolExecutor::new([tool]);
    let calls = [call("1", "meet", json!({})), call("2", "meet", json!({}))];
    let batch = executor.execute_openai(&calls);
    let results = tokio::time::timeout(Duration::from_secs(10), batch)
        .await
        .expect("the two calls did not run concurrently");
    assert!(results
        .iter()
        .all(|r| r.success && r.result.as_deref() == Some("met")));
}

#[tokio::test]
async fn a_panicking_tool_is_an_error_entry() {
    let boom = FnTool::new(
        "boom",
        "Panics.",
        json!({"type": "object"}),
        |_, _| async move {
            if true {
                panic!("boom");
            }
            Ok(ToolOutput::ok(""))
        },
    );
    let results = ToolExecutor::new([boom])
        .execute_openai(&[call("p", "boom", json!({}))])
        .await;
    assert_eq!(
        results[0].error.as_deref(),
        Some("Error: the tool `boom` panicked")
    );
}

#[tokio::test]
async fn with_network_the_tools_work_on_the_sessions_files() {
    let net = RunnableNetwork::new();
    let executor =
        ToolExecutor::from_shared(all_tools(StateBackend::factory())).with_network(net.clone());
    let results = executor
        .execute_openai(&[call(
            "w",
            "write_file",
            json!({"file_path": "/n.md", "content": "note"}),
        )])
        .await;
    assert!(results[0].success, "{:?}", results[0]);
    assert_eq!(net.files()["/n.md"].content, ["note"]);
    let shared: Vec<Arc<dyn Tool>> = executor.tools().to_vec();
    assert_eq!(openai_tools(&shared), openai_tools(executor.tools()));
}

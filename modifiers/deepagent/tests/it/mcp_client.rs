//! McpTools against real MCP servers started by the tests: the reference
//! server `@modelcontextprotocol/server-everything` (npm) over stdio and
//! streamable HTTP, `mcp-server-time` (PyPI) over stdio, and a small fake
//! server (`tests/mcp/fake_server.py`) for the faults: a server killed
//! mid-call, one that never answers, an invalid tool schema, a tool list
//! that changes; a server on the official Python SDK
//! (`tests/mcp/sdk_server.py`) for a closed event stream and a request for
//! the person's input (elicitation). A scripted model calls the tools
//! through a network.
//!
//! The servers come from `.ci/run` (`npm ci --prefix .ci`, `pip install -r
//! .ci/requirements.txt`); each test says what it needs with
//! `#[needs(...)]`, so where a server is missing it is listed as ignored.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use lc_agent::{
    HumanNode, RunnableNetwork, ScriptedChatModel, Tool, ToolRetryExt, ToolStatus, Turn,
};
use lc_agent_deepagent::mcp::{
    Elicitation, ElicitationAnswer, McpConfig, McpServerConfig, McpTools,
};
use lc_agent_test_support::{free_port, needs};
use serde_json::{json, Value};

use crate::common::tool_results;

/// The reference server's entry point under `.ci/node_modules`.
fn everything_js() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../.ci/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        path.is_file(),
        "server-everything is not installed (npm ci --prefix .ci)"
    );
    path
}

fn fake_server() -> McpServerConfig {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/fake_server.py");
    McpServerConfig::stdio("python3", [script.display().to_string()])
}

fn config(servers: impl IntoIterator<Item = (&'static str, McpServerConfig)>) -> McpConfig {
    McpConfig {
        mcp_servers: servers
            .into_iter()
            .map(|(n, s)| (n.to_string(), s))
            .collect(),
    }
}

/// A network whose scripted model makes `calls` (one turn each), then
/// answers "done".
fn network(mcp: &McpTools, calls: &[(&str, Value)]) -> (RunnableNetwork, ScriptedChatModel) {
    let mut turns: Vec<Turn> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| Turn::call(&format!("call-{i}"), name, args.clone()))
        .collect();
    turns.push(Turn::text("done"));
    let model = ScriptedChatModel::new(turns);
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("scripted")
        .model("scripted", model.clone())
        .modifier(mcp.clone())
        .build();
    {
        let _scope = net.enter();
        HumanNode::new("Use the MCP tools.");
    }
    (net, model)
}

/// The tool list as the model sees it: name, description, schema.
fn listing(mcp: &McpTools, only: &[&str]) -> Value {
    Value::Array(
        mcp.tool_list()
            .iter()
            .filter(|t| only.is_empty() || only.contains(&t.remote_name()))
            .map(|t| json!({"name": t.name(), "description": t.description(), "parameters": t.parameters()}))
            .collect(),
    )
}

fn results_text(net: &RunnableNetwork) -> String {
    tool_results(net)
        .into_iter()
        .map(|(status, text)| format!("[{status:?}] {text}"))
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// The tools of server-everything this version always has (others appear
/// after initialization, depending on the client's capabilities).
const EVERYTHING_TOOLS: [&str; 6] = [
    "echo",
    "get-sum",
    "get-tiny-image",
    "get-resource-links",
    "get-structured-content",
    "get-annotated-message",
];

/// The calls the scripted model makes to server-everything.
fn everything_calls() -> Vec<(&'static str, Value)> {
    vec![
        ("echo", json!({"message": "hello from lc-agent"})),
        ("get-sum", json!({"a": 2, "b": 3})),
        ("get-tiny-image", json!({})),
        ("get-resource-links", json!({"count": 2})),
        (
            "get-annotated-message",
            json!({"messageType": "error", "includeImage": true}),
        ),
    ]
}

#[needs(server_everything)]
#[tokio::test]
async fn everything_server_over_stdio() {
    let js = everything_js();
    let server = McpServerConfig::stdio("node", [js.display().to_string(), "stdio".into()]);
    let mcp = McpTools::new(config([("everything", server)]));
    let failures = mcp.connect().await;
    assert!(failures.is_empty(), "{failures:?}");
    let (net, model) = network(&mcp, &everything_calls());
    let reply = net.invoke().await.unwrap();
    assert_eq!(reply.text(), "done");
    assert_eq!(model.calls(), 6);
    let results = tool_results(&net);
    assert!(
        results.iter().all(|(s, _)| *s == ToolStatus::Ok),
        "{results:?}"
    );
    insta::with_settings!({snapshot_path => "../../../../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_json_snapshot!("mcp_everything_tools", listing(&mcp, &EVERYTHING_TOOLS));
        insta::assert_snapshot!("mcp_everything_results", results_text(&net));
    });
    mcp.disconnect().await;
}

#[needs(server_everything)]
#[tokio::test]
async fn everything_server_over_streamable_http() {
    let js = everything_js();
    let port = free_port();
    let mut child = tokio::process::Command::new("node")
        .arg(&js)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Ready when it says it listens.
    let stderr = child.stderr.take().unwrap();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stderr));
    let ready = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("listening") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(ready.ok(), Some(true), "server-everything did not start");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

    let url = format!("http://127.0.0.1:{port}/mcp");
    let mcp = McpTools::new(config([("web", McpServerConfig::http(url))]));
    let failures = mcp.connect().await;
    assert!(failures.is_empty(), "{failures:?}");
    let (net, _) = network(&mcp, &everything_calls());
    assert_eq!(net.invoke().await.unwrap().text(), "done");
    insta::with_settings!({snapshot_path => "../../../../snapshots", prepend_module_to_snapshot => false}, {
        // The same tools and the same results as over stdio.
        insta::assert_json_snapshot!("mcp_everything_tools", listing(&mcp, &EVERYTHING_TOOLS));
        insta::assert_snapshot!("mcp_everything_results", results_text(&net));
    });
    mcp.disconnect().await;
    let _ = child.kill().await;
}

#[needs(mcp_server_time)]
#[tokio::test]
async fn time_server_over_stdio() {
    let server = McpServerConfig::stdio("mcp-server-time", ["--local-timezone", "UTC"]);
    let mcp = McpTools::new(config([("time", server)]));
    let failures = mcp.connect().await;
    assert!(failures.is_empty(), "{failures:?}");
    let (net, _) = network(
        &mcp,
        &[
            ("get_current_time", json!({"timezone": "Europe/Warsaw"})),
            (
                "convert_time",
                json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
            ),
            ("get_current_time", json!({"timezone": "Mars/Olympus"})),
        ],
    );
    assert_eq!(net.invoke().await.unwrap().text(), "done");
    let results = tool_results(&net);
    assert_eq!(results[0].0, ToolStatus::Ok, "{results:?}");
    assert_eq!(results[2].0, ToolStatus::Error, "{results:?}");
    // Dates and times vary: redacted.
    let datetime =
        regex::Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?[+-]\d\d:\d\d").unwrap();
    let text = datetime
        .replace_all(&results_text(&net), "[datetime]")
        .to_string();
    let day = regex::Regex::new(r#""day_of_week": "\w+""#).unwrap();
    let text = day
        .replace_all(&text, r#""day_of_week": "[day]""#)
        .to_string();
    let dst = regex::Regex::new(r#""is_dst": (true|false)"#).unwrap();
    let text = dst.replace_all(&text, r#""is_dst": "[dst]""#).to_string();
    insta::with_settings!({snapshot_path => "../../../../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_json_snapshot!("mcp_time_tools", listing(&mcp, &[]));
        insta::assert_snapshot!("mcp_time_results", text);
    });
    mcp.disconnect().await;
}

#[needs(python)]
#[tokio::test]
async fn a_server_killed_mid_call_is_an_error_and_the_next_call_restarts_it() {
    let mcp = McpTools::new(config([("fake", fake_server())]));
    assert!(mcp.connect().await.is_empty());
    let (net, _) = network(
        &mcp,
        &[("pid", json!({})), ("crash", json!({})), ("pid", json!({}))],
    );
    assert_eq!(net.invoke().await.unwrap().text(), "done");
    let results = tool_results(&net);
    assert_eq!(results[0].0, ToolStatus::Ok);
    assert_eq!(results[1].0, ToolStatus::Error);
    assert!(
        results[1]
            .1
            .starts_with("Error: MCP server `fake` failed during `crash` (")
            && results[1]
                .1
                .ends_with("); it is reconnected on the next call"),
        "{}",
        results[1].1
    );
    assert_eq!(results[2].0, ToolStatus::Ok);
    assert_ne!(results[0].1, results[2].1, "a new process answers");
    mcp.disconnect().await;
}

#[needs(python)]
#[tokio::test]
async fn a_server_that_never_answers_times_out_and_is_reconnected() {
    let mcp = McpTools::new(config([("slow", fake_server().with_timeout(1.0))]));
    let (net, _) = network(
        &mcp,
        &[("pid", json!({})), ("hang", json!({})), ("pid", json!({}))],
    );
    let started = std::time::Instant::now();
    assert_eq!(net.invoke().await.unwrap().text(), "done");
    assert!(started.elapsed() < Duration::from_secs(10));
    let results = tool_results(&net);
    assert_eq!(
        results[1],
        (
            ToolStatus::Error,
            "Error: MCP server `slow` did not answer `hang` within 1 s; the connection was closed and is reopened on the next call".to_string()
        )
    );
    assert_eq!(results[2].0, ToolStatus::Ok);
    assert_ne!(results[0].1, results[2].1, "a new process answers");
    mcp.disconnect().await;
}

#[needs(python)]
#[tokio::test]
async fn an_invalid_tool_schema_is_a_clear_tool_error_and_the_rest_works() {
    let mcp = McpTools::new(config([("fake", fake_server())]));
    assert!(mcp.connect().await.is_empty());
    let bad = mcp
        .tool_list()
        .into_iter()
        .find(|t| t.name() == "bad")
        .unwrap();
    assert_eq!(
        bad.parameters(),
        json!({"type": "object", "properties": {}})
    );
    assert!(bad.description().starts_with("(Unavailable: the MCP server `fake` sent an invalid input schema: `properties` must be an object, not 5.)"));
    let (net, _) = network(
        &mcp,
        &[("bad", json!({})), ("echo", json!({"text": "still here"}))],
    );
    assert_eq!(net.invoke().await.unwrap().text(), "done");
    assert_eq!(
        tool_results(&net),
        [
            (ToolStatus::Error, "Error: MCP tool `bad` of server `fake` cannot be called: its input schema is invalid (`properties` must be an object, not 5)".to_string()),
            (ToolStatus::Ok, "still here".to_string()),
        ]
    );
    mcp.disconnect().await;
}

#[needs(python)]
#[tokio::test]
async fn the_tool_list_is_refreshed_when_the_server_announces_a_change() {
    let mcp = McpTools::new(config([("fake", fake_server())]));
    assert!(mcp.connect().await.is_empty());
    let names = |mcp: &McpTools| {
        mcp.tool_list()
            .iter()
            .map(|t| t.name().to_string())
            .collect::<Vec<_>>()
    };
    assert!(!names(&mcp).contains(&"added".to_string()));
    let (net, _) = network(&mcp, &[("add_tool", json!({}))]);
    net.invoke().await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !names(&mcp).contains(&"added".to_string()) {
        assert!(
            std::time::Instant::now() < deadline,
            "no refresh: {:?}",
            names(&mcp)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The model can call the new tool on its next turn.
    let (net, _) = network(&mcp, &[("added", json!({}))]);
    net.invoke().await.unwrap();
    assert_eq!(
        tool_results(&net),
        [(ToolStatus::Ok, "the added tool ran".to_string())]
    );
    mcp.disconnect().await;
}

#[needs(python)]
#[tokio::test]
async fn clashing_names_are_prefixed_with_the_server_name() {
    let mcp =
        McpTools::new(config([("a", fake_server()), ("b", fake_server())])).reserve_names(["pid"]);
    assert!(mcp.connect().await.is_empty());
    let names: Vec<String> = mcp
        .tool_list()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert!(
        names.contains(&"a_echo".to_string()) && names.contains(&"b_echo".to_string()),
        "{names:?}"
    );
    assert!(names.contains(&"a_pid".to_string()) && !names.contains(&"pid".to_string()));
    let (net, _) = network(&mcp, &[("b_echo", json!({"text": "from b"}))]);
    net.invoke().await.unwrap();
    assert_eq!(tool_results(&net), [(ToolStatus::Ok, "from b".to_string())]);
    mcp.disconnect().await;
}

#[tokio::test]
async fn a_server_that_cannot_start_is_reported_and_the_run_goes_on() {
    let mcp = McpTools::new(config([(
        "gone",
        McpServerConfig::stdio("/nonexistent/mcp-server", Vec::<String>::new()),
    )]));
    let failures = mcp.connect().await;
    assert_eq!(failures.len(), 1);
    assert_eq!(
        failures[0].to_string(),
        "MCP server `gone`: cannot start `/nonexistent/mcp-server`"
    );
    assert!(mcp.tool_list().is_empty());
    let (net, _) = network(&mcp, &[]);
    assert_eq!(net.invoke().await.unwrap().text(), "done");
}

/// Our own server, in process, over HTTP: the bearer token is checked
/// (a wrong one is a clear connect error), and a loopback server without a
/// token serves anyone on this machine.
#[tokio::test]
async fn our_file_tool_server_over_http_checks_the_bearer_token() {
    use lc_agent_deepagent::mcp::FileToolServer;
    use lc_agent_filesystem::FilesystemBackend;

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let mut urls = Vec::new();
    for token in [Some("right"), None] {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        urls.push(format!("http://{}/mcp", listener.local_addr().unwrap()));
        let server = FileToolServer::new(FilesystemBackend::new(dir.path()).unwrap());
        tokio::spawn(server.serve_http(
            listener,
            token.map(str::to_string),
            std::future::pending(),
        ));
    }
    let wrong = McpTools::new(config([(
        "files",
        McpServerConfig::http(urls[0].clone()).with_header("Authorization", "Bearer wrong"),
    )]));
    let failures = wrong.connect().await;
    assert_eq!(failures.len(), 1);
    assert_eq!(
        failures[0].to_string(),
        "MCP server `files`: cannot connect"
    );
    assert!(wrong.tool_list().is_empty());

    for (url, header) in [(&urls[0], Some("Bearer right")), (&urls[1], None)] {
        let mut server = McpServerConfig::http(url.clone());
        if let Some(header) = header {
            server = server.with_header("Authorization", header);
        }
        let mcp = McpTools::new(config([("files", server)]));
        assert!(mcp.connect().await.is_empty());
        let (net, _) = network(&mcp, &[("read_file", json!({"file_path": "/a.txt"}))]);
        net.invoke().await.unwrap();
        assert_eq!(
            tool_results(&net),
            [(ToolStatus::Ok, "     1\talpha".to_string())]
        );
        mcp.disconnect().await;
    }
}

/// A flaky MCP tool marked idempotent is called again (with backoff) until
/// it works; the model reads the working answer, the node the failures.
/// Unmarked, the model reads the first failure.
#[needs(python)]
#[tokio::test]
async fn a_flaky_tool_marked_idempotent_is_retried_with_backoff() {
    let mcp = McpTools::new(config([("fake", fake_server())]));
    assert!(mcp.connect().await.is_empty());
    let (net, _) = network(&mcp, &[("flaky", json!({}))]);
    net.set_tool_retry("flaky", 3, Duration::from_millis(100));
    let clock = std::time::Instant::now();
    assert_eq!(net.invoke().await.unwrap().text(), "done");
    assert!(
        clock.elapsed() >= Duration::from_millis(300),
        "waited 100 + 200 ms between the calls: {:?}",
        clock.elapsed()
    );
    assert_eq!(tool_results(&net), [(ToolStatus::Ok, "steady".to_string())]);
    let node = net
        .nodes()
        .into_iter()
        .find(|n| n.kind() == "tool")
        .unwrap();
    let retries = node.metadata_value("tool_retries").unwrap();
    assert_eq!(retries.as_array().unwrap().len(), 2, "{retries}");
    assert!(
        retries[0]
            .as_str()
            .unwrap()
            .contains("temporarily unavailable (call 1)"),
        "{retries}"
    );
    mcp.disconnect().await;

    // Not marked: one call, its error is the result.
    let mcp = McpTools::new(config([("fake", fake_server())]));
    assert!(mcp.connect().await.is_empty());
    let (net, _) = network(&mcp, &[("flaky", json!({}))]);
    net.invoke().await.unwrap();
    let results = tool_results(&net);
    assert_eq!(results[0].0, ToolStatus::Error);
    assert!(results[0].1.contains("(call 1)"), "{results:?}");
    mcp.disconnect().await;
}

/// The official Python SDK's server closes a tool call's event stream
/// before it answers (after a priming event with `retry`); the client
/// reconnects with `Last-Event-ID` and gets the answer.
#[needs(python_mcp)]
#[tokio::test]
async fn a_tool_call_whose_event_stream_closes_is_resumed() {
    let (_sdk, url) = lc_agent_test_support::python::mcp_sdk_server(None);
    let mcp = McpTools::new(config([("sdk", McpServerConfig::http(url))]));
    let failures = mcp.connect().await;
    assert!(failures.is_empty(), "{failures:?}");
    let (net, _) = network(
        &mcp,
        &[
            ("interrupted", json!({"text": "one"})),
            ("interrupted", json!({"text": "two"})),
        ],
    );
    assert_eq!(net.invoke().await.unwrap().text(), "done");
    assert_eq!(
        tool_results(&net),
        [
            (ToolStatus::Ok, "resumed: one (1 reconnections)".to_string()),
            (ToolStatus::Ok, "resumed: two (1 reconnections)".to_string())
        ]
    );
    mcp.disconnect().await;
}

/// What a person does with a server's request for input in these tests.
enum Person {
    /// Accepts with these values (checked against the form first).
    Accept(Value),
    Decline,
    Cancel,
}

/// Answers the requests of `asks` as `answers` say, after `wait`; the
/// requests seen, as `(server, message, fields as JSON)`.
fn person(
    mut asks: tokio::sync::mpsc::Receiver<Elicitation>,
    answers: Vec<Person>,
    wait: Duration,
) -> tokio::task::JoinHandle<Vec<(String, String, Value)>> {
    tokio::spawn(async move {
        let mut seen = Vec::new();
        for answer in answers {
            let request = asks.recv().await.expect("a request for input");
            let fields: Vec<Value> = request
                .fields()
                .iter()
                .map(|f| {
                    json!({"name": f.name, "label": f.label, "description": f.description,
                        "kind": format!("{:?}", f.kind), "choices": f.choices,
                        "default": f.default, "required": f.required})
                })
                .collect();
            seen.push((
                request.server().to_string(),
                request.message().to_string(),
                Value::Array(fields),
            ));
            tokio::time::sleep(wait).await;
            let answer = match answer {
                Person::Accept(content) => {
                    let content = content.as_object().unwrap().clone();
                    request.check(&content).unwrap();
                    ElicitationAnswer::Accept(content)
                }
                Person::Decline => ElicitationAnswer::Decline,
                Person::Cancel => ElicitationAnswer::Cancel,
            };
            request.answer(answer);
        }
        seen
    })
}

/// A server on the official Python SDK asks for a booking in the middle
/// of a tool call (`ctx.elicit`, a form with defaults and an enum): the
/// form reaches the person as the server sent it, and accept, decline and
/// cancel reach the tool, which answers with what it got.
#[needs(python_mcp)]
#[tokio::test]
async fn a_server_asks_the_person_for_input_during_a_call() {
    let (_sdk, url) = lc_agent_test_support::python::mcp_sdk_server(None);
    let (mcp, asks) =
        McpTools::new(config([("sdk", McpServerConfig::http(url))])).with_elicitation();
    let failures = mcp.connect().await;
    assert!(failures.is_empty(), "{failures:?}");
    let person = person(
        asks,
        vec![
            Person::Accept(
                json!({"name": "Ada", "party": 4, "room": "terrace", "vegetarian": false}),
            ),
            Person::Decline,
            Person::Cancel,
        ],
        Duration::ZERO,
    );
    let call = ("book_table", json!({"day": "Friday"}));
    let (net, _) = network(&mcp, &[call.clone(), call.clone(), call]);
    assert_eq!(net.invoke().await.unwrap().text(), "done");
    assert_eq!(
        tool_results(&net),
        [
            (
                ToolStatus::Ok,
                r#"{"action": "accept", "content": {"name": "Ada", "party": 4, "room": "terrace", "vegetarian": false}, "declared": true}"#.to_string()
            ),
            (ToolStatus::Ok, r#"{"action": "decline", "declared": true}"#.to_string()),
            (ToolStatus::Ok, r#"{"action": "cancel", "declared": true}"#.to_string()),
        ]
    );
    let seen = person.await.unwrap();
    assert_eq!(seen.len(), 3);
    let (server, message, fields) = &seen[0];
    assert_eq!(server, "sdk");
    assert_eq!(message, "Book a table for Friday?");
    assert_eq!(
        fields,
        &json!([
            {"name": "name", "label": "Name", "description": "who the table is for",
             "kind": "Text", "choices": [], "default": null, "required": true},
            {"name": "party", "label": "Party", "description": "how many people",
             "kind": "Integer", "choices": [], "default": 2, "required": false},
            {"name": "room", "label": "Room", "description": null, "kind": "Text",
             "choices": [["inside", "inside"], ["terrace", "terrace"]], "default": "inside",
             "required": false},
            {"name": "vegetarian", "label": "Vegetarian", "description": null,
             "kind": "Boolean", "choices": [], "default": false, "required": false}
        ])
    );
    mcp.disconnect().await;
}

/// Without a person to answer, the capability is not declared, and the
/// server's request is declined (the Python SDK sends it anyway).
#[needs(python_mcp)]
#[tokio::test]
async fn without_a_person_input_requests_are_declined_and_not_declared() {
    let (_sdk, url) = lc_agent_test_support::python::mcp_sdk_server(None);
    let mcp = McpTools::new(config([("sdk", McpServerConfig::http(url))]));
    let (net, _) = network(&mcp, &[("book_table", json!({"day": "Friday"}))]);
    assert_eq!(net.invoke().await.unwrap().text(), "done");
    assert_eq!(
        tool_results(&net),
        [(
            ToolStatus::Ok,
            r#"{"action": "decline", "declared": false}"#.to_string()
        )]
    );
    mcp.disconnect().await;
}

/// The call's timeout does not count the time the person takes: a form
/// answered after longer than the timeout still reaches the tool.
#[needs(python_mcp)]
#[tokio::test]
async fn the_time_a_person_takes_does_not_count_against_the_call_timeout() {
    let (_sdk, url) = lc_agent_test_support::python::mcp_sdk_server(None);
    let server = McpServerConfig::http(url).with_timeout(3.0);
    let (mcp, asks) = McpTools::new(config([("sdk", server)])).with_elicitation();
    let person = person(
        asks,
        vec![Person::Accept(json!({"name": "Bo"}))],
        Duration::from_secs(5),
    );
    let (net, _) = network(&mcp, &[("book_table", json!({"day": "Monday"}))]);
    assert_eq!(net.invoke().await.unwrap().text(), "done");
    assert_eq!(
        tool_results(&net),
        [(
            ToolStatus::Ok,
            r#"{"action": "accept", "content": {"name": "Bo", "party": 2, "room": "inside", "vegetarian": false}, "declared": true}"#.to_string()
        )]
    );
    person.await.unwrap();
    mcp.disconnect().await;
}

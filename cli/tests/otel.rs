//! OpenTelemetry traces of `lc-agent run`, received by a real Arize
//! Phoenix on loopback (started by the test, see `lc_agent_test_support::phoenix`) and
//! read back through its REST API: the deep agent (a scripted model) hands
//! a task to a sub-agent that writes a file, then calls a tool that fails,
//! then answers. The tree of spans and their GenAI attributes are checked;
//! over OTLP/HTTP with content off (the default), over OTLP/gRPC with
//! content captured.

#![allow(clippy::unwrap_used, unreachable_pub)]

use std::collections::HashMap;
use std::sync::OnceLock;

use lc_agent_test_support::needs;
use lc_agent_test_support::phoenix::Phoenix;
use serde_json::{json, Value};

/// One Phoenix for the tests of this file (it takes seconds to start).
fn phoenix() -> Option<&'static Phoenix> {
    static PHOENIX: OnceLock<Option<Phoenix>> = OnceLock::new();
    PHOENIX
        .get_or_init(|| Phoenix::start("cli/tests/otel.rs"))
        .as_ref()
}

/// Runs `lc-agent run <prompt> --yes --user alice` with these extra
/// environment variables; returns the session id.
fn run(dir: &std::path::Path, prompt: &str, script: Value, env: &[(&str, String)]) -> String {
    let script_path = dir.join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    // LC_AGENT_TEST_BIN: another build of the binary (a target directory
    // shared by several checkouts may hold someone else's lc-agent).
    let binary = std::env::var_os("LC_AGENT_TEST_BIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_lc-agent").into());
    let mut command = std::process::Command::new(binary);
    command
        .args(["run", prompt, "--yes", "--user", "alice", "--script"])
        .arg(&script_path)
        .arg("--sessions")
        .arg(dir.join("sessions"))
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_PROTOCOL")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        .env_remove("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
        .env("LC_AGENT_HOME", dir.join("home"))
        .env("OTEL_SERVICE_NAME", "lc-agent-otel-test");
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("no traces are sent"), "{stderr}");
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("session ")?.strip_suffix(" saved"))
        .unwrap_or_else(|| panic!("no session line: {stderr}"))
        .to_string()
}

/// The spans as a tree: `name (children...)`, children in start order.
struct Tree {
    by_id: HashMap<String, Value>,
    children: HashMap<String, Vec<String>>,
    root: String,
}

impl Tree {
    fn new(spans: Vec<Value>) -> Tree {
        let mut by_id = HashMap::new();
        let mut children: HashMap<String, Vec<String>> = HashMap::new();
        let mut root = String::new();
        let mut sorted = spans;
        sorted.sort_by(|a, b| {
            a["start_time"]
                .as_str()
                .unwrap()
                .cmp(b["start_time"].as_str().unwrap())
        });
        for span in sorted {
            let id = span["context"]["span_id"].as_str().unwrap().to_string();
            match span["parent_id"].as_str() {
                Some(parent) => children
                    .entry(parent.to_string())
                    .or_default()
                    .push(id.clone()),
                None => root = id.clone(),
            }
            by_id.insert(id, span);
        }
        Tree {
            by_id,
            children,
            root,
        }
    }

    fn span(&self, id: &str) -> &Value {
        &self.by_id[id]
    }

    fn kids(&self, id: &str) -> Vec<&Value> {
        self.children
            .get(id)
            .map(|ids| ids.iter().map(|i| &self.by_id[i]).collect())
            .unwrap_or_default()
    }

    /// `name [children]` lines, indented, for messages and comparisons.
    fn outline(&self, id: &str, depth: usize, out: &mut String) {
        out.push_str(&format!(
            "{}{}\n",
            "  ".repeat(depth),
            self.span(id)["name"].as_str().unwrap()
        ));
        for kid in self.children.get(id).into_iter().flatten() {
            self.outline(kid, depth + 1, out);
        }
    }
}

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

/// An attribute as text (Phoenix gives some numbers back as strings).
fn text(span: &Value, key: &str) -> String {
    match attr(span, key) {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn tokens(span: &Value, key: &str) -> u64 {
    text(span, key).parse().unwrap_or(0)
}

#[needs(phoenix)]
#[test]
fn a_deep_agent_run_is_one_trace_of_genai_spans_in_phoenix() {
    let phoenix = phoenix().expect("Phoenix starts");
    let dir = tempfile::tempdir().unwrap();
    // One scripted model serves the main agent and its sub-agent, in turn.
    let script = json!([
        {"tool_calls": [{"id": "t1", "name": "task", "arguments":
            {"description": "Write /a.txt", "subagent_type": "general-purpose"}}]},
        {"tool_calls": [{"id": "w1", "name": "write_file", "arguments":
            {"file_path": "/a.txt", "content": "from the sub-agent\n"}}]},
        {"content": "Wrote /a.txt."},
        {"tool_calls": [{"id": "r1", "name": "read_file", "arguments":
            {"file_path": "/missing.txt"}}]},
        {"content": "The sub-agent wrote /a.txt."}
    ]);
    let prompt = "Delegate the greeting, codeword pelican";
    let session = run(
        dir.path(),
        prompt,
        script,
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix.http_endpoint())],
    );
    let tree = Tree::new(phoenix.trace_of_session(&session, 10));
    let mut outline = String::new();
    tree.outline(&tree.root, 0, &mut outline);
    assert_eq!(
        outline,
        "invoke_agent lc-agent
  chat main
  execute_tool task
    invoke_agent subagent:general-purpose
      chat main
      execute_tool write_file
      chat main
  chat main
  execute_tool read_file
  chat main
"
    );

    let root = tree.span(&tree.root);
    assert_eq!(text(root, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(text(root, "gen_ai.conversation.id"), session);
    assert_eq!(text(root, "user.id"), "alice");
    assert!(tokens(root, "gen_ai.usage.input_tokens") > 0, "{root:#}");

    let top = tree.kids(&tree.root);
    let chat = top[0];
    assert_eq!(text(chat, "gen_ai.operation.name"), "chat");
    assert_eq!(text(chat, "gen_ai.request.model"), "main");
    assert_eq!(text(chat, "gen_ai.response.model"), "scripted");
    assert!(tokens(chat, "gen_ai.usage.input_tokens") > 0, "{chat:#}");
    assert!(tokens(chat, "gen_ai.usage.output_tokens") > 0, "{chat:#}");
    assert!(
        text(chat, "gen_ai.response.finish_reasons").contains("tool_calls"),
        "{chat:#}"
    );
    assert!(text(top[4], "gen_ai.response.finish_reasons").contains("stop"));

    let task = top[1];
    assert_eq!(text(task, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(text(task, "gen_ai.tool.name"), "task");
    assert_eq!(text(task, "gen_ai.tool.call.id"), "t1");
    assert_eq!(text(task, "lc_agent.tool.status"), "ok");
    let sub = tree.kids(task["context"]["span_id"].as_str().unwrap())[0];
    assert_eq!(text(sub, "gen_ai.agent.name"), "subagent:general-purpose");
    assert_eq!(text(sub, "gen_ai.conversation.id"), session);
    assert_eq!(text(sub, "user.id"), "alice");
    let inner = tree.kids(sub["context"]["span_id"].as_str().unwrap());
    assert_eq!(text(inner[1], "gen_ai.tool.name"), "write_file");
    assert_eq!(text(inner[1], "gen_ai.tool.call.id"), "w1");
    // The sub-agent's tokens count in its span and in the run's.
    assert!(tokens(sub, "gen_ai.usage.input_tokens") > 0);
    assert!(
        tokens(root, "gen_ai.usage.input_tokens")
            > tokens(sub, "gen_ai.usage.input_tokens") + tokens(chat, "gen_ai.usage.input_tokens")
    );

    let failed = top[3];
    assert_eq!(text(failed, "gen_ai.tool.name"), "read_file");
    assert_eq!(text(failed, "lc_agent.tool.status"), "error");
    assert_eq!(failed["status_code"], "ERROR", "{failed:#}");
    assert_ne!(task["status_code"], "ERROR");

    // Content is off by default: no prompt, answer or tool argument.
    for span in tree.by_id.values() {
        let attributes = span["attributes"].to_string();
        assert!(!attributes.contains("pelican"), "{span:#}");
        assert!(!attributes.contains("from the sub-agent"), "{span:#}");
        assert!(attr(span, "gen_ai.input.messages").is_null(), "{span:#}");
    }
}

#[needs(phoenix)]
#[test]
fn over_grpc_with_content_the_prompts_and_tool_calls_are_in_the_spans() {
    let phoenix = phoenix().expect("Phoenix starts");
    let dir = tempfile::tempdir().unwrap();
    let script = json!([
        {"tool_calls": [{"id": "l1", "name": "ls", "arguments": {"path": "/"}}]},
        {"content": "Nothing here, heron."}
    ]);
    let session = run(
        dir.path(),
        "List the files, codeword osprey",
        script,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix.grpc_endpoint()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc".to_string()),
            (
                "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
                "true".to_string(),
            ),
        ],
    );
    let tree = Tree::new(phoenix.trace_of_session(&session, 4));
    let mut outline = String::new();
    tree.outline(&tree.root, 0, &mut outline);
    assert_eq!(
        outline,
        "invoke_agent lc-agent\n  chat main\n  execute_tool ls\n  chat main\n"
    );
    let top = tree.kids(&tree.root);
    assert!(
        text(top[0], "gen_ai.input.messages").contains("codeword osprey"),
        "{:#}",
        top[0]
    );
    assert!(text(top[2], "gen_ai.output.messages").contains("Nothing here, heron."));
    assert!(text(top[1], "gen_ai.tool.call.arguments").contains("\"path\""));
    assert!(
        !text(top[1], "gen_ai.tool.call.result").is_empty(),
        "{:#}",
        top[1]
    );
}

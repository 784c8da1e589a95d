//! A blueprint's models through the real binary: every `[models.<name>]`
//! is its own model, asked at its own server, and `[models.main]` names
//! the main model without `OPENAI_MODEL`; a sub-agent's own model, tools
//! allow-list and approval rules (`[[subagents]]`) hold in `lc-agent run`.

use std::path::Path;
use std::process::Output;

use crate::common;
use crate::model_server::{ModelServer, Reply};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `lc-agent <args>` with no model variable at all: the blueprint says
/// everything.
fn run(dir: &Path, args: &[&str], stdin: &str) -> Output {
    let mut command = lc_agent_test_support::own_binary::offline(&common::own_binary(dir));
    command
        .args(args)
        .arg("--sessions")
        .arg(dir.join("sessions"))
        .env_remove("RUST_LOG")
        .env("LC_AGENT_HOME", dir.join("home"));
    common::with_stdin(&mut command, stdin)
}

fn model_of(request: &str) -> String {
    let body: serde_json::Value = serde_json::from_str(request).unwrap();
    body["model"].as_str().unwrap_or_default().to_string()
}

#[test]
fn each_blueprint_model_is_asked_at_its_own_server() {
    let dir = tempfile::tempdir().unwrap();
    let main = ModelServer::start(vec![Reply::answer("The sea is wide.", "stop")]);
    let small = ModelServer::start(vec![
        Reply::answer("The wide sea", "stop"),
        Reply::answer("The person asked about the sea; it is wide.", "stop"),
    ]);
    let agent = dir.path().join("agent.toml");
    std::fs::write(
        &agent,
        format!(
            "[models.main]\nmodel = \"main-model\"\nbase_url = \"{}\"\n\n\
             [models.small]\nmodel = \"small-model\"\nbase_url = \"{}\"\n\n\
             [routes]\ntitle = \"small\"\nsummary = \"small\"\n",
            main.base_url, small.base_url
        ),
    )
    .unwrap();
    let out = run(
        dir.path(),
        &["chat", "--agent", agent.to_str().unwrap()],
        "tell me about the sea\n/compact\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let asked_main = main.chat_requests();
    let asked_small = small.chat_requests();
    assert_eq!(asked_main.len(), 1, "the turn only: {asked_main:?}");
    assert_eq!(model_of(&asked_main[0]), "main-model");
    assert!(asked_main[0].contains("tell me about the sea"));
    assert_eq!(asked_small.len(), 2, "title and summary: {asked_small:?}");
    assert!(asked_small
        .iter()
        .all(|request| model_of(request) == "small-model"));
    assert!(
        asked_small[0].contains("You name conversations"),
        "{}",
        asked_small[0]
    );
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("summarized by small;"),
        "{stdout}\n{}",
        text(&out.stderr)
    );
}

/// The id in a `session <id> saved` line.
fn saved_id(out: &Output) -> String {
    let stderr = text(&out.stderr);
    stderr
        .lines()
        .find_map(|l| l.rsplit("session ").next()?.strip_suffix(" saved"))
        .unwrap_or_else(|| panic!("no session id in {stderr}"))
        .to_string()
}

fn exported(dir: &Path, id: &str) -> serde_json::Value {
    let out = std::process::Command::new(common::own_binary(dir))
        .args(["sessions", "--sessions"])
        .arg(dir.join("sessions"))
        .args(["export", id])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn summaries_in(session: &serde_json::Value) -> usize {
    session["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["__node_type__"] == "summary")
        .count()
}

#[test]
fn a_session_made_without_summaries_stays_without_them_when_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let first = common::lc_agent(
        dir.path(),
        &["run", "hello", "--no-summaries"],
        r#"[{"content": "Hi."}]"#,
        &[] as &[&str],
        "",
    );
    assert!(first.status.success(), "{}", text(&first.stderr));
    let id = saved_id(&first);
    assert!(exported(dir.path(), &id)["metadata"]["agent_spec"]
        .get("summarization")
        .is_none());
    let again = common::lc_agent(
        dir.path(),
        &["chat", "--session", &id],
        r#"[{"content": "Again."}]"#,
        &[] as &[&str],
        "once more\n",
    );
    assert!(again.status.success(), "{}", text(&again.stderr));
    let stderr = text(&again.stderr);
    assert!(!stderr.contains("summaries"), "{stderr}");
    let spec = &exported(dir.path(), &id)["metadata"]["agent_spec"];
    assert!(spec.get("summarization").is_none(), "{spec}");
}

#[test]
fn summaries_come_near_the_context_window_not_after_a_number_of_turns() {
    let dir = tempfile::tempdir().unwrap();
    // Ten short turns on a large window: no summary (each answer is the
    // turn's; a summary request would take one and shift them).
    let script: Vec<serde_json::Value> = (0..10)
        .map(|n| serde_json::json!({"content": format!("answer {n}")}))
        .collect();
    let stdin: String = (0..10).map(|n| format!("question {n}\n")).collect();
    let out = common::lc_agent(
        dir.path(),
        &["chat", "--context-window", "200000"],
        &serde_json::Value::from(script).to_string(),
        &[] as &[&str],
        &stdin,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("answer 9"),
        "{}",
        text(&out.stdout)
    );
    let id = saved_id(&out);
    assert_eq!(summaries_in(&exported(dir.path(), &id)), 0);

    // Long turns on a window they soon fill: a summary before the request
    // that would overflow it.
    let long = "the harbour lights flicker over the water tonight ".repeat(200);
    let script = serde_json::json!([
        {"content": "first"},
        {"content": "second"},
        {"content": "The person sent long texts."},
        {"content": "third"},
        {"content": "fourth"},
        {"content": "fifth"},
    ]);
    let stdin: String = (0..4).map(|n| format!("{n} {long}\n")).collect();
    let out = common::lc_agent(
        dir.path(),
        &["chat", "--context-window", "9000"],
        &script.to_string(),
        &[] as &[&str],
        &stdin,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let session = exported(dir.path(), &saved_id(&out));
    let summary = session["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["__node_type__"] == "summary")
        .unwrap_or_else(|| panic!("no summary: {}", text(&out.stderr)));
    assert_eq!(summary["metadata"]["trigger"], "fraction", "{summary}");
}

#[test]
fn a_summary_writes_nothing_into_the_users_directory() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let out = common::lc_agent(
        dir.path(),
        &["chat", "--root", work.to_str().unwrap()],
        r#"[{"content": "Hi."}, {"content": "The person said hello."}]"#,
        &[] as &[&str],
        "hello\n/compact\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("compacted:"),
        "{}",
        text(&out.stdout)
    );
    let left: Vec<_> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(left.is_empty(), "the workspace holds {left:?}");
    // The history is the session's own.
    let session = exported(dir.path(), &saved_id(&out));
    let files = session["files"].as_object().unwrap();
    assert!(
        files
            .keys()
            .any(|path| path.starts_with("/conversation_history/")),
        "{files:?}"
    );
}

/// The tool names a chat request offered, sorted.
fn offered(request: &str) -> Vec<String> {
    let body: serde_json::Value = serde_json::from_str(request).unwrap();
    let mut names: Vec<String> = body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A blueprint with `main` and `helper` at their own servers, and the
/// `reader` sub-agent on `helper` with `extra` lines.
fn reader_blueprint(dir: &Path, main: &ModelServer, helper: &ModelServer, extra: &str) -> String {
    let agent = dir.join("agent.toml");
    std::fs::write(
        &agent,
        format!(
            "[models.main]\nmodel = \"main-model\"\nbase_url = \"{}\"\n\n\
             [models.helper]\nmodel = \"helper-model\"\nbase_url = \"{}\"\n\n\
             [[subagents]]\nname = \"reader\"\ndescription = \"Reads files\"\n\
             system_prompt = \"You only read files.\"\nmodel = \"helper\"\n{extra}",
            main.base_url, helper.base_url
        ),
    )
    .unwrap();
    agent.to_str().unwrap().to_string()
}

fn reader_task() -> Reply {
    Reply::call(
        "t1",
        "task",
        serde_json::json!({"description": "Count the notes.", "subagent_type": "reader"}),
    )
}

fn write_call() -> Reply {
    Reply::call(
        "w1",
        "write_file",
        serde_json::json!({"file_path": "/out.md", "content": "written"}),
    )
}

#[test]
fn a_sub_agent_runs_on_its_own_model_with_only_its_tools() {
    let dir = tempfile::tempdir().unwrap();
    let main = ModelServer::start(vec![
        reader_task(),
        Reply::answer("The reader may not write.", "stop"),
    ]);
    let helper = ModelServer::start(vec![
        write_call(),
        Reply::answer("I could only read.", "stop"),
    ]);
    let agent = reader_blueprint(
        dir.path(),
        &main,
        &helper,
        "tools = [\"read_file\", \"grep\"]\n",
    );
    let out = run(
        dir.path(),
        &["run", "Ask the reader.", "--agent", &agent],
        "",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).lines().last(),
        Some("The reader may not write.")
    );
    // The sub-agent's two turns went to its own server, with its tools only.
    let asked_helper = helper.chat_requests();
    assert_eq!(asked_helper.len(), 2, "{asked_helper:?}");
    for request in &asked_helper {
        assert_eq!(model_of(request), "helper-model");
        assert_eq!(offered(request), ["grep", "read_file"]);
        assert!(request.contains("You only read files."));
    }
    // Its `write_file` call was refused, and it read why.
    assert!(
        asked_helper[1].contains("may not call `write_file`; its tools are: grep, read_file"),
        "{}",
        asked_helper[1]
    );
    // The main server got the agent's turns only, with every tool.
    let asked_main = main.chat_requests();
    assert!(asked_main.len() >= 2, "{asked_main:?}");
    for request in &asked_main {
        assert_eq!(model_of(request), "main-model");
        assert!(!request.contains("You only read files."), "{request}");
    }
    assert!(offered(&asked_main[0]).contains(&"write_file".to_string()));
}

#[test]
fn a_sub_agents_own_approval_is_asked_and_a_rejection_holds() {
    let dir = tempfile::tempdir().unwrap();
    let main = ModelServer::start(vec![
        reader_task(),
        Reply::answer("The reader was stopped.", "stop"),
    ]);
    let helper = ModelServer::start(vec![
        write_call(),
        Reply::answer("I was not allowed.", "stop"),
    ]);
    let agent = reader_blueprint(
        dir.path(),
        &main,
        &helper,
        "interrupt_on = { write_file = [\"approve\", \"reject\"] }\n",
    );
    let out = run(
        dir.path(),
        &["run", "Ask the reader.", "--agent", &agent],
        "n\n",
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stderr.matches("approve write_file").count(),
        1,
        "asked once: {stderr}"
    );
    let asked_helper = helper.chat_requests();
    assert_eq!(asked_helper.len(), 2, "{asked_helper:?}");
    assert!(
        asked_helper[1].contains("the user rejected this call"),
        "{}",
        asked_helper[1]
    );
    assert_eq!(
        text(&out.stdout).lines().last(),
        Some("The reader was stopped.")
    );
}

#[test]
fn a_sub_agent_listing_a_tool_the_agent_lacks_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let main = ModelServer::start(vec![]);
    let helper = ModelServer::start(vec![]);
    let agent = reader_blueprint(
        dir.path(),
        &main,
        &helper,
        "tools = [\"read_file\", \"reed_file\"]\n",
    );
    let out = run(
        dir.path(),
        &["run", "Ask the reader.", "--agent", &agent],
        "",
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("sub-agent `reader`: tools: the agent has no tool `reed_file`"),
        "{stderr}"
    );
    assert!(main.chat_requests().is_empty() && helper.chat_requests().is_empty());
}

/// A model server that takes connections and answers none of them (an
/// answer slower than any timeout a test waits for); its base URL.
fn silent_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    base_url
}

#[test]
fn the_blueprints_model_timeout_bounds_a_request() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent.toml");
    std::fs::write(
        &agent,
        format!(
            "[models.main]\nmodel = \"slow-model\"\nbase_url = \"{}\"\ntimeout_secs = 1\n",
            silent_server()
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = run(
        dir.path(),
        &["run", "Hello.", "--agent", agent.to_str().unwrap()],
        "",
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("timed out after 1s"), "{stderr}");
    // Four tries of about a second each (and the window probes), not 120 s each.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "{:?}: {stderr}",
        started.elapsed()
    );
}

//! `lc-agent exec` as scripts and CI run it: the real binary, a scripted
//! model (offline), no terminal, nothing asked. The `--json` stream is
//! snapshotted (ids and token counts masked) and read by an independent
//! JSON-lines reader in Python. `--output-schema`: `exec_schema.rs`.

use std::path::Path;
use std::process::Output;

use lc_agent_test_support::needs;
use serde_json::{json, Value};

use crate::common;

/// `lc-agent exec <args> --script S --sessions DIR <extra>` with this
/// stdin.
pub(crate) fn exec(
    dir: &Path,
    args: &[&str],
    script: Value,
    extra: &[&str],
    stdin: &str,
) -> Output {
    let mut command = vec!["exec"];
    command.extend_from_slice(args);
    common::lc_agent(dir, &command, &script.to_string(), extra, stdin)
}

/// The stream on stdout: every line one JSON value (the test fails on
/// anything else).
pub(crate) fn events(out: &Output) -> Vec<Value> {
    let stdout = std::str::from_utf8(&out.stdout).expect("stdout is UTF-8");
    stdout
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line:?}\nstdout: {stdout}"))
        })
        .collect()
}

pub(crate) fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            let t = e["type"].as_str().unwrap().to_string();
            match e["item"]["type"].as_str() {
                Some(item) => format!("{t} {item}"),
                None => t,
            }
        })
        .collect()
}

pub(crate) fn thread_id(events: &[Value]) -> String {
    assert_eq!(events[0]["type"], "thread.started", "{events:?}");
    events[0]["thread_id"].as_str().unwrap().to_string()
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn workdir(dir: &Path) -> String {
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    work.display().to_string()
}

/// A plan, a message with a file write, a command, the plan done, the
/// answer.
fn full_script() -> Value {
    json!([
        {"tool_calls": [{"id": "c1", "name": "write_todos", "arguments":
            {"todos": [{"content": "Write the greeting", "status": "in_progress"}]}}]},
        {"content": "Writing the greeting.", "tool_calls": [{"id": "c2", "name": "write_file",
            "arguments": {"file_path": "/hello.txt", "content": "hello\n"}}]},
        {"tool_calls": [{"id": "c3", "name": "execute", "arguments": {"command": "cat hello.txt; exit 3"}}]},
        {"tool_calls": [{"id": "c4", "name": "write_todos", "arguments":
            {"todos": [{"content": "Write the greeting", "status": "completed"}]}}]},
        {"content": "Wrote /hello.txt."}
    ])
}

/// The stream with what changes from run to run masked: ids (uuids) and
/// token counts.
fn masked(stdout: &str) -> String {
    let uuid =
        regex::Regex::new("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap();
    let tokens =
        regex::Regex::new(r#""(input_tokens|cached_input_tokens|output_tokens)":\d+"#).unwrap();
    let text = uuid.replace_all(stdout, "[id]");
    tokens.replace_all(&text, "\"$1\":\"[n]\"").into_owned()
}

/// The whole scripted run ([`full_script`]) with `--json` in a work
/// folder under `dir`, approvals given; the output and the folder.
fn full_run(dir: &Path) -> (Output, String) {
    let work = workdir(dir);
    let out = exec(
        dir,
        &["Write the greeting file.", "--json"],
        full_script(),
        &["--root", &work, "--shell", "--yes"],
        "",
    );
    (out, work)
}

#[test]
fn the_json_stream_of_a_run_is_stable() {
    let dir = tempfile::tempdir().unwrap();
    let (out, work) = full_run(dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let events = events(&out);
    // Nothing but events on stdout; the notes on stderr.
    assert!(stderr(&out).contains("saved"), "{}", stderr(&out));
    assert_eq!(
        types(&events).last().map(String::as_str),
        Some("turn.completed")
    );
    let completed = events.last().unwrap();
    assert!(
        completed["usage"]["input_tokens"].as_u64().unwrap() > 0,
        "{completed}"
    );
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    insta::with_settings!({snapshot_path => "../../../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("exec_json_stream", masked(&stdout));
    });
    assert_eq!(
        std::fs::read_to_string(Path::new(&work).join("hello.txt")).unwrap(),
        "hello\n"
    );
}

#[test]
#[needs(python)]
fn an_independent_python_reader_reads_the_stream() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _work) = full_run(dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    // A reader that knows only the README: one JSON object per line, a
    // `type` on each, items with an id and a type; it reports what it saw.
    let reader = r#"
import json, sys
seen, items, answer, usage = [], {}, None, None
for raw in sys.stdin.buffer:
    event = json.loads(raw.decode("utf-8"))
    kind = event["type"]
    seen.append(kind)
    if kind.startswith("item."):
        item = event["item"]
        items.setdefault(item["id"], []).append((kind, item["type"]))
        if kind == "item.completed" and item["type"] == "agent_message":
            answer = item["text"]
    if kind == "turn.completed":
        usage = sorted(event["usage"])
print(json.dumps({"first": seen[0], "last": seen[-1], "turns": seen.count("turn.started"),
                  "items": len(items), "answer": answer, "usage": usage,
                  "commands": [v for v in items.values() if v[-1][1] == "command_execution"]}))
"#;
    let mut python = std::process::Command::new("python3");
    python.args(["-c", reader]);
    let stdout = std::str::from_utf8(&out.stdout).unwrap();
    let read = common::with_stdin(&mut python, stdout);
    assert!(
        read.status.success(),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );
    let report: Value = serde_json::from_slice(&read.stdout).unwrap();
    assert_eq!(report["first"], "thread.started");
    assert_eq!(report["last"], "turn.completed");
    assert_eq!(report["turns"], 1);
    assert_eq!(report["answer"], "Wrote /hello.txt.");
    assert_eq!(
        report["usage"],
        json!(["cached_input_tokens", "input_tokens", "output_tokens"])
    );
    assert_eq!(
        report["commands"],
        json!([[
            ["item.started", "command_execution"],
            ["item.completed", "command_execution"]
        ]])
    );
}

#[test]
fn without_json_the_answer_alone_is_on_stdout_and_the_prompt_may_come_on_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let out = exec(
        dir.path(),
        &[],
        json!([{"content": "The sea is wide."}]),
        &[],
        "Say something about the sea.\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "The sea is wide.\n");
    // `-` reads stdin too.
    let out = exec(
        dir.path(),
        &["-", "--json"],
        json!([{"content": "Calm."}]),
        &[],
        "And now?",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let events = events(&out);
    assert!(
        events
            .iter()
            .any(|e| e["item"]["text"] == "Calm." && e["type"] == "item.completed"),
        "{events:?}"
    );
    // No prompt at all is bad usage.
    let out = exec(dir.path(), &[], json!([]), &[], "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no prompt"), "{}", stderr(&out));
}

#[test]
fn resume_continues_the_session_and_fork_continues_a_copy() {
    let dir = tempfile::tempdir().unwrap();
    let out = exec(
        dir.path(),
        &["Remember the word: heron.", "--json"],
        json!([{"content": "Noted: heron."}]),
        &[],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let id = thread_id(&events(&out));
    let saved = |id: &str| common::saved_document(&dir.path().join("sessions"), id);
    let before = saved(&id);

    // Fork: a new session with the history; the original is untouched.
    let out = exec(
        dir.path(),
        &["resume", &id[..8], "Which word?", "--fork", "--json"],
        json!([{"content": "The word was heron (fork)."}]),
        &[],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let events_fork = events(&out);
    let fork = thread_id(&events_fork);
    assert_ne!(fork, id);
    assert_eq!(events_fork[0]["forked_from"], json!(id));
    assert_eq!(saved(&id), before, "the original is left as it was");
    let forked = saved(&fork);
    assert!(
        forked.contains("Remember the word: heron.") && forked.contains("(fork)"),
        "{forked}"
    );

    // Resume: the same session goes on.
    let out = exec(
        dir.path(),
        &["resume", &id, "Which word?", "--json"],
        json!([{"content": "The word was heron."}]),
        &[],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let events = events(&out);
    assert_eq!(thread_id(&events), id);
    assert!(events[0].get("forked_from").is_none());
    let after = saved(&id);
    assert!(
        after.contains("Noted: heron.") && after.contains("The word was heron."),
        "{after}"
    );
    // The model read the first turn.
    assert!(!after.contains("(fork)"), "{after}");

    // --fork without resume is bad usage.
    let out = exec(dir.path(), &["x", "--fork"], json!([]), &[], "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn an_approval_nobody_can_give_ends_the_run_with_exit_code_3() {
    let dir = tempfile::tempdir().unwrap();
    let work = workdir(dir.path());
    let script = json!([
        {"tool_calls": [{"id": "c1", "name": "execute", "arguments": {"command": "echo ran > ran.txt"}}]},
        {"content": "Done."}
    ]);
    // stdin has a `y`: exec never reads approvals from it.
    let out = exec(
        dir.path(),
        &["Run it.", "--json"],
        script.clone(),
        &["--root", &work, "--shell"],
        "y\n",
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let events = events(&out);
    let seen = types(&events);
    assert_eq!(
        seen,
        [
            "thread.started",
            "turn.started",
            "item.started approval_request",
            "item.completed approval_request",
            "turn.failed"
        ],
        "{events:?}"
    );
    assert_eq!(events[3]["item"]["status"], "unanswered");
    assert_eq!(events[3]["item"]["tool"], "execute");
    assert_eq!(
        events[3]["item"]["arguments"]["command"],
        "echo ran > ran.txt"
    );
    let message = events[4]["error"]["message"].as_str().unwrap();
    assert!(message.contains("needs an approval"), "{message}");
    assert!(!Path::new(&work).join("ran.txt").exists());

    // The session keeps the call: resumed with --yes, it runs.
    let id = thread_id(&events);
    let out = exec(
        dir.path(),
        &["resume", &id, "--json"],
        json!([{"content": "Done."}]),
        &["--root", &work, "--shell", "--yes"],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let seen = types(&crate::exec::events(&out));
    assert!(
        seen.contains(&"item.completed approval_request".to_string())
            && seen.contains(&"item.completed command_execution".to_string()),
        "{seen:?}"
    );
    assert_eq!(
        std::fs::read_to_string(Path::new(&work).join("ran.txt")).unwrap(),
        "ran\n"
    );
}

#[test]
fn binary_tool_output_keeps_every_line_valid_json() {
    let dir = tempfile::tempdir().unwrap();
    let work = workdir(dir.path());
    let script = json!([
        {"tool_calls": [{"id": "c1", "name": "execute",
            "arguments": {"command": "printf 'a\\377\\376\\000\\001\\033[31m\\342\\200\\250b\\r\\n'; head -c 256 /dev/urandom"}}]},
        {"content": "Printed bytes."}
    ]);
    let out = exec(
        dir.path(),
        &["Print bytes.", "--json"],
        script,
        &["--root", &work, "--shell", "--yes"],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let events = events(&out);
    let command = events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "command_execution")
        .unwrap();
    let output = command["item"]["aggregated_output"].as_str().unwrap();
    assert!(
        output.starts_with("a\u{fffd}\u{fffd}\u{0}\u{1}\u{1b}[31m\u{2028}b"),
        "{output:?}"
    );
    // Each line is whole: the line separator inside is escaped.
    let stdout = std::str::from_utf8(&out.stdout).unwrap();
    assert!(!stdout.contains('\u{2028}'), "{stdout}");
    assert_eq!(stdout.lines().count(), events.len());
}

/// Serves one streamed chat answer whose bytes are not all UTF-8 (a
/// character split across two events, a stray 0xFF), then 500s: the base
/// URL.
fn invalid_utf8_model() -> String {
    use lc_agent_test_support::loopback::{self, Then};
    use std::sync::atomic::{AtomicBool, Ordering};
    let answered = AtomicBool::new(false);
    let address = loopback::serve(move |request, out| {
        if !request.path.contains("/chat/completions") || answered.swap(true, Ordering::SeqCst) {
            return loopback::respond(out, 404, "text/plain", b"", Then::Close);
        }
        let chunk = |content: &[u8], finish: &str| {
            let mut event = br#"data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":""#.to_vec();
            event.extend_from_slice(content);
            event.extend_from_slice(format!(r#""}},"finish_reason":{finish}}}]}}"#).as_bytes());
            event.extend_from_slice(b"\n\n");
            event
        };
        let mut body = Vec::new();
        body.extend(chunk(b"caf\xc3", "null"));
        body.extend(chunk(b"\xa9 \xff end", "null"));
        body.extend(chunk(b"", "\"stop\""));
        body.extend_from_slice(b"data: [DONE]\n\n");
        loopback::respond(out, 200, "text/event-stream", &body, Then::Close)
    });
    format!("http://{address}/v1")
}

#[test]
fn a_model_that_streams_invalid_utf8_keeps_every_line_valid_json() {
    let dir = tempfile::tempdir().unwrap();
    let base = invalid_utf8_model();
    let mut command = lc_agent_test_support::own_binary::offline(&common::own_binary(dir.path()));
    command
        .args(["exec", "Say it.", "--json", "--model", "m", "--sessions"])
        .arg(dir.path().join("sessions"))
        .env("OPENAI_BASE_URL", &base)
        .env("OPENAI_API_KEY", "test")
        .env("LC_AGENT_CONTEXT_WINDOW", "100000")
        .env("LC_AGENT_HOME", dir.path().join("home"));
    let out = common::with_stdin(&mut command, "");
    // However the answer ends (the text decoded, or the call failed),
    // stdout is whole JSON lines and the turn says how it ended.
    let events = events(&out);
    let seen = types(&events);
    assert_eq!(seen.first().map(String::as_str), Some("thread.started"));
    let last = seen.last().unwrap();
    assert!(
        last == "turn.completed" || last == "turn.failed",
        "{seen:?}\n{}",
        stderr(&out)
    );
    assert_eq!(out.status.success(), last == "turn.completed");
    if let Some(message) = events.iter().find(|e| e["item"]["type"] == "agent_message") {
        let text = message["item"]["text"].as_str().unwrap();
        assert!(text.ends_with(" end"), "{text:?}");
    }
}

/// A loopback page server for `--fetch-url`: every request gets the same
/// small HTML page. Its port.
fn page_server() -> u16 {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let page = "<h1>Harbour notes</h1><p>High water at <b>noon</b>.</p>";
            let _ = (&stream).write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{page}",
                    page.len()
                )
                .as_bytes(),
            );
        }
    });
    port
}

#[test]
fn fetch_url_is_offered_only_with_the_flag_and_reads_the_page_as_markdown() {
    let dir = tempfile::tempdir().unwrap();
    let port = page_server();
    let script = json!([
        {"tool_calls": [{"id": "f1", "name": "fetch_url",
            "arguments": {"url": format!("http://127.0.0.1:{port}/notes")}}]},
        {"content": "High water is at noon."}
    ]);
    let results = |out: &Output| -> Vec<Value> {
        events(out)
            .into_iter()
            .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "tool_call")
            .map(|e| e["item"].clone())
            .collect()
    };

    let out = exec(
        dir.path(),
        &["When is high water?", "--json", "--fetch-url", "127.0.0.1"],
        script.clone(),
        &[],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let items = results(&out);
    assert_eq!(items.len(), 1, "{items:?}");
    let result = items[0]["result"].as_str().unwrap();
    assert!(result.contains("# Harbour notes"), "{result}");
    assert!(result.contains("**noon**"), "{result}");
    // The session's blueprint keeps the allow-list (a resume has the tool).
    let id = thread_id(&events(&out));
    let saved: Value =
        serde_json::from_str(&common::saved_document(&dir.path().join("sessions"), &id)).unwrap();
    assert_eq!(
        saved["metadata"]["agent_spec"]["fetch_url"]["allow"],
        json!(["127.0.0.1"]),
        "{}",
        saved["metadata"]
    );

    // Without the flag there is no such tool.
    let out = exec(
        dir.path(),
        &["When is high water?", "--json"],
        script,
        &[],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let items = results(&out);
    assert!(
        items[0]["result"]
            .as_str()
            .unwrap()
            .contains("Unknown tool `fetch_url`"),
        "{items:?}"
    );
}

/// Issue 49 item 5: `exec ""` is bad usage (exit 2), not a prompt sent
/// to the model; no session is made.
#[test]
fn an_empty_prompt_is_bad_usage_not_a_message() {
    let dir = tempfile::tempdir().unwrap();
    for prompt in ["", "   "] {
        let out = exec(
            dir.path(),
            &[prompt],
            json!([{"content": "never"}]),
            &[],
            "",
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("the prompt is empty"),
            "{}",
            stderr(&out)
        );
    }
    assert!(
        !dir.path().join("sessions").exists()
            || common::saved_documents(&dir.path().join("sessions")).is_empty()
    );
}

/// Issue 49 item 5: the session `thread.started` names is kept even when
/// the model never answered (its server refused), so the id the stream
/// gave out is one `exec resume` finds.
#[test]
fn the_session_thread_started_names_is_kept_when_the_model_fails() {
    use crate::model_server::{ModelServer, Reply};
    let dir = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![Reply::error(400)]);
    let mut command = common::offline();
    command
        .args(["exec", "--json", "Hello"])
        .arg("--sessions")
        .arg(dir.path().join("sessions"))
        .env("OPENAI_BASE_URL", &server.base_url)
        .env("OPENAI_MODEL", "test-model")
        .env("LC_AGENT_HOME", dir.path().join("home"));
    let out = common::with_stdin(&mut command, "");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let events = events(&out);
    let id = thread_id(&events);
    assert!(
        !stderr(&out).contains("no session saved"),
        "{}",
        stderr(&out)
    );
    let saved = common::saved_document(&dir.path().join("sessions"), &id);
    assert!(saved.contains("Hello"), "{saved}");
}

/// Issue 49 item 5: a sub-agent's tool calls are items of `exec --json`
/// too (started and completed before the `task` call's result: the
/// sub-agent runs before its call's node); its answer stays the `task`
/// call's result.
#[test]
fn a_sub_agents_tool_calls_are_items_of_the_stream() {
    let dir = tempfile::tempdir().unwrap();
    let out = exec(
        dir.path(),
        &["Delegate it.", "--json"],
        json!([
            {"tool_calls": [{"id": "t1", "name": "task", "arguments":
                {"description": "Write a.md", "subagent_type": "general-purpose"}}]},
            {"tool_calls": [{"id": "w1", "name": "write_file", "arguments":
                {"file_path": "/a.md", "content": "a"}}]},
            {"content": "Written."},
            {"content": "Done."}
        ]),
        &[],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let events = events(&out);
    let position = |kind: &str, call: &str| {
        events
            .iter()
            .position(|e| e["type"] == kind && e["item"]["call_id"] == call)
            .unwrap_or_else(|| panic!("no {kind} of {call}: {events:#?}"))
    };
    let write_started = position("item.started", "w1");
    let write_done = position("item.completed", "w1");
    let task_done = position("item.completed", "t1");
    assert!(
        write_started < write_done && write_done < task_done,
        "{events:#?}"
    );
    assert_eq!(events[task_done]["item"]["result"], "Written.");
    assert_eq!(events[write_done]["item"]["tool"], "write_file");
    assert_eq!(events[write_done]["item"]["status"], "completed");
    // The sub-agent's answer is not an answer of the session.
    let answers: Vec<&Value> = events
        .iter()
        .filter(|e| e["item"]["type"] == "agent_message")
        .collect();
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0]["item"]["text"], "Done.");
}

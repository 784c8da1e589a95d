//! What the CLI says to a person, piped (scripts, CI): library warnings on
//! stderr, retries reported, answers cut off or empty said with what to
//! do next, slash commands kept from the model, titled sessions, a closed
//! stdout being a quiet success. The model is the real binary's
//! OpenAI-compatible client against a tiny server on loopback
//! (`model_server.rs`), or a scripted model.

use crate::common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::model_server::{ModelServer, Reply};

/// Runs `lc-agent <args> --sessions <dir>/sessions` against `server`
/// (offline otherwise), with this stdin.
fn with_server(dir: &Path, server: &ModelServer, args: &[&str], stdin: &str) -> Output {
    let mut command = lc_agent_test_support::own_binary::offline(&common::own_binary(dir));
    command
        .args(args)
        .arg("--sessions")
        .arg(dir.join("sessions"))
        .env("OPENAI_BASE_URL", &server.base_url)
        .env("OPENAI_MODEL", "test-model")
        .env_remove("RUST_LOG")
        .env("LC_AGENT_HOME", dir.join("home"));
    common::with_stdin(&mut command, stdin)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn sessions_list(dir: &Path) -> Output {
    Command::new(common::own_binary(dir))
        .args(["sessions", "--sessions"])
        .arg(dir.join("sessions"))
        .arg("list")
        .output()
        .unwrap()
}

#[test]
fn a_malformed_skill_is_a_warning_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills");
    std::fs::create_dir_all(skills.join("broken")).unwrap();
    std::fs::write(skills.join("broken/SKILL.md"), "no front matter here\n").unwrap();
    let out = common::lc_agent(
        dir.path(),
        &["run", "Hello."],
        r#"[{"content": "Hi."}]"#,
        &["--skills", skills.to_str().unwrap()],
        "",
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("warning: skipping a skill"), "{stderr}");
    assert!(stderr.contains("SKILL.md"), "names the file: {stderr}");
    // -q keeps warnings off.
    let quiet = common::lc_agent(
        dir.path(),
        &["run", "Hello.", "-q"],
        r#"[{"content": "Hi."}]"#,
        &["--skills", skills.to_str().unwrap()],
        "",
    );
    assert!(
        !text(&quiet.stderr).contains("warning:"),
        "{}",
        text(&quiet.stderr)
    );
}

#[test]
fn a_retry_is_reported_with_status_wait_and_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![Reply::error(429), Reply::answer("Fine.", "stop")]);
    let out = with_server(dir.path(), &server, &["run", "Hello."], "");
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(text(&out.stdout), "Fine.\n");
    let line = stderr
        .lines()
        .find(|l| l.starts_with("warning: model request failed; retrying"))
        .unwrap_or_else(|| panic!("no retry line: {stderr}"));
    assert!(line.contains("attempt 1 of"), "{line}");
    assert!(line.contains("wait 0.0 s"), "{line}");
    assert!(line.contains("429"), "{line}");
    assert_eq!(server.chat_requests().len(), 2);
}

#[test]
fn a_cut_off_answer_says_continue_and_continue_asks_the_model_to_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        Reply::answer("The first half", "length"),
        Reply::answer(" and the rest.", "stop"),
    ]);
    let out = with_server(dir.path(), &server, &["chat"], "Tell me.\n/continue\n");
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: the answer was cut off") && stderr.contains("/continue"),
        "{stderr}"
    );
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert!(requests[1].contains("Continue exactly where it stopped"));
    assert_eq!(text(&out.stdout), "The first half\n and the rest.\n");
}

#[test]
fn an_empty_final_answer_is_a_warning_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::lc_agent(
        dir.path(),
        &["run", "Hello."],
        r#"[{"content": ""}]"#,
        &[] as &[&str],
        "",
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("warning: the model answered with nothing"),
        "{stderr}"
    );
    assert!(
        stderr.contains("error: the model's answer was empty"),
        "{stderr}"
    );
}

#[test]
fn slash_commands_never_reach_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![Reply::answer("Hello there.", "stop")]);
    let out = with_server(
        dir.path(),
        &server,
        &["chat"],
        "/help\n/tokens\n/nonsense\nHi!\n/tokens\n/exit\n",
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("/undo"), "{stdout}");
    assert!(stdout.contains("unknown command /nonsense"), "{stdout}");
    assert!(stdout.contains("session: no token counts"), "{stdout}");
    assert!(stdout.contains("session: 1,200 in · 34 out"), "{stdout}");
    assert!(stdout.contains("Hello there."), "{stdout}");
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 1, "only the message: {requests:?}");
    assert!(!requests[0].contains("/help"));
}

#[test]
fn compact_summarizes_with_one_request_and_the_next_turn_sends_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let story = "Once upon a time a long story went on and on. ".repeat(40);
    let server = ModelServer::start(vec![
        Reply::answer(&story, "stop"),
        Reply::answer("The user asked for a long story and got one.", "stop"),
        Reply::answer("The end.", "stop"),
    ]);
    let question = "Tell me a long story, please, with many details in it. ".repeat(10);
    let out = with_server(
        dir.path(),
        &server,
        &["chat"],
        &format!("{question}\n/compact\nAnd how did it end?\n/exit\n"),
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 3, "turn, summary, turn: {requests:?}");
    let bodies: Vec<serde_json::Value> = requests
        .iter()
        .map(|r| serde_json::from_str(r).unwrap())
        .collect();
    // /compact made exactly one request: the summary's, of the first turn.
    let summary_ask = bodies[1]["messages"].to_string();
    assert!(summary_ask.contains("running summary"), "{summary_ask}");
    assert!(summary_ask.contains("Once upon a time"), "{summary_ask}");
    assert!(
        bodies[1].get("tools").is_none(),
        "a summary request offers no tools"
    );
    // The next turn sends the summary instead of the old turn.
    let next = bodies[2]["messages"].to_string();
    assert!(next.contains("The user asked for a long story"), "{next}");
    assert!(!next.contains("Once upon a time"), "{next}");
    assert!(!next.contains("Tell me a long story"), "{next}");
    assert!(
        requests[2].len() < requests[0].len(),
        "the next request is shorter than the first: {} vs {}",
        requests[2].len(),
        requests[0].len()
    );
    assert!(
        stdout.contains("compacted: 2 messages summarized by test-model; the next request: "),
        "{stdout}"
    );
    // The summary is a node of the saved session.
    // Through the session list: the snapshot file alone may be older than
    // the session (its journal holds the later turns).
    let saved: Vec<serde_json::Value> = common::saved_documents(&dir.path().join("sessions"))
        .iter()
        .filter_map(|(_, text)| serde_json::from_str(text).ok())
        .collect();
    let summaries: Vec<&serde_json::Value> = saved
        .iter()
        .filter_map(|s| s["nodes"].as_array())
        .flatten()
        .filter(|n| n["__node_type__"] == "summary")
        .collect();
    assert_eq!(summaries.len(), 1, "one summary node saved");
    assert_eq!(
        summaries[0]["metadata"]["trigger"], "asked",
        "{}",
        summaries[0]
    );
}

#[test]
fn a_title_route_has_a_model_write_the_title_after_the_first_answer() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent.toml");
    std::fs::write(
        &agent,
        "[models.small]\nmodel = \"title-model\"\n\n[routes]\ntitle = \"small\"\n",
    )
    .unwrap();
    let server = ModelServer::start(vec![
        Reply::answer("Waves roll in; the moon keeps time.", "stop"),
        Reply::answer("\"A poem about the sea.\"", "stop"),
        Reply::answer("Another.", "stop"),
    ]);
    let out = with_server(
        dir.path(),
        &server,
        &["chat", "--agent", agent.to_str().unwrap()],
        "please write me a short poem about the sea\nand one more\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 3, "turn, title, turn: {requests:?}");
    let title: serde_json::Value = serde_json::from_str(&requests[1]).unwrap();
    // The title step asks the blueprint's `small` model (here at the
    // same server), not the main one.
    assert_eq!(title["model"], "title-model", "{title}");
    assert!(title.get("tools").is_none(), "{title}");
    let ask = title["messages"].to_string();
    assert!(ask.contains("You name conversations"), "{ask}");
    assert!(ask.contains("short poem about the sea"), "{ask}");
    assert!(ask.contains("the moon keeps time"), "{ask}");
    // Only after the first answer.
    assert!(requests[2].contains("and one more"));
    let listing = text(&sessions_list(dir.path()).stdout);
    assert!(listing.contains("A poem about the sea"), "{listing}");
    assert!(!listing.contains("please write me"), "{listing}");
}

#[test]
fn sessions_are_titled_and_a_chat_without_an_answer_is_not_kept() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing said: no session.
    let out = common::lc_agent(dir.path(), &["chat"], "[]", &[] as &[&str], "/exit\n");
    assert!(out.status.success());
    assert!(
        text(&out.stderr).contains("no session saved"),
        "{}",
        text(&out.stderr)
    );
    assert!(text(&sessions_list(dir.path()).stdout).contains("0-0 of 0"));

    let out = common::lc_agent(
        dir.path(),
        &["chat"],
        r#"[{"content": "A poem."}]"#,
        &[] as &[&str],
        "Please write a short poem about the sea, the sky and the moon over the harbour tonight\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listing = text(&sessions_list(dir.path()).stdout);
    assert!(
        listing.contains("Please write a short poem about the sea, the sky and the…"),
        "{listing}"
    );
}

#[test]
fn a_closed_stdout_is_a_quiet_success() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::lc_agent(
        dir.path(),
        &["run", "Hello."],
        r#"[{"content": "Hi."}]"#,
        &[] as &[&str],
        "",
    );
    assert!(out.status.success());
    for _ in 0..3 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
            .args(["sessions", "--sessions"])
            .arg(dir.path().join("sessions"))
            .arg("list")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader is gone before anything is written.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stderr), "");
    }
}

#[test]
fn a_missing_model_name_speaks_of_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(["run", "Hello.", "--sessions"])
        .arg(dir.path().join("sessions"))
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .env_remove("OPENAI_MODEL")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--model NAME"), "{stderr}");
    assert!(!stderr.contains(".model(..)"), "{stderr}");
}

/// The server's answer to a request that does not fit its window.
fn too_long() -> Reply {
    Reply {
        status: 400,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: serde_json::json!({"error": {
            "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9100 tokens.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded"}})
        .to_string(),
    }
}

#[test]
fn a_message_too_long_says_the_way_out_and_undo_takes_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![too_long(), Reply::answer("Short answer.", "stop")]);
    let out = with_server(
        dir.path(),
        &server,
        &["chat"],
        "A very long message\n/undo\nA short one\n/exit\n",
    );
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("does not fit the model's context window"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the way out: /undo takes the message back"),
        "{stderr}"
    );
    assert!(stdout.contains("undone: A very long message"), "{stdout}");
    assert!(stdout.contains("Short answer."), "{stdout}");
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert!(
        !requests[1].contains("A very long message"),
        "{}",
        requests[1]
    );
}

/// A refusal that is not about the window, whose text quotes the
/// overflow message (a gateway passing on another agent's error).
fn quotes_the_overflow_text() -> Reply {
    Reply {
        status: 400,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: serde_json::json!({"error": {
            "message": "blocked by policy: the upstream agent said 'the request does not fit the model's context window'",
            "type": "invalid_request_error"}})
        .to_string(),
    }
}

#[test]
fn only_a_real_overflow_is_taken_for_one_not_a_message_that_quotes_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![quotes_the_overflow_text(), quotes_the_overflow_text()]);
    let out = with_server(dir.path(), &server, &["chat"], "Hello\n/exit\n");
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("error: the model call failed"), "{stderr}");
    assert!(
        stderr.contains("does not fit the model's context window"),
        "the message is shown as it is: {stderr}"
    );
    assert!(
        !stderr.contains("the way out"),
        "a refusal that is no overflow offers no way out of one: {stderr}"
    );
}

#[test]
fn a_message_too_long_can_be_compacted_and_compact_says_one_count() {
    let dir = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        too_long(),
        Reply::answer("The user pasted a long text about ships.", "stop"),
        Reply::answer("Fine now.", "stop"),
    ]);
    let out = with_server(
        dir.path(),
        &server,
        &["chat"],
        "A very long message about ships\n/compact\nAnd now?\n/exit\n",
    );
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("a turn is still pending"), "{stderr}");
    assert!(stdout.contains("Fine now."), "{stdout}");
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 3, "turn, summary, turn: {requests:?}");
    assert!(
        requests[2].contains("a long text about ships"),
        "{}",
        requests[2]
    );
    assert!(
        !requests[2].contains("A very long message"),
        "{}",
        requests[2]
    );
    // One line says what was summarized, with one count.
    let said: Vec<&str> = stdout
        .lines()
        .chain(stderr.lines())
        .filter(|l| l.contains("summarized"))
        .collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with("compacted: 1 messages summarized"),
        "{said:?}"
    );
}

#[test]
fn a_chat_the_model_never_answered_is_not_kept() {
    let dir = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![Reply::error(400)]);
    let out = with_server(dir.path(), &server, &["chat"], "Hello\n/exit\n");
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("error: the model call failed"), "{stderr}");
    assert!(
        stderr.contains("no session saved: the model never answered"),
        "{stderr}"
    );
    let listing = text(&sessions_list(dir.path()).stdout);
    assert!(listing.contains("0-0 of 0"), "{listing}");
}

#[test]
fn model_timeout_bounds_a_request_to_a_silent_server() {
    let dir = tempfile::tempdir().unwrap();
    // A server that takes connections and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    let started = std::time::Instant::now();
    let mut command = lc_agent_test_support::own_binary::offline(&common::own_binary(dir.path()));
    command
        .args(["run", "Hello.", "--model-timeout", "1", "--sessions"])
        .arg(dir.path().join("sessions"))
        .env("OPENAI_BASE_URL", &base_url)
        .env("OPENAI_MODEL", "test-model")
        .env("LC_AGENT_HOME", dir.path().join("home"));
    let out = common::with_stdin(&mut command, "");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("timed out") || stderr.contains("timeout"),
        "{stderr}"
    );
    // Four tries of about a second each (and the window probes), not 120 s each.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "{:?}: {stderr}",
        started.elapsed()
    );
    let bad = common::lc_agent(
        dir.path(),
        &["run", "Hello.", "--model-timeout", "0"],
        "[]",
        &[] as &[&str],
        "",
    );
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));
}

/// Issue 49 item 4: one price source everywhere. A blueprint's
/// `[prices]` (and no price file) prices the session at every door of
/// the CLI: `/tokens` in chat, `sessions list`'s COST, `sessions show`
/// and exec's `turn.completed` — all the same amount (1,200 in and 34 out at $1,000 and $2,000 per
/// million tokens: $1.2680).
#[test]
fn a_blueprints_prices_are_the_prices_at_every_door() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent.toml");
    std::fs::write(
        &agent,
        "[prices.models.\"test-model\"]\ninput = 1000.0\noutput = 2000.0\n",
    )
    .unwrap();
    let server = ModelServer::start(vec![Reply::answer("Hello there.", "stop")]);
    let out = with_server(
        dir.path(),
        &server,
        &["chat", "--agent", agent.to_str().unwrap()],
        "Hi!\n/tokens\n/exit\n",
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let tokens = stdout
        .lines()
        .find(|l| l.contains("session: 1,200 in"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(tokens.contains("$1.2680"), "/tokens: {tokens}");

    let sessions = |args: &[&str]| {
        let out = Command::new(common::own_binary(dir.path()))
            .args(["sessions", "--sessions"])
            .arg(dir.path().join("sessions"))
            .args(args)
            .env("LC_AGENT_HOME", dir.path().join("home"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let list = sessions(&["list"]);
    let row = list.lines().nth(1).unwrap_or_else(|| panic!("{list}"));
    assert!(row.contains("$1.2680"), "sessions list: {list}");
    let id = row.split_whitespace().next().unwrap().to_string();
    let show = sessions(&["show", &id]);
    let usage = show.lines().find(|l| l.starts_with("usage")).expect(&show);
    assert!(usage.contains("$1.2680"), "sessions show: {show}");

    // exec: the turn's cost in `turn.completed`.
    let server = ModelServer::start(vec![Reply::answer("Hello again.", "stop")]);
    let out = with_server(
        dir.path(),
        &server,
        &["exec", "--json", "--agent", agent.to_str().unwrap(), "Hi"],
        "",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let completed: serde_json::Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["type"] == "turn.completed")
        .unwrap_or_else(|| panic!("{stdout}"));
    let usd = completed["usage"]["cost_usd"].as_f64();
    assert!(
        usd.is_some_and(|usd| (usd - 1.268).abs() < 1e-9),
        "exec: {completed}"
    );
}

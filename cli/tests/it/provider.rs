//! `--provider anthropic`: the real binary asks a Messages API server (a
//! stand-in on loopback, std only), the session's blueprint records the
//! provider, and a resumed session asks the same provider without the
//! flag even when the environment would choose the other.

use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use lc_agent_test_support::loopback::{self, Then};

use crate::common;

/// What the stand-in received: each request's first line and `x-api-key`.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// A Messages API stand-in answering every request with `text`; returns
/// its root URL.
fn stand_in(text: &'static str) -> (String, Seen) {
    let seen = Seen::default();
    let log = seen.clone();
    let address = loopback::serve(move |request, out| {
        let line = format!("{} {} HTTP/1.1", request.method, request.path);
        log.lock()
            .unwrap()
            .push((line, request.header("x-api-key").map(str::to_string)));
        let answer = serde_json::json!({
            "type": "message", "role": "assistant", "model": "claude-stand-in",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 5, "output_tokens": 3}
        });
        loopback::respond_json(out, 200, &answer, Then::Close)
    });
    (format!("http://{address}"), seen)
}

/// `lc-agent <args> --sessions <dir>/sessions` with this environment
/// (nothing else of the caller's model variables) and stdin.
fn lc_agent(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)], stdin: &str) -> Output {
    let mut command = common::offline();
    command
        .args(args)
        .arg("--sessions")
        .arg(dir.join("sessions"))
        .env("LC_AGENT_HOME", dir.join("home"))
        .envs(env.iter().copied());
    common::with_stdin(&mut command, stdin)
}

#[test]
fn the_provider_is_chosen_recorded_and_kept_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let (url, seen) = stand_in("Hello from the stand-in.");
    let anthropic = [
        ("ANTHROPIC_BASE_URL", url.as_str()),
        ("ANTHROPIC_API_KEY", "sk-ant-test"),
    ];

    let first = lc_agent(
        dir.path(),
        &["run", "--provider", "anthropic", "Say hi."],
        &anthropic,
        "",
    );
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(first.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&first.stdout).trim(),
        "Hello from the stand-in."
    );
    assert_eq!(
        seen.lock().unwrap().clone(),
        vec![(
            "POST /v1/messages HTTP/1.1".to_string(),
            Some("sk-ant-test".to_string())
        )]
    );
    let id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("session "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_string();
    let saved = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(["sessions", "--sessions"])
        .arg(dir.path().join("sessions"))
        .args(["export", &id])
        .output()
        .unwrap();
    let saved: serde_json::Value = serde_json::from_slice(&saved.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&saved.stderr)));
    assert_eq!(
        saved["metadata"]["agent_spec"]["models"]["main"]["provider"], "anthropic",
        "{saved}"
    );

    // Resumed without the flag, with an OpenAI server configured too (the
    // environment alone would choose it): the blueprint's provider wins.
    let mut both = anthropic.to_vec();
    both.push(("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"));
    both.push(("OPENAI_API_KEY", "sk-openai-test"));
    let second = lc_agent(
        dir.path(),
        &["chat", "--session", &id],
        &both,
        "And again?\n",
    );
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{stderr}");
    assert!(
        String::from_utf8_lossy(&second.stdout).contains("Hello from the stand-in."),
        "{stderr}"
    );
    assert_eq!(seen.lock().unwrap().len(), 2);

    // Only ANTHROPIC_API_KEY set: Anthropic without the flag.
    let third = lc_agent(dir.path(), &["run", "Hi?"], &anthropic, "");
    assert!(
        third.status.success(),
        "{}",
        String::from_utf8_lossy(&third.stderr)
    );
    assert_eq!(seen.lock().unwrap().len(), 3);

    // A provider that does not exist is bad usage, named.
    let bad = lc_agent(dir.path(), &["run", "--provider", "gemini", "Hi?"], &[], "");
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("gemini"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}

/// Issue 49 item 5: `/model NAME` switches within the session's provider
/// (`--provider anthropic` here, with an OpenAI server in the
/// environment too): the next turn asks the Messages API for NAME.
#[test]
fn model_name_in_chat_keeps_the_sessions_provider() {
    let dir = tempfile::tempdir().unwrap();
    let models = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = models.clone();
    let address = loopback::serve(move |request, out| {
        let body = request.json();
        log.lock().unwrap().push(format!(
            "{} {}",
            request.path,
            body["model"].as_str().unwrap_or_default()
        ));
        let answer = serde_json::json!({
            "type": "message", "role": "assistant", "model": "claude-stand-in",
            "content": [{"type": "text", "text": "Hi."}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 5, "output_tokens": 3}
        });
        loopback::respond_json(out, 200, &answer, Then::Close)
    });
    let url = format!("http://{address}");
    let out = lc_agent(
        dir.path(),
        &["chat", "--provider", "anthropic", "--model", "claude-first"],
        &[
            ("ANTHROPIC_BASE_URL", url.as_str()),
            ("ANTHROPIC_API_KEY", "sk-ant-test"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
            ("OPENAI_API_KEY", "sk-openai-test"),
        ],
        "Hello\n/model claude-second\nAgain\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("model: claude-second (was claude-first)"),
        "{stdout}{stderr}"
    );
    let asked: Vec<String> = models
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.starts_with("/v1/messages "))
        .cloned()
        .collect();
    assert_eq!(
        asked.first().map(String::as_str),
        Some("/v1/messages claude-first"),
        "{asked:?}"
    );
    assert!(
        asked.iter().any(|l| l == "/v1/messages claude-second"),
        "{asked:?}\n{stderr}"
    );
    assert!(!stderr.lines().any(|l| l.starts_with("error:")), "{stderr}");
}

//! A blueprint's models through the real binary: every `[models.<name>]`
//! is its own model, asked at its own server, and `[models.main]` names
//! the main model without `OPENAI_MODEL`.

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

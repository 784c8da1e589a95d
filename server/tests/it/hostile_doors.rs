//! The shared hostile table (`lc_agent_test_support::hostile`) through
//! `POST /v1/tools/execute`, without a session and with one (the
//! session's agent, its modes and hooks, as a run has them): a server
//! whose operator turned the approval of `execute` off (`--root DIR
//! --shell`, per-user directories), alice sending every case. Each
//! effect is checked on the host; 0 escapes through either door — with
//! the server running as this user, and (when that is root, as in CI)
//! again as `nobody`. The checks can fail: the same case with the
//! sandbox turned off on purpose (`full`) is caught.

use std::path::Path;

use lc_agent_deepagent::Workspace;
use lc_agent_filesystem::SandboxMode;
use lc_agent_test_support::hostile::{all_escapes, cases, HostileSite};
use lc_agent_test_support::needs;
use lc_agent_test_support::server::*;
use lc_agent_test_support::unprivileged::{base_or, rerun_as_nobody};
use serde_json::{json, Value};

/// Every case's command through the tool endpoint (with `session` when
/// given); what each printed.
async fn send_all(base: &str, site: &HostileSite, session: Option<&str>) -> Vec<String> {
    let mut outputs = Vec::new();
    for (n, case) in cases().iter().enumerate() {
        let command = site.command(n, case);
        let call = json!({"id": "h", "type": "function", "function": {
            "name": "execute", "arguments": json!({"command": command, "timeout": 5}).to_string()}});
        let mut body = json!({"tool_calls": [call]});
        if let Some(session) = session {
            body["session"] = json!(session);
        }
        let r = post(&format!("{base}/v1/tools/execute"), ALICE, body).await;
        assert_eq!(
            r.status(),
            200,
            "{}: {}",
            case.name,
            r.text().await.unwrap()
        );
        let r: Value = r.json().await.unwrap();
        let result = &r["results"][0];
        assert_eq!(
            result["function_name"], "execute",
            "{}: the call ran: {r}",
            case.name
        );
        outputs.push(
            result["result"]
                .as_str()
                .or_else(|| result["error"].as_str())
                .unwrap_or_default()
                .to_string(),
        );
    }
    outputs
}

#[needs(bwrap)]
#[tokio::test]
async fn the_hostile_table_escapes_through_the_tool_endpoint_with_and_without_a_session() {
    // The unprivileged pass's base when this is it (a directory `nobody` owns).
    let parent = base_or(Path::new(env!("CARGO_TARGET_TMPDIR")));
    let parent = parent.as_path();
    let mut escapes = Vec::new();
    for with_session in [false, true] {
        let door = if with_session {
            "/v1/tools/execute with session"
        } else {
            "/v1/tools/execute"
        };
        let site = HostileSite::new(parent, "alice", door);
        let root = site.root.parent().unwrap().to_path_buf();
        let server = start_with(|dir| {
            config(scripted(vec![]), dir).workspace(
                Workspace::directory(&root)
                    .shell(true)
                    .execute_approval(false),
            )
        })
        .await;
        let session = if with_session {
            Some(new_session(&server.url, ALICE).await)
        } else {
            None
        };
        let outputs = send_all(&server.url, &site, session.as_deref()).await;
        // The shell ran at all (a sandbox that refuses everything would
        // pass the checks): a plain command works in alice's directory.
        let mine = send_one(
            &server.url,
            "echo mine > mine.txt && cat mine.txt",
            session.as_deref(),
        )
        .await;
        assert_eq!(mine, "mine\nExit code: 0", "{door}");
        assert_eq!(
            std::fs::read_to_string(site.root.join("mine.txt")).unwrap(),
            "mine\n"
        );
        escapes.extend(all_escapes(&site, door, &outputs));
        let _ = server.stop().await;
    }
    eprintln!("{} hostile cases x 2 doors", cases().len());
    assert!(
        escapes.is_empty(),
        "{} escape(s):\n{}",
        escapes.len(),
        escapes.join("\n")
    );
}

/// The same test with the server running as `nobody` (this test binary
/// again, through `setpriv`, with a home and a base directory it owns).
#[needs(bwrap, root)]
#[test]
fn the_hostile_table_escapes_through_the_tool_endpoint_as_an_unprivileged_user() {
    rerun_as_nobody(
        "hostile_doors::the_hostile_table_escapes_through_the_tool_endpoint_with_and_without_a_session",
    );
}

/// The host checks can fail: with the sandbox turned off on purpose
/// (`full`), the table's "write the host's /tmp" case writes the host's
/// `/tmp` and the common check says so.
#[tokio::test]
async fn the_host_checks_catch_an_escape_when_the_sandbox_is_off() {
    let parent = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let site = HostileSite::new(parent, "alice", "full on purpose");
    let root = site.root.parent().unwrap().to_path_buf();
    let server = start_with(|dir| {
        config(scripted(vec![]), dir).workspace(
            Workspace::directory(&root)
                .shell(true)
                .sandbox(SandboxMode::Full)
                .execute_approval(false),
        )
    })
    .await;
    let table = cases();
    let n = table
        .iter()
        .position(|c| c.name == "write the host's /tmp")
        .unwrap();
    let out = send_one(&server.url, &site.command(n, &table[n]), None).await;
    assert!(out.contains("[sandbox: full mode"), "{out}");
    let caught = site.common_escapes();
    let _ = server.stop().await;
    assert!(
        caught
            .iter()
            .any(|e| e.starts_with("written in the host's /tmp:")),
        "the host check missed an escape: {caught:?}\n{out}"
    );
}

async fn send_one(base: &str, command: &str, session: Option<&str>) -> String {
    let call = json!({"id": "m", "type": "function", "function": {
        "name": "execute", "arguments": json!({"command": command}).to_string()}});
    let mut body = json!({"tool_calls": [call]});
    if let Some(session) = session {
        body["session"] = json!(session);
    }
    let r: Value = post(&format!("{base}/v1/tools/execute"), ALICE, body)
        .await
        .json()
        .await
        .unwrap();
    r["results"][0]["result"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

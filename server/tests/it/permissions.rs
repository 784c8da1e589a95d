//! The server's path rules (`ServerConfig::permissions`) in a session and
//! on `/v1/tools/execute`: a denied read is refused naming the rule (also
//! through a link into the denied directory), an `ask` holds the session's
//! call with the rule as its reason, and the tool endpoint, which has
//! nobody to approve, refuses an `ask` (403) without running anything.

use lc_agent::Turn;
use lc_agent_deepagent::Workspace;
use lc_agent_filesystem::{PermissionRule, Permissions, RuleMode};
use lc_agent_test_support::server::*;
use serde_json::{json, Value};

fn rules() -> Permissions {
    Permissions::new([
        PermissionRule::parse(RuleMode::Deny, "secrets/**").unwrap(),
        PermissionRule::parse(RuleMode::Ask, "write:docs/**").unwrap(),
    ])
    .unwrap()
}

/// alice's directory: a secret, a link into it, a public file.
fn plant(root: &std::path::Path) {
    let home = root.join("alice");
    std::fs::create_dir_all(home.join("secrets")).unwrap();
    std::fs::write(home.join("secrets/key.pem"), "TOPSECRET\n").unwrap();
    std::fs::write(home.join("readme.md"), "hello\n").unwrap();
    std::os::unix::fs::symlink("secrets", home.join("link")).unwrap();
}

fn tool_call(id: &str, name: &str, args: Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
}

#[tokio::test]
async fn server_rules_hold_in_sessions_and_on_the_tool_endpoint() {
    let root = tempfile::tempdir().unwrap();
    plant(root.path());
    let root_path = root.path().to_path_buf();
    let model = scripted(vec![
        call("r1", "read_file", json!({"file_path": "/link/key.pem"})),
        call(
            "w1",
            "write_file",
            json!({"file_path": "/docs/a.md", "content": "draft"}),
        ),
        Turn::text("Done."),
    ]);
    let server = start_with(|dir| {
        config(model, dir)
            .workspace(Workspace::directory(&root_path))
            .permissions(rules())
    })
    .await;
    let base = &server.url;
    let id = new_session(base, ALICE).await;
    let body = post(
        &format!("{base}/api/sessions/{id}/messages"),
        ALICE,
        json!({"content": "Read the key and write the docs."}),
    )
    .await
    .text()
    .await
    .unwrap();
    assert!(!body.contains("TOPSECRET"));
    assert!(
        body.contains(
            "Permission denied by path rule 1 (deny *:secrets/**): cannot read /link/key.pem"
        ),
        "{body}"
    );
    let events = sse_events(&body);
    let needed = events
        .iter()
        .find(|(n, _)| n == "approval_needed")
        .expect("approval_needed");
    let pending = &needed.1["pending"][0];
    assert_eq!(pending["tool_call"]["name"], "write_file");
    assert_eq!(pending["reason"], "path rule 2 (ask write:docs/**)");
    assert!(!root.path().join("alice/docs").exists());
    let r = post(
        &format!("{base}/api/sessions/{id}/approvals"),
        ALICE,
        json!({"decisions": [{"node_id": pending["node_id"], "decision": "approve"}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let events = sse_events(&r.text().await.unwrap());
    assert_eq!(events.last().unwrap().1["answer"], "Done.");
    assert_eq!(
        std::fs::read_to_string(root.path().join("alice/docs/a.md")).unwrap(),
        "draft"
    );

    // The tool endpoint: deny is the tool's error, listings leave the
    // denied names out, an ask is refused before anything runs.
    let r: Value = post(
        &format!("{base}/v1/tools/execute"),
        ALICE,
        json!({"tool_calls": [
            tool_call("a", "read_file", json!({"file_path": "/SECRETS/key.pem"})),
            tool_call("b", "ls", json!({"path": "/", "recursive": true})),
            tool_call("c", "grep", json!({"pattern": "TOPSECRET", "output_mode": "content"})),
        ]}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(r["results"][0]["success"], false, "{r}");
    assert!(
        r["results"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("Permission denied by path rule 1 (deny *:secrets/**)")),
        "{r}"
    );
    let listing = r["results"][1]["result"].as_str().unwrap();
    assert!(
        !listing.contains("secrets") && !listing.contains("link"),
        "{listing}"
    );
    assert!(listing.contains("/readme.md"), "{listing}");
    assert!(!r.to_string().contains("TOPSECRET"), "{r}");
    let r = post(
        &format!("{base}/v1/tools/execute"),
        ALICE,
        json!({"tool_calls": [tool_call("d", "write_file", json!({"file_path": "/docs/b.md", "content": "x"}))]}),
    )
    .await;
    assert_eq!(r.status(), 403);
    let message = r.text().await.unwrap();
    assert!(
        message.contains("Approval needed") && message.contains("path rule 2 (ask write:docs/**)"),
        "{message}"
    );
    assert!(!root.path().join("alice/docs/b.md").exists());
    let _ = server.stop().await;
}

//! # Path permissions: rules the agent cannot step around
//!
//! Shows: a deep agent on a directory with three path rules — an
//! exception allowed first (`read:secrets/public.txt`), the rest of
//! `secrets/` denied for every operation, and writes under `docs/` held
//! for approval. A scripted model tries the secret straight, through a
//! symlink and in another case, searches for it, lists the tree, then
//! writes the docs: each denial names its rule, the listing and the
//! search never show the secret, the write waits naming its rule, is
//! approved and runs. The same rules in a blueprint are `[[permissions]]`,
//! on the command line `--allow/--deny/--ask OPS:GLOBS`.
//!
//! Needs: nothing (offline, a scripted model, a temporary directory).
//!
//! Run: `cargo run --example permissions`

use lc_agent::{HumanNode, Message, ScriptedChatModel, ToolCall, Turn};
use lc_agent_deepagent::{decide, pending_approvals, Decision, DeepAgent};
use lc_agent_filesystem::{FilesystemBackend, PermissionRule, Permissions, RuleMode};
use serde_json::json;

fn turn(id: &str, name: &str, args: serde_json::Value) -> Turn {
    Turn::tool_calls([ToolCall::new(id, name, args)])
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::create_dir_all(dir.path().join("secrets"))?;
    std::fs::write(dir.path().join("secrets/key.pem"), "TOPSECRET\n")?;
    std::fs::write(dir.path().join("secrets/public.txt"), "shareable\n")?;
    std::fs::write(dir.path().join("readme.md"), "hello\n")?;
    std::os::unix::fs::symlink("secrets", dir.path().join("link"))?;

    let rules = Permissions::new([
        PermissionRule::parse(RuleMode::Allow, "read:secrets/public.txt")?,
        PermissionRule::parse(RuleMode::Deny, "secrets/**")?,
        PermissionRule::parse(RuleMode::Ask, "write,edit:docs/**")?,
    ])?;
    let model = ScriptedChatModel::new([
        turn("1", "read_file", json!({"file_path": "/secrets/key.pem"})),
        turn("2", "read_file", json!({"file_path": "/link/key.pem"})),
        turn("3", "read_file", json!({"file_path": "/SECRETS/key.pem"})),
        turn(
            "4",
            "read_file",
            json!({"file_path": "/secrets/public.txt"}),
        ),
        turn(
            "5",
            "grep",
            json!({"pattern": "TOPSECRET", "output_mode": "content"}),
        ),
        turn("6", "ls", json!({"path": "/", "recursive": true})),
        turn(
            "7",
            "write_file",
            json!({"file_path": "/docs/notes.md", "content": "notes\n"}),
        ),
        Turn::text("Done: the secret stayed out of reach."),
    ]);
    let agent = DeepAgent::builder()
        .model(model)
        .backend(FilesystemBackend::new(dir.path())?)
        .permissions(rules);
    let net = agent.build()?;
    {
        let _scope = net.enter();
        HumanNode::new("Find the key, then write the notes.");
    }
    net.invoke().await?;
    for pending in pending_approvals(&net) {
        println!(
            "held: {} {} (asked by {})",
            pending.tool_call.name,
            pending.tool_call.arguments,
            pending.reason.as_deref().unwrap_or("an approval rule")
        );
        decide(&net, pending.node_id, Decision::Approve)?;
    }
    let answer = net.invoke().await?;
    for node in net.nodes() {
        if let Some(Message::Tool { content, name, .. }) = node.output().as_deref() {
            println!("{}: {content}", name.as_deref().unwrap_or("tool"));
            assert!(!content.contains("TOPSECRET"), "the secret never shows");
        }
    }
    println!("answer: {}", answer.text());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("docs/notes.md"))?,
        "notes\n"
    );
    Ok(())
}

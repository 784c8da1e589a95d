//! Path rules on agents: a `deny` refuses the call (the model reads the
//! rule), an `ask` holds it for approval naming the rule, sub-agents obey
//! their parent's rules, and the blueprint carries them (`[[permissions]]`).

use crate::common;

use lc_agent::{HumanNode, NetworkNode, RunnableNetwork, ScriptedChatModel, ToolStatus, Turn};
use lc_agent_deepagent::{decide, pending_approvals, AgentSpec, Decision, DecisionKind, DeepAgent};
use lc_agent_filesystem::{FilesystemBackend, PermissionRule, Permissions, RuleMode};
use serde_json::json;

fn rules() -> Permissions {
    Permissions::new([
        PermissionRule::parse(RuleMode::Deny, "secrets/**").unwrap(),
        PermissionRule::parse(RuleMode::Ask, "write,edit:docs/**").unwrap(),
    ])
    .unwrap()
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("secrets")).unwrap();
    std::fs::write(dir.path().join("secrets/key.pem"), "TOPSECRET\n").unwrap();
    std::fs::write(dir.path().join("readme.md"), "hello\n").unwrap();
    dir
}

fn ask(net: &RunnableNetwork, text: &str) {
    let _s = net.enter();
    HumanNode::new(text);
}

fn sub_networks(net: &RunnableNetwork) -> Vec<RunnableNetwork> {
    net.nodes()
        .iter()
        .filter_map(|n| n.downcast::<NetworkNode>().map(|s| s.network().clone()))
        .collect()
}

#[tokio::test]
async fn a_sub_agent_obeys_its_parents_deny_rules() {
    let dir = workspace();
    // Parent: starts a task; the sub-agent (same model) reads and writes
    // the denied directory, then answers; the parent ends.
    let model = ScriptedChatModel::new([
        Turn::call(
            "t1",
            "task",
            json!({"description": "Read the key", "subagent_type": "general-purpose"}),
        ),
        Turn::call("r1", "read_file", json!({"file_path": "/secrets/key.pem"})),
        Turn::call(
            "w1",
            "write_file",
            json!({"file_path": "//Secrets//new.txt", "content": "PWNED"}),
        ),
        Turn::call(
            "g1",
            "grep",
            json!({"pattern": "TOPSECRET", "output_mode": "content"}),
        ),
        Turn::text("I could not read it."),
        Turn::text("Done."),
    ]);
    let agent = DeepAgent::builder()
        .model(model)
        .backend(FilesystemBackend::new(dir.path()).unwrap())
        .permissions(rules());
    let net = agent.build().unwrap();
    ask(&net, "Read the key.");
    assert_eq!(net.invoke().await.unwrap().text(), "Done.");
    let subs = sub_networks(&net);
    assert_eq!(subs.len(), 1, "the task ran as a sub-network");
    let results = common::tool_results(&subs[0]);
    assert_eq!(
        results,
        [
            (
                ToolStatus::Error,
                "Error: Permission denied by path rule 1 (deny *:secrets/**): cannot read \
                 /secrets/key.pem"
                    .to_string()
            ),
            (
                ToolStatus::Error,
                "Error: Permission denied by path rule 1 (deny *:secrets/**): cannot write \
                 /Secrets/new.txt"
                    .to_string()
            ),
            (ToolStatus::Ok, "No matches found".to_string()),
        ]
    );
    assert!(!dir.path().join("Secrets").exists());
    assert!(!dir.path().join("secrets/new.txt").exists());
}

#[tokio::test]
async fn an_ask_rule_holds_the_call_naming_the_rule() {
    let dir = workspace();
    let model = ScriptedChatModel::new([
        Turn::call(
            "w1",
            "write_file",
            json!({"file_path": "/docs/a.md", "content": "draft"}),
        ),
        Turn::text("Written."),
        Turn::call(
            "w2",
            "write_file",
            json!({"file_path": "/docs/b.md", "content": "draft"}),
        ),
        Turn::text("Not written."),
    ]);
    let agent = DeepAgent::builder()
        .model(model)
        .backend(FilesystemBackend::new(dir.path()).unwrap())
        .permissions(rules());
    let net = agent.build().unwrap();
    ask(&net, "Write the docs.");
    net.invoke().await.unwrap();
    let pending = pending_approvals(&net);
    assert_eq!(pending.len(), 1);
    assert_eq!(
        pending[0].reason.as_deref(),
        Some("path rule 2 (ask write,edit:docs/**)")
    );
    assert!(!pending[0].allowed.contains(&DecisionKind::Edit));
    assert!(
        !dir.path().join("docs/a.md").exists(),
        "nothing ran before the decision"
    );
    decide(&net, pending[0].node_id, Decision::Approve).unwrap();
    assert_eq!(net.invoke().await.unwrap().text(), "Written.");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("docs/a.md")).unwrap(),
        "draft"
    );

    ask(&net, "And b.");
    net.invoke().await.unwrap();
    let pending = pending_approvals(&net);
    decide(&net, pending[0].node_id, Decision::Reject("not now".into())).unwrap();
    assert_eq!(net.invoke().await.unwrap().text(), "Not written.");
    assert!(!dir.path().join("docs/b.md").exists());
}

#[test]
fn the_blueprint_carries_the_rules() {
    let spec = AgentSpec::from_toml(
        r#"
[models.main]
model = "m"

[[permissions]]
operations = ["write", "edit"]
paths = ["secrets/**"]
mode = "deny"

[[permissions]]
paths = ["private"]
mode = "ask"
"#,
    )
    .unwrap();
    let rules: Vec<_> = spec.permissions.rules().cloned().collect();
    assert_eq!(rules.len(), 2);
    assert_eq!(rules[1].operations.len(), 8, "omitted operations: all");
    // Stored in a session and read back: the same rules.
    let back: AgentSpec = serde_json::from_str(&serde_json::to_string(&spec).unwrap()).unwrap();
    assert_eq!(back.permissions, spec.permissions);
    // A rule that cannot be used is refused when the blueprint is read.
    let bad = AgentSpec::from_toml(
        "[models.main]\nmodel = \"m\"\n[[permissions]]\noperations = [\"wrte\"]\nmode = \"deny\"\n",
    )
    .unwrap_err()
    .to_string();
    assert!(bad.contains("wrte"), "{bad}");
    let bad = AgentSpec::from_toml(
        "[models.main]\nmodel = \"m\"\n[[permissions]]\npaths = [\"a/[b\"]\nmode = \"deny\"\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        bad.contains("path rule 1 (deny *:a/[b): the glob `a/[b` is invalid"),
        "{bad}"
    );
}

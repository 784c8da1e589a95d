//! `AgentSpec`: a blueprint read from TOML or JSON builds the agent, is
//! stored in the session, and rebuilds the same agent on a session loaded
//! elsewhere; mistakes are clear errors. Scripted models stand in for the
//! named ones.

use std::sync::Arc;

use lc_agent::{
    Attachments, ChatModel, HumanNode, ModelRoutes, RunnableNetwork, ScriptedChatModel, Turn,
};
use lc_agent_deepagent::{
    pending_approvals, AgentSpec, DecisionKind, ModelSpec, SpecError, Workspace,
};
use serde_json::json;

const TOML: &str = r#"
name = "refactorer"
instructions = "You are a careful refactoring assistant."

[models.main]
model = "big-model"

[models.small]
model = "small-model"
base_url = "http://127.0.0.1:9/v1"

[[subagents]]
name = "researcher"
description = "Finds facts in the code base"
model = "small"

[interrupt_on]
write_file = ["approve", "reject"]

[routes]
summary = "small"
"#;

fn scripted(
    main: &ScriptedChatModel,
) -> impl Fn(&str, &ModelSpec) -> Result<Arc<dyn ChatModel>, SpecError> + '_ {
    move |name, spec| {
        assert!(matches!(spec.model.as_str(), "big-model" | "small-model"));
        Ok(if name == "main" {
            Arc::new(main.clone()) as Arc<dyn ChatModel>
        } else {
            Arc::new(ScriptedChatModel::new(["small answer"]))
        })
    }
}

#[tokio::test]
async fn a_blueprint_builds_the_agent_and_resumes_a_saved_session() {
    let spec = AgentSpec::from_toml(TOML).unwrap();
    assert_eq!(spec.backend, Workspace::Session);
    assert_eq!(
        spec.interrupt_on["write_file"],
        [DecisionKind::Approve, DecisionKind::Reject]
    );
    let main = ScriptedChatModel::new([Turn::call(
        "c1",
        "write_file",
        json!({"file_path": "/a.rs", "content": "fn a() {}"}),
    )]);
    let net = spec.builder(scripted(&main)).unwrap().build().unwrap();
    spec.store_in(&net).unwrap();
    {
        let _s = net.enter();
        HumanNode::new("Add a.");
    }
    net.invoke().await.unwrap();
    assert_eq!(net.name(), "refactorer");
    assert_eq!(net.model_for_step("summary").as_deref(), Some("small"));

    // Another process: the session alone says how to rebuild its agent.
    let loaded = RunnableNetwork::from_json(&net.to_json().unwrap()).unwrap();
    let stored = AgentSpec::from_network(&loaded).unwrap().unwrap();
    assert_eq!(stored, spec);
    stored
        .builder(scripted(&main))
        .unwrap()
        .attach(&loaded)
        .unwrap();
    assert_eq!(pending_approvals(&loaded).len(), 1);
    assert!(loaded.tools().iter().any(|t| t.name() == "task"));

    // The same blueprint as JSON, and no secret anywhere in the session.
    let as_json = serde_json::to_string(&spec).unwrap();
    assert_eq!(AgentSpec::from_json(&as_json).unwrap(), spec);
    assert!(!net.to_json().unwrap().to_lowercase().contains("api_key"));
}

#[test]
fn mistakes_are_clear_errors() {
    let no_main = AgentSpec::from_toml("[models.small]\nmodel = \"m\"\n").unwrap();
    let err = no_main
        .builder(|_, _| Ok(Arc::new(ScriptedChatModel::new(["x"]))))
        .err()
        .unwrap();
    assert!(err.to_string().contains("no `main` model"), "{err}");

    let unknown_key = AgentSpec::from_toml("modle = \"x\"\n").unwrap_err();
    assert!(
        unknown_key.to_string().contains("unknown field `modle`"),
        "{unknown_key}"
    );

    let bad_route =
        AgentSpec::from_toml("[models.main]\nmodel = \"m\"\n[routes]\nsummary = \"tiny\"\n")
            .unwrap();
    let err = bad_route
        .builder(|_, _| Ok(Arc::new(ScriptedChatModel::new(["x"]))))
        .err()
        .unwrap();
    assert!(err.to_string().contains("no model named `tiny`"), "{err}");

    let bad_decision = AgentSpec::from_toml("[interrupt_on]\nexecute = [\"maybe\"]\n").unwrap_err();
    assert!(bad_decision.to_string().contains("maybe"), "{bad_decision}");
}

/// The decisions the first pending call allows, after a turn whose model
/// runs `echo hi` in a shell workspace described by `backend` (TOML).
async fn execute_under(backend: &str, extra: &str) -> (Option<Vec<DecisionKind>>, String) {
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "backend = {{ kind = \"directory\", root = {:?}{backend} }}\n[models.main]\nmodel = \"m\"\n{extra}",
        dir.path().display().to_string()
    );
    let spec = AgentSpec::from_toml(&toml).unwrap();
    let main = ScriptedChatModel::new([
        Turn::call("x1", "execute", json!({"command": "echo hi"})),
        Turn::text("Ran it."),
    ]);
    let net = spec
        .builder(|_, _| Ok(Arc::new(main.clone()) as Arc<dyn ChatModel>))
        .unwrap()
        .build()
        .unwrap();
    {
        let _s = net.enter();
        HumanNode::new("Say hi.");
    }
    let reply = net.invoke().await.unwrap();
    let pending = pending_approvals(&net);
    (
        pending.first().map(|p| p.allowed.clone()),
        reply.text().to_string(),
    )
}

#[tokio::test]
async fn a_shell_workspace_holds_execute_for_approval_unless_the_spec_says_otherwise() {
    // A shell: every decision allowed, nothing ran yet.
    let (allowed, _) = execute_under(", shell = true", "").await;
    assert_eq!(
        allowed,
        Some(vec![
            DecisionKind::Approve,
            DecisionKind::Edit,
            DecisionKind::Reject,
            DecisionKind::Respond
        ])
    );
    // The spec's own rule for `execute` replaces the default.
    let (allowed, _) = execute_under(
        ", shell = true",
        "[interrupt_on]\nexecute = [\"approve\", \"reject\"]\n",
    )
    .await;
    assert_eq!(
        allowed,
        Some(vec![DecisionKind::Approve, DecisionKind::Reject])
    );
    // Told not to ask: the command runs.
    let (allowed, answer) = execute_under(", shell = true, execute_approval = false", "").await;
    assert_eq!((allowed, answer.as_str()), (None, "Ran it."));
    // No shell: `execute` is not there to hold (the call is an error result).
    let (allowed, _) = execute_under("", "").await;
    assert_eq!(allowed, None);
}

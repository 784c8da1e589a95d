//! Permission modes through the library, a scripted model standing in for a
//! real one: plan mode refuses a write while reads run and hands the plan to
//! the user, whose approval leaves it (and the mode survives a save and
//! load); a sub-agent plans too; accept-edits writes unasked while `execute`
//! still waits; bypass holds nothing; `delete` asks first by default.

use crate::common;

use lc_agent::{
    Attachments, HumanNode, RunnableNetwork, ScriptedChatModel, ToolCall, ToolStatus, Turn,
};
use lc_agent_deepagent::{
    decide, pending_approvals, permission_mode, set_permission_mode, AgentSpec, Decision,
    DecisionKind, Decisions, DeepAgent, DeepAgentBuilder, PermissionMode, Workspace,
};
use lc_agent_filesystem::SandboxMode;
use serde_json::json;

fn ask(net: &RunnableNetwork, text: &str) {
    let _s = net.enter();
    HumanNode::new(text);
}

#[tokio::test]
async fn plan_mode_refuses_writes_runs_reads_and_the_approved_plan_leaves_it() {
    let model = ScriptedChatModel::new([
        Turn::tool_calls([
            ToolCall::new("r", "read_file", json!({"file_path": "/notes.md"})),
            ToolCall::new(
                "w",
                "write_file",
                json!({"file_path": "/out.md", "content": "x"}),
            ),
        ]),
        Turn::call("p", "exit_plan_mode", json!({"plan": "1. write /out.md"})),
        Turn::call(
            "w2",
            "write_file",
            json!({"file_path": "/out.md", "content": "x"}),
        ),
        Turn::text("Done."),
    ]);
    let builder = DeepAgent::builder()
        .model(model.clone())
        .permission_mode(PermissionMode::Plan);
    let net = builder.build().unwrap();
    net.with_files_mut(|f| {
        f.insert("/notes.md".into(), lc_agent::FileData::new("draft"));
    });
    assert!(net.tools().iter().any(|t| t.name() == "exit_plan_mode"));
    ask(&net, "Tidy the notes.");
    net.invoke().await.unwrap();

    // The read ran, the write was refused (the model read why), the plan waits.
    let results = common::tool_results(&net);
    assert!(results[0].0 == ToolStatus::Ok && results[0].1.contains("draft"));
    assert_eq!(results[1].0, ToolStatus::Error);
    assert!(results[1].1.contains("plan mode"), "{}", results[1].1);
    assert!(!net.files().contains_key("/out.md"));
    let pending = pending_approvals(&net);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool_call.name, "exit_plan_mode");

    // The mode is part of the session: saved, loaded, seen by another process.
    let loaded = RunnableNetwork::from_json(&net.to_json().unwrap()).unwrap();
    builder.attach(&loaded).unwrap();
    assert_eq!(permission_mode(&loaded), PermissionMode::Plan);

    decide(&loaded, pending[0].node_id, Decision::Approve).unwrap();
    assert_eq!(loaded.invoke().await.unwrap().text(), "Done.");
    assert_eq!(permission_mode(&loaded), PermissionMode::Default);
    assert!(loaded.files().contains_key("/out.md"));
}

#[tokio::test]
async fn a_rejected_plan_stays_in_plan_mode_and_a_subagent_plans_too() {
    // One scripted model answers the agent and its sub-agent, in order.
    let model = ScriptedChatModel::new([
        Turn::call(
            "t",
            "task",
            json!({"description": "write /x.md", "subagent_type": "general-purpose"}),
        ),
        Turn::call(
            "w",
            "write_file",
            json!({"file_path": "/x.md", "content": "x"}),
        ),
        Turn::text("I could not write it."),
        Turn::call("p", "exit_plan_mode", json!({"plan": "write /x.md"})),
        Turn::text("Revising."),
    ]);
    let net = DeepAgent::builder().model(model).build().unwrap();
    set_permission_mode(&net, PermissionMode::Plan);
    ask(&net, "Write x.");
    net.invoke().await.unwrap();
    assert!(!net.files().contains_key("/x.md"));
    let pending = pending_approvals(&net);
    assert_eq!(pending[0].tool_call.name, "exit_plan_mode");
    decide(
        &net,
        pending[0].node_id,
        Decision::Reject("too vague".into()),
    )
    .unwrap();
    assert_eq!(net.invoke().await.unwrap().text(), "Revising.");
    assert_eq!(permission_mode(&net), PermissionMode::Plan);
}

fn shell_agent(model: &ScriptedChatModel, dir: &std::path::Path) -> DeepAgentBuilder {
    let workspace = Workspace::directory(dir)
        .shell(true)
        .sandbox(SandboxMode::Full);
    DeepAgent::builder()
        .model(model.clone())
        .workspace(&workspace)
        .unwrap()
}

fn write_and_run() -> ScriptedChatModel {
    ScriptedChatModel::new([
        Turn::tool_calls([
            ToolCall::new(
                "w",
                "write_file",
                json!({"file_path": "/a.txt", "content": "a"}),
            ),
            ToolCall::new("e", "execute", json!({"command": "echo ran > ran.txt"})),
        ]),
        Turn::text("Done."),
    ])
}

#[tokio::test]
async fn accept_edits_writes_unasked_while_execute_still_waits() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_and_run();
    let net = shell_agent(&model, dir.path()).build().unwrap();
    set_permission_mode(&net, PermissionMode::AcceptEdits);
    ask(&net, "Write and run.");
    net.invoke().await.unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "a"
    );
    let pending = pending_approvals(&net);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool_call.name, "execute");
    assert!(!dir.path().join("ran.txt").exists());
    // The graph says why the write ran unasked.
    let write = net
        .nodes()
        .into_iter()
        .find(|n| n.metadata_value("permission_mode").is_some())
        .unwrap();
    assert_eq!(
        write.metadata_value("permission_mode").unwrap(),
        json!({"mode": "accept-edits", "decision": "allowed"})
    );
}

#[tokio::test]
async fn bypass_holds_nothing_and_a_blueprint_mode_is_a_new_sessions_first() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_and_run();
    let spec: AgentSpec = toml::from_str(&format!(
        "mode = \"bypass\"\nbackend = {{ kind = \"directory\", root = {:?}, shell = true, sandbox = \"full\" }}\n[models.main]\nmodel = \"scripted\"",
        dir.path()
    ))
    .unwrap();
    assert_eq!(spec.mode, Some(PermissionMode::Bypass));
    let net = shell_agent(&model, dir.path())
        .permission_mode(PermissionMode::Bypass)
        .build()
        .unwrap();
    ask(&net, "Write and run.");
    assert_eq!(net.invoke().await.unwrap().text(), "Done.");
    assert!(pending_approvals(&net).is_empty());
    assert!(dir.path().join("a.txt").exists());
    assert!(dir.path().join("ran.txt").exists());
    // A session with a mode of its own keeps it when re-attached.
    set_permission_mode(&net, PermissionMode::Default);
    let loaded = RunnableNetwork::from_json(&net.to_json().unwrap()).unwrap();
    shell_agent(&model, dir.path())
        .permission_mode(PermissionMode::Bypass)
        .attach(&loaded)
        .unwrap();
    assert_eq!(permission_mode(&loaded), PermissionMode::Default);
}

/// Issue 36 item 5: `delete` is offered and waits for a person's decision
/// by default; approved it runs; in accept-edits it runs unasked; an
/// agent's own `interrupt_on` rule on it replaces the default.
#[tokio::test]
async fn delete_is_offered_and_asks_first_unless_edits_are_accepted() {
    let remove = || {
        ScriptedChatModel::new([
            Turn::tool_calls([ToolCall::new("d", "delete", json!({"path": "/old.txt"}))]),
            Turn::text("Deleted."),
        ])
    };
    let setup = |model: &ScriptedChatModel| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("old.txt"), "old").unwrap();
        let workspace = Workspace::directory(dir.path());
        let agent = DeepAgent::builder()
            .model(model.clone())
            .workspace(&workspace)
            .unwrap();
        (dir, agent)
    };

    let model = remove();
    let (dir, agent) = setup(&model);
    let net = agent.build().unwrap();
    let offered: Vec<String> = agent
        .offered_tools(&net)
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert!(offered.contains(&"delete".to_string()), "{offered:?}");
    ask(&net, "Remove the old file.");
    net.invoke().await.unwrap();
    let pending = pending_approvals(&net);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool_call.name, "delete");
    assert!(dir.path().join("old.txt").exists());
    decide(&net, pending[0].node_id, Decision::Approve).unwrap();
    assert_eq!(net.invoke().await.unwrap().text(), "Deleted.");
    assert!(!dir.path().join("old.txt").exists());

    let model = remove();
    let (dir, agent) = setup(&model);
    let net = agent.build().unwrap();
    set_permission_mode(&net, PermissionMode::AcceptEdits);
    ask(&net, "Remove the old file.");
    assert_eq!(net.invoke().await.unwrap().text(), "Deleted.");
    assert!(!dir.path().join("old.txt").exists());

    let model = remove();
    let (dir, agent) = setup(&model);
    let net = agent
        .interrupt_on("delete", Decisions::approve_or_reject())
        .build()
        .unwrap();
    ask(&net, "Remove the old file.");
    net.invoke().await.unwrap();
    let pending = pending_approvals(&net);
    assert_eq!(
        pending[0].allowed,
        [DecisionKind::Approve, DecisionKind::Reject]
    );
    assert!(dir.path().join("old.txt").exists());
}

/// The line tools: offered only when the blueprint turns them on; writes
/// like `edit_file` (held by `interrupt_on`, let through by accept-edits,
/// refused in plan mode).
#[tokio::test]
async fn line_tools_are_offered_when_turned_on_and_are_edits() {
    let edit = || {
        ScriptedChatModel::new([
            Turn::call(
                "l",
                "replace_lines",
                json!({"file_path": "/a.txt", "start_line": 2, "content": "B"}),
            ),
            Turn::text("Edited."),
        ])
    };
    let offered = |agent: &DeepAgentBuilder, net: &RunnableNetwork| -> Vec<String> {
        agent
            .offered_tools(net)
            .iter()
            .map(|t| t.name().to_string())
            .collect()
    };
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::directory(dir.path());
    let file = dir.path().join("a.txt");

    // Off by default.
    let model = edit();
    let agent = DeepAgent::builder()
        .model(model.clone())
        .workspace(&workspace)
        .unwrap();
    let net = agent.build().unwrap();
    assert!(!offered(&agent, &net).contains(&"replace_lines".to_string()));

    // On through the blueprint; held by an interrupt_on rule as edit_file is.
    let spec = AgentSpec::from_toml(
        "line_tools = true\n[models.main]\nmodel = \"scripted\"\n[interrupt_on]\nreplace_lines = [\"approve\", \"reject\"]\n",
    )
    .unwrap();
    assert!(spec.line_tools);
    std::fs::write(&file, "a\nb\nc\n").unwrap();
    let main: std::sync::Arc<dyn lc_agent::ChatModel> = std::sync::Arc::new(model.clone());
    let agent = spec
        .builder(move |_, _| Ok(main.clone()))
        .unwrap()
        .workspace(&workspace)
        .unwrap();
    let net = agent.build().unwrap();
    let names = offered(&agent, &net);
    for tool in ["insert_lines", "replace_lines", "delete_lines"] {
        assert!(names.contains(&tool.to_string()), "{names:?}");
    }
    ask(&net, "Fix line 2.");
    net.invoke().await.unwrap();
    let pending = pending_approvals(&net);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool_call.name, "replace_lines");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "a\nb\nc\n");
    decide(&net, pending[0].node_id, Decision::Approve).unwrap();
    assert_eq!(net.invoke().await.unwrap().text(), "Edited.");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "a\nB\nc\n");

    // accept-edits lets it through; plan mode refuses it.
    for (mode, after) in [
        (PermissionMode::AcceptEdits, "a\nB\nc\n"),
        (PermissionMode::Plan, "a\nb\nc\n"),
    ] {
        std::fs::write(&file, "a\nb\nc\n").unwrap();
        let agent = DeepAgent::builder()
            .model(edit())
            .workspace(&workspace)
            .unwrap()
            .interrupt_on("replace_lines", Decisions::approve_or_reject())
            .line_tools(true);
        let net = agent.build().unwrap();
        set_permission_mode(&net, mode);
        ask(&net, "Fix line 2.");
        assert_eq!(net.invoke().await.unwrap().text(), "Edited.");
        assert!(pending_approvals(&net).is_empty(), "{mode:?}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), after, "{mode:?}");
    }
}

/// Issue 49 item 5: `exit_plan_mode`'s `mode` is the user's choice: a
/// `mode` the model writes into its own call is not taken (approved, the
/// session goes to `default`); the user editing the call to say
/// `accept-edits` is.
#[tokio::test]
async fn the_models_own_mode_in_exit_plan_mode_is_not_taken_the_users_edit_is() {
    for (edit, want) in [
        (false, PermissionMode::Default),
        (true, PermissionMode::AcceptEdits),
    ] {
        let model = ScriptedChatModel::new([
            Turn::call(
                "p",
                "exit_plan_mode",
                json!({"plan": "write /out.md", "mode": "accept-edits"}),
            ),
            Turn::text("Done."),
        ]);
        let net = DeepAgent::builder()
            .model(model)
            .permission_mode(PermissionMode::Plan)
            .build()
            .unwrap();
        ask(&net, "Plan it.");
        net.invoke().await.unwrap();
        let pending = pending_approvals(&net);
        assert_eq!(pending.len(), 1);
        let decision = if edit {
            Decision::Edit(json!({"plan": "write /out.md", "mode": "accept-edits"}))
        } else {
            Decision::Approve
        };
        decide(&net, pending[0].node_id, decision).unwrap();
        net.invoke().await.unwrap();
        assert_eq!(permission_mode(&net), want, "edited by the user: {edit}");
    }
}

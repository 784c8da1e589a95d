//! Hooks on a deep agent (scripted model, offline): `ask` holds a call for
//! the existing approvals, naming the hook's reason; `allow` spares a call
//! its `interrupt_on` approval; `PostToolUse` context reaches the model
//! with the result; `UserPromptSubmit` context is a note after the
//! prompt; a sub-agent's answer fires `SubagentStop`, not `Stop`;
//! `PreCompact` runs before a summary; `continue: false` stops the run.

use std::sync::Arc;

use lc_agent::{HumanNode, ScriptedChatModel, ToolCall, Turn};
use lc_agent_deepagent::{
    compact, decide, pending_approvals, Decision, Decisions, DeepAgent, HookSettings,
    HooksModifier, SummarizationConfig,
};
use serde_json::{json, Value};

fn hooks(settings: Value, dir: &std::path::Path) -> Arc<HooksModifier> {
    let settings = HookSettings::parse(&settings.to_string(), "settings.json").unwrap();
    Arc::new(HooksModifier::new(settings, dir))
}

fn write(id: &str, path: &str) -> Turn {
    Turn::tool_calls([ToolCall::new(
        id,
        "write_file",
        json!({"file_path": path, "content": "x"}),
    )])
}

fn answer(command: &str) -> Value {
    json!([{"type": "command", "command": command}])
}

async fn ask(net: &lc_agent::RunnableNetwork, text: &str) -> String {
    {
        let _scope = net.enter();
        HumanNode::new(text);
    }
    net.invoke().await.unwrap().text().to_string()
}

#[tokio::test]
async fn ask_holds_the_call_for_approval_and_allow_skips_interrupt_on() {
    let dir = tempfile::tempdir().unwrap();
    let decide_by_path = r#"grep -q '"/ask.md"' && { echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": "a person checks this one"}}'; exit 0; }; echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}'"#;
    let net = DeepAgent::builder()
        .model(ScriptedChatModel::new([
            write("c1", "/allowed.md"),
            Turn::text("one"),
            write("c2", "/ask.md"),
            Turn::text("two"),
        ]))
        .interrupt_on("write_file", Decisions::approve_or_reject())
        .modifier_shared(hooks(json!({"hooks": {"PreToolUse": [{"matcher": "write_file", "hooks": answer(decide_by_path)}]}}), dir.path()))
        .build()
        .unwrap();
    // Allowed by the hook: interrupt_on does not hold it.
    assert_eq!(ask(&net, "first").await, "one");
    assert!(net.files().contains_key("/allowed.md"));
    // Asked by the hook: held, the pending approval naming the hook's reason.
    ask(&net, "second").await;
    let pending = pending_approvals(&net);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool_call.id, "c2");
    assert_eq!(
        pending[0].reason.as_deref(),
        Some("a PreToolUse hook asked: a person checks this one")
    );
    let node = net.node(pending[0].node_id).unwrap();
    assert_eq!(node.metadata_value("hook").unwrap()["decision"], "ask");
    decide(&net, pending[0].node_id, Decision::Approve).unwrap();
    assert_eq!(net.invoke().await.unwrap().text(), "two");
    assert!(net.files().contains_key("/ask.md"));
}

#[tokio::test]
async fn post_tool_use_and_prompt_context_reach_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedChatModel::new([write("c1", "/a.md"), Turn::text("done")]);
    let net = DeepAgent::builder()
        .model(model)
        .modifier_shared(hooks(
            json!({"hooks": {
                "PostToolUse": [{"matcher": "write_file", "hooks": answer(r#"echo '{"decision": "block", "reason": "run the formatter next"}'"#)}],
                "UserPromptSubmit": [{"hooks": answer("echo 'the repository is frozen on Fridays'")}]
            }}),
            dir.path(),
        ))
        .build()
        .unwrap();
    assert_eq!(ask(&net, "write a.md").await, "done");
    let history: Vec<String> = net
        .history()
        .to_vec()
        .iter()
        .map(|m| m.text().to_string())
        .collect();
    let prompt = history.iter().position(|m| m == "write a.md").unwrap();
    assert_eq!(
        history[prompt + 1],
        "Context from the user's hooks:\nthe repository is frozen on Fridays"
    );
    assert!(
        history
            .iter()
            .any(|m| m.ends_with("\n\nFrom a PostToolUse hook: run the formatter next")),
        "{history:?}"
    );
}

#[tokio::test]
async fn a_sub_agent_fires_subagent_stop_and_continue_false_stops_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.log");
    let log_event = format!(
        "grep -o '\"hook_event_name\":\"[A-Za-z]*\"' >> {}",
        log.display()
    );
    let model = ScriptedChatModel::new([
        Turn::tool_calls([ToolCall::new(
            "t1",
            "task",
            json!({"description": "look around", "subagent_type": "general-purpose"}),
        )]),
        Turn::text("sub-agent answer"),
        Turn::text("main answer"),
        write("c1", "/b.md"),
    ]);
    let net = DeepAgent::builder()
        .model(model)
        .modifier_shared(hooks(
            json!({"hooks": {
                "Stop": [{"hooks": answer(&log_event)}],
                "SubagentStop": [{"hooks": answer(&log_event)}],
                "PreToolUse": [{"matcher": "write_file", "hooks": answer(r#"echo '{"continue": false, "stopReason": "the session is over"}'"#)}]
            }}),
            dir.path(),
        ))
        .build()
        .unwrap();
    assert_eq!(ask(&net, "delegate").await, "main answer");
    let events = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        events.lines().collect::<Vec<_>>(),
        [
            "\"hook_event_name\":\"SubagentStop\"",
            "\"hook_event_name\":\"Stop\""
        ]
    );
    {
        let _scope = net.enter();
        HumanNode::new("write b.md");
    }
    let e = net.invoke().await.unwrap_err().to_string();
    assert!(
        e.contains("a PreToolUse hook stopped the run: the session is over"),
        "{e}"
    );
    assert!(!net.files().contains_key("/b.md"));
}

#[tokio::test]
async fn pre_compact_runs_before_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("compact.log");
    let model = ScriptedChatModel::new([
        Turn::text("a1"),
        Turn::text("a2"),
        Turn::text("The summary."),
    ]);
    let net = DeepAgent::builder()
        .model(model)
        .summarization(SummarizationConfig { approximate_tokens: true, ..SummarizationConfig::default() })
        .modifier_shared(hooks(
            json!({"hooks": {"PreCompact": [{"hooks": answer(&format!("cat > {}", log.display()))}]}}),
            dir.path(),
        ))
        .build()
        .unwrap();
    ask(&net, "q1").await;
    ask(&net, "q2").await;
    compact(&net).await.unwrap();
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PreCompact");
    assert_eq!(input["trigger"], "manual");
}

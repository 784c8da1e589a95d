//! The tool endpoints: the agent's tools as OpenAI definitions, and a
//! batch of tool calls run at once ([`ToolExecutor`]).
//!
//! ```text
//!  GET  /v1/tools          {"object": "list", "tools": [{"type": "function", "function": {..}}]}
//!  POST /v1/tools/execute  {"tool_calls": [OpenAI tool calls], "session"?: id}
//!                          ─▶ {"results": [{tool_call_id, function_name, success, result, error,
//!                                           execution_time_ms}], "total_execution_time_ms"}
//! ```
//!
//! The calls run against the configured backend: the user's directory
//! under `--root`, else the files of the `session` named (saved after the
//! batch; 409 if it changed meanwhile), else a scratch file set dropped
//! after the request. A bad call gets an error entry; the others run.
//!
//! The endpoint follows the agent's rules, in the agent's order. First the
//! server's own `PreToolUse` hooks (`tool_hooks.rs`): `deny` answers the
//! call with the reason, `ask` is a 403, `allow` spares the approval
//! rules, `updatedInput` rewrites the call; its `PostToolUse` hooks see
//! each result. Then a call the agent would hold for
//! a person's decision (the approval rules: `execute` in a `--shell`
//! workspace, a blueprint's `interrupt_on`) is refused with 403 naming the
//! rule, and nothing of the batch runs: nobody is there to approve it
//! (send the request as a message of a session, where it waits for a
//! decision). The session's permission mode comes first: in `plan` a call
//! that writes or executes is refused (403), in `accept-edits` a file edit
//! and in `bypass` any call runs unasked. Paths are the backend's: the user's own directory under
//! `--root` (with tokens, `--root/<user>`), or a session of the user's own
//! (another user's session is 403), never outside them.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::State;
use axum::Json;
use lc_agent::{Attachments, RunnableNetwork, ToolExecutor};
use lc_agent_deepagent::{permission_mode, ApprovalModifier, DeepAgentBuilder};
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::auth::User;
use crate::error::ApiError;
use crate::state::AppState;

pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    User(user): User,
) -> Result<Json<Value>, ApiError> {
    let (agent, _) = state.hub.agent_for(&user, None).await?;
    let net = agent
        .build()
        .map_err(|e| ApiError::internal("the agent cannot be built", e))?;
    // `task` runs a sub-agent inside a session's run: it cannot run
    // through /v1/tools/execute, so it is not listed.
    let offered: Vec<_> = agent
        .offered_tools(&net)
        .into_iter()
        .filter(|t| t.name() != lc_agent_deepagent::TASK)
        .collect();
    let tools = lc_agent::openai_tools(&offered);
    Ok(Json(json!({"object": "list", "tools": tools})))
}

/// `POST /v1/tools/execute` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Execute {
    tool_calls: Vec<Value>,
    #[serde(default)]
    session: Option<Uuid>,
}

/// Refuses (403) a batch that holds a call the agent's approval rules
/// hold for a person's decision: the endpoint has nobody to ask.
fn check_approvals(
    net: &RunnableNetwork,
    calls: &[Value],
    allowed: &[bool],
) -> Result<(), ApiError> {
    let Some(rules) = net.modifier_as::<ApprovalModifier>("approvals") else {
        return Ok(());
    };
    for (call, &hook_allowed) in calls.iter().zip(allowed) {
        let name = call
            .pointer("/function/name")
            .or_else(|| call.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        match permission_mode(net).decides(name) {
            Some(false) => {
                return Err(ApiError::Status(
                    axum::http::StatusCode::FORBIDDEN,
                    format!(
                        "`{name}` was not run: the session is in plan mode, where only tools \
                         that read run; nothing was run (change its mode with PATCH \
                         /api/sessions/{{id}} {{\"mode\": \"default\"}})"
                    ),
                ))
            }
            Some(true) => continue,
            None => {}
        }
        // A `PreToolUse` hook that allowed the call spares it the asking.
        if rules.rules_on(name) && !hook_allowed {
            return Err(ApiError::Status(
                axum::http::StatusCode::FORBIDDEN,
                format!(
                    "`{name}` needs a person's approval (the agent's approval rules: `execute` \
                     in a --shell workspace, or the blueprint's interrupt_on), and \
                     /v1/tools/execute has nobody to approve it: nothing was run. Send the \
                     request as a message of a session (POST /api/sessions/{{id}}/messages), \
                     where the call waits for a decision"
                ),
            ));
        }
    }
    Ok(())
}

/// Runs a batch through the checks of one tool call, in the agent's order:
/// the `PreToolUse` hooks, the mode, the approval rules and the path rules'
/// `ask` (a 403 refuses the batch before anything runs; a path rule's
/// `deny` is the backend's), then the calls, then the `PostToolUse` hooks.
async fn run_batch(
    net: &RunnableNetwork,
    agent: &DeepAgentBuilder,
    calls: &[Value],
) -> Result<Vec<Value>, ApiError> {
    let gated = super::tool_hooks::before(net, calls).await?;
    check_approvals(net, &gated.to_run, &gated.allowed)?;
    super::path_rules::refuse_asks(net, &gated.to_run).await?;
    let ran = ToolExecutor::from_shared(agent.offered_tools(net))
        .with_network(net.clone())
        .execute_openai(&gated.to_run)
        .await;
    Ok(gated.after(net, ran).await)
}

/// The most calls one request may run.
pub(crate) const MAX_TOOL_CALLS: usize = 256;

pub(crate) async fn execute(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Json(body): Json<Execute>,
) -> Result<Json<Value>, ApiError> {
    if body.tool_calls.len() > MAX_TOOL_CALLS {
        return Err(ApiError::BadRequest(format!(
            "{} tool calls in one request; the most is {MAX_TOOL_CALLS}",
            body.tool_calls.len()
        )));
    }
    let started = Instant::now();
    let results = match body.session {
        Some(id) => {
            let list = state.hub.list(&user)?;
            let _claim = state.hub.claim_owned(id, &list).await?;
            let (net, agent) = state.hub.open(&user, &list, id).await?;
            let results = run_batch(&net, &agent, &body.tool_calls).await?;
            // The session's caps, as a run keeps them: over one, nothing
            // of the batch is kept.
            if let Some(over) = crate::caps::over_caps(
                &net,
                state.config.max_file_bytes,
                state.config.max_session_files_bytes,
            ) {
                return Err(ApiError::Status(
                    axum::http::StatusCode::PAYLOAD_TOO_LARGE,
                    format!("{over}: nothing of the batch was kept"),
                ));
            }
            list.save(&net).await?;
            results
        }
        None => {
            let (agent, _) = state.hub.agent_for(&user, None).await?;
            let net = agent
                .build()
                .map_err(|e| ApiError::internal("the agent cannot be built", e))?;
            run_batch(&net, &agent, &body.tool_calls).await?
        }
    };
    Ok(Json(json!({
        "results": results,
        "total_execution_time_ms": started.elapsed().as_secs_f64() * 1000.0,
    })))
}

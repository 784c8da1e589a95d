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

use std::sync::Arc;
use std::time::Instant;

use axum::extract::State;
use axum::Json;
use lc_agent::ToolExecutor;
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
    let (agent, _) = state.hub.agent_for(&user, None)?;
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
            let _claim = state.hub.claim(id, &list)?;
            let (net, agent) = state.hub.open(&user, &list, id).await?;
            let executor =
                ToolExecutor::from_shared(agent.offered_tools(&net)).with_network(net.clone());
            let results = executor.execute_openai(&body.tool_calls).await;
            list.save(&net).await?;
            results
        }
        None => {
            let (agent, _) = state.hub.agent_for(&user, None)?;
            let net = agent
                .build()
                .map_err(|e| ApiError::internal("the agent cannot be built", e))?;
            ToolExecutor::from_shared(agent.offered_tools(&net))
                .with_network(net)
                .execute_openai(&body.tool_calls)
                .await
        }
    };
    Ok(Json(json!({
        "results": results,
        "total_execution_time_ms": started.elapsed().as_secs_f64() * 1000.0,
    })))
}

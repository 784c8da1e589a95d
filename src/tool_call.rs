//! Running one tool call: the tool found by name, its arguments read as a
//! JSON object, the call retried when the tool is marked idempotent
//! (`tool_retry.rs`) and bounded by the tool's timeout. Every failure
//! becomes an `Error: ...` result the model reads on its next turn.

use std::sync::Arc;

use serde_json::Value;

use crate::error::ToolError;
use crate::tool::{Tool, ToolContext, ToolOutput};
use crate::tool_args;

/// Runs one tool call against a set of tools and always returns a result:
/// errors of every kind become `Error: ...` outputs.
pub(crate) async fn run_tool_call(
    tools: &[Arc<dyn Tool>],
    call: &crate::message::ToolCall,
    ctx: &ToolContext,
) -> ToolOutput {
    let Some(tool) = tools.iter().find(|t| t.name() == call.name) else {
        let mut names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
        names.sort_unstable();
        let available = if names.is_empty() {
            "(none)".to_string()
        } else {
            names.join(", ")
        };
        return ToolOutput::error(
            ToolError::UnknownTool {
                name: call.name.clone(),
                available,
            }
            .to_string(),
        );
    };
    let mut args = match call.parsed_arguments() {
        Ok(args @ Value::Object(_)) => args,
        Ok(other) => {
            return ToolOutput::error(tool_args::not_an_object(&call.name, &other).to_string())
        }
        Err(e) => {
            return ToolOutput::error(
                ToolError::InvalidJson {
                    tool: call.name.clone(),
                    source: std::sync::Arc::new(e),
                }
                .to_string(),
            )
        }
    };
    // A tool marked idempotent is called again when a call fails
    // (`tool_retry.rs`).
    let (attempts, backoff) = crate::tool_retry::tool_retry(&ctx.network, &call.name)
        .unwrap_or((1, std::time::Duration::ZERO));
    let mut failed = Vec::new();
    let mut attempt = 1;
    let result = loop {
        // The last attempt takes the arguments (no copy of a large one).
        let this = if attempt >= attempts {
            std::mem::take(&mut args)
        } else {
            args.clone()
        };
        let result = call_once(tool.as_ref(), &call.name, this, ctx).await;
        if attempt >= attempts || !crate::tool_retry::worth_again(result.as_ref().map(|o| o.status))
        {
            break result;
        }
        let error = match &result {
            Ok(output) => output.content.clone(),
            Err(e) => e.to_string(),
        };
        tracing::info!(tool = %call.name, attempt, %error, "the tool call failed; calling it again");
        failed.push(error);
        attempt += 1;
        tokio::time::sleep(crate::tool_retry::wait_before(attempt, backoff)).await;
    };
    if !failed.is_empty()
        && let Some(node) = ctx.network.node(ctx.node_id)
    {
        node.set_metadata(
            crate::tool_retry::TOOL_RETRIES_KEY,
            serde_json::json!(failed),
        );
    }
    match result {
        Ok(output) => output,
        Err(e) => ToolOutput::error(e.to_string()),
    }
}

/// One call of `tool`, within its timeout.
async fn call_once(
    tool: &dyn Tool,
    name: &str,
    args: Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    match tool.timeout() {
        Some(limit) => match tokio::time::timeout(limit, tool.call(args, ctx)).await {
            Ok(result) => result,
            Err(_) => Err(ToolError::Timeout {
                tool: name.to_string(),
                seconds: limit.as_secs_f64(),
            }),
        },
        None => tool.call(args, ctx).await,
    }
}

//! [`McpTool`]: one tool of an MCP server as an lc-agent [`Tool`]; every
//! failure is an `Error: ...` result that names the server.

use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{Tool, ToolContext, ToolError, ToolOutput};
use serde_json::Value;

use super::connection::{CallFailure, RemoteTool, ServerConnection};
use super::content::describe_result;

/// A server's tool, under the name the model sees (see [`McpTools`](super::McpTools)).
#[derive(Debug, Clone)]
pub struct McpTool {
    name: String,
    remote: RemoteTool,
    description: String,
    server: Arc<ServerConnection>,
}

impl McpTool {
    /// `remote` of `server`, offered as `name`.
    pub(crate) fn new(
        name: impl Into<String>,
        remote: RemoteTool,
        server: Arc<ServerConnection>,
    ) -> Self {
        let description = match &remote.schema_problem {
            None => remote.description.clone(),
            Some(problem) => format!(
                "(Unavailable: the MCP server `{}` sent an invalid input schema: {problem}.) {}",
                server.name(),
                remote.description
            ),
        };
        Self {
            name: name.into(),
            remote,
            description,
            server,
        }
    }

    /// The server's name for the tool.
    pub fn remote_name(&self) -> &str {
        &self.remote.name
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        match &self.remote.schema_problem {
            None => self.remote.schema.clone(),
            Some(_) => serde_json::json!({"type": "object", "properties": {}}),
        }
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let (server, tool) = (self.server.name(), self.remote.name.as_str());
        if let Some(problem) = &self.remote.schema_problem {
            return Ok(ToolOutput::error(format!(
                "MCP tool `{tool}` of server `{server}` cannot be called: its input schema is invalid ({problem})"
            )));
        }
        Ok(match self.server.call(tool, args).await {
            Ok(result) => describe_result(&result),
            Err(CallFailure::Connect(e)) => ToolOutput::error(format!(
                "{} (tool `{tool}` was not called; the next call tries again)",
                lc_agent::error_chain(&e)
            )),
            Err(CallFailure::Refused(message)) => ToolOutput::error(format!(
                "MCP server `{server}` refused `{tool}`: {message}"
            )),
            Err(CallFailure::Broken(reason)) => ToolOutput::error(format!(
                "MCP server `{server}` failed during `{tool}` ({reason}); it is reconnected on the next call"
            )),
            Err(CallFailure::Timeout(limit)) => ToolOutput::error(format!(
                "MCP server `{server}` did not answer `{tool}` within {} s; the connection was closed and is reopened on the next call",
                limit.as_secs_f64()
            )),
        })
    }
}

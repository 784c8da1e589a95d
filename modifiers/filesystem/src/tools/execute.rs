//! [`Execute`]: runs a shell command on a sandbox backend.
//!
//! ```text
//!  ExecuteArgs { command, timeout = 120 (1..=3600) } -> sandbox backend?
//!    -> Backend::execute -> format_execute: output, "Exit code: <n>"
//!       or "Error: Command timed out after <t> s" + partial output
//! ```

use lc_agent::{ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{AtLeast, FileTool};
use crate::backend::{Backend, ExecuteResponse};
use crate::error::FsError;

/// The longest `execute` timeout, in seconds.
pub(crate) const MAX_TIMEOUT_SECS: u64 = 3600;
/// The timeout when the call gives none, in seconds.
const DEFAULT_TIMEOUT_SECS: usize = 120;

file_tool! {
    /// The `execute` tool: offered to the model only when the backend can run
    /// commands; a call on any other backend is an error result.
    Execute
}

/// The arguments of `execute`.
#[derive(Debug, Clone, Deserialize)]
pub struct ExecuteArgs<'a> {
    /// The command, run with `sh -c`.
    pub command: &'a str,
    /// Seconds before the command is killed (default 120, at most 3600).
    pub timeout: Option<AtLeast<1>>,
}

impl FileTool for Execute {
    const NAME: &'static str = "execute";
    const DESCRIPTION: &'static str = "Run a shell command (`sh -c`) in the workspace directory and return its output (stdout and stderr) and exit code. `timeout` is in seconds (default 120, at most 3600); on timeout the command and its children are killed.";
    type Args<'a> = ExecuteArgs<'a>;

    fn parameters() -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The shell command to run."},
                "timeout": {"type": "integer", "minimum": 1, "maximum": 3600, "description": "Seconds before the command is killed. Default 120."}
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    async fn run(backend: &dyn Backend, args: ExecuteArgs<'_>) -> Result<ToolOutput, ToolError> {
        let timeout = args.timeout.map_or(DEFAULT_TIMEOUT_SECS, AtLeast::get) as u64;
        if timeout > MAX_TIMEOUT_SECS {
            return Err(lc_agent::tool_args::invalid(
                Self::NAME,
                format!("`timeout` must be at most {MAX_TIMEOUT_SECS} seconds, got {timeout}"),
            ));
        }
        if !backend.supports_execute() {
            return Err(FsError::NoSandbox.into());
        }
        let response = backend.execute(args.command, timeout).await?;
        Ok(format_execute(&response, timeout))
    }
}

/// Formats an `execute` result.
pub(crate) fn format_execute(response: &ExecuteResponse, timeout: u64) -> ToolOutput {
    let mut output = response.output.clone();
    if let Some(total) = response.truncated_bytes {
        if !output.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        output.push_str(&format!("[Output truncated: {total} bytes]"));
    }
    // The backend's own line closes what the command printed.
    if let Some(note) = &response.note {
        if !output.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        output.push_str(note);
    }
    if response.timed_out {
        let mut text = format!("Error: Command timed out after {timeout} s");
        if !output.is_empty() {
            text.push('\n');
            text.push_str(&output);
        }
        return ToolOutput::error(text);
    }
    if !output.is_empty() && !output.ends_with('\n') {
        output.push('\n');
    }
    output.push_str(&format!("Exit code: {}", response.exit_code.unwrap_or(-1)));
    ToolOutput::ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sandbox's line closes the text: after the truncation marker,
    /// before `Exit code` (the spec's last line) when the command ended.
    #[test]
    fn the_backends_note_follows_the_truncation_marker() {
        let mut response = ExecuteResponse {
            output: "a lot".into(),
            exit_code: None,
            truncated_bytes: Some(200_000),
            timed_out: true,
            note: Some("[sandbox: limit]".into()),
        };
        assert_eq!(
            format_execute(&response, 3).content,
            "Error: Command timed out after 3 s\na lot\n[Output truncated: 200000 bytes]\n[sandbox: limit]"
        );
        response.timed_out = false;
        response.exit_code = Some(2);
        assert_eq!(
            format_execute(&response, 3).content,
            "a lot\n[Output truncated: 200000 bytes]\n[sandbox: limit]\nExit code: 2"
        );
    }
}

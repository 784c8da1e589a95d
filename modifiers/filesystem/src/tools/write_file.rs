//! [`WriteFile`]: creates a file (and its missing parent directories).
//!
//! ```text
//!  WriteFileArgs { file_path, content, overwrite = false } -> path, content over the
//!    write limit? (limits.rs) -> Backend::write
//!    (as a tool call: Backend::write_recorded, the file before and after for rewinds)
//!    -> "Successfully wrote to <path>"
//! ```

use lc_agent::{ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Change, FileTool};
use crate::backend::Backend;
use crate::path;

file_tool! {
    /// The `write_file` tool: creates a file (or replaces it with `overwrite`).
    WriteFile
}

/// The arguments of `write_file`.
#[derive(Debug, Clone, Deserialize)]
pub struct WriteFileArgs<'a> {
    /// The file to create.
    pub file_path: &'a str,
    /// The whole content, written as given.
    pub content: &'a str,
    /// Replace the file if it exists (default false).
    pub overwrite: Option<bool>,
}

impl FileTool for WriteFile {
    const NAME: &'static str = "write_file";
    const DESCRIPTION: &'static str = "Create a file with `content` (missing parent directories are created). Fails if the file exists, unless `overwrite` is true (default false); to change part of an existing file use edit_file.";
    type Args<'a> = WriteFileArgs<'a>;

    fn parameters() -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Absolute path of the file to create."},
                "content": {"type": "string", "description": "The full file content."},
                "overwrite": {"type": "boolean", "description": "Replace the file if it exists. Default false."}
            },
            "required": ["file_path", "content"],
            "additionalProperties": false
        })
    }

    fn changed_path<'a>(args: &Self::Args<'a>) -> Option<&'a str> {
        Some(args.file_path)
    }

    async fn run(backend: &dyn Backend, args: WriteFileArgs<'_>) -> Result<ToolOutput, ToolError> {
        let file = checked(backend, &args)?;
        backend
            .write(&file, args.content, args.overwrite.unwrap_or(false))
            .await?;
        Ok(ToolOutput::ok(format!("Successfully wrote to {file}")))
    }

    async fn run_recorded(
        backend: &dyn Backend,
        args: WriteFileArgs<'_>,
        _file: &str,
        keep: usize,
    ) -> Result<(ToolOutput, Option<Change>), ToolError> {
        let file = checked(backend, &args)?;
        let done = backend
            .write_recorded(&file, args.content, args.overwrite.unwrap_or(false), keep)
            .await?;
        Ok((
            ToolOutput::ok(format!("Successfully wrote to {file}")),
            Some((done.before, done.after)),
        ))
    }
}

/// The call's file (normalised), once the path and the content's size
/// (the write limit, `limits.rs`) are checked.
fn checked(backend: &dyn Backend, args: &WriteFileArgs<'_>) -> Result<String, ToolError> {
    let file = path::normalize(args.file_path)?;
    path::check_new_name(&file)?;
    let size = args.content.len() as u64;
    crate::limits::check_write(&file, size, backend.limits().write_limit())?;
    Ok(file)
}

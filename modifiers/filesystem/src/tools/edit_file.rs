//! [`EditFile`]: replaces exact text in a file.
//!
//! ```text
//!  EditFileArgs { file_path, old_string, new_string, replace_all = false }
//!    empty old_string? identical strings? -> path -> Backend::edit_capped (edit.rs plans it;
//!      refused when the edited file would pass the write limit, limits.rs)
//!      (as a tool call: Backend::edit_recorded, the file before and after for rewinds)
//!    -> "Successfully replaced <n> occurrence(s) in <path>"
//! ```

use lc_agent::{ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Change, FileTool};
use crate::backend::Backend;
use crate::error::FsError;
use crate::path;

file_tool! {
    /// The `edit_file` tool: replaces exact text in a file.
    EditFile
}

/// The arguments of `edit_file`.
#[derive(Debug, Clone, Deserialize)]
pub struct EditFileArgs<'a> {
    /// The file to edit.
    pub file_path: &'a str,
    /// The exact text to replace (not empty).
    pub old_string: &'a str,
    /// The replacement.
    pub new_string: &'a str,
    /// Replace every occurrence (default false: exactly one must exist).
    pub replace_all: Option<bool>,
}

impl FileTool for EditFile {
    const NAME: &'static str = "edit_file";
    const DESCRIPTION: &'static str = "Replace the exact text `old_string` by `new_string` in a file. `old_string` must occur exactly once unless `replace_all` is true (default false); include surrounding lines to make it unique. Line endings of CRLF files are kept.";
    type Args<'a> = EditFileArgs<'a>;

    fn parameters() -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Absolute path of the file to edit."},
                "old_string": {"type": "string", "description": "The exact text to replace (not empty)."},
                "new_string": {"type": "string", "description": "The replacement text."},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence. Default false."}
            },
            "required": ["file_path", "old_string", "new_string"],
            "additionalProperties": false
        })
    }

    fn changed_path<'a>(args: &Self::Args<'a>) -> Option<&'a str> {
        Some(args.file_path)
    }

    async fn run(backend: &dyn Backend, args: EditFileArgs<'_>) -> Result<ToolOutput, ToolError> {
        let (file, old, new, replace_all) = checked(&args)?;
        let limit = Some(backend.limits().write_limit());
        let n = backend
            .edit_capped(&file, (old, new, replace_all), limit)
            .await?;
        Ok(done(n, &file))
    }

    async fn run_recorded(
        backend: &dyn Backend,
        args: EditFileArgs<'_>,
        _file: &str,
        keep: usize,
    ) -> Result<(ToolOutput, Option<Change>), ToolError> {
        let (file, old, new, replace_all) = checked(&args)?;
        let edited = backend
            .edit_recorded(
                &file,
                (old, new, replace_all),
                keep,
                Some(backend.limits().write_limit()),
            )
            .await?;
        Ok((
            done(edited.value, &file),
            Some((edited.before, edited.after)),
        ))
    }
}

/// The call's file (normalised), strings and mode, once they are checked.
fn checked<'a>(args: &EditFileArgs<'a>) -> Result<(String, &'a str, &'a str, bool), ToolError> {
    let (old, new) = (args.old_string, args.new_string);
    if old.is_empty() {
        return Err(FsError::EmptyOldString.into());
    }
    if old == new {
        return Err(FsError::IdenticalStrings.into());
    }
    let file = path::normalize(args.file_path)?;
    path::check_new_name(&file)?;
    Ok((file, old, new, args.replace_all.unwrap_or(false)))
}

fn done(n: usize, file: &str) -> ToolOutput {
    ToolOutput::ok(format!("Successfully replaced {n} occurrence(s) in {file}"))
}

//! [`Delete`]: deletes a file, or a folder and everything in it with
//! `recursive`.
//!
//! ```text
//!  DeleteArgs { path, recursive = false }
//!    "/" (the workspace root)       -> Error: Cannot delete /: it is the workspace root
//!    Backend::delete (a file)       -> "Successfully deleted <path>"
//!    a folder, recursive            -> Backend::delete_tree
//!                                      -> "Successfully deleted <path> and everything in it"
//!    a folder, not recursive        -> Error: <path> is a directory; set recursive=true ...
//! ```
//!
//! Confinement and path rules are the backend's (operation `delete`; for a
//! folder, every path inside counts). What a call removes is kept for
//! rewinds first (`snapshots.rs`), file by file.

use lc_agent::{ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::{json, Value};

use super::FileTool;
use crate::backend::{refuse_root, Backend};
use crate::error::{shown, FsError};
use crate::path;

file_tool! {
    /// The `delete` tool: deletes a file, or a folder with `recursive`.
    Delete
}

/// The arguments of `delete`.
#[derive(Debug, Clone, Deserialize)]
pub struct DeleteArgs<'a> {
    /// The file or folder to delete.
    pub path: &'a str,
    /// Delete a folder and everything in it (default false).
    pub recursive: Option<bool>,
}

impl FileTool for Delete {
    const NAME: &'static str = "delete";
    const DESCRIPTION: &'static str = "Delete the file at `path`. To delete a folder and everything in it, set `recursive` to true (default false). The workspace root cannot be deleted.";
    type Args<'a> = DeleteArgs<'a>;

    fn parameters() -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Absolute path of the file or folder to delete."},
                "recursive": {"type": "boolean", "description": "Delete a folder and everything in it. Default false."}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn changed_path<'a>(args: &Self::Args<'a>) -> Option<&'a str> {
        Some(args.path)
    }

    fn changes_tree(args: &Self::Args<'_>) -> bool {
        args.recursive.unwrap_or(false)
    }

    async fn run(backend: &dyn Backend, args: DeleteArgs<'_>) -> Result<ToolOutput, ToolError> {
        let target = path::normalize(args.path)?;
        refuse_root(&target)?;
        match backend.delete(&target).await {
            Ok(()) => Ok(ToolOutput::ok(format!(
                "Successfully deleted {}",
                shown(&target)
            ))),
            Err(FsError::IsDirectory(_) | FsError::IsDirectoryUseLs(_)) => {
                if !args.recursive.unwrap_or(false) {
                    return Err(ToolError::Failed(format!(
                        "{} is a directory; set recursive=true to delete it and everything in it",
                        shown(&target)
                    )));
                }
                backend.delete_tree(&target).await?;
                Ok(ToolOutput::ok(format!(
                    "Successfully deleted {} and everything in it",
                    shown(&target)
                )))
            }
            Err(e) => Err(e.into()),
        }
    }
}

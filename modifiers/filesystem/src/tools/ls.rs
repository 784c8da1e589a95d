//! [`Ls`]: the entries of a directory, one absolute path per line.
//!
//! ```text
//!  LsArgs { path = "/", recursive = false } -> Backend::ls -> format_ls
//!    sorted, directories with `/`, at most 1000 lines, "(empty directory)"
//!    after a note per directory the walk could not read (`Note: could not
//!    read <dir>/; not listed.`)
//! ```

use lc_agent::{ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{cap_lines, unreadable_notes, FileTool};
use crate::backend::{Backend, LsEntry};
use crate::{atomic, path};

file_tool! {
    /// The `ls` tool: the entries of a directory, one absolute path per line.
    Ls
}

/// The arguments of `ls`.
#[derive(Debug, Clone, Deserialize)]
pub struct LsArgs<'a> {
    /// The directory (default `/`).
    #[serde(borrow)]
    pub path: Option<&'a str>,
    /// List all descendants (default false).
    pub recursive: Option<bool>,
}

impl FileTool for Ls {
    const NAME: &'static str = "ls";
    const DESCRIPTION: &'static str = "List the files and directories directly under `path` (default \"/\"), one absolute path per line; directories end with `/`. Set `recursive` to true to list everything below `path`. At most 1000 lines are shown; list a subdirectory to see more.";
    type Args<'a> = LsArgs<'a>;

    fn parameters() -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Absolute directory path, e.g. \"/src\". Default \"/\"."},
                "recursive": {"type": "boolean", "description": "List all descendants. Default false."}
            },
            "additionalProperties": false
        })
    }

    async fn run(backend: &dyn Backend, args: LsArgs<'_>) -> Result<ToolOutput, ToolError> {
        let dir = path::normalize(args.path.unwrap_or("/"))?;
        let mut entries = backend.ls(&dir, args.recursive.unwrap_or(false)).await?;
        entries.retain(|e| !atomic::is_temp_path(&e.path));
        // A walk reports a directory it could not read with a trailing `/`.
        let (unreadable, entries): (Vec<LsEntry>, Vec<LsEntry>) =
            entries.into_iter().partition(|e| e.path.ends_with('/'));
        let unreadable: Vec<String> = unreadable.into_iter().map(|e| e.path).collect();
        let mut out = unreadable_notes(&unreadable, "listed");
        out.push(format_ls(entries));
        Ok(ToolOutput::ok(out.join("\n")))
    }
}

/// Formats `ls` entries: sorted printed lines, capped.
pub(crate) fn format_ls(entries: Vec<LsEntry>) -> String {
    let mut lines: Vec<String> = entries.iter().map(LsEntry::line).collect();
    if lines.is_empty() {
        return "(empty directory)".to_string();
    }
    lines.sort_unstable();
    lines.dedup();
    cap_lines(lines, |n| {
        format!("... ({n} more entries; list a subdirectory)")
    })
}

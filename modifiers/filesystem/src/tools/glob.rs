//! [`Glob`]: files whose path matches a glob pattern.
//!
//! ```text
//!  GlobArgs { pattern, path = "/" } -> path -> GlobPattern (compiled once)
//!    -> Backend::glob -> sorted, at most 1000 lines, "No files found"
//! ```

use lc_agent::{ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{cap_lines, unreadable_notes, FileTool};
use crate::backend::Backend;
use crate::glob::GlobPattern;
use crate::{atomic, path};

file_tool! {
    /// The `glob` tool: the files whose path matches a glob pattern.
    Glob
}

/// The arguments of `glob`.
#[derive(Debug, Clone, Deserialize)]
pub struct GlobArgs<'a> {
    /// The glob pattern (see [`GlobPattern::new`]).
    pub pattern: &'a str,
    /// The directory searched (default `/`).
    #[serde(borrow)]
    pub path: Option<&'a str>,
}

impl FileTool for Glob {
    const NAME: &'static str = "glob";
    const DESCRIPTION: &'static str = "Find files by a glob pattern (`*`, `?`, `[...]`, `{a,b}`, `**`), searched under `path` (default \"/\"). A pattern without `/` matches file names at any depth (`*.rs`); a pattern with `/` matches the path relative to `path`. Returns matching file paths, sorted.";
    type Args<'a> = GlobArgs<'a>;

    fn parameters() -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob pattern, e.g. \"*.rs\" or \"src/**/*.py\"."},
                "path": {"type": "string", "description": "Directory to search in. Default \"/\"."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    async fn run(backend: &dyn Backend, args: GlobArgs<'_>) -> Result<ToolOutput, ToolError> {
        let dir = path::normalize(args.path.unwrap_or("/"))?;
        let pattern = GlobPattern::new(args.pattern)?;
        let mut files = backend.glob(&pattern, &dir).await?;
        files.retain(|f| !atomic::is_temp_path(f));
        // A walk reports a directory it could not read with a trailing `/`.
        let (unreadable, files): (Vec<String>, Vec<String>) =
            files.into_iter().partition(|f| f.ends_with('/'));
        let mut out = unreadable_notes(&unreadable, "searched");
        if files.is_empty() {
            out.push("No files found".to_string());
            return Ok(ToolOutput::ok(out.join("\n")));
        }
        let mut lines: Vec<String> = files.iter().map(|f| path::shown(f).into_owned()).collect();
        lines.sort_unstable();
        lines.dedup();
        out.push(cap_lines(lines, |n| {
            format!("... ({n} more matches; narrow the pattern)")
        }));
        Ok(ToolOutput::ok(out.join("\n")))
    }
}

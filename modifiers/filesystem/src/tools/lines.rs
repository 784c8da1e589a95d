//! The line tools, offered only when turned on (they cost prompt tokens):
//! [`InsertLines`], [`ReplaceLines`], [`DeleteLines`] on a 1-based range.
//!
//! ```text
//!  InsertLinesArgs { file_path, line, content }
//!  ReplaceLinesArgs { file_path, start_line, end_line = start_line, content }
//!  DeleteLinesArgs { file_path, start_line, end_line = start_line }
//!    end_line < start_line? empty content? -> path -> Backend::edit_lines
//!    (line_edit.rs: two streamed passes, atomic write on disk)
//!    -> "Successfully inserted <n> line(s) at line <l> in <path>"
//!       "Successfully replaced lines <a>-<b> with <n> line(s) in <path>"
//!       "Successfully deleted lines <a>-<b> from <path>"
//! ```
//!
//! They are writes like `edit_file`: the same path rules (operation
//! `edit`), approvals and rewinds, and the same errors for a missing,
//! binary or undecodable file.

use lc_agent::{ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{AtLeast, FileTool};
use crate::backend::Backend;
use crate::error::{shown, FsError};
use crate::line_edit::LineEdit;
use crate::path;

file_tool! {
    /// The `insert_lines` tool: inserts lines before a 1-based line.
    InsertLines
}

file_tool! {
    /// The `replace_lines` tool: replaces a 1-based range of lines.
    ReplaceLines
}

file_tool! {
    /// The `delete_lines` tool: deletes a 1-based range of lines.
    DeleteLines
}

/// The arguments of `insert_lines`.
#[derive(Debug, Clone, Deserialize)]
pub struct InsertLinesArgs<'a> {
    /// The file to edit.
    pub file_path: &'a str,
    /// The 1-based line the new lines go before (lines + 1 appends).
    pub line: AtLeast<1>,
    /// The new lines (not empty).
    pub content: &'a str,
}

/// The arguments of `replace_lines`.
#[derive(Debug, Clone, Deserialize)]
pub struct ReplaceLinesArgs<'a> {
    /// The file to edit.
    pub file_path: &'a str,
    /// The first line replaced (1-based).
    pub start_line: AtLeast<1>,
    /// The last line replaced (inclusive; default `start_line`).
    pub end_line: Option<AtLeast<1>>,
    /// The new lines (not empty; delete_lines removes lines).
    pub content: &'a str,
}

/// The arguments of `delete_lines`.
#[derive(Debug, Clone, Deserialize)]
pub struct DeleteLinesArgs<'a> {
    /// The file to edit.
    pub file_path: &'a str,
    /// The first line deleted (1-based).
    pub start_line: AtLeast<1>,
    /// The last line deleted (inclusive; default `start_line`).
    pub end_line: Option<AtLeast<1>>,
}

/// How many lines `content` holds (a final newline starts none).
fn line_count(content: &str) -> usize {
    let body = content.strip_suffix('\n').unwrap_or(content);
    if content.is_empty() {
        0
    } else {
        body.split('\n').count()
    }
}

/// The range of a call: `end_line` defaults to `start_line` and may not
/// come before it.
fn range(start: AtLeast<1>, end: Option<AtLeast<1>>) -> Result<(usize, usize), ToolError> {
    let start = start.get();
    let end = end.map_or(start, AtLeast::get);
    if end < start {
        return Err(ToolError::Failed(format!(
            "end_line ({end}) is before start_line ({start})"
        )));
    }
    Ok((start, end))
}

/// Runs `edit` on `file_path` with the checks every line tool makes.
async fn edit_lines(
    backend: &dyn Backend,
    tool: &str,
    file_path: &str,
    edit: LineEdit,
) -> Result<String, ToolError> {
    let file = path::normalize(file_path)?;
    path::check_new_name(&file)?;
    let edit = edit.max_bytes(Some(backend.limits().write_limit()));
    match backend.edit_lines(&file, &edit).await {
        Ok(()) => Ok(file),
        Err(FsError::NotUtf8(p)) => Err(ToolError::Failed(format!(
            "{} is not valid UTF-8; {tool} will not rewrite it",
            shown(&p)
        ))),
        Err(FsError::CannotEncode { path, encoding }) => Err(ToolError::Failed(format!(
            "{} is {encoding} text, which cannot hold every character of content; the file was not changed",
            shown(&path)
        ))),
        Err(e) => Err(e.into()),
    }
}

fn empty_content(hint: &str) -> ToolError {
    ToolError::Failed(format!("content cannot be empty{hint}"))
}

impl FileTool for InsertLines {
    const NAME: &'static str = "insert_lines";
    const DESCRIPTION: &'static str = "Insert `content` (one or more lines) before line `line` of a file (1-based, as read_file numbers lines; the number of lines + 1 appends). New lines get the file's line endings.";
    type Args<'a> = InsertLinesArgs<'a>;

    fn parameters() -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Absolute path of the file to edit."},
                "line": {"type": "integer", "minimum": 1, "description": "1-based line the new lines go before; the number of lines + 1 appends."},
                "content": {"type": "string", "description": "The lines to insert (not empty)."}
            },
            "required": ["file_path", "line", "content"],
            "additionalProperties": false
        })
    }

    fn changed_path<'a>(args: &Self::Args<'a>) -> Option<&'a str> {
        Some(args.file_path)
    }

    async fn run(
        backend: &dyn Backend,
        args: InsertLinesArgs<'_>,
    ) -> Result<ToolOutput, ToolError> {
        if args.content.is_empty() {
            return Err(empty_content(""));
        }
        let line = args.line.get();
        let edit = LineEdit::insert(line, args.content);
        let file = edit_lines(backend, Self::NAME, args.file_path, edit).await?;
        Ok(ToolOutput::ok(format!(
            "Successfully inserted {} line(s) at line {line} in {}",
            line_count(args.content),
            shown(&file)
        )))
    }
}

impl FileTool for ReplaceLines {
    const NAME: &'static str = "replace_lines";
    const DESCRIPTION: &'static str = "Replace lines `start_line` to `end_line` (1-based, inclusive; `end_line` defaults to `start_line`) of a file by `content` (one or more lines). New lines get the file's line endings.";
    type Args<'a> = ReplaceLinesArgs<'a>;

    fn parameters() -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Absolute path of the file to edit."},
                "start_line": {"type": "integer", "minimum": 1, "description": "First line replaced (1-based)."},
                "end_line": {"type": "integer", "minimum": 1, "description": "Last line replaced (inclusive). Default start_line."},
                "content": {"type": "string", "description": "The new lines (not empty)."}
            },
            "required": ["file_path", "start_line", "content"],
            "additionalProperties": false
        })
    }

    fn changed_path<'a>(args: &Self::Args<'a>) -> Option<&'a str> {
        Some(args.file_path)
    }

    async fn run(
        backend: &dyn Backend,
        args: ReplaceLinesArgs<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let (start, end) = range(args.start_line, args.end_line)?;
        if args.content.is_empty() {
            return Err(empty_content("; use delete_lines to remove lines"));
        }
        let edit = LineEdit::replace(start, end, args.content);
        let file = edit_lines(backend, Self::NAME, args.file_path, edit).await?;
        Ok(ToolOutput::ok(format!(
            "Successfully replaced lines {start}-{end} with {} line(s) in {}",
            line_count(args.content),
            shown(&file)
        )))
    }
}

impl FileTool for DeleteLines {
    const NAME: &'static str = "delete_lines";
    const DESCRIPTION: &'static str = "Delete lines `start_line` to `end_line` (1-based, inclusive; `end_line` defaults to `start_line`) of a file.";
    type Args<'a> = DeleteLinesArgs<'a>;

    fn parameters() -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Absolute path of the file to edit."},
                "start_line": {"type": "integer", "minimum": 1, "description": "First line deleted (1-based)."},
                "end_line": {"type": "integer", "minimum": 1, "description": "Last line deleted (inclusive). Default start_line."}
            },
            "required": ["file_path", "start_line"],
            "additionalProperties": false
        })
    }

    fn changed_path<'a>(args: &Self::Args<'a>) -> Option<&'a str> {
        Some(args.file_path)
    }

    async fn run(
        backend: &dyn Backend,
        args: DeleteLinesArgs<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let (start, end) = range(args.start_line, args.end_line)?;
        let edit = LineEdit::delete(start, end);
        let file = edit_lines(backend, Self::NAME, args.file_path, edit).await?;
        Ok(ToolOutput::ok(format!(
            "Successfully deleted lines {start}-{end} from {}",
            shown(&file)
        )))
    }
}

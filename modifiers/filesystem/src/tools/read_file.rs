//! [`ReadFile`]: a window of a text file, numbered like `cat -n`; images
//! and PDFs are handed to `media.rs` (an image part; a PDF's text).
//!
//! ```text
//!  ReadFileArgs { file_path, offset = 0, limit = 500 } -> Backend::read -> ReadPage
//!    -> format_read: "{n:>6}\t{line}", long lines cut at 2000 chars,
//!       output stopped at 50,000 chars or at the read limit (limits.rs), paging footer
//! ```

use lc_agent::{ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{AtLeast, FileTool};
use crate::backend::{Backend, PageLine, ReadPage};
use crate::error::FsError;
use crate::media;
use crate::paging::MAX_READ_CHARS;
use crate::path;

/// Lines read when the call gives no `limit`.
const DEFAULT_LIMIT: usize = 500;

file_tool! {
    /// The `read_file` tool: a window of a text file, numbered like `cat -n`.
    ReadFile
}

/// The arguments of `read_file`.
#[derive(Debug, Clone, Deserialize)]
pub struct ReadFileArgs<'a> {
    /// The file.
    pub file_path: &'a str,
    /// 0-based index of the first line (default 0).
    pub offset: Option<AtLeast<0>>,
    /// Number of lines (default 500).
    pub limit: Option<AtLeast<1>>,
}

impl FileTool for ReadFile {
    const NAME: &'static str = "read_file";
    const DESCRIPTION: &'static str = "Read a text file, an image (PNG, JPEG, GIF, WebP: you are shown the image) or a PDF (its text, page by page). Lines are numbered like `cat -n`. `offset` is the 0-based index of the first line to show (default 0) and `limit` the number of lines (default 500); a footer tells you which offset to use to read more. Always read a file before editing it.";
    type Args<'a> = ReadFileArgs<'a>;

    fn parameters() -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Absolute path of the file, e.g. \"/src/main.rs\"."},
                "offset": {"type": "integer", "minimum": 0, "description": "0-based index of the first line to read. Default 0."},
                "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to read. Default 500."}
            },
            "required": ["file_path"],
            "additionalProperties": false
        })
    }

    async fn run(backend: &dyn Backend, args: ReadFileArgs<'_>) -> Result<ToolOutput, ToolError> {
        let offset = args.offset.map_or(0, AtLeast::get);
        let limit = args.limit.map_or(DEFAULT_LIMIT, AtLeast::get);
        let file = path::normalize(args.file_path)?;
        if media::named_media(&file)
            && let Some(out) = media::read_named(backend, &file, offset, limit).await?
        {
            return Ok(out);
        }
        match backend.read(&file, offset, limit).await {
            Ok(page) => Ok(ToolOutput::ok(format_read(
                &page,
                backend.limits().read_limit(),
            )?)),
            // An image without an image's name: shown when its bytes say so.
            Err(binary @ FsError::Binary { .. }) => {
                let bytes = backend.read_bytes(&file, media::MAX_MEDIA_BYTES).await;
                match bytes.ok().and_then(|b| {
                    media::answer(&file, &b, offset, limit, backend.limits().read_limit())
                }) {
                    Some(out) => Ok(out?),
                    None => Err(binary.into()),
                }
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// The printed form of one line: `cat -n` style, with the long-line
/// marker when it was cut.
fn format_line(n: usize, line: &PageLine) -> String {
    match (line.more_chars, line.more_exact) {
        (0, true) => format!("{n:>6}\t{}", line.text),
        (more, true) => format!(
            "{n:>6}\t{} ... [line truncated, {more} more chars]",
            line.text
        ),
        (more, false) => format!(
            "{n:>6}\t{} ... [line truncated, over {more} more chars]",
            line.text
        ),
    }
}

/// "of <total>" in the paging footers, or what is said when the file was
/// not counted to its end.
fn of_total(total: Option<usize>) -> String {
    match total {
        Some(total) => format!(" of {total}"),
        None => " of a file too large to count".to_string(),
    }
}

/// Formats a read window (`cat -n` lines, truncation, paging footer), and
/// last, for a file that is not plain UTF-8, `[File encoding: <name>]`.
/// The lines stop before they pass 50,000 chars (the spec) or
/// `read_limit` bytes ([`FileLimits`](crate::FileLimits)), whichever
/// comes first.
pub(crate) fn format_read(page: &ReadPage, read_limit: u64) -> Result<String, FsError> {
    let mut out = format_lines(page, read_limit)?;
    if let (Some(name), false) = (page.encoding, page.blank) {
        out.push_str(&format!("\n[File encoding: {name}]"));
    }
    Ok(out)
}

/// The lines of a read window and its paging footer.
fn format_lines(page: &ReadPage, read_limit: u64) -> Result<String, FsError> {
    if page.blank {
        return Ok("System reminder: File exists but has empty contents".to_string());
    }
    if let Some(total) = page.total.filter(|t| page.offset >= *t) {
        return Err(FsError::OffsetPastEnd {
            offset: page.offset,
            total,
        });
    }
    let mut out = String::new();
    let mut chars = 0usize;
    let mut bytes = 0u64;
    let mut shown = 0usize;
    for (i, line) in page.lines.iter().enumerate() {
        let n = page.offset + i + 1;
        let formatted = format_line(n, line);
        let added = formatted.chars().count() + usize::from(shown > 0);
        let added_bytes = (formatted.len() + usize::from(shown > 0)) as u64;
        let cut = if shown == 0 {
            None
        } else if chars + added > MAX_READ_CHARS {
            Some("50,000 chars".to_string())
        } else if bytes + added_bytes > read_limit {
            Some(format!("the read limit of {read_limit} bytes"))
        } else {
            None
        };
        if let Some(at) = cut {
            let (a, b) = (page.offset + 1, page.offset + shown);
            out.push_str(&format!(
                "\n[Output truncated at {at}. Showing lines {a}-{b}{}. Use offset={b} to read more.]",
                of_total(page.total)
            ));
            return Ok(out);
        }
        if shown > 0 {
            out.push('\n');
        }
        out.push_str(&formatted);
        chars += added;
        bytes += added_bytes;
        shown += 1;
    }
    let last = page.offset + shown;
    if page.total.is_none_or(|total| last < total) {
        out.push_str(&format!(
            "\n[Showing lines {}-{last}{}. Use offset={last} to read more.]",
            page.offset + 1,
            of_total(page.total)
        ));
    }
    Ok(out)
}

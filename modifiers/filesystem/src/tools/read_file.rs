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
use crate::backend::Backend;
use crate::error::FsError;
use crate::media;
use crate::path;
use crate::read_format::format_read;

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

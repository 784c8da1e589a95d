//! [`GrepEngine`]: the regex search every backend runs (`grep-regex` +
//! `grep-searcher`), and the note grep prints for an invalid regex.
//!
//! ```text
//!  GrepQuery --GrepEngine::new--> matcher (invalid regex -> literal text)
//!     search_bytes (in-memory text) | search_file (an open file)
//!        skip binary, decode UTF-16 --Searcher--> Collect (<= max_count + 1 lines;
//!        files_with_matches: the first match, then the file's search stops)
//!        --> FileMatches { path, lines: match + context }
//! ```
//!
//! Both read through the searcher's line buffer (in-memory text too, so
//! every backend answers alike), which bounds memory and time per line:
//! - a file with a NUL byte in its first 8 KiB is skipped as binary (the
//!   spec's rule); a NUL byte after them is searched as text;
//! - the buffer may not grow past [`GREP_LINE_LIMIT`]: a file with a longer
//!   line is not searched (`line_too_long`; the tool prints a note);
//! - printed lines are cut like `read_file`'s, at [`MAX_LINE_CHARS`] chars.

use std::io;

use grep_matcher::LineTerminator;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};

use super::backend::{FileMatches, GrepLine, GrepMode, GrepQuery};
use super::encoding::{
    classify, decode_utf16, read_head_into, text_reader, Encoding, BINARY_SNIFF_BYTES,
};
use super::error::{FsError, FsResult};
use super::paging::MAX_LINE_CHARS;

/// The longest line grep searches, in bytes (8 MiB): the searcher's buffer
/// never grows past it, so a file with a longer line is not searched (the
/// tool prints a note naming it) instead of being read whole into memory.
pub const GREP_LINE_LIMIT: usize = 8 << 20;

/// A compiled grep query: matcher plus searcher settings.
#[derive(Debug, Clone)]
pub(crate) struct GrepEngine {
    matcher: RegexMatcher,
    context: usize,
    limit: usize,
    /// Whether the answer prints lines (`content`); the other modes only
    /// count them, so no line text is copied.
    keep_text: bool,
}

impl GrepEngine {
    /// Compiles the query (an invalid pattern falls back to literal text;
    /// the tool has already said so in its note).
    pub(crate) fn new(query: &GrepQuery) -> FsResult<Self> {
        // As ripgrep: `^`/`$` match at every line start/end, and `$` also
        // before a `\r\n` (multi_line + crlf).
        let build = |fixed: bool| {
            RegexMatcherBuilder::new()
                .case_insensitive(query.case_insensitive)
                .fixed_strings(fixed)
                .multi_line(true)
                .crlf(true)
                .build(&query.pattern)
        };
        let matcher = match build(query.fixed_strings) {
            Ok(m) => m,
            Err(_) => build(true).map_err(|e| FsError::Io {
                path: query.pattern.clone(),
                reason: e.to_string(),
            })?,
        };
        Ok(Self {
            matcher,
            context: if query.mode == GrepMode::Content {
                query.context
            } else {
                0
            },
            // A file's path needs one match: its search stops there, and
            // `max_count` then counts files. The other modes need one more
            // line than they print, to say whether more exist.
            limit: if query.mode == GrepMode::FilesWithMatches {
                1
            } else {
                query.max_count.saturating_add(1)
            },
            keep_text: query.mode == GrepMode::Content,
        })
    }

    /// A searcher for this query (one per thread).
    pub(crate) fn searcher(&self) -> Searcher {
        SearcherBuilder::new()
            .line_number(true)
            .line_terminator(LineTerminator::crlf())
            .binary_detection(BinaryDetection::none())
            .heap_limit(Some(GREP_LINE_LIMIT))
            .before_context(self.context)
            .after_context(self.context)
            .build()
    }

    /// Searches bytes already in memory (skipped when binary).
    pub(crate) fn search_bytes(
        &self,
        searcher: &mut Searcher,
        vpath: &str,
        bytes: &[u8],
    ) -> Option<FileMatches> {
        let decoded;
        let bytes = match classify(bytes) {
            Encoding::Binary => return None,
            Encoding::Utf16Le | Encoding::Utf16Be => {
                decoded = decode_utf16(bytes, classify(bytes) == Encoding::Utf16Le);
                decoded.as_bytes()
            }
            // In-memory text is UTF-8 (a BOM is sniffed by the searcher).
            _ => bytes,
        };
        let mut sink = Collect::new(self.limit, self.keep_text);
        let outcome = searcher.search_reader(&self.matcher, bytes, &mut sink);
        sink.finish(vpath, outcome)
    }

    /// Searches an open file (binary files are skipped; UTF-16 files are
    /// transcoded by the searcher's BOM sniffing).
    pub(crate) fn search_file(
        &self,
        searcher: &mut Searcher,
        vpath: &str,
        file: &std::fs::File,
    ) -> io::Result<Option<FileMatches>> {
        let mut head = [0u8; BINARY_SNIFF_BYTES];
        let filled = read_head_into(file, &mut head)?;
        let mut sink = Collect::new(self.limit, self.keep_text);
        let outcome = match classify(&head[..filled]) {
            Encoding::Binary => return Ok(None),
            // Decoded as it is read (the searcher sniffs BOMs itself).
            Encoding::Windows1252 => searcher.search_reader(
                &self.matcher,
                text_reader(file, Encoding::Windows1252),
                &mut sink,
            ),
            _ => searcher.search_file(&self.matcher, file, &mut sink),
        };
        if let Err(e) = &outcome
            && !is_heap_limit(e)
        {
            return Err(clone_io_error(e));
        }
        Ok(sink.finish(vpath, outcome))
    }
}

/// Whether the searcher failed because a line did not fit in its buffer.
fn is_heap_limit(e: &io::Error) -> bool {
    e.to_string().contains("allocation limit")
}

fn clone_io_error(e: &io::Error) -> io::Error {
    io::Error::new(e.kind(), e.to_string())
}

/// Cuts a printed line as `read_file` does.
fn cut_line(text: String) -> String {
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => {
            let more = text[cut..].chars().count();
            format!("{} ... [line truncated, {more} more chars]", &text[..cut])
        }
        None => text,
    }
}

/// Collects matching and context lines, stopping after `limit` matches.
struct Collect {
    lines: Vec<GrepLine>,
    matches: usize,
    limit: usize,
    keep_text: bool,
}

impl Collect {
    fn new(limit: usize, keep_text: bool) -> Self {
        Self {
            lines: Vec::new(),
            matches: 0,
            limit,
            keep_text,
        }
    }

    fn push(&mut self, number: Option<u64>, bytes: &[u8], is_match: bool) {
        let text = if self.keep_text {
            let mut end = bytes.len();
            while end > 0 && (bytes[end - 1] == b'\n' || bytes[end - 1] == b'\r') {
                end -= 1;
            }
            cut_line(String::from_utf8_lossy(&bytes[..end]).into_owned())
        } else {
            String::new()
        };
        self.lines.push(GrepLine {
            number: number.unwrap_or(0),
            text,
            is_match,
        });
    }

    /// What the search of `vpath` found: `None` for no match, a
    /// `line_too_long` entry when the buffer hit its limit.
    fn finish(self, vpath: &str, outcome: io::Result<()>) -> Option<FileMatches> {
        match outcome {
            Err(e) if is_heap_limit(&e) => Some(FileMatches {
                path: vpath.to_string(),
                lines: Vec::new(),
                line_too_long: true,
                unreadable: false,
            }),
            Err(e) => {
                tracing::debug!(path = %vpath, error = %e, "grep: skipping unreadable file");
                None
            }
            Ok(()) if self.matches == 0 => None,
            Ok(()) => Some(FileMatches {
                path: vpath.to_string(),
                lines: self.lines,
                line_too_long: false,
                unreadable: false,
            }),
        }
    }
}

impl Sink for Collect {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let first = mat.line_number().unwrap_or(0);
        for (i, line) in mat.lines().enumerate() {
            self.push(Some(first + i as u64), line, true);
            self.matches += 1;
            if self.matches >= self.limit {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        self.push(ctx.line_number(), ctx.bytes(), false);
        Ok(true)
    }
}

/// The note grep prints for an invalid regex: `None` when `pattern` is a
/// valid regex.
pub(crate) fn invalid_regex_note(pattern: &str) -> Option<String> {
    let err = regex::Regex::new(pattern).err()?;
    let message = err.to_string();
    let reason = message
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid regex")
        .trim()
        .to_string();
    Some(format!(
        "Note: '{pattern}' is not a valid regex ({reason}); searched for it as literal text."
    ))
}

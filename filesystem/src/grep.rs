//! [`GrepEngine`]: the regex search every backend runs (`grep-regex` +
//! `grep-searcher`), and the note grep prints for an invalid regex.
//!
//! ```text
//!  GrepQuery --GrepEngine::new--> matcher (invalid regex -> literal text)
//!     search_bytes (in-memory text) | search_file (an open file)
//!        skip binary, decode UTF-16 --Searcher--> Collect (<= max_count + 1)
//!        --> FileMatches { path, lines: match + context }
//! ```

use std::io;

use grep_matcher::LineTerminator;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};

use super::backend::{FileMatches, FsError, FsResult, GrepLine, GrepMode, GrepQuery};
use super::encoding::{classify, decode_utf16, read_head_into, Encoding, BINARY_SNIFF_BYTES};

/// A compiled grep query: matcher plus searcher settings.
#[derive(Debug, Clone)]
pub struct GrepEngine {
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
    pub fn new(query: &GrepQuery) -> FsResult<Self> {
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
            limit: query.max_count.saturating_add(1),
            keep_text: query.mode == GrepMode::Content,
        })
    }

    /// A searcher for this query (one per thread).
    pub fn searcher(&self) -> Searcher {
        SearcherBuilder::new()
            .line_number(true)
            .line_terminator(LineTerminator::crlf())
            .binary_detection(BinaryDetection::none())
            .before_context(self.context)
            .after_context(self.context)
            .build()
    }

    /// Searches bytes already in memory (skipped when binary).
    pub fn search_bytes(
        &self,
        searcher: &mut Searcher,
        vpath: &str,
        bytes: &[u8],
    ) -> Option<FileMatches> {
        let decoded;
        let bytes = match classify(bytes) {
            Encoding::Binary => return None,
            Encoding::Utf8 => bytes,
            Encoding::Utf16Le | Encoding::Utf16Be => {
                decoded = decode_utf16(bytes, classify(bytes) == Encoding::Utf16Le);
                decoded.as_bytes()
            }
        };
        let mut sink = Collect::new(self.limit, self.keep_text);
        if searcher
            .search_slice(&self.matcher, bytes, &mut sink)
            .is_err()
        {
            return None;
        }
        sink.into_matches(vpath)
    }

    /// Searches an open file (binary files are skipped; UTF-16 files are
    /// transcoded by the searcher's BOM sniffing).
    pub fn search_file(
        &self,
        searcher: &mut Searcher,
        vpath: &str,
        file: &std::fs::File,
    ) -> io::Result<Option<FileMatches>> {
        let mut head = [0u8; BINARY_SNIFF_BYTES];
        let filled = read_head_into(file, &mut head)?;
        if classify(&head[..filled]) == Encoding::Binary {
            return Ok(None);
        }
        let mut sink = Collect::new(self.limit, self.keep_text);
        searcher.search_file(&self.matcher, file, &mut sink)?;
        Ok(sink.into_matches(vpath))
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
            String::from_utf8_lossy(&bytes[..end]).into_owned()
        } else {
            String::new()
        };
        self.lines.push(GrepLine {
            number: number.unwrap_or(0),
            text,
            is_match,
        });
    }

    fn into_matches(self, vpath: &str) -> Option<FileMatches> {
        (self.matches > 0).then(|| FileMatches {
            path: vpath.to_string(),
            lines: self.lines,
        })
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
pub fn invalid_regex_note(pattern: &str) -> Option<String> {
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

//! The search engine every backend shares: glob patterns (`globset`),
//! `.gitignore` rules (`ignore`), the regex searcher (`grep-searcher` and
//! `grep-regex`), binary/UTF-16 detection, streaming line paging and edit
//! planning. Using one engine is what makes every backend give the same
//! answers on the same files.

use std::collections::HashMap;
use std::io::{self, BufRead, Write};
use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use grep_matcher::LineTerminator;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::backend::{FileMatches, FsError, FsResult, GrepLine, GrepMode, GrepQuery, ReadPage};
use super::path;

/// How many leading bytes are checked for a NUL byte (binary files).
pub const BINARY_SNIFF_BYTES: usize = 8192;

/// A compiled `glob` pattern, matched against paths relative to the
/// search directory.
#[derive(Debug, Clone)]
pub struct GlobPattern {
    matcher: GlobMatcher,
}

impl GlobPattern {
    /// Compiles a pattern by the spec's rules: gitignore-style syntax,
    /// case-sensitive; without `/` it matches the file name at any depth;
    /// a leading `/` anchors it at the search directory; `..` is refused.
    ///
    /// ```
    /// use lc_agent_modifiers::filesystem::search::GlobPattern;
    ///
    /// let rs = GlobPattern::new("*.rs").unwrap();
    /// assert!(rs.is_match("src/a/b.rs"));
    /// let anchored = GlobPattern::new("/src/*.rs").unwrap();
    /// assert!(anchored.is_match("src/lib.rs") && !anchored.is_match("src/a/b.rs"));
    /// ```
    pub fn new(pattern: &str) -> FsResult<Self> {
        if pattern.split('/').any(|c| c == "..") {
            return Err(FsError::PathTraversal(pattern.to_string()));
        }
        let body = match pattern.strip_prefix('/') {
            Some(anchored) => anchored.to_string(),
            None if !pattern.contains('/') => format!("**/{pattern}"),
            None => pattern.to_string(),
        };
        let glob = GlobBuilder::new(&body)
            .literal_separator(true)
            .backslash_escape(true)
            .empty_alternates(true)
            .build()
            .map_err(|e| FsError::InvalidGlob {
                pattern: pattern.to_string(),
                reason: e.kind().to_string(),
            })?;
        Ok(Self {
            matcher: glob.compile_matcher(),
        })
    }

    /// Whether `relative` (no leading `/`) matches.
    pub fn is_match(&self, relative: &str) -> bool {
        self.matcher.is_match(relative)
    }
}

/// `.gitignore` rules collected per directory (virtual paths).
#[derive(Debug, Default)]
pub struct IgnoreRules {
    by_dir: HashMap<String, Gitignore>,
}

impl IgnoreRules {
    /// Adds the `.gitignore` found in directory `dir`.
    pub fn add(&mut self, dir: &str, content: &str) {
        let mut builder = GitignoreBuilder::new(dir);
        for line in content.lines() {
            // A bad line is skipped, as git does.
            let _ = builder.add_line(None, line);
        }
        match builder.build() {
            Ok(gi) => {
                self.by_dir.insert(dir.to_string(), gi);
            }
            Err(e) => tracing::debug!(dir, error = %e, "skipping unreadable .gitignore"),
        }
    }

    /// Whether there are no rules at all.
    pub fn is_empty(&self) -> bool {
        self.by_dir.is_empty()
    }

    /// Whether the `.gitignore` files above `vpath` ignore it (the deepest
    /// file that has an opinion wins; its parents are not checked).
    pub fn is_ignored(&self, vpath: &str, is_dir: bool) -> bool {
        if self.by_dir.is_empty() {
            return false;
        }
        let mut dir = path::parent(vpath);
        loop {
            if let Some(gi) = self.by_dir.get(dir) {
                let m = gi.matched(Path::new(vpath), is_dir);
                if m.is_ignore() {
                    return true;
                }
                if m.is_whitelist() {
                    return false;
                }
            }
            if dir == "/" {
                return false;
            }
            dir = path::parent(dir);
        }
    }

    /// Whether `file` is hidden by the rules below `base`: the file itself or
    /// any directory between `base` (exclusive) and it.
    pub fn hides_below(&self, base: &str, file: &str) -> bool {
        if self.by_dir.is_empty() {
            return false;
        }
        let Some(rel) = path::relative_to(file, base) else {
            return false;
        };
        let mut current = base.to_string();
        let parts: Vec<&str> = rel.split('/').collect();
        for (i, part) in parts.iter().enumerate() {
            current = path::join(&current, part);
            if self.is_ignored(&current, i + 1 < parts.len()) {
                return true;
            }
        }
        false
    }
}

/// What the first bytes of a file say about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8 (possibly invalid; shown lossily).
    Utf8,
    /// UTF-16 little endian, with BOM.
    Utf16Le,
    /// UTF-16 big endian, with BOM.
    Utf16Be,
    /// A NUL byte in the first 8 KiB.
    Binary,
}

/// Classifies a file by its first [`BINARY_SNIFF_BYTES`] bytes (a UTF-16
/// BOM is checked before the NUL byte).
pub fn classify(head: &[u8]) -> Encoding {
    if head.starts_with(&[0xFF, 0xFE]) {
        Encoding::Utf16Le
    } else if head.starts_with(&[0xFE, 0xFF]) {
        Encoding::Utf16Be
    } else if memchr::memchr(0, &head[..head.len().min(BINARY_SNIFF_BYTES)]).is_some() {
        Encoding::Binary
    } else {
        Encoding::Utf8
    }
}

/// Decodes UTF-16 bytes after the BOM (lossily).
pub fn decode_utf16(bytes: &[u8], little_endian: bool) -> String {
    let body = bytes.get(2..).unwrap_or_default();
    let units = body.chunks(2).map(|c| {
        let pair = [c[0], c.get(1).copied().unwrap_or(0)];
        if little_endian {
            u16::from_le_bytes(pair)
        } else {
            u16::from_be_bytes(pair)
        }
    });
    char::decode_utf16(units)
        .map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

/// Encodes text as UTF-16 with a BOM.
pub fn encode_utf16(text: &str, little_endian: bool) -> Vec<u8> {
    let mut out = if little_endian {
        vec![0xFF, 0xFE]
    } else {
        vec![0xFE, 0xFF]
    };
    for unit in text.encode_utf16() {
        let b = if little_endian {
            unit.to_le_bytes()
        } else {
            unit.to_be_bytes()
        };
        out.extend_from_slice(&b);
    }
    out
}

fn is_blank_bytes(bytes: &[u8]) -> bool {
    if bytes.is_ascii() {
        bytes
            .iter()
            .all(|b| *b == b' ' || (b'\t'..=b'\r').contains(b))
    } else {
        String::from_utf8_lossy(bytes)
            .chars()
            .all(char::is_whitespace)
    }
}

fn finish_line(buf: &mut Vec<u8>) -> String {
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    let line = String::from_utf8_lossy(buf).into_owned();
    buf.clear();
    line
}

/// Reads lines `offset..offset + limit` from a reader, counting all lines
/// without keeping them: memory stays at one buffer plus the window.
///
/// Lines end at `\n` (a `\r` before it is dropped); a final newline does not
/// start another line.
///
/// ```
/// use lc_agent_modifiers::filesystem::search::page;
///
/// let p = page(&b"a\r\nb\nc\n"[..], 1, 1).unwrap();
/// assert_eq!((p.lines, p.total), (vec!["b".to_string()], 3));
/// ```
pub fn page<R: BufRead>(mut reader: R, offset: usize, limit: usize) -> io::Result<ReadPage> {
    let end = offset.saturating_add(limit);
    let mut line = 0usize;
    let mut lines = Vec::new();
    let mut current = Vec::new();
    let mut blank = true;
    let mut last_was_newline = true;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let len = buf.len();
        if blank {
            blank = is_blank_bytes(buf);
        }
        let mut pos = 0;
        while pos < len {
            let rest = &buf[pos..];
            if line < offset {
                let need = offset - line;
                let count = bytecount::count(rest, b'\n');
                if count < need {
                    line += count;
                    pos = len;
                } else {
                    // The `need`-th newline ends the skipped region.
                    let at = memchr::memchr_iter(b'\n', rest).nth(need - 1).unwrap_or(0);
                    line += need;
                    pos += at + 1;
                }
            } else if line < end {
                match memchr::memchr(b'\n', rest) {
                    Some(i) => {
                        current.extend_from_slice(&rest[..i]);
                        lines.push(finish_line(&mut current));
                        line += 1;
                        pos += i + 1;
                    }
                    None => {
                        current.extend_from_slice(rest);
                        pos = len;
                    }
                }
            } else {
                line += bytecount::count(rest, b'\n');
                pos = len;
            }
        }
        last_was_newline = buf[len - 1] == b'\n';
        reader.consume(len);
    }
    if !last_was_newline {
        if line >= offset && line < end {
            lines.push(finish_line(&mut current));
        }
        line += 1;
    }
    Ok(ReadPage {
        offset,
        lines,
        total: line,
        blank,
    })
}

/// Cuts a string quoted in an error to its first 200 chars, then `...`.
pub fn cut_quote(s: &str) -> String {
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// Where `edit_file` replaces, in a file's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditPlan {
    /// Byte offsets of the occurrences to replace.
    pub starts: Vec<usize>,
    /// Length of the (line-ending adjusted) old string.
    pub old_len: usize,
    /// The (line-ending adjusted) replacement.
    pub new: String,
}

impl EditPlan {
    /// Writes the edited text.
    pub fn write_to<W: Write>(&self, text: &[u8], mut out: W) -> io::Result<()> {
        let mut pos = 0;
        for &start in &self.starts {
            out.write_all(&text[pos..start])?;
            out.write_all(self.new.as_bytes())?;
            pos = start + self.old_len;
        }
        out.write_all(&text[pos..])?;
        out.flush()
    }

    /// The edited text.
    pub fn apply(&self, text: &str) -> String {
        let mut out = Vec::with_capacity(text.len());
        // Writing to a Vec cannot fail.
        let _ = self.write_to(text.as_bytes(), &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// Plans an `edit_file` replacement: CRLF files get `\r\n` in both
/// strings; occurrences are counted without overlap.
pub fn plan_edit(text: &str, old: &str, new: &str, replace_all: bool) -> FsResult<EditPlan> {
    let crlf = memchr::memchr(b'\n', text.as_bytes())
        .is_some_and(|i| i > 0 && text.as_bytes()[i - 1] == b'\r');
    let adjust = |s: &str| s.replace("\r\n", "\n").replace('\n', "\r\n");
    let (old_adj, new_adj) = if crlf {
        (adjust(old), adjust(new))
    } else {
        (old.to_string(), new.to_string())
    };
    let starts: Vec<usize> =
        memchr::memmem::find_iter(text.as_bytes(), old_adj.as_bytes()).collect();
    match starts.len() {
        0 => Err(FsError::StringNotFound(cut_quote(old))),
        n if n > 1 && !replace_all => Err(FsError::SeveralOccurrences {
            string: cut_quote(old),
            count: n,
        }),
        _ => Ok(EditPlan {
            starts,
            old_len: old_adj.len(),
            new: new_adj,
        }),
    }
}

/// A compiled grep query: matcher plus searcher settings.
#[derive(Debug, Clone)]
pub struct GrepEngine {
    matcher: RegexMatcher,
    context: usize,
    limit: usize,
}

impl GrepEngine {
    /// Compiles the query (an invalid pattern falls back to literal text;
    /// the tool has already said so in its note).
    pub fn new(query: &GrepQuery) -> FsResult<Self> {
        let build = |fixed: bool| {
            RegexMatcherBuilder::new()
                .case_insensitive(query.case_insensitive)
                .fixed_strings(fixed)
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
        let mut sink = Collect::new(self.limit);
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
        let mut sink = Collect::new(self.limit);
        searcher.search_file(&self.matcher, file, &mut sink)?;
        Ok(sink.into_matches(vpath))
    }
}

/// Collects matching and context lines, stopping after `limit` matches.
struct Collect {
    lines: Vec<GrepLine>,
    matches: usize,
    limit: usize,
}

impl Collect {
    fn new(limit: usize) -> Self {
        Self {
            lines: Vec::new(),
            matches: 0,
            limit,
        }
    }

    fn push(&mut self, number: Option<u64>, bytes: &[u8], is_match: bool) {
        let mut end = bytes.len();
        while end > 0 && (bytes[end - 1] == b'\n' || bytes[end - 1] == b'\r') {
            end -= 1;
        }
        self.lines.push(GrepLine {
            number: number.unwrap_or(0),
            text: String::from_utf8_lossy(&bytes[..end]).into_owned(),
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

/// Fills `buf` from the start of `file` (without moving its cursor) and
/// returns how many bytes it got: fewer only at the end of the file.
pub(crate) fn read_head_into(file: &std::fs::File, buf: &mut [u8]) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut filled = 0;
    while filled < buf.len() {
        let n = file.read_at(&mut buf[filled..], filled as u64)?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paging_counts_lines() {
        let p = page(&b""[..], 0, 10).unwrap();
        assert_eq!((p.total, p.blank), (0, true));
        let p = page(&b"x\n\ny"[..], 0, 10).unwrap();
        assert_eq!(p.lines, ["x", "", "y"]);
        let p = page(
            std::io::BufReader::with_capacity(3, &b"aaaa\nbbbbbb\ncc\n"[..]),
            1,
            5,
        )
        .unwrap();
        assert_eq!(
            (p.lines, p.total),
            (vec!["bbbbbb".to_string(), "cc".to_string()], 3)
        );
    }

    #[test]
    fn edit_plans() {
        let plan = plan_edit("a\r\nb\r\na\r\nb", "a\nb", "c\nd", true).unwrap();
        assert_eq!(plan.apply("a\r\nb\r\na\r\nb"), "c\r\nd\r\nc\r\nd");
        assert_eq!(
            plan_edit("aaaa", "aa", "b", false).unwrap_err(),
            FsError::SeveralOccurrences {
                string: "aa".into(),
                count: 2
            }
        );
    }

    #[test]
    fn ignore_rules() {
        let mut rules = IgnoreRules::default();
        rules.add("/", "target/\n*.log\n!keep.log\n");
        rules.add("/sub", "*.txt\n");
        assert!(rules.hides_below("/", "/target/x.rs"));
        assert!(rules.hides_below("/", "/a/b.log"));
        assert!(!rules.hides_below("/", "/keep.log"));
        assert!(rules.hides_below("/", "/sub/a.txt"));
        assert!(!rules.hides_below("/", "/a.txt"));
    }
}

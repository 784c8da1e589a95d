//! [`LineEdit`]: `insert_lines`, `replace_lines` and `delete_lines` on a
//! 1-based range, planned and written in two streamed passes, so a huge
//! file costs a few pieces of memory on every backend.
//!
//! ```text
//!  pass 1  survey(reader): lines (counted like read_file), CRLF (first line
//!          ending), final line ending, UTF-8, and the byte offsets where the
//!          range starts and ends  --> range errors, or a LinePlan
//!  pass 2  LinePlan::write(reader, out): bytes before the range, the new
//!          lines (in the file's line ending), bytes after it
//! ```
//!
//! Lines are counted as `read_file` counts them: a final line ending does
//! not start another line (`"a\nb\n"` has 2 lines, an empty file none).
//! The new lines are `content` split the same way (`"x\ny\n"` and `"x\ny"`
//! are both 2 lines; a `\r\n` in `content` is a line ending too) and are
//! written with the file's line ending (`\r\n` when its first line ends so).
//! Whether the file ends with a line ending stays as it was (an empty file
//! gets one after its new lines).

use std::io::{self, Read, Write};

use crate::encoding::{classify, text_reader, Encoding, EncodingWriter};
use crate::error::{FsError, FsResult};
use crate::stream_edit::{pieces, Utf8Check};

/// One line edit: remove the lines `first..=last` (none for an insert) and
/// put the new lines there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineEdit {
    /// The 1-based line the edit starts at.
    first: usize,
    /// The last line removed (inclusive); `None` for an insert.
    last: Option<usize>,
    /// The new lines, without line endings.
    lines: Vec<String>,
    /// The largest file the edit may leave (`None`: no limit).
    max_bytes: Option<u64>,
}

impl LineEdit {
    /// Inserts `content`'s lines before line `line` (1-based; the number of
    /// lines + 1 appends).
    pub fn insert(line: usize, content: &str) -> Self {
        Self {
            first: line,
            last: None,
            lines: split_lines(content),
            max_bytes: None,
        }
    }

    /// Replaces lines `first..=last` (1-based, inclusive) by `content`'s lines.
    pub fn replace(first: usize, last: usize, content: &str) -> Self {
        Self {
            first,
            last: Some(last),
            lines: split_lines(content),
            max_bytes: None,
        }
    }

    /// Deletes lines `first..=last` (1-based, inclusive).
    pub fn delete(first: usize, last: usize) -> Self {
        Self {
            first,
            last: Some(last),
            lines: Vec::new(),
            max_bytes: None,
        }
    }

    /// Refuses the edit, leaving the file as it was, when the edited file
    /// would be over `bytes` bytes in its own encoding
    /// ([`FsError::EditTooLarge`]; `None`: no limit, the default).
    #[must_use]
    pub fn max_bytes(mut self, bytes: Option<u64>) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// The largest file the edit may leave.
    pub(crate) fn limit(&self) -> Option<u64> {
        self.max_bytes
    }

    /// The text of the new lines (for the encoding check).
    pub(crate) fn new_text(&self) -> String {
        self.lines.join("\n")
    }

    /// The first pass over `reader` (UTF-8 text; `check_utf8` for bytes
    /// read as they are): the spec-style range errors, or the plan.
    pub(crate) fn plan(
        &self,
        reader: impl Read,
        vpath: &str,
        check_utf8: bool,
    ) -> FsResult<LinePlan> {
        let io_err = |e: io::Error| FsError::Io {
            path: vpath.to_string(),
            reason: e.kind().to_string(),
        };
        let resume_line = self.last.map_or(self.first, |l| l + 1);
        let survey = survey(reader, self.first, resume_line, check_utf8).map_err(io_err)?;
        if !survey.utf8 {
            return Err(FsError::NotUtf8(vpath.to_string()));
        }
        let total = survey.lines;
        match self.last {
            None if self.first > total + 1 => {
                return Err(FsError::Refused(format!(
                    "Line {} exceeds file length + 1 ({total} lines); use line {} to append",
                    self.first,
                    total + 1
                )))
            }
            Some(_) if self.first > total => {
                return Err(FsError::Refused(format!(
                    "start_line {} exceeds file length ({total} lines)",
                    self.first
                )))
            }
            Some(last) if last > total => {
                return Err(FsError::Refused(format!(
                    "end_line {last} exceeds file length ({total} lines)"
                )))
            }
            _ => {}
        }
        // Whether the output's last line ends with a line ending.
        let final_eol = survey.ends_with_eol || total == 0;
        let reaches_end = resume_line > total;
        let eol: &'static [u8] = if survey.crlf { b"\r\n" } else { b"\n" };
        let mut new = Vec::new();
        if self.last.is_none() && self.first == total + 1 && total > 0 && !survey.ends_with_eol {
            // Appending after a last line that has no line ending.
            new.extend_from_slice(eol);
        }
        for (i, line) in self.lines.iter().enumerate() {
            new.extend_from_slice(line.as_bytes());
            let is_last = i + 1 == self.lines.len();
            if !(is_last && reaches_end && !final_eol) {
                new.extend_from_slice(eol);
            }
        }
        // Deleting through the last line of a file without a final line
        // ending: the line before the range loses its ending too.
        let strip = if self.lines.is_empty() && reaches_end && !final_eol && self.first > 1 {
            survey.eol_before_start
        } else {
            0
        };
        Ok(LinePlan {
            keep_until: survey.start_at - strip as u64,
            resume_at: survey.resume_at,
            length: survey.length,
            new,
        })
    }
}

/// `content` as lines: split on `\n` (a `\r` before it dropped), a final
/// line ending starting no line.
fn split_lines(content: &str) -> Vec<String> {
    let body = content.strip_suffix('\n').unwrap_or(content);
    if content.is_empty() {
        return Vec::new();
    }
    let body = if content.ends_with('\n') {
        body.strip_suffix('\r').unwrap_or(body)
    } else {
        body
    };
    body.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l).to_string())
        .collect()
}

/// What the first pass learnt.
struct Survey {
    /// Lines, counted like `read_file`.
    lines: usize,
    /// Whether the first line ending is `\r\n`.
    crlf: bool,
    /// Whether the text ends with `\n`.
    ends_with_eol: bool,
    utf8: bool,
    /// Bytes of text.
    length: u64,
    /// Where line `first` starts (the text's length when it does not exist).
    start_at: u64,
    /// Where the line after the range starts (the text's length when none).
    resume_at: u64,
    /// The length of the line ending just before `start_at` (0, 1 or 2).
    eol_before_start: usize,
}

fn survey(reader: impl Read, first: usize, resume: usize, check_utf8: bool) -> io::Result<Survey> {
    let mut utf8 = Utf8Check::new();
    // The line the next byte belongs to, and the offset of that byte.
    let (mut line, mut at) = (1usize, 0u64);
    let mut crlf: Option<bool> = None;
    let mut last_byte: Option<u8> = None;
    let (mut start_at, mut resume_at) = (None, None);
    let mut eol_before_start = 0;
    if first == 1 {
        start_at = Some(0);
    }
    if resume == 1 {
        resume_at = Some(0);
    }
    pieces(reader, |piece| {
        if check_utf8 {
            utf8.feed(piece);
        }
        for i in memchr::memchr_iter(b'\n', piece) {
            let prev = if i > 0 { Some(piece[i - 1]) } else { last_byte };
            let ending = if prev == Some(b'\r') { 2 } else { 1 };
            if crlf.is_none() {
                crlf = Some(ending == 2);
            }
            line += 1;
            let next = at + i as u64 + 1;
            if line == first {
                start_at = Some(next);
                eol_before_start = ending;
            }
            if line == resume {
                resume_at = Some(next);
            }
        }
        if let Some(&b) = piece.last() {
            last_byte = Some(b);
        }
        at += piece.len() as u64;
        Ok(())
    })?;
    let ends_with_eol = last_byte == Some(b'\n');
    let lines = match last_byte {
        None => 0,
        Some(b'\n') => line - 1,
        Some(_) => line,
    };
    Ok(Survey {
        lines,
        crlf: crlf.unwrap_or(false),
        ends_with_eol,
        utf8: !check_utf8 || utf8.finish(),
        length: at,
        start_at: start_at.unwrap_or(at).min(at),
        resume_at: resume_at.unwrap_or(at).min(at),
        eol_before_start,
    })
}

/// What the second pass writes: the text up to `keep_until`, `new`, the
/// text from `resume_at`.
pub(crate) struct LinePlan {
    keep_until: u64,
    resume_at: u64,
    /// The text's length in the first pass (the second must read as much).
    length: u64,
    new: Vec<u8>,
}

impl LinePlan {
    /// The second pass: writes the edited text to `out`. An error when the
    /// text is not as long as in the first pass (it changed in between: the
    /// caller then commits nothing).
    pub(crate) fn write(&self, reader: impl Read, out: &mut dyn Write) -> io::Result<()> {
        let mut at = 0u64;
        let mut wrote_new = false;
        pieces(reader, |piece| {
            let start = at;
            let end = at + piece.len() as u64;
            at = end;
            let slice = |from: u64, to: u64| &piece[(from - start) as usize..(to - start) as usize];
            if start < self.keep_until {
                out.write_all(slice(start, end.min(self.keep_until)))?;
            }
            if !wrote_new && end >= self.keep_until {
                out.write_all(&self.new)?;
                wrote_new = true;
            }
            if end > self.resume_at {
                out.write_all(slice(start.max(self.resume_at), end))?;
            }
            Ok(())
        })?;
        if !wrote_new {
            out.write_all(&self.new)?;
        }
        if at != self.length {
            return Err(io::Error::other(CHANGED));
        }
        out.flush()
    }
}

/// Why the second pass refused: the file changed after the first.
pub(crate) const CHANGED: &str =
    "the file changed while it was being edited; nothing was written, try again";

/// The edit applied to a file's bytes held in memory: the file's encoding
/// decides as on disk (binary refused, text decoded, written back in its
/// own encoding).
pub(crate) fn apply_bytes(edit: &LineEdit, vpath: &str, bytes: &[u8]) -> FsResult<Vec<u8>> {
    let encoding = classify(bytes);
    if encoding == Encoding::Binary {
        return Err(FsError::Binary {
            path: vpath.to_string(),
            size: bytes.len() as u64,
        });
    }
    if !encoding.can_hold(&edit.new_text()) {
        return Err(FsError::CannotEncode {
            path: vpath.to_string(),
            encoding: encoding.name().unwrap_or("UTF-8"),
        });
    }
    let text = || -> Box<dyn Read + '_> {
        match encoding {
            Encoding::Utf8 => Box::new(bytes),
            Encoding::Utf8Bom => Box::new(bytes.get(3..).unwrap_or_default()),
            other => text_reader(bytes, other),
        }
    };
    let utf8 = matches!(encoding, Encoding::Utf8 | Encoding::Utf8Bom);
    let plan = edit.plan(text(), vpath, utf8)?;
    let mut out = Vec::with_capacity(bytes.len() + plan.new.len());
    let written = match encoding {
        Encoding::Utf8 => plan.write(text(), &mut out),
        other => EncodingWriter::new(&mut out, other).and_then(|mut encoded| {
            plan.write(text(), &mut encoded)?;
            encoded.flush()
        }),
    };
    written.map_err(|e| FsError::Io {
        path: vpath.to_string(),
        reason: e.to_string(),
    })?;
    if let Some(limit) = edit.max_bytes {
        crate::limits::check_edit(vpath, out.len() as u64, limit)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(edit: LineEdit, text: &str) -> Result<String, String> {
        apply_bytes(&edit, "/f", text.as_bytes())
            .map(|b| String::from_utf8(b).unwrap())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn content_splits_like_read_file() {
        assert_eq!(split_lines(""), Vec::<String>::new());
        assert_eq!(split_lines("\n"), vec![""]);
        assert_eq!(split_lines("x\ny\n"), vec!["x", "y"]);
        assert_eq!(split_lines("x\r\ny"), vec!["x", "y"]);
        assert_eq!(split_lines("x\n\n"), vec!["x", ""]);
    }

    #[test]
    fn inserts_replaces_and_deletes() {
        let t = "a\nb\nc\n";
        assert_eq!(run(LineEdit::insert(1, "x"), t).unwrap(), "x\na\nb\nc\n");
        assert_eq!(
            run(LineEdit::insert(2, "x\ny\n"), t).unwrap(),
            "a\nx\ny\nb\nc\n"
        );
        assert_eq!(run(LineEdit::insert(4, "x"), t).unwrap(), "a\nb\nc\nx\n");
        assert_eq!(
            run(LineEdit::insert(4, "x"), "a\nb\nc").unwrap(),
            "a\nb\nc\nx"
        );
        assert_eq!(run(LineEdit::insert(1, "x"), "").unwrap(), "x\n");
        assert_eq!(run(LineEdit::replace(2, 3, "y"), t).unwrap(), "a\ny\n");
        assert_eq!(
            run(LineEdit::replace(3, 3, "y"), "a\nb\nc").unwrap(),
            "a\nb\ny"
        );
        assert_eq!(run(LineEdit::delete(2, 2), t).unwrap(), "a\nc\n");
        assert_eq!(run(LineEdit::delete(2, 3), "a\nb\nc").unwrap(), "a");
        assert_eq!(run(LineEdit::delete(2, 3), "a\r\nb\r\nc").unwrap(), "a");
        assert_eq!(run(LineEdit::delete(1, 3), t).unwrap(), "");
        assert_eq!(
            run(LineEdit::insert(2, "x"), "a\r\nb\r\n").unwrap(),
            "a\r\nx\r\nb\r\n"
        );
        assert_eq!(
            run(LineEdit::insert(1, "x"), "a\r\nb\r\n").unwrap(),
            "x\r\na\r\nb\r\n"
        );
    }

    #[test]
    fn range_errors() {
        let t = "a\nb\n";
        assert_eq!(
            run(LineEdit::insert(4, "x"), t).unwrap_err(),
            "Line 4 exceeds file length + 1 (2 lines); use line 3 to append"
        );
        assert_eq!(
            run(LineEdit::delete(3, 3), t).unwrap_err(),
            "start_line 3 exceeds file length (2 lines)"
        );
        assert_eq!(
            run(LineEdit::replace(2, 5, "x"), t).unwrap_err(),
            "end_line 5 exceeds file length (2 lines)"
        );
    }

    #[test]
    fn the_same_answer_in_tiny_pieces() {
        // The second pass in pieces of every size gives the one-buffer answer.
        let text = "one\r\ntwo\r\nthree\r\nfour";
        for edit in [
            LineEdit::insert(3, "x"),
            LineEdit::replace(2, 4, "y\nz"),
            LineEdit::delete(3, 4),
        ] {
            let whole = run(edit.clone(), text).unwrap();
            let plan = edit.plan(text.as_bytes(), "/f", true).unwrap();
            for size in 1..=text.len() {
                let mut out = Vec::new();
                // A reader handing out `size` bytes at a time.
                struct Small<'a>(std::iter::Peekable<std::slice::Chunks<'a, u8>>);
                impl Read for Small<'_> {
                    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                        match self.0.next() {
                            Some(p) => {
                                buf[..p.len()].copy_from_slice(p);
                                Ok(p.len())
                            }
                            None => Ok(0),
                        }
                    }
                }
                plan.write(Small(text.as_bytes().chunks(size).peekable()), &mut out)
                    .unwrap();
                assert_eq!(String::from_utf8(out).unwrap(), whole, "pieces of {size}");
            }
        }
    }
}

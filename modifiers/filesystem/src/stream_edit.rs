//! `edit_file` on a file too big to hold: the same answers as
//! [`plan_edit`](crate::edit::plan_edit), in bounded memory, for the disk
//! backends.
//!
//! ```text
//!  pass 1  survey(reader, old): UTF-8 check, CRLF (first line ending),
//!          occurrences of old as given and with \r\n  --> errors, or the needle
//!  pass 2  rewrite(reader, needle, new, out): text between the occurrences
//!          and the replacements, streamed into the temp file (atomic.rs)
//! ```
//!
//! Both passes read the file in [`CHUNK`]-byte pieces through a
//! [`Scanner`], which keeps at most the needle's length less one byte
//! between pieces, so an occurrence across a piece boundary is found, and
//! occurrences are counted without overlap exactly as `memmem` counts them
//! in one buffer. Memory: a piece, the needle and the replacement.

use std::io::{self, Read, Write};

use memchr::memmem;

use crate::edit::{crlf_variant, cut_quote};
use crate::error::{FsError, FsResult};

/// The bytes read per piece.
pub(crate) const CHUNK: usize = 1 << 20;

/// What a [`Scanner`] hands on: text between occurrences, or one occurrence.
enum Piece<'a> {
    Text(&'a [u8]),
    Match,
}

/// Finds the non-overlapping occurrences of a needle in a stream fed
/// piece by piece.
struct Scanner<'n> {
    finder: memmem::Finder<'n>,
    /// Bytes fed but not handed on yet (at most the needle's length less
    /// one between calls).
    buf: Vec<u8>,
}

impl<'n> Scanner<'n> {
    fn new(needle: &'n [u8]) -> Self {
        Self {
            finder: memmem::Finder::new(needle),
            buf: Vec::new(),
        }
    }

    /// Feeds the next piece; hands on what is settled, in order.
    fn feed(
        &mut self,
        piece: &[u8],
        out: &mut dyn FnMut(Piece<'_>) -> io::Result<()>,
    ) -> io::Result<()> {
        self.buf.extend_from_slice(piece);
        let n = self.finder.needle().len();
        let mut done = 0;
        for at in self.finder.find_iter(&self.buf) {
            out(Piece::Text(&self.buf[done..at]))?;
            out(Piece::Match)?;
            done = at + n;
        }
        // An occurrence not yet complete starts in the last n - 1 bytes.
        let keep_from = done.max(self.buf.len().saturating_sub(n.saturating_sub(1)));
        if keep_from > done {
            out(Piece::Text(&self.buf[done..keep_from]))?;
        }
        self.buf.drain(..keep_from);
        Ok(())
    }

    /// Hands on the rest once the stream has ended.
    fn finish(&mut self, out: &mut dyn FnMut(Piece<'_>) -> io::Result<()>) -> io::Result<()> {
        if !self.buf.is_empty() {
            out(Piece::Text(&self.buf))?;
            self.buf.clear();
        }
        Ok(())
    }
}

/// The first piece's size: a small file costs a small buffer.
const FIRST_PIECE: usize = 16 * 1024;

/// Reads `reader` to its end in pieces of at most [`CHUNK`] bytes (the
/// buffer starts at [`FIRST_PIECE`] and doubles while reads fill it).
pub(crate) fn pieces(
    mut reader: impl Read,
    mut each: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<()> {
    let mut piece = vec![0u8; FIRST_PIECE.min(CHUNK)];
    loop {
        let n = match reader.read(&mut piece) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        each(&piece[..n])?;
        if n == piece.len() && piece.len() < CHUNK {
            piece.resize((piece.len() * 2).min(CHUNK), 0);
        }
    }
}

/// Checks UTF-8 piece by piece (a character may straddle two pieces).
pub(crate) struct Utf8Check {
    /// The start of a character cut by the end of the last piece.
    carry: Vec<u8>,
    valid: bool,
}

impl Utf8Check {
    pub(crate) fn new() -> Self {
        Self {
            carry: Vec::new(),
            valid: true,
        }
    }

    pub(crate) fn feed(&mut self, piece: &[u8]) {
        if !self.valid {
            return;
        }
        let mut rest = piece;
        if !self.carry.is_empty() {
            // At most 3 bytes wait for the rest of their character.
            let take = rest.len().min(4 - self.carry.len());
            self.carry.extend_from_slice(&rest[..take]);
            match std::str::from_utf8(&self.carry) {
                Ok(_) => {
                    rest = &rest[take..];
                    self.carry.clear();
                }
                Err(e) if e.valid_up_to() > 0 => {
                    let used = e.valid_up_to() - (self.carry.len() - take);
                    rest = &rest[used..];
                    self.carry.clear();
                }
                Err(e) if e.error_len().is_none() && take == rest.len() => {
                    // Still incomplete: the piece was tiny.
                    return;
                }
                Err(_) => {
                    self.valid = false;
                    return;
                }
            }
        }
        match std::str::from_utf8(rest) {
            Ok(_) => {}
            Err(e) if e.error_len().is_none() => {
                self.carry.extend_from_slice(&rest[e.valid_up_to()..]);
            }
            Err(_) => self.valid = false,
        }
    }

    pub(crate) fn finish(self) -> bool {
        self.valid && self.carry.is_empty()
    }
}

/// What the first pass learnt.
struct Survey {
    /// Whether the file is UTF-8.
    utf8: bool,
    /// Whether its first line ending is `\r\n`.
    crlf: bool,
    /// Occurrences of `old` as given.
    plain: usize,
    /// Occurrences of `old` with `\r\n` line endings (when it has any).
    with_crlf: Option<usize>,
}

/// The first pass: UTF-8, line endings, and the occurrences of `old` both
/// ways (which one counts depends on the first line ending, which may come
/// late).
fn survey(reader: impl Read, old: &str, check_utf8: bool) -> io::Result<Survey> {
    let crlf_old = crlf_variant(old);
    let mut plain = Scanner::new(old.as_bytes());
    let mut other =
        (crlf_old.as_bytes() != old.as_bytes()).then(|| Scanner::new(crlf_old.as_bytes()));
    let (mut n_plain, mut n_other) = (0usize, 0usize);
    let mut utf8 = Utf8Check::new();
    let mut first_eol: Option<bool> = None;
    let mut last_byte: Option<u8> = None;
    pieces(reader, |piece| {
        if check_utf8 {
            utf8.feed(piece);
        }
        if first_eol.is_none()
            && let Some(i) = memchr::memchr(b'\n', piece)
        {
            let before = if i == 0 {
                last_byte
            } else {
                Some(piece[i - 1])
            };
            first_eol = Some(before == Some(b'\r'));
        }
        last_byte = piece.last().copied();
        plain.feed(piece, &mut |p| {
            if let Piece::Match = p {
                n_plain += 1;
            }
            Ok(())
        })?;
        if let Some(other) = other.as_mut() {
            other.feed(piece, &mut |p| {
                if let Piece::Match = p {
                    n_other += 1;
                }
                Ok(())
            })?;
        }
        Ok(())
    })?;
    Ok(Survey {
        utf8: !check_utf8 || utf8.finish(),
        crlf: first_eol.unwrap_or(false),
        plain: n_plain,
        with_crlf: other.map(|_| n_other),
    })
}

/// The second pass: the text with every occurrence of `needle` replaced by
/// `new`, written to `out`; returns how many it replaced.
fn rewrite(reader: impl Read, needle: &[u8], new: &[u8], out: &mut dyn Write) -> io::Result<usize> {
    let mut scanner = Scanner::new(needle);
    let mut count = 0;
    let mut emit = |p: Piece<'_>| match p {
        Piece::Text(t) => out.write_all(t),
        Piece::Match => {
            count += 1;
            out.write_all(new)
        }
    };
    pieces(reader, |piece| scanner.feed(piece, &mut emit))?;
    scanner.finish(&mut emit)?;
    Ok(count)
}

/// The needle and replacement an edit uses, once the first pass has said
/// the edit can be made (the errors of `plan_edit`, in its order).
pub(crate) struct StreamPlan {
    needle: String,
    new: String,
    /// How many occurrences the first pass found.
    pub(crate) count: usize,
}

/// The first pass of a streamed edit of `vpath`: `check_utf8` for bytes
/// read as they are (a decoded stream is text already).
pub(crate) fn plan(
    reader: impl Read,
    vpath: &str,
    old: &str,
    new: &str,
    replace_all: bool,
    check_utf8: bool,
) -> FsResult<StreamPlan> {
    let io_err = |e: io::Error| FsError::Io {
        path: vpath.to_string(),
        reason: e.kind().to_string(),
    };
    let survey = survey(reader, old, check_utf8).map_err(io_err)?;
    if !survey.utf8 {
        return Err(FsError::NotUtf8(vpath.to_string()));
    }
    let (needle, new, count) = match (survey.crlf, survey.with_crlf) {
        (true, Some(n)) => (crlf_variant(old), crlf_variant(new), n),
        (true, None) => (old.to_string(), crlf_variant(new), survey.plain),
        (false, _) => (old.to_string(), new.to_string(), survey.plain),
    };
    match count {
        0 => Err(FsError::StringNotFound(cut_quote(old))),
        n if n > 1 && !replace_all => Err(FsError::SeveralOccurrences {
            string: cut_quote(old),
            count: n,
        }),
        count => Ok(StreamPlan { needle, new, count }),
    }
}

impl StreamPlan {
    /// The second pass: writes the edited text to `out`; returns how many
    /// occurrences it replaced (not [`count`](Self::count) when the file
    /// changed in between: the caller then commits nothing).
    pub(crate) fn write(&self, reader: impl Read, out: &mut dyn Write) -> io::Result<usize> {
        rewrite(reader, self.needle.as_bytes(), self.new.as_bytes(), out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edit::plan_edit;

    /// The streamed edit with tiny pieces gives what the in-memory plan gives.
    fn streamed(text: &str, old: &str, new: &str, all: bool) -> FsResult<(String, usize)> {
        let plan = plan(text.as_bytes(), "/f", old, new, all, true)?;
        let mut out = Vec::new();
        let n = plan
            .write(text.as_bytes(), &mut out)
            .map_err(|e| FsError::Io {
                path: "/f".into(),
                reason: e.to_string(),
            })?;
        Ok((String::from_utf8(out).unwrap_or_default(), n))
    }

    #[test]
    fn scanner_finds_occurrences_across_pieces_without_overlap() {
        for text in [
            "aaaa",
            "xaaax",
            "abababab",
            "a\r\nb\r\na\r\nb",
            "héllo wörld héllo",
        ] {
            for needle in ["a", "aa", "aba", "a\r\nb", "llo", "ö"] {
                let whole: Vec<usize> = memmem::find_iter(text.as_bytes(), needle).collect();
                for size in 1..=text.len() {
                    let mut scanner = Scanner::new(needle.as_bytes());
                    let (mut at, mut found) = (0usize, Vec::new());
                    let mut note = |p: Piece<'_>| {
                        match p {
                            Piece::Text(t) => at += t.len(),
                            Piece::Match => {
                                found.push(at);
                                at += needle.len();
                            }
                        }
                        Ok(())
                    };
                    for piece in text.as_bytes().chunks(size) {
                        scanner.feed(piece, &mut note).unwrap();
                    }
                    scanner.finish(&mut note).unwrap();
                    assert_eq!(found, whole, "{text:?} {needle:?} pieces of {size}");
                    assert_eq!(at, text.len());
                }
            }
        }
    }

    #[test]
    fn the_same_answers_as_the_in_memory_plan() {
        let cases = [
            ("a\r\nb\r\na\r\nb", "a\nb", "c\nd", true),
            ("aaaa", "aa", "b", false),
            ("aaaa", "aa", "b", true),
            ("one\ntwo\n", "two", "2", false),
            ("one\ntwo\n", "three", "3", false),
            ("x\r\ny", "x\r\ny", "z", false),
            ("héllo\r\n", "é", "e\n", false),
        ];
        for (text, old, new, all) in cases {
            let memory = plan_edit(text, old, new, all).map(|p| (p.apply(text), p.starts.len()));
            assert_eq!(streamed(text, old, new, all), memory, "{text:?} {old:?}");
        }
    }

    #[test]
    fn utf8_is_checked_across_pieces() {
        let text = "aé€😀z".repeat(3);
        for size in 1..=text.len() {
            let mut check = Utf8Check::new();
            text.as_bytes().chunks(size).for_each(|p| check.feed(p));
            assert!(check.finish(), "pieces of {size}");
        }
        for bad in [&b"a\xffb"[..], b"\xe2\x82", b"ab\xe2\x82x"] {
            for size in 1..=bad.len() {
                let mut check = Utf8Check::new();
                bad.chunks(size).for_each(|p| check.feed(p));
                assert!(!check.finish(), "{bad:?} pieces of {size}");
            }
        }
    }
}

//! [`page`]: the window of lines `read_file` shows, read from any
//! [`BufRead`] in one streaming pass, in bounded memory whatever the file
//! (a 1 GiB file, a file of one 3 GB line).
//!
//! ```text
//!  reader --fill_buf--> skip `offset` lines (count newlines only)
//!                   --> keep `limit` lines: each at most MAX_LINE_CHARS chars
//!                       (the rest of a long line is counted, not kept); stop
//!                       keeping once the window passes MAX_READ_CHARS
//!                   --> count the lines after it, up to READ_SCAN_BUDGET bytes
//!                   --> ReadPage { lines, total, blank }
//! ```
//!
//! Whether a file is binary is decided before paging, by its first 8 KiB
//! (`encoding.rs`); a NUL byte later on is text like any other byte.
//!
//! Everything it reads but does not show (the cut-off part of long lines
//! and the lines after the window) counts against [`READ_SCAN_BUDGET`];
//! when the budget runs out the total is unknown (`total: None`) and the
//! tool says so instead of counting a huge file to its end. Where reading
//! stops depends only on the file's bytes and the arguments, so every
//! backend gives the same answer.

use std::io::{self, BufRead};

use super::backend::{PageLine, ReadPage};

/// Chars of one line `read_file` shows before cutting it (the spec's
/// long-line rule; grep's `content` lines are cut the same way).
pub const MAX_LINE_CHARS: usize = 2000;
/// Chars of `read_file` output before it stops at a whole line.
pub(crate) const MAX_READ_CHARS: usize = 50_000;
/// Bytes `read_file` reads without showing them (the cut-off part of long
/// lines, the lines after the window, counted for the footer) before it
/// stops reading: 16 MiB.
pub const READ_SCAN_BUDGET: u64 = 16 << 20;

/// Bytes of a line kept to show its first [`MAX_LINE_CHARS`] chars (a char
/// is at most 4 bytes, and one more char tells that the line goes on).
const KEEP_BYTES: usize = 4 * MAX_LINE_CHARS + 4;

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

/// UTF-8 chars starting in `bytes` (every byte that is not a continuation
/// byte): exact for valid UTF-8.
fn char_starts(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|b| (**b & 0xC0) != 0x80).count() as u64
}

/// The reading state of one [`page`] call.
struct Pager {
    offset: usize,
    /// The index of the line after the last one kept (the window shrinks
    /// to here once it holds more than [`MAX_READ_CHARS`]).
    window_end: usize,
    /// Complete lines read so far.
    line: usize,
    lines: Vec<PageLine>,
    kept_chars: usize,
    /// The kept bytes of the current window line.
    current: Vec<u8>,
    /// Chars of the current window line past [`KEEP_BYTES`], counted only.
    tail_chars: u64,
    /// The last byte of the current line (to drop a `\r` before `\n`).
    last_in_line: Option<u8>,
    /// Whether the last byte read ended a line (or nothing was read).
    at_line_start: bool,
    blank: bool,
    budget: u64,
    /// Reading stopped at the budget before the end of the file.
    stopped: bool,
}

/// What [`Pager::feed`] did with a buffer.
enum Fed {
    /// Took it all; read on.
    All,
    /// Took this many bytes and stopped (budget spent).
    Stopped(usize),
}

impl Pager {
    fn new(offset: usize, limit: usize) -> Self {
        Self {
            offset,
            window_end: offset.saturating_add(limit),
            line: 0,
            lines: Vec::new(),
            kept_chars: 0,
            current: Vec::new(),
            tail_chars: 0,
            last_in_line: None,
            at_line_start: true,
            blank: true,
            budget: READ_SCAN_BUDGET,
            stopped: false,
        }
    }

    /// Notes bytes read (blank check, line start).
    fn saw(&mut self, bytes: &[u8]) {
        if self.blank {
            self.blank = is_blank_bytes(bytes);
        }
        if let Some(last) = bytes.last() {
            self.at_line_start = *last == b'\n';
        }
    }

    fn feed(&mut self, buf: &[u8]) -> Fed {
        let len = buf.len();
        let mut pos = 0;
        while pos < len {
            let rest = &buf[pos..];
            if self.line < self.offset {
                let need = self.offset - self.line;
                let count = bytecount::count(rest, b'\n');
                let took = if count < need {
                    self.line += count;
                    rest.len()
                } else {
                    // The `need`-th newline ends the skipped region.
                    let at = memchr::memchr_iter(b'\n', rest).nth(need - 1).unwrap_or(0);
                    self.line += need;
                    at + 1
                };
                self.saw(&rest[..took]);
                pos += took;
            } else if self.line < self.window_end {
                let newline = memchr::memchr(b'\n', rest);
                let segment = &rest[..newline.unwrap_or(rest.len())];
                let keep = segment.len().min(KEEP_BYTES - self.current.len());
                let (kept, tail) = segment.split_at(keep);
                let tail_taken = tail
                    .len()
                    .min(usize::try_from(self.budget).unwrap_or(usize::MAX));
                let seen = &rest[..keep + tail_taken];
                self.saw(seen);
                self.current.extend_from_slice(kept);
                self.tail_chars += char_starts(&tail[..tail_taken]);
                self.budget -= tail_taken as u64;
                if let Some(last) = seen.last() {
                    self.last_in_line = Some(*last);
                }
                if tail_taken < tail.len() {
                    // The budget ran out inside this line.
                    self.stopped = true;
                    self.push_line(false);
                    return Fed::Stopped(pos + keep + tail_taken);
                }
                match newline {
                    Some(i) => {
                        self.at_line_start = true;
                        self.push_line(true);
                        pos += i + 1;
                    }
                    None => pos = len,
                }
            } else {
                if self.budget == 0 {
                    self.stopped = true;
                    return Fed::Stopped(pos);
                }
                let take = rest
                    .len()
                    .min(usize::try_from(self.budget).unwrap_or(usize::MAX));
                let region = &rest[..take];
                self.saw(region);
                self.line += bytecount::count(region, b'\n');
                self.budget -= take as u64;
                pos += take;
            }
        }
        Fed::All
    }

    /// Ends the current window line (`exact`: it really ended here).
    fn push_line(&mut self, exact: bool) {
        let mut tail = self.tail_chars;
        if exact && self.last_in_line == Some(b'\r') {
            if tail > 0 {
                tail -= 1;
            } else {
                self.current.pop();
            }
        }
        let decoded = String::from_utf8_lossy(&self.current);
        let shown = match decoded.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => PageLine {
                text: decoded[..cut].to_string(),
                more_chars: decoded[cut..].chars().count() as u64 + tail,
                more_exact: exact,
            },
            None => PageLine {
                text: decoded.into_owned(),
                more_chars: tail,
                more_exact: exact,
            },
        };
        self.kept_chars += shown.text.chars().count();
        self.lines.push(shown);
        self.current.clear();
        self.tail_chars = 0;
        self.last_in_line = None;
        self.line += 1;
        if self.kept_chars > MAX_READ_CHARS {
            // The tool stops before this; the rest of the window is only
            // counted.
            self.window_end = self.window_end.min(self.line);
        }
    }

    fn finish(mut self) -> ReadPage {
        if !self.stopped && !self.at_line_start {
            // A last line without a final newline.
            if self.line >= self.offset && self.line < self.window_end {
                self.push_line(true);
            } else {
                self.line += 1;
            }
        }
        ReadPage {
            offset: self.offset,
            lines: self.lines,
            total: (!self.stopped).then_some(self.line),
            blank: self.blank && !self.stopped,
            encoding: None,
        }
    }
}

/// Reads lines `offset..offset + limit` from a reader in bounded memory:
/// one buffer, at most [`MAX_LINE_CHARS`] chars per kept line, at most
/// about [`MAX_READ_CHARS`] chars of kept lines, and then the lines after
/// the window counted up to [`READ_SCAN_BUDGET`] bytes.
///
/// Lines end at `\n` (a `\r` before it is dropped); a final newline does not
/// start another line. NUL bytes are text here (the caller has checked
/// the first 8 KiB).
pub(crate) fn page<R: BufRead>(mut reader: R, offset: usize, limit: usize) -> io::Result<ReadPage> {
    let mut pager = Pager::new(offset, limit);
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let len = buf.len();
        match pager.feed(buf) {
            Fed::All => reader.consume(len),
            Fed::Stopped(n) => {
                reader.consume(n);
                break;
            }
        }
    }
    Ok(pager.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(p: io::Result<ReadPage>) -> ReadPage {
        p.unwrap()
    }

    fn shown(p: &ReadPage) -> Vec<&str> {
        p.lines.iter().map(|l| l.text.as_str()).collect()
    }

    #[test]
    fn a_window_drops_carriage_returns_and_counts_every_line() {
        let p = text(page(&b"a\r\nb\nc\n"[..], 1, 1));
        assert_eq!((shown(&p), p.total), (vec!["b"], Some(3)));
    }

    #[test]
    fn paging_counts_lines() {
        let p = text(page(&b""[..], 0, 10));
        assert_eq!((p.total, p.blank), (Some(0), true));
        let p = text(page(&b"x\n\ny"[..], 0, 10));
        assert_eq!(shown(&p), ["x", "", "y"]);
        let p = text(page(
            std::io::BufReader::with_capacity(3, &b"aaaa\nbbbbbb\ncc\n"[..]),
            1,
            5,
        ));
        assert_eq!((shown(&p), p.total), (vec!["bbbbbb", "cc"], Some(3)));
    }

    #[test]
    fn a_long_line_is_kept_only_up_to_the_cap_and_the_rest_is_counted() {
        let line = format!("{}é{}\r\nnext\n", "a".repeat(1999), "b".repeat(10_000));
        for cap in [7, 4096, 1 << 20] {
            let p = text(page(
                std::io::BufReader::with_capacity(cap, line.as_bytes()),
                0,
                5,
            ));
            assert_eq!(p.lines[0].text, format!("{}é", "a".repeat(1999)));
            assert_eq!(
                (p.lines[0].more_chars, p.lines[0].more_exact),
                (10_000, true)
            );
            assert_eq!(p.lines[1], PageLine::whole("next"));
            assert_eq!(p.total, Some(2));
        }
    }

    #[test]
    fn a_nul_is_text_and_one_past_the_budget_is_not_read() {
        let p = text(page(&b"a\nb\0\nc\n"[..], 1, 1));
        assert_eq!((shown(&p), p.total), (vec!["b\0"], Some(3)));
        let budget = READ_SCAN_BUDGET as usize;
        let mut bytes = b"a\n".to_vec();
        bytes.resize(2 + budget, b'\n');
        bytes.push(0);
        let p = text(page(&bytes[..], 0, 1));
        assert_eq!((shown(&p), p.total), (vec!["a"], None));
        bytes.pop();
        let p = text(page(&bytes[..], 0, 1));
        assert_eq!(p.total, Some(1 + budget));
    }

    #[test]
    fn the_window_stops_keeping_past_the_output_cap() {
        let text_ = "y".repeat(1000) + "\n";
        let p = text(page(text_.repeat(10_000).as_bytes(), 0, 10_000));
        assert_eq!(p.lines.len(), 51);
        assert_eq!(p.total, Some(10_000));
    }
}

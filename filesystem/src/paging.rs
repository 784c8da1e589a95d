//! [`page`]: the window of lines `read_file` shows, read from any
//! [`BufRead`] in one streaming pass (a 1 GiB file is never held in memory).
//!
//! ```text
//!  reader --fill_buf--> skip `offset` lines (count newlines only)
//!                   --> keep `limit` lines (CRLF -> LF, lossy UTF-8)
//!                   --> count the rest     -> ReadPage { lines, total, blank }
//! ```

use std::io::{self, BufRead};

use super::backend::ReadPage;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_drops_carriage_returns_and_counts_every_line() {
        let p = page(&b"a\r\nb\nc\n"[..], 1, 1).unwrap();
        assert_eq!((p.lines, p.total), (vec!["b".to_string()], 3));
    }

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
}

//! What a file's first bytes say: UTF-8 text, UTF-16 with a BOM, or binary
//! (a NUL byte in the first [`BINARY_SNIFF_BYTES`], the spec's rule: a NUL
//! byte after them is text to `read_file`, `edit_file` and `grep`); and the
//! UTF-16 transcoding they share.
//!
//! ```text
//!  FF FE ..  -> Utf16Le   (checked before the NUL byte)
//!  FE FF ..  -> Utf16Be
//!  .. 00 ..  -> Binary    (NUL in the first 8 KiB)
//!  else      -> Utf8      (invalid bytes shown as U+FFFD)
//! ```

use std::io;

/// How many leading bytes are checked for a NUL byte (binary files).
pub(crate) const BINARY_SNIFF_BYTES: usize = 8192;
/// What the first bytes of a file say about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
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
pub(crate) fn classify(head: &[u8]) -> Encoding {
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
pub(crate) fn decode_utf16(bytes: &[u8], little_endian: bool) -> String {
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

/// A writer taking UTF-8 text (in pieces that may cut a character) and
/// writing it as UTF-16 to `inner`: how a streamed edit writes a UTF-16
/// file back. The BOM is written first.
pub(crate) struct Utf16Writer<W: io::Write> {
    inner: W,
    little_endian: bool,
    /// The start of a character cut by the end of the last piece.
    carry: Vec<u8>,
}

impl<W: io::Write> Utf16Writer<W> {
    /// Writes the BOM, then whatever is written to it, as UTF-16.
    pub(crate) fn new(mut inner: W, little_endian: bool) -> io::Result<Self> {
        inner.write_all(if little_endian {
            &[0xFF, 0xFE]
        } else {
            &[0xFE, 0xFF]
        })?;
        Ok(Self {
            inner,
            little_endian,
            carry: Vec::new(),
        })
    }

    fn encode(&mut self, text: &str) -> io::Result<()> {
        let mut out = Vec::with_capacity(text.len() * 2);
        for unit in text.encode_utf16() {
            out.extend_from_slice(&if self.little_endian {
                unit.to_le_bytes()
            } else {
                unit.to_be_bytes()
            });
        }
        self.inner.write_all(&out)
    }
}

impl<W: io::Write> io::Write for Utf16Writer<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.carry.extend_from_slice(buf);
        let bytes = std::mem::take(&mut self.carry);
        let mut rest = &bytes[..];
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    self.encode(text)?;
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    // Valid up to there by the error's own word.
                    self.encode(std::str::from_utf8(valid).unwrap_or_default())?;
                    match e.error_len() {
                        None => {
                            self.carry.extend_from_slice(after);
                            break;
                        }
                        Some(bad) => {
                            self.encode("\u{FFFD}")?;
                            rest = &after[bad..];
                        }
                    }
                }
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.carry.is_empty() {
            self.carry.clear();
            self.encode("\u{FFFD}")?;
        }
        self.inner.flush()
    }
}

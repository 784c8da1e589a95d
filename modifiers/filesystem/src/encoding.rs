//! What a file's first bytes say: UTF-8 (with or without a BOM), UTF-16
//! with a BOM, Windows-1252, or binary (a NUL byte in the first
//! [`BINARY_SNIFF_BYTES`], the spec's rule: a NUL byte after them is text
//! to `read_file`, `edit_file` and `grep`); the readers that decode them
//! and [`EncodingWriter`], which writes text back in a file's own encoding.
//!
//! ```text
//!  FF FE ..     -> Utf16Le      (checked before the NUL byte)
//!  FE FF ..     -> Utf16Be
//!  .. 00 ..     -> Binary       (NUL in the first 8 KiB)
//!  EF BB BF ..  -> Utf8Bom      (the BOM is kept on edit, not shown)
//!  not UTF-8    -> Windows1252  (the first 8 KiB are not UTF-8: Latin-1 and
//!                                its Windows superset, every byte a character)
//!  else         -> Utf8         (invalid bytes later shown as U+FFFD)
//! ```
//!
//! The decision reads the first 8 KiB only, like the binary rule: a file
//! whose first invalid UTF-8 byte comes later is UTF-8 with a bad byte
//! (shown as U+FFFD, and `edit_file` will not rewrite it).

use std::io;

use encoding_rs::{UTF_16BE, UTF_16LE, UTF_8, WINDOWS_1252};

/// How many leading bytes are checked for a NUL byte (binary files) and
/// for UTF-8 (Windows-1252 files).
pub(crate) const BINARY_SNIFF_BYTES: usize = 8192;
/// What the first bytes of a file say about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// UTF-8 (possibly invalid past the first 8 KiB; shown lossily).
    Utf8,
    /// UTF-8 starting with a byte order mark.
    Utf8Bom,
    /// UTF-16 little endian, with BOM.
    Utf16Le,
    /// UTF-16 big endian, with BOM.
    Utf16Be,
    /// Windows-1252 (Latin-1): the first 8 KiB are not UTF-8.
    Windows1252,
    /// A NUL byte in the first 8 KiB.
    Binary,
}

impl Encoding {
    /// How `read_file` names the encoding; `None` for UTF-8 (and binary).
    pub(crate) fn name(self) -> Option<&'static str> {
        match self {
            Encoding::Utf8 | Encoding::Binary => None,
            Encoding::Utf8Bom => Some("UTF-8 with BOM"),
            Encoding::Utf16Le => Some("UTF-16LE"),
            Encoding::Utf16Be => Some("UTF-16BE"),
            Encoding::Windows1252 => Some("windows-1252"),
        }
    }

    /// The bytes that start a file in this encoding (its BOM).
    fn bom(self) -> &'static [u8] {
        match self {
            Encoding::Utf8Bom => &[0xEF, 0xBB, 0xBF],
            Encoding::Utf16Le => &[0xFF, 0xFE],
            Encoding::Utf16Be => &[0xFE, 0xFF],
            _ => &[],
        }
    }

    /// Whether `text` can be written in this encoding (Windows-1252 holds
    /// 251 characters; the others every one).
    pub(crate) fn can_hold(self, text: &str) -> bool {
        self != Encoding::Windows1252 || !WINDOWS_1252.encode(text).2
    }
}

/// Classifies a file by its first [`BINARY_SNIFF_BYTES`] bytes (a UTF-16
/// BOM is checked before the NUL byte).
pub(crate) fn classify(head: &[u8]) -> Encoding {
    let head = &head[..head.len().min(BINARY_SNIFF_BYTES)];
    if head.starts_with(&[0xFF, 0xFE]) {
        Encoding::Utf16Le
    } else if head.starts_with(&[0xFE, 0xFF]) {
        Encoding::Utf16Be
    } else if memchr::memchr(0, head).is_some() {
        Encoding::Binary
    } else if head.starts_with(&[0xEF, 0xBB, 0xBF]) {
        Encoding::Utf8Bom
    } else {
        match std::str::from_utf8(head) {
            // A character cut by the end of the window is not evidence.
            Err(e) if e.error_len().is_some() => Encoding::Windows1252,
            _ => Encoding::Utf8,
        }
    }
}

/// `reader` (the whole file, BOM included) as UTF-8 text: decoded as it is
/// read for every encoding but plain UTF-8, which is read as it is. The
/// BOM is not part of the text.
pub(crate) fn text_reader<'a, R: io::Read + 'a>(
    reader: R,
    encoding: Encoding,
) -> Box<dyn io::Read + 'a> {
    let decoder = match encoding {
        Encoding::Utf8 | Encoding::Binary => return Box::new(reader),
        Encoding::Utf8Bom => UTF_8,
        Encoding::Utf16Le => UTF_16LE,
        Encoding::Utf16Be => UTF_16BE,
        Encoding::Windows1252 => WINDOWS_1252,
    };
    Box::new(
        encoding_rs_io::DecodeReaderBytesBuilder::new()
            .encoding(Some(decoder))
            .bom_sniffing(true)
            .strip_bom(true)
            .build(reader),
    )
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
/// writing it to `inner` in a file's encoding, BOM first: how a streamed
/// edit writes a file back as it was encoded. Callers check
/// [`Encoding::can_hold`] first (Windows-1252 cannot hold every character).
pub(crate) struct EncodingWriter<W: io::Write> {
    inner: W,
    encoding: Encoding,
    /// The start of a character cut by the end of the last piece.
    carry: Vec<u8>,
}

impl<W: io::Write> EncodingWriter<W> {
    /// Writes the BOM, then whatever is written to it, in `encoding`.
    pub(crate) fn new(mut inner: W, encoding: Encoding) -> io::Result<Self> {
        inner.write_all(encoding.bom())?;
        Ok(Self {
            inner,
            encoding,
            carry: Vec::new(),
        })
    }

    fn encode(&mut self, text: &str) -> io::Result<()> {
        match self.encoding {
            Encoding::Utf16Le | Encoding::Utf16Be => {
                let le = self.encoding == Encoding::Utf16Le;
                let mut out = Vec::with_capacity(text.len() * 2);
                for unit in text.encode_utf16() {
                    out.extend_from_slice(&if le {
                        unit.to_le_bytes()
                    } else {
                        unit.to_be_bytes()
                    });
                }
                self.inner.write_all(&out)
            }
            Encoding::Windows1252 => self.inner.write_all(&WINDOWS_1252.encode(text).0),
            _ => self.inner.write_all(text.as_bytes()),
        }
    }
}

impl<W: io::Write> io::Write for EncodingWriter<W> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn first_bytes_decide() {
        assert_eq!(classify(b"caf\xe9\n"), Encoding::Windows1252);
        assert_eq!(classify("café".as_bytes()), Encoding::Utf8);
        assert_eq!(classify(b"\xef\xbb\xbfhi"), Encoding::Utf8Bom);
        assert_eq!(classify(b"\xef\xbb\xbf\0"), Encoding::Binary);
        // A character cut at the end of the window is still UTF-8.
        assert_eq!(classify(b"ab\xc3"), Encoding::Utf8);
    }

    #[test]
    fn windows_1252_round_trips_through_text() {
        let bytes: Vec<u8> = (1..=255u8).collect();
        let mut text = String::new();
        text_reader(&bytes[..], Encoding::Windows1252)
            .read_to_string(&mut text)
            .unwrap();
        assert!(text.contains('é') && text.contains('€'));
        let mut out = Vec::new();
        let mut writer = EncodingWriter::new(&mut out, Encoding::Windows1252).unwrap();
        // In pieces that cut characters.
        for piece in text.as_bytes().chunks(3) {
            writer.write_all(piece).unwrap();
        }
        writer.flush().unwrap();
        assert_eq!(out, bytes);
        assert!(!Encoding::Windows1252.can_hold("中"));
        assert!(Encoding::Windows1252.can_hold("café €"));
    }
}

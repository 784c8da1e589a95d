//! [`Fingerprint`]: a file named by the SHA-256 of its bytes (how
//! [`Backend::fingerprint`](crate::Backend::fingerprint) reports a file and
//! how rewinds name the contents they keep), and the hashing itself, whole
//! or in pieces.

use sha2::{Digest, Sha256};

/// What [`Backend::fingerprint`](crate::Backend::fingerprint) says about a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    /// The SHA-256 of its bytes, lowercase hex.
    pub sha256: String,
    /// Its bytes, when they were few enough to keep.
    pub bytes: Option<Vec<u8>>,
}

/// The SHA-256 of bytes, lowercase hex (how contents are named).
pub(crate) fn hash(bytes: &[u8]) -> String {
    let mut hasher = Hasher::default();
    hasher.update(bytes);
    hasher.finish()
}

/// [`hash`] of bytes given in pieces.
#[derive(Default)]
pub(crate) struct Hasher(Sha256);

impl Hasher {
    /// Adds the next piece.
    pub(crate) fn update(&mut self, piece: &[u8]) {
        self.0.update(piece);
    }

    /// The hash of all the pieces.
    pub(crate) fn finish(self) -> String {
        format!("{:x}", self.0.finalize())
    }
}

/// A writer that keeps a copy of what it passes on to `out`: what a file
/// holds after a change, known without reading it back.
pub(crate) struct CopyingWriter<'a, W: ?Sized> {
    /// Where the bytes go.
    pub(crate) out: &'a mut W,
    /// The bytes passed on so far.
    pub(crate) copy: &'a mut Vec<u8>,
}

impl<W: std::io::Write + ?Sized> std::io::Write for CopyingWriter<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.copy.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

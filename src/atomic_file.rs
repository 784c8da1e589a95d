//! Durable file replacement: the one way this crate writes a file.
//!
//! ```text
//!  <dir>/.save-XXXX.tmp ── write ─▶ fsync ─▶ rename over <path> ─▶ fsync <dir>
//! ```
//!
//! A crash at any point leaves either the old file or the new one, never a
//! torn one; after `write_atomic` returns, the new file survives a power
//! loss. Temporary files left by a crash match [`is_temp_name`], so
//! directory scans can skip (and clean up) them.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

const TEMP_PREFIX: &str = ".save-";
const TEMP_SUFFIX: &str = ".tmp";

/// Replaces `path` with `bytes` atomically and durably.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(TEMP_SUFFIX)
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    sync_dir(dir)
}

/// Makes a directory's entries (a rename, a removal) durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Whether a file name is one of [`write_atomic`]'s temporary files.
pub(crate) fn is_temp_name(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX) && name.ends_with(TEMP_SUFFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        write_atomic(&path, b"old").unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.json"]);
        assert!(is_temp_name(".save-abc123.tmp"));
        assert!(!is_temp_name("a.json"));
    }
}

//! [`write_atomically`]: crash-safe file writes through a confined
//! directory handle, so a process killed mid-write (or a power cut) leaves
//! the old bytes or the new bytes, never a torn file.
//!
//! ```text
//!  dir (cap_std::Dir, opened through the root)
//!    .lc-agent-tmp-<pid>-<n>-<t>  <- create_new, write, fsync, chmod(old mode)
//!        │ Replace:   rename over <name>            (atomic)
//!        │ CreateNew: hard link to <name>, unlink   (atomic, fails if it exists)
//!        ▼
//!    <name>: the old bytes until the commit, the new bytes after it
//!    fsync(dir): the commit itself survives a power cut
//! ```
//!
//! Every step names the temp file and the target relative to the same
//! directory handle, so nothing can lead out of the root through them.
//! A writer killed before the commit leaves its temp file behind: such names
//! ([`is_temp_name`]) are reserved and the `ls`, `glob` and `grep` tools
//! never show them. Replacing gives the file a new inode: its mode is
//! copied, other hard links to the old file keep the old bytes, and the
//! owner is whoever writes.

use std::ffi::OsStr;
use std::io::{self, BufWriter, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::fs::{Dir, OpenOptions};

/// The name prefix of temp files; names starting with it are reserved.
pub const TEMP_PREFIX: &str = ".lc-agent-tmp-";

/// Whether a file name is a (possibly left-over) temp file of a write.
pub(crate) fn is_temp_name(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX)
}

/// Whether any component of a virtual path is a temp file name (hidden
/// from `ls`, `glob` and `grep`).
pub(crate) fn is_temp_path(vpath: &str) -> bool {
    super::path::components(vpath).any(is_temp_name)
}

/// How the written temp file takes the target's place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Commit {
    /// Replace the target if it exists (its permissions are kept).
    Replace,
    /// Create the target; `ErrorKind::AlreadyExists` if it exists.
    CreateNew,
}

/// Removes the temp file unless it was committed.
struct TempName<'d> {
    dir: &'d Dir,
    name: Option<String>,
}

impl Drop for TempName<'_> {
    fn drop(&mut self) {
        if let Some(name) = self.name.take()
            && let Err(e) = self.dir.remove_file(&name)
        {
            tracing::debug!(error = %e, "could not remove a temp file");
        }
    }
}

fn temp_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{TEMP_PREFIX}{}-{n}-{nanos:x}", std::process::id())
}

/// Writes `name` in `dir` through a temp file in `dir`: `fill` writes the
/// bytes, which are flushed and fsynced before the commit.
pub(crate) fn write_atomically(
    dir: &Dir,
    name: &OsStr,
    commit: Commit,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let old = match commit {
        Commit::Replace => match dir.metadata(name) {
            Ok(md) if md.is_file() => {
                // Writing in place needed write access to the file: keep
                // refusing when it is read-only for us.
                dir.open_with(name, OpenOptions::new().write(true))?;
                Some(md.permissions())
            }
            _ => None,
        },
        Commit::CreateNew => None,
    };
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    let mut attempts = 0;
    let (file, temp) = loop {
        let candidate = temp_name();
        match dir.open_with(&candidate, &options) {
            Ok(file) => {
                break (
                    file,
                    TempName {
                        dir,
                        name: Some(candidate),
                    },
                )
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempts < 16 => attempts += 1,
            Err(e) => return Err(e),
        }
    };
    let mut out = BufWriter::with_capacity(1 << 20, file);
    fill(&mut out)?;
    let file = out.into_inner().map_err(|e| e.into_error())?;
    if let Some(permissions) = old {
        file.set_permissions(permissions)?;
    }
    file.sync_all()?;
    drop(file);
    commit_temp(dir, temp, name, commit)?;
    // The rename (or link) itself survives a power cut once the directory
    // is synced too.
    sync_dir(dir)
}

/// Makes the directory's entries durable (a no-op where directories cannot
/// be synced).
fn sync_dir(dir: &Dir) -> io::Result<()> {
    #[cfg(unix)]
    {
        // `Dir` handles may be path-only descriptors; open the directory
        // itself (read-only, through the same handle) to sync it.
        dir.open(".")?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

fn commit_temp(dir: &Dir, mut temp: TempName<'_>, name: &OsStr, commit: Commit) -> io::Result<()> {
    let Some(temp_name) = temp.name.as_deref() else {
        return Err(io::Error::other("temp file already committed"));
    };
    match commit {
        Commit::Replace => {
            dir.rename(temp_name, dir, name)?;
            temp.name = None;
            Ok(())
        }
        // The hard link fails when `name` exists; the temp name then goes
        // away with the guard.
        Commit::CreateNew => match dir.hard_link(temp_name, dir, name) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
            Err(e) => {
                // A filesystem without hard links: check, then rename.
                tracing::debug!(error = %e, "hard link failed; renaming instead");
                if dir.symlink_metadata(name).is_ok() {
                    return Err(io::Error::from(io::ErrorKind::AlreadyExists));
                }
                dir.rename(temp_name, dir, name)?;
                temp.name = None;
                Ok(())
            }
        },
    }
}

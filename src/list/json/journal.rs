//! The journal beside a session file: `<id>.journal`, one JSON line per
//! incremental save since the snapshot `<id>.json` was written.
//!
//! ```text
//!  incremental save ─▶ truncate a torn tail ─▶ append one line ─▶ fdatasync
//!  full save        ─▶ write <id>.json atomically ─▶ remove <id>.journal
//!  read             ─▶ snapshot + the records that follow it (a torn tail
//!                      or a record that does not follow is ignored)
//! ```
//!
//! A process killed while appending leaves a line without its `\n` (or a
//! line that does not parse): it is ignored on load and cut off by the
//! next save. A full save that dies between its two steps leaves records
//! whose revisions the new snapshot already holds: they are skipped.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use uuid::Uuid;

use super::corrupt;
use crate::atomic_file::sync_dir;
use crate::list::{ListError, ListResult};
use crate::network::format::{materialize, scan_journal, Scan};

/// The journal of the session file `snapshot`.
pub(super) fn journal_path(snapshot: &Path) -> PathBuf {
    snapshot.with_extension("journal")
}

/// The journal's bytes (none when there is no journal).
pub(super) fn read_journal(path: &Path) -> io::Result<Vec<u8>> {
    match fs::read(path) {
        Ok(b) => Ok(b),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// Scans `journal` after a snapshot at `snapshot_revision`.
pub(super) fn scan(
    path: &Path,
    id: Option<Uuid>,
    snapshot_revision: u64,
    journal: &[u8],
) -> ListResult<Scan> {
    scan_journal(snapshot_revision, journal).map_err(|reason| corrupt(path, id, reason))
}

/// A session as a full save writes it: the snapshot `text` with the
/// journal's records applied.
pub(super) fn whole(
    snapshot: &Path,
    id: Option<Uuid>,
    text: String,
    snapshot_revision: u64,
    journal: &[u8],
) -> ListResult<(String, Scan)> {
    let jpath = journal_path(snapshot);
    let found = scan(&jpath, id, snapshot_revision, journal)?;
    if !found.changes() {
        return Ok((text, found));
    }
    let json = materialize(&text, journal, &found).map_err(|reason| corrupt(&jpath, id, reason))?;
    Ok((json, found))
}

/// Appends `line` to the journal at `path`, first cutting it to
/// `valid_len` (a torn tail); returns the journal's new length.
pub(super) fn append(path: &Path, valid_len: u64, line: &[u8]) -> ListResult<u64> {
    let created = !path.exists();
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?;
    let len = file.metadata()?.len();
    if len != valid_len {
        if len > valid_len {
            tracing::warn!(path = %path.display(), ignored = len - valid_len,
                "cutting the unreadable tail of a session journal");
        }
        file.set_len(valid_len)?;
    }
    use std::io::Seek;
    file.seek(io::SeekFrom::Start(valid_len))?;
    file.write_all(line)?;
    file.sync_data()?;
    if created && let Some(dir) = path.parent() {
        sync_dir(dir)?;
    }
    Ok(valid_len + line.len() as u64)
}

/// Removes the journal of a session (after a full save or a delete).
///
/// No directory fsync of its own: after a full save (made durable before
/// this) a journal that comes back after a crash holds only records at or
/// below the snapshot's revision, which loading skips (as after a
/// compaction cut short); a delete buries the session first (durably) and syncs the
/// directory after. One fsync fewer per full save.
pub(super) fn remove(path: &Path) -> ListResult<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(ListError::Io(e)),
    }
}

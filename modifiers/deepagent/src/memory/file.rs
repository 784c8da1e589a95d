//! [`JsonFileBackend`]: memory entries as JSON lines in one append-only
//! file — the embedded default.
//!
//! ```text
//!  entries.jsonl   {"id":..,"user":"alice","kind":"fact",..}\n   one entry a line
//!                  {"id":..,"user":"bob",..}\n
//!                  {"id":..,"us                                 ◀ torn: a writer was killed
//!
//!  append: lock the file (flock) ─▶ cut a torn tail ─▶ write the lines ─▶ fsync ─▶ unlock
//!  read:   from the last offset read, complete lines only ─▶ per-user positions
//! ```
//!
//! An entry is committed when its line, newline included, is fsynced;
//! `append` returns only then. A writer killed mid-line leaves a tail
//! without a newline: readers never take it, and the next writer cuts it
//! before appending, so no committed entry is ever lost or damaged.
//! Several processes may append to one file (the lock orders them); each
//! reads what the others added. A complete line that is not an entry is
//! skipped with a warning (the rest of the file still counts).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use async_trait::async_trait;
use parking_lot::Mutex;

use super::backend::MemoryBackend;
use super::entry::MemoryEntry;
use super::error::{MemoryError, MemoryResult};

/// Entries in an append-only JSON-lines file (see the [module docs](super)).
#[derive(Debug)]
pub(super) struct JsonFileBackend {
    path: PathBuf,
    read: Mutex<ReadState>,
}

/// What this process has read of the file.
#[derive(Debug, Default)]
struct ReadState {
    /// Bytes read (always at a line boundary).
    offset: u64,
    /// Each user's lines: (offset, length without the newline).
    users: HashMap<String, Vec<(u64, usize)>>,
}

impl JsonFileBackend {
    /// The file at `path` (created, with its directory, when missing).
    pub(crate) fn open(path: impl Into<PathBuf>) -> MemoryResult<Self> {
        let path = path.into();
        let io = |source| MemoryError::Io {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
            if !path.exists() {
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .map_err(io)?;
                File::open(dir).and_then(|d| d.sync_all()).map_err(io)?;
            }
        }
        let backend = Self {
            path,
            read: Mutex::new(ReadState::default()),
        };
        backend.catch_up()?;
        Ok(backend)
    }

    fn io(&self, source: std::io::Error) -> MemoryError {
        MemoryError::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Reads the complete lines added since the last read.
    fn catch_up(&self) -> MemoryResult<()> {
        let mut state = self.read.lock();
        let mut file = File::open(&self.path).map_err(|e| self.io(e))?;
        let len = file.metadata().map_err(|e| self.io(e))?.len();
        if len <= state.offset {
            return Ok(());
        }
        file.seek(SeekFrom::Start(state.offset))
            .map_err(|e| self.io(e))?;
        let mut bytes = Vec::with_capacity((len - state.offset) as usize);
        file.take(len - state.offset)
            .read_to_end(&mut bytes)
            .map_err(|e| self.io(e))?;
        let mut at = 0;
        while let Some(nl) = memchr::memchr(b'\n', &bytes[at..]) {
            let line = &bytes[at..at + nl];
            let offset = state.offset + at as u64;
            match serde_json::from_slice::<MemoryEntry>(line) {
                Ok(entry) => state
                    .users
                    .entry(entry.user)
                    .or_default()
                    .push((offset, line.len())),
                Err(_) if line.iter().all(u8::is_ascii_whitespace) => {}
                Err(e) => tracing::warn!(
                    file = %self.path.display(), offset, error = %e,
                    "skipping a line of the memory file that is not an entry"
                ),
            }
            at += nl + 1;
        }
        state.offset += at as u64;
        Ok(())
    }

    /// Appends whole lines under the file lock, cutting a torn tail first.
    fn append_lines(&self, lines: &[u8]) -> MemoryResult<()> {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| self.io(e))?;
        let mut lock = fd_lock::RwLock::new(file);
        let mut guard = lock.write().map_err(|e| self.io(e))?;
        let file: &mut File = &mut guard;
        let len = file.metadata().map_err(|e| self.io(e))?.len();
        let keep = complete_prefix(file, len).map_err(|e| self.io(e))?;
        if keep < len {
            tracing::warn!(file = %self.path.display(), bytes = len - keep, "cutting a torn last line of the memory file (a writer was killed)");
            file.set_len(keep).map_err(|e| self.io(e))?;
        }
        file.write_all(lines).map_err(|e| self.io(e))?;
        file.sync_data().map_err(|e| self.io(e))?;
        Ok(())
    }
}

/// The length of the file up to and including its last newline.
fn complete_prefix(file: &File, len: u64) -> std::io::Result<u64> {
    const CHUNK: u64 = 64 * 1024;
    let mut end = len;
    let mut buf = vec![0u8; CHUNK as usize];
    while end > 0 {
        let start = end.saturating_sub(CHUNK);
        let chunk = &mut buf[..(end - start) as usize];
        file.read_exact_at(chunk, start)?;
        if let Some(i) = memchr::memrchr(b'\n', chunk) {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

#[async_trait]
impl MemoryBackend for JsonFileBackend {
    async fn append(&self, entries: &[MemoryEntry]) -> MemoryResult<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut lines = Vec::new();
        for entry in entries {
            serde_json::to_writer(&mut lines, entry)
                .map_err(|e| MemoryError::Invalid(e.to_string()))?;
            lines.push(b'\n');
        }
        self.append_lines(&lines)?;
        self.catch_up()
    }

    async fn entries_from(&self, user: &str, from: usize) -> MemoryResult<Vec<MemoryEntry>> {
        self.catch_up()?;
        let spans: Vec<(u64, usize)> = {
            let state = self.read.lock();
            match state.users.get(user) {
                Some(spans) => spans.get(from..).unwrap_or_default().to_vec(),
                None => return Ok(Vec::new()),
            }
        };
        if spans.is_empty() {
            return Ok(Vec::new());
        }
        let file = File::open(&self.path).map_err(|e| self.io(e))?;
        let mut out = Vec::with_capacity(spans.len());
        let mut buf = Vec::new();
        for (offset, len) in spans {
            buf.resize(len, 0);
            file.read_exact_at(&mut buf, offset)
                .map_err(|e| self.io(e))?;
            let entry = serde_json::from_slice(&buf).map_err(|e| MemoryError::Corrupt {
                location: format!("{} at byte {offset}", self.path.display()),
                reason: e.to_string(),
            })?;
            out.push(entry);
        }
        Ok(out)
    }

    fn describe(&self) -> String {
        self.path.display().to_string()
    }
}

//! The listing index of a [`JsonNetworkList`](super::JsonNetworkList):
//! one append-only `.index.jsonl` per user, rebuilt from the session files
//! whenever it cannot be trusted.
//!
//! ```text
//!  save   ─▶ append "P <id> <updated µs> <mtime ns> <info json>"
//!  delete ─▶ append "D <id>"
//!  list   ─▶ refresh (read new lines) ─▶ reconcile (first time: the
//!            directory wins) ─▶ sort, page, check each entry's file
//!  every COMPACT_EVERY bytes ─▶ compact (rewrite atomically)
//! ```

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{
    corrupt, identity, open_lock, read_whole, session_path, session_stamp, stored_size_and_mtime,
};
use crate::atomic_file::{is_temp_name, write_atomic};
use crate::list::{info_from_json, ListPage, ListResult, SessionInfo};

pub(super) const INDEX_FILE: &str = ".index.jsonl";
pub(super) const INDEX_LOCK: &str = ".index.lock";
/// The index is compacted each time its size crosses a multiple of this.
pub(super) const COMPACT_EVERY: u64 = 4 << 20;
/// Temporary files of killed saves older than this are removed.
pub(super) const STALE_TEMP: Duration = Duration::from_secs(3600);

/// One line of the index: `P <id> <updated_at µs> <mtime ns> <info json>`
/// or `D <id>`. The sort key comes first so that reading a large index
/// parses only the prefixes; the info JSON is parsed when its entry is on
/// a page.
pub(super) enum IndexLine {
    Put(Box<Entry>),
    Del(Uuid),
}

pub(super) struct Entry {
    id: Uuid,
    /// `updated_at` in µs since the epoch (the sort key).
    updated: i64,
    /// The session file's modification time when the entry was written.
    mtime_ns: u64,
    /// The info as JSON, parsed on demand into `info`.
    raw: Box<[u8]>,
    info: Option<SessionInfo>,
}

impl Entry {
    pub(super) fn new(info: SessionInfo, mtime_ns: u64) -> ListResult<Entry> {
        let raw = serde_json::to_vec(&info).map_err(crate::error::NetworkError::from)?;
        Ok(Entry {
            id: info.id,
            updated: info.updated_at.timestamp_micros(),
            mtime_ns,
            raw: raw.into_boxed_slice(),
            info: Some(info),
        })
    }

    fn info(&mut self) -> Result<&SessionInfo, String> {
        if self.info.is_none() {
            let info: SessionInfo = serde_json::from_slice(&self.raw).map_err(|e| e.to_string())?;
            self.info = Some(info);
        }
        self.info.as_ref().ok_or_else(|| "no info".to_string())
    }
}

impl IndexLine {
    fn encode(&self) -> Vec<u8> {
        match self {
            IndexLine::Put(e) => {
                let mut line = format!("P {} {} {} ", e.id, e.updated, e.mtime_ns).into_bytes();
                line.extend_from_slice(&e.raw);
                line.push(b'\n');
                line
            }
            IndexLine::Del(id) => format!("D {id}\n").into_bytes(),
        }
    }

    fn decode(line: &[u8]) -> Option<IndexLine> {
        let mut parts = line.splitn(5, |b| *b == b' ');
        let op = parts.next()?;
        let id = Uuid::try_parse_ascii(parts.next()?).ok()?;
        match op {
            b"D" => Some(IndexLine::Del(id)),
            b"P" => {
                let num = |p: Option<&[u8]>| std::str::from_utf8(p?).ok()?.parse::<i64>().ok();
                let updated = num(parts.next())?;
                let mtime_ns = u64::try_from(num(parts.next())?).ok()?;
                let raw = parts.next()?;
                if raw.first() != Some(&b'{') {
                    return None;
                }
                Some(IndexLine::Put(Box::new(Entry {
                    id,
                    updated,
                    mtime_ns,
                    raw: raw.into(),
                    info: None,
                })))
            }
            _ => None,
        }
    }
}

/// The cached index of one user.
#[derive(Default)]
pub(super) struct UserIndex {
    /// (device, inode) of the index file read so far.
    identity: Option<(u64, u64)>,
    /// Bytes of the index file applied so far.
    offset: u64,
    entries: HashMap<Uuid, Entry>,
    /// Files that could not be read: id -> (path, reason).
    corrupt: HashMap<Uuid, (PathBuf, String)>,
    reconciled: bool,
}

impl UserIndex {
    fn apply(&mut self, line: IndexLine) {
        match line {
            IndexLine::Put(entry) => {
                self.corrupt.remove(&entry.id);
                self.entries.insert(entry.id, *entry);
            }
            IndexLine::Del(id) => {
                self.corrupt.remove(&id);
                self.entries.remove(&id);
            }
        }
    }
}

/// Appends one line to the index (under a shared index lock, so that
/// compaction never drops it). Returns the index size before and after.
pub(super) fn append_index(dir: &Path, line: &IndexLine) -> ListResult<(u64, u64)> {
    let text = line.encode();
    let lock = open_lock(&dir.join(INDEX_LOCK))?;
    let _shared = lock.read()?;
    let mut file = OpenOptions::new()
        .append(true)
        .create(true)
        .open(dir.join(INDEX_FILE))?;
    let before = file.metadata()?.len();
    file.write_all(&text)?;
    Ok((before, before + text.len() as u64))
}

/// Parses complete index lines into `idx`; returns how many bytes were
/// used (up to the last newline).
pub(super) fn apply_lines(idx: &mut UserIndex, buf: &[u8], dir: &Path) -> usize {
    let Some(end) = buf.iter().rposition(|b| *b == b'\n') else {
        return 0;
    };
    for line in buf[..end].split(|b| *b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match IndexLine::decode(line) {
            Some(l) => idx.apply(l),
            None => tracing::warn!(dir = %dir.display(), "skipping a damaged index line"),
        }
    }
    end + 1
}

/// Reads a session file's listing info.
/// (A session with a journal is read whole: snapshot and records.)
pub(super) fn read_info(path: &Path, user: &str) -> Result<(SessionInfo, u64), String> {
    let stamp = session_stamp(path)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "the session file vanished".to_string())?;
    let meta = fs::metadata(path).map_err(|e| e.to_string())?;
    let modified: DateTime<Utc> = meta.modified().unwrap_or(SystemTime::now()).into();
    let (bytes, mtime) = stored_size_and_mtime(&stamp);
    let mut info = if stamp.1.is_some() {
        let id = path
            .file_stem()
            .and_then(|s| Uuid::parse_str(&s.to_string_lossy()).ok())
            .unwrap_or_default();
        let (json, _) = read_whole(path, id).map_err(|e| e.to_string())?;
        info_from_json(json.as_bytes(), user, modified)?
    } else {
        let bytes = fs::read(path).map_err(|e| e.to_string())?;
        info_from_json(&bytes, user, modified)?
    };
    info.bytes = bytes;
    Ok((info, mtime))
}

/// The ids of `<uuid>.json` files in a user directory; removes stale
/// temporary files on the way.
pub(super) fn scan_dir(dir: &Path) -> io::Result<Vec<(Uuid, PathBuf)>> {
    let mut out = Vec::new();
    let read = match fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e),
    };
    for entry in read {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if is_temp_name(&name) {
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > STALE_TEMP);
            if old {
                let _ = fs::remove_file(entry.path());
            }
            continue;
        }
        if let Some(id) = name
            .strip_suffix(".json")
            .and_then(|stem| Uuid::parse_str(stem).ok())
        {
            out.push((id, entry.path()));
        }
    }
    Ok(out)
}

/// Writes a fresh index from the session files (exclusive index lock).
pub(super) fn rebuild(dir: &Path, user: &str) -> ListResult<usize> {
    if !dir.exists() {
        return Ok(0);
    }
    let mut lock = open_lock(&dir.join(INDEX_LOCK))?;
    let _exclusive = lock.write()?;
    let mut text = Vec::new();
    let mut count = 0;
    for (id, path) in scan_dir(dir)? {
        match read_info(&path, user) {
            Ok((info, mtime_ns)) if info.id == id => {
                text.extend(IndexLine::Put(Box::new(Entry::new(info, mtime_ns)?)).encode());
                count += 1;
            }
            Ok(_) => {
                tracing::warn!(path = %path.display(), "session file names another id; left out of the index")
            }
            Err(reason) => {
                tracing::warn!(path = %path.display(), %reason, "corrupt session file left out of the index")
            }
        }
    }
    write_atomic(&dir.join(INDEX_FILE), &text)?;
    Ok(count)
}

/// Rewrites the index with one line per live session (exclusive lock).
pub(super) fn compact(dir: &Path) -> ListResult<()> {
    let mut lock = open_lock(&dir.join(INDEX_LOCK))?;
    let _exclusive = lock.write()?;
    let buf = match fs::read(dir.join(INDEX_FILE)) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let mut idx = UserIndex::default();
    apply_lines(&mut idx, &buf, dir);
    let mut entries: Vec<Entry> = idx.entries.into_values().collect();
    // Oldest first, as if saved in order.
    entries.sort_by_key(|e| (e.updated, e.id));
    let mut text = Vec::with_capacity(buf.len() / 2);
    for e in entries {
        text.extend(IndexLine::Put(Box::new(e)).encode());
    }
    write_atomic(&dir.join(INDEX_FILE), &text)?;
    tracing::debug!(dir = %dir.display(), before = buf.len(), after = text.len(), "index compacted");
    Ok(())
}

/// Brings the cached index up to date with the index file (and, the first
/// time, with the directory).
pub(super) fn refresh(dir: &Path, user: &str, idx: &mut UserIndex) -> ListResult<()> {
    if !dir.exists() {
        *idx = UserIndex::default();
        return Ok(());
    }
    let index_path = dir.join(INDEX_FILE);
    if !index_path.exists() {
        rebuild(dir, user)?;
        *idx = UserIndex::default();
    }
    let lock = open_lock(&dir.join(INDEX_LOCK))?;
    let shared = lock.read()?;
    let mut file = File::open(&index_path)?;
    let meta = file.metadata()?;
    let id = identity(&meta);
    if id.is_none() || id != idx.identity || meta.len() < idx.offset {
        // A new index file (first read, rebuilt or compacted): read it all
        // and reconcile it with the directory again.
        *idx = UserIndex {
            identity: id,
            ..UserIndex::default()
        };
    }
    if meta.len() > idx.offset {
        file.seek(SeekFrom::Start(idx.offset))?;
        let mut buf = Vec::with_capacity((meta.len() - idx.offset) as usize);
        file.read_to_end(&mut buf)?;
        let used = apply_lines(idx, &buf, dir);
        idx.offset += used as u64;
    }
    drop(shared);
    if !idx.reconciled {
        reconcile(dir, user, idx)?;
        idx.reconciled = true;
    }
    Ok(())
}

/// Adds session files the index does not know, drops entries whose file
/// is gone, and records unreadable files.
pub(super) fn reconcile(dir: &Path, user: &str, idx: &mut UserIndex) -> ListResult<()> {
    let files = scan_dir(dir)?;
    let present: HashSet<Uuid> = files.iter().map(|(id, _)| *id).collect();
    for (id, path) in files {
        if idx.entries.contains_key(&id) {
            continue;
        }
        match read_info(&path, user) {
            Ok((info, mtime_ns)) if info.id == id => {
                let line = IndexLine::Put(Box::new(Entry::new(info, mtime_ns)?));
                append_index(dir, &line)?;
                idx.apply(line);
            }
            Ok((info, _)) => {
                idx.corrupt.insert(
                    id,
                    (
                        path,
                        format!("the file is named {id} but holds network {}", info.id),
                    ),
                );
            }
            Err(reason) => {
                idx.corrupt.insert(id, (path, reason));
            }
        }
    }
    let gone: Vec<Uuid> = idx
        .entries
        .keys()
        .filter(|id| !present.contains(id))
        .copied()
        .collect();
    for id in gone {
        let line = IndexLine::Del(id);
        append_index(dir, &line)?;
        idx.apply(line);
    }
    Ok(())
}

pub(super) fn list_page(
    dir: &Path,
    user: &str,
    idx: &mut UserIndex,
    offset: usize,
    limit: usize,
) -> ListResult<ListPage> {
    let mut order: Vec<(i64, Uuid)> = idx.entries.values().map(|e| (e.updated, e.id)).collect();
    // Newest first; ties by id, descending (the order of Redis' ZREVRANGE).
    order.sort_unstable_by(|a, b| b.cmp(a));
    let total = order.len();
    let page: Vec<Uuid> = order
        .iter()
        .skip(offset)
        .take(limit)
        .map(|(_, id)| *id)
        .collect();
    let mut out = ListPage {
        total,
        ..ListPage::default()
    };
    // Check the page against the files: cheap (one stat each), and it
    // catches files changed or damaged behind the index's back.
    for id in page {
        let path = session_path(dir, id);
        let Some(entry) = idx.entries.get_mut(&id) else {
            continue;
        };
        let mtime = entry.mtime_ns;
        let indexed = entry.info().ok().map(|i| (i.bytes, mtime));
        let stamp = session_stamp(&path)
            .and_then(|s| s.ok_or_else(|| io::Error::from(io::ErrorKind::NotFound)));
        match stamp {
            Ok(stamp) if indexed == Some(stored_size_and_mtime(&stamp)) => {
                if let Some(info) = entry.info.clone() {
                    out.sessions.push(info);
                }
            }
            Ok(_) => match read_info(&path, user) {
                Ok((info, mtime_ns)) if info.id == id => {
                    let line = IndexLine::Put(Box::new(Entry::new(info.clone(), mtime_ns)?));
                    append_index(dir, &line)?;
                    idx.apply(line);
                    out.sessions.push(info);
                }
                Ok(_) => out.errors.push(corrupt(
                    &path,
                    Some(id),
                    "the file holds another network id",
                )),
                Err(reason) => out.errors.push(corrupt(&path, Some(id), reason)),
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                idx.entries.remove(&id);
                out.total -= 1;
            }
            Err(e) => out
                .errors
                .push(corrupt(&path, Some(id), format!("unreadable: {e}"))),
        }
    }
    if offset > 0 {
        return Ok(out);
    }
    let mut bad: Vec<_> = idx.corrupt.iter().collect();
    bad.sort_by_key(|(id, _)| **id);
    for (id, (path, reason)) in bad {
        out.errors.push(corrupt(path, Some(*id), reason.clone()));
    }
    Ok(out)
}

//! [`JsonNetworkList`]: sessions as JSON files in a directory.
//!
//! ```text
//! <root>/<user>/<id>.json          one network, exactly RunnableNetwork::to_json()
//! <root>/<user>/.index.jsonl       append-only listing index (rebuildable)
//! <root>/<user>/.index.lock        guards index compaction
//! <root>/<user>/.locks/<id>.lock   one advisory lock per session
//! ```
//!
//! **Saves are atomic and isolated.** A save takes the session's advisory
//! lock (`flock`), checks the stored revision, writes a temporary file in the
//! same directory, fsyncs it, renames it over `<id>.json` and fsyncs the
//! directory. A process killed at any instant leaves the old or the new
//! version, never a torn file. A save touches only its own file (and
//! appends one line to the index), so processes writing different sessions
//! never interfere, and two writing the same session are serialized by the
//! lock and checked by revision, so neither loses an update silently.
//!
//! **Listing never parses networks.** Each save appends a small line (id,
//! name, timestamps, node count, size, revision, metadata) to
//! `.index.jsonl`; a list reads only the lines it has not seen yet (the
//! index is cached per [`JsonNetworkList`] and shared by its clones), sorts
//! and pages. The files stay the only copy of the sessions: the index is
//! rebuilt from them when it is missing ([`JsonNetworkList::rebuild_index`]
//! does it on demand), the first listing in a process reconciles it with
//! the directory, and the entries of every returned page are checked
//! against their files (size and modification time), so a file changed or
//! corrupted behind the index's back is re-read or reported. The index is
//! compacted every few MiB of appends.
//!
//! **Corrupt files** are reported, never fatal: [`NetworkList::list`] and
//! [`NetworkList::load_all`] return them as error entries and go on;
//! [`NetworkList::load`] returns [`ListError::Corrupt`] naming the file.
//! Saving over a corrupt file first moves it aside to
//! `<id>.json.corrupt-<timestamp>` (kept for a human to look at).
//!
//! Lock files are left in place after a delete: removing a lock file that
//! another process may be waiting on would break the lock.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use uuid::Uuid;

use super::{
    info_from_json, stamp, validate_user, ListError, ListPage, ListQuery, ListResult, NetworkList,
    SessionInfo, DEFAULT_USER,
};
use crate::network::RunnableNetwork;

const INDEX_FILE: &str = ".index.jsonl";
const INDEX_LOCK: &str = ".index.lock";
const LOCK_DIR: &str = ".locks";
const TEMP_PREFIX: &str = ".save-";
const TEMP_SUFFIX: &str = ".tmp";
/// The index is compacted each time its size crosses a multiple of this.
const COMPACT_EVERY: u64 = 4 << 20;
/// Temporary files of killed saves older than this are removed.
const STALE_TEMP: Duration = Duration::from_secs(3600);

/// Sessions as JSON files under `<root>/<user>/` (see the [module
/// docs](self) for the layout and guarantees).
///
/// Clones share the listing cache. Every file operation runs on tokio's
/// blocking pool.
///
/// ```
/// use lc_agent::list::{JsonNetworkList, ListQuery, NetworkList};
/// use lc_agent::RunnableNetwork;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir()?;
/// let sessions = JsonNetworkList::new(dir.path());
/// let net = RunnableNetwork::builder().name("first").build();
/// sessions.save(&net).await?;
/// assert!(dir.path().join("default").join(format!("{}.json", net.id())).exists());
///
/// let loaded = sessions.load(net.id()).await?;
/// assert_eq!(loaded.to_json()?, net.to_json()?);
/// assert_eq!(sessions.list(&ListQuery::default()).await?.total, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct JsonNetworkList {
    inner: Arc<Inner>,
    user: String,
}

struct Inner {
    root: PathBuf,
    indexes: Mutex<HashMap<String, Arc<Mutex<UserIndex>>>>,
}

impl std::fmt::Debug for JsonNetworkList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonNetworkList")
            .field("root", &self.inner.root)
            .field("user", &self.user)
            .finish()
    }
}

/// One line of the index: `P <id> <updated_at µs> <mtime ns> <info json>`
/// or `D <id>`. The sort key comes first so that reading a large index
/// parses only the prefixes; the info JSON is parsed when its entry is on
/// a page.
enum IndexLine {
    Put(Box<Entry>),
    Del(Uuid),
}

struct Entry {
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
    fn new(info: SessionInfo, mtime_ns: u64) -> ListResult<Entry> {
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
struct UserIndex {
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

impl JsonNetworkList {
    /// Sessions under `root` (created on the first save), for the user
    /// [`DEFAULT_USER`].
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            inner: Arc::new(Inner {
                root: root.into(),
                indexes: Mutex::new(HashMap::new()),
            }),
            user: DEFAULT_USER.to_string(),
        }
    }

    /// Sessions under [`JsonNetworkList::default_root`].
    pub fn open_default() -> Self {
        Self::new(Self::default_root())
    }

    /// `$LC_AGENT_HOME/sessions`, else `~/.lc-agent/sessions` (else
    /// `.lc-agent/sessions` when there is no home directory).
    pub fn default_root() -> PathBuf {
        match std::env::var_os("LC_AGENT_HOME") {
            Some(home) if !home.is_empty() => PathBuf::from(home).join("sessions"),
            _ => dirs::home_dir()
                .unwrap_or_default()
                .join(".lc-agent")
                .join("sessions"),
        }
    }

    /// The same directory, working in another user's namespace (shares the
    /// listing cache).
    pub fn with_user(&self, user: impl Into<String>) -> ListResult<Self> {
        let user = user.into();
        validate_user(&user)?;
        Ok(Self {
            inner: self.inner.clone(),
            user,
        })
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// The file that holds a session of this list's user.
    pub fn path_of(&self, id: Uuid) -> PathBuf {
        session_path(&self.user_dir(&self.user), id)
    }

    /// Rebuilds this user's index from the session files (only needed if
    /// the index was edited or damaged by hand; listing repairs the usual
    /// cases by itself). Returns the number of sessions found.
    pub async fn rebuild_index(&self) -> ListResult<usize> {
        let dir = self.user_dir(&self.user);
        let user = self.user.clone();
        let index = self.index_of(&self.user);
        blocking(move || {
            let mut idx = index.lock();
            *idx = UserIndex::default();
            rebuild(&dir, &user)
        })
        .await
    }

    fn user_dir(&self, user: &str) -> PathBuf {
        self.inner.root.join(user)
    }

    fn index_of(&self, user: &str) -> Arc<Mutex<UserIndex>> {
        self.inner
            .indexes
            .lock()
            .entry(user.to_string())
            .or_default()
            .clone()
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> ListResult<T> + Send + 'static,
) -> ListResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ListError::Io(io::Error::other(format!("file task failed: {e}"))))?
}

fn session_path(dir: &Path, id: Uuid) -> PathBuf {
    dir.join(format!("{id}.json"))
}

fn mtime_ns(meta: &fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(unix)]
fn identity(meta: &fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn identity(_meta: &fs::Metadata) -> Option<(u64, u64)> {
    None
}

fn open_lock(path: &Path) -> io::Result<fd_lock::RwLock<File>> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    Ok(fd_lock::RwLock::new(file))
}

fn sync_dir(dir: &Path) -> io::Result<()> {
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

/// Writes `bytes` to `path` atomically: temp file, fsync, rename, fsync dir.
fn write_atomic(dir: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(TEMP_SUFFIX)
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    sync_dir(dir)
}

/// Appends one line to the index (under a shared index lock, so that
/// compaction never drops it). Returns the index size before and after.
fn append_index(dir: &Path, line: &IndexLine) -> ListResult<(u64, u64)> {
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
fn apply_lines(idx: &mut UserIndex, buf: &[u8], dir: &Path) -> usize {
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
fn read_info(path: &Path, user: &str) -> Result<(SessionInfo, u64), String> {
    let bytes = fs::read(path).map_err(|e| e.to_string())?;
    let meta = fs::metadata(path).map_err(|e| e.to_string())?;
    let modified: DateTime<Utc> = meta.modified().unwrap_or(SystemTime::now()).into();
    let info = info_from_json(&bytes, user, modified)?;
    Ok((info, mtime_ns(&meta)))
}

/// The ids of `<uuid>.json` files in a user directory; removes stale
/// temporary files on the way.
fn scan_dir(dir: &Path) -> io::Result<Vec<(Uuid, PathBuf)>> {
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
        if name.starts_with(TEMP_PREFIX) && name.ends_with(TEMP_SUFFIX) {
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
fn rebuild(dir: &Path, user: &str) -> ListResult<usize> {
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
    write_atomic(dir, &dir.join(INDEX_FILE), &text)?;
    Ok(count)
}

/// Rewrites the index with one line per live session (exclusive lock).
fn compact(dir: &Path) -> ListResult<()> {
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
    write_atomic(dir, &dir.join(INDEX_FILE), &text)?;
    tracing::debug!(dir = %dir.display(), before = buf.len(), after = text.len(), "index compacted");
    Ok(())
}

/// Brings the cached index up to date with the index file (and, the first
/// time, with the directory).
fn refresh(dir: &Path, user: &str, idx: &mut UserIndex) -> ListResult<()> {
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
fn reconcile(dir: &Path, user: &str, idx: &mut UserIndex) -> ListResult<()> {
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

fn corrupt(path: &Path, id: Option<Uuid>, reason: impl Into<String>) -> ListError {
    ListError::Corrupt {
        location: path.display().to_string(),
        id,
        reason: reason.into(),
    }
}

fn read_session(path: &Path, id: Uuid) -> ListResult<String> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(ListError::NotFound { id }),
        Err(e) => return Err(corrupt(path, Some(id), format!("unreadable: {e}"))),
    };
    String::from_utf8(bytes).map_err(|e| corrupt(path, Some(id), format!("not UTF-8: {e}")))
}

#[async_trait]
impl NetworkList for JsonNetworkList {
    fn user(&self) -> &str {
        &self.user
    }

    async fn save(&self, network: &RunnableNetwork) -> ListResult<SessionInfo> {
        let mut stamped = stamp(network, &self.user)?;
        let dir = self.user_dir(&self.user);
        let user = self.user.clone();
        let id = stamped.info.id;
        let expected = stamped.expected;
        let json = std::mem::take(&mut stamped.json);
        let info = stamped.info.clone();
        let result = blocking(move || save_blocking(&dir, &user, id, expected, json, info)).await;
        if result.is_err() {
            stamped.restore(network);
        }
        result
    }

    async fn stored_revision(&self, id: Uuid) -> ListResult<Option<u64>> {
        let path = self.path_of(id);
        let user = self.user.clone();
        blocking(move || match fs::read(&path) {
            Ok(bytes) => Ok(info_from_json(&bytes, &user, Utc::now())
                .ok()
                .map(|i| i.revision)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        })
        .await
    }

    async fn load(&self, id: Uuid) -> ListResult<RunnableNetwork> {
        let path = self.path_of(id);
        blocking(move || {
            let text = read_session(&path, id)?;
            RunnableNetwork::from_json(&text).map_err(|e| corrupt(&path, Some(id), e.to_string()))
        })
        .await
    }

    async fn load_json(&self, id: Uuid) -> ListResult<String> {
        let path = self.path_of(id);
        blocking(move || read_session(&path, id)).await
    }

    async fn delete(&self, id: Uuid) -> ListResult<bool> {
        let dir = self.user_dir(&self.user);
        blocking(move || {
            let lock_dir = dir.join(LOCK_DIR);
            if !lock_dir.exists() {
                // Never saved through a list: no lock needed for a missing file.
                return match fs::remove_file(session_path(&dir, id)) {
                    Ok(()) => Ok(true),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
                    Err(e) => Err(e.into()),
                };
            }
            let mut lock = open_lock(&lock_dir.join(format!("{id}.lock")))?;
            let _guard = lock.write()?;
            match fs::remove_file(session_path(&dir, id)) {
                Ok(()) => {
                    sync_dir(&dir)?;
                    append_index(&dir, &IndexLine::Del(id))?;
                    Ok(true)
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
                Err(e) => Err(e.into()),
            }
        })
        .await
    }

    async fn list(&self, query: &ListQuery) -> ListResult<ListPage> {
        let user = query.user_or(&self.user)?;
        let dir = self.user_dir(&user);
        let index = self.index_of(&user);
        let (offset, limit) = (query.offset, query.limit);
        blocking(move || {
            let mut idx = index.lock();
            refresh(&dir, &user, &mut idx)?;
            list_page(&dir, &user, &mut idx, offset, limit)
        })
        .await
    }
}

fn save_blocking(
    dir: &Path,
    user: &str,
    id: Uuid,
    expected: u64,
    json: String,
    info: SessionInfo,
) -> ListResult<SessionInfo> {
    let lock_dir = dir.join(LOCK_DIR);
    fs::create_dir_all(&lock_dir)?;
    let mut lock = open_lock(&lock_dir.join(format!("{id}.lock")))?;
    let _guard = lock.write()?;
    let path = session_path(dir, id);
    match fs::read(&path) {
        Ok(bytes) => match info_from_json(&bytes, user, Utc::now()) {
            Ok(stored) if stored.revision > expected => {
                return Err(ListError::Conflict {
                    id,
                    expected,
                    found: stored.revision,
                });
            }
            Ok(_) => {}
            Err(reason) => {
                let aside = dir.join(format!(
                    "{id}.json.corrupt-{}",
                    Utc::now().format("%Y%m%dT%H%M%S%.6fZ")
                ));
                tracing::warn!(path = %path.display(), aside = %aside.display(), %reason,
                    "saving over a corrupt session file; the old file is kept aside");
                fs::rename(&path, &aside)?;
            }
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e.into()),
    }
    write_atomic(dir, &path, json.as_bytes())?;
    let meta = fs::metadata(&path)?;
    let (before, after) = append_index(
        dir,
        &IndexLine::Put(Box::new(Entry::new(info.clone(), mtime_ns(&meta))?)),
    )?;
    if before / COMPACT_EVERY != after / COMPACT_EVERY {
        if let Err(e) = compact(dir) {
            tracing::warn!(dir = %dir.display(), error = %e, "index compaction failed");
        }
    }
    Ok(info)
}

fn list_page(
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
        match fs::metadata(&path) {
            Ok(meta) if indexed == Some((meta.len(), mtime_ns(&meta))) => {
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

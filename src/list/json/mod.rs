//! [`JsonNetworkList`]: sessions as JSON files in a directory.
//!
//! (The full description is on the [`JsonNetworkList`] docs.)

mod index;
mod journal;

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use async_trait::async_trait;
use chrono::Utc;
use parking_lot::Mutex;
use uuid::Uuid;

use super::{
    info_from_json, revision_of, stamp, validate_user, ListError, ListPage, ListQuery, ListResult,
    NetworkList, SessionInfo, DEFAULT_USER,
};
use crate::atomic_file::{sync_dir, write_atomic};
use crate::network::RunnableNetwork;
use index::{
    append_index, compact, list_page, rebuild, refresh, Entry, IndexLine, UserIndex, COMPACT_EVERY,
};
use journal::journal_path;

const LOCK_DIR: &str = ".locks";
/// Tombstones of deleted sessions (an empty file per id): a delete is final.
const DELETED_DIR: &str = ".deleted";

/// [`JsonNetworkList`]: sessions as JSON files in a directory.
///
/// ```text
/// <root>/<user>/<id>.json          one network's snapshot, as RunnableNetwork::to_json() wrote it
/// <root>/<user>/<id>.journal       incremental saves since the snapshot (JSON lines)
/// <root>/<user>/.index.jsonl       append-only listing index (rebuildable)
/// <root>/<user>/.index.lock        guards index compaction
/// <root>/<user>/.locks/<id>.lock   one advisory lock per session
/// ```
///
/// **Saves are atomic and isolated.** A save takes the session's advisory
/// lock (`flock`), checks the stored revision, writes a temporary file in the
/// same directory, fsyncs it, renames it over `<id>.json` and fsyncs the
/// directory. A process killed at any instant leaves the old or the new
/// version, never a torn file. A save touches only its own file (and
/// appends one line to the index), so processes writing different sessions
/// never interfere, and two writing the same session are serialized by the
/// lock and checked by revision, so neither loses an update silently.
///
/// **Saves are incremental.** A save of a network this list loaded or
/// saved, whose file is still at that revision, appends one record of what
/// changed to `<id>.journal` (fdatasync) instead of rewriting the file;
/// when the journal would outgrow the snapshot (and 32 KiB), the save is a full one
/// (the atomic write above), which drops the journal. A process killed
/// while appending leaves a torn line: loads ignore it and the next save
/// cuts it off. Loading reads both and gives what a full save would.
///
/// **Listing never parses networks.** Each save appends a small line (id,
/// name, timestamps, node count, size, revision, metadata) to
/// `.index.jsonl`; a list reads only the lines it has not seen yet (the
/// index is cached per [`JsonNetworkList`] and shared by its clones), sorts
/// and pages. The files stay the only copy of the sessions: the index is
/// rebuilt from them when it is missing ([`JsonNetworkList::rebuild_index`]
/// does it on demand), the first listing in a process reconciles it with
/// the directory, and the entries of every returned page are checked
/// against their files (size and modification time), so a file changed or
/// corrupted behind the index's back is re-read or reported. The index is
/// compacted every few MiB of appends.
///
/// **Corrupt files** are reported, never fatal: [`NetworkList::list`] and
/// [`NetworkList::load_all`] return them as error entries and go on;
/// [`NetworkList::load`] returns [`ListError::Corrupt`] naming the file.
/// Saving over a corrupt file first moves it aside to
/// `<id>.json.corrupt-<timestamp>` (kept for a human to look at).
///
/// Lock files are left in place after a delete: removing a lock file that
/// another process may be waiting on would break the lock.
///
/// In short: sessions as JSON files under `<root>/<user>/`.
///
/// Clones share the listing cache. Every file operation runs on tokio's
/// blocking pool.
///
/// ```
/// use lc_agent::{JsonNetworkList, ListQuery, NetworkList};
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
    /// The revision of each session file as last read or written, with the
    /// file's stamp then: a revision check (and a save's conflict check)
    /// is one `stat` while the file is unchanged, not a read of the whole
    /// session.
    revisions: Revisions,
}

/// A file's length, modification time and identity: any save (a new file
/// renamed into place) changes it.
type FileStamp = (u64, u64, Option<(u64, u64)>);

/// A session's snapshot stamp and its journal's (when there is one): any
/// save changes one of them.
type SessionStamp = (FileStamp, Option<FileStamp>);

/// What the store holds of a session: its revision (snapshot and journal)
/// and the bytes of the journal up to its last readable record.
#[derive(Clone, Copy)]
struct Stored {
    revision: u64,
    journal_valid: u64,
}

/// Session file -> (its stamp, what it holds).
#[derive(Default)]
struct Revisions(Mutex<HashMap<PathBuf, (SessionStamp, Stored)>>);

impl Revisions {
    /// What `path` holds if its stamp is still `stamp`.
    fn known(&self, path: &Path, stamp: &SessionStamp) -> Option<Stored> {
        match self.0.lock().get(path) {
            Some((s, stored)) if s == stamp => Some(*stored),
            _ => None,
        }
    }

    fn remember(&self, path: &Path, stamp: SessionStamp, stored: Stored) {
        let mut map = self.0.lock();
        if map.len() > 100_000 {
            map.clear();
        }
        map.insert(path.to_path_buf(), (stamp, stored));
    }

    fn forget(&self, path: &Path) {
        self.0.lock().remove(path);
    }
}

fn file_stamp(meta: &fs::Metadata) -> FileStamp {
    (meta.len(), mtime_ns(meta), identity(meta))
}

/// The stamp of the session whose snapshot is `path` (`None`: no snapshot).
fn session_stamp(path: &Path) -> io::Result<Option<SessionStamp>> {
    let snapshot = match fs::metadata(path) {
        Ok(meta) => file_stamp(&meta),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let journal = match fs::metadata(journal_path(path)) {
        Ok(meta) => Some(file_stamp(&meta)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    Ok(Some((snapshot, journal)))
}

/// The bytes a session takes (snapshot and journal) and its latest
/// modification time: what the listing index checks an entry against.
fn stored_size_and_mtime(stamp: &SessionStamp) -> (u64, u64) {
    let (s, j) = stamp;
    match j {
        Some(j) => (s.0 + j.0, s.1.max(j.1)),
        None => (s.0, s.1),
    }
}

/// What the session file `path` holds, from the cache while its stamp is
/// unchanged, else read (snapshot head, journal scan). `Ok(None)`: no
/// session; a snapshot that cannot be read is [`ListError::Corrupt`].
fn stored_state(
    path: &Path,
    id: Uuid,
    user: &str,
    revisions: &Revisions,
) -> ListResult<Option<(Stored, SessionStamp)>> {
    let Some(stamp) = session_stamp(path)? else {
        revisions.forget(path);
        return Ok(None);
    };
    if let Some(stored) = revisions.known(path, &stamp) {
        return Ok(Some((stored, stamp)));
    }
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let head = info_from_json(&bytes, user, Utc::now()).map_err(|r| corrupt(path, Some(id), r))?;
    let jpath = journal_path(path);
    let found = journal::scan(
        &jpath,
        Some(id),
        head.revision,
        &journal::read_journal(&jpath)?,
    )?;
    let stored = Stored {
        revision: found.revision,
        journal_valid: found.valid_len as u64,
    };
    revisions.remember(path, stamp, stored);
    Ok(Some((stored, stamp)))
}

impl std::fmt::Debug for JsonNetworkList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonNetworkList")
            .field("root", &self.inner.root)
            .field("user", &self.user)
            .finish()
    }
}

impl JsonNetworkList {
    /// Sessions under `root` (created on the first save), for the user
    /// `default`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            inner: Arc::new(Inner {
                root: root.into(),
                indexes: Mutex::new(HashMap::new()),
                revisions: Revisions::default(),
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
        let id = network.id();
        let store = self.path_of(id).display().to_string();
        let mut full = false;
        loop {
            let expected = revision_of(network);
            let mut stamped = stamp(network, &self.user, |net| {
                if !full && let Some(entry) = net.journal_entry(&store, expected)? {
                    let len = entry.stored_len() as usize;
                    return Ok((Write::Record(entry), len));
                }
                let mut json = Vec::with_capacity(net.saved_len_hint() + 64);
                let (len, base) = net.write_json_based(&mut json)?;
                Ok((Write::Full(json, base), len))
            })?;
            let dir = self.user_dir(&self.user);
            let user = self.user.clone();
            let expected = stamped.expected;
            let written = std::mem::replace(&mut stamped.written, Write::None);
            let info = stamped.info.clone();
            let inner = self.inner.clone();
            let result = blocking(move || {
                save_blocking(&dir, &user, id, expected, written, info, &inner.revisions)
            })
            .await;
            match result {
                Ok(Saved::Done(done)) => {
                    let (info, written, lens) = *done;
                    match written {
                        Write::Full(_, base) => {
                            network.install_base(base, &store, info.revision, Some(lens));
                        }
                        Write::Record(entry) => entry.written(network),
                        Write::None => {}
                    }
                    return Ok(info);
                }
                Ok(Saved::NeedsFull) if !full => {
                    stamped.restore(network);
                    full = true;
                }
                Ok(Saved::NeedsFull) => {
                    stamped.restore(network);
                    return Err(ListError::Io(io::Error::other(
                        "a full save was taken for an incremental one",
                    )));
                }
                Err(e) => {
                    stamped.restore(network);
                    return Err(e);
                }
            }
        }
    }

    async fn stored_revision(&self, id: Uuid) -> ListResult<Option<u64>> {
        let path = self.path_of(id);
        let user = self.user.clone();
        let inner = self.inner.clone();
        blocking(
            move || match stored_state(&path, id, &user, &inner.revisions) {
                Ok(stored) => Ok(stored.map(|(s, _)| s.revision)),
                // An unreadable file holds no revision a save must respect.
                Err(ListError::Corrupt { .. }) => Ok(None),
                Err(e) => Err(e),
            },
        )
        .await
    }

    async fn load(&self, id: Uuid) -> ListResult<RunnableNetwork> {
        let path = self.path_of(id);
        let store = path.display().to_string();
        let inner = self.inner.clone();
        blocking(move || {
            // The stamp before the read: a file replaced meanwhile has
            // another stamp, so it is never taken for this revision.
            let stamp = session_stamp(&path)?;
            let (text, found) = read_whole(&path, id)?;
            let net = RunnableNetwork::from_json(&text)
                .map_err(|e| corrupt(&path, Some(id), e.to_string()))?;
            let revision = crate::list::revision_of(&net);
            if let Some(stamp) = stamp {
                inner.revisions.remember(
                    &path,
                    stamp,
                    Stored {
                        revision,
                        journal_valid: found.1,
                    },
                );
                net.mark_loaded(&store, revision, found.0, found.1)?;
            }
            Ok(net)
        })
        .await
    }

    async fn load_json(&self, id: Uuid) -> ListResult<String> {
        let path = self.path_of(id);
        blocking(move || read_whole(&path, id).map(|(text, _)| text)).await
    }

    async fn delete(&self, id: Uuid) -> ListResult<bool> {
        let dir = self.user_dir(&self.user);
        blocking(move || {
            let lock_dir = dir.join(LOCK_DIR);
            if !lock_dir.exists() {
                // Never saved through a list: no lock needed for a missing file.
                return match fs::metadata(session_path(&dir, id)) {
                    Ok(_) => {
                        bury(&dir, id)?;
                        fs::remove_file(session_path(&dir, id))?;
                        journal::remove(&journal_path(&session_path(&dir, id)))?;
                        Ok(true)
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
                    Err(e) => Err(e.into()),
                };
            }
            let mut lock = open_lock(&lock_dir.join(format!("{id}.lock")))?;
            let _guard = lock.write()?;
            let path = session_path(&dir, id);
            if let Err(e) = fs::metadata(&path) {
                return if e.kind() == io::ErrorKind::NotFound {
                    Ok(false)
                } else {
                    Err(e.into())
                };
            }
            // The tombstone first: a crash between the two leaves a
            // session that cannot be saved again, never one that comes back.
            bury(&dir, id)?;
            match fs::remove_file(&path) {
                Ok(()) => {
                    journal::remove(&journal_path(&path))?;
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

/// Writes the tombstone of `id` (durably) under `<dir>/.deleted/`.
fn bury(dir: &Path, id: Uuid) -> io::Result<()> {
    let graves = dir.join(DELETED_DIR);
    fs::create_dir_all(&graves)?;
    File::create(graves.join(id.to_string()))?.sync_all()?;
    sync_dir(&graves)
}

/// Whether `id` was deleted (it has a tombstone).
fn is_buried(dir: &Path, id: Uuid) -> io::Result<bool> {
    match fs::metadata(dir.join(DELETED_DIR).join(id.to_string())) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// What a save writes: a full document (and the base it makes), or one
/// journal record.
enum Write {
    Full(Vec<u8>, crate::network::format::base::SaveBase),
    Record(crate::network::format::JournalEntry),
    /// Taken by the save.
    None,
}

/// How a save ended.
enum Saved {
    /// Written: the session's info, what was written, and the bytes of the
    /// snapshot and of the journal now.
    Done(Box<(SessionInfo, Write, (u64, u64))>),
    /// The record does not follow what is stored: save in full.
    NeedsFull,
}

/// The whole session `path` holds, as a full save gives it, with the
/// bytes of its snapshot and of its journal's readable records.
pub(super) fn read_whole(path: &Path, id: Uuid) -> ListResult<(String, (u64, u64))> {
    let text = read_session(path, id)?;
    let jpath = journal_path(path);
    let lines = journal::read_journal(&jpath)?;
    let snapshot_len = text.len() as u64;
    if lines.is_empty() {
        return Ok((text, (snapshot_len, 0)));
    }
    let revision = info_from_json(text.as_bytes(), "", Utc::now())
        .map_err(|r| corrupt(path, Some(id), r))?
        .revision;
    let (json, found) = journal::whole(path, Some(id), text, revision, &lines)?;
    Ok((json, (snapshot_len, found.valid_len as u64)))
}

fn save_blocking(
    dir: &Path,
    user: &str,
    id: Uuid,
    expected: u64,
    written: Write,
    mut info: SessionInfo,
    revisions: &Revisions,
) -> ListResult<Saved> {
    let lock_dir = dir.join(LOCK_DIR);
    fs::create_dir_all(&lock_dir)?;
    let mut lock = open_lock(&lock_dir.join(format!("{id}.lock")))?;
    let _guard = lock.write()?;
    if is_buried(dir, id)? {
        return Err(ListError::Deleted { id });
    }
    let path = session_path(dir, id);
    let jpath = journal_path(&path);
    // The stored revision: known from the files' stamps when this process
    // wrote or read them last, else read from the files.
    let stored = match stored_state(&path, id, user, revisions) {
        Ok(stored) => stored.map(|(s, _)| s),
        Err(ListError::Corrupt { reason, .. }) => {
            if matches!(written, Write::Record(_)) {
                return Ok(Saved::NeedsFull);
            }
            let when = Utc::now().format("%Y%m%dT%H%M%S%.6fZ").to_string();
            let aside = |p: &Path, ext: &str| {
                move_aside(p, &dir.join(format!("{id}.{ext}.corrupt-{when}")))
            };
            tracing::warn!(path = %path.display(), %reason,
                "saving over a corrupt session; the old files are kept aside (*.corrupt-<time>)");
            aside(&path, "json")?;
            aside(&jpath, "journal")?;
            None
        }
        Err(e) => return Err(e),
    };
    if let Some(stored) = stored
        && stored.revision > expected
    {
        return Err(ListError::Conflict {
            id,
            expected,
            found: stored.revision,
        });
    }
    match &written {
        Write::Full(json, _) => {
            write_atomic(&path, json)?;
            journal::remove(&jpath)?;
        }
        Write::Record(entry) => match stored {
            Some(s) if s.revision == expected => {
                journal::append(&jpath, s.journal_valid, entry.line.as_bytes())?;
            }
            _ => return Ok(Saved::NeedsFull),
        },
        Write::None => {}
    }
    let Some(stamp) = session_stamp(&path)? else {
        return Err(corrupt(
            &path,
            Some(id),
            "the session file vanished during its save",
        ));
    };
    let journal_len = stamp.1.map_or(0, |j| j.0);
    revisions.remember(
        &path,
        stamp,
        Stored {
            revision: info.revision,
            journal_valid: journal_len,
        },
    );
    let (bytes, mtime) = stored_size_and_mtime(&stamp);
    info.bytes = bytes;
    let (before, after) = append_index(
        dir,
        &IndexLine::Put(Box::new(Entry::new(info.clone(), mtime)?)),
    )?;
    if before / COMPACT_EVERY != after / COMPACT_EVERY
        && let Err(e) = compact(dir)
    {
        tracing::warn!(dir = %dir.display(), error = %e, "index compaction failed");
    }
    Ok(Saved::Done(Box::new((
        info,
        written,
        (stamp.0 .0, journal_len),
    ))))
}

/// Moves a file aside (nothing when there is no file).
fn move_aside(from: &Path, to: &Path) -> io::Result<()> {
    match fs::rename(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

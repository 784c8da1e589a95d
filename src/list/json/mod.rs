//! [`JsonNetworkList`]: sessions as JSON files in a directory.
//!
//! (The full description is on the [`JsonNetworkList`] docs.)

mod index;

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
    info_from_json, stamp, validate_user, ListError, ListPage, ListQuery, ListResult, NetworkList,
    SessionInfo, DEFAULT_USER,
};
use crate::atomic_file::{sync_dir, write_atomic};
use crate::network::RunnableNetwork;
use index::{
    append_index, compact, list_page, rebuild, refresh, Entry, IndexLine, UserIndex, COMPACT_EVERY,
};

const LOCK_DIR: &str = ".locks";
/// Tombstones of deleted sessions (an empty file per id): a delete is final.
const DELETED_DIR: &str = ".deleted";

/// [`JsonNetworkList`]: sessions as JSON files in a directory.
///
/// ```text
/// <root>/<user>/<id>.json          one network, exactly RunnableNetwork::to_json()
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

/// Session file -> (its stamp, the revision it holds).
#[derive(Default)]
struct Revisions(Mutex<HashMap<PathBuf, (FileStamp, u64)>>);

impl Revisions {
    /// The revision in `path` if its stamp is still `meta`'s.
    fn known(&self, path: &Path, meta: &fs::Metadata) -> Option<u64> {
        let stamp = file_stamp(meta);
        match self.0.lock().get(path) {
            Some((s, revision)) if *s == stamp => Some(*revision),
            _ => None,
        }
    }

    fn remember(&self, path: &Path, meta: &fs::Metadata, revision: u64) {
        let mut map = self.0.lock();
        if map.len() > 100_000 {
            map.clear();
        }
        map.insert(path.to_path_buf(), (file_stamp(meta), revision));
    }

    fn forget(&self, path: &Path) {
        self.0.lock().remove(path);
    }
}

fn file_stamp(meta: &fs::Metadata) -> FileStamp {
    (meta.len(), mtime_ns(meta), identity(meta))
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
        let mut stamped = stamp(network, &self.user, |net| {
            let json = net.to_json()?;
            let len = json.len();
            Ok((json, len))
        })?;
        let dir = self.user_dir(&self.user);
        let user = self.user.clone();
        let id = stamped.info.id;
        let expected = stamped.expected;
        let json = std::mem::take(&mut stamped.written);
        let info = stamped.info.clone();
        let inner = self.inner.clone();
        let result = blocking(move || {
            save_blocking(&dir, &user, id, expected, json, info, &inner.revisions)
        })
        .await;
        if result.is_err() {
            stamped.restore(network);
        }
        result
    }

    async fn stored_revision(&self, id: Uuid) -> ListResult<Option<u64>> {
        let path = self.path_of(id);
        let user = self.user.clone();
        let inner = self.inner.clone();
        blocking(move || {
            let revisions = &inner.revisions;
            let meta = match fs::metadata(&path) {
                Ok(meta) => meta,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    revisions.forget(&path);
                    return Ok(None);
                }
                Err(e) => return Err(e.into()),
            };
            if let Some(revision) = revisions.known(&path, &meta) {
                return Ok(Some(revision));
            }
            match fs::read(&path) {
                Ok(bytes) => {
                    let revision = info_from_json(&bytes, &user, Utc::now())
                        .ok()
                        .map(|i| i.revision);
                    if let Some(r) = revision {
                        revisions.remember(&path, &meta, r);
                    }
                    Ok(revision)
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e.into()),
            }
        })
        .await
    }

    async fn load(&self, id: Uuid) -> ListResult<RunnableNetwork> {
        let path = self.path_of(id);
        let inner = self.inner.clone();
        blocking(move || {
            // The stamp before the read: a file replaced meanwhile has
            // another stamp, so it is never taken for this revision.
            let meta = fs::metadata(&path).ok();
            let text = read_session(&path, id)?;
            let net = RunnableNetwork::from_json(&text)
                .map_err(|e| corrupt(&path, Some(id), e.to_string()))?;
            if let Some(meta) = meta {
                inner
                    .revisions
                    .remember(&path, &meta, crate::list::revision_of(&net));
            }
            Ok(net)
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
                return match fs::metadata(session_path(&dir, id)) {
                    Ok(_) => {
                        bury(&dir, id)?;
                        fs::remove_file(session_path(&dir, id))?;
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

fn save_blocking(
    dir: &Path,
    user: &str,
    id: Uuid,
    expected: u64,
    json: String,
    info: SessionInfo,
    revisions: &Revisions,
) -> ListResult<SessionInfo> {
    let lock_dir = dir.join(LOCK_DIR);
    fs::create_dir_all(&lock_dir)?;
    let mut lock = open_lock(&lock_dir.join(format!("{id}.lock")))?;
    let _guard = lock.write()?;
    if is_buried(dir, id)? {
        return Err(ListError::Deleted { id });
    }
    let path = session_path(dir, id);
    // The stored revision: known from the file's stamp when this process
    // wrote or read it last, else read from the file.
    let known = match fs::metadata(&path) {
        Ok(meta) => revisions.known(&path, &meta),
        Err(_) => None,
    };
    match known {
        Some(stored) if stored > expected => {
            return Err(ListError::Conflict {
                id,
                expected,
                found: stored,
            });
        }
        Some(_) => {}
        None => match fs::read(&path) {
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
        },
    }
    write_atomic(&path, json.as_bytes())?;
    let meta = fs::metadata(&path)?;
    revisions.remember(&path, &meta, info.revision);
    let (before, after) = append_index(
        dir,
        &IndexLine::Put(Box::new(Entry::new(info.clone(), mtime_ns(&meta))?)),
    )?;
    if before / COMPACT_EVERY != after / COMPACT_EVERY
        && let Err(e) = compact(dir)
    {
        tracing::warn!(dir = %dir.display(), error = %e, "index compaction failed");
    }
    Ok(info)
}

//! [`StoreBackend`]: files in a key-value [`Store`] under a namespace, kept
//! across sessions; with an in-memory and a Redis store.
//!
//! ```text
//!  write_file / edit_file ─▶ get_versioned ─▶ new text ─▶ put_if(version)
//!                                ▲                            │ changed meanwhile
//!                                └──────────── retry ◀────────┘
//! ```
//!
//! Writes and edits are compare-and-set: two processes editing the same
//! file (two app servers on one Redis, say) never lose an update; the one
//! that lost the race reads the new text and applies its edit to it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::ListError;
use lc_agent::RedisConnector;
use lc_agent::{FileData, Files};
use parking_lot::Mutex;

use super::backend::{
    Backend, FileDownloadResponse, FileMatches, FileUploadResponse, GrepQuery, LsEntry, ReadPage,
};
use super::error::{FsError, FsResult};
use super::gitignore::IgnoreRules;
use super::glob::GlobPattern;
use super::{map_backend, path};

/// Errors of a [`Store`].
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Redis failed (connection or command); the source says how.
    #[error("redis: {what} failed")]
    Redis {
        /// What the store was doing.
        what: String,
        /// Why it failed.
        #[source]
        source: Arc<ListError>,
    },
    /// A stored value is not a file record.
    #[error("invalid stored value for {key}: {reason}")]
    Corrupt {
        /// The key (virtual path).
        key: String,
        /// What is wrong.
        reason: String,
    },
}

impl From<StoreError> for FsError {
    fn from(e: StoreError) -> Self {
        FsError::Store(lc_agent::error_chain(&e))
    }
}

/// How many times a write or edit retries after losing a race.
const MAX_ATTEMPTS: usize = 64;

/// The version a file was read at, for [`Store::put_if`]: the stored
/// record itself, so any change makes it stale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreVersion(String);

impl StoreVersion {
    fn of(data: &FileData) -> Self {
        Self(serde_json::to_string(data).unwrap_or_default())
    }
}

/// A namespaced key-value store of file records. Whole-namespace reads
/// ([`Store::get_all`], [`Store::get_many`]) are one round trip, so `grep`
/// and `glob` never fetch values one by one. Writes that depend on what
/// was read go through [`Store::get_versioned`] and [`Store::put_if`],
/// which a store implements atomically.
#[async_trait]
pub trait Store: Send + Sync {
    /// One file.
    async fn get(&self, namespace: &[String], key: &str) -> Result<Option<FileData>, StoreError>;
    /// Several files at once.
    async fn get_many(
        &self,
        namespace: &[String],
        keys: &[String],
    ) -> Result<Vec<Option<FileData>>, StoreError>;
    /// Every file of the namespace.
    async fn get_all(&self, namespace: &[String]) -> Result<Files, StoreError>;
    /// Every key of the namespace.
    async fn keys(&self, namespace: &[String]) -> Result<Vec<String>, StoreError>;
    /// Stores a file.
    async fn put(
        &self,
        namespace: &[String],
        key: &str,
        value: &FileData,
    ) -> Result<(), StoreError>;
    /// Deletes a file; returns whether it existed.
    async fn delete(&self, namespace: &[String], key: &str) -> Result<bool, StoreError>;
    /// One file with the version it was read at.
    async fn get_versioned(
        &self,
        namespace: &[String],
        key: &str,
    ) -> Result<Option<(FileData, StoreVersion)>, StoreError>;
    /// Stores a file only if it is still at `expected` (`None`: only if it
    /// does not exist), atomically; returns whether it stored.
    async fn put_if(
        &self,
        namespace: &[String],
        key: &str,
        expected: Option<&StoreVersion>,
        value: &FileData,
    ) -> Result<bool, StoreError>;
}

/// A store in process memory (clones share the data).
#[derive(Debug, Clone, Default)]
pub struct InMemoryStore {
    data: Arc<Mutex<HashMap<Vec<String>, Files>>>,
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl Store for InMemoryStore {
    async fn get(&self, ns: &[String], key: &str) -> Result<Option<FileData>, StoreError> {
        Ok(self.data.lock().get(ns).and_then(|f| f.get(key).cloned()))
    }

    async fn get_many(
        &self,
        ns: &[String],
        keys: &[String],
    ) -> Result<Vec<Option<FileData>>, StoreError> {
        let data = self.data.lock();
        let files = data.get(ns);
        Ok(keys
            .iter()
            .map(|k| files.and_then(|f| f.get(k).cloned()))
            .collect())
    }

    async fn get_all(&self, ns: &[String]) -> Result<Files, StoreError> {
        Ok(self.data.lock().get(ns).cloned().unwrap_or_default())
    }

    async fn keys(&self, ns: &[String]) -> Result<Vec<String>, StoreError> {
        Ok(self
            .data
            .lock()
            .get(ns)
            .map(|f| f.keys().cloned().collect())
            .unwrap_or_default())
    }

    async fn put(&self, ns: &[String], key: &str, value: &FileData) -> Result<(), StoreError> {
        self.data
            .lock()
            .entry(ns.to_vec())
            .or_default()
            .insert(key.to_string(), value.clone());
        Ok(())
    }

    async fn delete(&self, ns: &[String], key: &str) -> Result<bool, StoreError> {
        Ok(self
            .data
            .lock()
            .get_mut(ns)
            .is_some_and(|f| f.remove(key).is_some()))
    }

    async fn get_versioned(
        &self,
        ns: &[String],
        key: &str,
    ) -> Result<Option<(FileData, StoreVersion)>, StoreError> {
        Ok(self.get(ns, key).await?.map(|data| {
            let version = StoreVersion::of(&data);
            (data, version)
        }))
    }

    async fn put_if(
        &self,
        ns: &[String],
        key: &str,
        expected: Option<&StoreVersion>,
        value: &FileData,
    ) -> Result<bool, StoreError> {
        let mut data = self.data.lock();
        let files = data.entry(ns.to_vec()).or_default();
        let current = files.get(key).map(StoreVersion::of);
        if current.as_ref() != expected {
            return Ok(false);
        }
        files.insert(key.to_string(), value.clone());
        Ok(true)
    }
}

/// Sets a hash field only if it still holds the expected record (an empty
/// expectation: only if the field is absent).
const PUT_IF_SCRIPT: &str = r"
local current = redis.call('HGET', KEYS[1], ARGV[1])
if (current == false and ARGV[2] == '') or current == ARGV[2] then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
  return 1
end
return 0
";

/// A Redis store: one hash per namespace (key
/// `lc-agent:store:<namespace as a JSON array>`, field = virtual path,
/// value = the file record as JSON). Every operation touches that one key,
/// so it works alike on one server, over TLS (`rediss://`) and on a Redis
/// Cluster. It goes through lc-agent's [`RedisConnector`] — the same
/// client, deadline and reconnection as the session list, whose connector
/// it can share ([`RedisStore::with_connector`]).
#[derive(Debug, Clone)]
pub struct RedisStore {
    redis: Result<RedisConnector, Arc<ListError>>,
}

fn unavailable(what: &str, e: ListError) -> StoreError {
    StoreError::Redis {
        what: what.to_string(),
        source: Arc::new(e),
    }
}

fn hash_key(ns: &[String]) -> String {
    format!(
        "lc-agent:store:{}",
        serde_json::to_string(ns).unwrap_or_default()
    )
}

fn decode(key: &str, raw: &str) -> Result<FileData, StoreError> {
    serde_json::from_str(raw).map_err(|e| StoreError::Corrupt {
        key: key.to_string(),
        reason: e.to_string(),
    })
}

impl RedisStore {
    /// A store at `url` (`redis://127.0.0.1:6379/0`, `rediss://...`);
    /// nothing connects until first use (a bad URL fails then).
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            redis: RedisConnector::new(url).map_err(Arc::new),
        }
    }

    /// A store on an existing connector: a Cluster, a private CA, or the
    /// connection of a `RedisNetworkList` (`list.connector().clone()`).
    pub fn with_connector(connector: RedisConnector) -> Self {
        Self {
            redis: Ok(connector),
        }
    }

    /// Runs `cmd` on the namespace's hash key.
    async fn query<T: redis::FromRedisValue>(
        &self,
        what: &str,
        cmd: &redis::Cmd,
    ) -> Result<T, StoreError> {
        let redis = self.redis.as_ref().map_err(|e| StoreError::Redis {
            what: "connect".to_string(),
            source: e.clone(),
        })?;
        redis
            .run(
                what,
                |mut conn| async move { cmd.query_async(&mut conn).await },
            )
            .await
            .map_err(|e| unavailable(what, e))
    }
}

#[async_trait]
impl Store for RedisStore {
    async fn get(&self, ns: &[String], key: &str) -> Result<Option<FileData>, StoreError> {
        let mut cmd = redis::cmd("HGET");
        cmd.arg(hash_key(ns)).arg(key);
        let raw: Option<String> = self.query("get", &cmd).await?;
        raw.map(|r| decode(key, &r)).transpose()
    }

    async fn get_many(
        &self,
        ns: &[String],
        keys: &[String],
    ) -> Result<Vec<Option<FileData>>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(hash_key(ns)).arg(keys);
        let raw: Vec<Option<String>> = self.query("get_many", &cmd).await?;
        raw.into_iter()
            .zip(keys)
            .map(|(r, k)| r.map(|r| decode(k, &r)).transpose())
            .collect()
    }

    async fn get_all(&self, ns: &[String]) -> Result<Files, StoreError> {
        let mut cmd = redis::cmd("HGETALL");
        cmd.arg(hash_key(ns));
        let raw: HashMap<String, String> = self.query("get_all", &cmd).await?;
        raw.into_iter()
            .map(|(k, v)| decode(&k, &v).map(|d| (k, d)))
            .collect()
    }

    async fn keys(&self, ns: &[String]) -> Result<Vec<String>, StoreError> {
        let mut cmd = redis::cmd("HKEYS");
        cmd.arg(hash_key(ns));
        self.query("keys", &cmd).await
    }

    async fn put(&self, ns: &[String], key: &str, value: &FileData) -> Result<(), StoreError> {
        let json = serde_json::to_string(value).map_err(|e| StoreError::Corrupt {
            key: key.to_string(),
            reason: e.to_string(),
        })?;
        let mut cmd = redis::cmd("HSET");
        cmd.arg(hash_key(ns)).arg(key).arg(json);
        self.query("put", &cmd).await
    }

    async fn delete(&self, ns: &[String], key: &str) -> Result<bool, StoreError> {
        let mut cmd = redis::cmd("HDEL");
        cmd.arg(hash_key(ns)).arg(key);
        let n: i64 = self.query("delete", &cmd).await?;
        Ok(n > 0)
    }

    async fn get_versioned(
        &self,
        ns: &[String],
        key: &str,
    ) -> Result<Option<(FileData, StoreVersion)>, StoreError> {
        let mut cmd = redis::cmd("HGET");
        cmd.arg(hash_key(ns)).arg(key);
        let raw: Option<String> = self.query("get", &cmd).await?;
        // The version is the stored text itself, byte for byte.
        raw.map(|r| decode(key, &r).map(|data| (data, StoreVersion(r))))
            .transpose()
    }

    async fn put_if(
        &self,
        ns: &[String],
        key: &str,
        expected: Option<&StoreVersion>,
        value: &FileData,
    ) -> Result<bool, StoreError> {
        let json = serde_json::to_string(value).map_err(|e| StoreError::Corrupt {
            key: key.to_string(),
            reason: e.to_string(),
        })?;
        // EVAL keeps this one command on the namespace's key (one slot on
        // a Cluster).
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(PUT_IF_SCRIPT)
            .arg(1)
            .arg(hash_key(ns))
            .arg(key)
            .arg(expected.map_or("", |v| v.0.as_str()))
            .arg(json);
        let stored: i64 = self.query("put_if", &cmd).await?;
        Ok(stored == 1)
    }
}

/// The error of a write that kept losing races (other writers changed the
/// file every time).
fn contended(file: &str) -> FsError {
    FsError::Store(format!(
        "{file} kept changing while it was being written ({MAX_ATTEMPTS} attempts); try again"
    ))
}

/// Waits a little after losing a race, longer each time (up to ~1 ms) and
/// jittered, so two writers of one file stop colliding in lockstep: without
/// it, the writer that lost once tends to lose every retry to the one
/// already on its next write.
async fn back_off(attempt: usize) {
    let jitter = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()));
    let ceiling = 1u64 << attempt.min(10);
    tokio::time::sleep(std::time::Duration::from_micros(jitter % ceiling + 1)).await;
}

/// Files in a [`Store`] under a namespace (e.g. `["user-42", "filesystem"]`).
#[derive(Clone)]
pub struct StoreBackend {
    store: Arc<dyn Store>,
    namespace: Vec<String>,
}

impl std::fmt::Debug for StoreBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreBackend")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl StoreBackend {
    /// A backend over `store` under `namespace`.
    pub fn new<S: Into<String>>(
        store: impl Store + 'static,
        namespace: impl IntoIterator<Item = S>,
    ) -> Self {
        Self::shared(Arc::new(store), namespace)
    }

    /// A backend over a shared store.
    pub(crate) fn shared<S: Into<String>>(
        store: Arc<dyn Store>,
        namespace: impl IntoIterator<Item = S>,
    ) -> Self {
        Self {
            store,
            namespace: namespace.into_iter().map(Into::into).collect(),
        }
    }

    /// A backend over Redis at `url` (connects on first use).
    pub fn redis<S: Into<String>>(
        url: impl Into<String>,
        namespace: impl IntoIterator<Item = S>,
    ) -> Self {
        Self::new(RedisStore::new(url), namespace)
    }

    async fn key_map(&self) -> FsResult<BTreeMap<String, ()>> {
        Ok(self
            .store
            .keys(&self.namespace)
            .await?
            .into_iter()
            .map(|k| (k, ()))
            .collect())
    }

    async fn rules(&self, keys: &BTreeMap<String, ()>) -> FsResult<IgnoreRules> {
        let ignore_keys: Vec<String> = keys
            .keys()
            .filter(|k| k.ends_with("/.gitignore") && !path::file_in_git_dir(k))
            .cloned()
            .collect();
        let mut rules = IgnoreRules::default();
        let values = self.store.get_many(&self.namespace, &ignore_keys).await?;
        for (key, value) in ignore_keys.iter().zip(values) {
            if let Some(data) = value {
                rules.add(path::parent(key), &data.text());
            }
        }
        Ok(rules)
    }

    async fn put_text(&self, file: &str, text: &str, overwrite: bool) -> FsResult<()> {
        for attempt in 0..MAX_ATTEMPTS {
            let keys = self.key_map().await?;
            map_backend::check_write(&keys, file, overwrite)?;
            let current = self.store.get_versioned(&self.namespace, file).await?;
            let (data, version) = match current {
                Some((mut data, version)) => {
                    data.set_text(text);
                    (data, Some(version))
                }
                None => (FileData::new(text), None),
            };
            if self
                .store
                .put_if(&self.namespace, file, version.as_ref(), &data)
                .await?
            {
                return Ok(());
            }
            back_off(attempt).await;
        }
        Err(contended(file))
    }

    async fn missing(&self, file: &str) -> FsError {
        match self.key_map().await {
            Ok(keys) => map_backend::not_a_file(&keys, file),
            Err(e) => e,
        }
    }
}

#[async_trait]
impl Backend for StoreBackend {
    async fn ls(&self, dir: &str, recursive: bool) -> FsResult<Vec<LsEntry>> {
        map_backend::ls(&self.key_map().await?, dir, recursive)
    }

    async fn read(&self, file: &str, offset: usize, limit: usize) -> FsResult<ReadPage> {
        match self.store.get(&self.namespace, file).await? {
            Some(data) => map_backend::read_text(file, &data.text(), offset, limit),
            None => Err(self.missing(file).await),
        }
    }

    async fn write(&self, file: &str, content: &str, overwrite: bool) -> FsResult<()> {
        self.put_text(file, content, overwrite).await
    }

    async fn edit(&self, file: &str, old: &str, new: &str, replace_all: bool) -> FsResult<usize> {
        self.edit_capped(file, (old, new, replace_all), None).await
    }

    async fn edit_capped(
        &self,
        file: &str,
        (old, new, replace_all): (&str, &str, bool),
        max_bytes: Option<u64>,
    ) -> FsResult<usize> {
        for attempt in 0..MAX_ATTEMPTS {
            let Some((mut data, version)) = self.store.get_versioned(&self.namespace, file).await?
            else {
                return Err(self.missing(file).await);
            };
            let (text, n) =
                crate::edit::edit_text(file, &data.text(), (old, new, replace_all), max_bytes)?;
            data.set_text(&text);
            if self
                .store
                .put_if(&self.namespace, file, Some(&version), &data)
                .await?
            {
                return Ok(n);
            }
            back_off(attempt).await;
        }
        Err(contended(file))
    }

    async fn glob(&self, pattern: &GlobPattern, dir: &str) -> FsResult<Vec<String>> {
        let keys = self.key_map().await?;
        let rules = self.rules(&keys).await?;
        map_backend::glob(&keys, &rules, pattern, dir)
    }

    async fn grep(&self, query: &GrepQuery, target: &str) -> FsResult<Vec<FileMatches>> {
        let files = self.store.get_all(&self.namespace).await?;
        map_backend::grep_files(&files, query, target)
    }

    async fn upload_files(&self, files: Vec<(String, Vec<u8>)>) -> Vec<FileUploadResponse> {
        let mut out = Vec::with_capacity(files.len());
        for (given, bytes) in files {
            let result = match path::normalize(&given) {
                Ok(file) => match map_backend::uploaded_text(&file, bytes) {
                    Ok(text) => self.put_text(&file, &text, true).await,
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            };
            out.push(FileUploadResponse {
                path: given,
                error: result.err().map(|e| e.code()),
            });
        }
        out
    }

    async fn download_files(&self, paths: Vec<String>) -> Vec<FileDownloadResponse> {
        let mut out = Vec::with_capacity(paths.len());
        for given in paths {
            let result = match path::normalize(&given) {
                Ok(file) => match self.store.get(&self.namespace, &file).await {
                    Ok(Some(data)) => Ok(data.text().into_bytes()),
                    Ok(None) => Err(self.missing(&file).await),
                    Err(e) => Err(e.into()),
                },
                Err(e) => Err(e),
            };
            out.push(FileDownloadResponse::from_result(given, result));
        }
        out
    }

    async fn delete_tree(&self, dir: &str) -> FsResult<()> {
        crate::backend::refuse_root(dir)?;
        let keys: Vec<String> = self
            .key_map()
            .await?
            .into_keys()
            .filter(|k| k == dir || path::relative_to(k, dir).is_some())
            .collect();
        if keys.is_empty() {
            return Err(FsError::PathNotFound(dir.to_string()));
        }
        for key in keys {
            self.store.delete(&self.namespace, &key).await?;
        }
        Ok(())
    }

    async fn delete(&self, file: &str) -> FsResult<()> {
        if self.store.delete(&self.namespace, file).await? {
            Ok(())
        } else {
            Err(self.missing(file).await)
        }
    }
}

//! [`CompositeBackend`]: routes paths to backends by prefix.

use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::RunnableNetwork;

use super::backend::{
    Backend, BackendFactory, BackendSource, ExecuteResponse, FileDownloadResponse, FileMatches,
    FileUploadResponse, Fingerprint, GrepQuery, LsEntry, ReadPage, Recorded,
};
use super::error::{FsError, FsResult};
use super::glob::GlobPattern;
use super::line_edit::LineEdit;
use super::path;

/// Routes paths by prefix: the longest matching prefix wins, matched at a
/// `/` boundary; everything else goes to the default backend.
///
/// `/memories/notes.md` with the route `/memories/` reaches that backend as
/// `/notes.md`, and results come back with the prefix restored. `ls`,
/// `glob` and `grep` from a directory above a route include the route's
/// files; `execute` goes to the default backend.
///
/// ```
/// use lc_agent::RunnableNetwork;
/// use lc_agent_filesystem::{run_tool, CompositeBackend, InMemoryStore, StateBackend, StoreBackend};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let composite = CompositeBackend::new(StateBackend::factory())
///     .route("/memories/", StoreBackend::new(InMemoryStore::new(), ["user-42", "filesystem"]));
/// let net = RunnableNetwork::new();
/// let backend = composite.resolve(&net);
/// run_tool(&*backend, "write_file", &json!({"file_path": "/memories/a.md", "content": "x"})).await;
/// run_tool(&*backend, "write_file", &json!({"file_path": "/b.md", "content": "y"})).await;
/// let out = run_tool(&*backend, "ls", &json!({"path": "/"})).await.unwrap();
/// assert_eq!(out.content, "/b.md\n/memories/");
/// assert!(net.files().contains_key("/b.md") && !net.files().contains_key("/memories/a.md"));
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct CompositeBackend {
    default: BackendSource,
    routes: Vec<(String, BackendSource)>,
}

impl CompositeBackend {
    /// A composite with this default backend and no routes.
    pub fn new(default: impl Into<BackendSource>) -> Self {
        Self {
            default: default.into(),
            routes: Vec::new(),
        }
    }

    /// Routes `prefix` (e.g. `/memories/`) to `backend`. A prefix that breaks
    /// the path rules is ignored with a warning.
    pub fn route(mut self, prefix: &str, backend: impl Into<BackendSource>) -> Self {
        match path::normalize(prefix) {
            Ok(p) if p != "/" => {
                self.routes.retain(|(q, _)| *q != p);
                self.routes.push((p, backend.into()));
                self.routes.sort_by_key(|r| std::cmp::Reverse(r.0.len()));
            }
            _ => tracing::warn!(prefix, "ignoring an invalid route prefix"),
        }
        self
    }

    /// The composite with every route resolved for `network`.
    pub fn resolve(&self, network: &RunnableNetwork) -> Arc<dyn Backend> {
        Arc::new(Routed {
            default: self.default.resolve(network),
            routes: self
                .routes
                .iter()
                .map(|(p, b)| (p.clone(), b.resolve(network)))
                .collect(),
        })
    }
}

impl From<CompositeBackend> for BackendSource {
    fn from(composite: CompositeBackend) -> Self {
        BackendSource::Factory(BackendFactory::new(move |net| composite.resolve(net)))
    }
}

/// A composite whose routes are resolved.
struct Routed {
    default: Arc<dyn Backend>,
    /// Longest prefix first.
    routes: Vec<(String, Arc<dyn Backend>)>,
}

fn restore(prefix: &str, inner: &str) -> String {
    if inner == "/" {
        prefix.to_string()
    } else {
        format!("{prefix}{inner}")
    }
}

/// Rewrites the paths inside an error from a routed backend.
fn restore_err(prefix: &str, e: FsError) -> FsError {
    let fix = |p: String| {
        if p.starts_with('/') {
            restore(prefix, &p)
        } else {
            p
        }
    };
    match e {
        FsError::Escapes(p) => FsError::Escapes(fix(p)),
        FsError::SymlinkLoop(p) => FsError::SymlinkLoop(fix(p)),
        FsError::FileNotFound(p) => FsError::FileNotFound(fix(p)),
        FsError::DirectoryNotFound(p) => FsError::DirectoryNotFound(fix(p)),
        FsError::PathNotFound(p) => FsError::PathNotFound(fix(p)),
        FsError::NotADirectory(p) => FsError::NotADirectory(fix(p)),
        FsError::IsDirectoryUseLs(p) => FsError::IsDirectoryUseLs(fix(p)),
        FsError::IsDirectory(p) => FsError::IsDirectory(fix(p)),
        FsError::Binary { path, size } => FsError::Binary {
            path: fix(path),
            size,
        },
        FsError::NotUtf8(p) => FsError::NotUtf8(fix(p)),
        FsError::CannotEncode { path, encoding } => FsError::CannotEncode {
            path: fix(path),
            encoding,
        },
        FsError::WriteTooLarge { path, size, limit } => FsError::WriteTooLarge {
            path: fix(path),
            size,
            limit,
        },
        FsError::EditTooLarge { path, size, limit } => FsError::EditTooLarge {
            path: fix(path),
            size,
            limit,
        },
        FsError::ControlCharInName(p) => FsError::ControlCharInName(fix(p)),
        FsError::NotText(p) => FsError::NotText(fix(p)),
        FsError::AlreadyExists(p) => FsError::AlreadyExists(fix(p)),
        FsError::ParentIsFile { path, parent } => FsError::ParentIsFile {
            path: fix(path),
            parent: fix(parent),
        },
        FsError::PermissionDenied(p) => FsError::PermissionDenied(fix(p)),
        FsError::TooLarge { path, size, max } => FsError::TooLarge {
            path: fix(path),
            size,
            max,
        },
        FsError::Io { path, reason } => FsError::Io {
            path: fix(path),
            reason,
        },
        other => other,
    }
}

impl Routed {
    fn route<'a>(&'a self, vpath: &'a str) -> Option<(&'a str, &'a Arc<dyn Backend>, String)> {
        self.routes.iter().find_map(|(prefix, backend)| {
            if vpath == prefix {
                Some((prefix.as_str(), backend, "/".to_string()))
            } else {
                let rest = vpath.strip_prefix(prefix.as_str())?;
                rest.starts_with('/')
                    .then(|| (prefix.as_str(), backend, rest.to_string()))
            }
        })
    }

    /// Routes strictly below `dir`.
    fn routes_below<'a>(
        &'a self,
        dir: &'a str,
    ) -> impl Iterator<Item = &'a (String, Arc<dyn Backend>)> + 'a {
        self.routes
            .iter()
            .filter(move |(prefix, _)| path::relative_to(prefix, dir).is_some())
    }

    /// The default backend's answer, where "missing" means "empty" when
    /// routes lie below.
    fn tolerate<T: Default>(&self, dir: &str, result: FsResult<T>) -> FsResult<T> {
        match result {
            Err(FsError::DirectoryNotFound(_) | FsError::PathNotFound(_))
                if self.routes_below(dir).next().is_some() =>
            {
                Ok(T::default())
            }
            other => other,
        }
    }
}

/// Every call is routed by its path (or, without one, to the default
/// backend), so every method is stated here (see [`Wrap`](crate::Wrap) for
/// why a forgotten one is an error).
#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl Backend for Routed {
    async fn ls(&self, dir: &str, recursive: bool) -> FsResult<Vec<LsEntry>> {
        if let Some((prefix, backend, inner)) = self.route(dir) {
            let entries = backend
                .ls(&inner, recursive)
                .await
                .map_err(|e| restore_err(prefix, e))?;
            return Ok(entries
                .into_iter()
                .map(|e| LsEntry {
                    path: restore(prefix, &e.path),
                    is_dir: e.is_dir,
                })
                .collect());
        }
        let mut out = self.tolerate(dir, self.default.ls(dir, recursive).await)?;
        for (prefix, backend) in self.routes_below(dir) {
            let Some(rel) = path::relative_to(prefix, dir) else {
                continue;
            };
            let mut current = dir.to_string();
            for part in rel.split('/') {
                current = path::join(&current, part);
                out.push(LsEntry {
                    path: current.clone(),
                    is_dir: true,
                });
                if !recursive {
                    break;
                }
            }
            if recursive && let Ok(entries) = backend.ls("/", true).await {
                out.extend(entries.into_iter().map(|e| LsEntry {
                    path: restore(prefix, &e.path),
                    is_dir: e.is_dir,
                }));
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    async fn read(&self, file: &str, offset: usize, limit: usize) -> FsResult<ReadPage> {
        match self.route(file) {
            Some((prefix, b, inner)) => b
                .read(&inner, offset, limit)
                .await
                .map_err(|e| restore_err(prefix, e)),
            None => self.default.read(file, offset, limit).await,
        }
    }

    async fn read_bytes(&self, file: &str, max: u64) -> FsResult<Vec<u8>> {
        match self.route(file) {
            Some((prefix, b, inner)) => b
                .read_bytes(&inner, max)
                .await
                .map_err(|e| restore_err(prefix, e)),
            None => self.default.read_bytes(file, max).await,
        }
    }

    async fn write(&self, file: &str, content: &str, overwrite: bool) -> FsResult<()> {
        match self.route(file) {
            Some((prefix, b, inner)) => b
                .write(&inner, content, overwrite)
                .await
                .map_err(|e| restore_err(prefix, e)),
            None => self.default.write(file, content, overwrite).await,
        }
    }

    async fn append(&self, file: &str, text: &str) -> FsResult<()> {
        match self.route(file) {
            Some((prefix, b, inner)) => b
                .append(&inner, text)
                .await
                .map_err(|e| restore_err(prefix, e)),
            None => self.default.append(file, text).await,
        }
    }

    async fn edit(&self, file: &str, old: &str, new: &str, replace_all: bool) -> FsResult<usize> {
        match self.route(file) {
            Some((prefix, b, inner)) => b
                .edit(&inner, old, new, replace_all)
                .await
                .map_err(|e| restore_err(prefix, e)),
            None => self.default.edit(file, old, new, replace_all).await,
        }
    }

    async fn edit_capped(
        &self,
        file: &str,
        edit: (&str, &str, bool),
        max_bytes: Option<u64>,
    ) -> FsResult<usize> {
        match self.route(file) {
            Some((prefix, b, inner)) => b
                .edit_capped(&inner, edit, max_bytes)
                .await
                .map_err(|e| restore_err(prefix, e)),
            None => self.default.edit_capped(file, edit, max_bytes).await,
        }
    }

    async fn edit_lines(&self, file: &str, edit: &LineEdit) -> FsResult<()> {
        match self.route(file) {
            Some((prefix, b, inner)) => b
                .edit_lines(&inner, edit)
                .await
                .map_err(|e| restore_err(prefix, e)),
            None => self.default.edit_lines(file, edit).await,
        }
    }

    async fn glob(&self, glob: &GlobPattern, dir: &str) -> FsResult<Vec<String>> {
        if let Some((prefix, backend, inner)) = self.route(dir) {
            let found = backend
                .glob(glob, &inner)
                .await
                .map_err(|e| restore_err(prefix, e))?;
            return Ok(found.into_iter().map(|p| restore(prefix, &p)).collect());
        }
        let mut out = self.tolerate(dir, self.default.glob(glob, dir).await)?;
        let mut routes = self.routes_below(dir).peekable();
        if routes.peek().is_some() {
            // Every visible file of a route below, filtered here against
            // paths relative to `dir`.
            let everything = GlobPattern::new("**")?;
            for (prefix, backend) in routes {
                if let Ok(found) = backend.glob(&everything, "/").await {
                    out.extend(
                        found.into_iter().map(|p| restore(prefix, &p)).filter(|p| {
                            path::relative_to(p, dir).is_some_and(|r| glob.is_match(r))
                        }),
                    );
                }
            }
        }
        Ok(out)
    }

    async fn grep(&self, query: &GrepQuery, target: &str) -> FsResult<Vec<FileMatches>> {
        let restore_all = |prefix: &str, found: Vec<FileMatches>| {
            found
                .into_iter()
                .map(|mut m| {
                    m.path = restore(prefix, &m.path);
                    m
                })
                .collect::<Vec<_>>()
        };
        if let Some((prefix, backend, inner)) = self.route(target) {
            let found = backend
                .grep(query, &inner)
                .await
                .map_err(|e| restore_err(prefix, e))?;
            return Ok(restore_all(prefix, found));
        }
        let mut out = self.tolerate(target, self.default.grep(query, target).await)?;
        let unfiltered = GrepQuery {
            glob: None,
            ..query.clone()
        };
        for (prefix, backend) in self.routes_below(target) {
            if let Ok(found) = backend.grep(&unfiltered, "/").await {
                out.extend(restore_all(prefix, found).into_iter().filter(|m| {
                    query.glob.as_ref().is_none_or(|g| {
                        path::relative_to(&m.path, target).is_some_and(|r| g.is_match(r))
                    })
                }));
            }
        }
        Ok(out)
    }

    async fn upload_files(&self, files: Vec<(String, Vec<u8>)>) -> Vec<FileUploadResponse> {
        let mut out = Vec::with_capacity(files.len());
        for (given, bytes) in files {
            let response = match path::normalize(&given) {
                Ok(vpath) => {
                    let (backend, inner) = match self.route(&vpath) {
                        Some((_, b, inner)) => (b, inner),
                        None => (&self.default, vpath),
                    };
                    let mut r = backend.upload_files(vec![(inner, bytes)]).await;
                    FileUploadResponse {
                        path: given,
                        error: r.pop().and_then(|r| r.error),
                    }
                }
                Err(e) => FileUploadResponse {
                    path: given,
                    error: Some(e.code()),
                },
            };
            out.push(response);
        }
        out
    }

    async fn download_files(&self, paths: Vec<String>) -> Vec<FileDownloadResponse> {
        let mut out = Vec::with_capacity(paths.len());
        for given in paths {
            let response = match path::normalize(&given) {
                Ok(vpath) => {
                    let (backend, inner) = match self.route(&vpath) {
                        Some((_, b, inner)) => (b, inner),
                        None => (&self.default, vpath),
                    };
                    match backend.download_files(vec![inner]).await.pop() {
                        Some(r) => FileDownloadResponse {
                            path: given,
                            content: r.content,
                            error: r.error,
                        },
                        None => FileDownloadResponse {
                            path: given,
                            content: None,
                            error: Some(super::error::FileOpError::InvalidPath),
                        },
                    }
                }
                Err(e) => FileDownloadResponse {
                    path: given,
                    content: None,
                    error: Some(e.code()),
                },
            };
            out.push(response);
        }
        out
    }

    async fn delete(&self, file: &str) -> FsResult<()> {
        match self.route(file) {
            Some((prefix, b, inner)) => b.delete(&inner).await.map_err(|e| restore_err(prefix, e)),
            None => self.default.delete(file).await,
        }
    }

    async fn delete_tree(&self, dir: &str) -> FsResult<()> {
        crate::backend::refuse_root(dir)?;
        match self.route(dir) {
            // A route's own folder is where its backend keeps everything:
            // refused like the root.
            Some((_, _, inner)) if inner == "/" => Err(FsError::Refused(format!(
                "Cannot delete {}: it is the workspace root",
                crate::error::shown(dir)
            ))),
            Some((prefix, b, inner)) => b
                .delete_tree(&inner)
                .await
                .map_err(|e| restore_err(prefix, e)),
            None => self.default.delete_tree(dir).await,
        }
    }

    async fn fingerprint(&self, file: &str, keep: usize) -> Option<Fingerprint> {
        match self.route(file) {
            Some((_, b, inner)) => b.fingerprint(&inner, keep).await,
            None => self.default.fingerprint(file, keep).await,
        }
    }

    async fn write_recorded(
        &self,
        file: &str,
        content: &str,
        overwrite: bool,
        keep: usize,
    ) -> FsResult<Recorded<()>> {
        match self.route(file) {
            Some((prefix, b, inner)) => b
                .write_recorded(&inner, content, overwrite, keep)
                .await
                .map_err(|e| restore_err(prefix, e)),
            None => {
                self.default
                    .write_recorded(file, content, overwrite, keep)
                    .await
            }
        }
    }

    async fn edit_recorded(
        &self,
        file: &str,
        edit: (&str, &str, bool),
        keep: usize,
        max_bytes: Option<u64>,
    ) -> FsResult<Recorded<usize>> {
        match self.route(file) {
            Some((prefix, b, inner)) => b
                .edit_recorded(&inner, edit, keep, max_bytes)
                .await
                .map_err(|e| restore_err(prefix, e)),
            None => {
                self.default
                    .edit_recorded(file, edit, keep, max_bytes)
                    .await
            }
        }
    }

    async fn real_paths(&self, paths: &[String]) -> Vec<Option<String>> {
        let mut out = Vec::with_capacity(paths.len());
        for p in paths {
            let real = match self.route(p) {
                Some((prefix, b, inner)) => b
                    .real_paths(&[inner])
                    .await
                    .pop()
                    .flatten()
                    .map(|r| restore(prefix, &r)),
                None => self
                    .default
                    .real_paths(std::slice::from_ref(p))
                    .await
                    .pop()
                    .flatten(),
            };
            out.push(real);
        }
        out
    }

    /// The default backend's.
    fn limits(&self) -> crate::FileLimits {
        self.default.limits()
    }

    fn supports_execute(&self) -> bool {
        self.default.supports_execute()
    }

    async fn execute(&self, command: &str, timeout_secs: u64) -> FsResult<ExecuteResponse> {
        self.default.execute(command, timeout_secs).await
    }
}

//! [`FilesystemBackend`]: files in a real directory, confined with cap-std.
//!
//! This file holds the backend and its reads; `search.rs` its walk,
//! listing, glob and grep; `write.rs` how it writes (links, parents, atomic commit);
//! `links.rs` where a path leads through its links (for path permissions);
//! `hashes.rs` the contents recorded changes hashed lately, so the same
//! bytes met again are compared, not hashed again.

mod hashes;
mod links;
mod search;
mod write;

use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use cap_std::ambient_authority;
use cap_std::fs::Dir;

use super::backend::{
    Backend, FileDownloadResponse, FileMatches, FileUploadResponse, Fingerprint, GrepQuery,
    LsEntry, ReadPage, Recorded,
};
use super::encoding::{self, classify, Encoding};
use super::error::{FsError, FsResult};
use super::glob::GlobPattern;
use super::line_edit::LineEdit;
use super::paging::page;
use super::path;

/// Files in a directory on disk.
///
/// In **virtual mode** (the default) the directory is the whole world:
/// `/` is `root_dir`, and every open goes through a [`cap_std::fs::Dir`]
/// handle on it, so the kernel (openat2 `RESOLVE_BENEATH`, or cap-std's
/// own component-by-component resolution) refuses any path that would
/// leave it — through `..`, an absolute symlink, a symlink to outside in the
/// middle of a path, or a directory swapped for such a symlink while an
/// operation runs. Nothing is checked first and opened later.
///
/// Writes never tear a file: `write_file`, `edit_file` and uploads write a
/// temp file next to the target, fsync it and rename it over the target
/// (see `atomic.rs`), so a process killed mid-write leaves the old or
/// the new bytes.
///
/// With `virtual_mode(false)` paths are still taken below `root_dir`, but
/// the handle is the host's `/`: symlinks may lead anywhere on the host.
/// **Non-virtual mode confines nothing**; use it only for trusted agents.
///
/// ```
/// use lc_agent_filesystem::{run_tool, FilesystemBackend};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// let backend = FilesystemBackend::new(dir.path()).unwrap();
/// run_tool(&backend, "write_file", &json!({"file_path": "/a/b.txt", "content": "hi"})).await;
/// let out = run_tool(&backend, "ls", &json!({"path": "/a"})).await.unwrap();
/// assert_eq!(out.content, "/a/b.txt");
/// let out = run_tool(&backend, "read_file", &json!({"file_path": "/../etc/passwd"})).await.unwrap();
/// assert_eq!(out.content, "Error: Path traversal not allowed: /../etc/passwd");
/// # });
/// ```
#[derive(Clone)]
pub struct FilesystemBackend {
    disk: Arc<Disk>,
}

impl std::fmt::Debug for FilesystemBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilesystemBackend")
            .field("root", &self.disk.root_path)
            .field("virtual_mode", &self.disk.virtual_mode)
            .finish()
    }
}

/// Configures a [`FilesystemBackend`].
#[derive(Debug, Clone)]
pub(crate) struct FilesystemBackendBuilder {
    root: PathBuf,
    virtual_mode: bool,
}

impl FilesystemBackendBuilder {
    /// Opens the root directory (it must exist).
    pub(crate) fn build(self) -> io::Result<FilesystemBackend> {
        let root_path = std::fs::canonicalize(&self.root)?;
        if !root_path.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                "root is not a directory",
            ));
        }
        let (dir, base) = if self.virtual_mode {
            (
                Dir::open_ambient_dir(&root_path, ambient_authority())?,
                PathBuf::from("."),
            )
        } else {
            let base = root_path
                .strip_prefix("/")
                .unwrap_or(&root_path)
                .to_path_buf();
            (Dir::open_ambient_dir("/", ambient_authority())?, base)
        };
        Ok(FilesystemBackend {
            disk: Arc::new(Disk {
                root: dir,
                base,
                root_path,
                virtual_mode: self.virtual_mode,
                hashes: hashes::RecentHashes::default(),
            }),
        })
    }
}

impl FilesystemBackend {
    /// A backend on `root_dir` in virtual mode.
    pub fn new(root_dir: impl AsRef<Path>) -> io::Result<Self> {
        Self::builder(root_dir).build()
    }

    /// A builder for `root_dir`.
    pub(crate) fn builder(root_dir: impl AsRef<Path>) -> FilesystemBackendBuilder {
        FilesystemBackendBuilder {
            root: root_dir.as_ref().to_path_buf(),
            virtual_mode: true,
        }
    }

    /// The root directory on the host (canonical).
    pub(crate) fn root_dir(&self) -> &Path {
        &self.disk.root_path
    }

    async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Disk) -> FsResult<T> + Send + 'static,
    ) -> FsResult<T> {
        let disk = self.disk.clone();
        tokio::task::spawn_blocking(move || f(&disk))
            .await
            .map_err(|e| FsError::Io {
                path: "/".to_string(),
                reason: format!("worker failed: {e}"),
            })?
    }
}

struct Disk {
    root: Dir,
    base: PathBuf,
    root_path: PathBuf,
    virtual_mode: bool,
    /// Contents hashed lately, with their SHA-256 (`hashes.rs`).
    hashes: hashes::RecentHashes,
}

fn is_escape(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EXDEV)
        || (e.kind() == io::ErrorKind::PermissionDenied
            && e.to_string().contains("outside of the filesystem"))
}

/// Maps an I/O error to the model-facing error; `missing` builds the
/// not-found error (which one depends on the tool).
fn map_err(e: io::Error, vpath: &str, missing: fn(String) -> FsError) -> FsError {
    let v = vpath.to_string();
    if is_escape(&e) {
        FsError::Escapes(v)
    } else if e.raw_os_error() == Some(libc::ELOOP) {
        FsError::SymlinkLoop(v)
    } else if e.kind() == io::ErrorKind::NotFound
        || matches!(e.raw_os_error(), Some(libc::ENOTDIR | libc::ENAMETOOLONG))
    {
        // A name too long for the filesystem names no file that exists.
        missing(v)
    } else if e.kind() == io::ErrorKind::PermissionDenied {
        FsError::PermissionDenied(v)
    } else {
        FsError::Io {
            path: v,
            reason: e.kind().to_string(),
        }
    }
}

/// How a walk reports a directory it could not read: its path with a
/// trailing `/` (see `Backend`).
fn unreadable_dir(vpath: &str) -> String {
    format!("{}/", vpath.trim_end_matches('/'))
}

fn read_head(file: &std::fs::File) -> io::Result<Vec<u8>> {
    let mut head = vec![0u8; encoding::BINARY_SNIFF_BYTES];
    let filled = encoding::read_head_into(file, &mut head)?;
    head.truncate(filled);
    Ok(head)
}

impl Disk {
    fn rel(&self, vpath: &str) -> PathBuf {
        let mut rel = self.base.clone();
        for c in path::components(vpath) {
            rel.push(c);
        }
        rel
    }

    /// Opens a directory following in-root symlinks.
    fn open_dir(&self, vpath: &str, missing: fn(String) -> FsError) -> FsResult<Dir> {
        let rel = self.rel(vpath);
        self.root.open_dir(&rel).map_err(|e| {
            // ENOTDIR also comes from a file in the middle of the path
            // (`/a.txt/x`): that path is missing, not a file.
            let is_file = || self.root.metadata(&rel).is_ok_and(|md| !md.is_dir());
            if e.raw_os_error() == Some(libc::ENOTDIR) && is_file() {
                FsError::NotADirectory(vpath.to_string())
            } else {
                map_err(e, vpath, missing)
            }
        })
    }

    /// Opens a file for reading (directories are refused).
    fn open_file(&self, vpath: &str) -> FsResult<(std::fs::File, u64)> {
        self.open_file_at(&self.rel(vpath), vpath)
    }

    /// Opens the file at `rel` (relative to the root handle) for reading;
    /// errors name `vpath`.
    fn open_file_at(&self, rel: &Path, vpath: &str) -> FsResult<(std::fs::File, u64)> {
        let file = self
            .root
            .open(rel)
            .map_err(|e| map_err(e, vpath, FsError::FileNotFound))?;
        let md = file
            .metadata()
            .map_err(|e| map_err(e, vpath, FsError::FileNotFound))?;
        if md.is_dir() {
            return Err(FsError::IsDirectoryUseLs(vpath.to_string()));
        }
        Ok((file.into_std(), md.len()))
    }

    fn read(&self, vpath: &str, offset: usize, limit: usize) -> FsResult<ReadPage> {
        let (file, size) = self.open_file(vpath)?;
        let io_err = |e: io::Error| map_err(e, vpath, FsError::FileNotFound);
        let head = read_head(&file).map_err(io_err)?;
        match classify(&head) {
            Encoding::Binary => Err(FsError::Binary {
                path: vpath.to_string(),
                size,
            }),
            Encoding::Utf8 => {
                page(BufReader::with_capacity(1 << 16, file), offset, limit).map_err(io_err)
            }
            other => {
                // Transcoded to UTF-8 as it is read (never whole in memory).
                let decoded = encoding::text_reader(file, other);
                let mut window = page(BufReader::with_capacity(1 << 16, decoded), offset, limit)
                    .map_err(io_err)?;
                window.encoding = other.name();
                Ok(window)
            }
        }
    }

    /// The file's bytes when at most `max` (its size is checked first).
    fn read_bytes(&self, vpath: &str, max: u64) -> FsResult<Vec<u8>> {
        let (file, size) = self.open_file(vpath)?;
        if size > max {
            return Err(FsError::TooLarge {
                path: vpath.to_string(),
                size,
                max,
            });
        }
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        // A file that grew since it was opened is cut at `max + 1` bytes.
        file.take(max + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| map_err(e, vpath, FsError::FileNotFound))?;
        if bytes.len() as u64 > max {
            return Err(FsError::TooLarge {
                path: vpath.to_string(),
                size: bytes.len() as u64,
                max,
            });
        }
        Ok(bytes)
    }

    fn download(&self, vpath: &str) -> FsResult<Vec<u8>> {
        let (file, _) = self.open_file(vpath)?;
        let mut bytes = Vec::new();
        BufReader::new(file)
            .read_to_end(&mut bytes)
            .map_err(|e| map_err(e, vpath, FsError::FileNotFound))?;
        Ok(bytes)
    }

    /// The file's SHA-256 and its bytes when at most `keep` (see
    /// [`Backend::fingerprint`]): a file that small is read whole in one
    /// go, a bigger one in pieces (bounded memory).
    fn fingerprint(&self, vpath: &str, keep: usize) -> FsResult<Fingerprint> {
        let (file, size) = self.open_file(vpath)?;
        let io_err = |e: io::Error| map_err(e, vpath, FsError::FileNotFound);
        let mut hasher = crate::fingerprint::Hasher::default();
        let mut file = file;
        if size <= keep as u64 {
            // At most `keep` bytes (and one more, to see that it grew).
            let mut bytes = Vec::with_capacity(size as usize + 1);
            (&mut file)
                .take((keep as u64).saturating_add(1))
                .read_to_end(&mut bytes)
                .map_err(io_err)?;
            if bytes.len() <= keep {
                return Ok(Fingerprint {
                    sha256: self.hashes.sha256(&bytes),
                    bytes: Some(bytes),
                });
            }
            // It grew since it was opened: hashed on, not kept.
            hasher.update(&bytes);
        }
        let mut reader = BufReader::with_capacity(1 << 16, file);
        loop {
            let piece = reader.fill_buf().map_err(io_err)?;
            if piece.is_empty() {
                break;
            }
            hasher.update(piece);
            let n = piece.len();
            reader.consume(n);
        }
        Ok(Fingerprint {
            sha256: hasher.finish(),
            bytes: None,
        })
    }

    fn delete(&self, vpath: &str) -> FsResult<()> {
        let rel = self.rel(vpath);
        if self.root.symlink_metadata(&rel).is_ok_and(|m| m.is_dir()) {
            return Err(FsError::IsDirectory(vpath.to_string()));
        }
        self.root
            .remove_file(rel)
            .map_err(|e| map_err(e, vpath, FsError::FileNotFound))
    }

    /// Deletes a directory and everything in it, through the root handle
    /// (confined; links inside are removed, never followed).
    fn delete_tree(&self, vpath: &str) -> FsResult<()> {
        crate::backend::refuse_root(vpath)?;
        let rel = self.rel(vpath);
        let md = self
            .root
            .symlink_metadata(&rel)
            .map_err(|e| map_err(e, vpath, FsError::PathNotFound))?;
        if !md.is_dir() {
            return self.delete(vpath);
        }
        self.root
            .remove_dir_all(&rel)
            .map_err(|e| map_err(e, vpath, FsError::PathNotFound))
    }
}

#[async_trait]
impl Backend for FilesystemBackend {
    async fn ls(&self, dir: &str, recursive: bool) -> FsResult<Vec<LsEntry>> {
        let dir = dir.to_string();
        self.run(move |d| d.ls(&dir, recursive)).await
    }

    async fn read(&self, file: &str, offset: usize, limit: usize) -> FsResult<ReadPage> {
        let file = file.to_string();
        self.run(move |d| d.read(&file, offset, limit)).await
    }

    async fn read_bytes(&self, file: &str, max: u64) -> FsResult<Vec<u8>> {
        let file = file.to_string();
        self.run(move |d| d.read_bytes(&file, max)).await
    }

    async fn write(&self, file: &str, content: &str, overwrite: bool) -> FsResult<()> {
        let (file, content) = (file.to_string(), content.to_string());
        self.run(move |d| d.write_bytes(&file, content.as_bytes(), overwrite))
            .await
    }

    async fn edit(&self, file: &str, old: &str, new: &str, replace_all: bool) -> FsResult<usize> {
        let (file, old, new) = (file.to_string(), old.to_string(), new.to_string());
        self.run(move |d| d.edit(&file, &old, &new, replace_all, None))
            .await
    }

    async fn edit_capped(
        &self,
        file: &str,
        edit: (&str, &str, bool),
        max_bytes: Option<u64>,
    ) -> FsResult<usize> {
        let (old, new, replace_all) = edit;
        let (file, old, new) = (file.to_string(), old.to_string(), new.to_string());
        self.run(move |d| d.edit(&file, &old, &new, replace_all, max_bytes))
            .await
    }

    async fn edit_lines(&self, file: &str, edit: &LineEdit) -> FsResult<()> {
        let (file, edit) = (file.to_string(), edit.clone());
        self.run(move |d| d.edit_lines(&file, &edit)).await
    }

    async fn glob(&self, pattern: &GlobPattern, dir: &str) -> FsResult<Vec<String>> {
        let (pattern, dir) = (pattern.clone(), dir.to_string());
        self.run(move |d| d.glob(&pattern, &dir)).await
    }

    async fn grep(&self, query: &GrepQuery, target: &str) -> FsResult<Vec<FileMatches>> {
        let (query, target) = (query.clone(), target.to_string());
        self.run(move |d| d.grep(&query, &target)).await
    }

    async fn upload_files(&self, files: Vec<(String, Vec<u8>)>) -> Vec<FileUploadResponse> {
        let result = self
            .run(move |d| {
                Ok(files
                    .into_iter()
                    .map(|(given, bytes)| {
                        let error = path::normalize(&given)
                            .and_then(|v| d.write_bytes(&v, &bytes, true))
                            .err()
                            .map(|e| e.code());
                        FileUploadResponse { path: given, error }
                    })
                    .collect())
            })
            .await;
        result.unwrap_or_default()
    }

    async fn download_files(&self, paths: Vec<String>) -> Vec<FileDownloadResponse> {
        let result = self
            .run(move |d| {
                Ok(paths
                    .into_iter()
                    .map(|given| {
                        let result = path::normalize(&given).and_then(|v| d.download(&v));
                        FileDownloadResponse::from_result(given, result)
                    })
                    .collect())
            })
            .await;
        result.unwrap_or_default()
    }

    async fn delete(&self, file: &str) -> FsResult<()> {
        let file = file.to_string();
        self.run(move |d| d.delete(&file)).await
    }

    async fn delete_tree(&self, dir: &str) -> FsResult<()> {
        let dir = dir.to_string();
        self.run(move |d| d.delete_tree(&dir)).await
    }

    async fn fingerprint(&self, file: &str, keep: usize) -> Option<Fingerprint> {
        let file = file.to_string();
        self.run(move |d| d.fingerprint(&file, keep)).await.ok()
    }

    async fn write_recorded(
        &self,
        file: &str,
        content: &str,
        overwrite: bool,
        keep: usize,
    ) -> FsResult<Recorded<()>> {
        let (file, content) = (file.to_string(), content.to_string());
        self.run(move |d| {
            let before = d.fingerprint(&file, keep).ok();
            d.write_bytes(&file, content.as_bytes(), overwrite)?;
            // What was written is what the file holds: no read back.
            let sha256 = d.hashes.sha256(content.as_bytes());
            d.hashes.remember(content.into_bytes(), &sha256);
            let after = Some(Fingerprint {
                sha256,
                bytes: None,
            });
            Ok(Recorded {
                value: (),
                before,
                after,
            })
        })
        .await
    }

    async fn edit_recorded(
        &self,
        file: &str,
        edit: (&str, &str, bool),
        keep: usize,
        max_bytes: Option<u64>,
    ) -> FsResult<Recorded<usize>> {
        let (old, new, replace_all) = edit;
        let (file, old, new) = (file.to_string(), old.to_string(), new.to_string());
        self.run(move |d| d.edit_recorded(&file, (&old, &new, replace_all), keep, max_bytes))
            .await
    }

    async fn real_paths(&self, paths: &[String]) -> Vec<Option<String>> {
        let wanted = paths.to_vec();
        let count = wanted.len();
        self.run(move |d| Ok(wanted.iter().map(|p| d.real_path(p)).collect()))
            .await
            .unwrap_or_else(|_| vec![None; count])
    }
}

//! The backend trait, what its operations return, and its errors.

use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::RunnableNetwork;

use super::error::{shown, FileOpError, FsError, FsResult};
use super::fingerprint;
pub(crate) use super::fingerprint::Fingerprint;
use super::glob::GlobPattern;
use super::limits::FileLimits;
use super::line_edit::LineEdit;

/// The result of uploading one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileUploadResponse {
    /// The path as given.
    pub path: String,
    /// `None` on success.
    pub error: Option<FileOpError>,
}

/// The result of downloading one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDownloadResponse {
    /// The path as given.
    pub path: String,
    /// The bytes, on success.
    pub content: Option<Vec<u8>>,
    /// `None` on success.
    pub error: Option<FileOpError>,
}

impl FileDownloadResponse {
    /// The response for `path` (as given) from a download's outcome.
    pub(crate) fn from_result(path: String, result: FsResult<Vec<u8>>) -> Self {
        match result {
            Ok(bytes) => Self {
                path,
                content: Some(bytes),
                error: None,
            },
            Err(e) => Self {
                path,
                content: None,
                error: Some(e.code()),
            },
        }
    }
}

/// One entry listed by `ls`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct LsEntry {
    /// Virtual absolute path, without trailing slash.
    pub path: String,
    /// Whether it is (or is a link to) a directory inside the workspace.
    pub is_dir: bool,
}

impl LsEntry {
    /// The printed line: the path (control characters escaped, see
    /// [`shown`](crate::path::shown)), with `/` for directories.
    pub(crate) fn line(&self) -> String {
        if self.is_dir {
            format!("{}/", shown(&self.path))
        } else {
            shown(&self.path).into_owned()
        }
    }
}

/// One line of a [`ReadPage`], already cut at the tool's per-line cap.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PageLine {
    /// The text shown: at most [`MAX_LINE_CHARS`](crate::MAX_LINE_CHARS)
    /// chars, decoded, without line ending.
    pub text: String,
    /// How many chars of the line were cut off (0: the whole line is shown).
    pub more_chars: u64,
    /// Whether `more_chars` is exact; `false` when reading stopped at the
    /// scan budget inside the line (there are *over* `more_chars` more).
    pub more_exact: bool,
}

impl PageLine {
    /// A line shown whole.
    pub fn whole(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            more_chars: 0,
            more_exact: true,
        }
    }
}

/// A window of a text file, as `read` returns it. Reading it takes bounded
/// memory whatever the file: each line keeps at most the per-line cap, the
/// window stops once it holds more than the output cap, and the lines after
/// it are counted only up to a scan budget.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReadPage {
    /// The 0-based index of the first line in `lines`.
    pub offset: usize,
    /// The lines of the window, decoded, without line endings, each cut at
    /// the per-line cap.
    pub lines: Vec<PageLine>,
    /// How many lines the file has (a final newline does not start a line);
    /// `None` when the file goes on past the scan budget and was not counted
    /// to its end.
    pub total: Option<usize>,
    /// Whether the file is empty or only whitespace.
    pub blank: bool,
    /// The file's encoding when it is not plain UTF-8 (`UTF-8 with BOM`,
    /// `UTF-16LE`, `UTF-16BE`, `windows-1252`): `read_file` names it.
    pub encoding: Option<&'static str>,
}

/// How `grep` reports (its `output_mode` argument, spelled
/// `files_with_matches`, `content` or `count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrepMode {
    /// Paths of files with a match.
    #[default]
    FilesWithMatches,
    /// Matching lines (with context).
    Content,
    /// Matching lines per file.
    Count,
}

/// What to search for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepQuery {
    /// The regular expression (already made literal when it was invalid).
    pub pattern: String,
    /// Search for the pattern as literal text.
    pub fixed_strings: bool,
    /// Ignore case.
    pub case_insensitive: bool,
    /// Only files whose path relative to the search path matches this glob.
    pub glob: Option<GlobPattern>,
    /// Context lines (content mode).
    pub context: usize,
    /// Stop after this many matching lines in total (files in
    /// `files_with_matches` mode, where each file is searched only to its
    /// first match).
    pub max_count: usize,
    /// Output mode (context lines are only collected in content mode).
    pub mode: GrepMode,
}

impl GrepQuery {
    /// A query for `pattern` with the tool's defaults.
    pub fn new(pattern: impl Into<String>) -> Self {
        Self {
            pattern: pattern.into(),
            fixed_strings: false,
            case_insensitive: false,
            glob: None,
            context: 0,
            max_count: 1000,
            mode: GrepMode::FilesWithMatches,
        }
    }
}

/// One line reported by `grep`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepLine {
    /// 1-based line number.
    pub number: u64,
    /// The text, without line ending, cut like `read_file`'s lines (at
    /// [`MAX_LINE_CHARS`](crate::MAX_LINE_CHARS) chars, then
    /// ` ... [line truncated, <k> more chars]`).
    pub text: String,
    /// A matching line (otherwise a context line).
    pub is_match: bool,
}

/// What `grep` found in one file: at most `max_count + 1` matching lines
/// (so callers know whether more exist; one in `files_with_matches`
/// mode), with context lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMatches {
    /// Virtual path.
    pub path: String,
    /// Matching and context lines in order.
    pub lines: Vec<GrepLine>,
    /// The file was not searched (to its end) because a line is longer than
    /// grep's per-line limit ([`GREP_LINE_LIMIT`](crate::GREP_LINE_LIMIT));
    /// `lines` is then empty and the tool prints a note naming the file.
    pub line_too_long: bool,
    /// The file (or, with a trailing `/`, the directory) could not be read,
    /// so it was not searched; `lines` is then empty and the tool prints a
    /// note naming it.
    pub unreadable: bool,
}

impl FileMatches {
    /// A path that could not be read (a directory ends with `/`).
    pub(crate) fn unreadable(path: String) -> Self {
        Self {
            path,
            lines: Vec::new(),
            line_too_long: false,
            unreadable: true,
        }
    }
}

/// The output of `execute`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecuteResponse {
    /// Stdout and stderr as they arrived, capped.
    pub output: String,
    /// The exit code (128 + signal when killed by a signal); `None` on timeout.
    pub exit_code: Option<i32>,
    /// Total output bytes when the output was cut.
    pub truncated_bytes: Option<u64>,
    /// Whether the command was killed at its timeout.
    pub timed_out: bool,
    /// A line the backend adds about the run, after the output and its
    /// truncation marker (the sandbox's process limit reached).
    pub note: Option<String>,
}

/// A storage backend for the file tools.
///
/// Paths given to every method are normalised virtual paths (see
/// [`super::path::normalize`]); the tools validate arguments first. Results
/// are unsorted and uncapped: the tools sort, cap and format them, so every
/// backend prints the same answers.
///
/// A walk (`ls` recursive, `glob`, `grep`) that meets a directory it cannot
/// read goes on and reports it: as a path ending with `/` among `ls`'s
/// entries and `glob`'s files, as a [`FileMatches`] marked `unreadable` in
/// `grep`'s results (a file grep cannot open is reported the same way,
/// without the `/`). The tools print those as notes.
#[async_trait]
pub trait Backend: Send + Sync {
    /// Entries directly under `dir` (all descendants with `recursive`).
    async fn ls(&self, dir: &str, recursive: bool) -> FsResult<Vec<LsEntry>>;
    /// Lines `offset..offset + limit` of a text file.
    async fn read(&self, path: &str, offset: usize, limit: usize) -> FsResult<ReadPage>;
    /// Creates (or with `overwrite` replaces) a file.
    async fn write(&self, path: &str, content: &str, overwrite: bool) -> FsResult<()>;
    /// Replaces `old` by `new`; returns the number of replacements.
    async fn edit(&self, path: &str, old: &str, new: &str, replace_all: bool) -> FsResult<usize>;
    /// Files under `dir` matching the glob `pattern` (compiled once, by the
    /// caller).
    async fn glob(&self, pattern: &GlobPattern, dir: &str) -> FsResult<Vec<String>>;
    /// Searches files under `path` (or the file `path`).
    async fn grep(&self, query: &GrepQuery, path: &str) -> FsResult<Vec<FileMatches>>;
    /// Writes raw bytes (paths as given; each result says what happened).
    async fn upload_files(&self, files: Vec<(String, Vec<u8>)>) -> Vec<FileUploadResponse>;
    /// Reads raw bytes (paths as given; each result says what happened).
    async fn download_files(&self, paths: Vec<String>) -> Vec<FileDownloadResponse>;
    /// Deletes a file.
    async fn delete(&self, path: &str) -> FsResult<()>;

    /// [`edit`](Self::edit) (`edit` is `(old, new, replace_all)`) that
    /// leaves the file as it was, with [`FsError::EditTooLarge`], when the
    /// edited file would be over `max_bytes` bytes (in the file's own
    /// encoding; `None`: no limit). The default downloads the file to
    /// measure the result when it is UTF-8 text, then calls `edit`; the
    /// backends of this crate measure while they edit.
    async fn edit_capped(
        &self,
        path: &str,
        edit: (&str, &str, bool),
        max_bytes: Option<u64>,
    ) -> FsResult<usize> {
        if max_bytes.is_some() {
            let found = self.download_files(vec![path.to_string()]).await.pop();
            if let Some(text) = found
                .and_then(|r| r.content)
                .and_then(|bytes| String::from_utf8(bytes).ok())
            {
                super::edit::edit_text(path, &text, edit, max_bytes)?;
            }
        }
        let (old, new, replace_all) = edit;
        self.edit(path, old, new, replace_all).await
    }

    /// Applies a line edit (`insert_lines`, `replace_lines`,
    /// `delete_lines`) to a text file. The default downloads the file,
    /// edits it in memory and uploads it back (map-backed backends, whose
    /// files are held whole anyway); backends on disk stream it in bounded
    /// memory and write atomically.
    async fn edit_lines(&self, path: &str, edit: &LineEdit) -> FsResult<()> {
        edit_downloaded(self, path, edit).await
    }

    /// Deletes the directory `dir` and everything below it (a file at
    /// `dir` is deleted like [`delete`](Self::delete)). The workspace root
    /// itself is refused. The default deletes every file `ls` lists below
    /// `dir` (map-backed backends, whose directories are their files'
    /// paths); backends with real directories override it.
    async fn delete_tree(&self, dir: &str) -> FsResult<()> {
        refuse_root(dir)?;
        for entry in self.ls(dir, true).await? {
            if !entry.is_dir && !entry.path.ends_with('/') {
                self.delete(&entry.path).await?;
            }
        }
        Ok(())
    }

    /// Adds `text` at the end of a file, creating it (and its parents)
    /// when missing; what the file held stays as it was. The default reads
    /// the file and writes it back whole (atomically where the backend
    /// writes atomically); backends that can append in place do.
    async fn append(&self, path: &str, text: &str) -> FsResult<()> {
        let found = self.download_files(vec![path.to_string()]).await.pop();
        let mut bytes = match found {
            Some(FileDownloadResponse {
                content: Some(bytes),
                ..
            }) => bytes,
            Some(FileDownloadResponse {
                error: Some(FileOpError::FileNotFound),
                ..
            })
            | None => Vec::new(),
            Some(FileDownloadResponse { error, .. }) => {
                return Err(FsError::Io {
                    path: path.to_string(),
                    reason: format!(
                        "cannot read it to append: {}",
                        error.map_or("unknown error", FileOpError::as_str)
                    ),
                })
            }
        };
        bytes.extend_from_slice(text.as_bytes());
        let written = self.upload_files(vec![(path.to_string(), bytes)]).await;
        match written.into_iter().next().and_then(|r| r.error) {
            None => Ok(()),
            Some(code) => Err(FsError::Io {
                path: path.to_string(),
                reason: format!("cannot append: {code}"),
            }),
        }
    }

    /// The SHA-256 (lowercase hex) of a file's bytes, and the bytes
    /// themselves when there are at most `keep` of them; `None` when there
    /// is no file there (or it cannot be read). What a change does to a
    /// file is recorded with it for rewinds. The default downloads the
    /// file; backends on disk read it in pieces, so a huge file costs
    /// bounded memory.
    async fn fingerprint(&self, path: &str, keep: usize) -> Option<Fingerprint> {
        let bytes = self
            .download_files(vec![path.to_string()])
            .await
            .pop()
            .and_then(|r| r.content)?;
        Some(Fingerprint {
            sha256: fingerprint::hash(&bytes),
            bytes: (bytes.len() <= keep).then_some(bytes),
        })
    }

    /// [`write`](Self::write), also saying what the file held before
    /// (its fingerprint, the bytes kept when at most `keep`) and after, for
    /// rewinds. The default asks [`fingerprint`](Self::fingerprint) before
    /// and after; backends on disk read both inside the write's own
    /// blocking task.
    async fn write_recorded(
        &self,
        path: &str,
        content: &str,
        overwrite: bool,
        keep: usize,
    ) -> FsResult<Recorded<()>> {
        Recorded::around(self, path, keep, self.write(path, content, overwrite)).await
    }

    /// [`edit_capped`](Self::edit_capped), also saying what the file held
    /// before and after (see [`write_recorded`](Self::write_recorded)).
    async fn edit_recorded(
        &self,
        path: &str,
        edit: (&str, &str, bool),
        keep: usize,
        max_bytes: Option<u64>,
    ) -> FsResult<Recorded<usize>> {
        Recorded::around(self, path, keep, self.edit_capped(path, edit, max_bytes)).await
    }

    /// Where each path leads once the symbolic links along it are
    /// followed, as a virtual path: `None` where no link is involved or
    /// the path leads out of the workspace. Path permissions check a path
    /// and where it leads. The default: a backend without links.
    async fn real_paths(&self, paths: &[String]) -> Vec<Option<String>> {
        vec![None; paths.len()]
    }

    /// The file tools' size limits on this backend (see [`FileLimits`]);
    /// the defaults unless it was made with [`FileLimits::apply`] (wrappers
    /// say their inner backend's).
    fn limits(&self) -> FileLimits {
        FileLimits::default()
    }

    /// The bytes of a file of at most `max` bytes (`read_file` on images
    /// and PDFs): [`FsError::TooLarge`] when it is larger, the read errors
    /// of [`read`](Self::read) otherwise. The default downloads the file;
    /// backends on disk check its size before reading it.
    async fn read_bytes(&self, path: &str, max: u64) -> FsResult<Vec<u8>> {
        let got = self.download_files(vec![path.to_string()]).await.pop();
        let bytes = match got {
            Some(FileDownloadResponse {
                content: Some(bytes),
                ..
            }) => bytes,
            Some(FileDownloadResponse { error, .. }) => {
                return Err(match error {
                    Some(FileOpError::IsDirectory) => FsError::IsDirectoryUseLs(path.to_string()),
                    Some(FileOpError::PermissionDenied) => {
                        FsError::PermissionDenied(path.to_string())
                    }
                    _ => FsError::FileNotFound(path.to_string()),
                })
            }
            None => return Err(FsError::FileNotFound(path.to_string())),
        };
        if bytes.len() as u64 > max {
            return Err(FsError::TooLarge {
                path: path.to_string(),
                size: bytes.len() as u64,
                max,
            });
        }
        Ok(bytes)
    }

    /// Whether [`Backend::execute`] runs commands (the sandbox extension).
    fn supports_execute(&self) -> bool {
        false
    }

    /// Runs `sh -c command` (sandbox backends only).
    async fn execute(&self, _command: &str, _timeout_secs: u64) -> FsResult<ExecuteResponse> {
        Err(FsError::NoSandbox)
    }
}

/// What a change recorded for rewinds reports
/// ([`Backend::write_recorded`], [`Backend::edit_recorded`]): its own
/// result and the file before and after (`None`: no file there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded<T> {
    /// What the change itself returns.
    pub value: T,
    /// The file before the change.
    pub before: Option<Fingerprint>,
    /// The file after it.
    pub after: Option<Fingerprint>,
}

impl<T> Recorded<T> {
    /// Runs `change` (a change of the file `path` of `backend`, not yet
    /// started) between two [`Backend::fingerprint`]s of the file: before
    /// (its bytes kept when at most `keep`) and after. How
    /// [`Backend::write_recorded`] and [`Backend::edit_recorded`] record by
    /// default; a wrapper ([`Wrap`](crate::Wrap)) that makes the change
    /// itself records it with this too.
    pub async fn around<B: Backend + ?Sized>(
        backend: &B,
        path: &str,
        keep: usize,
        change: impl Future<Output = FsResult<T>>,
    ) -> FsResult<Self> {
        let before = backend.fingerprint(path, keep).await;
        let value = change.await?;
        let after = backend.fingerprint(path, 0).await;
        Ok(Recorded {
            value,
            before,
            after,
        })
    }
}

/// Refuses the workspace root (`/`) as a target of [`Backend::delete_tree`].
pub(crate) fn refuse_root(dir: &str) -> FsResult<()> {
    if super::path::components(dir).next().is_none() {
        return Err(FsError::Refused(format!(
            "Cannot delete {}: it is the workspace root",
            shown(dir)
        )));
    }
    Ok(())
}

type FactoryFn = dyn Fn(&RunnableNetwork) -> Arc<dyn Backend> + Send + Sync;

/// A backend built from the running network (e.g. [`super::StateBackend`],
/// which needs the network's `files`).
#[derive(Clone)]
pub struct BackendFactory(Arc<FactoryFn>);

impl BackendFactory {
    /// A factory calling `f` with the running network.
    pub fn new(f: impl Fn(&RunnableNetwork) -> Arc<dyn Backend> + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// Builds the backend for `network`.
    pub fn build(&self, network: &RunnableNetwork) -> Arc<dyn Backend> {
        (self.0)(network)
    }
}

impl std::fmt::Debug for BackendFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BackendFactory")
    }
}

/// A backend given directly or as a factory.
#[derive(Clone)]
pub enum BackendSource {
    /// A ready backend.
    Ready(Arc<dyn Backend>),
    /// A backend built per network.
    Factory(BackendFactory),
}

impl BackendSource {
    /// The backend to use with `network`.
    pub fn resolve(&self, network: &RunnableNetwork) -> Arc<dyn Backend> {
        match self {
            BackendSource::Ready(b) => b.clone(),
            BackendSource::Factory(f) => f.build(network),
        }
    }
}

impl std::fmt::Debug for BackendSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BackendSource::Ready(_) => f.write_str("BackendSource::Ready"),
            BackendSource::Factory(_) => f.write_str("BackendSource::Factory"),
        }
    }
}

impl<B: Backend + 'static> From<B> for BackendSource {
    fn from(backend: B) -> Self {
        BackendSource::Ready(Arc::new(backend))
    }
}

impl From<Arc<dyn Backend>> for BackendSource {
    fn from(backend: Arc<dyn Backend>) -> Self {
        BackendSource::Ready(backend)
    }
}

impl From<BackendFactory> for BackendSource {
    fn from(factory: BackendFactory) -> Self {
        BackendSource::Factory(factory)
    }
}

/// [`Backend::edit_lines`] for backends without a streamed one: the file
/// downloaded, edited in memory (`line_edit::apply_bytes`) and uploaded back.
pub(crate) async fn edit_downloaded<B: Backend + ?Sized>(
    backend: &B,
    vpath: &str,
    edit: &LineEdit,
) -> FsResult<()> {
    let found = backend.download_files(vec![vpath.to_string()]).await.pop();
    let v = || vpath.to_string();
    let bytes = match found {
        Some(FileDownloadResponse {
            content: Some(bytes),
            ..
        }) => bytes,
        Some(FileDownloadResponse {
            error: Some(code), ..
        }) => {
            return Err(match code {
                FileOpError::IsDirectory => FsError::IsDirectoryUseLs(v()),
                FileOpError::PermissionDenied => FsError::PermissionDenied(v()),
                FileOpError::InvalidPath => FsError::InvalidPath(v()),
                FileOpError::FileNotFound | FileOpError::AlreadyExists => {
                    FsError::FileNotFound(v())
                }
            })
        }
        _ => return Err(FsError::FileNotFound(v())),
    };
    let edited = super::line_edit::apply_bytes(edit, vpath, &bytes)?;
    let written = backend.upload_files(vec![(v(), edited)]).await;
    match written.into_iter().next().and_then(|r| r.error) {
        None => Ok(()),
        Some(FileOpError::PermissionDenied) => Err(FsError::PermissionDenied(v())),
        Some(code) => Err(FsError::Io {
            path: v(),
            reason: format!("cannot write it back: {code}"),
        }),
    }
}

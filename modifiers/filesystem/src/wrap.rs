//! [`Wrap`]: a backend around another backend, stating only the calls it
//! changes (the trait's docs give the rule for wrappers), and the one
//! `impl<W: Wrap> Backend for W` that forwards the rest.

use async_trait::async_trait;

use crate::backend::{
    Backend, ExecuteResponse, FileDownloadResponse, FileMatches, FileUploadResponse, Fingerprint,
    GrepQuery, LsEntry, ReadPage, Recorded,
};
use crate::error::FsResult;
use crate::glob::GlobPattern;
use crate::limits::FileLimits;
use crate::line_edit::LineEdit;

/// A backend around another one. Each method is the [`Backend`] method of
/// the same name and by default forwards the call to
/// [`inner`](Wrap::inner); implementing `Wrap` makes the type a
/// [`Backend`].
///
/// A wrapper (the file limits, the shell's `execute`, an editor's reads
/// and writes) states only the calls it changes; every other call goes to
/// its inner backend, including a method added to [`Backend`] later. Never
/// forward by hand instead: a method left out falls to [`Backend`]'s own
/// default, which goes around the inner backend's version (a read that
/// skips the inner backend's size check). The crate's
/// `impl<W: Wrap> Backend for W` states every method under
/// `#[deny(clippy::missing_trait_methods)]`, so a new [`Backend`] method
/// it does not route is an error, and routing it needs its `Wrap` method.
///
/// A wrapper with a rule for *every* call (the path-rule guard checks each
/// one; a composite routes each by its path) implements [`Backend`] itself
/// under the same lint instead, so a call it forgets is an error rather
/// than a default that passes it by.
///
/// In a wrapper's own methods both traits apply to `self`: call its own
/// version as `Wrap::method(self, ...)`.
///
/// ```
/// use std::sync::Arc;
/// use lc_agent_filesystem::{Backend, FsError, StateBackend, Wrap};
///
/// /// A backend whose files cannot be deleted.
/// struct NoDelete(Arc<dyn Backend>);
///
/// #[async_trait::async_trait]
/// impl Wrap for NoDelete {
///     fn inner(&self) -> &dyn Backend {
///         self.0.as_ref()
///     }
///
///     async fn delete(&self, file: &str) -> Result<(), FsError> {
///         Err(FsError::Refused(format!("Cannot delete {file}: nothing is deleted here")))
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let files = Arc::new(StateBackend::new(lc_agent::RunnableNetwork::new()));
/// let backend: Arc<dyn Backend> = Arc::new(NoDelete(files));
/// backend.write("/a.txt", "kept", false).await.unwrap();
/// assert!(backend.delete("/a.txt").await.is_err());
/// assert_eq!(backend.read("/a.txt", 0, 10).await.unwrap().lines[0].text, "kept");
/// # });
/// ```
#[async_trait]
pub trait Wrap: Send + Sync {
    /// The backend that every call this wrapper does not state goes to.
    fn inner(&self) -> &dyn Backend;

    /// [`Backend::ls`].
    async fn ls(&self, dir: &str, recursive: bool) -> FsResult<Vec<LsEntry>> {
        self.inner().ls(dir, recursive).await
    }

    /// [`Backend::read`].
    async fn read(&self, path: &str, offset: usize, limit: usize) -> FsResult<ReadPage> {
        self.inner().read(path, offset, limit).await
    }

    /// [`Backend::write`].
    async fn write(&self, path: &str, content: &str, overwrite: bool) -> FsResult<()> {
        self.inner().write(path, content, overwrite).await
    }

    /// [`Backend::edit`].
    async fn edit(&self, path: &str, old: &str, new: &str, replace_all: bool) -> FsResult<usize> {
        self.inner().edit(path, old, new, replace_all).await
    }

    /// [`Backend::glob`].
    async fn glob(&self, pattern: &GlobPattern, dir: &str) -> FsResult<Vec<String>> {
        self.inner().glob(pattern, dir).await
    }

    /// [`Backend::grep`].
    async fn grep(&self, query: &GrepQuery, path: &str) -> FsResult<Vec<FileMatches>> {
        self.inner().grep(query, path).await
    }

    /// [`Backend::upload_files`].
    async fn upload_files(&self, files: Vec<(String, Vec<u8>)>) -> Vec<FileUploadResponse> {
        self.inner().upload_files(files).await
    }

    /// [`Backend::download_files`].
    async fn download_files(&self, paths: Vec<String>) -> Vec<FileDownloadResponse> {
        self.inner().download_files(paths).await
    }

    /// [`Backend::delete`].
    async fn delete(&self, path: &str) -> FsResult<()> {
        self.inner().delete(path).await
    }

    /// [`Backend::edit_capped`].
    async fn edit_capped(
        &self,
        path: &str,
        edit: (&str, &str, bool),
        max_bytes: Option<u64>,
    ) -> FsResult<usize> {
        self.inner().edit_capped(path, edit, max_bytes).await
    }

    /// [`Backend::edit_lines`].
    async fn edit_lines(&self, path: &str, edit: &LineEdit) -> FsResult<()> {
        self.inner().edit_lines(path, edit).await
    }

    /// [`Backend::delete_tree`].
    async fn delete_tree(&self, dir: &str) -> FsResult<()> {
        self.inner().delete_tree(dir).await
    }

    /// [`Backend::append`].
    async fn append(&self, path: &str, text: &str) -> FsResult<()> {
        self.inner().append(path, text).await
    }

    /// [`Backend::fingerprint`].
    async fn fingerprint(&self, path: &str, keep: usize) -> Option<Fingerprint> {
        self.inner().fingerprint(path, keep).await
    }

    /// [`Backend::write_recorded`].
    async fn write_recorded(
        &self,
        path: &str,
        content: &str,
        overwrite: bool,
        keep: usize,
    ) -> FsResult<Recorded<()>> {
        self.inner()
            .write_recorded(path, content, overwrite, keep)
            .await
    }

    /// [`Backend::edit_recorded`].
    async fn edit_recorded(
        &self,
        path: &str,
        edit: (&str, &str, bool),
        keep: usize,
        max_bytes: Option<u64>,
    ) -> FsResult<Recorded<usize>> {
        self.inner()
            .edit_recorded(path, edit, keep, max_bytes)
            .await
    }

    /// [`Backend::real_paths`].
    async fn real_paths(&self, paths: &[String]) -> Vec<Option<String>> {
        self.inner().real_paths(paths).await
    }

    /// [`Backend::limits`].
    fn limits(&self) -> FileLimits {
        self.inner().limits()
    }

    /// [`Backend::read_bytes`].
    async fn read_bytes(&self, path: &str, max: u64) -> FsResult<Vec<u8>> {
        self.inner().read_bytes(path, max).await
    }

    /// [`Backend::supports_execute`].
    fn supports_execute(&self) -> bool {
        self.inner().supports_execute()
    }

    /// [`Backend::execute`].
    async fn execute(&self, command: &str, timeout_secs: u64) -> FsResult<ExecuteResponse> {
        self.inner().execute(command, timeout_secs).await
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<W: Wrap> Backend for W {
    async fn ls(&self, dir: &str, recursive: bool) -> FsResult<Vec<LsEntry>> {
        Wrap::ls(self, dir, recursive).await
    }

    async fn read(&self, path: &str, offset: usize, limit: usize) -> FsResult<ReadPage> {
        Wrap::read(self, path, offset, limit).await
    }

    async fn write(&self, path: &str, content: &str, overwrite: bool) -> FsResult<()> {
        Wrap::write(self, path, content, overwrite).await
    }

    async fn edit(&self, path: &str, old: &str, new: &str, replace_all: bool) -> FsResult<usize> {
        Wrap::edit(self, path, old, new, replace_all).await
    }

    async fn glob(&self, pattern: &GlobPattern, dir: &str) -> FsResult<Vec<String>> {
        Wrap::glob(self, pattern, dir).await
    }

    async fn grep(&self, query: &GrepQuery, path: &str) -> FsResult<Vec<FileMatches>> {
        Wrap::grep(self, query, path).await
    }

    async fn upload_files(&self, files: Vec<(String, Vec<u8>)>) -> Vec<FileUploadResponse> {
        Wrap::upload_files(self, files).await
    }

    async fn download_files(&self, paths: Vec<String>) -> Vec<FileDownloadResponse> {
        Wrap::download_files(self, paths).await
    }

    async fn delete(&self, path: &str) -> FsResult<()> {
        Wrap::delete(self, path).await
    }

    async fn edit_capped(
        &self,
        path: &str,
        edit: (&str, &str, bool),
        max_bytes: Option<u64>,
    ) -> FsResult<usize> {
        Wrap::edit_capped(self, path, edit, max_bytes).await
    }

    async fn edit_lines(&self, path: &str, edit: &LineEdit) -> FsResult<()> {
        Wrap::edit_lines(self, path, edit).await
    }

    async fn delete_tree(&self, dir: &str) -> FsResult<()> {
        Wrap::delete_tree(self, dir).await
    }

    async fn append(&self, path: &str, text: &str) -> FsResult<()> {
        Wrap::append(self, path, text).await
    }

    async fn fingerprint(&self, path: &str, keep: usize) -> Option<Fingerprint> {
        Wrap::fingerprint(self, path, keep).await
    }

    async fn write_recorded(
        &self,
        path: &str,
        content: &str,
        overwrite: bool,
        keep: usize,
    ) -> FsResult<Recorded<()>> {
        Wrap::write_recorded(self, path, content, overwrite, keep).await
    }

    async fn edit_recorded(
        &self,
        path: &str,
        edit: (&str, &str, bool),
        keep: usize,
        max_bytes: Option<u64>,
    ) -> FsResult<Recorded<usize>> {
        Wrap::edit_recorded(self, path, edit, keep, max_bytes).await
    }

    async fn real_paths(&self, paths: &[String]) -> Vec<Option<String>> {
        Wrap::real_paths(self, paths).await
    }

    fn limits(&self) -> FileLimits {
        Wrap::limits(self)
    }

    async fn read_bytes(&self, path: &str, max: u64) -> FsResult<Vec<u8>> {
        Wrap::read_bytes(self, path, max).await
    }

    fn supports_execute(&self) -> bool {
        Wrap::supports_execute(self)
    }

    async fn execute(&self, command: &str, timeout_secs: u64) -> FsResult<ExecuteResponse> {
        Wrap::execute(self, command, timeout_secs).await
    }
}

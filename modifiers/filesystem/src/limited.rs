//! [`FileLimits::apply`]: a backend that says its [`FileLimits`] (the
//! file tools ask [`Backend::limits`]); every other call is its inner
//! backend's. Apart from `limits.rs`, which the backend trait itself
//! names.

use std::sync::Arc;

use async_trait::async_trait;

use crate::backend::{
    Backend, BackendFactory, BackendSource, ExecuteResponse, FileDownloadResponse, FileMatches,
    FileUploadResponse, Fingerprint, GrepQuery, LsEntry, ReadPage, Recorded,
};
use crate::error::FsResult;
use crate::glob::GlobPattern;
use crate::limits::FileLimits;
use crate::line_edit::LineEdit;

impl FileLimits {
    /// `backend` with these limits (a factory stays a factory): every call
    /// goes through unchanged, and [`Backend::limits`] says these, so the
    /// file tools keep to them.
    pub fn apply(self, backend: impl Into<BackendSource>) -> BackendSource {
        match backend.into() {
            BackendSource::Ready(inner) => BackendSource::Ready(Arc::new(Limited {
                limits: self,
                inner,
            })),
            BackendSource::Factory(factory) => {
                BackendSource::Factory(BackendFactory::new(move |net| {
                    Arc::new(Limited {
                        limits: self,
                        inner: factory.build(net),
                    })
                }))
            }
        }
    }
}

/// A backend that says its [`FileLimits`]; everything else is its inner
/// backend's.
struct Limited {
    limits: FileLimits,
    inner: Arc<dyn Backend>,
}

#[async_trait]
impl Backend for Limited {
    async fn ls(&self, dir: &str, recursive: bool) -> FsResult<Vec<LsEntry>> {
        self.inner.ls(dir, recursive).await
    }

    async fn read(&self, file: &str, offset: usize, limit: usize) -> FsResult<ReadPage> {
        self.inner.read(file, offset, limit).await
    }

    async fn read_bytes(&self, file: &str, max: u64) -> FsResult<Vec<u8>> {
        self.inner.read_bytes(file, max).await
    }

    async fn write(&self, file: &str, content: &str, overwrite: bool) -> FsResult<()> {
        self.inner.write(file, content, overwrite).await
    }

    async fn edit(&self, file: &str, old: &str, new: &str, replace_all: bool) -> FsResult<usize> {
        self.inner.edit(file, old, new, replace_all).await
    }

    async fn edit_capped(
        &self,
        file: &str,
        edit: (&str, &str, bool),
        max_bytes: Option<u64>,
    ) -> FsResult<usize> {
        self.inner.edit_capped(file, edit, max_bytes).await
    }

    async fn edit_lines(&self, file: &str, edit: &LineEdit) -> FsResult<()> {
        self.inner.edit_lines(file, edit).await
    }

    async fn glob(&self, pattern: &GlobPattern, dir: &str) -> FsResult<Vec<String>> {
        self.inner.glob(pattern, dir).await
    }

    async fn grep(&self, query: &GrepQuery, target: &str) -> FsResult<Vec<FileMatches>> {
        self.inner.grep(query, target).await
    }

    async fn upload_files(&self, files: Vec<(String, Vec<u8>)>) -> Vec<FileUploadResponse> {
        self.inner.upload_files(files).await
    }

    async fn download_files(&self, paths: Vec<String>) -> Vec<FileDownloadResponse> {
        self.inner.download_files(paths).await
    }

    async fn delete(&self, file: &str) -> FsResult<()> {
        self.inner.delete(file).await
    }

    async fn delete_tree(&self, dir: &str) -> FsResult<()> {
        self.inner.delete_tree(dir).await
    }

    async fn append(&self, file: &str, text: &str) -> FsResult<()> {
        self.inner.append(file, text).await
    }

    async fn fingerprint(&self, file: &str, keep: usize) -> Option<Fingerprint> {
        self.inner.fingerprint(file, keep).await
    }

    async fn write_recorded(
        &self,
        file: &str,
        content: &str,
        overwrite: bool,
        keep: usize,
    ) -> FsResult<Recorded<()>> {
        self.inner
            .write_recorded(file, content, overwrite, keep)
            .await
    }

    async fn edit_recorded(
        &self,
        file: &str,
        edit: (&str, &str, bool),
        keep: usize,
        max_bytes: Option<u64>,
    ) -> FsResult<Recorded<usize>> {
        self.inner.edit_recorded(file, edit, keep, max_bytes).await
    }

    async fn real_paths(&self, paths: &[String]) -> Vec<Option<String>> {
        self.inner.real_paths(paths).await
    }

    fn limits(&self) -> FileLimits {
        self.limits
    }

    fn supports_execute(&self) -> bool {
        self.inner.supports_execute()
    }

    async fn execute(&self, command: &str, timeout_secs: u64) -> FsResult<ExecuteResponse> {
        self.inner.execute(command, timeout_secs).await
    }
}

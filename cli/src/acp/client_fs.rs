//! The file backend of an editor's session: `read` and `write` (and so
//! `edit`) go to the editor (`fs/read_text_file`, `fs/write_text_file`),
//! which answers from its buffers — unsaved changes included — and shows
//! the writes; everything else (listing, search, delete, commands, the
//! bytes that snapshots and rewinds read) is the workspace's own backend.
//!
//! Confined as the workspace is: a path is normalized by the same rules
//! (`..` refused), must stay under the root once the links along it are
//! followed, and the path rules of the session wrap this backend as they
//! wrap any other. Only what the editor said it can do goes to it
//! (`clientCapabilities.fs`); the rest stays on disk.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::v1::schema::{ReadTextFileRequest, SessionId, WriteTextFileRequest};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use async_trait::async_trait;
use lc_agent_filesystem::{edit_text, page_text, path, Backend, FsError, ReadPage, Recorded, Wrap};

type FsResult<T> = Result<T, FsError>;

/// What the editor offers (its `clientCapabilities.fs`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EditorFiles {
    /// `fs/read_text_file`.
    pub(crate) read: bool,
    /// `fs/write_text_file`.
    pub(crate) write: bool,
}

impl EditorFiles {
    /// Whether the editor offers anything.
    pub(crate) fn any(self) -> bool {
        self.read || self.write
    }
}

/// A workspace's backend with reads and writes through the editor (see
/// the [module docs](self)).
pub(crate) struct ClientFs {
    cx: ConnectionTo<Client>,
    session: SessionId,
    offers: EditorFiles,
    /// The workspace root, links resolved.
    root: PathBuf,
    /// The workspace's own backend.
    inner: Arc<dyn Backend>,
}

impl ClientFs {
    /// Reads and writes of `inner` (rooted at `root`) sent to the editor
    /// as far as `offers` goes, for its session `session`.
    pub(crate) fn new(
        cx: ConnectionTo<Client>,
        session: SessionId,
        offers: EditorFiles,
        root: &Path,
        inner: Arc<dyn Backend>,
    ) -> Self {
        Self {
            cx,
            session,
            offers,
            root: std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf()),
            inner,
        }
    }

    /// The absolute path of the virtual `file`, checked to stay under the
    /// root (its deepest existing ancestor, links followed, is inside).
    fn absolute(&self, file: &str) -> FsResult<PathBuf> {
        let file = path::normalize(file)?;
        let absolute = self.root.join(file.trim_start_matches('/'));
        let mut existing = absolute.as_path();
        while !existing.exists() {
            match existing.parent() {
                Some(parent) => existing = parent,
                None => break,
            }
        }
        let real = std::fs::canonicalize(existing).map_err(|e| FsError::Io {
            path: file.clone(),
            reason: e.to_string(),
        })?;
        if !real.starts_with(&self.root) {
            return Err(FsError::Escapes(file));
        }
        Ok(absolute)
    }

    /// The editor's text of `file` (its buffer, or the file on disk).
    async fn fetch(&self, file: &str, absolute: PathBuf) -> FsResult<String> {
        let request = ReadTextFileRequest::new(self.session.clone(), absolute);
        self.cx
            .send_request(request)
            .block_task()
            .await
            .map(|r| r.content)
            .map_err(|e| editor_error(file, "read", &e))
    }

    /// Hands `content` of `file` to the editor.
    async fn store(&self, file: &str, absolute: PathBuf, content: &str) -> FsResult<()> {
        if let Some(parent) = absolute.parent() {
            std::fs::create_dir_all(parent).map_err(|e| FsError::Io {
                path: file.to_string(),
                reason: e.to_string(),
            })?;
        }
        let request = WriteTextFileRequest::new(self.session.clone(), absolute, content);
        self.cx
            .send_request(request)
            .block_task()
            .await
            .map(|_| ())
            .map_err(|e| editor_error(file, "write", &e))
    }
}

/// An editor's error answer as the model reads it.
fn editor_error(file: &str, what: &str, error: &agent_client_protocol::Error) -> FsError {
    FsError::Io {
        path: file.to_string(),
        reason: format!("the editor could not {what} it: {}", error.message),
    }
}

/// `read`, `write` and the edits go to the editor where it offers them
/// (recorded for rewinds like any change); every other call is the
/// workspace's own backend's.
#[async_trait]
impl Wrap for ClientFs {
    fn inner(&self) -> &dyn Backend {
        self.inner.as_ref()
    }

    async fn read(&self, file: &str, offset: usize, limit: usize) -> FsResult<ReadPage> {
        let absolute = self.absolute(file)?;
        // A missing file or a directory: the workspace's own answer (the
        // same message and suggestions as without an editor).
        if !self.offers.read || !absolute.is_file() {
            return self.inner.read(file, offset, limit).await;
        }
        let text = self.fetch(file, absolute).await?;
        page_text(file, &text, offset, limit)
    }

    async fn write(&self, file: &str, content: &str, overwrite: bool) -> FsResult<()> {
        let absolute = self.absolute(file)?;
        // A file that may not be replaced, or no editor writes: the
        // workspace's own checks and errors.
        if !self.offers.write || absolute.is_dir() || (absolute.exists() && !overwrite) {
            return self.inner.write(file, content, overwrite).await;
        }
        self.store(file, absolute, content).await
    }

    async fn edit(&self, file: &str, old: &str, new: &str, replace_all: bool) -> FsResult<usize> {
        Wrap::edit_capped(self, file, (old, new, replace_all), None).await
    }

    async fn edit_capped(
        &self,
        file: &str,
        edit: (&str, &str, bool),
        max_bytes: Option<u64>,
    ) -> FsResult<usize> {
        let (old, new, replace_all) = edit;
        let absolute = self.absolute(file)?;
        if !(self.offers.read && self.offers.write && absolute.is_file()) {
            return self.inner.edit_capped(file, edit, max_bytes).await;
        }
        let text = self.fetch(file, absolute.clone()).await?;
        let (changed, count) = edit_text(file, &text, old, new, replace_all)?;
        let size = changed.len() as u64;
        if let Some(limit) = max_bytes.filter(|limit| size > *limit) {
            return Err(FsError::EditTooLarge {
                path: file.to_string(),
                size,
                limit,
            });
        }
        self.store(file, absolute, &changed).await?;
        Ok(count)
    }

    async fn write_recorded(
        &self,
        file: &str,
        content: &str,
        overwrite: bool,
        keep: usize,
    ) -> FsResult<Recorded<()>> {
        let write = Wrap::write(self, file, content, overwrite);
        Recorded::around(self, file, keep, write).await
    }

    async fn edit_recorded(
        &self,
        file: &str,
        edit: (&str, &str, bool),
        keep: usize,
        max_bytes: Option<u64>,
    ) -> FsResult<Recorded<usize>> {
        let change = Wrap::edit_capped(self, file, edit, max_bytes);
        Recorded::around(self, file, keep, change).await
    }
}

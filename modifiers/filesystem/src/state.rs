//! [`StateBackend`]: files live in the network's own `files` and save with it.

use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::RunnableNetwork;

use super::backend::{
    Backend, BackendFactory, FileDownloadResponse, FileMatches, FileUploadResponse, GrepQuery,
    LsEntry, ReadPage,
};
use super::error::{FsError, FsResult};
use super::glob::GlobPattern;
use super::{map_backend, path};

/// Files in [`RunnableNetwork::files`]: the default backend. They are saved
/// with the network (`"files"` in the saved JSON) and load back with it.
///
/// ```
/// use lc_agent::RunnableNetwork;
/// use lc_agent_filesystem::{Backend, StateBackend};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let net = RunnableNetwork::new();
/// let backend = StateBackend::new(net.clone());
/// backend.write("/notes.md", "hello\n", false).await.unwrap();
/// assert_eq!(net.files()["/notes.md"].content, ["hello", ""]);
/// # });
/// ```
#[derive(Clone)]
pub struct StateBackend {
    network: RunnableNetwork,
}

impl std::fmt::Debug for StateBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateBackend").finish_non_exhaustive()
    }
}

impl StateBackend {
    /// A backend over this network's files.
    pub fn new(network: RunnableNetwork) -> Self {
        Self { network }
    }

    /// A factory building a `StateBackend` over the session's files: the
    /// running network's, or, for a sub-network running inside another
    /// (a sub-agent's task, a supervisor's route), the outermost network's.
    /// A sub-agent thus reads the files of the session it works for, and
    /// its changes are the session's as soon as it makes them.
    pub fn factory() -> BackendFactory {
        BackendFactory::new(|network| Arc::new(StateBackend::new(network.session())))
    }
}

#[async_trait]
impl Backend for StateBackend {
    async fn ls(&self, dir: &str, recursive: bool) -> FsResult<Vec<LsEntry>> {
        self.network
            .with_files(|files| map_backend::ls(files, dir, recursive))
    }

    async fn read(&self, file: &str, offset: usize, limit: usize) -> FsResult<ReadPage> {
        self.network.with_files(|files| match files.get(file) {
            Some(data) => map_backend::read_text(file, &data.text(), offset, limit),
            None => Err(map_backend::not_a_file(files, file)),
        })
    }

    async fn write(&self, file: &str, content: &str, overwrite: bool) -> FsResult<()> {
        self.network.with_files_mut(|files| {
            map_backend::check_write(files, file, overwrite)?;
            map_backend::put(files, file, content);
            Ok(())
        })
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
        self.network.with_files_mut(|files| {
            let Some(data) = files.get_mut(file) else {
                return Err(map_backend::not_a_file(files, file));
            };
            let (text, n) =
                crate::edit::edit_text(file, &data.text(), (old, new, replace_all), max_bytes)?;
            data.set_text(&text);
            Ok(n)
        })
    }

    async fn glob(&self, pattern: &GlobPattern, dir: &str) -> FsResult<Vec<String>> {
        self.network.with_files(|files| {
            let rules = map_backend::ignore_rules(files, |d| d.text().into());
            map_backend::glob(files, &rules, pattern, dir)
        })
    }

    async fn grep(&self, query: &GrepQuery, target: &str) -> FsResult<Vec<FileMatches>> {
        self.network
            .with_files(|files| map_backend::grep_files(files, query, target))
    }

    async fn upload_files(&self, uploads: Vec<(String, Vec<u8>)>) -> Vec<FileUploadResponse> {
        let mut out = Vec::with_capacity(uploads.len());
        for (given, bytes) in uploads {
            let result = match path::normalize(&given) {
                Ok(file) => map_backend::uploaded_text(&file, bytes).and_then(|text| {
                    self.network.with_files_mut(|files| {
                        map_backend::check_write(files, &file, true)?;
                        map_backend::put(files, &file, &text);
                        Ok(())
                    })
                }),
                Err(e) => Err(e),
            };
            out.push(FileUploadResponse {
                path: given,
                error: result.err().map(|e: FsError| e.code()),
            });
        }
        out
    }

    async fn download_files(&self, paths: Vec<String>) -> Vec<FileDownloadResponse> {
        paths
            .into_iter()
            .map(|given| {
                let result = path::normalize(&given).and_then(|file| {
                    self.network.with_files(|files| match files.get(&file) {
                        Some(data) => Ok(data.text().into_bytes()),
                        None => Err(map_backend::not_a_file(files, &file)),
                    })
                });
                FileDownloadResponse::from_result(given, result)
            })
            .collect()
    }

    async fn append(&self, file: &str, text: &str) -> FsResult<()> {
        self.network.with_files_mut(|files| {
            let Some(data) = files.get_mut(file) else {
                map_backend::check_write(files, file, false)?;
                map_backend::put(files, file, text);
                return Ok(());
            };
            // The content is the text split on `\n`: the first piece of
            // `text` continues the last line, the others are new lines.
            let mut pieces = text.split('\n');
            if let Some(first) = pieces.next() {
                match data.content.last_mut() {
                    Some(last) => last.push_str(first),
                    None => data.content.push(first.to_string()),
                }
            }
            data.content.extend(pieces.map(str::to_string));
            data.modified_at = lc_agent::now_rfc3339();
            Ok(())
        })
    }

    async fn delete_tree(&self, dir: &str) -> FsResult<()> {
        crate::backend::refuse_root(dir)?;
        self.network.with_files_mut(|files| {
            if files.remove(dir).is_some() {
                return Ok(());
            }
            let before = files.len();
            files.retain(|k, _| path::relative_to(k, dir).is_none());
            if files.len() == before {
                Err(FsError::PathNotFound(dir.to_string()))
            } else {
                Ok(())
            }
        })
    }

    async fn delete(&self, file: &str) -> FsResult<()> {
        self.network
            .with_files_mut(|files| match files.remove(file) {
                Some(_) => Ok(()),
                None => Err(map_backend::not_a_file(files, file)),
            })
    }
}

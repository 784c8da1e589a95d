//! The backend wrapper that checks [`Permissions`] on every call: targets
//! are refused with an error naming the rule, listings leave out what the
//! operation may not see.

use std::sync::Arc;

use async_trait::async_trait;

use super::{Operation, Permissions, RuleMode, Verdict};
use crate::backend::{
    Backend, BackendFactory, BackendSource, ExecuteResponse, FileDownloadResponse, FileMatches,
    FileUploadResponse, Fingerprint, GrepQuery, LsEntry, ReadPage, Recorded,
};
use crate::error::{shown, FileOpError, FsError, FsResult};
use crate::glob::GlobPattern;
use crate::line_edit::LineEdit;
use crate::path;
use crate::sandbox::denied::{with_denials, Denial};

/// `backend` behind the rules (a factory stays a factory).
pub(super) fn wrap(
    rules: Permissions,
    backend: BackendSource,
    approved_upstream: bool,
) -> BackendSource {
    match backend {
        BackendSource::Ready(inner) => BackendSource::Ready(Arc::new(Guarded {
            rules,
            inner,
            approved_upstream,
        })),
        BackendSource::Factory(factory) => {
            BackendSource::Factory(BackendFactory::new(move |net| {
                Arc::new(Guarded {
                    rules: rules.clone(),
                    inner: factory.build(net),
                    approved_upstream,
                })
            }))
        }
    }
}

struct Guarded {
    rules: Permissions,
    inner: Arc<dyn Backend>,
    approved_upstream: bool,
}

/// How an operation reads in an error: `cannot <verb> <path>`.
fn verb(op: Operation) -> &'static str {
    match op {
        Operation::Read => "read",
        Operation::Write => "write",
        Operation::Edit => "edit",
        Operation::Delete => "delete",
        Operation::Execute => "run commands in",
        Operation::Ls => "list",
        Operation::Glob => "glob in",
        Operation::Grep => "search",
    }
}

/// Whether the call's target was an approved `ask` (its listing may then
/// show entries under the same kind of rule).
type Asked = bool;

impl Guarded {
    /// Checks the call's target for each of `ops`.
    async fn target(&self, ops: &[Operation], target: &str) -> FsResult<Asked> {
        let mut asked = false;
        for &op in ops {
            match self
                .rules
                .check_through(self.inner.as_ref(), op, target)
                .await
            {
                Verdict::Allow => {}
                Verdict::Deny(rule) => {
                    return Err(FsError::Refused(format!(
                        "Permission denied by {rule}: cannot {} {}",
                        verb(op),
                        shown(target)
                    )))
                }
                Verdict::Ask(_) if self.approved_upstream => asked = true,
                Verdict::Ask(rule) => {
                    return Err(FsError::Refused(format!(
                        "Approval needed: {rule} asks a person before anyone may {} {}, \
                         and nobody can approve here. Run it in an agent session (chat or \
                         run), where the call waits for approval, or change the rule",
                        verb(op),
                        shown(target)
                    )))
                }
            }
        }
        Ok(asked)
    }

    /// Which of `paths` the listing may show for `ops`.
    async fn visible(&self, ops: &[Operation], paths: &[String], asked: Asked) -> Vec<bool> {
        let shows = |v: &Verdict| match v {
            Verdict::Allow => true,
            Verdict::Ask(_) => asked,
            Verdict::Deny(_) => false,
        };
        let mut keep: Vec<bool> = paths
            .iter()
            .map(|p| ops.iter().all(|&op| shows(&self.rules.check(op, p))))
            .collect();
        let real = self.inner.real_paths(paths).await;
        for (i, real) in real.into_iter().enumerate() {
            if let (Some(real), true) = (real, keep[i]) {
                keep[i] = ops.iter().all(|&op| shows(&self.rules.check(op, &real)));
            }
        }
        keep
    }
}

fn filter<T>(items: Vec<T>, keep: &[bool]) -> Vec<T> {
    items
        .into_iter()
        .zip(keep)
        .filter_map(|(item, &k)| k.then_some(item))
        .collect()
}

/// Every call has its rule, so every method is stated here (see
/// [`Wrap`](crate::Wrap) for why a forgotten one is an error).
#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl Backend for Guarded {
    async fn ls(&self, dir: &str, recursive: bool) -> FsResult<Vec<LsEntry>> {
        let asked = self.target(&[Operation::Ls], dir).await?;
        let entries = self.inner.ls(dir, recursive).await?;
        let paths: Vec<String> = entries.iter().map(|e| e.path.clone()).collect();
        let keep = self.visible(&[Operation::Ls], &paths, asked).await;
        Ok(filter(entries, &keep))
    }

    async fn read(&self, file: &str, offset: usize, limit: usize) -> FsResult<ReadPage> {
        self.target(&[Operation::Read], file).await?;
        self.inner.read(file, offset, limit).await
    }

    async fn read_bytes(&self, file: &str, max: u64) -> FsResult<Vec<u8>> {
        self.target(&[Operation::Read], file).await?;
        self.inner.read_bytes(file, max).await
    }

    async fn write(&self, file: &str, content: &str, overwrite: bool) -> FsResult<()> {
        self.target(&[Operation::Write], file).await?;
        self.inner.write(file, content, overwrite).await
    }

    async fn edit(&self, file: &str, old: &str, new: &str, replace_all: bool) -> FsResult<usize> {
        self.target(&[Operation::Edit], file).await?;
        self.inner.edit(file, old, new, replace_all).await
    }

    async fn edit_capped(
        &self,
        file: &str,
        edit: (&str, &str, bool),
        max_bytes: Option<u64>,
    ) -> FsResult<usize> {
        self.target(&[Operation::Edit], file).await?;
        self.inner.edit_capped(file, edit, max_bytes).await
    }

    async fn edit_lines(&self, file: &str, edit: &LineEdit) -> FsResult<()> {
        self.target(&[Operation::Edit], file).await?;
        self.inner.edit_lines(file, edit).await
    }

    async fn glob(&self, pattern: &GlobPattern, dir: &str) -> FsResult<Vec<String>> {
        let asked = self.target(&[Operation::Glob], dir).await?;
        let found = self.inner.glob(pattern, dir).await?;
        let keep = self.visible(&[Operation::Glob], &found, asked).await;
        Ok(filter(found, &keep))
    }

    async fn grep(&self, query: &GrepQuery, target: &str) -> FsResult<Vec<FileMatches>> {
        const OPS: [Operation; 2] = [Operation::Grep, Operation::Read];
        let asked = self.target(&OPS, target).await?;
        let found = self.inner.grep(query, target).await?;
        let paths: Vec<String> = found.iter().map(|m| m.path.clone()).collect();
        let keep = self.visible(&OPS, &paths, asked).await;
        Ok(filter(found, &keep))
    }

    async fn upload_files(&self, files: Vec<(String, Vec<u8>)>) -> Vec<FileUploadResponse> {
        let mut refused = Vec::new();
        let mut allowed = Vec::new();
        for (i, (given, bytes)) in files.into_iter().enumerate() {
            match path::normalize(&given) {
                Ok(p) if self.target(&[Operation::Write], &p).await.is_err() => refused.push((
                    i,
                    FileUploadResponse {
                        path: given,
                        error: Some(FileOpError::PermissionDenied),
                    },
                )),
                _ => allowed.push((i, (given, bytes))),
            }
        }
        let (order, batch): (Vec<usize>, Vec<_>) = allowed.into_iter().unzip();
        let done = self.inner.upload_files(batch).await;
        merge(refused, order.into_iter().zip(done).collect())
    }

    async fn download_files(&self, paths: Vec<String>) -> Vec<FileDownloadResponse> {
        let mut refused = Vec::new();
        let mut allowed = Vec::new();
        for (i, given) in paths.into_iter().enumerate() {
            match path::normalize(&given) {
                Ok(p) if self.target(&[Operation::Read], &p).await.is_err() => refused.push((
                    i,
                    FileDownloadResponse {
                        path: given,
                        content: None,
                        error: Some(FileOpError::PermissionDenied),
                    },
                )),
                _ => allowed.push((i, given)),
            }
        }
        let (order, batch): (Vec<usize>, Vec<_>) = allowed.into_iter().unzip();
        let done = self.inner.download_files(batch).await;
        merge(refused, order.into_iter().zip(done).collect())
    }

    async fn delete(&self, file: &str) -> FsResult<()> {
        self.target(&[Operation::Delete], file).await?;
        self.inner.delete(file).await
    }

    async fn delete_tree(&self, dir: &str) -> FsResult<()> {
        self.target(&[Operation::Delete], dir).await?;
        // A rule on anything inside holds for the whole folder.
        if let Ok(entries) = self.inner.ls(dir, true).await {
            for entry in entries {
                self.target(&[Operation::Delete], entry.path.trim_end_matches('/'))
                    .await?;
            }
        }
        self.inner.delete_tree(dir).await
    }

    async fn append(&self, file: &str, text: &str) -> FsResult<()> {
        self.target(&[Operation::Write], file).await?;
        self.inner.append(file, text).await
    }

    async fn fingerprint(&self, file: &str, keep: usize) -> Option<Fingerprint> {
        self.target(&[Operation::Read], file).await.ok()?;
        self.inner.fingerprint(file, keep).await
    }

    async fn write_recorded(
        &self,
        file: &str,
        content: &str,
        overwrite: bool,
        keep: usize,
    ) -> FsResult<Recorded<()>> {
        self.target(&[Operation::Write], file).await?;
        // A file that may not be read is changed without a record.
        if self.target(&[Operation::Read], file).await.is_err() {
            self.inner.write(file, content, overwrite).await?;
            return Ok(Recorded {
                value: (),
                before: None,
                after: None,
            });
        }
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
        self.target(&[Operation::Edit], file).await?;
        if self.target(&[Operation::Read], file).await.is_err() {
            let value = self.inner.edit_capped(file, edit, max_bytes).await?;
            return Ok(Recorded {
                value,
                before: None,
                after: None,
            });
        }
        self.inner.edit_recorded(file, edit, keep, max_bytes).await
    }

    async fn real_paths(&self, paths: &[String]) -> Vec<Option<String>> {
        self.inner.real_paths(paths).await
    }

    fn limits(&self) -> crate::FileLimits {
        self.inner.limits()
    }

    fn supports_execute(&self) -> bool {
        self.inner.supports_execute()
    }

    async fn execute(&self, command: &str, timeout_secs: u64) -> FsResult<ExecuteResponse> {
        self.target(&[Operation::Execute], "/").await?;
        match self.rules.check_command(command) {
            Verdict::Allow => {}
            Verdict::Ask(_) if self.approved_upstream => {}
            Verdict::Deny(rule) => {
                return Err(FsError::Refused(format!(
                    "Permission denied by {rule}: cannot run `{}`",
                    command.trim()
                )))
            }
            Verdict::Ask(rule) => {
                return Err(FsError::Refused(format!(
                    "Approval needed: {rule} asks a person before `{}` runs, and nobody can \
                     approve here. Run it in an agent session (chat or run), where the call \
                     waits for approval, or change the rule",
                    command.trim()
                )))
            }
        }
        // Deny rules reach the shell's sandbox too (`sandbox/denied.rs`).
        let denials =
            self.rules
                .rules()
                .filter(|rule| rule.mode == RuleMode::Deny)
                .filter_map(|rule| {
                    let hide = rule.operations.contains(&Operation::Read);
                    let writes = rule.operations.iter().any(|op| {
                        matches!(op, Operation::Write | Operation::Edit | Operation::Delete)
                    });
                    (hide || writes).then(|| Denial {
                        globs: rule.paths.clone(),
                        hide,
                    })
                })
                .collect();
        with_denials(denials, self.inner.execute(command, timeout_secs)).await
    }
}

/// Two index-tagged lists back in their original order.
fn merge<T>(mut a: Vec<(usize, T)>, b: Vec<(usize, T)>) -> Vec<T> {
    a.extend(b);
    a.sort_by_key(|(i, _)| *i);
    a.into_iter().map(|(_, t)| t).collect()
}

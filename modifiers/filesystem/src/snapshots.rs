//! Files follow the conversation: what a file held before the agent's
//! `write_file` / `edit_file` changed it is kept under the session and
//! named on the tool node, so [`rewind_files`] can put the workspace back
//! as it was at any node.
//!
//! ```text
//!  write_file / edit_file on any backend (disk, shell, store, state)
//!    before = bytes of the file (or none) ─▶ the tool runs ─▶ after = bytes
//!    tool node metadata  file_changes: [{path, before, after, in_graph}]
//!    session             file contents by sha256 (before contents), beside
//!                        the graph: RunnableNetwork::keep_file_snapshot
//!    session metadata    files_known:    {path: sha256 | null}
//!                                        (what the agent last left there)
//!
//!  rewind_files(network, backend, after: node | None)
//!    the changes recorded by the nodes added after `after`, per path:
//!      the first one's `before` is the target
//!      the file now != files_known[path] ─▶ changed outside: reported, kept
//!      else the target written back (or the file removed)
//! ```
//!
//! Decisions where the design is silent:
//! - **Where.** In the session itself, beside its graph (not in its
//!   metadata), keyed by the SHA-256 of their bytes (each content once,
//!   however many turns wrote it), so they travel with the session (JSON
//!   file or Redis), a save writes only the contents that are new, and a
//!   fork takes them along. Nothing is
//!   written into the workspace. Only UTF-8 text is kept, and at most
//!   [`SNAPSHOT_CAP_BYTES`] per session; a content beyond the cap (or not
//!   text) is named by its hash and not kept: a rewind says so instead of
//!   restoring it.
//! - **What counts as the agent's.** Changes made by `write_file`,
//!   `edit_file` and `delete` through the file tools (a folder's delete is
//!   recorded file by file, the files `ls` lists in it). A command run by `execute` (an
//!   `rm`, a build) is not snapshotted: nothing tells which files it
//!   touched.
//! - **One blocking task.** `write_file` and `edit_file` ask the backend
//!   for [`Backend::write_recorded`] / [`Backend::edit_recorded`]: a disk
//!   backend reads the file before and after inside the write's own
//!   blocking task, so a snapshot costs no extra hops to the thread pool.
//! - **Changed outside.** A file whose bytes differ from what the agent
//!   (or the latest rewind) left there is reported and left alone.

use lc_agent::{
    NodeId, RunnableNetwork, SnapshotsExt, ToolContext, ToolError, ToolOutput, ToolStatus,
};
use serde_json::{json, Map, Value};

use crate::backend::Backend;
use crate::error::{FsError, FsResult};
use crate::fingerprint::{hash, Fingerprint};

/// The most bytes of file contents one session keeps for rewinds.
pub const SNAPSHOT_CAP_BYTES: usize = 16 * 1024 * 1024;

/// A tool node's metadata: the file changes it made (read by the core's
/// `fork_at` too).
const FILE_CHANGES: &str = "file_changes";
/// The session's metadata: the hash of what the agent last left at a path.
const FILES_KNOWN: &str = "files_known";

/// What [`rewind_files`] did, path by path.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct FileRewind {
    /// Files put back as they were (rewritten, or removed when they did
    /// not exist then).
    pub restored: Vec<String>,
    /// Files changed outside the agent since it last wrote them: left as
    /// they are.
    pub changed_outside: Vec<String>,
    /// Files whose earlier content was not kept (over the cap, or not
    /// text): left as they are.
    pub not_kept: Vec<String>,
    /// Files that could not be put back (`path: why`): left as they are.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
}

/// Runs a call that deletes what is at `dir` (a folder and everything in
/// it, or a file), recording on the call's tool node, file by file, what it
/// removed when it succeeds. The files are those `ls` lists below `dir`.
pub(crate) async fn recorded_tree(
    backend: &dyn Backend,
    ctx: &ToolContext,
    dir: &str,
    run: impl std::future::Future<Output = Result<ToolOutput, ToolError>>,
) -> Result<ToolOutput, ToolError> {
    let mut files: Vec<String> = match backend.ls(dir, true).await {
        Ok(entries) => entries
            .into_iter()
            .filter(|e| !e.is_dir && !e.path.ends_with('/'))
            .map(|e| e.path)
            .collect(),
        // A file (or nothing): the call says which.
        Err(_) => vec![dir.to_string()],
    };
    files.sort_unstable();
    let mut before = Vec::with_capacity(files.len());
    // What is kept of them, in all, stays within the session's cap.
    let mut budget = SNAPSHOT_CAP_BYTES;
    for file in files {
        let found = backend.fingerprint(&file, budget).await;
        let kept = found
            .as_ref()
            .and_then(|f| f.bytes.as_ref())
            .map_or(0, Vec::len);
        budget = budget.saturating_sub(kept);
        before.push((file, found));
    }
    let out = run.await?;
    if out.status == ToolStatus::Ok {
        for (file, found) in before {
            let after = backend.fingerprint(&file, 0).await;
            if found.is_some() || after.is_some() {
                record(ctx, &file, found, after);
            }
        }
    }
    Ok(out)
}

/// Records a change of `file` on the call's tool node (and keeps what it
/// held before in the session).
pub(crate) fn record(
    ctx: &ToolContext,
    file: &str,
    before: Option<Fingerprint>,
    after: Option<Fingerprint>,
) {
    let session = ctx.network.session();
    let before_hash = before.as_ref().map(|f| f.sha256.clone());
    let after_hash = after.map(|f| f.sha256);
    // In the graph when the session's own files hold what was written.
    let in_graph = match &after_hash {
        Some(h) => session.with_files(|files| {
            files
                .get(file)
                .is_some_and(|d| hash(d.text().as_bytes()) == *h)
        }),
        None => false,
    };
    if let Some(Fingerprint {
        sha256,
        bytes: Some(bytes),
    }) = &before
    {
        // Only text is kept, within the session's cap.
        if let Ok(text) = std::str::from_utf8(bytes) {
            session.keep_file_snapshot(sha256, text, SNAPSHOT_CAP_BYTES);
        }
    }
    session.with_metadata_mut(|m| {
        in_object(m, FILES_KNOWN, |known| match known.get_mut(file) {
            // A path met before: its key is not copied again.
            Some(slot) => *slot = json!(after_hash),
            None => {
                known.insert(file.to_string(), json!(after_hash));
            }
        });
    });
    if let Some(node) = ctx.network.node(ctx.node_id) {
        let mut changes = match node.metadata_value(FILE_CHANGES) {
            Some(Value::Array(list)) => list,
            _ => Vec::new(),
        };
        changes.push(json!({
            "path": file,
            "before": before_hash,
            "after": after_hash,
            "in_graph": in_graph,
        }));
        node.set_metadata(FILE_CHANGES, Value::Array(changes));
    }
}

/// `f` over the object at `key`, made when missing (or not an object).
fn in_object<R>(
    m: &mut Map<String, Value>,
    key: &str,
    f: impl FnOnce(&mut Map<String, Value>) -> R,
) -> R {
    // Looked up by `&str` first: the key is copied only to make it.
    if let Some(Value::Object(o)) = m.get_mut(key) {
        return f(o);
    }
    let slot = m
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(o) = slot {
        return f(o);
    }
    let mut o = Map::new();
    let r = f(&mut o);
    *slot = Value::Object(o);
    r
}

/// Puts the files the agent changed after node `after` (`None`: all of
/// them) back as they were when `after` ran, through `backend` (the
/// session's workspace). A file changed outside the agent since is
/// reported, not overwritten. The conversation is not touched (see
/// [`TimeTravelExt::rewind_to`](lc_agent::TimeTravelExt::rewind_to)).
///
/// ```
/// use lc_agent::{RunnableNetwork, Tool, ToolContext};
/// use lc_agent_filesystem::{rewind_files, Backend, StateBackend, WriteFile};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let net = RunnableNetwork::new();
/// let backend = StateBackend::new(net.clone());
/// let write = WriteFile::new(backend.clone());
/// let node = lc_agent::HumanNode::new("write it"); // a node to hang the change on
/// net.add_node(&node).unwrap();
/// let ctx = ToolContext { network: net.clone(), node_id: node.id(), tool_call_id: "c1".into() };
/// write.call(json!({"file_path": "/a.md", "content": "hi"}), &ctx).await.unwrap();
/// let report = rewind_files(&net, &backend, None).await.unwrap();
/// assert_eq!(report.restored, ["/a.md"]);
/// assert!(net.files().is_empty());
/// # });
/// ```
pub async fn rewind_files(
    network: &RunnableNetwork,
    backend: &dyn Backend,
    after: Option<NodeId>,
) -> FsResult<FileRewind> {
    let nodes = network.nodes();
    let start = match after {
        None => 0,
        Some(id) => {
            nodes
                .iter()
                .position(|n| n.id() == id)
                .ok_or_else(|| FsError::UnknownNode(id.to_string()))?
                + 1
        }
    };
    // The first change after the node names what each path held then.
    let mut targets: Vec<(String, Option<String>)> = Vec::new();
    for node in &nodes[start..] {
        let Some(Value::Array(changes)) = node.metadata_value(FILE_CHANGES) else {
            continue;
        };
        for change in changes {
            let Some(path) = change.get("path").and_then(Value::as_str) else {
                continue;
            };
            if targets.iter().any(|(p, _)| p == path) {
                continue;
            }
            let before = change
                .get("before")
                .and_then(Value::as_str)
                .map(str::to_string);
            targets.push((path.to_string(), before));
        }
    }
    targets.sort();
    let session = network.session();
    let meta = session.metadata();
    let known = meta.get(FILES_KNOWN).and_then(Value::as_object);

    let mut report = FileRewind::default();
    for (path, target) in targets {
        let now = backend.fingerprint(&path, 0).await.map(|f| f.sha256);
        let left = known
            .and_then(|k| k.get(&path))
            .and_then(Value::as_str)
            .map(str::to_string);
        if now != left {
            report.changed_outside.push(path);
            continue;
        }
        if now == target {
            report.restored.push(path);
            continue;
        }
        match &target {
            None => backend.delete(&path).await?,
            Some(h) => {
                let Some(text) = session.file_snapshot(h) else {
                    report.not_kept.push(path);
                    continue;
                };
                let result = backend
                    .upload_files(vec![(path.clone(), text.as_bytes().to_vec())])
                    .await;
                if let Some(code) = result.into_iter().next().and_then(|r| r.error) {
                    return Err(FsError::Io {
                        path,
                        reason: format!("could not restore it ({code:?})"),
                    });
                }
            }
        }
        session.with_metadata_mut(|m| {
            in_object(m, FILES_KNOWN, |known| {
                known.insert(path.clone(), json!(target))
            });
        });
        report.restored.push(path);
    }
    Ok(report)
}

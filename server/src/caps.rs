//! What a session's state may hold: the files in its graph (the session
//! workspace's files, saved with every checkpoint and sent by `GET
//! /api/sessions/{id}`) are capped per file and in total, so one
//! `replace_all` edit cannot grow a session without bound.
//!
//! ```text
//!  tool node (file_path) ─▶ pre: the file as it was
//!                        ─▶ post: over max_file_bytes or max_files_bytes?
//!                              ─▶ the file as it was again, and the call's result is an
//!                                 error naming the cap and the flag (the model reads it)
//! ```
//!
//! Files on disk (`--root`) are the user's, not the session's: not capped
//! here.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{FileData, Message, NetworkModifier, NodeId, NodeRef, RunnableNetwork, ToolNode};
use lc_agent::{Result, ToolStatus};
use parking_lot::Mutex;

/// The modifier's id.
const ID: &str = "session-caps";

/// A file a running call may change (its path), as it was before the call.
type Before = (String, Option<FileData>);

/// The caps of a session's files, enforced after every tool call.
#[derive(Debug, Clone)]
pub(crate) struct SessionCaps {
    per_file: u64,
    total: u64,
    /// The file a running call may change, as it was before the call.
    before: Arc<Mutex<HashMap<NodeId, Before>>>,
}

/// The bytes of a file's text.
fn size(file: &FileData) -> u64 {
    let lines: usize = file.content.iter().map(String::len).sum();
    (lines + file.content.len().saturating_sub(1)) as u64
}

impl SessionCaps {
    /// At most `per_file` bytes in a file, `total` in all.
    pub(crate) fn new(per_file: u64, total: u64) -> Self {
        Self {
            per_file,
            total,
            before: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// What is over a cap in `net`'s files after a call changed `path`.
    fn over(&self, net: &RunnableNetwork, path: &str) -> Option<String> {
        net.with_files(|files| {
            if let Some(file) = files.get(path) {
                let bytes = size(file);
                if bytes > self.per_file {
                    return Some(format!(
                        "{path} would hold {bytes} bytes; a file of the session may hold at most \
                         {} (the server's --max-file-bytes)",
                        self.per_file
                    ));
                }
            }
            let total: u64 = files.values().map(size).sum();
            (total > self.total).then(|| {
                format!(
                    "the session's files would hold {total} bytes; they may hold at most {} in \
                     all (the server's --max-session-files-bytes)",
                    self.total
                )
            })
        })
    }
}

/// Why `net`'s files are over the server's caps after a batch of
/// `/v1/tools/execute` (which runs its calls outside a run, so the
/// modifier's hooks do not see them; its per-file cap is the write limit
/// the file tools keep to, see `Hub::agent_for`), if they are.
pub(crate) fn over_caps(net: &RunnableNetwork, per_file: u64, total: u64) -> Option<String> {
    // The largest file is over the per-file cap if any is; `over` checks
    // it, then the total.
    let largest = net.with_files(|files| {
        files
            .iter()
            .max_by_key(|(_, file)| size(file))
            .map(|(path, _)| path.clone())
    });
    SessionCaps::new(per_file, total).over(net, largest.as_deref().unwrap_or_default())
}

/// The file a call of a file tool names.
fn path_of(node: &NodeRef) -> Option<String> {
    let tool = node.downcast::<ToolNode>()?;
    let args: serde_json::Value = serde_json::from_str(&tool.tool_call.arguments).ok()?;
    args.get("file_path")?.as_str().map(str::to_string)
}

#[async_trait]
impl NetworkModifier for SessionCaps {
    fn id(&self) -> &str {
        ID
    }

    async fn on_pre_invoke(&self, network: &RunnableNetwork, node: &NodeRef) -> Result<()> {
        if let Some(path) = path_of(node) {
            let was = network.with_files(|files| files.get(&path).cloned());
            self.before.lock().insert(node.id(), (path, was));
        }
        Ok(())
    }

    /// Before the checkpoint (which saves what the call did).
    fn priority(&self) -> i32 {
        -50
    }

    async fn on_post_invoke(&self, network: &RunnableNetwork, node: &NodeRef) -> Result<()> {
        let Some((path, was)) = self.before.lock().remove(&node.id()) else {
            return Ok(());
        };
        let Some(why) = self.over(network, &path) else {
            return Ok(());
        };
        network.with_files_mut(|files| match was {
            Some(file) => {
                files.insert(path.clone(), file);
            }
            None => {
                files.remove(&path);
            }
        });
        if let Some(tool) = node.downcast::<ToolNode>() {
            node.set_output(Message::Tool {
                content: format!("Error: {why}: the change to {path} was undone"),
                tool_call_id: tool.tool_call.id.clone(),
                name: Some(tool.tool_call.name.clone()),
                status: ToolStatus::Error,
                parts: Vec::new(),
            });
        }
        tracing::info!(%path, "a call over the session's file caps was undone");
        Ok(())
    }
}

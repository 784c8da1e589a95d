//! Rewind and redo over the workspace records (see the module docs of
//! `history`), with the conversation when asked.

use std::collections::{BTreeSet, HashSet};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::{Dir, Permissions};
use lc_agent::{NodeId, RunnableNetwork, TimeTravelExt};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::store::Tree;
use super::{meta, set_meta, HistoryError, WorkspaceHistory, WORKSPACE_TREE};
use crate::atomic::TEMP_PREFIX;
use crate::backend::Backend;
use crate::snapshots::{rewind_files, FileRewind};

/// What a rewind restores.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewindWhat {
    /// The conversation only: the next message goes below the node.
    Conversation,
    /// The files only.
    Files,
    /// Both (the default).
    #[default]
    Both,
}

/// What [`rewind`] or [`redo`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RewindReport {
    /// The node rewound to (`None`: before the first message).
    pub node: Option<NodeId>,
    /// What was asked for.
    pub what: RewindWhat,
    /// The files (absent for a conversation-only rewind).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<FileRewind>,
    /// Where the files came from: `"workspace"` (the turn records: the
    /// shell's changes too) or `"file_tools"` (what the file tools
    /// recorded, for sessions without workspace records).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<&'static str>,
}

/// Rewinds `net` to `to` (`None`: before the first message): the files
/// as they were there (from the workspace records of `history` when the
/// session has one at or above `to`, else the file tools' own records
/// through `backend`), the conversation, or both. A file changed outside
/// the agent since is reported, not overwritten. What the rewind changed
/// can be taken back with [`redo`] until the next turn.
pub async fn rewind(
    net: &RunnableNetwork,
    history: Option<&WorkspaceHistory>,
    backend: &dyn Backend,
    to: Option<NodeId>,
    what: RewindWhat,
) -> Result<RewindReport, HistoryError> {
    if let Some(id) = to
        && net.node(id).is_none()
    {
        return Err(HistoryError::UnknownNode(id.to_string()));
    }
    let session = net.session();
    let leaf = net.current_leaf().map(|n| n.id());
    let mut report = RewindReport {
        node: to,
        what,
        files: None,
        source: None,
    };
    let mut redo_tree = Value::Null;
    if what != RewindWhat::Conversation {
        let target = history.and_then(|h| recorded_at(net, to).map(|t| (h, t)));
        match target {
            Some((history, target)) => {
                let (files, before) = history.restore(&session, &target).await?;
                redo_tree = json!(before);
                report.files = Some(files);
                report.source = Some("workspace");
            }
            None => {
                report.files = Some(rewind_files(net, backend, to).await?);
                report.source = Some("file_tools");
            }
        }
    }
    if what != RewindWhat::Files {
        net.rewind_to(to)?;
    }
    let leaf = match what {
        RewindWhat::Files => Value::Null,
        _ => json!({"leaf": leaf}),
    };
    set_meta(&session, |m| {
        m.insert(
            "redo".into(),
            json!({"tree": redo_tree, "conversation": leaf}),
        );
    });
    Ok(report)
}

/// Takes back the last [`rewind`] (or redo): the files and the
/// conversation as they were before it. Refused when a turn ran since.
pub async fn redo(
    net: &RunnableNetwork,
    history: Option<&WorkspaceHistory>,
) -> Result<RewindReport, HistoryError> {
    let session = net.session();
    let Some(Value::Object(point)) = meta(&session).get("redo").cloned() else {
        return Err(HistoryError::NothingToRedo);
    };
    let tree = point.get("tree").and_then(Value::as_str);
    let conversation = point.get("conversation").and_then(Value::as_object);
    let what = match (tree.is_some(), conversation.is_some()) {
        (true, true) => RewindWhat::Both,
        (true, false) => RewindWhat::Files,
        (false, true) => RewindWhat::Conversation,
        (false, false) => return Err(HistoryError::NothingToRedo),
    };
    let leaf = conversation
        .and_then(|c| c.get("leaf"))
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<NodeId>().ok());
    let mut report = RewindReport {
        node: leaf,
        what,
        files: None,
        source: None,
    };
    let now_leaf = net.current_leaf().map(|n| n.id());
    let mut back_tree = Value::Null;
    if let Some(id) = tree {
        let Some(history) = history else {
            return Err(HistoryError::Corrupt(
                "the rewind's files were recorded in a workspace this session no longer works in"
                    .into(),
            ));
        };
        let (files, before) = history.restore(&session, id).await?;
        back_tree = json!(before);
        report.files = Some(files);
        report.source = Some("workspace");
    }
    if conversation.is_some() {
        net.rewind_to(leaf)?;
    }
    // A redo of the redo goes back again.
    let back_leaf = conversation.map(|_| json!({"leaf": now_leaf}));
    set_meta(&session, |m| {
        m.insert(
            "redo".into(),
            json!({"tree": back_tree, "conversation": back_leaf}),
        );
    });
    Ok(report)
}

/// The tree recorded at `to`: on `to` or the nearest node above it (the
/// newest such ancestor); above every record (the system prompt, say),
/// the first record below it (the workspace as the next turn began);
/// for `None`, the session's first record.
fn recorded_at(net: &RunnableNetwork, to: Option<NodeId>) -> Option<String> {
    let nodes = net.nodes();
    let tree_of = |n: &lc_agent::NodeRef| {
        n.metadata_value(WORKSPACE_TREE)
            .and_then(|v| v.as_str().map(str::to_string))
    };
    let Some(to) = to else {
        return nodes.iter().find_map(tree_of);
    };
    let reach = |next: &dyn Fn(NodeId) -> Vec<NodeId>| {
        let mut seen = HashSet::new();
        let mut stack = vec![to];
        while let Some(id) = stack.pop() {
            if seen.insert(id) {
                stack.extend(next(id));
            }
        }
        seen
    };
    let above = reach(&|id| net.parents(id).iter().map(|n| n.id()).collect());
    let found = nodes
        .iter()
        .rev()
        .filter(|n| above.contains(&n.id()))
        .find_map(tree_of);
    found.or_else(|| {
        let below = reach(&|id| net.children(id).iter().map(|n| n.id()).collect());
        nodes
            .iter()
            .filter(|n| below.contains(&n.id()))
            .find_map(tree_of)
    })
}

impl WorkspaceHistory {
    /// Puts the workspace back as `target` (see the module docs); returns
    /// the report and the id of the tree it held before (the redo point).
    async fn restore(
        &self,
        session: &RunnableNetwork,
        target: &str,
    ) -> Result<(FileRewind, String), HistoryError> {
        let m = meta(session);
        let head = m.get("head").and_then(Value::as_str).map(str::to_string);
        let outside = match m.get("outside") {
            Some(Value::Object(o)) => o.clone(),
            _ => Map::new(),
        };
        let me = self.clone();
        let sid = session.id().to_string();
        let target = self.inner.store.tree(target)?.0;
        let Restored {
            report,
            before,
            after,
            depth,
            kept,
        } = tokio::task::spawn_blocking(move || {
            me.restore_blocking(&sid, head.as_deref(), &outside, &target)
        })
        .await
        .map_err(|e| HistoryError::Corrupt(format!("the rewind stopped: {e}")))??;
        let restored = report.restored.clone();
        set_meta(session, |m| {
            m.insert("head".into(), json!(after));
            m.insert("depth".into(), json!(depth));
            let outside = m
                .entry("outside".to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(o) = outside {
                for p in &restored {
                    o.remove(p);
                }
                // Left as the user has them: theirs at the next rewind too.
                for (p, h) in kept {
                    o.insert(p, h);
                }
            }
        });
        Ok((report, before))
    }

    fn restore_blocking(
        &self,
        session: &str,
        head: Option<&str>,
        outside: &Map<String, Value>,
        target: &Tree,
    ) -> Result<Restored, HistoryError> {
        // The workspace now, recorded: the redo point.
        let now = self.record_blocking(head, session)?.0;
        let inner = &*self.inner;
        let mut state = inner.state.lock();
        let (current, depth) = self.tree(&mut state, &now.tree)?;
        let last = match head {
            Some(h) => self.tree(&mut state, h)?.0,
            None => current.clone(),
        };
        let dir = Dir::open_ambient_dir(&inner.root, ambient_authority())
            .map_err(|e| HistoryError::io(&inner.root, e))?;
        let mut report = FileRewind::default();
        let mut result: Tree = (*current).clone();
        let paths: BTreeSet<&String> = target.keys().chain(current.keys()).collect();
        let mut rewritten = Vec::new();
        // Removals first: a directory made by a later turn may stand where
        // a file goes back.
        let mut writes = Vec::new();
        let mut kept = Vec::new();
        for path in paths {
            let (want, have) = (target.get(path), current.get(path));
            if want == have {
                continue;
            }
            let by_user = outside
                .get(path)
                .is_some_and(|h| *h == json!(have.and_then(|e| e.h.clone())));
            if have != last.get(path) || by_user {
                report.changed_outside.push(path.clone());
                kept.push((path.clone(), json!(have.and_then(|e| e.h.clone()))));
                continue;
            }
            match want {
                None => match remove(&dir, path) {
                    Ok(()) => {
                        result.remove(path);
                        report.restored.push(path.clone());
                    }
                    Err(e) => report.failed.push(format!("{path}: {e}")),
                },
                Some(entry) => writes.push((path.clone(), entry.clone())),
            }
        }
        for (path, entry) in writes {
            let Some(h) = &entry.h else {
                report.not_kept.push(path);
                continue;
            };
            let Ok(bytes) = inner.store.get(h) else {
                report.not_kept.push(path);
                continue;
            };
            match write(&dir, &path, &bytes, entry.x) {
                Ok(()) => {
                    result.insert(path.clone(), entry);
                    rewritten.push(path.clone());
                    report.restored.push(path);
                }
                Err(e) => report.failed.push(format!("{path}: {e}")),
            }
        }
        report.restored.sort();
        drop(state);
        // What is there now is the new head; the rewritten files are hashed
        // again at the next scan (their stat changed).
        let (after, depth) = if result == *current {
            (now.tree.clone(), depth)
        } else {
            let (id, d) = inner
                .store
                .put_tree(&result, Some((&now.tree, &current, depth)))?;
            inner.store.add_ref(session, &id)?;
            (id, d)
        };
        let mut state = inner.state.lock();
        if let Some(index) = state.index.as_mut() {
            for p in &rewritten {
                index.forget(p);
            }
        }
        state.last = Some((after.clone(), Arc::new(result), depth));
        Ok(Restored {
            report,
            before: now.tree,
            after,
            depth,
            kept,
        })
    }
}

/// What a restore did: the report, the trees before and after (and the
/// latter's depth), and the files left as the user has them, with their
/// hashes.
struct Restored {
    report: FileRewind,
    before: String,
    after: String,
    depth: u32,
    kept: Vec<(String, Value)>,
}

/// `/a/b.txt` as a path relative to the root, refused when it is not a
/// plain relative path.
fn relative(path: &str) -> io::Result<PathBuf> {
    let rel = Path::new(path.trim_start_matches('/'));
    if rel.as_os_str().is_empty() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a path inside the workspace",
        ));
    }
    Ok(rel.to_path_buf())
}

/// Removes a file and the directories its removal left empty.
fn remove(dir: &Dir, path: &str) -> io::Result<()> {
    let rel = relative(path)?;
    match dir.remove_file(&rel) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut parent = rel.parent();
    while let Some(p) = parent.filter(|p| !p.as_os_str().is_empty()) {
        if dir.remove_dir(p).is_err() {
            break;
        }
        parent = p.parent();
    }
    Ok(())
}

/// Writes a file back (through a temp file and a rename, confined to the
/// root: a link on the way cannot lead out).
fn write(dir: &Dir, path: &str, bytes: &[u8], executable: bool) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let rel = relative(path)?;
    let parent = rel.parent().unwrap_or(Path::new(""));
    if !parent.as_os_str().is_empty() {
        dir.create_dir_all(parent)?;
    }
    let tmp = parent.join(format!(
        "{TEMP_PREFIX}rewind-{}-{}",
        std::process::id(),
        uuid_like()
    ));
    dir.write(&tmp, bytes)?;
    let mode = if executable { 0o755 } else { 0o644 };
    let done = dir
        .set_permissions(
            &tmp,
            Permissions::from_std(std::fs::Permissions::from_mode(mode)),
        )
        .and_then(|()| dir.rename(&tmp, dir, &rel));
    if done.is_err() {
        let _ = dir.remove_file(&tmp);
    }
    done
}

/// A name part unlikely to be taken.
fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{nanos:x}{:x}", NEXT.fetch_add(1, Ordering::Relaxed))
}

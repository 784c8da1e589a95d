//! `lc-agent sessions rewind`: rewind and redo without a chat.
//!
//! ```text
//! sessions rewind <ID> --to <NODE> [--files | --conversation | --both] [--json]
//! sessions rewind <ID> --redo [--json]
//!
//!  NODE  a node id (or a unique prefix), `turn:N` (the end of your N-th
//!        message's turn on the current branch), or `start` (before the
//!        first message)
//! ```
//!
//! The files come back from the workspace's turn records (what the shell
//! changed too) when the session has them, else from what the file tools
//! recorded; a file changed outside the agent since is named and left as
//! it is. `--redo` takes the last rewind back (until the next turn). The
//! session is saved; the report is a few lines, or with `--json` the
//! same object `exec`'s `rewind` item and the API's rewind carry.

use std::io::Write;
use std::sync::Arc;

use lc_agent::{NetworkList, NodeId, RunnableNetwork};
use lc_agent_filesystem::{
    Backend, FileRewind, FilesystemBackend, RewindReport, RewindWhat, StateBackend,
    WorkspaceHistory, WORKSPACE_HISTORY,
};

use crate::args::find_session;
use crate::fork::find_target;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Where a session's files are: its workspace's records and backend.
pub(crate) fn workspace_of(net: &RunnableNetwork) -> (Option<WorkspaceHistory>, Arc<dyn Backend>) {
    let recorded = net
        .metadata_value(WORKSPACE_HISTORY)
        .and_then(|m| m.get("root")?.as_str().map(std::path::PathBuf::from));
    let root = recorded.or_else(|| {
        lc_agent_deepagent::AgentSpec::from_network(net)
            .and_then(Result::ok)
            .and_then(|spec| spec.backend.root().map(|r| r.to_path_buf()))
    });
    match root.and_then(|r| FilesystemBackend::new(&r).ok().map(|b| (r, b))) {
        Some((root, backend)) => (Some(WorkspaceHistory::new(root)), Arc::new(backend)),
        None => (None, Arc::new(StateBackend::new(net.clone()))),
    }
}

/// `sessions rewind`.
pub(crate) async fn rewind(
    list: &dyn NetworkList,
    id: &str,
    to: Option<&str>,
    what: RewindWhat,
    redo: bool,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let id = find_session(list, id).await?;
    let net = list.load(id).await?;
    let (history, backend) = workspace_of(&net);
    let report = if redo {
        lc_agent_filesystem::redo(&net, history.as_ref()).await?
    } else {
        let Some(to) = to else {
            return Err("say where to: --to NODE (an id, turn:N or start), or --redo".into());
        };
        let node = find_target(&net, to)?;
        lc_agent_filesystem::rewind(&net, history.as_ref(), &*backend, node, what).await?
    };
    list.save(&net).await?;
    if json {
        writeln!(out, "{}", serde_json::to_string(&report)?)?;
    } else {
        say(out, &net, &report, redo)?;
    }
    Ok(())
}

fn say(
    out: &mut dyn Write,
    net: &RunnableNetwork,
    report: &RewindReport,
    redo: bool,
) -> std::io::Result<()> {
    let node = |n: Option<NodeId>| n.map_or_else(|| "the start".to_string(), |n| n.to_string());
    let what = match report.what {
        RewindWhat::Both => "conversation and files",
        RewindWhat::Conversation => "conversation",
        RewindWhat::Files => "files",
    };
    if redo {
        writeln!(out, "redone: {what} back as they were before the rewind")?;
    } else {
        writeln!(
            out,
            "rewound {} to {} ({what})",
            net.id(),
            node(report.node)
        )?;
    }
    if let Some(files) = &report.files {
        files_lines(out, files)?;
    }
    if report.what != RewindWhat::Files {
        writeln!(
            out,
            "conversation: the next message goes below {} (what followed stays in the graph)",
            node(net.current_leaf().map(|n| n.id()))
        )?;
    }
    writeln!(
        out,
        "take it back with: lc-agent sessions rewind {} --redo",
        net.id()
    )
}

/// The lines that say what a file rewind did.
pub(crate) fn files_lines(out: &mut dyn Write, files: &FileRewind) -> std::io::Result<()> {
    let list = |v: &[String]| v.join(", ");
    if files.restored.is_empty()
        && files.changed_outside.is_empty()
        && files.not_kept.is_empty()
        && files.failed.is_empty()
    {
        writeln!(out, "files: nothing to restore")?;
    }
    if !files.restored.is_empty() {
        writeln!(out, "files restored: {}", list(&files.restored))?;
    }
    if !files.changed_outside.is_empty() {
        writeln!(
            out,
            "files changed outside the agent since, left as they are: {}",
            list(&files.changed_outside)
        )?;
    }
    if !files.not_kept.is_empty() {
        writeln!(
            out,
            "files whose content there was not kept (too large), left as they are: {}",
            list(&files.not_kept)
        )?;
    }
    if !files.failed.is_empty() {
        writeln!(
            out,
            "files that could not be put back: {}",
            list(&files.failed)
        )?;
    }
    Ok(())
}

/// Frees the workspace records only a deleted session used (see
/// `lc_agent_filesystem::HistoryStore`); a failure is a warning, the
/// session is gone either way.
pub(crate) fn forget_workspace_records(id: lc_agent::SessionId) {
    if let Err(e) = lc_agent_filesystem::HistoryStore::for_user().forget(&id.to_string()) {
        eprintln!("warning: the workspace records of {id} were not freed: {e}");
    }
}

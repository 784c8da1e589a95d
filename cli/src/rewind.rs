//! `/rewind` and `/undo` in the chat: back to before one of your messages,
//! the conversation, the files, or both (as Claude Code offers them).
//!
//! ```text
//!  /rewind               the turns of the current branch, numbered, a line each
//!                        (the message, the files its turn changed) ─▶ which one?
//!                        ─▶ restore what? both | conversation | files
//!  /rewind N [WHAT]      the same in one line (WHAT: both, conversation, files)
//!  /undo                 /rewind of the last turn, both
//!
//!  conversation  RunnableNetwork::rewind_to(the node before message N): your next
//!                message goes there; the turns after stay in the graph as a branch
//!                (saved with the session, so a resumed chat goes on from there)
//!  files         lc_agent_filesystem::rewind_files(after that node): the files the
//!                agent wrote or edited since are put back as they were; a file
//!                changed outside the agent since is named and left alone
//! ```
//!
//! Decisions: "turn N" is your N-th message on the current branch, and
//! rewinding to it goes back to *before* it was sent (the files as they
//! were when the answer before it ended); on a terminal the message comes
//! back into the prompt to edit or send again. `/undo` restores the files
//! too (as Codex's `/undo` does): a turn taken back leaves no writes
//! behind unless someone changed them meanwhile, which it reports. In a
//! directory workspace the files come back from the turn records
//! (`lc_agent_filesystem::WorkspaceHistory`), so what `execute` changed
//! is restored too; `/redo` takes the last rewind back until the next
//! message. Sessions without records (the session's own files) restore
//! what the file tools recorded.

use std::collections::HashSet;

use lc_agent::{HumanNode, NodeId, NodeRef, ToolNode};
use lc_agent_filesystem::{FileRewind, RewindWhat};
use serde_json::Value;

use crate::agent::Agent;
use crate::console::{cut, out};
use crate::input::Input;

/// What a rewind restores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum What {
    Both,
    Conversation,
    Files,
}

impl What {
    fn parse(word: &str) -> Option<Self> {
        match word.trim().to_ascii_lowercase().as_str() {
            "b" | "both" | "1" => Some(Self::Both),
            "c" | "conversation" | "2" => Some(Self::Conversation),
            "f" | "files" | "code" | "3" => Some(Self::Files),
            _ => None,
        }
    }
}

/// One of your messages on the current branch and what its turn did.
struct Turn {
    human: NodeRef,
    /// The paths the turn's file tools changed, in order.
    files: Vec<String>,
    /// Whether the turn ran commands (`execute`), whose changes are not
    /// recorded.
    ran_commands: bool,
}

impl Turn {
    fn text(&self) -> String {
        self.human
            .output()
            .map(|m| m.text().to_string())
            .unwrap_or_default()
    }

    /// The node the conversation and the files go back to: the one the
    /// message was sent below (`None`: the very start).
    fn before(&self) -> Option<NodeId> {
        self.human.parents().first().copied()
    }
}

/// Your messages from the root to the current leaf, oldest first, each
/// with the nodes of its turn (the ancestors of the leaf added after it).
fn turns(agent: &Agent) -> Vec<Turn> {
    let net = &agent.net;
    let mut above = HashSet::new();
    let mut stack: Vec<NodeId> = net.current_leaf().map(|n| n.id()).into_iter().collect();
    while let Some(id) = stack.pop() {
        if above.insert(id) {
            stack.extend(net.parents(id).into_iter().map(|n| n.id()));
        }
    }
    let mut turns: Vec<Turn> = Vec::new();
    for node in net.nodes().into_iter().filter(|n| above.contains(&n.id())) {
        if node.kind() == HumanNode::KIND {
            turns.push(Turn {
                human: node,
                files: Vec::new(),
                ran_commands: false,
            });
            continue;
        }
        let Some(turn) = turns.last_mut() else {
            continue;
        };
        changed_files(&node, &mut turn.files);
        if node
            .downcast::<ToolNode>()
            .is_some_and(|t| t.tool_call.name == "execute")
        {
            turn.ran_commands = true;
        }
    }
    turns
}

/// Adds the paths `node`'s file tools changed to `files` (once each),
/// and those of the nodes inside a sub-agent.
fn changed_files(node: &NodeRef, files: &mut Vec<String>) {
    if let Some(Value::Array(changes)) = node.metadata_value("file_changes") {
        for path in changes.iter().filter_map(|c| c.get("path")?.as_str()) {
            if !files.iter().any(|f| f == path) {
                files.push(path.to_string());
            }
        }
    }
    if let Some(inner) = node.downcast::<lc_agent::NetworkNode>() {
        for n in inner.network().nodes() {
            changed_files(&n, files);
        }
    }
}

/// `/rewind [N [WHAT]]`.
pub(crate) async fn rewind(agent: &Agent, rest: &str, input: &mut dyn Input) {
    // A turn that failed (a message too long for the model) is taken out
    // first, so it is not sent again.
    agent.drop_failed_turn().await;
    let turns = turns(agent);
    if turns.is_empty() {
        out("nothing to rewind: no message sent yet\n");
        return;
    }
    let mut words = rest.split_whitespace();
    let (number, what) = (words.next(), words.next());
    let number = match number {
        Some(n) => n.to_string(),
        None => {
            list(&turns);
            match input.line(&format!(
                "rewind to before which message? (1-{}; Enter cancels) ",
                turns.len()
            )) {
                Some(line) if !line.trim().is_empty() => line.trim().to_string(),
                _ => {
                    out("rewind cancelled\n");
                    return;
                }
            }
        }
    };
    let Some(index) = number
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .filter(|i| *i < turns.len())
    else {
        out(&format!(
            "no message {number}: give a number from 1 to {} (/rewind lists them)\n",
            turns.len()
        ));
        return;
    };
    let what = match what {
        Some(word) => What::parse(word),
        None => {
            let answer = input.line(
                "restore what? [b]oth conversation and files, [c]onversation only, \
                 [f]iles only (Enter cancels) ",
            );
            match answer {
                Some(line) if !line.trim().is_empty() => What::parse(&line),
                _ => {
                    out("rewind cancelled\n");
                    return;
                }
            }
        }
    };
    let Some(what) = what else {
        out("restore what? answer both, conversation or files; nothing changed\n");
        return;
    };
    apply(agent, &turns, index, what, input).await;
}

/// `/undo`: the last message taken back, the conversation and the files.
pub(crate) async fn undo(agent: &Agent, input: &mut dyn Input) {
    agent.drop_failed_turn().await;
    let turns = turns(agent);
    let Some(turn) = turns.last() else {
        out("nothing to undo\n");
        return;
    };
    out(&format!("undone: {}\n", cut(&one_line(&turn.text()), 70)));
    apply(agent, &turns, turns.len() - 1, What::Both, input).await;
}

/// The numbered list `/rewind` asks from.
fn list(turns: &[Turn]) {
    out("your messages on this branch (rewinding goes back to before one):\n");
    for (i, turn) in turns.iter().enumerate() {
        let mut line = format!("  {:>2}. {}", i + 1, cut(&one_line(&turn.text()), 60));
        let mut did = Vec::new();
        if !turn.files.is_empty() {
            did.push(format!("changed {}", turn.files.join(", ")));
        }
        if turn.ran_commands {
            did.push("ran commands".to_string());
        }
        if !did.is_empty() {
            line.push_str(&format!("  ({})", did.join("; ")));
        }
        out(&format!("{line}\n"));
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Rewinds to before `turns[index]`: the files first (a failure leaves
/// the conversation where it is), then the conversation; saves.
async fn apply(agent: &Agent, turns: &[Turn], index: usize, what: What, input: &mut dyn Input) {
    let Some(turn) = turns.get(index) else {
        return;
    };
    let before = turn.before();
    let kind = match what {
        What::Both => RewindWhat::Both,
        What::Conversation => RewindWhat::Conversation,
        What::Files => RewindWhat::Files,
    };
    let report = lc_agent_filesystem::rewind(
        &agent.net,
        agent.history.as_ref(),
        &*agent.backend,
        before,
        kind,
    )
    .await;
    let report = match report {
        Ok(report) => report,
        Err(e) => {
            eprintln!(
                "error: the rewind did not happen: {}; the conversation is unchanged",
                crate::error::in_cli_terms(&e.to_string())
            );
            return;
        }
    };
    if let Some(files) = &report.files {
        say_files(files);
    }
    if what != What::Files {
        out(&format!(
            "conversation: back to before “{}”; your next message goes there \
             (what followed stays in the session's graph)\n",
            cut(&one_line(&turn.text()), 60)
        ));
        input.prefill(&turn.text());
    }
    if what != What::Conversation
        && report.source == Some("file_tools")
        && turns.iter().skip(index).any(|t| t.ran_commands)
    {
        out("note: what `execute` commands changed is not recorded, so it is not restored\n");
    }
    out("/redo takes this rewind back\n");
    if let Err(e) = agent.save().await {
        eprintln!("error: {}", e.message);
    }
}

/// `/redo`: the last rewind taken back.
pub(crate) async fn redo(agent: &Agent) {
    match lc_agent_filesystem::redo(&agent.net, agent.history.as_ref()).await {
        Ok(report) => {
            if let Some(files) = &report.files {
                say_files(files);
            }
            if report.what != RewindWhat::Files {
                out("conversation: back where it was before the rewind\n");
            }
        }
        Err(e) => {
            out(&format!("{e}\n"));
            return;
        }
    }
    if let Err(e) = agent.save().await {
        eprintln!("error: {}", e.message);
    }
}

fn say_files(report: &FileRewind) {
    if report.restored.is_empty() && report.changed_outside.is_empty() && report.not_kept.is_empty()
    {
        out("files: nothing to restore (the agent changed none since)\n");
    }
    if !report.restored.is_empty() {
        out(&format!("files restored: {}\n", report.restored.join(", ")));
    }
    if !report.changed_outside.is_empty() {
        out(&format!(
            "files changed outside the agent since, left as they are: {}\n",
            report.changed_outside.join(", ")
        ));
    }
    if !report.not_kept.is_empty() {
        out(&format!(
            "files whose earlier content was not kept (too large, or not text), left as they are: {}\n",
            report.not_kept.join(", ")
        ));
    }
    if !report.failed.is_empty() {
        out(&format!(
            "files that could not be put back: {}\n",
            report.failed.join(", ")
        ));
    }
}

//! Approval questions: every call waiting for a person, asked on the
//! [`Input`], answered with a letter.
//!
//! ```text
//!  piped:        approve write_file {"file_path":...}? [y/n]            (as always)
//!  interactive:  write_file wants to run  file_path=/hello.txt
//!                --- /hello.txt  +++ /hello.txt  (a diff of what it will change)
//!                  y  yes, run it
//!                  a  always allow write_file in this session
//!                  e  edit the arguments (a JSON line)
//!                  r  respond in the tool's place (a line)
//!                  n  no (then an optional reason the model reads)
//!                approve? [y/a/e/r/n]
//! ```
//!
//! `y` approves, `n` rejects, `e` then a JSON line edits the arguments,
//! `r` then a line answers in the tool's place; the letters offered are
//! the decisions the call allows. `--yes`, `/approve all` and the tools
//! "always" allowed ([`Policy`]) approve without asking.

use std::collections::BTreeSet;
use std::sync::Mutex;

use lc_agent::RunnableNetwork;
use lc_agent_deepagent::{decide, pending_approvals, Decision, DecisionKind};
use serde_json::Value;

use crate::console::{paint, short_args, Look};
use crate::error::{CliError, CliResult};
use crate::input::Input;

/// Which calls are approved without asking, for this session.
#[derive(Debug, Default)]
pub(crate) struct Policy {
    /// Every call (`--yes`, `/approve all`).
    pub(crate) all: bool,
    /// These tools (`a` at a question, `/approve TOOL`).
    pub(crate) tools: BTreeSet<String>,
}

impl Policy {
    /// Whether a call of `tool` is approved without asking.
    pub(crate) fn allows(&self, tool: &str) -> bool {
        self.all || self.tools.contains(tool)
    }

    /// What the policy is, in words.
    pub(crate) fn describe(&self) -> String {
        if self.all {
            "every call is approved without asking".to_string()
        } else if self.tools.is_empty() {
            "every call that needs approval is asked".to_string()
        } else {
            format!(
                "approved without asking: {}; other calls are asked",
                self.tools.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        }
    }
}

/// Asks about every pending call; `false` when the input ended first
/// (or Ctrl-C at a question).
pub(crate) fn ask(
    net: &RunnableNetwork,
    policy: &Mutex<Policy>,
    input: &mut dyn Input,
    look: Look,
) -> CliResult<bool> {
    let interactive = input.interactive();
    for pending in pending_approvals(net) {
        let call = &pending.tool_call;
        let allowed = policy.lock().map(|p| p.allows(&call.name)).unwrap_or(false);
        if allowed {
            eprintln!("approved {} {}", call.name, short(&call.arguments));
            decide(net, pending.node_id, Decision::Approve)
                .map_err(|e| CliError::failed(e.to_string()))?;
            continue;
        }
        let mut letters: Vec<&str> = Vec::new();
        let mut menu = Vec::new();
        for kind in &pending.allowed {
            let (letter, words) = match kind {
                DecisionKind::Approve => ("y", "yes, run it".to_string()),
                DecisionKind::Reject => (
                    "n",
                    "no (then a reason the model reads; optional)".to_string(),
                ),
                DecisionKind::Edit => ("e", "edit the arguments (a JSON line)".to_string()),
                DecisionKind::Respond => ("r", "respond in the tool's place (a line)".to_string()),
            };
            letters.push(letter);
            menu.push((letter, words));
            if interactive && *kind == DecisionKind::Approve {
                letters.push("a");
                menu.push(("a", format!("always allow {} in this session", call.name)));
            }
        }
        let letters = letters.join("/");
        let question = if interactive {
            eprintln!(
                "{} wants to run  {}",
                paint(look.color, "1", &call.name),
                short_args(&call.arguments)
            );
            if let Some(reason) = &pending.reason {
                eprintln!("  (asked by {reason})");
            }
            if let Some(diff) = preview(net, &call.name, &call.arguments) {
                eprint!("{}", colour_diff(look.color, &diff));
            }
            for (letter, words) in &menu {
                eprintln!("  {}  {words}", paint(look.color, "1", letter));
            }
            format!("approve? [{letters}] ")
        } else {
            let why = pending
                .reason
                .as_ref()
                .map(|r| format!(" (asked by {r})"))
                .unwrap_or_default();
            format!(
                "approve {} {}{why}? [{letters}] ",
                call.name,
                short(&call.arguments)
            )
        };
        loop {
            let Some(answer) = input.line(&question) else {
                return Ok(false);
            };
            let decision = match answer.trim() {
                "y" | "yes" => Decision::Approve,
                "a" | "always" if interactive && letters.contains('a') => {
                    if let Ok(mut p) = policy.lock() {
                        p.tools.insert(call.name.clone());
                    }
                    eprintln!("{} is approved without asking for the rest of this session (/approve ask undoes it)", call.name);
                    Decision::Approve
                }
                "e" | "edit" => {
                    let Some(json) = input.line("new arguments (JSON): ") else {
                        return Ok(false);
                    };
                    match serde_json::from_str(&json) {
                        Ok(args) => Decision::Edit(args),
                        Err(e) => {
                            eprintln!("not JSON arguments: {e}");
                            continue;
                        }
                    }
                }
                "r" | "respond" => {
                    let Some(text) = input.line("the call's result: ") else {
                        return Ok(false);
                    };
                    Decision::Respond(text)
                }
                "n" | "no" => {
                    let reason = if interactive {
                        input.line("reason (Enter for none): ").unwrap_or_default()
                    } else {
                        String::new()
                    };
                    let reason = reason.trim();
                    Decision::Reject(if reason.is_empty() {
                        "the user said no".to_string()
                    } else {
                        format!("the user said no: {reason}")
                    })
                }
                other => {
                    eprintln!("`{other}` is not one of [{letters}]");
                    continue;
                }
            };
            match decide(net, pending.node_id, decision) {
                Ok(()) => break,
                // Not allowed for this tool, or not an object: ask again.
                Err(e) => eprintln!("{e}"),
            }
        }
    }
    Ok(true)
}

/// The arguments on one line, at most 60 characters (the piped wording).
fn short(args: &str) -> String {
    crate::console::cut(args, 60)
}

/// What a `write_file` or `edit_file` call would change, as a unified
/// diff of the file as the session sees it (its own files, or the file
/// under the workspace directory).
pub(crate) fn preview(net: &RunnableNetwork, tool: &str, args: &str) -> Option<String> {
    let args: Value = serde_json::from_str(args).ok()?;
    let path = args.get("file_path")?.as_str()?;
    let before = current_text(net, path).unwrap_or_default();
    let after = match tool {
        "write_file" => args.get("content")?.as_str()?.to_string(),
        "edit_file" => {
            let old = args.get("old_string")?.as_str()?;
            let new = args.get("new_string")?.as_str()?;
            let all = args.get("replace_all").and_then(Value::as_bool) == Some(true);
            if before.contains(old) {
                if all {
                    before.replace(old, new)
                } else {
                    before.replacen(old, new, 1)
                }
            } else {
                // The file is not at hand: the edit itself.
                return Some(unified(old, new, path));
            }
        }
        _ => return None,
    };
    Some(unified(&before, &after, path))
}

fn unified(before: &str, after: &str, path: &str) -> String {
    let diff = similar::TextDiff::from_lines(before, after);
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(path, path)
        .to_string();
    // At most 40 lines on the screen.
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() > 40 {
        format!(
            "{}\n... ({} more lines)\n",
            lines[..40].join("\n"),
            lines.len() - 40
        )
    } else {
        text
    }
}

/// The file's text: the session's own files, else the workspace
/// directory of the blueprint.
fn current_text(net: &RunnableNetwork, path: &str) -> Option<String> {
    if let Some(file) = net.files().get(path) {
        return Some(file.text());
    }
    let spec = lc_agent_deepagent::AgentSpec::from_network(net)?.ok()?;
    let root = spec.backend.root()?;
    std::fs::read_to_string(root.join(path.trim_start_matches('/'))).ok()
}

fn colour_diff(color: bool, diff: &str) -> String {
    diff.lines()
        .map(|line| {
            let style = match line.chars().next() {
                Some('+') if !line.starts_with("+++") => "32",
                Some('-') if !line.starts_with("---") => "31",
                Some('@') => "36",
                _ => "2",
            };
            format!("{}\n", paint(color, style, line))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_of_a_session_file_previews_as_a_diff() {
        let net = RunnableNetwork::new();
        net.with_files_mut(|files| {
            files.insert(
                "/a.txt".to_string(),
                lc_agent::FileData::new("one\ntwo\nthree\n"),
            );
        });
        let diff = preview(
            &net,
            "edit_file",
            r#"{"file_path": "/a.txt", "old_string": "two", "new_string": "2"}"#,
        )
        .unwrap();
        assert!(diff.contains("-two\n+2\n"), "{diff}");
        let new = preview(
            &net,
            "write_file",
            r#"{"file_path": "/b.txt", "content": "hi\n"}"#,
        )
        .unwrap();
        assert!(new.contains("+hi"), "{new}");
        assert!(preview(&net, "read_file", r#"{"file_path": "/a.txt"}"#).is_none());
    }
}

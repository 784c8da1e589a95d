//! What a person sees and answers in a terminal: the streamed answer on
//! stdout ([`Screen`], a line per chat turn), one progress line per tool
//! call and per summary on stderr, and the approval questions ([`ask`]),
//! answered on stdin.
//!
//! ```text
//!  NetworkEvent::Delta ─────────▶ stdout (the answer, as it is written)
//!  ToolCallFinished, Summary ───▶ stderr ("  read_file ok (1.2 ms)")
//!  pending_approvals ─▶ ask ────▶ stderr "approve write_file {...}? [y/e/n/r] " ◀─ stdin
//! ```

use std::io::Write;
use std::sync::Arc;

use lc_agent::{NetworkEvent, RunnableNetwork};
use lc_agent_deepagent::approvals::{decide, pending_approvals, Decision, DecisionKind};

use crate::error::{CliError, CliResult};

fn short(args: &str) -> String {
    let one_line: String = args
        .chars()
        .map(|c| if c == '\n' { ' ' } else { c })
        .collect();
    if one_line.chars().count() > 60 {
        format!("{}...", one_line.chars().take(57).collect::<String>())
    } else {
        one_line
    }
}

/// The lines a person types (stdin), shared by the chat prompt and the
/// approval questions.
pub(crate) type Lines<'a> = dyn Iterator<Item = std::io::Result<String>> + 'a;

/// Asks about every pending call; `false` when stdin ended first.
///
/// The question offers the decisions the call allows: `y` approve, `n`
/// reject, `e` edit (then a JSON line of new arguments), `r` respond
/// (then a line that becomes the call's result). An answer that is not
/// allowed, or arguments that are not a JSON object, ask again.
pub(crate) fn ask(net: &RunnableNetwork, yes: bool, lines: &mut Lines<'_>) -> CliResult<bool> {
    for pending in pending_approvals(net) {
        let call = &pending.tool_call;
        if yes {
            eprintln!("approved {} {}", call.name, short(&call.arguments));
            decide(net, pending.node_id, Decision::Approve)
                .map_err(|e| CliError::failed(e.to_string()))?;
            continue;
        }
        let letters: String = pending
            .allowed
            .iter()
            .map(|kind| match kind {
                DecisionKind::Approve => "y",
                DecisionKind::Reject => "n",
                DecisionKind::Edit => "e",
                DecisionKind::Respond => "r",
            })
            .collect::<Vec<_>>()
            .join("/");
        loop {
            let Some(answer) = prompt(
                &format!(
                    "approve {} {}? [{letters}] ",
                    call.name,
                    short(&call.arguments)
                ),
                lines,
            ) else {
                return Ok(false);
            };
            let decision = match answer.trim() {
                "y" | "yes" => Decision::Approve,
                "e" | "edit" => {
                    let Some(json) = prompt("new arguments (JSON): ", lines) else {
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
                    let Some(text) = prompt("the call's result: ", lines) else {
                        return Ok(false);
                    };
                    Decision::Respond(text)
                }
                "n" | "no" => Decision::Reject("the user said no".to_string()),
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

/// Writes a question on stderr and reads the answer line.
fn prompt(question: &str, lines: &mut Lines<'_>) -> Option<String> {
    eprint!("{question}");
    let _ = std::io::stderr().flush();
    lines.next()?.ok()
}

/// What the screen shows of a run: the answer text streamed on stdout as
/// the model writes it (a line per chat turn), one progress line per tool
/// call on stderr.
#[derive(Clone, Default)]
pub(crate) struct Screen {
    /// The text of the latest streamed turn (shown already).
    streamed: Arc<std::sync::Mutex<(Option<lc_agent::NodeId>, String)>>,
}

impl Screen {
    /// Whether `answer` is what the latest turn streamed (then it is on
    /// the screen already).
    pub(crate) fn showed(&self, answer: &str) -> bool {
        self.streamed
            .lock()
            .map(|s| s.0.is_some() && s.1 == answer)
            .unwrap_or(false)
    }

    /// Prints the answer unless it was streamed.
    pub(crate) fn answer(&self, answer: &str) {
        if !self.showed(answer) {
            println!("{answer}");
        }
    }
}

/// Streams the network's answers and reports its tool calls.
pub(crate) fn show_progress(net: &RunnableNetwork) -> Screen {
    net.set_streaming(true);
    let screen = Screen::default();
    let state = screen.streamed.clone();
    net.on_event(move |event| match event {
        NetworkEvent::Delta {
            node_id,
            delta: lc_agent::StreamDelta::Text(text),
        } if !text.is_empty() => {
            if let Ok(mut s) = state.lock() {
                if s.0 != Some(*node_id) {
                    *s = (Some(*node_id), String::new());
                }
                s.1.push_str(text);
            }
            print!("{text}");
            let _ = std::io::stdout().flush();
        }
        NetworkEvent::NodeInvoked { node_id } => {
            let ended = state.lock().is_ok_and(|s| s.0 == Some(*node_id));
            if ended {
                println!();
            }
        }
        NetworkEvent::ToolCallFinished {
            name,
            elapsed,
            status,
            ..
        } => {
            let mark = if *status == lc_agent::ToolStatus::Ok {
                "ok"
            } else {
                "error"
            };
            eprintln!("  {name} {mark} ({:.1} ms)", elapsed.as_secs_f64() * 1000.0);
        }
        NetworkEvent::SummaryWritten {
            kept, summarized, ..
        } => {
            eprintln!("  summary written ({summarized} messages summarized, {kept} kept)");
        }
        _ => {}
    });
    screen
}

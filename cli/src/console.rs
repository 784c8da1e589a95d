//! What a person sees in a terminal: the streamed answer on stdout
//! ([`Screen`]), one progress line per tool call and per summary on
//! stderr, warnings for answers cut off or empty, and — when stdout and
//! stderr are a terminal — rendered Markdown, a spinner until the first
//! token and a footer per turn (tokens, cost, context).
//!
//! ```text
//!  NetworkEvent::Delta ─────────▶ stdout: the answer as it is written (piped: raw text,
//!                                 exactly as before; terminal: Markdown, rendered a
//!                                 block at a time — a blank line or a closed code fence;
//!                                 fenced code highlighted, see highlight.rs)
//!  InvokeStarted .. first token ─▶ stderr spinner "⠋ thinking 2.3s" (terminal only)
//!  ToolCallFinished+NodeInvoked ─▶ stderr "  read_file error (1.0 ms)  file_path=/x — Error: ..."
//!  SummaryWritten ───────────────▶ stderr "  summary written (...)"
//!  AnswerCutOff / EmptyAnswer ───▶ stderr "warning: ..." and what to do next
//!  end of a turn ────────────────▶ stderr footer "  ─ 1,234 in · 56 out · $0.0004 · context 12% of 8,192 · 3.1 s"
//! ```
//!
//! Piped output (stdout not a terminal), `NO_COLOR` and `--no-color` give
//! plain text: scripts see exactly the stdout they always saw.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use crate::highlight::Segment;

use lc_agent::{
    Attachments, Events, NetworkEvent, NodeId, RunnableNetwork, StreamDelta, ToolStatus, Usage,
};

use lc_agent::{Prices, TokenCounts};

static COLOR: AtomicBool = AtomicBool::new(true);

/// Allows or forbids colour (`--no-color`, `NO_COLOR`), once at start.
pub(crate) fn set_color(on: bool) {
    COLOR.store(on, Ordering::Relaxed);
}

/// Whether colour is allowed.
pub(crate) fn color_allowed() -> bool {
    COLOR.load(Ordering::Relaxed)
}

/// Whether a spinner line is drawn on stderr (any screen's).
static STATUS_DRAWN: AtomicBool = AtomicBool::new(false);

/// Erases the spinner's line, if one is drawn, so that what stderr says
/// next (a warning of the logs) starts on a line of its own.
pub(crate) fn clear_status() {
    if STATUS_DRAWN.swap(false, Ordering::Relaxed) {
        eprint!("\r\x1b[2K");
        let _ = std::io::stderr().flush();
    }
}

/// Set once stdout turned out to be a closed pipe.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `text` to stdout now: the one writer of every command's stdout
/// (never `println!`, which panics on a closed pipe). A closed pipe
/// (`lc-agent tool --list | head -1`: the reader has seen enough) is not
/// an error: the rest is dropped quietly and the command ends as it
/// would have.
pub(crate) fn out(text: &str) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    if let Err(e) = written
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
}

/// [`out`] with a line end.
pub(crate) fn outln(text: &str) {
    out(&format!("{text}\n"));
}

/// A line on stderr while something slow happens outside a turn (a
/// terminal only), erased when this is dropped.
pub(crate) struct Status(bool);

impl Status {
    /// Shows `text` (dim, `…` after it) when stderr is a terminal.
    pub(crate) fn show(text: &str) -> Self {
        let shown = std::io::stderr().is_terminal();
        if shown {
            eprint!("{}", paint(color_allowed(), "2", &format!("{text}…")));
            let _ = std::io::stderr().flush();
        }
        Self(shown)
    }
}

impl Drop for Status {
    fn drop(&mut self) {
        if self.0 {
            eprint!("\r\x1b[2K");
            let _ = std::io::stderr().flush();
        }
    }
}

/// `text` in an ANSI style when `on` (`"2"` dim, `"1"` bold, `"31"` red...).
pub(crate) fn paint(on: bool, style: &str, text: &str) -> String {
    if on {
        format!("\x1b[{style}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// What the terminal can show.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Look {
    /// Render Markdown on stdout (a terminal, colour allowed).
    pub(crate) markdown: bool,
    /// Spinner and footer on stderr (a terminal).
    pub(crate) status: bool,
    /// Colour on stderr.
    pub(crate) color: bool,
    /// Nothing at all: the run's events are read by another writer
    /// (`lc-agent exec`), so neither the answer nor progress is shown.
    pub(crate) headless: bool,
}

impl Look {
    /// From the terminals at hand and the colour settings.
    pub(crate) fn detect() -> Self {
        let color = color_allowed();
        let stderr = std::io::stderr().is_terminal();
        Self {
            markdown: color && std::io::stdout().is_terminal(),
            status: stderr,
            color: color && stderr,
            headless: false,
        }
    }
}

/// Arguments as a short line: `key=value` pairs, long values cut.
pub(crate) fn short_args(args: &str) -> String {
    let text = match serde_json::from_str::<serde_json::Value>(args) {
        Ok(serde_json::Value::Object(map)) => map
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                format!("{k}={}", cut(&v, 40))
            })
            .collect::<Vec<_>>()
            .join(" "),
        _ => args.to_string(),
    };
    cut(&text, 80)
}

/// `text` on one line, at most `max` characters (`...` when cut).
pub(crate) fn cut(text: &str, max: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c == '\n' { ' ' } else { c })
        .collect();
    if one_line.chars().count() > max {
        format!(
            "{}...",
            one_line
                .chars()
                .take(max.saturating_sub(3))
                .collect::<String>()
        )
    } else {
        one_line
    }
}

/// What one turn used.
#[derive(Debug, Clone, Default)]
pub(crate) struct TurnStats {
    /// Prompt tokens, summed over the turn's model calls.
    pub(crate) input: u64,
    /// Generated tokens.
    pub(crate) output: u64,
    /// The prompt of the latest call (how full the context is).
    pub(crate) last_prompt: Option<u64>,
    /// What it cost, when every model of it has a price.
    pub(crate) cost: Option<f64>,
    /// Model calls that reported usage.
    pub(crate) calls: usize,
    /// Some of the counts are estimates (a server that reports none).
    pub(crate) estimated: bool,
}

impl TurnStats {
    /// Adds one model call.
    pub(crate) fn add(&mut self, model: &str, usage: Usage, prices: &Prices) {
        let mut counts = TokenCounts::default();
        counts += &usage;
        self.add_counts(model, &counts, prices);
        self.last_prompt = Some(usage.prompt_tokens);
    }

    /// Adds calls of `model` (their cost from the one price table,
    /// [`lc_agent::Prices`]).
    pub(crate) fn add_counts(&mut self, model: &str, counts: &TokenCounts, prices: &Prices) {
        let cost = prices.of(model).map(|p| p.cost(counts));
        self.cost = match (self.calls, self.cost, cost) {
            (0, _, cost) => cost,
            (_, Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        self.input += counts.prompt_tokens;
        self.output += counts.completion_tokens;
        self.calls += counts.calls as usize;
        self.estimated |= counts.is_estimated();
    }

    /// `1,234 in · 56 out · $0.0004 · context 12% of 8,192` (`~1,234 in`
    /// for an estimate; no usage:
    /// `no token counts from the model`).
    pub(crate) fn describe(&self, window: Option<usize>) -> String {
        if self.calls == 0 {
            return "no token counts from the model".to_string();
        }
        // `~`: the server reported no usage; the tokenizer estimated it.
        let mark = if self.estimated { "~" } else { "" };
        let mut parts = vec![
            format!("{mark}{} in", thousands(self.input)),
            format!("{} out", thousands(self.output)),
        ];
        if let Some(cost) = self.cost {
            parts.push(format!("${cost:.4}"));
        }
        if let (Some(prompt), Some(window)) = (self.last_prompt, window.filter(|w| *w > 0)) {
            parts.push(format!(
                "context {}% of {}",
                (prompt as f64 * 100.0 / window as f64).round() as u64,
                thousands(window as u64)
            ));
        }
        parts.join(" · ")
    }
}

/// `12345` as `12,345`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The usage and model of an invoked chat node.
pub(crate) fn usage_of(node: &lc_agent::NodeRef) -> Option<(String, Usage)> {
    let usage = serde_json::from_value(node.metadata_value(lc_agent::TOKEN_USAGE_KEY)?).ok()?;
    // Priced as the server named the model, else by its registered name.
    let model = node
        .metadata_value(lc_agent::RESPONSE_MODEL_KEY)
        .or_else(|| node.metadata_value("chat_model_name"))
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    Some((model, usage))
}

#[derive(Default)]
struct State {
    /// The chat node streaming, and its text so far.
    streamed: (Option<NodeId>, String),
    /// Markdown received but not rendered yet (terminal).
    markdown: String,
    /// Tool calls finished, waiting for their node's result.
    tools: HashMap<NodeId, (String, ToolStatus, Duration)>,
    /// Since when the screen waits for the model (spinner).
    waiting_since: Option<Instant>,
    /// Whether a spinner line is drawn on stderr.
    spinner_drawn: bool,
    /// What the spinner says it waits for (`thinking`, a tool's name).
    label: String,
    /// Terminal rows of the block being written, shown provisionally
    /// (erased and drawn again as more text comes).
    provisional_rows: usize,
    /// When the provisional block was drawn last.
    drawn_at: Option<Instant>,
    /// When each sub-agent (network node) was added: a `task` call lasts
    /// from there.
    sub_started: HashMap<NodeId, Instant>,
    /// The turn so far.
    turn: TurnStats,
    turn_started: Option<Instant>,
}

impl State {
    /// Erases the spinner before anything else is written.
    fn erase_spinner(&mut self) {
        if self.spinner_drawn {
            eprint!("\r\x1b[2K");
            let _ = std::io::stderr().flush();
            self.spinner_drawn = false;
            STATUS_DRAWN.store(false, Ordering::Relaxed);
        }
    }

    /// The escape codes that erase the provisional block (the cursor goes
    /// back to its first row).
    fn erase_provisional(&mut self) -> String {
        let rows = std::mem::take(&mut self.provisional_rows);
        if rows == 0 {
            String::new()
        } else {
            format!("\r\x1b[{rows}F\x1b[J")
        }
    }

    /// Draws what arrived of the answer on a Markdown terminal: whole
    /// blocks for good, the block still being written provisionally (it
    /// is redrawn in place as more comes, at most every 40 ms).
    fn draw_markdown(&mut self, look: Look, closing: bool) {
        let done = if closing {
            self.markdown.len()
        } else {
            complete_blocks(&self.markdown)
        };
        let recent = self
            .drawn_at
            .is_some_and(|t| t.elapsed() < Duration::from_millis(40));
        if done == 0 && recent && !closing {
            return;
        }
        let mut screen = self.erase_provisional();
        if done > 0 {
            let blocks: String = self.markdown.drain(..done).collect();
            if !blocks.trim().is_empty() {
                screen.push_str(&rendered(look, &blocks));
            }
        }
        if !self.markdown.trim().is_empty() {
            let (text, rows) = provisional(look, &self.markdown);
            screen.push_str(&text);
            self.provisional_rows = rows;
        }
        self.drawn_at = Some(Instant::now());
        out(&screen);
    }
}

/// The block being written, rendered, and how many terminal rows it
/// takes; a block taller than the screen shows its last rows.
fn provisional(look: Look, text: &str) -> (String, usize) {
    let (width, height) = termimad::terminal_size();
    let width = usize::from(width.max(1));
    let room = usize::from(height).saturating_sub(3).max(1);
    let rendered = rendered(look, text);
    let strip = |line: &str| {
        let mut visible = 0usize;
        let mut escape = false;
        for c in line.chars() {
            match (escape, c) {
                (false, '\x1b') => escape = true,
                (true, c) if c.is_ascii_alphabetic() => escape = false,
                (true, _) => {}
                (false, _) => visible += 1,
            }
        }
        visible
    };
    let mut lines: Vec<(&str, usize)> = rendered
        .lines()
        .map(|l| (l, strip(l).div_ceil(width).max(1)))
        .collect();
    let mut rows: usize = lines.iter().map(|(_, r)| r).sum();
    while rows > room && lines.len() > 1 {
        rows -= lines.remove(0).1;
    }
    let mut shown: String = lines.iter().map(|(l, _)| format!("{l}\n")).collect();
    if rows > room {
        // One line wider than the screen: not redrawn in place.
        shown.clear();
        rows = 0;
    }
    (shown, rows)
}

struct Inner {
    look: Look,
    net: RunnableNetwork,
    state: Mutex<State>,
    /// The main model's context window, when known.
    window: Mutex<Option<usize>>,
    /// What a cut-off answer's warning says to do.
    continue_hint: Mutex<String>,
}

/// What the screen shows of a run (see the [module docs](self)).
#[derive(Clone)]
pub(crate) struct Screen {
    inner: Arc<Inner>,
}

impl Screen {
    /// The look of this screen.
    pub(crate) fn look(&self) -> Look {
        self.inner.look
    }

    /// Whether `answer` is what the latest turn streamed (then it is on
    /// the screen already).
    pub(crate) fn showed(&self, answer: &str) -> bool {
        self.inner
            .state
            .lock()
            .map(|s| s.streamed.0.is_some() && s.streamed.1 == answer)
            .unwrap_or(false)
    }

    /// Prints the answer unless it was streamed.
    pub(crate) fn answer(&self, answer: &str) {
        if self.showed(answer) {
            return;
        }
        if self.inner.look.markdown {
            out(&rendered(self.inner.look, answer));
        } else {
            out(&format!("{answer}\n"));
        }
    }

    /// Says what to do with an answer cut off at the output limit.
    pub(crate) fn set_continue_hint(&self, hint: impl Into<String>) {
        if let Ok(mut h) = self.inner.continue_hint.lock() {
            *h = hint.into();
        }
    }

    /// The main model's context window (for the footer).
    pub(crate) fn set_context_window(&self, window: Option<usize>) {
        if let Ok(mut w) = self.inner.window.lock() {
            *w = window;
        }
    }

    /// The main model's context window, when known.
    pub(crate) fn context_window(&self) -> Option<usize> {
        self.inner.window.lock().ok().and_then(|w| *w)
    }

    /// The session's prices (its blueprint's over the price file over
    /// the built-ins), read now.
    pub(crate) fn prices(&self) -> Prices {
        lc_agent_deepagent::session_prices(&self.inner.net)
    }

    /// A turn begins (the footer counts from here).
    pub(crate) fn begin_turn(&self) {
        if let Ok(mut s) = self.inner.state.lock() {
            s.turn = TurnStats::default();
            s.turn_started = Some(Instant::now());
        }
    }

    /// A turn ended: the footer on stderr (terminal only).
    pub(crate) fn end_turn(&self) {
        let Ok(mut s) = self.inner.state.lock() else {
            return;
        };
        s.waiting_since = None;
        s.erase_spinner();
        if !self.inner.look.status {
            return;
        }
        let elapsed = s
            .turn_started
            .take()
            .map(|t| format!(" · {:.1} s", t.elapsed().as_secs_f64()))
            .unwrap_or_default();
        let line = format!("  ─ {}{elapsed}", s.turn.describe(self.context_window()));
        eprintln!("{}", paint(self.inner.look.color, "2", &line));
    }

    /// Stops the spinner (before a question is asked).
    pub(crate) fn pause(&self) {
        if let Ok(mut s) = self.inner.state.lock() {
            s.waiting_since = None;
            s.erase_spinner();
        }
    }

    fn on_event(&self, event: &NetworkEvent) {
        let inner = &self.inner;
        let look = inner.look;
        let Ok(mut s) = inner.state.lock() else {
            return;
        };
        match event {
            NetworkEvent::InvokeStarted => s.waiting_since = Some(Instant::now()),
            NetworkEvent::Delta {
                node_id,
                delta: StreamDelta::Text(text),
            } if !text.is_empty() => {
                s.waiting_since = None;
                s.erase_spinner();
                if s.streamed.0 != Some(*node_id) {
                    s.streamed = (Some(*node_id), String::new());
                    s.markdown.clear();
                }
                s.streamed.1.push_str(text);
                if look.markdown {
                    s.markdown.push_str(text);
                    s.draw_markdown(look, false);
                } else {
                    out(&rendered(look, text));
                }
            }
            NetworkEvent::ToolCallStarted { name, .. } => {
                // The spinner stays, saying what runs.
                s.erase_spinner();
                s.label = format!("running {name}");
                s.waiting_since = Some(Instant::now());
            }
            NetworkEvent::NodeAdded { node_id } => {
                let sub = inner.net.node(*node_id).and_then(|n| {
                    n.downcast::<lc_agent::NetworkNode>()
                        .map(|n| n.network().clone())
                });
                if let Some(sub) = sub {
                    s.sub_started.insert(*node_id, Instant::now());
                    watch_sub_agent(Arc::downgrade(&self.inner), &sub, 1);
                }
            }
            NetworkEvent::ToolCallFinished {
                node_id,
                name,
                status,
                elapsed,
                ..
            } => {
                if inner.net.node(*node_id).is_some() {
                    // A `task` result follows its sub-agent's node: the
                    // call lasted as long as the sub-agent ran.
                    let sub = inner
                        .net
                        .parents(*node_id)
                        .iter()
                        .find_map(|p| s.sub_started.remove(&p.id()));
                    let elapsed = sub.map_or(*elapsed, |t| t.elapsed());
                    s.tools.insert(*node_id, (name.clone(), *status, elapsed));
                } else {
                    s.erase_spinner();
                    eprintln!("{}", tool_line(look, name, *status, *elapsed, None));
                }
            }
            NetworkEvent::NodeInvoked { node_id } => {
                s.label = "thinking".to_string();
                if s.streamed.0 == Some(*node_id) {
                    if look.markdown {
                        s.draw_markdown(look, true);
                    } else {
                        out("\n");
                    }
                }
                let node = inner.net.node(*node_id);
                if let Some((name, status, elapsed)) = s.tools.remove(node_id) {
                    s.erase_spinner();
                    eprintln!("{}", tool_line(look, &name, status, elapsed, node.as_ref()));
                }
                if let Some((model, usage)) = node
                    .as_ref()
                    .filter(|n| n.kind() == lc_agent::ChatNode::KIND)
                    .and_then(usage_of)
                {
                    s.turn.add(
                        &model,
                        usage,
                        &lc_agent_deepagent::session_prices(&inner.net),
                    );
                }
                s.waiting_since = Some(Instant::now());
            }
            NetworkEvent::InvokeFinished { .. } => {
                s.waiting_since = None;
                s.erase_spinner();
            }
            NetworkEvent::SummaryWritten {
                node_id,
                kept,
                summarized,
            } => {
                // One asked for (`/compact`) is said by the command, once.
                let asked = inner
                    .net
                    .node(*node_id)
                    .and_then(|n| n.metadata_value("trigger"))
                    .is_some_and(|t| t == "asked");
                if asked {
                    return;
                }
                s.erase_spinner();
                eprintln!("  summary written ({summarized} messages summarized, {kept} kept)");
            }
            NetworkEvent::AnswerCutOff { .. } => {
                s.erase_spinner();
                let hint = inner
                    .continue_hint
                    .lock()
                    .map(|h| h.clone())
                    .unwrap_or_default();
                eprintln!(
                    "{} the answer was cut off: the model reached its output limit{hint}",
                    paint(look.color, "33", "warning:")
                );
            }
            NetworkEvent::EmptyAnswer { .. } => {
                s.erase_spinner();
                eprintln!(
                    "{} the model answered with nothing (no text and no tool call)",
                    paint(look.color, "33", "warning:")
                );
            }
            NetworkEvent::HookRan {
                event,
                command,
                outcome,
                message,
                ..
            } => {
                if let Some(line) = hook_line(look, event, command, outcome, message) {
                    s.erase_spinner();
                    eprintln!("{line}");
                }
            }
            _ => {}
        }
    }
}

/// What the terminal says of a hook's run: a failure or a timeout as a
/// warning, a block with its reason; nothing of a hook that let things be.
pub(crate) fn hook_line(
    look: Look,
    event: &str,
    command: &str,
    outcome: &str,
    message: &str,
) -> Option<String> {
    let (label, what) = match outcome {
        "failed" => ("warning:", "failed"),
        "timed_out" => ("warning:", "timed out"),
        "blocked" => ("hook:", "blocked"),
        _ => return None,
    };
    Some(format!(
        "{} {event} hook `{command}` {what}: {message}",
        paint(look.color, "33", label)
    ))
}

/// `  read_file ok (1.2 ms)  file_path=/a.txt`, and the reason of an error.
fn tool_line(
    look: Look,
    name: &str,
    status: ToolStatus,
    elapsed: Duration,
    node: Option<&lc_agent::NodeRef>,
) -> String {
    let ok = status == ToolStatus::Ok;
    let mark = if ok {
        paint(look.color, "32", "ok")
    } else {
        paint(look.color, "31", "error")
    };
    let mut line = format!("  {name} {mark} ({:.1} ms)", elapsed.as_secs_f64() * 1000.0);
    let call = node.and_then(|n| {
        n.downcast::<lc_agent::ToolNode>()
            .map(|t| t.tool_call.arguments.clone())
    });
    if let Some(args) = call.filter(|a| !a.trim().is_empty() && a.trim() != "{}") {
        line.push_str("  ");
        line.push_str(&paint(look.color, "2", &short_args(&args)));
    }
    if !ok && let Some(output) = node.and_then(|n| n.output()) {
        let reason = output.text().trim();
        let reason = reason.strip_prefix("Error:").unwrap_or(reason).trim();
        if !reason.is_empty() {
            line.push_str(" — ");
            line.push_str(&cut(reason, 100));
        }
    }
    line
}

/// How many bytes at the start of `text` are whole Markdown blocks: up to
/// a blank line outside a code fence, or a closing fence.
fn complete_blocks(text: &str) -> usize {
    let mut done = 0;
    let mut pos = 0;
    let mut fence = false;
    for line in text.split_inclusive('\n') {
        if !line.ends_with('\n') {
            break;
        }
        pos += line.len();
        let trimmed = line.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = !fence;
            if !fence {
                done = pos;
            }
        } else if !fence && trimmed.is_empty() {
            done = pos;
        }
    }
    done
}

/// An answer (or a chunk of one) as stdout shows it with this look:
/// rendered Markdown on a colour terminal, else exactly the text.
pub(crate) fn rendered(look: Look, text: &str) -> String {
    if look.markdown {
        render_markdown(text)
    } else {
        text.to_string()
    }
}

/// Markdown for the terminal (termimad: headings, emphasis, lists,
/// tables), fenced code of a known language highlighted (syntect, see
/// [`crate::highlight`]).
pub(crate) fn render_markdown(text: &str) -> String {
    let mut rendered = String::new();
    let truecolor = crate::highlight::truecolor();
    for segment in crate::highlight::split_fences(text) {
        match segment {
            Segment::Prose(prose) => rendered.push_str(&render_prose(prose)),
            Segment::Code { lang, code, raw } => {
                match crate::highlight::highlight(lang, code, truecolor) {
                    Some(code) => rendered.push_str(&code),
                    None => rendered.push_str(&render_prose(raw)),
                }
            }
        }
    }
    if !rendered.ends_with('\n') {
        rendered.push('\n');
    }
    rendered
}

/// Markdown through termimad.
fn render_prose(text: &str) -> String {
    let skin = termimad::MadSkin::default();
    let width = termimad::terminal_size().0.clamp(20, 120) as usize;
    skin.text(text, Some(width)).to_string()
}

/// Watches the network with this look: streams its answers and reports
/// its tool calls (see the [module docs](self)).
pub(crate) fn show_progress_with(net: &RunnableNetwork, look: Look) -> Screen {
    net.set_streaming(true);
    let screen = Screen {
        inner: Arc::new(Inner {
            look,
            net: net.clone(),
            state: Mutex::new(State::default()),
            window: Mutex::new(None),
            continue_hint: Mutex::new(String::new()),
        }),
    };
    if look.headless {
        return screen;
    }
    let weak: Weak<Inner> = Arc::downgrade(&screen.inner);
    net.on_event(move |event| {
        if let Some(inner) = weak.upgrade() {
            Screen { inner }.on_event(event);
        }
    });
    if look.status {
        spin(Arc::downgrade(&screen.inner));
    }
    screen
}

/// Shows what a sub-agent (`depth` levels down) does: the spinner names
/// its tool while it runs, and a line per finished call, indented under
/// the `task` that runs it.
fn watch_sub_agent(weak: Weak<Inner>, sub: &RunnableNetwork, depth: usize) {
    sub.on_event(move |event| {
        let Some(inner) = weak.upgrade() else {
            return;
        };
        let look = inner.look;
        match event {
            NetworkEvent::ToolCallStarted { name, .. } => {
                if let Ok(mut s) = inner.state.lock() {
                    s.erase_spinner();
                    s.label = format!("task › {name}");
                    s.waiting_since = Some(Instant::now());
                }
            }
            NetworkEvent::ToolCallFinished {
                name,
                status,
                elapsed,
                ..
            } => {
                if let Ok(mut s) = inner.state.lock() {
                    s.erase_spinner();
                    s.label = "task".to_string();
                    let line = tool_line(look, name, *status, *elapsed, None);
                    eprintln!("{}  ↳ {}", "  ".repeat(depth), line.trim_start());
                }
            }
            _ => {}
        }
    });
}

/// Draws the spinner while the screen waits for the model (after a
/// moment, so quick steps do not flicker).
fn spin(weak: Weak<Inner>) {
    const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
    std::thread::spawn(move || {
        let mut frame = 0;
        loop {
            std::thread::sleep(Duration::from_millis(100));
            let Some(inner) = weak.upgrade() else {
                return;
            };
            let Ok(mut s) = inner.state.lock() else {
                return;
            };
            match s.waiting_since {
                Some(since) if since.elapsed() >= Duration::from_millis(300) => {
                    frame = (frame + 1) % FRAMES.len();
                    let label = if s.label.is_empty() {
                        "thinking"
                    } else {
                        s.label.as_str()
                    };
                    let text = format!(
                        "{} {label} {:.1}s",
                        FRAMES[frame],
                        since.elapsed().as_secs_f64()
                    );
                    eprint!("\r\x1b[2K{}", paint(inner.look.color, "2", &text));
                    let _ = std::io::stderr().flush();
                    s.spinner_drawn = true;
                    STATUS_DRAWN.store(true, Ordering::Relaxed);
                }
                _ => {}
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_end_at_blank_lines_and_closed_fences() {
        assert_eq!(complete_blocks("# Title\n\nmore"), "# Title\n\n".len());
        assert_eq!(complete_blocks("```\ncode\n\nstill\n"), 0);
        let fenced = "```rust\nfn f() {}\n```\n";
        assert_eq!(complete_blocks(fenced), fenced.len());
        assert_eq!(complete_blocks("no newline yet"), 0);
    }

    const ANSWER: &str =
        "Here **it** is:\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\nDone.\n";

    #[test]
    fn a_rust_block_is_coloured_on_a_colour_terminal_and_never_without_colour() {
        let on = Look {
            markdown: true,
            status: true,
            color: true,
            headless: false,
        };
        let out = rendered(on, ANSWER);
        // The colour sequences are inside the code, which reads as written.
        let code = out
            .split_once("fn")
            .map(|(_, rest)| rest)
            .and_then(|rest| rest.split_once("Done"))
            .map(|(code, _)| code)
            .unwrap();
        assert!(code.contains("\x1b[0;38;"), "{out:?}");
        let plain = regex::Regex::new("\x1b\\[[0-9;]*m")
            .unwrap()
            .replace_all(&out, "");
        assert!(
            plain.contains("fn main() {\n    println!(\"hi\");\n}\n"),
            "{plain:?}"
        );
        assert!(!plain.contains("```"), "{plain:?}");
        // Colour off (piped, NO_COLOR, --no-color): exactly the text.
        for off in [
            Look::default(),
            Look {
                markdown: false,
                status: true,
                color: true,
                headless: false,
            },
        ] {
            assert_eq!(rendered(off, ANSWER), ANSWER);
        }
        // A language syntect does not know keeps termimad's code block.
        let other = rendered(on, "```klingon\nqapla'\n```\n");
        assert!(!other.contains("\x1b[0;38;"), "{other:?}");
        assert!(other.contains("qapla'"), "{other:?}");
    }

    #[test]
    fn numbers_and_arguments_read_short() {
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(12), "12");
        assert_eq!(
            short_args(r#"{"file_path": "/a.txt", "limit": 5}"#),
            "file_path=/a.txt limit=5"
        );
        let mut stats = TurnStats::default();
        let usage = Usage {
            prompt_tokens: 1000,
            completion_tokens: 50,
            total_tokens: 1050,
            ..Usage::default()
        };
        stats.add("gpt-4o-mini", usage, &Prices::built_in());
        assert_eq!(
            stats.describe(Some(8192)),
            "1,000 in · 50 out · $0.0002 · context 12% of 8,192"
        );
        let mut unknown = TurnStats::default();
        unknown.add("SmolLM2", usage, &Prices::built_in());
        assert_eq!(unknown.describe(None), "1,000 in · 50 out");
    }
}

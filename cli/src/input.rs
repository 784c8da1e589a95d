//! Where the person's lines come from: [`Input`], read piped (one line of
//! stdin per read, the prompt on stderr — exactly as before) or edited on
//! a terminal ([`Editor`], rustyline).
//!
//! ```text
//!  Input::line(prompt) ─┬─ Piped   stdin lines (scripts, tests)
//!                       └─ Editor  line editing, history per user
//!                                  ($LC_AGENT_HOME/history/<user>), Ctrl-R search,
//!                                  Tab completes /commands and paths under --root,
//!                                  a line ending in `\` or Alt-Enter goes on below
//! ```

use std::borrow::Cow;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::FileHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Cmd, Config, EditMode, KeyCode, KeyEvent, Modifiers};

/// What reading a line gave.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Read {
    /// A line (multi-line input joined by `\n`).
    Line(String),
    /// Ctrl-C at the prompt.
    Interrupted,
    /// The end of input (Ctrl-D, or stdin closed).
    End,
}

/// A source of the person's lines.
pub(crate) trait Input {
    /// Shows `prompt` and reads one line.
    fn read(&mut self, prompt: &str) -> Read;

    /// Shows `prompt` and reads one line; `None` when there is none
    /// (end of input, or Ctrl-C at an approval question).
    fn line(&mut self, prompt: &str) -> Option<String> {
        match self.read(prompt) {
            Read::Line(line) => Some(line),
            Read::Interrupted | Read::End => None,
        }
    }

    /// Whether a person edits the lines on a terminal.
    fn interactive(&self) -> bool {
        false
    }

    /// Keeps `line` in the history (the editor's; piped input has none).
    fn remember(&mut self, _line: &str) {}

    /// Puts `text` into the next prompt to edit or send (a message
    /// `/rewind` took back; piped input has no prompt to fill).
    fn prefill(&mut self, _text: &str) {}
}

/// Lines of stdin, the prompt on stderr.
pub(crate) struct Piped<I>(pub(crate) I);

impl<I: Iterator<Item = std::io::Result<String>>> Input for Piped<I> {
    fn read(&mut self, prompt: &str) -> Read {
        eprint!("{prompt}");
        let _ = std::io::stderr().flush();
        match self.0.next() {
            Some(Ok(line)) => Read::Line(line),
            _ => Read::End,
        }
    }
}

/// The line editor of an interactive chat.
pub(crate) struct Editor {
    editor: rustyline::Editor<Helper, FileHistory>,
    history: Option<PathBuf>,
    /// What the next prompt starts with.
    initial: Option<String>,
}

impl Editor {
    /// An editor with `user`'s history, completing the slash `commands`
    /// (name, help) and paths under `root`.
    pub(crate) fn new(
        user: &str,
        root: Option<PathBuf>,
        commands: &'static [(&'static str, &'static str)],
    ) -> rustyline::Result<Self> {
        let config = Config::builder()
            .edit_mode(EditMode::Emacs)
            .auto_add_history(false)
            .max_history_size(2000)?
            .history_ignore_dups(true)?
            .completion_type(rustyline::CompletionType::List)
            // stdout piped (`chat | tee log`): the prompt and the editing
            // go to the terminal, never into the piped answers.
            .behavior(if std::io::stdout().is_terminal() {
                rustyline::config::Behavior::Stdio
            } else {
                rustyline::config::Behavior::PreferTerm
            })
            .build();
        let mut editor = rustyline::Editor::with_config(config)?;
        editor.set_helper(Some(Helper { root, commands }));
        editor.bind_sequence(
            KeyEvent(KeyCode::Enter, Modifiers::ALT),
            rustyline::EventHandler::Simple(Cmd::Newline),
        );
        let history = history_file(user);
        if let Some(path) = &history {
            // A missing file is a first chat.
            let _ = editor.load_history(path);
        }
        Ok(Self {
            editor,
            history,
            initial: None,
        })
    }

    /// Adds `line` to the history and saves it (a failure is a warning).
    fn add_to_history(&mut self, line: &str) {
        let _ = self.editor.add_history_entry(line);
        if let Some(path) = &self.history {
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            if let Err(e) = self.editor.save_history(path) {
                tracing::warn!(file = %path.display(), error = %e, "the chat history could not be saved");
            }
        }
    }
}

impl Input for Editor {
    fn read(&mut self, prompt: &str) -> Read {
        let read = match self.initial.take() {
            Some(text) => self.editor.readline_with_initial(prompt, (&text, "")),
            None => self.editor.readline(prompt),
        };
        match read {
            Ok(line) => Read::Line(line.replace("\\\n", "\n")),
            Err(ReadlineError::Interrupted) => Read::Interrupted,
            Err(ReadlineError::Eof) => Read::End,
            Err(e) => {
                tracing::warn!(error = %e, "reading the terminal failed");
                Read::End
            }
        }
    }

    fn interactive(&self) -> bool {
        true
    }

    fn remember(&mut self, line: &str) {
        self.add_to_history(line);
    }

    fn prefill(&mut self, text: &str) {
        self.initial = Some(text.to_string());
    }
}

/// `$LC_AGENT_HOME/history/<user>`, else `~/.lc-agent/history/<user>`.
fn history_file(user: &str) -> Option<PathBuf> {
    let home = std::env::var_os("LC_AGENT_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".lc-agent")))?;
    let safe: String = user
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Some(home.join("history").join(safe))
}

/// Completion, multi-line input.
struct Helper {
    root: Option<PathBuf>,
    /// The slash commands (name, help) a leading `/` completes to.
    commands: &'static [(&'static str, &'static str)],
}

impl Completer for Helper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        let start = before
            .rfind(|c: char| c.is_whitespace())
            .map_or(0, |i| i + 1);
        let word = &before[start..];
        if start == 0 && word.starts_with('/') {
            let pairs = self
                .commands
                .iter()
                .filter(|(name, _)| name.starts_with(word))
                .map(|(name, _)| Pair {
                    display: (*name).to_string(),
                    replacement: format!("{name} "),
                })
                .collect();
            return Ok((0, pairs));
        }
        let Some(root) = &self.root else {
            return Ok((pos, Vec::new()));
        };
        Ok((start, complete_path(root, word)))
    }
}

/// Paths under `root` that start with `word` (a leading `/` is the root).
fn complete_path(root: &Path, word: &str) -> Vec<Pair> {
    let (dir, stem) = match word.rfind('/') {
        Some(i) => (&word[..=i], &word[i + 1..]),
        None => ("", word),
    };
    let Ok(entries) = std::fs::read_dir(root.join(dir.trim_start_matches('/'))) else {
        return Vec::new();
    };
    let mut pairs: Vec<Pair> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with(stem) || (name.starts_with('.') && !stem.starts_with('.')) {
                return None;
            }
            let slash = if entry.path().is_dir() { "/" } else { "" };
            Some(Pair {
                display: format!("{name}{slash}"),
                replacement: format!("{dir}{name}{slash}"),
            })
        })
        .collect();
    pairs.sort_by(|a, b| a.display.cmp(&b.display));
    pairs
}

impl Validator for Helper {
    /// A line ending in `\` goes on below.
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        Ok(if ctx.input().ends_with('\\') {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

impl Hinter for Helper {
    type Hint = String;
}

impl Highlighter for Helper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        _default: bool,
    ) -> Cow<'b, str> {
        Cow::Borrowed(prompt)
    }
}

impl rustyline::Helper for Helper {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_under_the_root_complete() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
        std::fs::write(dir.path().join("README.md"), "").unwrap();
        let names = |word| {
            complete_path(dir.path(), word)
                .into_iter()
                .map(|p| p.replacement)
                .collect::<Vec<_>>()
        };
        assert_eq!(names("sr"), ["src/"]);
        assert_eq!(names("src/m"), ["src/main.rs"]);
        assert_eq!(names("/RE"), ["/README.md"]);
    }
}

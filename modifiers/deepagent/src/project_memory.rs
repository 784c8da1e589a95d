//! Project memory files: the standing instructions a repository keeps for
//! agents (`AGENTS.md`, as Codex reads it; `CLAUDE.md`, as Claude Code
//! does), put in the system prompt.
//!
//! ```text
//!  <git root>/AGENTS.md                    ┐ found: the workspace root, then each parent up to
//!  <git root>/pkg/AGENTS.md                │ the repository root (the nearest directory holding
//!  <git root>/pkg/app/AGENTS.md  (root)    │ `.git`; without one, the root alone), then the user's
//!  ~/.config/lc-agent/AGENTS.md            ┘ ($XDG_CONFIG_HOME/lc-agent), each of the names in order
//!        │ on_begin_invoke: stat each; read again only what changed (modified time, size)
//!        ▼
//!  system prompt: "## Project memory", nearest first, each under its path, within a token
//!                 budget (the rest truncated, or left out, with a note that says so)
//! ```
//!
//! Decisions:
//!
//! - The project's files come from a *directory* workspace only (its root
//!   and the parents up to the repository root); the session's own files
//!   are no project. The user's files are read with any workspace.
//! - Nearest first: the workspace root's file opens the section and is
//!   the last to be cut when the budget runs out; where two files disagree,
//!   the section tells the model the nearer one wins.
//! - A file inside the workspace is shown by its path in the file tools
//!   (`/AGENTS.md`), so the model may update it with `edit_file` or
//!   `write_file` (approvals and path rules apply as to any other file);
//!   the others are shown by their path on disk, which the model cannot
//!   write.
//! - Files are read again at the start of a turn when their modified time
//!   or size changed, so an edit (by the model or a person) shows at the
//!   next turn, not in the middle of one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use lc_agent::{ChatRequest, ModelRoutes, NetworkModifier, NodeRef, Result, RunnableNetwork};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::tokens::{counter_for_model, ApproxCounter, TokenCounter};

/// The heading of the system-prompt section.
pub(crate) const PROJECT_MEMORY_HEADING: &str = "## Project memory";

/// The names read when a blueprint names none.
pub(crate) const DEFAULT_NAMES: &[&str] = &["AGENTS.md"];

/// The section's token budget when a blueprint gives none.
pub(crate) const DEFAULT_MAX_TOKENS: usize = 8_000;

/// More than this of one file is never read (the budget cuts it anyway).
const READ_CAP_BYTES: u64 = 1 << 20;

/// The opening of the section.
const INTRO: &str = "Standing instructions for this project, from its memory files \
(nearest first; where they disagree, the nearer file wins). Follow them. When the user asks you \
to remember something for this project, or an instruction here is out of date, update the file \
with the file tools (a file shown by a path outside the workspace is read-only to you).";

/// Project memory in a blueprint: `project_memory = ["AGENTS.md",
/// "CLAUDE.md"]` (the names), `project_memory = false` (off), or a table:
///
/// ```toml
/// [project_memory]
/// files = ["AGENTS.md", "CLAUDE.md"]   # default ["AGENTS.md"]
/// max_tokens = 4000                     # default 8000
/// enabled = true                        # default; `--no-project-memory` says false
/// ```
///
/// On by default: a blueprint that says nothing reads `AGENTS.md`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "ProjectMemoryRepr")]
pub struct ProjectMemorySpec {
    /// Whether the files are read.
    pub enabled: bool,
    /// The file names looked for in each directory, in this order.
    pub files: Vec<String>,
    /// The section's budget in tokens (default 8000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<usize>,
}

impl Default for ProjectMemorySpec {
    fn default() -> Self {
        Self {
            enabled: true,
            files: DEFAULT_NAMES.iter().map(|n| (*n).to_string()).collect(),
            max_tokens: None,
        }
    }
}

impl ProjectMemorySpec {
    /// Whether it is the default (left out of a saved blueprint).
    pub(crate) fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// The shapes a blueprint may write.
#[derive(Deserialize)]
#[serde(untagged)]
enum ProjectMemoryRepr {
    On(bool),
    Names(Vec<String>),
    Table {
        #[serde(default = "yes")]
        enabled: bool,
        #[serde(default)]
        files: Option<Vec<String>>,
        #[serde(default)]
        max_tokens: Option<usize>,
    },
}

fn yes() -> bool {
    true
}

impl From<ProjectMemoryRepr> for ProjectMemorySpec {
    fn from(repr: ProjectMemoryRepr) -> Self {
        let default = Self::default();
        match repr {
            ProjectMemoryRepr::On(enabled) => Self { enabled, ..default },
            ProjectMemoryRepr::Names(files) => Self { files, ..default },
            ProjectMemoryRepr::Table {
                enabled,
                files,
                max_tokens,
            } => Self {
                enabled,
                files: files.unwrap_or(default.files),
                max_tokens,
            },
        }
    }
}

/// One file read.
#[derive(Debug, Clone)]
struct Read {
    modified: Option<SystemTime>,
    len: u64,
    text: String,
}

/// Puts the project's memory files in the system prompt (see the module
/// docs of `project_memory.rs`).
///
/// ```
/// use lc_agent::{Attachments, HumanNode, RunnableNetwork, ScriptedChatModel};
/// use lc_agent_deepagent::ProjectMemory;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("AGENTS.md"), "Run `cargo fmt` before you commit.").unwrap();
/// let net = RunnableNetwork::builder().default_node("chat").chat_model("m")
///     .model("m", ScriptedChatModel::new(["ok"])).build();
/// let memory = ProjectMemory::new(["AGENTS.md"]).root(dir.path()).user_dir(None);
/// net.add_modifier(memory.clone()).unwrap();
/// { let _s = net.enter(); HumanNode::new("hi"); }
/// net.invoke().await.unwrap();
/// assert!(memory.section().unwrap().contains("Run `cargo fmt` before you commit."));
/// # });
/// ```
#[derive(Clone)]
pub struct ProjectMemory {
    names: Vec<String>,
    max_tokens: usize,
    root: Option<PathBuf>,
    user_dir: Option<PathBuf>,
    read: Arc<Mutex<HashMap<PathBuf, Read>>>,
    section: Arc<Mutex<Option<String>>>,
}

impl std::fmt::Debug for ProjectMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProjectMemory")
            .field("names", &self.names)
            .field("max_tokens", &self.max_tokens)
            .field("root", &self.root)
            .field("user_dir", &self.user_dir)
            .finish_non_exhaustive()
    }
}

impl ProjectMemory {
    /// Looks for these file names (in this order in each directory), in
    /// the user's configuration directory (`$XDG_CONFIG_HOME/lc-agent`,
    /// else `~/.config/lc-agent`) until [`root`](Self::root) adds a
    /// project.
    pub fn new<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
        Self {
            names: names.into_iter().map(Into::into).collect(),
            max_tokens: DEFAULT_MAX_TOKENS,
            root: None,
            user_dir: user_config_dir(),
            read: Arc::default(),
            section: Arc::default(),
        }
    }

    /// The memory a blueprint describes, for a workspace rooted at `root`
    /// (`None`: the session's own files, no project).
    pub(crate) fn from_spec(spec: &ProjectMemorySpec, root: Option<&Path>) -> Self {
        let mut memory = Self::new(spec.files.iter().cloned());
        if let Some(tokens) = spec.max_tokens {
            memory = memory.max_tokens(tokens);
        }
        if let Some(root) = root {
            memory = memory.root(root);
        }
        memory
    }

    /// The workspace root: its files (shown by their path in the file
    /// tools), then its parents' up to the repository root.
    #[must_use]
    pub fn root(mut self, root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        self.root = Some(std::fs::canonicalize(&root).unwrap_or(root));
        self
    }

    /// The user's files from `dir` instead of the configuration directory;
    /// `None`: no user files (the project's only).
    #[must_use]
    pub fn user_dir(mut self, dir: impl Into<Option<PathBuf>>) -> Self {
        self.user_dir = dir.into();
        self
    }

    /// The section's budget in tokens (default 8000).
    #[must_use]
    pub fn max_tokens(mut self, tokens: usize) -> Self {
        self.max_tokens = tokens;
        self
    }

    /// The section the latest turn sent (`None`: no file found).
    pub fn section(&self) -> Option<String> {
        self.section.lock().clone()
    }

    /// The directories looked in, nearest first: the root, its parents up
    /// to the repository root, then the user's directory.
    fn directories(&self) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        if let Some(root) = &self.root {
            let repository = root.ancestors().find(|d| d.join(".git").exists());
            match repository {
                Some(top) => {
                    for dir in root.ancestors() {
                        dirs.push(dir.to_path_buf());
                        if dir == top {
                            break;
                        }
                    }
                }
                None => dirs.push(root.clone()),
            }
        }
        if let Some(user) = &self.user_dir
            && !dirs.contains(user)
        {
            dirs.push(user.clone());
        }
        dirs
    }

    /// How a file is named in the prompt: by its path in the file tools
    /// when it is in the workspace, else by its path on disk.
    fn shown(&self, file: &Path) -> String {
        match self.root.as_deref().and_then(|r| file.strip_prefix(r).ok()) {
            Some(inside) => format!("/{}", inside.to_string_lossy().replace('\\', "/")),
            None => file.display().to_string(),
        }
    }

    /// Reads what changed since the last turn; the files found, nearest
    /// first.
    fn refresh(&self) -> Vec<(PathBuf, String)> {
        let mut found = Vec::new();
        let mut read = self.read.lock();
        let mut seen = std::collections::HashSet::new();
        for dir in self.directories() {
            for name in &self.names {
                let file = dir.join(name);
                let Ok(meta) = std::fs::metadata(&file) else {
                    read.remove(&file);
                    continue;
                };
                if !meta.is_file() {
                    continue;
                }
                // One file under two names (a case-insensitive disk, a link).
                let canonical = std::fs::canonicalize(&file).unwrap_or_else(|_| file.clone());
                if !seen.insert(canonical) {
                    continue;
                }
                let modified = meta.modified().ok();
                let fresh = read
                    .get(&file)
                    .is_some_and(|r| r.modified == modified && r.len == meta.len());
                if !fresh {
                    match read_capped(&file) {
                        Ok(text) => {
                            tracing::debug!(file = %file.display(), "project memory file read");
                            read.insert(
                                file.clone(),
                                Read {
                                    modified,
                                    len: meta.len(),
                                    text,
                                },
                            );
                        }
                        Err(e) => {
                            tracing::warn!(file = %file.display(), "cannot read a project memory file: {e}");
                            read.remove(&file);
                            continue;
                        }
                    }
                }
                if let Some(r) = read.get(&file) {
                    found.push((file, r.text.clone()));
                }
            }
        }
        found
    }
}

/// `$XDG_CONFIG_HOME/lc-agent`, else `~/.config/lc-agent`.
fn user_config_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .map(|d| d.join("lc-agent"))
}

/// A file's text, at most [`READ_CAP_BYTES`] of it.
fn read_capped(file: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(file)?
        .take(READ_CAP_BYTES)
        .read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(text.strip_prefix('\u{feff}').unwrap_or(&text).to_string())
}

/// The longest run of whole lines of `text` within `tokens`.
fn lines_within(text: &str, tokens: usize, counter: &dyn TokenCounter) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let (mut low, mut high) = (0, lines.len());
    while low < high {
        let mid = (low + high).div_ceil(2);
        if counter.count(&lines[..mid].concat()) <= tokens {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    lines[..low].concat()
}

/// The section for `files` (shown name, text), nearest first, within
/// `budget` tokens of file text (`None` when there are no files).
pub(crate) fn project_memory_section(
    files: &[(String, String)],
    budget: usize,
    counter: &dyn TokenCounter,
) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let mut out = format!("{PROJECT_MEMORY_HEADING}\n\n{INTRO}");
    let mut left = budget;
    let mut omitted = Vec::new();
    for (shown, text) in files {
        let text = text.trim_end();
        if left == 0 {
            omitted.push(shown.as_str());
            continue;
        }
        let tokens = counter.count(text);
        out.push_str(&format!("\n\n### `{shown}`\n\n"));
        if tokens <= left {
            out.push_str(text);
            left -= tokens;
        } else {
            let part = lines_within(text, left, counter);
            out.push_str(part.trim_end());
            out.push_str(&format!(
                "\n\n[truncated: the project memory budget ({budget} tokens) holds about {} of \
                 this file's {tokens} tokens; read the file for the rest]",
                counter.count(&part)
            ));
            left = 0;
        }
    }
    if !omitted.is_empty() {
        out.push_str(&format!(
            "\n\n[left out, over the project memory budget ({budget} tokens): {}]",
            omitted
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Some(out)
}

#[async_trait]
impl NetworkModifier for ProjectMemory {
    fn id(&self) -> &str {
        "project_memory"
    }

    async fn on_begin_invoke(&self, network: &RunnableNetwork) -> Result<()> {
        let this = self.clone();
        let model = network.chat_model_name().unwrap_or_default();
        // Reading files and (the first time it counts) loading the
        // tokenizer block.
        let section = tokio::task::spawn_blocking(move || {
            let files: Vec<(String, String)> = this
                .refresh()
                .into_iter()
                .map(|(file, text)| (this.shown(&file), text))
                .collect();
            if files.is_empty() {
                return None;
            }
            // A byte-level token stands for at least one byte: files whose
            // bytes fit the budget fit it in tokens, the section shows no
            // count, and the tokenizer need not load (a fraction of a
            // second) to say so.
            let bytes: usize = files.iter().map(|(_, text)| text.trim_end().len()).sum();
            if bytes <= this.max_tokens {
                return project_memory_section(&files, this.max_tokens, &ApproxCounter);
            }
            project_memory_section(&files, this.max_tokens, &*counter_for_model(&model))
        })
        .await
        .unwrap_or_default();
        *self.section.lock() = section;
        Ok(())
    }

    async fn on_chat_request(
        &self,
        _network: &RunnableNetwork,
        _node: &NodeRef,
        request: &mut ChatRequest,
    ) -> Result<()> {
        if let Some(section) = self.section.lock().clone() {
            request.system.push(section);
        }
        Ok(())
    }
}

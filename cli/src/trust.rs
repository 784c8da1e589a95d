//! Trusting a project before its code runs: the files of a project that
//! make lc-agent run something on the host are used only once the user
//! trusts that project (as Claude Code's "trust this folder" and Codex's
//! trusted projects).
//!
//! ```text
//!  <project>/.lc-agent/settings.json   hooks (commands run on the host)
//!  <project>/.mcp.json                 MCP servers (stdio commands)
//!  <project>/.lc-agent/agent.toml|json the project's blueprint (its workspace, shell, sandbox)
//!     │ project_trusted(dir, --trust-project)
//!     ▼
//!  trusted: remembered in $LC_AGENT_HOME/trusted-projects.json
//!           (canonical path → SHA-256 of those files); a change asks again
//!  else:    --trust-project (remembered), or a y/N question on a terminal,
//!           or a `warning:` naming the files and how to trust them — the
//!           run goes on without them
//! ```
//!
//! The user's own files (`~/.config/lc-agent/settings.json`, `--settings`,
//! `--agent`, `--mcp`) need no trust: the user named them. The question is
//! asked once per project per process; `exec`, `mcp` and `acp` never ask
//! (their stdin is not a person's), see [`no_questions`].

use std::collections::HashMap;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The files of a project that can run code, with what each brings.
pub(crate) const PROJECT_FILES: &[(&str, &str)] = &[
    (".lc-agent/settings.json", "hooks"),
    (".mcp.json", "MCP servers"),
    (".lc-agent/agent.toml", "blueprint"),
    (".lc-agent/agent.json", "blueprint"),
];

/// Where trust is remembered, under `$LC_AGENT_HOME` (else `~/.lc-agent`).
const STORE: &str = "trusted-projects.json";

/// Set, no trust question is asked (the process's stdin is not a person's).
static NO_QUESTIONS: AtomicBool = AtomicBool::new(false);

/// What this process decided per project (asked once).
static DECIDED: Mutex<Option<HashMap<PathBuf, bool>>> = Mutex::new(None);

/// The warnings said on stderr so far, for `exec --json` to put in its
/// stream too.
static NOTICES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Says `message` on stderr as a `warning:` line and keeps it for
/// [`take_notices`].
pub(crate) fn warn(message: String) {
    eprintln!("warning: {message}");
    NOTICES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(message);
}

/// The warnings [`warn`] said since the last call.
pub(crate) fn take_notices() -> Vec<String> {
    std::mem::take(&mut *NOTICES.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Says that nobody answers questions in this process (`exec`, `mcp`,
/// `acp`): an untrusted project is refused with a warning.
pub(crate) fn no_questions() {
    NO_QUESTIONS.store(true, Ordering::Relaxed);
}

/// The trust file: canonical project path → what was trusted.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Store {
    #[serde(default)]
    projects: std::collections::BTreeMap<String, Trusted>,
}

/// One trusted project.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Trusted {
    /// SHA-256 of the project's code-running files, as trusted.
    sha256: String,
    /// Which files they were.
    files: Vec<String>,
}

/// The code-running files a project holds (relative names, with what each
/// brings), and their hash.
struct Found {
    files: Vec<(&'static str, &'static str)>,
    sha256: String,
}

fn found(dir: &Path) -> Found {
    let mut hasher = Sha256::new();
    let mut files = Vec::new();
    for &(name, what) in PROJECT_FILES {
        let path = dir.join(name);
        if !path.is_file() {
            continue;
        }
        // A file that cannot be read hashes as empty: reading it later
        // fails loudly, and trust of an unreadable file is not worth more.
        let bytes = std::fs::read(&path).unwrap_or_default();
        hasher.update(name.as_bytes());
        hasher.update([0]);
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
        files.push((name, what));
    }
    let sha256 = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Found { files, sha256 }
}

fn store_path() -> Option<PathBuf> {
    std::env::var_os("LC_AGENT_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".lc-agent")))
        .map(|home| home.join(STORE))
}

fn load() -> Store {
    store_path()
        .and_then(|path| std::fs::read_to_string(path).ok())
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// Remembers that `dir` is trusted with these files (a failure to write
/// is a warning: this run trusts it anyway).
fn remember(dir: &Path, found: &Found) {
    let Some(path) = store_path() else {
        eprintln!("warning: no home directory: the project's trust is not remembered");
        return;
    };
    let mut store = load();
    store.projects.insert(
        dir.display().to_string(),
        Trusted {
            sha256: found.sha256.clone(),
            files: found.files.iter().map(|(n, _)| n.to_string()).collect(),
        },
    );
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            let text = serde_json::to_string_pretty(&store).map_err(std::io::Error::other)?;
            let tmp = path.with_extension("json.tmp");
            std::fs::write(&tmp, text)?;
            std::fs::rename(&tmp, &path)
        });
    if let Err(e) = written {
        eprintln!(
            "warning: the project's trust could not be remembered in {}: {e}",
            path.display()
        );
    }
}

/// `.lc-agent/settings.json (hooks), .mcp.json (MCP servers)`.
fn listed(dir: &Path, found: &Found) -> String {
    found
        .files
        .iter()
        .map(|(name, what)| format!("{} ({what})", dir.join(name).display()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether the project in `dir` is trusted, so its code-running files
/// may be used (see the module docs). `flag`: `--trust-project` was
/// given (trusts and remembers). A project without such files is trusted
/// (there is nothing to use).
pub(crate) fn project_trusted(dir: &Path, flag: bool) -> bool {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let found = found(&dir);
    if found.files.is_empty() {
        return true;
    }
    let mut decided = DECIDED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&trusted) = decided.get_or_insert_with(HashMap::new).get(&dir) {
        return trusted;
    }
    let trusted = decide(&dir, &found, flag);
    decided
        .get_or_insert_with(HashMap::new)
        .insert(dir.clone(), trusted);
    trusted
}

fn decide(dir: &Path, found: &Found, flag: bool) -> bool {
    if flag {
        remember(dir, found);
        return true;
    }
    let stored = load().projects.remove(&dir.display().to_string());
    if stored.as_ref().is_some_and(|t| t.sha256 == found.sha256) {
        return true;
    }
    let changed = if stored.is_some() {
        " changed since you trusted it; it"
    } else {
        ""
    };
    let files = listed(dir, found);
    let person = !NO_QUESTIONS.load(Ordering::Relaxed)
        && std::io::stdin().is_terminal()
        && std::io::stderr().is_terminal();
    if person {
        eprint!(
            "The project {}{changed} has files that run code on this machine: {files}. \
             Trust this project and use them? [y/N] ",
            dir.display()
        );
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if matches!(answer.trim().to_lowercase().as_str(), "y" | "yes") {
            remember(dir, found);
            return true;
        }
        eprintln!("not trusted: going on without them");
        return false;
    }
    warn(format!(
        "the project {}{changed} is not trusted, so its files that run code are not used: \
         {files}. Read them; to use them pass --trust-project (remembered until they change), \
         or run lc-agent there on a terminal and answer y",
        dir.display()
    ));
    false
}

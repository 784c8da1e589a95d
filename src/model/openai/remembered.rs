//! What a model server cannot do, remembered across processes: a small
//! JSON file keyed by the server's base URL and the model, so that a new
//! process does not pay again to find out (llama-cpp-python evaluates a
//! whole prompt before its streamed tool request fails).
//!
//! ```text
//!  <dir>/servers.json   {"format": "lc-agent-servers/1",   (a flag is written only when true)
//!                        "servers": {"<base_url> <model>": {"no_streaming_with_tools": true, "schema_as_tool": true,
//!                                                            "schema_tool_by_name": true,
//!                                                            "learned_at": <unix seconds>}}}
//! ```
//!
//! - **Off unless asked**: a program turns it on with
//!   [`remember_servers_in`] (the `lc-agent` binary does, for `run`, `chat`
//!   and `serve`); a library user's models learn per process only.
//! - **Written atomically** (temporary file, rename); a file that cannot
//!   be read or parsed is ignored (a debug line says why) and replaced at
//!   the next write. Writes are read-modify-write: two processes learning
//!   at once may lose one entry, which the next run learns again.
//! - **Re-checked**: an entry older than [`REMEMBER_FOR`] is ignored, so a
//!   server that was upgraded or restarted with other flags is asked again
//!   the next day.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// How long an entry is trusted.
pub(crate) const REMEMBER_FOR: Duration = Duration::from_secs(24 * 60 * 60);

/// The file's name in the cache directory.
const FILE: &str = "servers.json";

/// The format tag written in the file.
const FORMAT: &str = "lc-agent-servers/1";

/// The directory given to [`remember_servers_in`].
fn cache_dir() -> &'static OnceLock<PathBuf> {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    &DIR
}

/// Remembers what model servers cannot do (streaming a request that
/// offers tools, `response_format` with a JSON Schema) in `dir/servers.json`, across processes, for every
/// OpenAI-compatible model this process builds afterwards. `None` picks
/// the user's cache directory: `$LC_AGENT_HOME/cache` when
/// `LC_AGENT_HOME` is set, else `$XDG_CACHE_HOME/lc-agent` (the
/// platform's cache directory). The first call wins; later calls change
/// nothing.
///
/// An entry is keyed by the server's base URL and the model, and trusted
/// for a day; a corrupt file is ignored.
pub fn remember_servers_in(dir: Option<PathBuf>) {
    let chosen = dir.or_else(|| match std::env::var_os("LC_AGENT_HOME") {
        Some(home) => Some(PathBuf::from(home).join("cache")),
        None => dirs::cache_dir().map(|d| d.join("lc-agent")),
    });
    if let Some(chosen) = chosen {
        let _ = cache_dir().set(chosen);
    }
}

/// What is remembered of one server and model.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct Entry {
    /// The server refused to stream a request with tools and `auto`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) no_streaming_with_tools: bool,
    /// The server refused `response_format` with a JSON Schema: output
    /// schemas go as a forced tool.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) schema_as_tool: bool,
    /// The server failed `tool_choice: required`: the output schema's
    /// tool is forced by name.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) schema_tool_by_name: bool,
    /// When it was learned (seconds since the Unix epoch).
    #[serde(default)]
    learned_at: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    format: String,
    #[serde(default)]
    servers: BTreeMap<String, Entry>,
}

/// The key of `model` at `base_url`.
fn key(base_url: &str, model: &str) -> String {
    format!("{base_url} {model}")
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The file's entries (empty when missing or unreadable: a debug line
/// says why).
fn read(path: &Path) -> File {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return File::default(),
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "the servers cache cannot be read; ignored");
            return File::default();
        }
    };
    match serde_json::from_slice::<File>(&bytes) {
        Ok(file) if file.format == FORMAT => file,
        Ok(file) => {
            tracing::debug!(path = %path.display(), format = %file.format, "the servers cache has another format; ignored");
            File::default()
        }
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "the servers cache is not valid JSON; ignored");
            File::default()
        }
    }
}

/// What is remembered of `model` at `base_url`, if anything recent.
pub(super) fn recall(base_url: &str, model: &str) -> Option<Entry> {
    let path = cache_dir().get()?.join(FILE);
    let entry = read(&path).servers.remove(&key(base_url, model))?;
    let age = now().saturating_sub(entry.learned_at);
    (age < REMEMBER_FOR.as_secs()).then_some(entry)
}

/// Remembers what `learn` sets of `model` at `base_url` (`what` names it
/// in the debug line).
pub(super) fn remember(base_url: &str, model: &str, what: &str, learn: impl FnOnce(&mut Entry)) {
    let Some(dir) = cache_dir().get() else {
        return;
    };
    let path = dir.join(FILE);
    let mut file = read(&path);
    file.format = FORMAT.to_string();
    let entry = file.servers.entry(key(base_url, model)).or_default();
    learn(entry);
    entry.learned_at = now();
    // Entries nobody would trust any more are dropped.
    let oldest = now().saturating_sub(REMEMBER_FOR.as_secs());
    file.servers.retain(|_, e| e.learned_at >= oldest);
    let written = std::fs::create_dir_all(dir).and_then(|()| {
        let bytes = serde_json::to_vec_pretty(&file).map_err(std::io::Error::other)?;
        crate::atomic_file::write_atomic(&path, &bytes)
    });
    match written {
        Ok(()) => {
            tracing::debug!(path = %path.display(), base_url, model, what, "remembered")
        }
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "the servers cache cannot be written")
        }
    }
}

//! The `hooks` of a settings file, in the format Claude Code users
//! already write:
//!
//! ```json
//! {"hooks": {"PreToolUse": [{"matcher": "execute|write_file",
//!   "hooks": [{"type": "command", "command": "./check.sh", "timeout": 30}]}]}}
//! ```
//!
//! An event names matcher groups; a group's `matcher` is a regular
//! expression over the tool's name (whole-name match; `""`, `"*"` or no
//! matcher matches every tool, and events without a tool ignore it); its
//! `hooks` are commands run by `sh -c`, each with its own `timeout` in
//! seconds ([`DEFAULT_TIMEOUT`] when absent). Other keys of the file
//! (permissions, env, ...) are left to whoever reads them. Several files
//! merge: their groups add up, in the order the files were read.

use std::path::{Path, PathBuf};
use std::time::Duration;

use regex::Regex;
use serde::Deserialize;

use super::events::HookEvent;
use super::runner::HookCommand;

/// How long a hook may run when its settings give no `timeout`.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Errors reading a settings file's hooks; each names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HookSettingsError {
    /// The file could not be read.
    #[error("{path}: cannot read it: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a settings JSON the hooks can use.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, in the file's terms.
        message: String,
    },
}

/// A matcher and its commands.
#[derive(Debug, Clone)]
struct Group {
    event: HookEvent,
    /// `None` matches every tool.
    matcher: Option<Regex>,
    commands: Vec<HookCommand>,
}

/// The hooks of one or more settings files (see the module docs of
/// `hooks/settings.rs`).
#[derive(Debug, Clone, Default)]
pub struct HookSettings {
    groups: Vec<Group>,
    /// The files read, in order.
    sources: Vec<PathBuf>,
}

#[derive(Deserialize)]
struct FileJson {
    #[serde(default)]
    hooks: serde_json::Map<String, serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupJson {
    #[serde(default)]
    matcher: Option<String>,
    #[serde(default)]
    hooks: Vec<CommandJson>,
}

#[derive(Deserialize)]
struct CommandJson {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    timeout: Option<f64>,
}

impl HookSettings {
    /// No hooks.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The hooks of a settings JSON text; `path` names it in errors.
    pub fn parse(text: &str, path: impl AsRef<Path>) -> Result<Self, HookSettingsError> {
        let path = path.as_ref().to_path_buf();
        let invalid = |message: String| HookSettingsError::Invalid {
            path: path.clone(),
            message,
        };
        let file: FileJson = serde_json::from_str(text)
            .map_err(|e| invalid(format!("not a settings JSON object: {e}")))?;
        let mut groups = Vec::new();
        for (name, value) in file.hooks {
            let event = HookEvent::from_name(&name).ok_or_else(|| {
                invalid(format!(
                    "hooks: unknown event `{name}` (known: {})",
                    HookEvent::ALL.map(HookEvent::name).join(", ")
                ))
            })?;
            let list: Vec<GroupJson> =
                serde_json::from_value(value).map_err(|e| invalid(format!("hooks.{name}: {e}")))?;
            for (i, group) in list.into_iter().enumerate() {
                let matcher = match group.matcher.as_deref().map(str::trim) {
                    None | Some("") | Some("*") => None,
                    Some(pattern) => {
                        Some(Regex::new(&format!("^(?:{pattern})$")).map_err(|e| {
                            invalid(format!("hooks.{name}[{i}].matcher `{pattern}`: {e}"))
                        })?)
                    }
                };
                let mut commands = Vec::new();
                for (j, c) in group.hooks.into_iter().enumerate() {
                    let at = format!("hooks.{name}[{i}].hooks[{j}]");
                    if c.kind != "command" {
                        return Err(invalid(format!(
                            "{at}: type `{}` is not supported (only `command`)",
                            c.kind
                        )));
                    }
                    let command = c
                        .command
                        .filter(|c| !c.trim().is_empty())
                        .ok_or_else(|| invalid(format!("{at}: `command` is missing")))?;
                    let timeout = match c.timeout {
                        None => DEFAULT_TIMEOUT,
                        Some(s) if s.is_finite() && s > 0.0 => Duration::from_secs_f64(s),
                        Some(s) => {
                            return Err(invalid(format!(
                                "{at}: `timeout` must be a positive number of seconds, got {s}"
                            )))
                        }
                    };
                    commands.push(HookCommand { command, timeout });
                }
                groups.push(Group {
                    event,
                    matcher,
                    commands,
                });
            }
        }
        Ok(Self {
            groups,
            sources: vec![path],
        })
    }

    /// The hooks of a settings file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, HookSettingsError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| HookSettingsError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// The standard files, those that exist, in this order: the user's
    /// (`$XDG_CONFIG_HOME/lc-agent/settings.json`, else
    /// `~/.config/lc-agent/settings.json`), the project's
    /// (`<project>/.lc-agent/settings.json`), then `extra` (a
    /// `--settings FILE`, which must exist).
    pub fn standard(
        project: Option<&Path>,
        extra: Option<&Path>,
    ) -> Result<Self, HookSettingsError> {
        let mut settings = Self::new();
        let user = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
            .map(|d| d.join("lc-agent").join("settings.json"));
        let project = project.map(|p| p.join(".lc-agent").join("settings.json"));
        for path in user.into_iter().chain(project) {
            if path.is_file() {
                settings.merge(Self::from_file(&path)?);
            }
        }
        if let Some(path) = extra {
            settings.merge(Self::from_file(path)?);
        }
        Ok(settings)
    }

    /// Adds another file's hooks after these.
    pub(crate) fn merge(&mut self, other: HookSettings) {
        self.groups.extend(other.groups);
        self.sources.extend(other.sources);
    }

    /// Whether no hook is configured.
    pub fn is_empty(&self) -> bool {
        self.groups.iter().all(|g| g.commands.is_empty())
    }

    /// The commands for `event` (and, for tool events, this tool).
    pub(crate) fn commands(&self, event: HookEvent, tool: Option<&str>) -> Vec<HookCommand> {
        self.groups
            .iter()
            .filter(|g| g.event == event)
            .filter(|g| match (&g.matcher, tool) {
                (Some(re), Some(tool)) => re.is_match(tool),
                _ => true,
            })
            .flat_map(|g| g.commands.iter().cloned())
            .collect()
    }

    /// Whether any command listens to `event`.
    pub(crate) fn has(&self, event: HookEvent) -> bool {
        self.groups
            .iter()
            .any(|g| g.event == event && !g.commands.is_empty())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn matchers_match_whole_tool_names() {
        let s = HookSettings::parse(
            r#"{"model": "x", "hooks": {"PreToolUse": [
                {"matcher": "execute|write_file", "hooks": [{"type": "command", "command": "a", "timeout": 5}]},
                {"matcher": "*", "hooks": [{"type": "command", "command": "b"}]}],
              "Stop": [{"hooks": [{"type": "command", "command": "c"}]}]}}"#,
            "s.json",
        )
        .unwrap();
        let names = |tool| -> Vec<String> {
            s.commands(HookEvent::PreToolUse, Some(tool))
                .into_iter()
                .map(|c| c.command)
                .collect()
        };
        assert_eq!(names("execute"), ["a", "b"]);
        assert_eq!(names("execute_more"), ["b"]);
        assert_eq!(
            s.commands(HookEvent::PreToolUse, Some("execute"))[0].timeout,
            Duration::from_secs(5)
        );
        assert_eq!(
            s.commands(HookEvent::Stop, None)[0].timeout,
            DEFAULT_TIMEOUT
        );
        assert!(!s.has(HookEvent::PostToolUse));
    }

    #[test]
    fn mistakes_name_the_file_and_the_place() {
        for (text, says) in [
            (
                r#"{"hooks": {"PreToolUs": []}}"#,
                "unknown event `PreToolUs`",
            ),
            (
                r#"{"hooks": {"Stop": [{"hooks": [{"type": "prompt", "command": "a"}]}]}}"#,
                "hooks.Stop[0].hooks[0]: type `prompt`",
            ),
            (
                r#"{"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}}"#,
                "`command` is missing",
            ),
            (
                r#"{"hooks": {"PreToolUse": [{"matcher": "(", "hooks": []}]}}"#,
                "matcher `(`",
            ),
            (
                r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "a", "timeout": 0}]}]}}"#,
                "positive number",
            ),
        ] {
            let e = HookSettings::parse(text, "p/settings.json")
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("p/settings.json: ") && e.contains(says),
                "{e}"
            );
        }
    }
}

//! The protected paths: files that make something run on the host later
//! (the agent's own configuration, git's hooks and configuration, other
//! tools' auto-run files). Writing, editing or deleting one asks — also
//! when it does not exist yet, since creating it is a write — as a last,
//! implicit rule after every rule of the user's, the blueprint's and the
//! server's, so any rule of theirs that matches first (an `--allow
//! 'write,edit:.git/**'`) widens it. [`Permissions::without_protection`]
//! drops it (bypass mode: the user chose to be asked nothing).
//!
//! [`Permissions::without_protection`]: super::Permissions::without_protection

use super::{Compiled, Operation, PermissionRule, RuleMode};

/// The protected globs (relative to the workspace root; case-insensitive,
/// a glob covers everything under it).
pub const PROTECTED_PATHS: &[&str] = &[
    // The agent's own configuration: hooks, blueprints, settings (in any
    // directory: a nested project is a project too).
    "**/.lc-agent/**",
    // MCP server lists that agents start programs from.
    "**/.mcp.json",
    // Other agents' configuration (their hooks run on the host too).
    "**/.claude/**",
    "**/.codex/**",
    // git, also a nested repository's: hooks, `core.fsmonitor`,
    // `core.pager`, filters.
    "**/.git/**",
    // Files other tools run on their own (direnv in any directory; an
    // editor's tasks and settings of the folder it opens).
    "**/.envrc",
    ".vscode/tasks.json",
    ".vscode/settings.json",
];

/// The operations that ask on a protected path.
const OPERATIONS: [Operation; 3] = [Operation::Write, Operation::Edit, Operation::Delete];

/// One protected glob, compiled, with how a verdict names it.
#[derive(Debug, Clone)]
pub(super) struct Protected {
    compiled: Compiled,
    /// `protected path .git/** (ask write,edit,delete; --allow ... widens it)`.
    pub(super) name: String,
}

/// The protected globs, compiled (built once per rule set).
pub(super) fn protected() -> Vec<Protected> {
    PROTECTED_PATHS
        .iter()
        .filter_map(|glob| {
            let rule = PermissionRule {
                operations: OPERATIONS.to_vec(),
                paths: vec![(*glob).to_string()],
                mode: RuleMode::Ask,
            };
            // The globs are constants that compile; one that did not would
            // only lose its protection, never panic.
            let compiled = Compiled::new(&rule).ok()?;
            Some(Protected {
                compiled,
                name: format!(
                    "the protected path {glob} (ask write,edit,delete; --allow \
                     'write,edit,delete:{glob}' lets it through)"
                ),
            })
        })
        .collect()
}

impl Protected {
    /// Whether `op` on the normalised `path` is covered.
    pub(super) fn matches(&self, op: Operation, path: &str) -> bool {
        self.compiled.matches(op, path)
    }
}

//! `--allow`, `--deny`, `--ask`: path rules from the command line, and
//! `--allow-cmd`, `--deny-cmd`, `--ask-cmd`: command rules (see
//! `lc_agent_filesystem::Permissions` and `CommandRule` for what a rule
//! means).
//!
//! ```text
//!  --deny 'write,edit:secrets/**'   OPS:GLOBS (OPS: read write edit delete execute ls glob grep, or *)
//!  --deny 'secrets/**'              GLOBS alone: every operation
//!  --ask 'execute:**'               every command waits for approval
//!  --ask-cmd 'git push*'            a line running `git push` anywhere in it
//!                                   (`git status && git push`, `sh -c '…'`) asks;
//!                                   a line the parser cannot read asks too
//! ```
//!
//! Rules are checked in the order the flags are given (first match wins),
//! before the rules of a blueprint (`[[permissions]]`), and are stored in
//! the session's blueprint. `run` and `chat` hold an `ask` for approval;
//! `lc-agent tool` and `lc-agent mcp` have nobody to ask, so an `ask`
//! refuses there, saying approval is needed. A bad flag is a usage error
//! naming the flag and the syntax.

use std::sync::atomic::{AtomicUsize, Ordering};

use clap::Args;
use lc_agent_filesystem::{CommandRule, PermissionRule, Permissions, RuleMode};

use crate::error::{CliError, CliResult};

/// The order in which rule flags were read: clap reads values in
/// command-line order, so numbering them as they are parsed keeps the
/// order across the three flags.
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A rule flag's value, numbered in command-line order.
#[derive(Debug, Clone)]
pub(crate) struct Numbered(usize, String);

fn numbered(value: &str) -> Result<Numbered, String> {
    Ok(Numbered(
        NEXT.fetch_add(1, Ordering::Relaxed),
        value.to_string(),
    ))
}

/// Path rules (see the module docs of `permissions.rs`).
#[derive(Debug, Clone, Args, Default)]
pub(crate) struct PermissionArgs {
    /// Allow operations on paths: `OPS:GLOBS` (`read:secrets/public.txt`)
    /// or `GLOBS`. Rules are checked in the order given; first match wins.
    #[arg(long, value_name = "OPS:GLOBS", value_parser = numbered)]
    allow: Vec<Numbered>,
    /// Deny operations on paths, in every mode: `OPS:GLOBS`
    /// (`write,edit:secrets/**`) or `GLOBS` (every operation). OPS: read,
    /// write, edit, delete, execute, ls, glob, grep, or `*`.
    #[arg(long, value_name = "OPS:GLOBS", value_parser = numbered)]
    deny: Vec<Numbered>,
    /// Ask for approval before operations on paths (`write:docs/**`;
    /// `execute:**` holds every command). Where nobody can approve
    /// (`lc-agent tool`, `lc-agent mcp`) the call is refused.
    #[arg(long, value_name = "OPS:GLOBS", value_parser = numbered)]
    ask: Vec<Numbered>,
    /// Allow commands matching a pattern (`git push --dry-run*`), before
    /// later command rules. Patterns are globs over the whole command
    /// (`*` is any text), matched on every command of a compound line.
    #[arg(long, value_name = "PATTERN", value_parser = numbered)]
    allow_cmd: Vec<Numbered>,
    /// Deny commands matching a pattern, in every mode (`git push*`):
    /// also inside `&&`, `;`, pipes, `$(…)`, `sh -c '…'` and `eval`.
    #[arg(long, value_name = "PATTERN", value_parser = numbered)]
    deny_cmd: Vec<Numbered>,
    /// Ask for approval before commands matching a pattern (`rm -rf*`);
    /// with any command rule, a line the parser cannot read fully
    /// (`… | base64 -d | sh`) asks too. Where nobody can approve
    /// (`lc-agent tool`, `lc-agent mcp`) the call is refused.
    #[arg(long, value_name = "PATTERN", value_parser = numbered)]
    ask_cmd: Vec<Numbered>,
}

impl PermissionArgs {
    /// The rules of the flags, in command-line order.
    pub(crate) fn rules(&self) -> CliResult<Permissions> {
        let mut all: Vec<(usize, RuleMode, &str)> = Vec::new();
        for (mode, values) in [
            (RuleMode::Allow, &self.allow),
            (RuleMode::Deny, &self.deny),
            (RuleMode::Ask, &self.ask),
        ] {
            all.extend(values.iter().map(|Numbered(i, v)| (*i, mode, v.as_str())));
        }
        all.sort_by_key(|(i, _, _)| *i);
        let rules = all
            .into_iter()
            .map(|(_, mode, value)| PermissionRule::parse(mode, value))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| CliError::usage(e.to_string()))?;
        let mut commands: Vec<(usize, RuleMode, &str)> = Vec::new();
        for (mode, values) in [
            (RuleMode::Allow, &self.allow_cmd),
            (RuleMode::Deny, &self.deny_cmd),
            (RuleMode::Ask, &self.ask_cmd),
        ] {
            commands.extend(values.iter().map(|Numbered(i, v)| (*i, mode, v.as_str())));
        }
        commands.sort_by_key(|(i, _, _)| *i);
        let commands = commands
            .into_iter()
            .map(|(_, mode, value)| CommandRule::parse(mode, value))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| CliError::usage(e.to_string()))?;
        Permissions::new(rules)
            .and_then(|p| p.with_commands(commands))
            .map_err(|e| CliError::usage(e.to_string()))
    }
}

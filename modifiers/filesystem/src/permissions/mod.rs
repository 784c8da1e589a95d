//! Path permissions: rules that allow, deny or ask for an operation on
//! paths, checked on every backend call ([`Permissions::guard`] wraps a
//! backend), so every tool, every backend and every front end (the agent,
//! `lc-agent tool`, the MCP server, the HTTP server) obeys one rule set.
//!
//! ```text
//!  rule = { operations: [read, write, edit, delete, execute, ls, glob, grep],
//!           paths: [globs], mode: allow | deny | ask }      first match wins
//!  tool ─▶ guard (guard.rs) ─▶ check(op, path) and check(op, path behind links)
//!            deny: Error naming the rule · ask: held for approval, or refused
//!            where nobody can approve · ls/glob/grep: denied entries left out
//! ```
//!
//! Decisions (see also the README's Safety section):
//! - **Paths.** A rule's globs are relative to the workspace root (a
//!   leading `/` or `./` is dropped), `globset` syntax with `*` inside one
//!   component and `**` across components. A glob matches a path or any of
//!   its ancestors (`secrets` covers `secrets/key.pem`), and `dir/**` also
//!   matches `dir` itself. Omitted paths mean every path.
//! - **Hostile spellings.** The path is normalised first (`//`, `.`,
//!   trailing `/`; `..` is refused before any rule is read), both sides are
//!   compared in Unicode NFC and case-insensitively (`Secrets/KEY` and an
//!   NFD `café` are the same path to a rule), and on a disk workspace the
//!   path is checked again after following its symbolic links, so a link
//!   pointing into a denied directory is denied too. The stricter verdict
//!   of the two wins.
//! - **Listings.** `ls`, `glob` and `grep` leave out every entry that the
//!   operation may not see (deny, or ask unless the call itself was
//!   approved for an `ask` rule); they never fail because of one. `grep`
//!   shows contents, so a file it searches passes both its `grep` and its
//!   `read` rules. A denied target itself (`ls /secrets`) is an error.
//! - **`execute`.** Rules do not look inside shell commands. An `execute`
//!   rule matches when one of its globs covers the workspace root, the
//!   command's working directory (`**`, `*` or `/`; or no paths): it
//!   allows, denies or holds every command. The sandbox is what confines
//!   what a command touches; a file rule does not stop `cat secrets/key`.
//! - **`ask`** is an approval: an agent holds the call for a person,
//!   naming the rule; where nobody can approve (the MCP server, `lc-agent
//!   tool`, the HTTP tool endpoint) the call is refused, saying so.
//! - **Protected paths** (`protected.rs`, [`PROTECTED_PATHS`]): writing,
//!   editing or deleting the agent's own configuration (`.lc-agent/**`,
//!   `.mcp.json`), `.git/**` and a few files other tools run on their own
//!   (`.envrc`, `.vscode/tasks.json`, ...) asks — also when they do not
//!   exist yet — as an implicit last rule: a rule of the caller's that
//!   matches first widens it; [`Permissions::without_protection`] drops it.
//! - **Command rules** (`command.rs`, [`CommandRule`]): `allow`, `ask` or
//!   `deny` for the commands `execute` runs, matched on every simple
//!   command of a compound line (`git status && git push`, `$(…)`, `sh -c`,
//!   `eval`; `command_line.rs` reads them with `brush-parser`); a line the
//!   parser cannot read fully (`… | base64 -d | sh`) asks.
//! - **No rules and no protection** means no wrapper.
//!
//! Flag syntax (`--allow`, `--deny`, `--ask` of the CLI; [`PermissionRule::parse`]):
//! `OPS:GLOBS` where `OPS` is a comma-separated list of operations (or `*`)
//! and `GLOBS` a comma-separated list of globs, e.g. `--deny
//! 'write,edit:secrets/**'`; a value without `:` is globs for every
//! operation (`--deny 'secrets/**'`).

mod command;
mod command_line;
mod guard;
mod protected;

pub use command::CommandRule;
pub use protected::PROTECTED_PATHS;

use command::CompiledCommand;

use std::sync::Arc;

use globset::{GlobBuilder, GlobMatcher};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use unicode_normalization::UnicodeNormalization;

use super::backend::{Backend, BackendSource};
use super::path;

/// An operation a rule speaks about (the file tools' actions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// `read_file`, downloads.
    Read,
    /// `write_file`, uploads, appends.
    Write,
    /// `edit_file`.
    Edit,
    /// Deleting a file.
    Delete,
    /// `execute` (matched on the working directory, see the module docs).
    Execute,
    /// `ls`.
    Ls,
    /// `glob`.
    Glob,
    /// `grep`.
    Grep,
}

/// Every operation, in the order the docs list them.
const ALL_OPERATIONS: [Operation; 8] = [
    Operation::Read,
    Operation::Write,
    Operation::Edit,
    Operation::Delete,
    Operation::Execute,
    Operation::Ls,
    Operation::Glob,
    Operation::Grep,
];

impl Operation {
    fn name(self) -> &'static str {
        match self {
            Operation::Read => "read",
            Operation::Write => "write",
            Operation::Edit => "edit",
            Operation::Delete => "delete",
            Operation::Execute => "execute",
            Operation::Ls => "ls",
            Operation::Glob => "glob",
            Operation::Grep => "grep",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        ALL_OPERATIONS
            .into_iter()
            .find(|op| op.name().eq_ignore_ascii_case(name))
    }
}

/// What a matching rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleMode {
    /// The operation runs.
    Allow,
    /// The operation is refused (in every permission mode).
    Deny,
    /// The operation waits for a person's approval.
    Ask,
}

impl RuleMode {
    fn name(self) -> &'static str {
        match self {
            RuleMode::Allow => "allow",
            RuleMode::Deny => "deny",
            RuleMode::Ask => "ask",
        }
    }
}

/// One rule: `mode` for `operations` on `paths` (`[[permissions]]` in a
/// blueprint). Omitted operations or paths mean all of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionRule {
    /// The operations it covers.
    #[serde(default = "all_operations")]
    pub operations: Vec<Operation>,
    /// Globs relative to the workspace root.
    #[serde(default = "every_path")]
    pub paths: Vec<String>,
    /// What it does.
    pub mode: RuleMode,
}

fn all_operations() -> Vec<Operation> {
    ALL_OPERATIONS.to_vec()
}

fn every_path() -> Vec<String> {
    vec!["**".to_string()]
}

/// A rule that cannot be used (bad flag syntax, an unknown operation, an
/// invalid glob); the message says which and how to write it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PermissionError(String);

const SYNTAX: &str = "write OPS:GLOBS (e.g. 'write,edit:secrets/**'; OPS is a comma-separated \
list of read, write, edit, delete, execute, ls, glob, grep or *), or GLOBS alone for every operation";

impl PermissionRule {
    /// A rule from the CLI's flag syntax (`--deny 'write,edit:secrets/**'`,
    /// see the module docs).
    ///
    /// ```
    /// use lc_agent_filesystem::{Operation, PermissionRule, RuleMode};
    ///
    /// let rule = PermissionRule::parse(RuleMode::Deny, "write,edit:secrets/**").unwrap();
    /// assert_eq!(rule.operations, [Operation::Write, Operation::Edit]);
    /// assert_eq!(rule.paths, ["secrets/**"]);
    /// assert!(PermissionRule::parse(RuleMode::Deny, "wrte:x").is_err());
    /// ```
    pub fn parse(mode: RuleMode, value: &str) -> Result<Self, PermissionError> {
        let bad = |why: String| {
            PermissionError(format!(
                "invalid --{} '{value}': {why}; {SYNTAX}",
                mode.name()
            ))
        };
        let (ops, globs) = match value.split_once(':') {
            Some((ops, globs)) => (Some(ops), globs),
            None => (None, value),
        };
        let operations = match ops {
            None => all_operations(),
            Some(ops) if ops.trim() == "*" => all_operations(),
            Some(ops) => ops
                .split(',')
                .map(|name| {
                    let name = name.trim();
                    Operation::from_name(name).ok_or_else(|| {
                        bad(if name.is_empty() {
                            "an operation is empty".to_string()
                        } else {
                            format!("`{name}` is not an operation")
                        })
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        };
        let paths: Vec<String> = globs
            .split(',')
            .map(|g| g.trim().to_string())
            .filter(|g| !g.is_empty())
            .collect();
        if paths.is_empty() {
            return Err(bad("no path glob given".to_string()));
        }
        let rule = Self {
            operations,
            paths,
            mode,
        };
        Compiled::new(&rule).map_err(|e| bad(e.0))?;
        Ok(rule)
    }

    /// The rule as the flag would spell it: `deny write,edit:secrets/**`.
    fn describe(&self) -> String {
        let ops = if self.operations.len() == ALL_OPERATIONS.len()
            && ALL_OPERATIONS.iter().all(|op| self.operations.contains(op))
        {
            "*".to_string()
        } else {
            self.operations
                .iter()
                .map(|op| op.name())
                .collect::<Vec<_>>()
                .join(",")
        };
        format!("{} {ops}:{}", self.mode.name(), self.paths.join(","))
    }
}

/// A rule with its globs compiled.
#[derive(Debug, Clone)]
struct Compiled {
    operations: Vec<Operation>,
    matchers: Vec<GlobMatcher>,
    /// Whether the rule covers the workspace root (for `execute`).
    covers_root: bool,
}

/// The key a path (or a glob) is matched by: no leading `/`, lower case
/// (Unicode, not only ASCII), NFC.
fn key(path: &str) -> String {
    path.trim_start_matches('/')
        .nfc()
        .collect::<String>()
        .to_lowercase()
        .nfc()
        .collect()
}

impl Compiled {
    fn new(rule: &PermissionRule) -> Result<Self, PermissionError> {
        if rule.operations.is_empty() {
            return Err(PermissionError("a rule names no operation".to_string()));
        }
        if rule.paths.is_empty() {
            return Err(PermissionError("a rule names no path".to_string()));
        }
        let mut matchers = Vec::new();
        let mut covers_root = false;
        for raw in &rule.paths {
            let mut glob = raw.trim();
            glob = glob.strip_prefix("./").unwrap_or(glob);
            let glob = glob.trim_start_matches('/');
            let glob = glob.trim_end_matches('/');
            if glob.is_empty() || glob == "*" || glob == "**" {
                covers_root = true;
            }
            if glob.split('/').any(|c| c == "..") {
                return Err(PermissionError(format!(
                    "the glob `{raw}` has a `..` component"
                )));
            }
            let mut bodies = vec![key(glob)];
            // `dir/**` covers `dir` itself too.
            if let Some(dir) = glob.strip_suffix("/**") {
                bodies.push(key(dir));
            }
            for body in bodies.into_iter().filter(|b| !b.is_empty()) {
                let compiled = GlobBuilder::new(&body)
                    .literal_separator(true)
                    .backslash_escape(true)
                    .build()
                    .map_err(|e| {
                        PermissionError(format!("the glob `{raw}` is invalid: {}", e.kind()))
                    })?;
                matchers.push(compiled.compile_matcher());
            }
        }
        Ok(Self {
            operations: rule.operations.clone(),
            matchers,
            covers_root,
        })
    }

    fn matches(&self, op: Operation, path: &str) -> bool {
        if !self.operations.contains(&op) {
            return false;
        }
        if op == Operation::Execute {
            return self.covers_root;
        }
        let key = key(path);
        if key.is_empty() {
            return self.covers_root;
        }
        // The path and each of its ancestors.
        let mut end = key.len();
        loop {
            let candidate = &key[..end];
            if self.matchers.iter().any(|m| m.is_match(candidate)) {
                return true;
            }
            match candidate.rfind('/') {
                Some(i) => end = i,
                None => return false,
            }
        }
    }
}

/// What the rules say about one operation on one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// No rule refuses or asks (an allow rule matched first, or none matched).
    Allow,
    /// A deny rule matched first; the rule, described (`path rule 2 (deny write:secrets/**)`).
    Deny(String),
    /// An ask rule matched first; the rule, described.
    Ask(String),
}

impl Verdict {
    /// The stricter of two verdicts (deny, then ask, then allow).
    fn stricter(self, other: Verdict) -> Verdict {
        match (&self, &other) {
            (Verdict::Deny(_), _) => self,
            (_, Verdict::Deny(_)) => other,
            (Verdict::Ask(_), _) => self,
            (_, Verdict::Ask(_)) => other,
            _ => self,
        }
    }
}

/// An ordered rule set (first match wins), then the protected paths (see
/// the module docs). Cheap to clone.
///
/// ```
/// use lc_agent_filesystem::{Operation, PermissionRule, Permissions, RuleMode, Verdict};
///
/// let rules = Permissions::new([
///     PermissionRule::parse(RuleMode::Allow, "read:secrets/public.txt").unwrap(),
///     PermissionRule::parse(RuleMode::Deny, "secrets/**").unwrap(),
/// ])
/// .unwrap();
/// assert_eq!(rules.check(Operation::Read, "/secrets/public.txt"), Verdict::Allow);
/// assert!(matches!(rules.check(Operation::Read, "/SECRETS//key.pem/"), Verdict::Deny(_)));
/// assert_eq!(rules.check(Operation::Read, "/src/main.rs"), Verdict::Allow);
/// // Protected paths ask, also before they exist:
/// assert!(matches!(rules.check(Operation::Write, "/.git/hooks/pre-commit"), Verdict::Ask(_)));
/// assert_eq!(
///     rules.without_protection().check(Operation::Write, "/.git/hooks/pre-commit"),
///     Verdict::Allow
/// );
/// ```
#[derive(Debug, Clone)]
pub struct Permissions {
    rules: Arc<Vec<(PermissionRule, Compiled)>>,
    /// The command rules, in order.
    commands: Arc<Vec<(CommandRule, CompiledCommand)>>,
    /// Whether the protected paths ask after the rules.
    protect: bool,
}

impl Default for Permissions {
    /// No rules; the protected paths ask.
    fn default() -> Self {
        Self {
            rules: Arc::default(),
            commands: Arc::default(),
            protect: true,
        }
    }
}

impl PartialEq for Permissions {
    fn eq(&self, other: &Self) -> bool {
        self.protect == other.protect
            && self.rules().eq(other.rules())
            && self.commands().eq(other.commands())
    }
}

/// The protected paths, compiled once.
static PROTECTED: std::sync::LazyLock<Vec<protected::Protected>> =
    std::sync::LazyLock::new(protected::protected);

impl Permissions {
    /// The rules, in order (each checked: operations and globs).
    pub fn new(rules: impl IntoIterator<Item = PermissionRule>) -> Result<Self, PermissionError> {
        let mut compiled = Vec::new();
        for (i, rule) in rules.into_iter().enumerate() {
            let c = Compiled::new(&rule).map_err(|e| {
                PermissionError(format!(
                    "path rule {} ({}): {}",
                    i + 1,
                    rule.describe(),
                    e.0
                ))
            })?;
            compiled.push((rule, c));
        }
        Ok(Self {
            rules: Arc::new(compiled),
            commands: Arc::default(),
            protect: true,
        })
    }

    /// These rules, then the command rules `rules` (in order; see
    /// [`CommandRule`]).
    ///
    /// ```
    /// use lc_agent_filesystem::{CommandRule, Permissions, RuleMode, Verdict};
    ///
    /// let rules = Permissions::default()
    ///     .with_commands([CommandRule::parse(RuleMode::Ask, "git push*").unwrap()])
    ///     .unwrap();
    /// assert!(matches!(rules.check_command("git status && git push"), Verdict::Ask(_)));
    /// assert_eq!(rules.check_command("git status"), Verdict::Allow);
    /// ```
    pub fn with_commands(
        &self,
        rules: impl IntoIterator<Item = CommandRule>,
    ) -> Result<Self, PermissionError> {
        let mut all = self.commands.as_ref().clone();
        for rule in rules {
            let compiled = CompiledCommand::new(&rule).map_err(|e| {
                PermissionError(format!(
                    "command rule {} ({}): {}",
                    all.len() + 1,
                    rule.describe(),
                    e.0
                ))
            })?;
            all.push((rule, compiled));
        }
        Ok(Self {
            rules: self.rules.clone(),
            commands: Arc::new(all),
            protect: self.protect,
        })
    }

    /// The command rules, in order.
    pub fn commands(&self) -> impl Iterator<Item = &CommandRule> + '_ {
        self.commands.iter().map(|(rule, _)| rule)
    }

    /// What the command rules say about the command line `line` (every
    /// simple command of it; a part that cannot be read asks). Without
    /// command rules: [`Verdict::Allow`].
    pub fn check_command(&self, line: &str) -> Verdict {
        command::check(&self.commands, line)
    }

    /// The same rules without the protected paths (bypass mode: nothing
    /// asks).
    #[must_use]
    pub fn without_protection(&self) -> Permissions {
        Self {
            rules: self.rules.clone(),
            commands: self.commands.clone(),
            protect: false,
        }
    }

    /// Whether the protected paths ask after the rules.
    pub fn protects(&self) -> bool {
        self.protect
    }

    /// Whether nothing is checked: no rule and no protection (no wrapper
    /// is needed).
    pub fn checks_nothing(&self) -> bool {
        self.rules.is_empty() && self.commands.is_empty() && !self.protect
    }

    /// These rules, then those of `more` that are not among them (a
    /// server's or the command line's rules before a blueprint's).
    pub fn then(&self, more: &Permissions) -> Permissions {
        let mut all: Vec<(PermissionRule, Compiled)> = self.rules.as_ref().clone();
        for (rule, compiled) in more.rules.iter() {
            if !all.iter().any(|(r, _)| r == rule) {
                all.push((rule.clone(), compiled.clone()));
            }
        }
        let mut commands = self.commands.as_ref().clone();
        for (rule, compiled) in more.commands.iter() {
            if !commands.iter().any(|(r, _)| r == rule) {
                commands.push((rule.clone(), compiled.clone()));
            }
        }
        Self {
            rules: Arc::new(all),
            commands: Arc::new(commands),
            protect: self.protect || more.protect,
        }
    }

    /// The rules, in order.
    pub fn rules(&self) -> impl Iterator<Item = &PermissionRule> + '_ {
        self.rules.iter().map(|(rule, _)| rule)
    }

    /// Whether there is no rule, of paths or commands (the protected
    /// paths may still ask, see [`Permissions::checks_nothing`]).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty() && self.commands.is_empty()
    }

    /// The verdict of the first rule matching `op` on `path` (a virtual
    /// path; it is normalised here, and a path that cannot be normalised
    /// is judged as given). Links are not followed; [`Permissions::guard`]
    /// follows them.
    pub fn check(&self, op: Operation, path: &str) -> Verdict {
        let normal = path::normalize(path).unwrap_or_else(|_| path.to_string());
        for (i, (rule, compiled)) in self.rules.iter().enumerate() {
            if compiled.matches(op, &normal) {
                let name = format!("path rule {} ({})", i + 1, rule.describe());
                return match rule.mode {
                    RuleMode::Allow => Verdict::Allow,
                    RuleMode::Deny => Verdict::Deny(name),
                    RuleMode::Ask => Verdict::Ask(name),
                };
            }
        }
        if self.protect
            && let Some(protected) = PROTECTED.iter().find(|p| p.matches(op, &normal))
        {
            return Verdict::Ask(protected.name.clone());
        }
        Verdict::Allow
    }

    /// The verdict for `op` on `path` and on where `path` leads through the
    /// links of `backend` (the stricter of the two).
    pub(crate) async fn check_through(
        &self,
        backend: &dyn Backend,
        op: Operation,
        path: &str,
    ) -> Verdict {
        let given = self.check(op, path);
        if matches!(given, Verdict::Deny(_)) {
            return given;
        }
        let real = backend.real_paths(&[path.to_string()]).await;
        match real.into_iter().next().flatten() {
            Some(real) => given.stricter(self.check(op, &real)),
            None => given,
        }
    }

    /// What the rules say about a file tool call (`tool` and its JSON
    /// arguments) on `backend`: the operation on its path argument, with
    /// links followed (`grep` is checked as `grep` and `read`). Tools that
    /// are not file tools, and calls whose arguments name no path, are
    /// [`Verdict::Allow`] (the tool itself refuses bad arguments).
    pub async fn check_call(&self, backend: &dyn Backend, tool: &str, args: &Value) -> Verdict {
        if self.checks_nothing() {
            return Verdict::Allow;
        }
        let arg = |name: &str| args.get(name).and_then(Value::as_str).unwrap_or("/");
        let (ops, target): (&[Operation], &str) = match tool {
            "ls" => (&[Operation::Ls], arg("path")),
            "read_file" => (&[Operation::Read], arg("file_path")),
            "write_file" => (&[Operation::Write], arg("file_path")),
            "edit_file" | "insert_lines" | "replace_lines" | "delete_lines" => {
                (&[Operation::Edit], arg("file_path"))
            }
            "glob" => (&[Operation::Glob], arg("path")),
            "grep" => (&[Operation::Grep, Operation::Read], arg("path")),
            "execute" => (&[Operation::Execute], "/"),
            "delete" => (&[Operation::Delete], arg("path")),
            _ => return Verdict::Allow,
        };
        let Ok(target) = path::normalize(target) else {
            return Verdict::Allow;
        };
        let mut verdict = Verdict::Allow;
        for op in ops {
            verdict = verdict.stricter(self.check_through(backend, *op, &target).await);
        }
        if tool == "execute" {
            verdict = verdict.stricter(self.check_command(arg("command")));
        }
        verdict
    }

    /// `backend` with these rules checked on every call (see the module
    /// docs). `approved_upstream`: whether a caller holds `ask` calls for
    /// approval before they reach the backend (an agent with
    /// approvals), so that a call reaching it was approved; otherwise
    /// (`lc-agent tool`, the MCP server, the HTTP tool endpoint) an `ask`
    /// rule refuses, saying approval is needed. Without rules and
    /// protection the backend is returned as it is.
    pub fn guard(
        &self,
        backend: impl Into<BackendSource>,
        approved_upstream: bool,
    ) -> BackendSource {
        let backend = backend.into();
        if self.checks_nothing() {
            return backend;
        }
        guard::wrap(self.clone(), backend, approved_upstream)
    }
}

/// One `[[permissions]]` entry as saved: a path rule or a command rule.
#[derive(Serialize)]
#[serde(untagged)]
enum Entry {
    /// `command = "…"`, `mode`.
    Command(CommandRule),
    /// `operations`, `paths`, `mode`.
    Path(PermissionRule),
}

impl Serialize for Permissions {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            self.rules()
                .cloned()
                .map(Entry::Path)
                .chain(self.commands().cloned().map(Entry::Command)),
        )
    }
}

impl<'de> Deserialize<'de> for Permissions {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let entries = Vec::<Value>::deserialize(d)?;
        let mut paths = Vec::new();
        let mut commands = Vec::new();
        for entry in entries {
            // A command rule is the entry with `command`; the other
            // entries are path rules (whose errors say what is wrong).
            if entry.get("command").is_some() {
                commands.push(CommandRule::deserialize(entry).map_err(serde::de::Error::custom)?);
            } else {
                paths.push(PermissionRule::deserialize(entry).map_err(serde::de::Error::custom)?);
            }
        }
        Permissions::new(paths)
            .and_then(|p| p.with_commands(commands))
            .map_err(serde::de::Error::custom)
    }
}

//! [`Workspace`]: *where the file tools work* — the session's own files, or
//! a directory with or without a shell — opened into a backend, and the one
//! rule about `execute`.
//!
//! ```text
//!  Workspace::Session                        StateBackend (the session's `files`)
//!  Workspace::directory(dir)                 FilesystemBackend (confined to dir)
//!  Workspace::directory(dir).shell(true)     LocalShellBackend: + `execute`, which waits for
//!                                            an approval unless `execute_approval(false)`,
//!    [.sandbox(SandboxMode)]                 run in a sandbox (default `workspace-write`)
//!        │ open() ─▶ BackendSource      execute_decisions() ─▶ Some(Decisions::all()) | None
//! ```
//!
//! The CLI (`--root DIR [--shell]`), the server, `lc-agent tool`, `lc-agent
//! mcp` and [`AgentSpec`](crate::spec::AgentSpec) (its `backend` field is
//! a `Workspace`) all go through this type, so a new kind of workspace is a
//! change in this file. In a blueprint:
//!
//! ```toml
//! backend = { kind = "directory", root = "./repo", shell = true }
//! # the sandbox commands run in: "read-only", "workspace-write" (default)
//! # or "full" (unconfined, on purpose):
//! # backend = { kind = "directory", root = "./repo", shell = true, sandbox = "read-only" }
//! # a toolchain under the home directory readable, its variables passed
//! # (the user's own blueprint or flags only; a stored session's are dropped):
//! # backend = { kind = "directory", root = "./repo", shell = true,
//! #             sandbox_read = ["/home/me/.cargo", "/home/me/.rustup"],
//! #             sandbox_env = ["CARGO_HOME", "RUSTUP_HOME"] }
//! # commands run without asking (only where a person is not needed):
//! # backend = { kind = "directory", root = "./repo", shell = true, execute_approval = false }
//! ```
//!
//! A shell workspace holds every `execute` call for a person's decision
//! (approve, edit, reject or respond) unless it says otherwise; an agent's
//! own `interrupt_on` entry for `execute` replaces that default. Serving the
//! tools to another program (`lc-agent mcp --shell`, `lc-agent tool`) has
//! no person to ask: those run what they are asked.
//!
//! Commands run in a sandbox ([`lc_agent_filesystem::Sandbox`]): in the
//! default `workspace-write` mode they write only the root (not its `.git`
//! and `.lc-agent`) and a private `/tmp`, read nothing of the home
//! directory, have no network and a process limit. Opening a shell
//! workspace fails when the sandbox cannot be made (bubblewrap missing),
//! unless the mode is `full`, which runs commands unconfined and says so.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::decisions::Decisions;
use lc_agent_filesystem::{
    Backend, BackendSource, DomainPattern, FilesystemBackend, LocalShellBackend, Sandbox,
    SandboxMode, SandboxNetwork, SandboxPolicy, StateBackend,
};

/// Where the file tools work (see the module docs of `workspace.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Workspace {
    /// The session's own files (saved with it). Saved as `kind = "state"`.
    #[default]
    #[serde(rename = "state")]
    Session,
    /// A directory on disk, confined; `shell` adds `execute`.
    Directory {
        /// The directory.
        root: PathBuf,
        /// Whether the model may run commands there.
        #[serde(default)]
        shell: bool,
        /// With `shell`: whether each `execute` call waits for a person's
        /// decision (default: it does).
        #[serde(default = "yes", skip_serializing_if = "is_yes")]
        execute_approval: bool,
        /// With `shell`: the sandbox commands run in (default
        /// `workspace-write`).
        #[serde(default, skip_serializing_if = "is_default_sandbox")]
        sandbox: SandboxMode,
        /// More directories the sandbox lets commands (and MCP stdio
        /// servers) read, e.g. a toolchain's home (`~/.cargo`, `~/.rustup`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        sandbox_read: Vec<PathBuf>,
        /// More directories they may write (read-only in `read-only` mode).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        sandbox_write: Vec<PathBuf>,
        /// Environment variables of this process they get, by name
        /// (`CARGO_HOME`); otherwise only `PATH`, `HOME` and `LANG`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        sandbox_env: Vec<String>,
        /// The network they get: `off` (default), `on`, or `allow` (only
        /// `sandbox_domains`, through lc-agent's proxy).
        #[serde(default, skip_serializing_if = "is_default_network")]
        sandbox_network: SandboxNetwork,
        /// The domains they may reach with `sandbox_network = "allow"`
        /// (`crates.io`, `*.example.com`); giving some implies `allow`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        sandbox_domains: Vec<DomainPattern>,
    },
}

/// A blueprint's `[sandbox]` table: the policy of commands and MCP stdio
/// servers (`read`, `write`, `env`, `network`, `domains`), folded into a
/// directory `backend` when the blueprint is read (the older
/// `backend.sandbox_read`/`sandbox_write`/`sandbox_env`/`sandbox_network`/
/// `sandbox_domains` keys still work, deprecated). A stored session's is
/// dropped like those keys (see `narrowed`).
///
/// ```toml
/// [sandbox]
/// read = ["/home/me/.rustup", "/home/me/.cargo/bin"]
/// write = ["/home/me/.cargo/registry"]
/// env = ["CARGO_HOME", "RUSTUP_HOME"]
/// network = "allow"           # off (default), on, allow
/// domains = ["crates.io", "index.crates.io", "static.crates.io"]
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxTable {
    /// Directories they may read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<PathBuf>,
    /// Directories they may write.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write: Vec<PathBuf>,
    /// Variables of this process they get, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Their network (absent: `off`, or `allow` with domains).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<SandboxNetwork>,
    /// Domains they may reach through the proxy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub domains: Vec<DomainPattern>,
}

impl SandboxTable {
    /// Whether it sets nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

impl Workspace {
    /// This workspace with a `[sandbox]` table folded in (a directory's;
    /// the session's files have no sandbox of their own). An error when
    /// its domains come with a network that ignores them.
    pub fn with_sandbox_table(self, table: &SandboxTable) -> Result<Self, String> {
        self.sandbox_extras(table.read.clone(), table.write.clone(), table.env.clone())
            .sandbox_network(table.network, table.domains.clone())
    }
}

fn is_default_network(network: &SandboxNetwork) -> bool {
    *network == SandboxNetwork::default()
}

fn is_default_sandbox(mode: &SandboxMode) -> bool {
    *mode == SandboxMode::default()
}

fn yes() -> bool {
    true
}

fn is_yes(value: &bool) -> bool {
    *value
}

/// A workspace that cannot be opened.
#[derive(Debug, thiserror::Error)]
#[error("cannot open {}: {source}", root.display())]
pub struct WorkspaceError {
    /// The directory.
    pub root: PathBuf,
    /// Why.
    #[source]
    pub source: std::io::Error,
}

impl Workspace {
    /// The session's own files.
    pub fn session() -> Self {
        Self::Session
    }

    /// A directory, without a shell.
    pub fn directory(root: impl Into<PathBuf>) -> Self {
        Self::Directory {
            root: root.into(),
            shell: false,
            execute_approval: true,
            sandbox: SandboxMode::default(),
            sandbox_read: Vec::new(),
            sandbox_write: Vec::new(),
            sandbox_env: Vec::new(),
            sandbox_network: SandboxNetwork::Off,
            sandbox_domains: Vec::new(),
        }
    }

    /// With a directory: the network commands and MCP stdio servers get
    /// (`network`; `None` keeps the current one) and domains they may
    /// reach through the proxy (some domains with no network given mean
    /// [`SandboxNetwork::Allow`]). An error when domains come with `off`
    /// or `on`, which would ignore them.
    pub fn sandbox_network(
        mut self,
        network: Option<SandboxNetwork>,
        domains: impl IntoIterator<Item = DomainPattern>,
    ) -> Result<Self, String> {
        if let Self::Directory {
            sandbox_network,
            sandbox_domains,
            ..
        } = &mut self
        {
            sandbox_domains.extend(domains);
            *sandbox_network = match network {
                Some(network) => network,
                None if !sandbox_domains.is_empty() => SandboxNetwork::Allow,
                None => *sandbox_network,
            };
            if !sandbox_domains.is_empty() && *sandbox_network != SandboxNetwork::Allow {
                return Err(format!(
                    "allowed domains need the network `allow` (it is `{sandbox_network}`): \
                     drop --sandbox-network or give --sandbox-network allow"
                ));
            }
        }
        Ok(self)
    }

    /// With a directory: what the sandbox adds for commands and MCP stdio
    /// servers — directories they may read, directories they may write,
    /// variables they get by name (the user's own invocation only: a
    /// stored session's are dropped, see `narrowed`).
    #[must_use]
    pub fn sandbox_extras(
        mut self,
        read: impl IntoIterator<Item = PathBuf>,
        write: impl IntoIterator<Item = PathBuf>,
        env: impl IntoIterator<Item = String>,
    ) -> Self {
        if let Self::Directory {
            sandbox_read,
            sandbox_write,
            sandbox_env,
            ..
        } = &mut self
        {
            sandbox_read.extend(read);
            sandbox_write.extend(write);
            sandbox_env.extend(env);
        }
        self
    }

    /// The sandbox policy of `mode` with this workspace's extras (absolute
    /// directories: a relative one is taken from the current directory).
    fn policy(&self, mode: SandboxMode) -> SandboxPolicy {
        let mut policy = SandboxPolicy::new(mode);
        if let Self::Directory {
            sandbox_read,
            sandbox_write,
            sandbox_env,
            sandbox_network,
            sandbox_domains,
            ..
        } = self
        {
            policy = policy.network_mode(*sandbox_network);
            for domain in sandbox_domains {
                policy = policy.allow_domain(domain.clone());
            }
            let absolute = |p: &PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
            for dir in sandbox_read {
                policy = policy.readable(absolute(dir));
            }
            for dir in sandbox_write {
                policy = policy.writable(absolute(dir));
            }
            for name in sandbox_env {
                policy = policy.pass_env(name.clone());
            }
        }
        policy
    }

    /// With a directory: whether the model may run commands there (each
    /// call asks first). The session's files have no shell: unchanged.
    #[must_use]
    pub fn shell(mut self, on: bool) -> Self {
        if let Self::Directory { shell, .. } = &mut self {
            *shell = on;
        }
        self
    }

    /// With a shell: whether each `execute` call waits for a person's
    /// decision (default `true`).
    #[must_use]
    pub fn execute_approval(mut self, on: bool) -> Self {
        if let Self::Directory {
            execute_approval, ..
        } = &mut self
        {
            *execute_approval = on;
        }
        self
    }

    /// With a shell: the sandbox commands run in (default
    /// [`SandboxMode::WorkspaceWrite`]; [`SandboxMode::Full`] runs them
    /// unconfined).
    #[must_use]
    pub fn sandbox(mut self, mode: SandboxMode) -> Self {
        if let Self::Directory { sandbox, .. } = &mut self {
            *sandbox = mode;
        }
        self
    }

    /// The directory, when the workspace is one.
    pub fn root(&self) -> Option<&Path> {
        match self {
            Self::Session => None,
            Self::Directory { root, .. } => Some(root),
        }
    }

    /// Whether the model may run commands (`execute` is offered).
    #[cfg(test)]
    pub(crate) fn has_shell(&self) -> bool {
        matches!(self, Self::Directory { shell: true, .. })
    }

    /// The same workspace for one user of a shared server: a directory
    /// becomes `<root>/<user>`; the session's files stay the session's.
    #[must_use]
    pub fn for_user(&self, user: &str) -> Self {
        match self {
            Self::Session => Self::Session,
            Self::Directory {
                root,
                shell,
                execute_approval,
                sandbox,
                sandbox_read,
                sandbox_write,
                sandbox_env,
                sandbox_network,
                sandbox_domains,
            } => Self::Directory {
                root: root.join(user),
                shell: *shell,
                execute_approval: *execute_approval,
                sandbox: *sandbox,
                sandbox_read: sandbox_read.clone(),
                sandbox_write: sandbox_write.clone(),
                sandbox_env: sandbox_env.clone(),
                sandbox_network: *sandbox_network,
                sandbox_domains: sandbox_domains.clone(),
            },
        }
    }

    /// The same workspace with an absolute directory, so that a session
    /// resumed from another working directory finds it again.
    pub fn absolute(self) -> Result<Self, WorkspaceError> {
        match self {
            Self::Session => Ok(Self::Session),
            Self::Directory {
                root,
                shell,
                execute_approval,
                sandbox,
                sandbox_read,
                sandbox_write,
                sandbox_env,
                sandbox_network,
                sandbox_domains,
            } => {
                let absolute = std::fs::canonicalize(&root)
                    .map_err(|source| WorkspaceError { root, source })?;
                Ok(Self::Directory {
                    root: absolute,
                    shell,
                    execute_approval,
                    sandbox,
                    sandbox_read,
                    sandbox_write,
                    sandbox_env,
                    sandbox_network,
                    sandbox_domains,
                })
            }
        }
    }

    /// The backend the file tools use (a directory must exist; a shell's
    /// sandbox must be possible here unless its mode is `full`).
    pub fn open(&self) -> Result<BackendSource, WorkspaceError> {
        let failed = |root: &Path| {
            let root = root.to_path_buf();
            move |source| WorkspaceError { root, source }
        };
        Ok(match self {
            Self::Session => StateBackend::factory().into(),
            Self::Directory {
                root,
                shell: true,
                sandbox,
                ..
            } => {
                let fs = FilesystemBackend::new(root).map_err(failed(root))?;
                let sandbox = Sandbox::open(self.policy(*sandbox))
                    .map_err(|e| failed(root)(std::io::Error::other(e)))?;
                LocalShellBackend::sandboxed(fs, sandbox).into()
            }
            Self::Directory {
                root, shell: false, ..
            } => FilesystemBackend::new(root).map_err(failed(root))?.into(),
        })
    }

    /// The sandbox every other process the agent starts runs in (MCP
    /// stdio servers), and its root: the shell's profile — the
    /// directory's sandbox mode there (also without a shell); for the
    /// session's files, `read-only` in `here`. An error when the sandbox
    /// cannot be made here (the shell's own error).
    pub fn process_sandbox(&self, here: &Path) -> Result<(Sandbox, PathBuf), WorkspaceError> {
        let (root, mode) = match self {
            Self::Session => (here, SandboxMode::ReadOnly),
            Self::Directory { root, sandbox, .. } => (root.as_path(), *sandbox),
        };
        let failed = |source| WorkspaceError {
            root: root.to_path_buf(),
            source,
        };
        let root = std::fs::canonicalize(root).map_err(failed)?;
        let sandbox =
            Sandbox::open(self.policy(mode)).map_err(|e| failed(std::io::Error::other(e)))?;
        Ok((sandbox, root))
    }

    /// The backend of a directory, on its own, for serving the tools
    /// outside a session (`None` for the session's files, which need one).
    pub fn open_directory(&self) -> Result<Option<Arc<dyn Backend>>, WorkspaceError> {
        match self.open()? {
            BackendSource::Ready(backend) if self.root().is_some() => Ok(Some(backend)),
            _ => Ok(None),
        }
    }

    /// The decisions an `execute` call waits for, when it waits: a shell
    /// workspace asks a person (any decision) unless told otherwise.
    pub(crate) fn execute_decisions(&self) -> Option<Decisions> {
        match self {
            Self::Directory {
                shell: true,
                execute_approval: true,
                ..
            } => Some(Decisions::all()),
            _ => None,
        }
    }

    /// This workspace as stored in a session the caller resumes without
    /// naming a workspace: no shell (nor its sandbox mode or unasked
    /// commands), and the session's own files instead of a directory
    /// outside `within` (when given). Returns what was narrowed, in
    /// sentences (empty: nothing was).
    pub(crate) fn narrowed(&self, within: Option<&Path>) -> (Self, Vec<String>) {
        let Self::Directory {
            root,
            shell,
            sandbox,
            sandbox_read,
            sandbox_write,
            sandbox_env,
            sandbox_network,
            sandbox_domains,
            ..
        } = self
        else {
            return (self.clone(), Vec::new());
        };
        let mut said = Vec::new();
        if *sandbox_network != SandboxNetwork::Off || !sandbox_domains.is_empty() {
            let domains: Vec<String> = sandbox_domains.iter().map(ToString::to_string).collect();
            said.push(format!(
                "the session's sandbox network ({sandbox_network}{}) is off: only your own \
                 command line turns it on (--sandbox-network, --sandbox-allow-domain)",
                if domains.is_empty() {
                    String::new()
                } else {
                    format!(": {}", domains.join(", "))
                }
            ));
        }
        if !(sandbox_read.is_empty() && sandbox_write.is_empty() && sandbox_env.is_empty()) {
            said.push(
                "the session's extra sandbox directories and variables are off: only your own \
                 command line adds them (--sandbox-read, --sandbox-write, --sandbox-env)"
                    .to_string(),
            );
        }
        let outside = within.is_some_and(|within| {
            let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
            !canonical(root).starts_with(canonical(within))
        });
        if outside {
            said.push(format!(
                "the session's workspace {} is outside the current directory, so the file tools \
                 work in the session's own files; pass --root {} to work there",
                root.display(),
                root.display()
            ));
        }
        if *shell {
            let mode = match sandbox {
                SandboxMode::WorkspaceWrite => String::new(),
                other => format!(" (sandbox {other})"),
            };
            said.push(format!(
                "the session's shell{mode} is off: only your own command line turns a shell on \
                 (pass --root {} --shell)",
                root.display()
            ));
        }
        let narrowed = if outside {
            Self::Session
        } else {
            // Read-only stays read-only; anything else is the default.
            let sandbox = match sandbox {
                SandboxMode::ReadOnly => SandboxMode::ReadOnly,
                _ => SandboxMode::default(),
            };
            Self::directory(root).sandbox(sandbox)
        };
        (narrowed, said)
    }

    /// A short description for messages: `the session's files`, `DIR`,
    /// `DIR (with a shell)`.
    pub fn describe(&self) -> String {
        match self {
            Self::Session => "the session's files".to_string(),
            Self::Directory {
                root,
                shell: true,
                sandbox: SandboxMode::WorkspaceWrite,
                ..
            } => format!("{} (with a shell)", root.display()),
            Self::Directory {
                root,
                shell: true,
                sandbox,
                ..
            } => format!("{} (with a shell, sandbox {sandbox})", root.display()),
            Self::Directory { root, .. } => root.display().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_forms_are_stable() {
        let json = |w: &Workspace| serde_json::to_string(w).unwrap();
        assert_eq!(json(&Workspace::Session), r#"{"kind":"state"}"#);
        assert_eq!(
            json(&Workspace::directory("/w")),
            r#"{"kind":"directory","root":"/w","shell":false}"#
        );
        assert_eq!(
            json(
                &Workspace::directory("/w")
                    .shell(true)
                    .execute_approval(false)
            ),
            r#"{"kind":"directory","root":"/w","shell":true,"execute_approval":false}"#
        );
        let read: Workspace =
            serde_json::from_str(r#"{"kind":"directory","root":"/w","shell":true}"#).unwrap();
        assert_eq!(read, Workspace::directory("/w").shell(true));
        assert!(serde_json::from_str::<Workspace>(r#"{"kind":"cloud"}"#).is_err());
        let read: Workspace = serde_json::from_str(
            r#"{"kind":"directory","root":"/w","shell":true,"sandbox":"read-only"}"#,
        )
        .unwrap();
        assert_eq!(
            read,
            Workspace::directory("/w")
                .shell(true)
                .sandbox(SandboxMode::ReadOnly)
        );
        assert_eq!(
            json(&read),
            r#"{"kind":"directory","root":"/w","shell":true,"sandbox":"read-only"}"#
        );
    }

    /// A stored session's extra sandbox directories and variables are
    /// dropped, and said; they round-trip in a blueprint.
    #[test]
    fn a_stored_sessions_sandbox_extras_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::directory(dir.path()).shell(true).sandbox_extras(
            [PathBuf::from("/home/me/.cargo")],
            [PathBuf::from("/var/cache/x")],
            ["CARGO_HOME".to_string()],
        );
        let text = serde_json::to_string(&ws).unwrap();
        assert!(
            text.contains(r#""sandbox_read":["/home/me/.cargo"]"#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<Workspace>(&text).unwrap(), ws);
        let (narrowed, said) = ws.narrowed(None);
        assert_eq!(narrowed, Workspace::directory(dir.path()));
        assert!(
            said.iter().any(|s| s.contains("extra sandbox directories")),
            "{said:?}"
        );
    }

    /// A stored session's network (on, or an allow-list) is turned off,
    /// and said; it round-trips in a blueprint; domains with `off` are an
    /// error.
    #[test]
    fn a_stored_sessions_network_is_turned_off() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::directory(dir.path())
            .shell(true)
            .sandbox_network(None, ["crates.io".parse().unwrap()])
            .unwrap();
        let text = serde_json::to_string(&ws).unwrap();
        assert!(
            text.contains(r#""sandbox_network":"allow","sandbox_domains":["crates.io"]"#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<Workspace>(&text).unwrap(), ws);
        let (narrowed, said) = ws.narrowed(None);
        assert_eq!(narrowed, Workspace::directory(dir.path()));
        assert!(
            said.iter()
                .any(|s| s.contains("sandbox network (allow: crates.io) is off")),
            "{said:?}"
        );
        let on = Workspace::directory(dir.path())
            .sandbox_network(Some(SandboxNetwork::On), [])
            .unwrap();
        assert_eq!(on.narrowed(None).0, Workspace::directory(dir.path()));
        assert!(Workspace::directory(dir.path())
            .sandbox_network(Some(SandboxNetwork::Off), ["crates.io".parse().unwrap()])
            .is_err());
    }

    /// `[sandbox]` folds into a directory backend, as the older
    /// `backend.sandbox_*` keys do.
    #[test]
    fn a_sandbox_table_folds_into_the_backend() {
        let spec = crate::AgentSpec::from_toml(
            "backend = { kind = \"directory\", root = \"/r\", shell = true, \
             sandbox_env = [\"A\"] }\n[sandbox]\nread = [\"/x\"]\nenv = [\"B\"]\n\
             domains = [\"crates.io\"]\n",
        )
        .unwrap();
        let want = Workspace::directory("/r")
            .shell(true)
            .sandbox_extras(
                [PathBuf::from("/x")],
                [],
                ["A".to_string(), "B".to_string()],
            )
            .sandbox_network(Some(SandboxNetwork::Allow), ["crates.io".parse().unwrap()])
            .unwrap();
        assert_eq!(spec.backend, want);
        assert!(spec.sandbox.is_empty());
        let bad = crate::AgentSpec::from_toml(
            "backend = { kind = \"directory\", root = \"/r\" }\n[sandbox]\nnetwork = \"on\"\n\
             domains = [\"crates.io\"]\n",
        );
        assert!(bad.is_err());
    }

    #[test]
    fn a_shell_asks_before_execute_unless_told_otherwise() {
        assert!(Workspace::Session.execute_decisions().is_none());
        assert!(Workspace::directory("/w").execute_decisions().is_none());
        assert_eq!(
            Workspace::directory("/w").shell(true).execute_decisions(),
            Some(Decisions::all())
        );
        assert!(Workspace::directory("/w")
            .shell(true)
            .execute_approval(false)
            .execute_decisions()
            .is_none());
        assert!(!Workspace::Session.shell(true).has_shell());
    }

    #[test]
    fn users_get_their_own_directory_and_a_missing_one_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::directory(dir.path()).for_user("alice");
        assert_eq!(ws.root(), Some(dir.path().join("alice").as_path()));
        let message = ws.open().err().unwrap().to_string();
        assert!(message.starts_with("cannot open "), "{message}");
        assert!(message.contains("alice"), "{message}");
        std::fs::create_dir(dir.path().join("alice")).unwrap();
        assert!(ws.open().is_ok());
    }
}

//! [`SandboxMode`] and [`SandboxPolicy`]: what a sandboxed command may do.

use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::network::{DomainPattern, SandboxNetwork};

/// How far commands are confined (serde and CLI names `read-only`,
/// `workspace-write`, `full`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// The root and the system are read-only; only a private `/tmp` is
    /// writable.
    ReadOnly,
    /// The root is writable except its read-only subpaths (`.git`,
    /// `.lc-agent`), which commands cannot create either when they do
    /// not exist; the rest as in `ReadOnly`. The default.
    #[default]
    WorkspaceWrite,
    /// No sandbox: commands run as the user, as a plain shell would
    /// (with the clean environment and the timeout). Loud.
    Full,
}

impl SandboxMode {
    /// The name (`read-only`, `workspace-write`, `full`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::Full => "full",
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SandboxMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read-only" => Ok(Self::ReadOnly),
            "workspace-write" => Ok(Self::WorkspaceWrite),
            "full" => Ok(Self::Full),
            other => Err(format!(
                "unknown sandbox mode `{other}` (read-only, workspace-write or full)"
            )),
        }
    }
}

/// The subpaths of the root bound read-only by default.
pub(crate) const DEFAULT_READ_ONLY: &[&str] = &[".git", ".lc-agent"];

/// The process (task) limit by default.
pub(crate) const DEFAULT_MAX_PROCESSES: u32 = 1024;

/// What a sandboxed command may touch: the mode, the network, more
/// writable or readable directories, read-only subpaths of the root, a
/// process limit and the environment variables passed through by name.
///
/// ```
/// use lc_agent_filesystem::{SandboxMode, SandboxPolicy};
///
/// let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite)
///     .network(true)
///     .pass_env("CARGO_HOME");
/// assert_eq!(policy.mode(), SandboxMode::WorkspaceWrite);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    pub(crate) mode: SandboxMode,
    pub(crate) network: SandboxNetwork,
    pub(crate) domains: Vec<DomainPattern>,
    pub(crate) writable: Vec<PathBuf>,
    pub(crate) readable: Vec<PathBuf>,
    pub(crate) read_only: Vec<PathBuf>,
    /// Paths in the root commands can neither read nor write (absolute:
    /// the deny rules of `denied.rs`, for one command).
    pub(crate) hidden: Vec<PathBuf>,
    pub(crate) max_processes: u32,
    pub(crate) env_passthrough: Vec<String>,
}

impl Default for SandboxPolicy {
    fn default() -> Self {
        Self::new(SandboxMode::default())
    }
}

impl SandboxPolicy {
    /// The policy of `mode`: no network, the root's `.git` and `.lc-agent`
    /// read-only, at most 1,024 processes, no variables passed through.
    pub fn new(mode: SandboxMode) -> Self {
        Self {
            mode,
            network: SandboxNetwork::Off,
            domains: Vec::new(),
            writable: Vec::new(),
            readable: Vec::new(),
            read_only: DEFAULT_READ_ONLY.iter().map(PathBuf::from).collect(),
            hidden: Vec::new(),
            max_processes: DEFAULT_MAX_PROCESSES,
            env_passthrough: Vec::new(),
        }
    }

    /// The mode.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// Whether commands reach the network (default: no network at all,
    /// not even the host's loopback): `true` is [`SandboxNetwork::On`],
    /// `false` [`SandboxNetwork::Off`].
    #[must_use]
    pub fn network(self, on: bool) -> Self {
        self.network_mode(if on {
            SandboxNetwork::On
        } else {
            SandboxNetwork::Off
        })
    }

    /// The network commands get: off, on, or only the allowed domains
    /// through lc-agent's proxy ([`SandboxNetwork::Allow`], with
    /// [`allow_domain`](Self::allow_domain)).
    #[must_use]
    pub fn network_mode(mut self, network: SandboxNetwork) -> Self {
        self.network = network;
        self
    }

    /// A domain commands may reach through the proxy (`crates.io`, or
    /// `*.example.com` for its subdomains); turns the network to
    /// [`SandboxNetwork::Allow`].
    #[must_use]
    pub fn allow_domain(mut self, domain: DomainPattern) -> Self {
        self.network = SandboxNetwork::Allow;
        if !self.domains.contains(&domain) {
            self.domains.push(domain);
        }
        self
    }

    /// The network commands get.
    pub fn network_setting(&self) -> SandboxNetwork {
        self.network
    }

    /// The domains allowed through the proxy (with [`SandboxNetwork::Allow`]).
    pub fn allowed_domains(&self) -> &[DomainPattern] {
        &self.domains
    }

    /// Another directory commands may write (absolute; ignored when
    /// missing). In `read-only` mode it is read-only.
    #[must_use]
    pub fn writable(mut self, dir: impl Into<PathBuf>) -> Self {
        self.writable.push(dir.into());
        self
    }

    /// Another directory commands may read (absolute; ignored when
    /// missing), e.g. a toolchain under the home directory.
    #[must_use]
    pub fn readable(mut self, dir: impl Into<PathBuf>) -> Self {
        self.readable.push(dir.into());
        self
    }

    /// A path kept read-only inside the writable root (relative to the
    /// root, or absolute inside it), besides `.git` and `.lc-agent`;
    /// commands cannot create it either while it does not exist.
    #[must_use]
    pub fn read_only(mut self, path: impl Into<PathBuf>) -> Self {
        self.read_only.push(path.into());
        self
    }

    /// The most processes (threads count) a command may have at once,
    /// enforced with a pids cgroup where this process can make one (cgroup
    /// v2 under its own cgroup, else v1 `/sys/fs/cgroup/pids`), else with
    /// `RLIMIT_NPROC` (the machine's processes now plus `max`; not
    /// enforced for root, where the timeout bounds a fork bomb).
    /// [`Sandbox::process_limit`](super::Sandbox::process_limit) says
    /// which; a command that reaches a cgroup's limit gets a line saying so.
    #[must_use]
    pub fn max_processes(mut self, max: u32) -> Self {
        self.max_processes = max.max(1);
        self
    }

    /// An environment variable of this process that commands get (by
    /// name; commands otherwise see only `PATH`, `HOME` and `LANG`).
    #[must_use]
    pub fn pass_env(mut self, name: impl Into<String>) -> Self {
        self.env_passthrough.push(name.into());
        self
    }
}

impl SandboxPolicy {
    /// This policy with the deny rules of the running call applied in
    /// `root` (see `denied.rs`): hidden paths, and read-only ones (a
    /// missing hidden one is kept from being created).
    pub(crate) fn with_denials(&self, root: &Path) -> Option<Self> {
        let denials = super::denied::current();
        if denials.is_empty() {
            return None;
        }
        let (hidden, read_only) = super::denied::expand(root, &denials);
        let mut policy = self.clone();
        for path in hidden {
            if path.symlink_metadata().is_ok() {
                policy.hidden.push(path);
            } else {
                policy.read_only.push(path);
            }
        }
        policy.read_only.extend(read_only);
        Some(policy)
    }
}

/// A protected (read-only) path of a root, as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Protected {
    /// It exists: its real path (links resolved), inside the root.
    Existing(PathBuf),
    /// It does not exist yet (a command could create it): the path in
    /// the root, whose nearest existing ancestor is really inside the root.
    Missing(PathBuf),
}

impl SandboxPolicy {
    /// The read-only paths of the policy in `root` (canonical): each one
    /// lexically inside the root (no `..`, not the root itself), as
    /// [`Protected`]. One that leaves the root (through `..` or a link to
    /// elsewhere) or is a dangling link is left out: nothing in the
    /// sandbox can write outside the root anyway.
    pub(crate) fn protected_paths(&self, root: &Path) -> Vec<Protected> {
        let mut found = Vec::new();
        for path in &self.read_only {
            let joined = root.join(path);
            if joined
                .components()
                .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
                || !joined.starts_with(root)
                || joined == root
            {
                continue;
            }
            let protected = match joined.canonicalize() {
                Ok(real) if real.starts_with(root) && real != root => Protected::Existing(real),
                Ok(_) => continue,
                // A dangling link: left out (see above).
                Err(_) if joined.symlink_metadata().is_ok() => continue,
                Err(_) => {
                    let inside = joined
                        .ancestors()
                        .find(|a| a.symlink_metadata().is_ok())
                        .and_then(|a| a.canonicalize().ok())
                        .is_some_and(|a| a.starts_with(root));
                    if !inside {
                        continue;
                    }
                    Protected::Missing(joined)
                }
            };
            if !found.contains(&protected) {
                found.push(protected);
            }
        }
        found
    }
}

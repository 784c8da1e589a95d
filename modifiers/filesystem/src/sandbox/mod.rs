//! The sandbox `execute` runs in: a [`SandboxPolicy`] (what a command may
//! touch) applied by a [`SandboxMechanism`] (how), held together by a
//! [`Sandbox`] that [`LocalShellBackend`](crate::LocalShellBackend) runs
//! every command through.
//!
//! ```text
//!  SandboxPolicy (policy.rs)  mode: read-only | workspace-write | full,
//!    │                        network, writable/readable/read-only paths,
//!    │                        max_processes, env_passthrough
//!    ▼
//!  Sandbox::open ── self-check once ──▶ dyn SandboxMechanism::prepare(policy, root, command)
//!    │                                    ├─ Auto (auto.rs): bubblewrap where it works, else Landlock
//!    │                                    ├─ Landlock (landlock.rs): in `sh` itself
//!    │                                    └─ Bubblewrap (bubblewrap.rs, mount_points.rs): `bwrap … sh -c`
//!    │                                       both: seccomp.rs's filter, no capabilities
//!    ├─ bubblewrap/kept/: in a long process, bubblewrap sandboxes kept across
//!    │         commands (one per policy, a spawner inside starts each
//!    │         command; its security review is in its docs)
//!    ├─ fd_passing.rs: descriptors over Unix sockets (SCM_RIGHTS, rustix)
//!    ├─ network/: off | on | allow — a domain allow-list's egress proxy
//!    │            (proxy.rs) and bubblewrap's in-sandbox helper (helper.rs)
//!    ├─ denied.rs: the running call's path `deny` rules, as hidden and
//!    │             read-only paths of one command's policy
//!    ├─ probe_cache.rs: a mechanism's self-check remembered across processes
//!    ├─ ProcessLimit (limits.rs): a pids cgroup per command (v2, else v1),
//!    │                            else RLIMIT_NPROC (MCP servers too)
//!    └─ Sandbox::program (program.rs): a long-lived program (an MCP stdio
//!                          server) in the same profile: `cd CWD && exec PROGRAM ARGS`,
//!                          its own directory readable, the same clean environment
//! ```
//!
//! **One profile, two mechanisms** (`auto.rs` chooses). Under both,
//! the command holds no capability (started by root too), runs with
//! `no_new_privs`, and under the seccomp filter of `seccomp.rs` (sockets
//! without the network, `io_uring`, `setsid`, mounts, `chroot`,
//! namespaces, `ptrace`, `bpf`, modules, keyrings, device nodes,
//! set-user-ID and set-group-ID bits, …); it
//! writes only the root and a private temporary directory, reads the
//! system and the root, and cannot write the policy's protected paths
//! (`.git`, `.lc-agent`) **even before they exist** (creating them is a
//! write).
//!
//! [`Bubblewrap`] (`bwrap`) is the default wherever it can make a
//! sandbox, in every mode: mount namespaces give exactly the read set,
//! protected paths bound back read-only (a missing one over an empty
//! directory made for the command, `mount_points.rs`), a private `/tmp`
//! and `/dev/shm`, the sandbox's own `/` and `/dev` read-only;
//! a network namespace removes the network; a PID namespace ends every
//! process with the sandbox and hides the host's processes; a user
//! namespace with no nested ones (started by root, the command is
//! `nobody` inside). In a long process (the agent, the server, `mcp
//! --shell`) one sandbox per policy is kept across commands, a spawner
//! inside starting each command in it (`bubblewrap/kept/`: a command then costs a
//! `fork` and an `exec`, not a whole `bwrap`; nothing of one command
//! reaches the next). [`Landlock`] confines `sh` itself between fork and
//! exec (Landlock ABI 6: filesystem, TCP bind/connect, signal and
//! abstract-socket scopes, plus the filter), with no namespaces: the
//! fallback where bubblewrap is missing or user namespaces are refused
//! (most containers), and cheaper. Landlock only grants, so a writable
//! root with protected paths gets writes per entry other than those
//! paths, and the root takes no new top-level entries. The ruleset, the
//! filter and a private temporary directory are built once per sandbox
//! and policy and shared by its commands (built again when the root's
//! rules change); a command only makes its own `TMPDIR` inside that
//! directory. `LC_AGENT_SANDBOX_MECHANISM=landlock|bubblewrap` forces one.
//! What one `true` costs under each mechanism and unconfined: `cargo run
//! --release --example sandbox` prints it; `-p lc-agent-filesystem
//! --example execute_once` is one command in a fresh process, for
//! hyperfine (its header has the command line).
//! Another mechanism (a container) implements [`SandboxMechanism`].
//!
//! **Never silently unconfined.** [`Sandbox::open`] with a mode that needs
//! a sandbox checks its mechanism once per process (a confined `true`;
//! the result is cached, and a success remembered across processes in
//! `$LC_AGENT_HOME/cache` keyed by the kernel, the user, the namespaces
//! and the `bwrap` binary: `probe_cache.rs`, which says why that cannot
//! weaken the sandbox) and fails with [`SandboxError`] when neither
//! Landlock nor bubblewrap can make a sandbox here; only [`SandboxMode::Full`], asked for by name,
//! runs commands as the user, and its first command's output says so.
//!
//! What the sandbox does not do: `/etc` is readable (minus `/etc/shadow`
//! and `/etc/gshadow`), as are `/usr` and `/opt`; files the command may
//! write in the root can be anything (a `Makefile` a person runs later);
//! under Landlock, every process's command line, `status` and `stat` in
//! `/proc` are readable (Landlock cannot hide `/proc/PID` entries without
//! also hiding a command's own `/proc/self` from its children; another
//! process's environment, descriptors, memory, `cwd` and `root` are
//! refused, as `ptrace` is), and a missing protected path is kept only
//! by the root taking no new entries; under bubblewrap, a missing
//! protected path shows on the host as an empty directory while a
//! command runs (removed after it, when still empty); a protected path
//! that is a symbolic link keeps its target read-only, not the link; the
//! process limit is a pids cgroup where one can be made, else
//! `RLIMIT_NPROC`, which the kernel does not enforce for root (see
//! `limits.rs` and [`SandboxPolicy::max_processes`]).

mod auto;
mod bubblewrap;
pub(crate) mod denied;
pub(crate) mod drain;
pub(crate) mod env;
mod fd_passing;
mod landlock;
mod limits;
mod mount_points;
mod network;
mod policy;
mod probe_cache;
mod program;
mod roles;
mod seccomp;

use std::ffi::OsString;
use std::fmt::Debug;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use auto::Auto;
pub use bubblewrap::kept::KeptSandboxes;
pub use bubblewrap::Bubblewrap;
pub use landlock::Landlock;
pub(crate) use limits::{LimitKind, ProcessLimit};
pub use network::{DomainPattern, SandboxNetwork};
pub use policy::{SandboxMode, SandboxPolicy};
pub use program::{KeepAlive, SandboxedProgram};
pub use roles::run_helper_if_asked;

/// The environment variable that chooses the mechanism [`Sandbox::open`] uses.
const MECHANISM_VARIABLE: &str = "LC_AGENT_SANDBOX_MECHANISM";

/// A sandbox that cannot be made.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "cannot sandbox commands ({mode} mode): {reason}. Install bubblewrap \
     (`apt-get install bubblewrap`), or run commands unconfined on purpose \
     with `--sandbox full` (blueprint: `sandbox = \"full\"`)"
)]
pub struct SandboxError {
    /// The mode that needed the sandbox.
    pub mode: SandboxMode,
    /// What is missing or failed.
    pub reason: String,
}

/// How a command is confined: turns a shell command into a process,
/// ready to spawn, that runs it confined by a [`SandboxPolicy`].
pub trait SandboxMechanism: Send + Sync + Debug {
    /// The mechanism's name for messages (`bubblewrap`, `landlock`).
    fn name(&self) -> &str;

    /// Whether the mechanism can make a sandbox on this machine (`Err`
    /// says what is missing). [`Sandbox::open`] calls it once.
    fn check(&self) -> Result<(), String>;

    /// The process that runs `sh -c command` confined by `policy`, with
    /// `root` (canonical) as working directory and `HOME`, and the
    /// environment `env` (and nothing else but `TMPDIR`). The caller sets
    /// its working directory, standard streams and process group.
    fn prepare(
        &self,
        policy: &SandboxPolicy,
        root: &Path,
        env: &[(OsString, OsString)],
        command: &str,
    ) -> Result<Prepared, String>;

    /// Sandboxes kept across the commands of one [`Sandbox`], when this
    /// mechanism keeps them (bubblewrap with a spawner program: see
    /// [`KeptSandboxes`]); `None`, the default, runs every command through
    /// [`SandboxMechanism::prepare`]. [`Sandbox::with_mechanism`] calls it
    /// once.
    fn kept_sandboxes(&self) -> Option<KeptSandboxes> {
        None
    }
}

/// A command a [`SandboxMechanism`] made ready: the process to spawn and
/// what must live until it ends (a private temporary directory).
pub struct Prepared {
    command: Command,
    keep: Vec<Box<dyn Send + Sync>>,
}

impl Prepared {
    /// `command`, with nothing to keep.
    pub fn new(command: Command) -> Self {
        Self {
            command,
            keep: Vec::new(),
        }
    }

    /// Keeps `value` until the command has ended (then drops it).
    #[must_use]
    pub fn keep(mut self, value: impl Send + Sync + 'static) -> Self {
        self.keep.push(Box::new(value));
        self
    }

    pub(crate) fn into_parts(self) -> (Command, Vec<Box<dyn Send + Sync>>) {
        (self.command, self.keep)
    }
}

impl Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("command", &self.command)
            .field("keep", &self.keep.len())
            .finish()
    }
}

/// A policy and the mechanism that applies it (none in
/// [`SandboxMode::Full`]).
#[derive(Debug, Clone)]
pub struct Sandbox {
    policy: SandboxPolicy,
    mechanism: Option<Arc<dyn SandboxMechanism>>,
    /// The mechanism's kept sandboxes, shared by this sandbox's clones and
    /// ended with the last of them.
    kept: Option<Arc<KeptSandboxes>>,
}

impl Sandbox {
    /// The sandbox for `policy` with the mechanism of this machine,
    /// checked once per process: an error when the mode needs a sandbox
    /// that cannot be made.
    ///
    /// The mechanism is bubblewrap where it can make a sandbox, and
    /// Landlock + seccomp (Landlock ABI 6) otherwise (see the module
    /// docs). The
    /// environment variable `LC_AGENT_SANDBOX_MECHANISM` (`auto`,
    /// `landlock`, `bubblewrap`) names one; a name it does not know is an
    /// error.
    pub fn open(policy: SandboxPolicy) -> Result<Self, SandboxError> {
        let name = std::env::var(MECHANISM_VARIABLE).unwrap_or_default();
        let mechanism: Arc<dyn SandboxMechanism> = match name.as_str() {
            "" | "auto" => Arc::new(Auto::default()),
            "landlock" => Arc::new(Landlock::default()),
            "bubblewrap" => Arc::new(Bubblewrap::default()),
            _ if policy.mode() == SandboxMode::Full => Arc::new(Auto::default()),
            other => {
                return Err(SandboxError {
                    mode: policy.mode(),
                    reason: format!(
                        "{MECHANISM_VARIABLE}={other} names no mechanism (auto, landlock or \
                         bubblewrap)"
                    ),
                })
            }
        };
        Self::with_mechanism(policy, mechanism)
    }

    /// The sandbox for `policy` with another mechanism (checked now).
    pub fn with_mechanism(
        policy: SandboxPolicy,
        mechanism: Arc<dyn SandboxMechanism>,
    ) -> Result<Self, SandboxError> {
        if policy.mode() == SandboxMode::Full {
            return Ok(Self {
                policy,
                mechanism: None,
                kept: None,
            });
        }
        mechanism.check().map_err(|reason| SandboxError {
            mode: policy.mode(),
            reason,
        })?;
        Ok(Self {
            policy,
            kept: mechanism.kept_sandboxes().map(Arc::new),
            mechanism: Some(mechanism),
        })
    }

    /// The policy.
    pub(crate) fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }

    /// How a command's processes are bounded here: `a pids cgroup (v2)`,
    /// `a pids cgroup (v1)` or `RLIMIT_NPROC` (see
    /// [`SandboxPolicy::max_processes`]); `none` in full mode.
    pub fn process_limit(&self) -> &'static str {
        match self.mechanism {
            Some(_) => LimitKind::here().name(),
            None => "none",
        }
    }

    pub(crate) fn mechanism(&self) -> Option<&Arc<dyn SandboxMechanism>> {
        self.mechanism.as_ref()
    }

    /// The kept sandboxes commands run in, when the mechanism keeps them.
    pub(crate) fn kept(&self) -> Option<&KeptSandboxes> {
        self.kept.as_deref()
    }
}

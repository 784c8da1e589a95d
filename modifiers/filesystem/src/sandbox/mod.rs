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
//!    │                                    ├─ Auto (auto.rs): one of the two per command
//!    │                                    ├─ Landlock (landlock.rs + seccomp.rs): in `sh` itself
//!    │                                    └─ Bubblewrap (bubblewrap.rs): `bwrap … sh -c`
//!    └─ ProcessLimit (limits.rs): a pids cgroup per command (v2, else v1),
//!                                 else RLIMIT_NPROC
//! ```
//!
//! **Two mechanisms, chosen per command** (`auto.rs`). [`Landlock`]
//! confines `sh` itself between fork and exec: Landlock rules (ABI 6:
//! filesystem, TCP bind/connect, signal and abstract-socket scopes) and a
//! seccomp filter (`seccomp.rs`: sockets, `io_uring`, `setsid`, and what
//! root could use past Landlock); no namespaces. The ruleset, the filter
//! and a private temporary directory are built once per sandbox and
//! policy and shared by its commands (built again when the root's rules
//! change); a command only makes its own `TMPDIR` inside that directory.
//! What one `true` costs under each mechanism and unconfined: `cargo run
//! --release --example sandbox` prints it.
//! Landlock cannot carve a read-only `.git` out of a writable root, so a
//! root holding a read-only path (`.git`, `.lc-agent`) runs in
//! [`Bubblewrap`] (`bwrap`): mount namespaces give exactly the read set,
//! `.git` bound back read-only, a private `/tmp`; a network namespace
//! removes the network; a PID namespace ends everything with the sandbox.
//! Without bubblewrap such a root still runs in Landlock, writes granted
//! per top-level entry other than the read-only ones (no new top-level
//! entries). `LC_AGENT_SANDBOX_MECHANISM=landlock|bubblewrap` forces one.
//! Another mechanism (a container) implements [`SandboxMechanism`].
//!
//! **Never silently unconfined.** [`Sandbox::open`] with a mode that needs
//! a sandbox checks its mechanism once per process (a confined `true`;
//! the result is cached) and fails with [`SandboxError`] when neither
//! Landlock nor bubblewrap can make a sandbox here; only [`SandboxMode::Full`], asked for by name,
//! runs commands as the user, and its first command's output says so.
//!
//! What the sandbox does not do: `/etc` is readable (minus `/etc/shadow`
//! and `/etc/gshadow`), as are `/usr` and `/opt`; files the command may
//! write in the root can be anything (a `Makefile` a person runs later);
//! a missing `.git` is not protected when a command creates it; the
//! process limit is a pids cgroup where one can be made, else
//! `RLIMIT_NPROC`, which the kernel does not enforce for root (see
//! `limits.rs` and [`SandboxPolicy::max_processes`]).

mod auto;
mod bubblewrap;
mod landlock;
mod limits;
mod policy;
mod seccomp;

use std::ffi::OsString;
use std::fmt::Debug;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use auto::Auto;
pub use bubblewrap::Bubblewrap;
pub use landlock::Landlock;
pub(crate) use limits::{LimitKind, ProcessLimit};
pub use policy::{SandboxMode, SandboxPolicy};

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
}

impl Sandbox {
    /// The sandbox for `policy` with the mechanism of this machine,
    /// checked once per process: an error when the mode needs a sandbox
    /// that cannot be made.
    ///
    /// The mechanism is Landlock + seccomp where the kernel has Landlock
    /// ABI 6, for a root without a read-only path (`.git`, `.lc-agent`),
    /// and bubblewrap otherwise (see the module docs). The
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
            });
        }
        mechanism.check().map_err(|reason| SandboxError {
            mode: policy.mode(),
            reason,
        })?;
        Ok(Self {
            policy,
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
}

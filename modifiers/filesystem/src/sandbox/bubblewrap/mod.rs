//! [`Bubblewrap`]: the [`SandboxMechanism`] that runs commands in `bwrap`.

use std::ffi::OsString;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

pub(crate) mod kept;

use super::mount_points::MountPoints;
use super::network::{helper_program, proxy_env, Proxy, HELPER_PORT};
use super::policy::Protected;
use super::seccomp::Sockets;
use super::{
    probe_cache, seccomp, KeptSandboxes, Prepared, SandboxMechanism, SandboxMode, SandboxNetwork,
    SandboxPolicy,
};

/// Runs commands in bubblewrap (`bwrap` on the `PATH`): new user, PID,
/// network (unless allowed), IPC, UTS and cgroup namespaces, no nested
/// user namespaces (`--disable-userns`, bubblewrap 0.8 or later), every
/// capability dropped (`--cap-drop ALL`; `no_new_privs` is bubblewrap's
/// own), the seccomp filter of `seccomp.rs` applied just before the
/// command runs; `/usr`, `/etc` (without `/etc/shadow`, `/etc/gshadow`)
/// and `/opt` read-only; a fresh `/proc` (the sandbox's processes only),
/// `/dev` and private `/tmp`; the root read-only or writable with its
/// protected paths bound back read-only, also those that do not exist
/// yet (see `mount_points.rs`); killed with its parent, in a new session.
///
/// Started by root, the command runs as `nobody` (65534) inside its user
/// namespace, which is still root outside: it writes the root's files as
/// root did, but holds no capability and is not uid 0 to the programs it
/// runs. Started by another user, it runs as that user.
///
/// In a long process, commands run in a sandbox kept across them (see
/// [`KeptSandboxes`]) when a spawner program is known: this program, when
/// it calls [`run_helper_if_asked`](super::run_helper_if_asked) first in
/// `main`, or the one given to [`Bubblewrap::keeping`].
#[derive(Debug, Clone, Default)]
pub struct Bubblewrap {
    /// The spawner program of kept sandboxes, when given.
    spawner: Option<std::path::PathBuf>,
}

/// What the installed `bwrap` can do, found by the self-check.
#[derive(Debug, Clone, Copy)]
pub(super) struct Features {
    /// `--disable-userns` (bubblewrap 0.8).
    disable_userns: bool,
}

/// The self-check's result, once per process.
static CHECKED: OnceLock<Result<Features, String>> = OnceLock::new();

/// The compiled filters' bytes, each compiled when first needed: a
/// command's without and with the network, then a kept sandbox's
/// spawner's (`bubblewrap/kept/`) without and with.
static FILTERS: [OnceLock<Result<Vec<u8>, String>>; 4] = [
    OnceLock::new(),
    OnceLock::new(),
    OnceLock::new(),
    OnceLock::new(),
];

/// Where the network helper (this program) is bound inside the sandbox.
pub(super) const HELPER_PATH: &str = "/run/lc-agent/helper";

/// The id a command started by root runs as inside (`nobody`).
const UNPRIVILEGED_ID: &str = "65534";

/// System directories bound read-only (when they are directories).
const SYSTEM_DIRS: &[&str] = &["/usr", "/etc", "/opt"];

/// Top-level names that are links into `/usr` on merged-`/usr` systems,
/// bound read-only where they are real directories.
const USR_LINKS: &[&str] = &["/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"];

/// Files hidden even though their directory is readable.
const HIDDEN_FILES: &[&str] = &[
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/shadow-",
    "/etc/gshadow-",
];

fn arg(args: &mut Vec<OsString>, items: &[&dyn AsRef<std::ffi::OsStr>]) {
    args.extend(items.iter().map(|item| item.as_ref().to_os_string()));
}

/// The seccomp program for `network` (a command's, or with `spawner` a
/// kept sandbox's spawner's), in a pipe whose read end (close on exec in
/// this process) the command's `bwrap` gets.
pub(super) fn filter_pipe(network: bool, spawner: bool) -> Result<OwnedFd, String> {
    let index = usize::from(network) + 2 * usize::from(spawner);
    let bytes = FILTERS[index]
        .get_or_init(|| {
            let sockets = if network {
                Sockets::Inet
            } else {
                Sockets::None
            };
            let program = if spawner {
                seccomp::spawner_filter(sockets)?
            } else {
                seccomp::filter(sockets)?
            };
            Ok(seccomp::to_bytes(&program))
        })
        .as_ref()
        .map_err(|e| format!("seccomp: {e}"))?;
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("no pipe: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: pipe2 succeeded: both descriptors are open and ours alone.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // The program (a few hundred bytes, at most 32 KiB) fits in the
    // pipe's buffer: the write does not wait for a reader.
    std::fs::File::from(write)
        .write_all(bytes)
        .map_err(|e| format!("seccomp: {e}"))?;
    above_standard_streams(&read).map_err(|e| format!("seccomp: {e}"))
}

/// A copy of `fd` numbered above the standard streams, whatever this
/// process has open (close on exec here).
pub(super) fn above_standard_streams(fd: &OwnedFd) -> std::io::Result<OwnedFd> {
    // SAFETY: fcntl duplicates a descriptor we own.
    let high = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if high < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fcntl returned a new descriptor, ours alone.
    Ok(unsafe { OwnedFd::from_raw_fd(high) })
}

/// `bwrap`'s command line but its end (see [`Bubblewrap::frame`]), and
/// what must live as long as the sandbox.
pub(super) struct Frame {
    pub(super) args: Vec<OsString>,
    pub(super) mount_points: MountPoints,
    /// With a domain allow-list: the proxy, and the channel (numbered
    /// above the standard streams) the helper inside hands connections over.
    pub(super) helper: Option<(std::sync::Arc<Proxy>, OwnedFd)>,
}

/// `bwrap ARGS` with only `PATH` of this process's environment; the
/// descriptors `inherit` (close on exec here) are left open for it.
pub(super) fn bwrap_command(args: &[OsString], inherit: Vec<RawFd>) -> Command {
    let mut cmd = Command::new("bwrap");
    cmd.args(args).env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        cmd.env("PATH", path);
    }
    let inherit = move || -> std::io::Result<()> {
        for fd in &inherit {
            // SAFETY: fcntl on a descriptor open in this (forked)
            // process; only the command's `bwrap` inherits it.
            if unsafe { libc::fcntl(*fd, libc::F_SETFD, 0) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    };
    // SAFETY: the closure only calls fcntl(2), async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, inherit);
    }
    cmd
}

impl Bubblewrap {
    fn system_args(args: &mut Vec<OsString>) {
        for dir in SYSTEM_DIRS {
            if Path::new(dir).is_dir() {
                arg(args, &[&"--ro-bind", dir, dir]);
            }
        }
        for name in USR_LINKS {
            let path = Path::new(name);
            match std::fs::read_link(path) {
                Ok(target) => arg(args, &[&"--symlink", &target, name]),
                Err(_) if path.is_dir() => arg(args, &[&"--ro-bind", name, name]),
                Err(_) => {}
            }
        }
        for file in HIDDEN_FILES {
            if Path::new(file).is_file() {
                arg(args, &[&"--ro-bind", &"/dev/null", file]);
            }
        }
        arg(
            args,
            &[
                &"--proc",
                &"/proc",
                &"--dev",
                &"/dev",
                &"--tmpfs",
                &"/dev/shm",
                &"--tmpfs",
                &"/tmp",
            ],
        );
    }

    /// The namespaces, the capabilities and the user.
    fn confinement_args(args: &mut Vec<OsString>, features: Features) {
        arg(
            args,
            &[
                &"--unshare-all",
                &"--unshare-user",
                &"--cap-drop",
                &"ALL",
                &"--die-with-parent",
                &"--new-session",
                &"--clearenv",
            ],
        );
        if features.disable_userns {
            arg(args, &[&"--disable-userns"]);
        }
        // SAFETY: geteuid has no memory effects.
        if unsafe { libc::geteuid() } == 0 {
            arg(
                args,
                &[&"--uid", &UNPRIVILEGED_ID, &"--gid", &UNPRIVILEGED_ID],
            );
        }
    }

    /// Everything of `bwrap`'s command line but the seccomp filter, the
    /// working directory and the program: the mounts (with the mount
    /// points of missing protected paths), the namespaces, the user, the
    /// network (with an allow-list, its proxy and the channel the helper
    /// hands connections over), and `env`. `program`, when given, is bound
    /// at `HELPER_PATH` (a kept sandbox's spawner, which is also the
    /// helper); else this program is, with an allow-list.
    pub(super) fn frame(
        features: Features,
        policy: &SandboxPolicy,
        root: &Path,
        env: &[(OsString, OsString)],
        program: Option<&Path>,
    ) -> Result<Frame, String> {
        if policy.mode == SandboxMode::Full {
            return Err("full mode runs without a sandbox".to_string());
        }
        let writable = policy.mode == SandboxMode::WorkspaceWrite;
        let mut args: Vec<OsString> = Vec::new();
        Self::system_args(&mut args);
        for dir in policy
            .readable
            .iter()
            .filter(|d| d.is_absolute() && d.exists())
        {
            arg(&mut args, &[&"--ro-bind", dir, dir]);
        }
        let bind = if writable { "--bind" } else { "--ro-bind" };
        for dir in policy
            .writable
            .iter()
            .filter(|d| d.is_absolute() && d.exists())
        {
            arg(&mut args, &[&bind, dir, dir]);
        }
        arg(&mut args, &[&bind, &root, &root]);
        let mut mount_points = MountPoints::default();
        if writable {
            for protected in policy.protected_paths(root) {
                let path = match protected {
                    Protected::Existing(path) => path,
                    Protected::Missing(path) => match mount_points.hold(&path) {
                        Ok(()) => path,
                        // What this process cannot make, a command (with
                        // fewer rights) cannot make either.
                        Err(e)
                            if matches!(
                                e.kind(),
                                std::io::ErrorKind::PermissionDenied
                                    | std::io::ErrorKind::ReadOnlyFilesystem
                            ) =>
                        {
                            continue;
                        }
                        Err(e) => {
                            return Err(format!(
                                "cannot keep the missing {} read-only (its mount point: {e})",
                                path.display()
                            ));
                        }
                    },
                };
                arg(&mut args, &[&"--ro-bind", &path, &path]);
            }
        }
        // Deny rules: an empty read-only directory over a directory, the
        // empty `/dev/null` over anything else.
        for path in policy.hidden.iter().filter(|p| p.starts_with(root)) {
            match path.symlink_metadata() {
                Ok(meta) if meta.is_dir() => {
                    arg(&mut args, &[&"--tmpfs", path, &"--remount-ro", path]);
                }
                Ok(_) => arg(&mut args, &[&"--ro-bind", &"/dev/null", path]),
                Err(_) => {}
            }
        }
        Self::confinement_args(&mut args, features);
        // With an allow-list: the helper (this program) listens on the
        // sandbox's own loopback and hands connections to the proxy.
        let mut helper = None;
        if let Some(program) = program {
            arg(&mut args, &[&"--ro-bind", &program, &HELPER_PATH]);
        }
        match policy.network {
            SandboxNetwork::Off => {}
            SandboxNetwork::On => arg(&mut args, &[&"--share-net"]),
            SandboxNetwork::Allow => {
                let own = program.map(Path::to_path_buf).or_else(helper_program);
                let own = own.ok_or(
                    "a domain allow-list under bubblewrap needs this program to serve as the \
                     sandbox's network helper (call \
                     lc_agent_filesystem::run_helper_if_asked() first in main), or \
                     LC_AGENT_SANDBOX_MECHANISM=landlock",
                )?;
                let proxy = Proxy::for_domains(&policy.domains)?;
                let channel = above_standard_streams(&proxy.channel()?)
                    .map_err(|e| format!("the sandbox's proxy: {e}"))?;
                if program.is_none() {
                    arg(&mut args, &[&"--ro-bind", &own, &HELPER_PATH]);
                }
                for (name, value) in proxy_env(HELPER_PORT) {
                    arg(&mut args, &[&"--setenv", &name, &value]);
                }
                helper = Some((proxy, channel));
            }
        }
        for (name, value) in env {
            arg(&mut args, &[&"--setenv", name, value]);
        }
        arg(&mut args, &[&"--setenv", &"TMPDIR", &"/tmp"]);
        // The sandbox's own directories (`/`, `/dev`, the parents of the
        // mounts) read-only: only `/tmp`, `/dev/shm` and what the policy
        // makes writable take writes (a kept sandbox's commands cannot
        // leave a `/bin` of their own for the next one).
        arg(
            &mut args,
            &[&"--remount-ro", &"/dev", &"--remount-ro", &"/"],
        );
        Ok(Frame {
            args,
            mount_points,
            helper,
        })
    }

    /// `bwrap … sh -c command` with `features`.
    fn command(
        features: Features,
        policy: &SandboxPolicy,
        root: &Path,
        env: &[(OsString, OsString)],
        command: &str,
    ) -> Result<Prepared, String> {
        let Frame {
            mut args,
            mount_points,
            helper,
        } = Self::frame(features, policy, root, env, None)?;
        let filter = filter_pipe(policy.network != SandboxNetwork::Off, false)?;
        let fd = filter.as_raw_fd();
        arg(&mut args, &[&"--seccomp", &fd.to_string()]);
        arg(&mut args, &[&"--chdir", &root]);
        let channel_fd = helper.as_ref().map(|(_, channel)| channel.as_raw_fd());
        if let Some(channel_fd) = channel_fd {
            arg(
                &mut args,
                &[
                    &HELPER_PATH,
                    &"__lc-agent-sandbox-helper",
                    &channel_fd.to_string(),
                ],
            );
        }
        arg(&mut args, &[&"sh", &"-c", &command]);
        let cmd = bwrap_command(&args, std::iter::once(fd).chain(channel_fd).collect());
        let prepared = Prepared::new(cmd).keep(filter).keep(mount_points);
        Ok(match helper {
            Some(helper) => prepared.keep(helper),
            None => prepared,
        })
    }

    /// Whether a confined `true` runs with `features` (stderr if not).
    fn try_features(features: Features) -> Result<(), String> {
        let policy = SandboxPolicy::new(SandboxMode::ReadOnly);
        let root = std::env::temp_dir()
            .canonicalize()
            .map_err(|e| format!("no temporary directory ({e})"))?;
        let (mut cmd, keep) = Self::command(features, &policy, &root, &[], "exit 0")?.into_parts();
        let output = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output();
        drop(keep);
        match output {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err("bubblewrap (`bwrap`) is not installed".to_string())
            }
            Err(e) => Err(format!("`bwrap` could not be started ({})", e.kind())),
            Ok(out) if out.status.success() => Ok(()),
            Ok(out) => Err(format!(
                "`bwrap` cannot make a sandbox here: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )),
        }
    }

    /// The features of the installed `bwrap`, checked once per process
    /// (and a success remembered across processes, `probe_cache.rs`).
    pub(super) fn features() -> Result<Features, String> {
        CHECKED
            .get_or_init(|| {
                let all = Features {
                    disable_userns: true,
                };
                let older = Features {
                    disable_userns: false,
                };
                let program = probe_cache::program_identity("bwrap");
                let key = |features: Features| {
                    program.as_ref().map(|program| {
                        probe_cache::key(
                            "bubblewrap",
                            &format!("{program}\ndisable-userns {}", features.disable_userns),
                        )
                    })
                };
                for features in [all, older] {
                    if key(features).is_some_and(|k| probe_cache::passed("bubblewrap", &k)) {
                        return Ok(features);
                    }
                }
                let found = match Self::try_features(all) {
                    Ok(()) => Ok(all),
                    // Before bubblewrap 0.8: the seccomp filter refuses
                    // new namespaces all the same.
                    Err(e) if e.contains("disable-userns") => {
                        Self::try_features(older).map(|()| older)
                    }
                    Err(e) => Err(e),
                };
                if let Some(k) = found.as_ref().ok().and_then(|f| key(*f)) {
                    probe_cache::remember("bubblewrap", &k);
                }
                found
            })
            .clone()
    }
}

impl Bubblewrap {
    /// Bubblewrap that runs **every** command (the first too) in a sandbox
    /// kept across commands, with `spawner` as the program inside: a
    /// program whose `main` calls
    /// [`run_helper_if_asked`](super::run_helper_if_asked) first (the
    /// `lc-agent` binary, or `lc-agent-sandbox-helper` of this crate).
    pub fn keeping(spawner: impl Into<std::path::PathBuf>) -> Self {
        Self {
            spawner: Some(spawner.into()),
        }
    }
}

impl SandboxMechanism for Bubblewrap {
    fn name(&self) -> &str {
        "bubblewrap"
    }

    fn kept_sandboxes(&self) -> Option<KeptSandboxes> {
        match &self.spawner {
            Some(spawner) => KeptSandboxes::new(spawner.clone(), true),
            None => KeptSandboxes::new(helper_program()?, false),
        }
    }

    fn check(&self) -> Result<(), String> {
        Self::features().map(|_| ())
    }

    fn prepare(
        &self,
        policy: &SandboxPolicy,
        root: &Path,
        env: &[(OsString, OsString)],
        command: &str,
    ) -> Result<Prepared, String> {
        Self::command(Self::features()?, policy, root, env, command)
    }
}

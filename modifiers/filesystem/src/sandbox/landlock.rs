//! [`Landlock`]: the [`SandboxMechanism`] that confines the command's own
//! process (Landlock rules and a seccomp filter, applied between fork and
//! exec), with no namespaces (cheaper than bubblewrap's; figures in the
//! module docs).

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use ::landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};

use seccompiler::BpfProgram;

use super::network::{proxy_env, Proxy};
use super::policy::Protected;
use super::seccomp::Sockets;
use super::{
    probe_cache, seccomp, Prepared, SandboxMechanism, SandboxMode, SandboxNetwork, SandboxPolicy,
};

/// Confines `sh -c` itself: Landlock (ABI 6 or later: filesystem, TCP
/// bind/connect, signal and abstract-socket scopes) allows reading the
/// system (`/usr`, `/etc` without `/etc/shadow`, `/opt`, `/proc`, a few
/// `/dev` files), the root, and writing the root and a private temporary
/// directory (`TMPDIR`, removed after the command); the seccomp filter of
/// `seccomp.rs` refuses what Landlock does not govern (sockets,
/// `io_uring`, `setsid`, mounts, namespaces, and what root could use past
/// it); `no_new_privs`; a command started as root loses every
/// capability. No namespaces: the command sees the host's process list
/// and every process's command line, status and `stat` in `/proc` (but
/// not another process's environment, descriptors, memory, `cwd` or
/// `root`: Landlock refuses a sandboxed process `ptrace` access, which
/// those need, to any process outside its sandbox), and `/tmp` is the
/// host's, read-only.
///
/// Landlock grants and never denies under a grant, so a writable root
/// cannot keep `.git` read-only under a grant of the whole root: when the
/// policy has protected paths (by default it does), writes are granted
/// per entry of the root (and of each directory on the way to a nested
/// protected path) other than those paths, and those directories take no
/// new entries, so a missing `.git` or `.lc-agent` cannot be created
/// either (the default mechanism uses bubblewrap wherever it works).
///
/// What does not change between commands is built once per mechanism
/// (so once per [`Sandbox`](super::Sandbox)) and policy: the ruleset, the
/// seccomp filter, and a private temporary directory whose subdirectories
/// are the commands' `TMPDIR`s (removed after each command; the directory
/// itself when the sandbox is dropped). It is built again when what its
/// rules name changes: the root or an extra directory replaced, or (with
/// read-only paths in the root) the root's top-level entries. `/etc` and
/// the system directories are read once.
#[derive(Debug, Clone, Default)]
pub struct Landlock {
    built: Arc<Mutex<Vec<Arc<Built>>>>,
}

/// How many policies' rulesets one mechanism keeps.
const KEPT_RULESETS: usize = 4;

/// A policy's confinement, built once: what every command of it shares.
#[derive(Debug)]
struct Built {
    key: Key,
    ruleset: OwnedFd,
    filter: BpfProgram,
    /// With a domain allow-list: its proxy (the only TCP port commands
    /// may connect to).
    proxy: Option<Arc<Proxy>>,
    tmp: TempDir,
    /// Commands' temporary directories made so far (names them).
    commands: AtomicU64,
}

/// What a ruleset was built from: when it differs, the rules are stale.
#[derive(Debug, PartialEq)]
struct Key {
    policy: SandboxPolicy,
    root: PathBuf,
    /// The identity (device, inode) of the root and the policy's extra
    /// directories, and, in a writable root (writes granted per entry
    /// around its protected paths), the entries of the directories on
    /// the way to those paths, with their identities.
    identities: Vec<(OsString, Option<(u64, u64)>)>,
}

impl Key {
    fn of(policy: &SandboxPolicy, root: &Path) -> Self {
        use std::os::unix::fs::MetadataExt;
        let identity = |p: &Path| {
            std::fs::symlink_metadata(p)
                .ok()
                .map(|m| (m.dev(), m.ino()))
        };
        let mut identities: Vec<(OsString, Option<(u64, u64)>)> = std::iter::once(root)
            .chain(policy.readable.iter().map(PathBuf::as_path))
            .chain(policy.writable.iter().map(PathBuf::as_path))
            .map(|p| (p.as_os_str().to_owned(), identity(p)))
            .collect();
        if policy.mode == SandboxMode::WorkspaceWrite || !policy.hidden.is_empty() {
            for dir in around(policy, root).dirs {
                let mut entries: Vec<(OsString, Option<(u64, u64)>)> = std::fs::read_dir(&dir)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|e| {
                        let id = e.metadata().ok().map(|m| (m.dev(), m.ino()));
                        (e.path().into_os_string(), id)
                    })
                    .collect();
                entries.sort();
                let id = identity(&dir);
                identities.push((dir.into_os_string(), id));
                identities.extend(entries);
            }
        }
        Self {
            policy: policy.clone(),
            root: root.to_path_buf(),
            identities,
        }
    }
}

/// The self-check's result, once per process.
static CHECKED: OnceLock<Result<(), String>> = OnceLock::new();

/// The Landlock ABI this mechanism needs (kernel 6.12).
const NEEDED_ABI: ABI = ABI::V6;

/// Temporary directories made so far (names them).
static TEMP_DIRS: AtomicU64 = AtomicU64::new(0);

/// System directories readable (when they exist).
const READABLE: &[&str] = &[
    "/usr", "/opt", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/proc",
];

/// Devices readable and writable.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// A command's private temporary directory, removed when dropped.
#[derive(Debug)]
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> io::Result<Self> {
        let n = TEMP_DIRS.fetch_add(1, Ordering::Relaxed);
        Self::at(std::env::temp_dir().join(format!("lc-agent-sandbox-{}-{n}", std::process::id())))
    }

    fn at(path: PathBuf) -> io::Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        Ok(Self(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The rights of a writable directory: everything but making device
/// nodes (root could otherwise make one for a disk).
fn write_access() -> BitFlags<AccessFs> {
    AccessFs::from_all(NEEDED_ABI) & !(AccessFs::MakeChar | AccessFs::MakeBlock)
}

/// A writable root holding protected paths, as Landlock must grant it:
/// the protected paths, and the directories on their way (the root, and
/// each existing directory between it and a protected path), which are
/// granted reading only, their other entries writing.
#[derive(Debug, Default)]
struct Around {
    protected: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
}

/// The protected paths of `policy` in `root` (existing or not, and the
/// real path of one that is a link) and the directories on their way.
fn around(policy: &SandboxPolicy, root: &Path) -> Around {
    let mut found = Around::default();
    // Hidden paths (deny rules) that exist: kept from writes and reads.
    let hidden = policy
        .hidden
        .iter()
        .filter(|p| p.symlink_metadata().is_ok())
        .map(|p| Protected::Existing(p.clone()));
    for protected in policy.protected_paths(root).into_iter().chain(hidden) {
        let paths = match protected {
            Protected::Existing(real) => {
                // The path as named, when it is a link to `real`.
                let named: Vec<PathBuf> = policy
                    .read_only
                    .iter()
                    .map(|p| root.join(p))
                    .filter(|p| p.canonicalize().is_ok_and(|r| r == real))
                    .collect();
                std::iter::once(real).chain(named).collect()
            }
            Protected::Missing(path) => vec![path],
        };
        for path in paths {
            for dir in path.ancestors().skip(1) {
                if !dir.starts_with(root) {
                    break;
                }
                let real_dir = std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir());
                if real_dir && !found.dirs.iter().any(|d| d == dir) {
                    found.dirs.push(dir.to_path_buf());
                }
            }
            if !found.protected.contains(&path) {
                found.protected.push(path);
            }
        }
    }
    found
}

/// Writes granted in a writable root that holds protected paths: every
/// entry of each directory on their way but the protected paths and those
/// directories (read only, so they take no new entries: a missing
/// protected path cannot be made) and links (a link's target would take
/// the grant).
fn grants_around(around: &Around, rules: &mut Vec<(PathBuf, BitFlags<AccessFs>)>) {
    for dir in &around.dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let link = entry.file_type().map_or(true, |t| t.is_symlink());
            let kept = around.protected.contains(&path) || around.dirs.contains(&path);
            if !link && !kept {
                rules.push((path, write_access()));
            }
        }
    }
}

/// The rules: (path, rights) for every path the command may use.
fn rules(policy: &SandboxPolicy, root: &Path, tmp: &Path) -> Vec<(PathBuf, BitFlags<AccessFs>)> {
    let read = AccessFs::from_read(NEEDED_ABI);
    let write = write_access();
    let mut rules: Vec<(PathBuf, BitFlags<AccessFs>)> =
        READABLE.iter().map(|p| (PathBuf::from(p), read)).collect();
    rules.extend(
        DEVICES
            .iter()
            .map(|p| (PathBuf::from(p), AccessFs::from_file(NEEDED_ABI))),
    );
    // `/etc` entry by entry, without the password hashes.
    rules.push(("/etc".into(), AccessFs::ReadDir.into()));
    let system_target = |target: &Path| {
        ["/etc", "/usr", "/proc", "/run"]
            .iter()
            .any(|dir| target.starts_with(dir))
    };
    // Where `/etc`'s own entries (those that are no links) really are.
    let etc_is_system = std::fs::canonicalize("/etc").is_ok_and(|etc| system_target(&etc));
    if let Ok(entries) = std::fs::read_dir("/etc") {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let hidden = matches!(
                name.as_ref(),
                "shadow" | "gshadow" | "shadow-" | "gshadow-" | "sudoers" | "sudoers.d"
            );
            // A link's target takes the grant: only system ones (an
            // entry that is no link is `/etc`'s own, resolved without
            // reading each of its path's links).
            let link = entry.file_type().map_or(true, |t| t.is_symlink());
            let system = if link {
                std::fs::canonicalize(entry.path()).is_ok_and(|target| system_target(&target))
            } else {
                etc_is_system
            };
            if !hidden && system {
                rules.push((entry.path(), read));
            }
        }
    }
    rules.push((tmp.to_path_buf(), write));
    let writable = policy.mode == SandboxMode::WorkspaceWrite;
    for dir in policy.readable.iter().filter(|d| d.is_absolute()) {
        rules.push((dir.clone(), read));
    }
    for dir in policy.writable.iter().filter(|d| d.is_absolute()) {
        rules.push((dir.clone(), if writable { write } else { read }));
    }
    let hidden: Vec<&PathBuf> = policy
        .hidden
        .iter()
        .filter(|p| p.symlink_metadata().is_ok())
        .collect();
    if hidden.is_empty() {
        rules.push((root.to_path_buf(), read));
    } else {
        // Reads granted per entry beside the hidden paths.
        let around = around(policy, root);
        for dir in &around.dirs {
            rules.push((dir.clone(), AccessFs::ReadDir.into()));
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let link = entry.file_type().map_or(true, |t| t.is_symlink());
                if !link && !hidden.contains(&&path) && !around.dirs.contains(&path) {
                    rules.push((path, read));
                }
            }
        }
    }
    if writable {
        let around = around(policy, root);
        if around.protected.is_empty() {
            rules.push((root.to_path_buf(), write));
        } else {
            grants_around(&around, &mut rules);
        }
    }
    rules
}

/// The ruleset for `policy`, as the descriptor `landlock_restrict_self`
/// takes.
fn ruleset(
    policy: &SandboxPolicy,
    root: &Path,
    tmp: &Path,
    proxy: Option<&Proxy>,
) -> Result<OwnedFd, String> {
    let failed = |e: ::landlock::RulesetError| format!("Landlock: {e}");
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(NEEDED_ABI))
        .map_err(failed)?
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(failed)?;
    if policy.network != SandboxNetwork::On {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(failed)?;
    }
    let mut created = ruleset.create().map_err(failed)?;
    if let Some(proxy) = proxy {
        created = created
            .add_rule(NetPort::new(proxy.port(), AccessNet::ConnectTcp))
            .map_err(failed)?;
    }
    for (path, access) in rules(policy, root, tmp) {
        // A path that does not exist here is skipped.
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        // A file takes only a file's rights.
        let access = if meta.is_dir() {
            access
        } else {
            access & AccessFs::from_file(NEEDED_ABI)
        };
        if let Ok(fd) = PathFd::new(&path) {
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(failed)?;
        }
    }
    Option::<OwnedFd>::from(created).ok_or_else(|| "Landlock is not supported here".to_string())
}

/// `struct __user_cap_header_struct`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

/// `struct __user_cap_data_struct`.
#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Drops every capability (bounding set, ambient, effective, permitted,
/// inheritable). Only system calls: safe between fork and exec.
fn drop_capabilities() -> io::Result<()> {
    for cap in 0..64 {
        // SAFETY: prctl with integer arguments; an unknown cap gives EINVAL.
        unsafe {
            libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
        }
    }
    // SAFETY: as above.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
    }
    let header = CapHeader {
        version: 0x2008_0522,
        pid: 0,
    };
    let data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset reads a valid header and two data structs (version 3).
    if unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl Landlock {
    /// The confinement of `policy` in `root`: the one built before while
    /// its rules still hold, else a new one (kept for the next commands).
    fn built(&self, policy: &SandboxPolicy, root: &Path) -> Result<Arc<Built>, String> {
        let key = Key::of(policy, root);
        let mut built = self
            .built
            .lock()
            .map_err(|_| "Landlock: a command panicked while its sandbox was built".to_string())?;
        if let Some(found) = built.iter().position(|b| b.key == key) {
            let found = built.remove(found);
            built.push(found.clone());
            return Ok(found);
        }
        // The commands of one policy that still hold rules of the old
        // root entries keep their own copy alive until they end.
        built.retain(|b| !(b.key.policy == key.policy && b.key.root == key.root));
        let tmp = TempDir::new().map_err(|e| format!("no temporary directory: {e}"))?;
        let (proxy, sockets) = match policy.network {
            SandboxNetwork::Off => (None, Sockets::None),
            SandboxNetwork::On => (None, Sockets::Inet),
            SandboxNetwork::Allow => (
                Some(Proxy::for_domains(&policy.domains)?),
                Sockets::InetStream,
            ),
        };
        let new = Arc::new(Built {
            ruleset: ruleset(policy, root, &tmp.0, proxy.as_deref())?,
            filter: seccomp::filter(sockets)?,
            proxy,
            key,
            tmp,
            commands: AtomicU64::new(0),
        });
        if built.len() == KEPT_RULESETS {
            built.remove(0);
        }
        built.push(new.clone());
        Ok(new)
    }

    /// `sh -c command`, confined by `policy` in `root` between fork and exec.
    fn confined(
        &self,
        policy: &SandboxPolicy,
        root: &Path,
        env: &[(OsString, OsString)],
        command: &str,
    ) -> Result<Prepared, String> {
        if policy.mode == SandboxMode::Full {
            return Err("full mode runs without a sandbox".to_string());
        }
        let built = self.built(policy, root)?;
        let n = built.commands.fetch_add(1, Ordering::Relaxed);
        let tmp = TempDir::at(built.tmp.0.join(n.to_string()))
            .map_err(|e| format!("no temporary directory: {e}"))?;
        // SAFETY: geteuid has no memory effects.
        let root_user = unsafe { libc::geteuid() } == 0;
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(command)
            .env_clear()
            .envs(env.iter().map(|(n, v)| (n, v)))
            .env("TMPDIR", &tmp.0);
        if let Some(proxy) = &built.proxy {
            cmd.envs(proxy_env(proxy.port()));
        }
        let shared = built.clone();
        let confine = move || -> io::Result<()> {
            if root_user {
                drop_capabilities()?;
            }
            // SAFETY: prctl and the two system calls below take integers and a
            // descriptor `shared` owns; nothing is allocated.
            if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: as above.
            if unsafe {
                libc::syscall(
                    libc::SYS_landlock_restrict_self,
                    shared.ruleset.as_raw_fd(),
                    0,
                )
            } != 0
            {
                return Err(io::Error::last_os_error());
            }
            seccompiler::apply_filter(&shared.filter).map_err(|_| io::Error::last_os_error())
        };
        // SAFETY: the closure only makes system calls (prctl, capset,
        // landlock_restrict_self, seccomp) on data prepared before the fork.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, confine);
        }
        // The command's directory goes first, then (maybe) the shared one.
        Ok(Prepared::new(cmd).keep(tmp).keep(built))
    }
}

impl SandboxMechanism for Landlock {
    fn name(&self) -> &str {
        "landlock"
    }

    fn check(&self) -> Result<(), String> {
        CHECKED
            .get_or_init(|| {
                // Remembered across processes (`probe_cache.rs`).
                let key = probe_cache::key("landlock", "abi 6");
                if probe_cache::passed("landlock", &key) {
                    return Ok(());
                }
                let policy = SandboxPolicy::new(SandboxMode::ReadOnly);
                let root = std::env::temp_dir();
                let prepared = Self::default()
                    .confined(&policy, &root, &[], "exit 0")
                    .map_err(|e| {
                        format!("Landlock (ABI 6, Linux 6.12) cannot confine here: {e}")
                    })?;
                let (mut cmd, _keep) = prepared.into_parts();
                match cmd
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                {
                    Ok(status) if status.success() => {
                        probe_cache::remember("landlock", &key);
                        Ok(())
                    }
                    Ok(status) => Err(format!("a confined `sh` failed here ({status})")),
                    Err(e) => Err(format!("a confined `sh` could not start here ({e})")),
                }
            })
            .clone()
    }

    fn prepare(
        &self,
        policy: &SandboxPolicy,
        root: &Path,
        env: &[(OsString, OsString)],
        command: &str,
    ) -> Result<Prepared, String> {
        self.confined(policy, root, env, command)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The commands of one policy share one build until the root's rules
    /// change; another policy has its own.
    #[test]
    fn a_policy_is_built_once_per_mechanism() {
        let landlock = Landlock::default();
        if landlock.check().is_err() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite);
        let first = landlock.built(&policy, &root).unwrap();
        let again = landlock.built(&policy, &root).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let read_only = SandboxPolicy::new(SandboxMode::ReadOnly);
        let other = landlock.built(&read_only, &root).unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        // A new top-level entry (writes are granted per entry): rebuilt.
        std::fs::create_dir(root.join("src")).unwrap();
        let rebuilt = landlock.built(&policy, &root).unwrap();
        assert!(!Arc::ptr_eq(&first, &rebuilt));
        assert!(Arc::ptr_eq(
            &rebuilt,
            &landlock.built(&policy, &root).unwrap()
        ));
        // The stale build is gone from the mechanism; its directory with
        // it once the last command holding it ends.
        let stale_tmp = first.tmp.0.clone();
        drop((first, again));
        assert!(!stale_tmp.exists());
    }
}

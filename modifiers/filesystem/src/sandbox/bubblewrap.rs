//! [`Bubblewrap`]: the [`SandboxMechanism`] that runs commands in `bwrap`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use super::{Prepared, SandboxMechanism, SandboxMode, SandboxPolicy};

/// Runs commands in bubblewrap (`bwrap` on the `PATH`): new user, PID,
/// network (unless allowed), IPC, UTS and cgroup namespaces; `/usr`,
/// `/etc` (without `/etc/shadow`, `/etc/gshadow`) and `/opt` read-only; a
/// fresh `/proc`, `/dev` and private `/tmp`; the root read-only or
/// writable with its read-only subpaths bound back read-only; killed with
/// its parent, in a new session.
#[derive(Debug, Clone, Default)]
pub struct Bubblewrap {
    _private: (),
}

/// The self-check's result, once per process.
static CHECKED: OnceLock<Result<(), String>> = OnceLock::new();

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
            &[&"--proc", &"/proc", &"--dev", &"/dev", &"--tmpfs", &"/tmp"],
        );
    }

    /// The read-only subpaths of `root` that exist and stay inside it.
    fn read_only_paths(policy: &SandboxPolicy, root: &Path) -> Vec<PathBuf> {
        let mut paths = Vec::new();
        for path in &policy.read_only {
            let joined = root.join(path);
            let Ok(real) = joined.canonicalize() else {
                continue;
            };
            if real.starts_with(root) && real != root && !paths.contains(&real) {
                paths.push(real);
            }
        }
        paths
    }
}

impl SandboxMechanism for Bubblewrap {
    fn name(&self) -> &str {
        "bubblewrap"
    }

    fn check(&self) -> Result<(), String> {
        CHECKED
            .get_or_init(|| {
                let mut args = Vec::new();
                Self::system_args(&mut args);
                let output = Command::new("bwrap")
                    .args(&args)
                    .args([
                        "--unshare-all",
                        "--die-with-parent",
                        "--new-session",
                        "true",
                    ])
                    .env_clear()
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .output();
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
        if policy.mode == SandboxMode::Full {
            return Err("full mode runs without a sandbox".to_string());
        }
        let writable = policy.mode == SandboxMode::WorkspaceWrite;
        let mut args: Vec<OsString> = vec!["bwrap".into()];
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
        if writable {
            for path in Self::read_only_paths(policy, root) {
                arg(&mut args, &[&"--ro-bind", &path, &path]);
            }
        }
        arg(
            &mut args,
            &[
                &"--unshare-all",
                &"--die-with-parent",
                &"--new-session",
                &"--clearenv",
            ],
        );
        if policy.network {
            arg(&mut args, &[&"--share-net"]);
        }
        for (name, value) in env {
            arg(&mut args, &[&"--setenv", name, value]);
        }
        arg(&mut args, &[&"--setenv", &"TMPDIR", &"/tmp"]);
        arg(&mut args, &[&"--chdir", &root, &"sh", &"-c", &command]);
        let mut cmd = Command::new("bwrap");
        cmd.args(&args[1..]).env_clear();
        if let Some(path) = std::env::var_os("PATH") {
            cmd.env("PATH", path);
        }
        Ok(Prepared::new(cmd))
    }
}

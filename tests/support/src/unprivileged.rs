//! Tests that run a door (the server, `lc-agent mcp --shell`) as an
//! unprivileged user when the tests run as root (as in CI): `nobody`
//! (65534) through `setpriv`, with a base directory and a home it owns.
//!
//! - [`NobodyBase`]: a directory under the system's temporary directory
//!   (mode 0755), with `work/` and `work/home/` owned by `nobody`;
//!   [`NobodyBase::give`] hands a tree made by root to `nobody`.
//! - [`rerun_as_nobody`]: this test binary's test again, as `nobody`, with
//!   [`BASE_VARIABLE`] naming its base (read it with [`base_or`]).

use std::ffi::OsStr;
use std::os::unix::fs::{chown, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The id the unprivileged pass runs as (`nobody`).
pub const NOBODY: u32 = 65534;

/// Where the unprivileged pass of a test keeps its files (set by
/// [`rerun_as_nobody`]).
pub const BASE_VARIABLE: &str = "LC_AGENT_UNPRIVILEGED_BASE";

/// The base directory of the unprivileged pass, when this process is it;
/// `default` otherwise.
pub fn base_or(default: &Path) -> PathBuf {
    std::env::var_os(BASE_VARIABLE).map_or_else(|| default.to_path_buf(), PathBuf::from)
}

/// Whether this process runs as root (its `/proc/self` is root's).
pub fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// A base directory for `nobody` (removed when dropped).
#[derive(Debug)]
pub struct NobodyBase {
    dir: tempfile::TempDir,
}

impl NobodyBase {
    /// A new base: the directory (0755, root's), `work/` and `work/home/`
    /// (`nobody`'s).
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("lc-agent-nobody-")
            .tempdir_in(std::env::temp_dir())
            .expect("a temporary directory");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("its mode");
        let base = Self { dir };
        std::fs::create_dir_all(base.home()).expect("the home directory");
        base.give(&base.work());
        base
    }

    /// The base itself (root's).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `work/`, `nobody`'s.
    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// `work/home/`, `nobody`'s `HOME` and `LC_AGENT_HOME`.
    pub fn home(&self) -> PathBuf {
        self.work().join("home")
    }

    /// Gives `path` and everything under it to `nobody` (links themselves,
    /// never followed).
    pub fn give(&self, path: &Path) {
        std::os::unix::fs::lchown(path, Some(NOBODY), Some(NOBODY)).expect("chown to nobody");
        if path.is_dir() && !path.is_symlink() {
            for entry in std::fs::read_dir(path).expect("a directory").flatten() {
                self.give(&entry.path());
            }
        }
    }

    /// A copy of `program` in the base, executable by `nobody`.
    pub fn copy(&self, program: &Path) -> PathBuf {
        let copy = self
            .dir
            .path()
            .join(program.file_name().unwrap_or(OsStr::new("program")));
        std::fs::copy(program, &copy).expect("a copy of the program");
        chown(&copy, Some(NOBODY), Some(NOBODY)).expect("chown to nobody");
        copy
    }

    /// `setpriv` ready to run a program as `nobody` (no groups), with
    /// `HOME` and `LC_AGENT_HOME` its home, in `work/`.
    pub fn setpriv(&self) -> Command {
        let mut cmd = Command::new("setpriv");
        cmd.args([
            format!("--reuid={NOBODY}"),
            format!("--regid={NOBODY}"),
            "--clear-groups".to_string(),
            "--".to_string(),
        ])
        .env("HOME", self.home())
        .env("LC_AGENT_HOME", self.home())
        .current_dir(self.work());
        cmd
    }
}

impl Default for NobodyBase {
    fn default() -> Self {
        Self::new()
    }
}

/// Runs this test binary's test `test` (its full path, e.g.
/// `hostile_doors::the_table`) again as `nobody`, with [`BASE_VARIABLE`]
/// set to a `work/` directory `nobody` owns; panics with its output
/// unless it passed.
pub fn rerun_as_nobody(test: &str) {
    let base = NobodyBase::new();
    let binary = base.copy(&std::env::current_exe().expect("this test binary"));
    let output = base
        .setpriv()
        .arg(&binary)
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(BASE_VARIABLE, base.work())
        .env_remove("CARGO_TARGET_TMPDIR")
        .stdin(Stdio::null())
        .output()
        .expect("setpriv (util-linux) runs the unprivileged pass");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("the unprivileged pass of {test}: {}", stderr.trim());
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "the unprivileged pass of {test} failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
}

//! [`Sandbox::program`]: a long-lived program the agent starts (an MCP
//! stdio server) confined by the same profile as the shell's commands.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{Prepared, ProcessLimit, Sandbox, SandboxError, SandboxMode};

/// A program to start in a [`Sandbox`]: what to run, where, with which
/// environment, and which directories of its own it reads.
///
/// ```
/// use lc_agent_filesystem::SandboxedProgram;
///
/// let program = SandboxedProgram::new("python3")
///     .arg("server.py")
///     .cwd("/srv/mcp")
///     .env("GITHUB_TOKEN", "t0ken");
/// assert_eq!(program.program(), "python3");
/// ```
#[derive(Debug, Clone, Default)]
pub struct SandboxedProgram {
    program: String,
    args: Vec<String>,
    cwd: Option<PathBuf>,
    env: Vec<(OsString, OsString)>,
    readable: Vec<PathBuf>,
}

/// What a confined program's process needs while it runs (a private
/// temporary directory, the mount points of missing protected paths):
/// keep it as long as the process lives.
pub struct KeepAlive {
    _kept: Vec<Box<dyn Send + Sync>>,
}

impl std::fmt::Debug for KeepAlive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeepAlive")
            .field("kept", &self._kept.len())
            .finish()
    }
}

/// A long-lived program's process limit: its cgroup (and what is left
/// in it) removed when the program's [`KeepAlive`] is dropped.
struct LimitKept(ProcessLimit);

impl Drop for LimitKept {
    fn drop(&mut self) {
        self.0.remove();
    }
}

impl Prepared {
    /// The process to spawn, and what must live until it ends.
    pub fn split(self) -> (Command, KeepAlive) {
        let (command, kept) = self.into_parts();
        (command, KeepAlive { _kept: kept })
    }
}

impl SandboxedProgram {
    /// `program` (a name found on the `PATH`, or a path).
    pub fn new(program: impl Into<String>) -> Self {
        Self {
            program: program.into(),
            ..Self::default()
        }
    }

    /// The program.
    pub fn program(&self) -> &str {
        &self.program
    }

    /// Adds an argument.
    #[must_use]
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    #[must_use]
    pub fn args(mut self, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Its working directory (default: the root); readable inside.
    #[must_use]
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// An environment variable it gets, besides the sandbox's base
    /// (`PATH`, `HOME` = the root, `LANG`, and the variables the policy
    /// passes through by name).
    #[must_use]
    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Another directory it may read (absolute).
    #[must_use]
    pub fn readable(mut self, dir: impl Into<PathBuf>) -> Self {
        self.readable.push(dir.into());
        self
    }

    /// The program's own directory: the directory of the executable it
    /// names (found on `PATH` when it is a bare name, links resolved),
    /// or, when that is a `bin` directory beside a `lib` one, the
    /// installation holding both (a virtual environment, a pyenv or nvm
    /// version, `/usr/local`) — never the home directory or its `.local`
    /// (`~/.cargo/bin` stays `~/.cargo/bin`: `~/.cargo` holds
    /// credentials).
    pub(crate) fn own_directory(&self, path: Option<&OsString>) -> Option<PathBuf> {
        let named = Path::new(&self.program);
        let found = if self.program.contains('/') {
            Some(named.to_path_buf())
        } else {
            std::env::split_paths(path?)
                .map(|dir| dir.join(named))
                .find(|candidate| candidate.is_file())
        }?;
        let real = found.canonicalize().ok()?;
        let dir = real.parent()?;
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let private = |d: &Path| {
            home.as_ref()
                .is_some_and(|h| d == h.as_path() || d == h.join(".local"))
        };
        let dir = match dir.parent() {
            Some(prefix)
                if dir.file_name().is_some_and(|n| n == "bin")
                    && prefix.join("lib").is_dir()
                    && !private(prefix) =>
            {
                prefix
            }
            _ => dir,
        };
        (dir != Path::new("/")).then(|| dir.to_path_buf())
    }

    /// The shell line that runs it: `cd DIR && exec PROGRAM ARGS…`.
    fn shell_line(&self, root: &Path) -> String {
        let cwd = self.cwd.as_deref().unwrap_or(root);
        let mut line = format!("cd {} && exec", quote(&cwd.to_string_lossy()));
        for word in std::iter::once(&self.program).chain(&self.args) {
            line.push(' ');
            line.push_str(&quote(word));
        }
        line
    }
}

/// `text` as one shell word.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

impl Sandbox {
    /// The same profile, read-only (the same mechanism; a new one, checked,
    /// when this one is `full`).
    pub fn read_only(&self) -> Result<Sandbox, SandboxError> {
        let mut policy = self.policy().clone();
        policy.mode = SandboxMode::ReadOnly;
        match self.mechanism() {
            Some(mechanism) => Sandbox::with_mechanism(policy, mechanism.clone()),
            None => Sandbox::open(policy),
        }
    }

    /// `program`, ready to spawn, confined by this sandbox's profile in
    /// `root` (canonical), as the shell's commands are: the same
    /// mechanism, policy and seccomp filter, no capabilities, the root
    /// readable (writable as the mode says), plus the program's own
    /// directory, its working directory and its extra readable
    /// directories read-only; the environment is the sandbox's base plus
    /// the program's own variables, nothing else. In
    /// [`SandboxMode::Full`] it runs unconfined,
    /// with the same environment. The caller sets the standard streams;
    /// the [`KeepAlive`] must live as long as the process.
    pub fn program(
        &self,
        root: &Path,
        program: &SandboxedProgram,
    ) -> Result<(Command, KeepAlive), SandboxError> {
        let mut env = super::env::command_env(root, Some(self));
        for (name, value) in &program.env {
            env.retain(|(n, _)| n != name);
            env.push((name.clone(), value.clone()));
        }
        let line = program.shell_line(root);
        let Some(mechanism) = self.mechanism() else {
            let mut cmd = Command::new("sh");
            cmd.arg("-c")
                .arg(&line)
                .env_clear()
                .envs(env)
                .current_dir(root);
            return Ok((cmd, KeepAlive { _kept: Vec::new() }));
        };
        let mut policy = self.policy().clone();
        let path = env.iter().find(|(n, _)| n == "PATH").map(|(_, v)| v);
        let own = program.own_directory(path);
        for dir in own
            .into_iter()
            .chain(program.cwd.clone())
            .chain(program.readable.iter().cloned())
            .filter(|d| d.is_absolute())
        {
            if !dir.starts_with(root) && !policy.readable.contains(&dir) {
                policy.readable.push(dir);
            }
        }
        let prepared = mechanism
            .prepare(&policy, root, &env, &line)
            .map_err(|reason| SandboxError {
                mode: policy.mode(),
                reason,
            })?;
        let (mut cmd, mut keep) = prepared.split();
        cmd.current_dir(root);
        // The shell's process limit, for as long as the program runs.
        let limit = ProcessLimit::new(policy.max_processes);
        // SAFETY: the closure only calls write(2) on a descriptor opened
        // before the fork, or setrlimit(2): both async-signal-safe.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, limit.applier());
        }
        keep._kept.push(Box::new(LimitKept(limit)));
        Ok((cmd, keep))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_quotes_every_word() {
        let program = SandboxedProgram::new("my server").arg("it's").arg("$HOME");
        assert_eq!(
            program.shell_line(Path::new("/r")),
            r"cd '/r' && exec 'my server' 'it'\''s' '$HOME'"
        );
    }

    #[test]
    fn the_own_directory_of_a_program_in_bin_is_its_installation() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let real = dir.path().canonicalize().expect("canonical");
        std::fs::create_dir(real.join("bin")).expect("bin");
        std::fs::create_dir(real.join("lib")).expect("lib");
        std::fs::write(real.join("bin/tool"), "").expect("tool");
        let path = OsString::from(real.join("bin"));
        assert_eq!(
            SandboxedProgram::new("tool").own_directory(Some(&path)),
            Some(real.clone())
        );
        assert_eq!(
            SandboxedProgram::new(real.join("bin/tool").to_string_lossy()).own_directory(None),
            Some(real)
        );
        assert_eq!(
            SandboxedProgram::new("absent-tool").own_directory(Some(&path)),
            None
        );
    }
}

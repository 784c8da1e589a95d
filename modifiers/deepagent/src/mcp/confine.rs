//! [`McpSandbox`]: the sandbox profile the MCP stdio servers the agent
//! starts run in — the shell's own (one profile for every process).
//!
//! ```text
//!  entry "sandbox"  absent | "workspace-write" ─▶ the profile (the workspace's root, the
//!                                                 program's own directory and `cwd` readable,
//!                                                 network as the profile says), env scrubbed:
//!                                                 PATH, HOME = root, LANG + the entry's `env`
//!                   "read-only"               ─▶ the profile, read-only
//!                   "full"                    ─▶ unconfined, this process's environment + `env`
//!  no profile given (McpTools::new alone)     ─▶ as "full" (a library caller confines itself)
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lc_agent_filesystem::{KeepAlive, Sandbox, SandboxMode, SandboxedProgram};

use super::error::McpError;

/// The sandbox MCP stdio servers run in, and the root it confines them to
/// (see the module's documentation).
///
/// ```
/// use lc_agent_deepagent::mcp::McpSandbox;
/// use lc_agent_filesystem::{Sandbox, SandboxMode, SandboxPolicy};
///
/// let full = Sandbox::open(SandboxPolicy::new(SandboxMode::Full)).unwrap();
/// let profile = McpSandbox::new(full, "/srv/project");
/// assert_eq!(profile.root(), std::path::Path::new("/srv/project"));
/// ```
#[derive(Debug, Clone)]
pub struct McpSandbox {
    /// The sandbox, or why none can be made here.
    sandbox: Result<Sandbox, String>,
    root: PathBuf,
}

/// A stdio server's process, ready to spawn, and what must live with it.
pub(crate) type Spawnable = (tokio::process::Command, Option<KeepAlive>);

impl McpSandbox {
    /// Servers confined by `sandbox` in `root` (made absolute and
    /// canonical when it exists).
    pub fn new(sandbox: Sandbox, root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        Self {
            sandbox: Ok(sandbox),
            root,
        }
    }

    /// No sandbox can be made here (`reason` says why): a stdio server
    /// starts only when its entry says `"sandbox": "full"`; the others
    /// fail to start with `reason`. Never silently unconfined.
    pub fn unavailable(reason: impl Into<String>) -> Self {
        Self {
            sandbox: Err(reason.into()),
            root: PathBuf::from("/"),
        }
    }

    /// The root.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// The process of a stdio server: `command args` in `profile` as the
/// entry's `mode` says (see the module docs).
pub(crate) fn stdio_process(
    server: &str,
    profile: Option<&McpSandbox>,
    mode: Option<SandboxMode>,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&Path>,
) -> Result<Spawnable, McpError> {
    let profile = match (profile, mode) {
        (Some(profile), None | Some(SandboxMode::WorkspaceWrite | SandboxMode::ReadOnly)) => {
            profile
        }
        _ => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args).envs(env);
            if let Some(cwd) = cwd {
                cmd.current_dir(cwd);
            }
            return Ok((cmd, None));
        }
    };
    let refused = |reason: String| McpError::Sandbox {
        server: server.to_string(),
        command: command.to_string(),
        reason,
    };
    let sandbox = profile.sandbox.as_ref().map_err(|e| refused(e.clone()))?;
    let sandbox = match mode {
        Some(SandboxMode::ReadOnly) => sandbox.read_only().map_err(|e| refused(e.to_string()))?,
        _ => sandbox.clone(),
    };
    if !findable(command) {
        // As unconfined: the program is missing (not a failed handshake).
        return Err(McpError::Spawn {
            server: server.to_string(),
            command: command.to_string(),
            source: std::io::Error::from_raw_os_error(libc::ENOENT),
        });
    }
    let mut program = SandboxedProgram::new(command).args(args.iter().cloned());
    if let Some(cwd) = cwd {
        // Relative to this process's directory, as unconfined.
        let absolute = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        program = program.cwd(std::fs::canonicalize(&absolute).unwrap_or(absolute));
    }
    for (name, value) in env {
        program = program.env(name, value);
    }
    let (cmd, keep) = sandbox
        .program(&profile.root, &program)
        .map_err(|e| refused(e.to_string()))?;
    Ok((tokio::process::Command::from(cmd), Some(keep)))
}

/// Whether `command` names an existing file: a path, or a name on `PATH`.
fn findable(command: &str) -> bool {
    if command.contains('/') {
        return Path::new(command).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(command).is_file()))
}

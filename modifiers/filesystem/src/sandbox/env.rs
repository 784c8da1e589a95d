//! The environment a sandboxed process gets (a command of the shell, an
//! MCP stdio server): a small clean base and the variables the policy
//! passes through by name, nothing else of lc-agent's own environment.

use std::ffi::OsString;
use std::path::Path;

use super::Sandbox;

/// The `PATH` commands get when the process has none.
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The environment commands get: `PATH`, `HOME` = the root, `LANG`, and
/// the variables passed through by name.
pub(crate) fn command_env(root: &Path, sandbox: Option<&Sandbox>) -> Vec<(OsString, OsString)> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| DEFAULT_PATH.into());
    let mut env: Vec<(OsString, OsString)> = vec![
        ("PATH".into(), path),
        ("HOME".into(), root.into()),
        ("LANG".into(), "C.UTF-8".into()),
    ];
    for name in sandbox
        .map(|s| s.policy().env_passthrough.as_slice())
        .unwrap_or_default()
    {
        if let Some(value) = std::env::var_os(name) {
            env.retain(|(n, _)| n != name.as_str());
            env.push((name.into(), value));
        }
    }
    env
}

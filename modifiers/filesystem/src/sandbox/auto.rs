//! [`Auto`]: the mechanism [`Sandbox::open`](super::Sandbox::open) uses,
//! chosen per command from what this machine can do.

use std::ffi::OsString;
use std::path::Path;

use super::landlock::has_read_only_paths;
use super::{Bubblewrap, Landlock, Prepared, SandboxMechanism, SandboxPolicy};

/// Landlock + seccomp where the kernel has it and the root holds none of
/// the policy's read-only paths (it cannot keep them read-only under a
/// writable root); bubblewrap otherwise; Landlock (writes per top-level
/// entry) when bubblewrap is missing; an error when neither works.
#[derive(Debug, Default)]
pub(crate) struct Auto {
    landlock: Landlock,
    bubblewrap: Bubblewrap,
}

impl Auto {
    /// The mechanism for a command of `policy` in `root`.
    fn choose(&self, policy: &SandboxPolicy, root: &Path) -> &dyn SandboxMechanism {
        let landlock = self.landlock.check().is_ok();
        let bubblewrap = self.bubblewrap.check().is_ok();
        if landlock && (!bubblewrap || !has_read_only_paths(policy, root)) {
            &self.landlock
        } else {
            &self.bubblewrap
        }
    }
}

impl SandboxMechanism for Auto {
    fn name(&self) -> &str {
        "auto"
    }

    fn check(&self) -> Result<(), String> {
        match (self.landlock.check(), self.bubblewrap.check()) {
            (Ok(()), _) | (_, Ok(())) => Ok(()),
            (Err(landlock), Err(bubblewrap)) => Err(format!("{landlock}; {bubblewrap}")),
        }
    }

    fn prepare(
        &self,
        policy: &SandboxPolicy,
        root: &Path,
        env: &[(OsString, OsString)],
        command: &str,
    ) -> Result<Prepared, String> {
        self.choose(policy, root)
            .prepare(policy, root, env, command)
    }
}

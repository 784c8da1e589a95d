//! [`Auto`]: the mechanism [`Sandbox::open`](super::Sandbox::open) uses,
//! chosen from what this machine can do.

use std::ffi::OsString;
use std::path::Path;

use super::{Bubblewrap, KeptSandboxes, Landlock, Prepared, SandboxMechanism, SandboxPolicy};

/// Bubblewrap wherever it can make a sandbox, in every mode; Landlock +
/// seccomp (Linux 6.12 or later) where it cannot (bubblewrap missing, or
/// user namespaces refused, as in most containers); an error when
/// neither works.
///
/// Bubblewrap first because only namespaces give what Landlock cannot:
/// a protected path kept read-only inside a writable root that still
/// takes new top-level entries, and a `/proc` without the host's
/// processes (under Landlock every process's command line is readable;
/// see the module docs). Landlock is the cheaper of the two.
#[derive(Debug, Default)]
pub(crate) struct Auto {
    landlock: Landlock,
    bubblewrap: Bubblewrap,
}

impl Auto {
    /// The mechanism for the next command.
    fn choose(&self) -> &dyn SandboxMechanism {
        if self.bubblewrap.check().is_ok() || self.landlock.check().is_err() {
            &self.bubblewrap
        } else {
            &self.landlock
        }
    }
}

impl SandboxMechanism for Auto {
    fn name(&self) -> &str {
        "auto"
    }

    fn check(&self) -> Result<(), String> {
        // Landlock is checked only when bubblewrap cannot be used (each
        // check runs a confined command).
        let Err(bubblewrap) = self.bubblewrap.check() else {
            return Ok(());
        };
        self.landlock
            .check()
            .map_err(|landlock| format!("{bubblewrap}; {landlock}"))
    }

    fn prepare(
        &self,
        policy: &SandboxPolicy,
        root: &Path,
        env: &[(OsString, OsString)],
        command: &str,
    ) -> Result<Prepared, String> {
        self.choose().prepare(policy, root, env, command)
    }

    fn kept_sandboxes(&self) -> Option<KeptSandboxes> {
        self.choose().kept_sandboxes()
    }
}

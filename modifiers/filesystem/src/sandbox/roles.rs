//! [`run_helper_if_asked`]: the roles this program plays inside a
//! bubblewrap sandbox, chosen by its first argument: a kept sandbox's
//! spawner (`bubblewrap/kept/spawner.rs`) and the domain allow-list's
//! network helper (`network/helper.rs`).

use super::bubblewrap::kept::{spawner_main, SPAWNER_ARGUMENT};
use super::network::{helper_main, mark_ready, HELPER_ARGUMENT};

/// Call first thing in `main` of a program that runs commands in a
/// bubblewrap sandbox: when this process was started as a sandbox's
/// spawner (a kept sandbox, see [`KeptSandboxes`](crate::KeptSandboxes))
/// or its network helper (a domain allow-list), it serves as one and exits
/// (never returns); otherwise it returns at once, and from then on the
/// bubblewrap mechanism may start this program in those roles (so a long
/// process keeps its sandbox across commands, and an allow-list works).
pub fn run_helper_if_asked() {
    let mut args = std::env::args_os();
    let first = args.nth(1);
    if first.as_deref() == Some(SPAWNER_ARGUMENT.as_ref()) {
        std::process::exit(spawner_main(args.collect()));
    }
    if first.as_deref() == Some(HELPER_ARGUMENT.as_ref()) {
        std::process::exit(helper_main(args.collect()));
    }
    mark_ready();
}

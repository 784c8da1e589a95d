//! The seccomp filter of the [`Landlock`](super::Landlock) mechanism: the
//! system calls Landlock does not govern, refused with `EPERM`.
//!
//! - `socket`: every family without the network; with it, all but
//!   `AF_INET`/`AF_INET6` (Landlock restricts TCP only, and cannot stop a
//!   connection to a Unix socket of the host: a Docker or D-Bus socket);
//!   `socketpair` stays (local pairs reach nothing).
//! - `io_uring_*` (it opens sockets and files past seccomp);
//! - `ioctl` `TIOCSTI`/`TIOCLINUX` (typing into a terminal);
//! - `setsid`/`setpgid` (so the command's process group, killed at the
//!   timeout, holds all of its processes);
//! - what root could use past Landlock: modules, kexec, `open_by_handle_at`,
//!   mounts, namespaces, `ptrace`, `bpf`, `perf_event_open`, keyrings,
//!   `userfaultfd`, swap, reboot.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// System calls refused whatever their arguments.
const REFUSED: &[i64] = &[
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_setsid,
    libc::SYS_setpgid,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_userfaultfd,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
];

fn condition(index: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, String> {
    SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value).map_err(|e| e.to_string())
}

/// The filter, compiled for this machine's architecture.
pub(crate) fn filter(network: bool) -> Result<BpfProgram, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        REFUSED.iter().map(|call| (*call, Vec::new())).collect();
    let socket = if network {
        vec![SeccompRule::new(vec![
            condition(0, SeccompCmpOp::Ne, libc::AF_INET as u64)?,
            condition(0, SeccompCmpOp::Ne, libc::AF_INET6 as u64)?,
        ])
        .map_err(|e| e.to_string())?]
    } else {
        Vec::new()
    };
    rules.insert(libc::SYS_socket, socket);
    let mut ioctl = Vec::new();
    // The request's type differs between architectures.
    #[allow(clippy::unnecessary_cast)]
    for request in [libc::TIOCSTI as u64, libc::TIOCLINUX as u64] {
        ioctl.push(
            SeccompRule::new(vec![condition(1, SeccompCmpOp::Eq, request)?])
                .map_err(|e| e.to_string())?,
        );
    }
    rules.insert(libc::SYS_ioctl, ioctl);
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_filter_compiles_with_and_without_the_network() {
        for network in [false, true] {
            let program = super::filter(network);
            assert!(program.as_ref().is_ok_and(|p| !p.is_empty()), "{program:?}");
        }
    }
}

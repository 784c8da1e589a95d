//! The seccomp filter of both mechanisms (one program: [`Landlock`]
//! applies it in the command's own process, [`Bubblewrap`] hands it to
//! `bwrap --seccomp`, which applies it just before it runs the command):
//! the system calls neither Landlock nor the namespaces govern, refused.
//!
//! - `socket`: every family without the network; with it, all but
//!   `AF_INET`/`AF_INET6` (Landlock restricts TCP only, and cannot stop a
//!   connection to a Unix socket of the host: a Docker or D-Bus socket);
//!   with a domain allow-list under Landlock, TCP ones only (Landlock's
//!   port rule then leaves only the proxy); `socketpair` stays (local
//!   pairs reach nothing).
//! - `io_uring_*` (it opens sockets and files past seccomp);
//! - `ioctl` `TIOCSTI`/`TIOCLINUX` (typing into a terminal);
//! - `setsid`/`setpgid` (so the command's process group, killed at the
//!   timeout, holds all of its processes); the spawner of a kept
//!   bubblewrap sandbox (`bubblewrap/kept/`) gets the same filter but `setpgid`
//!   (it puts each command in a process group of its own), and each
//!   command it starts adds the whole filter on top before it runs;
//! - `mq_open` (POSIX message queues outlive their process in an IPC
//!   namespace: under Landlock the host's, in a kept sandbox the next
//!   command's; nothing lists them to clean up);
//! - what root (or a process with capabilities in a namespace of its own)
//!   could use to leave the sandbox or reach the kernel: mounts (`mount`,
//!   `umount2`, `pivot_root`, the new mount API: `fsopen`, `fsmount`,
//!   `move_mount`, `open_tree`, …), `chroot`, namespaces (`unshare`,
//!   `setns`, `clone` with any `CLONE_NEW*` flag), modules, kexec,
//!   `open_by_handle_at`, `ptrace` and `process_vm_*`, `bpf`,
//!   `perf_event_open`, keyrings, `userfaultfd`, swap, reboot, and
//!   `mknod`/`mknodat` of a character or block device;
//!   all with `EPERM`.
//! - a set-user-ID or set-group-ID bit on a file (`chmod`, `fchmod`,
//!   `fchmodat`, `fchmodat2`, and the mode of `open`/`openat`/`creat`/
//!   `mknod` creating one), with `EPERM`: a command started by root
//!   writes the root's files as root, so `cp /bin/sh x; chmod u+s x`
//!   would leave a set-user-ID-root shell on the host.
//! - `clone3` and `openat2` with `ENOSYS`: their flags (and `openat2`'s
//!   mode) are in memory seccomp cannot read, and `ENOSYS` makes the C
//!   library (and programs) fall back to `clone` and `openat`, whose
//!   arguments it can. On x86-64, the x32 system calls (numbers with bit 30 set,
//!   which would skip the list) also get `ENOSYS`.
//!
//! [`Landlock`]: super::Landlock
//! [`Bubblewrap`]: super::Bubblewrap

use std::collections::BTreeMap;

use seccompiler::{
    sock_filter, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
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
    libc::SYS_chroot,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
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
    libc::SYS_quotactl,
    libc::SYS_acct,
    libc::SYS_mq_open,
];

/// The `clone` flags that make a namespace (`CLONE_NEWTIME` is only
/// `clone3`'s and `unshare`'s: in `clone` its bit is the exit signal's).
const NAMESPACE_FLAGS: &[i32] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWCGROUP,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
];

fn condition(index: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, String> {
    SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value).map_err(|e| e.to_string())
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(|e| e.to_string())
}

/// Rules matching a `mode` argument (at `index`) that makes a device.
fn device_modes(index: u8) -> Result<Vec<SeccompRule>, String> {
    let kind = u64::from(libc::S_IFMT);
    [libc::S_IFCHR, libc::S_IFBLK]
        .into_iter()
        .map(|device| {
            rule(vec![condition(
                index,
                SeccompCmpOp::MaskedEq(kind),
                u64::from(device),
            )?])
        })
        .collect()
}

/// Rules matching a `mode` argument (at `index`) with the set-user-ID
/// or set-group-ID bit.
fn privileged_modes(index: u8) -> Result<Vec<SeccompRule>, String> {
    [libc::S_ISUID, libc::S_ISGID]
        .into_iter()
        .map(|bit| {
            let bit = u64::from(bit);
            rule(vec![condition(index, SeccompCmpOp::MaskedEq(bit), bit)?])
        })
        .collect()
}

/// `fchmodat2` (Linux 6.6), by number: not every C library names it.
const SYS_FCHMODAT2: i64 = 452;

/// The sockets a command may open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sockets {
    /// None (no network).
    None,
    /// `AF_INET` and `AF_INET6` (the network on, or a namespace of its own).
    Inet,
    /// `AF_INET` and `AF_INET6` TCP only (Landlock's TCP rules then
    /// decide where they connect: the domain allow-list's proxy).
    InetStream,
}

/// The socket type bits of `socket(2)`'s second argument (without
/// `SOCK_NONBLOCK`/`SOCK_CLOEXEC`).
const SOCK_TYPE_MASK: u64 = 0xf;

/// The filter, compiled for this machine's architecture: the `clone3`
/// (and x32) prologue, then the list.
pub(crate) fn filter(sockets: Sockets) -> Result<BpfProgram, String> {
    filter_for(sockets, false)
}

/// The filter of a kept sandbox's spawner (`bubblewrap/kept/`): [`filter`] but
/// `setpgid`, so it can give each command a process group of its own
/// (the command then adds [`filter`] itself before it runs).
pub(crate) fn spawner_filter(sockets: Sockets) -> Result<BpfProgram, String> {
    filter_for(sockets, true)
}

fn filter_for(sockets: Sockets, spawner: bool) -> Result<BpfProgram, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = REFUSED
        .iter()
        .filter(|call| !(spawner && **call == libc::SYS_setpgid))
        .map(|call| (*call, Vec::new()))
        .collect();
    let other_family = || -> Result<SeccompRule, String> {
        rule(vec![
            condition(0, SeccompCmpOp::Ne, libc::AF_INET as u64)?,
            condition(0, SeccompCmpOp::Ne, libc::AF_INET6 as u64)?,
        ])
    };
    let socket = match sockets {
        Sockets::None => Vec::new(),
        Sockets::Inet => vec![other_family()?],
        Sockets::InetStream => vec![
            other_family()?,
            rule(vec![condition(
                1,
                SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
                libc::SOCK_DGRAM as u64,
            )?])?,
            rule(vec![condition(
                1,
                SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
                libc::SOCK_RAW as u64,
            )?])?,
        ],
    };
    rules.insert(libc::SYS_socket, socket);
    let mut ioctl = Vec::new();
    // The request's type differs between architectures.
    #[allow(clippy::unnecessary_cast)]
    for request in [libc::TIOCSTI as u64, libc::TIOCLINUX as u64] {
        ioctl.push(rule(vec![condition(1, SeccompCmpOp::Eq, request)?])?);
    }
    rules.insert(libc::SYS_ioctl, ioctl);
    let clone = NAMESPACE_FLAGS
        .iter()
        .map(|flag| {
            let flag = u64::from(flag.unsigned_abs());
            rule(vec![condition(0, SeccompCmpOp::MaskedEq(flag), flag)?])
        })
        .collect::<Result<Vec<_>, String>>()?;
    rules.insert(libc::SYS_clone, clone);
    // (system call, index of its mode argument): devices and privileged
    // bits refused.
    #[cfg(target_arch = "x86_64")]
    {
        let mut mknod = device_modes(1)?;
        mknod.extend(privileged_modes(1)?);
        rules.insert(libc::SYS_mknod, mknod);
        rules.insert(libc::SYS_chmod, privileged_modes(1)?);
        rules.insert(libc::SYS_open, privileged_modes(2)?);
        rules.insert(libc::SYS_creat, privileged_modes(1)?);
    }
    let mut mknodat = device_modes(2)?;
    mknodat.extend(privileged_modes(2)?);
    rules.insert(libc::SYS_mknodat, mknodat);
    rules.insert(libc::SYS_fchmod, privileged_modes(1)?);
    rules.insert(libc::SYS_fchmodat, privileged_modes(2)?);
    rules.insert(SYS_FCHMODAT2, privileged_modes(2)?);
    rules.insert(libc::SYS_openat, privileged_modes(3)?);
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    let listed: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    let mut program = prologue()?;
    program.extend(listed);
    Ok(program)
}

/// The program as the bytes `bwrap --seccomp FD` reads (a `struct
/// sock_filter` array in this machine's byte order).
pub(crate) fn to_bytes(program: &[sock_filter]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for instruction in program {
        bytes.extend_from_slice(&instruction.code.to_ne_bytes());
        bytes.push(instruction.jt);
        bytes.push(instruction.jf);
        bytes.extend_from_slice(&instruction.k.to_ne_bytes());
    }
    bytes
}

/// Classic BPF opcodes (`linux/bpf_common.h`).
const LOAD_WORD: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JUMP_EQ: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
#[cfg(target_arch = "x86_64")]
const JUMP_GE: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const RETURN: u16 = 0x06; // BPF_RET | BPF_K
/// `seccomp_data` offsets: the system call's number, the architecture.
const NR: u32 = 0;
const ARCH: u32 = 4;
/// `SECCOMP_RET_ERRNO | ENOSYS`.
const RET_ENOSYS: u32 = 0x0005_0000 | libc::ENOSYS as u32;

/// `AUDIT_ARCH_*` of this machine (`linux/audit.h`).
fn audit_arch() -> Result<u32, String> {
    const LE_64: u32 = 0x8000_0000 | 0x4000_0000;
    match std::env::consts::ARCH {
        "x86_64" => Ok(62 | LE_64),
        "aarch64" => Ok(183 | LE_64),
        "riscv64" => Ok(243 | LE_64),
        other => Err(format!("no seccomp filter for {other}")),
    }
}

fn instruction(code: u16, jt: u8, jf: u8, k: u32) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

/// `clone3`, `openat2` (and, on x86-64, x32 calls) → `ENOSYS`; anything else goes
/// on to the list (whose first step refuses another architecture).
fn prologue() -> Result<BpfProgram, String> {
    let mut after_arch = vec![instruction(LOAD_WORD, 0, 0, NR)];
    #[cfg(target_arch = "x86_64")]
    after_arch.push(instruction(JUMP_GE, 2, 0, 0x4000_0000));
    #[allow(clippy::cast_sign_loss)]
    after_arch.push(instruction(JUMP_EQ, 1, 0, libc::SYS_clone3 as u32));
    #[allow(clippy::cast_sign_loss)]
    after_arch.push(instruction(JUMP_EQ, 0, 1, libc::SYS_openat2 as u32));
    after_arch.push(instruction(RETURN, 0, 0, RET_ENOSYS));
    let skip = u8::try_from(after_arch.len()).map_err(|e| e.to_string())?;
    let mut program = vec![
        instruction(LOAD_WORD, 0, 0, ARCH),
        instruction(JUMP_EQ, 0, skip, audit_arch()?),
    ];
    program.extend(after_arch);
    Ok(program)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_filter_compiles_with_and_without_the_network() {
        for network in [
            super::Sockets::None,
            super::Sockets::Inet,
            super::Sockets::InetStream,
        ] {
            let program = super::filter(network);
            assert!(program.as_ref().is_ok_and(|p| !p.is_empty()), "{program:?}");
            let bytes = super::to_bytes(program.as_deref().unwrap_or_default());
            assert_eq!(bytes.len(), program.map_or(0, |p| p.len() * 8));
        }
    }
}

//! The mechanisms' self-checks, remembered across processes: a one-shot
//! `lc-agent tool execute` would otherwise pay for a whole confined
//! `true` (a `bwrap` with every namespace, or a confined `sh`) before its
//! own command.
//!
//! Only a **success** is remembered, in `$LC_AGENT_HOME/cache/` (else
//! `$XDG_CACHE_HOME/lc-agent`, else `~/.cache/lc-agent`), one file per
//! check holding the key it was made under: the kernel release, the
//! effective user, this process's mount and user namespaces (another
//! container is another machine), the user-namespace switches of
//! `/proc/sys`, and for bubblewrap the `bwrap` found on the `PATH`
//! (its path, inode, size and time). Any of these changing checks again.
//!
//! Why remembering cannot weaken the sandbox: the check only decides
//! whether a mechanism is *used*, never how it confines. A stale or
//! forged entry can at worst make this process use a mechanism that does
//! not work, and then the command fails (`bwrap` refuses to start, the
//! confined `sh` does not run) rather than running unconfined. A failure
//! is never remembered, so a machine that gains a mechanism uses it at
//! once. `LC_AGENT_SANDBOX_RECHECK=1` ignores what is remembered.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Ignores remembered checks when set (to anything but empty or `0`).
const RECHECK_VARIABLE: &str = "LC_AGENT_SANDBOX_RECHECK";

/// The directory the checks are remembered in, if any.
fn dir() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("LC_AGENT_HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(home).join("cache"));
    }
    if let Some(cache) = std::env::var_os("XDG_CACHE_HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(cache).join("lc-agent"));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|home| PathBuf::from(home).join(".cache/lc-agent"))
}

/// What every check's key holds: the kernel, the user, the namespaces
/// this process lives in, and the switches that allow user namespaces.
fn machine() -> String {
    let mut key = String::new();
    // SAFETY: uname fills the zeroed struct it is given.
    let mut name: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::uname(&mut name) } == 0 {
        let field = |f: &[libc::c_char]| {
            f.iter()
                .take_while(|c| **c != 0)
                .map(|c| char::from(*c as u8))
                .collect::<String>()
        };
        key.push_str(&field(&name.release));
        key.push(' ');
        key.push_str(&field(&name.version));
        key.push(' ');
        key.push_str(&field(&name.machine));
    }
    // SAFETY: geteuid and getegid have no memory effects.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    key.push_str(&format!("\nuser {uid}:{gid}"));
    for ns in ["mnt", "user", "pid", "net"] {
        let link = std::fs::read_link(format!("/proc/self/ns/{ns}"))
            .map(|l| l.display().to_string())
            .unwrap_or_default();
        key.push_str(&format!("\nns {ns} {link}"));
    }
    for switch in [
        "/proc/sys/user/max_user_namespaces",
        "/proc/sys/kernel/unprivileged_userns_clone",
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
        "/proc/sys/kernel/yama/ptrace_scope",
    ] {
        let value = std::fs::read_to_string(switch).unwrap_or_default();
        key.push_str(&format!("\n{switch} {}", value.trim()));
    }
    key
}

/// The identity of `program` as found on the `PATH` (path, inode, size,
/// modification time), or `None` when it is not there.
pub(crate) fn program_identity(program: &str) -> Option<String> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find_map(|candidate| {
            let meta = std::fs::metadata(&candidate).ok()?;
            (meta.is_file() && meta.mode() & 0o111 != 0).then(|| {
                format!(
                    "{} {}:{} {} {}.{}",
                    candidate.display(),
                    meta.dev(),
                    meta.ino(),
                    meta.size(),
                    meta.mtime(),
                    meta.mtime_nsec()
                )
            })
        })
}

/// A check's key: `name`, the machine's key and `extra`.
pub(crate) fn key(name: &str, extra: &str) -> String {
    format!("lc-agent sandbox check 1 {name}\n{}\n{extra}\n", machine())
}

fn file(name: &str) -> Option<PathBuf> {
    dir().map(|d| d.join(format!("sandbox-check-{name}")))
}

/// Whether the check `name` succeeded before under exactly `key`.
pub(crate) fn passed(name: &str, key: &str) -> bool {
    if std::env::var_os(RECHECK_VARIABLE).is_some_and(|v| !v.is_empty() && v != "0") {
        return false;
    }
    file(name)
        .and_then(|f| std::fs::read_to_string(f).ok())
        .is_some_and(|stored| stored == key)
}

/// Remembers that the check `name` succeeded under `key` (best effort:
/// a directory that cannot be written only means checking again).
pub(crate) fn remember(name: &str, key: &str) {
    let Some(file) = file(name) else {
        return;
    };
    let Some(dir) = file.parent() else {
        return;
    };
    let _ = write_atomically(dir, &file, key);
}

fn write_atomically(dir: &Path, file: &Path, contents: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".{}.{}",
        file.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    std::fs::write(&tmp, contents)?;
    std::fs::rename(&tmp, file).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_key_names_the_kernel_the_user_and_the_namespaces() {
        let key = key("test", "extra");
        assert!(key.contains("\nuser "), "{key}");
        assert!(key.contains("ns mnt mnt:["), "{key}");
        assert!(key.ends_with("\nextra\n"), "{key}");
        assert_eq!(key, super::key("test", "extra"), "stable within a process");
        assert!(program_identity("sh").is_some());
        assert!(program_identity("no-such-program-lc-agent").is_none());
    }

    #[test]
    fn only_the_same_key_passes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sandbox-check-x");
        write_atomically(dir.path(), &file, "key one").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "key one");
        write_atomically(dir.path(), &file, "key two").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "key two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}

//! [`MountPoints`]: the empty directories bubblewrap needs on the host to
//! keep a protected path that does not exist yet (`.git`, `.lc-agent`)
//! read-only.
//!
//! A mount point must exist in the directory it is mounted on, and the
//! root is the host's directory, bound: so before a command runs, each
//! missing protected path is made on the host (an empty directory, and
//! its missing parents), and bound read-only over itself; the command
//! cannot write into it, remove it or rename it (`EBUSY`). After the last
//! command of this process that needed it ends, each directory made is
//! removed again if it is still empty (if something outside the sandbox
//! wrote into it meanwhile, it stays).
//!
//! Commands of one process share the directories (counted): removing a
//! directory while another command's sandbox is mounted on it would
//! detach that mount (the kernel lazily unmounts mounts on removed
//! directories in other namespaces) and let that command create the path.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

/// Directories made as mount points, and how many running commands use
/// each.
static MADE: Mutex<BTreeMap<PathBuf, usize>> = Mutex::new(BTreeMap::new());

/// The mount points one command holds; released when dropped.
#[derive(Debug, Default)]
pub(crate) struct MountPoints {
    /// Every directory this command counts on, parents before children.
    held: Vec<PathBuf>,
}

impl MountPoints {
    /// Makes `path` (an empty directory, with its missing parents) unless
    /// it exists, and holds every directory of it this process made.
    pub(crate) fn hold(&mut self, path: &Path) -> std::io::Result<()> {
        let mut made = MADE.lock();
        let mut missing: Vec<&Path> = path
            .ancestors()
            .take_while(|a| a.symlink_metadata().is_err() || made.contains_key(*a))
            .collect();
        missing.reverse();
        for dir in missing {
            if dir.symlink_metadata().is_err() {
                std::fs::create_dir(dir)?;
            }
            *made.entry(dir.to_path_buf()).or_insert(0) += 1;
            self.held.push(dir.to_path_buf());
        }
        Ok(())
    }
}

impl Drop for MountPoints {
    fn drop(&mut self) {
        let mut made = MADE.lock();
        for dir in self.held.iter().rev() {
            let Some(count) = made.get_mut(dir) else {
                continue;
            };
            *count -= 1;
            if *count == 0 {
                made.remove(dir);
                // Only while still empty: what someone else wrote stays.
                let _ = std::fs::remove_dir(dir);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn made_directories_go_with_their_last_holder_when_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b");
        let mut first = MountPoints::default();
        first.hold(&path).unwrap();
        let mut second = MountPoints::default();
        second.hold(&path).unwrap();
        assert!(path.is_dir());
        drop(first);
        assert!(path.is_dir(), "removed under the second command");
        drop(second);
        assert!(!dir.path().join("a").exists());
        // A directory that existed before is never removed; one written
        // into meanwhile stays.
        std::fs::create_dir(dir.path().join("kept")).unwrap();
        let mut third = MountPoints::default();
        third.hold(&dir.path().join("kept/c")).unwrap();
        std::fs::write(dir.path().join("kept/c/file"), "x").unwrap();
        drop(third);
        assert!(dir.path().join("kept/c/file").exists());
    }
}

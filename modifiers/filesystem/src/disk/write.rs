//! How [`FilesystemBackend`](super::FilesystemBackend) writes: the target
//! found through in-root links, its directory opened through the root,
//! and the bytes committed atomically ([`super::super::atomic`]).
//!
//! ```text
//!  vpath ─▶ write_target (follow in-root links at the last component)
//!        ─▶ write_dir (create missing parents, confined)
//!        ─▶ write_atomically (temp file, fsync, rename or link, fsync dir)
//! ```

use std::ffi::OsString;
use std::io::{self, BufReader, Read, Write};
use std::path::{Component, Path, PathBuf};

use cap_std::fs::Dir;

use super::{is_escape, map_err, Disk};
use crate::atomic::{write_atomically, Commit};
use crate::edit::plan_edit;
use crate::encoding::{classify, decode_utf16, encode_utf16, Encoding};
use crate::error::{FsError, FsResult};
use crate::path;

/// Maps an I/O error of a write: a name too long for the filesystem is an
/// invalid path there (nothing can be created under it).
fn write_err(e: io::Error, vpath: &str) -> FsError {
    if e.raw_os_error() == Some(libc::ENAMETOOLONG) {
        FsError::InvalidPath(vpath.to_string())
    } else {
        map_err(e, vpath, FsError::FileNotFound)
    }
}

/// Symlinks followed at the last component of a write before it is a loop
/// (Linux's own limit).
const MAX_LINK_HOPS: usize = 40;

impl Disk {
    /// Where a write to `vpath` lands: its path relative to the root handle
    /// after following in-root symlinks at the last component (a write
    /// through a link writes its target, and a dangling in-root link is
    /// created at its target). Links that leave the root or loop are the
    /// spec's errors, given before anything about the file itself.
    fn write_target(&self, vpath: &str) -> FsResult<PathBuf> {
        let mut rel = self.rel(vpath);
        for _ in 0..MAX_LINK_HOPS {
            match self.root.symlink_metadata(&rel) {
                Ok(md) if md.file_type().is_symlink() => {}
                _ => return Ok(rel),
            }
            let target = self
                .root
                .read_link_contents(&rel)
                .map_err(|e| write_err(e, vpath))?;
            let target = if target.has_root() {
                if self.virtual_mode {
                    return Err(FsError::Escapes(vpath.to_string()));
                }
                target.strip_prefix("/").unwrap_or(&target).to_path_buf()
            } else {
                rel.parent().unwrap_or(Path::new("")).join(target)
            };
            rel = target;
            // The link's directory part must itself stay inside the root.
            if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty())
                && let Err(e) = self.root.metadata(parent)
                && (is_escape(&e) || e.raw_os_error() == Some(libc::ELOOP))
            {
                return Err(write_err(e, vpath));
            }
        }
        Err(FsError::SymlinkLoop(vpath.to_string()))
    }

    /// The directory handle and file name a write to `target` (from
    /// [`Disk::write_target`]) goes through.
    fn write_dir(&self, target: &Path, vpath: &str) -> FsResult<(Dir, OsString)> {
        let name = match target.components().next_back() {
            Some(Component::Normal(name)) => name.to_os_string(),
            _ => return Err(FsError::IsDirectory(vpath.to_string())),
        };
        let parent = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let dir = self
            .root
            .open_dir(parent)
            .map_err(|e| write_err(e, vpath))?;
        Ok((dir, name))
    }

    pub(super) fn write_bytes(&self, vpath: &str, bytes: &[u8], overwrite: bool) -> FsResult<()> {
        path::check_new_name(vpath)?;
        if vpath == "/" {
            return Err(FsError::IsDirectory(vpath.to_string()));
        }
        let target = self.write_target(vpath)?;
        match self.root.metadata(&target) {
            Ok(md) if md.is_dir() => return Err(FsError::IsDirectory(vpath.to_string())),
            Err(e) if is_escape(&e) => return Err(FsError::Escapes(vpath.to_string())),
            _ => {}
        }
        let mut ancestor = String::new();
        for part in path::components(path::parent(vpath)) {
            ancestor.push('/');
            ancestor.push_str(part);
            match self.root.metadata(self.rel(&ancestor)) {
                Ok(md) if md.is_dir() => {}
                Ok(_) => {
                    return Err(FsError::ParentIsFile {
                        path: vpath.to_string(),
                        parent: ancestor,
                    })
                }
                // A dangling symlink is listed as a file; nothing is created
                // through it.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    let rel = self.rel(&ancestor);
                    if self
                        .root
                        .symlink_metadata(rel)
                        .is_ok_and(|m| m.is_symlink())
                    {
                        return Err(FsError::ParentIsFile {
                            path: vpath.to_string(),
                            parent: ancestor,
                        });
                    }
                    break;
                }
                Err(e) => return Err(write_err(e, vpath)),
            }
        }
        if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
            self.root
                .create_dir_all(parent)
                .map_err(|e| write_err(e, vpath))?;
        }
        let (dir, name) = self.write_dir(&target, vpath)?;
        if !overwrite && dir.symlink_metadata(&name).is_ok() {
            return Err(FsError::AlreadyExists(vpath.to_string()));
        }
        let commit = if overwrite {
            Commit::Replace
        } else {
            Commit::CreateNew
        };
        write_atomically(&dir, &name, commit, |out| out.write_all(bytes)).map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                FsError::AlreadyExists(vpath.to_string())
            } else if e.raw_os_error() == Some(libc::EISDIR) {
                FsError::IsDirectory(vpath.to_string())
            } else {
                write_err(e, vpath)
            }
        })
    }

    pub(super) fn edit(
        &self,
        vpath: &str,
        old: &str,
        new: &str,
        replace_all: bool,
    ) -> FsResult<usize> {
        path::check_new_name(vpath)?;
        let target = self.write_target(vpath)?;
        let (file, size) = self.open_file_at(&target, vpath)?;
        let io_err = |e: io::Error| map_err(e, vpath, FsError::FileNotFound);
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        BufReader::new(file)
            .read_to_end(&mut bytes)
            .map_err(io_err)?;
        // The edited file replaces the old one atomically (see atomic.rs);
        // peak memory stays at one copy of the file for UTF-8 text.
        let rewrite = |fill: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>| {
            let (dir, name) = self.write_dir(&target, vpath)?;
            write_atomically(&dir, &name, Commit::Replace, |out| fill(out)).map_err(io_err)
        };
        match classify(&bytes) {
            Encoding::Binary => Err(FsError::Binary {
                path: vpath.to_string(),
                size,
            }),
            enc @ (Encoding::Utf16Le | Encoding::Utf16Be) => {
                let le = enc == Encoding::Utf16Le;
                let text = decode_utf16(&bytes, le);
                let plan = plan_edit(&text, old, new, replace_all)?;
                let output = encode_utf16(&plan.apply(&text), le);
                rewrite(&mut |out| out.write_all(&output))?;
                Ok(plan.starts.len())
            }
            Encoding::Utf8 => {
                let text =
                    std::str::from_utf8(&bytes).map_err(|_| FsError::NotUtf8(vpath.to_string()))?;
                let plan = plan_edit(text, old, new, replace_all)?;
                rewrite(&mut |out| plan.write_to(&bytes, out))?;
                Ok(plan.starts.len())
            }
        }
    }
}

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
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Component, Path, PathBuf};

use cap_std::fs::Dir;

use super::{is_escape, map_err, Disk};
use crate::atomic::{write_atomically, Commit};
use crate::backend::{Fingerprint, Recorded};
use crate::encoding::{classify, read_head_into, text_reader, Encoding, EncodingWriter};
use crate::error::{FsError, FsResult};
use crate::fingerprint::CopyingWriter;
use crate::limits::CappedWriter;
use crate::line_edit::{self, LineEdit};
use crate::path;
use crate::stream_edit::{self, CHUNK};

/// Maps an I/O error of a write: a name too long for the filesystem is an
/// invalid path there (nothing can be created under it).
fn write_err(e: io::Error, vpath: &str) -> FsError {
    if e.raw_os_error() == Some(libc::ENAMETOOLONG) {
        FsError::InvalidPath(vpath.to_string())
    } else {
        map_err(e, vpath, FsError::FileNotFound)
    }
}

/// `file` read from its start as UTF-8 text without a BOM: UTF-8 bytes as
/// they are (after a BOM), other encodings decoded as they are read.
fn text_from_start(file: &std::fs::File, encoding: Encoding) -> io::Result<Box<dyn Read + '_>> {
    let mut file = file;
    let skip = if encoding == Encoding::Utf8Bom { 3 } else { 0 };
    file.seek(SeekFrom::Start(skip))?;
    let raw = BufReader::with_capacity(CHUNK, file);
    Ok(match encoding {
        Encoding::Utf8 | Encoding::Utf8Bom => Box::new(raw),
        other => text_reader(raw, other),
    })
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

    /// `edit_file`, streamed (`stream_edit.rs`): a first pass reads the
    /// file for the spec's checks, a second writes the edited text into
    /// the temp file that then replaces it (`atomic.rs`). Memory stays at
    /// a few pieces of [`CHUNK`](crate::stream_edit::CHUNK) bytes whatever
    /// the file's size.
    pub(super) fn edit(
        &self,
        vpath: &str,
        old: &str,
        new: &str,
        replace_all: bool,
        max_bytes: Option<u64>,
    ) -> FsResult<usize> {
        let (target, file, encoding, _, _) = self.open_for_edit(vpath, new)?;
        let io_err = |e: io::Error| map_err(e, vpath, FsError::FileNotFound);
        let text = |file| text_from_start(file, encoding);
        let plan = stream_edit::plan(
            text(&file).map_err(io_err)?,
            vpath,
            old,
            new,
            replace_all,
            reads_utf8(encoding),
        )?;
        let (dir, name) = self.write_dir(&target, vpath)?;
        let mut changed = false;
        let mut too_large = None;
        write_atomically(&dir, &name, Commit::Replace, |out| {
            let reader = text(&file)?;
            let mut out = CappedWriter::new(out, max_bytes);
            let replaced = match encoding {
                Encoding::Utf8 => plan.write(reader, &mut out)?,
                other => {
                    let mut encoded = EncodingWriter::new(&mut out, other)?;
                    let n = plan.write(reader, &mut encoded)?;
                    encoded.flush()?;
                    n
                }
            };
            // Changed between the passes: nothing is committed.
            changed = replaced != plan.count;
            if changed {
                return Err(io::Error::other("changed while edited"));
            }
            too_large = out.over();
            if too_large.is_some() {
                return Err(io::Error::other("over the write limit"));
            }
            Ok(())
        })
        .map_err(|e| {
            if let (Some(size), Some(limit)) = (too_large, max_bytes) {
                FsError::EditTooLarge {
                    path: vpath.to_string(),
                    size,
                    limit,
                }
            } else if changed {
                FsError::Io {
                    path: vpath.to_string(),
                    reason:
                        "the file changed while it was being edited; nothing was written, try again"
                            .to_string(),
                }
            } else {
                io_err(e)
            }
        })?;
        Ok(plan.count)
    }

    /// [`Disk::edit`], also saying what the file held before (the bytes
    /// kept when at most `keep`) and after, for rewinds. A UTF-8 file of
    /// at most `keep` bytes is read once, into memory: its hash and
    /// snapshot come from that read, both passes of the edit run over it,
    /// and the hash after is taken from a copy of the bytes as they are
    /// written, so the file is opened once. Either hash is a compare, not
    /// a hash, when the same bytes were hashed lately (`hashes.rs`).
    /// Anything else is fingerprinted around the streamed edit.
    pub(super) fn edit_recorded(
        &self,
        vpath: &str,
        edit: (&str, &str, bool),
        keep: usize,
        max_bytes: Option<u64>,
    ) -> FsResult<Recorded<usize>> {
        let (old, new, replace_all) = edit;
        let (target, file, encoding, size, head) = self.open_for_edit(vpath, new)?;
        if encoding != Encoding::Utf8 || size > keep as u64 {
            drop(file);
            let before = self.fingerprint(vpath, keep).ok();
            let value = self.edit(vpath, old, new, replace_all, max_bytes)?;
            let after = self.fingerprint(vpath, 0).ok();
            return Ok(Recorded {
                value,
                before,
                after,
            });
        }
        let io_err = |e: io::Error| map_err(e, vpath, FsError::FileNotFound);
        let bytes = if head.len() < crate::encoding::BINARY_SNIFF_BYTES {
            // The head read reached the end: it is the whole file.
            drop(file);
            head
        } else {
            let mut bytes = Vec::with_capacity(size as usize + 1);
            let mut file = file;
            file.seek(SeekFrom::Start(0)).map_err(io_err)?;
            file.read_to_end(&mut bytes).map_err(io_err)?;
            bytes
        };
        let plan = stream_edit::plan(&bytes[..], vpath, old, new, replace_all, true)?;
        let (dir, name) = self.write_dir(&target, vpath)?;
        // What is written, kept to be hashed (unless it was lately) and
        // remembered for the next change's `before`.
        let mut written = Vec::with_capacity(bytes.len() + new.len());
        let mut too_large = None;
        write_atomically(&dir, &name, Commit::Replace, |out| {
            let out = CopyingWriter {
                out,
                copy: &mut written,
            };
            let mut out = CappedWriter::new(out, max_bytes);
            plan.write(&bytes[..], &mut out)?;
            too_large = out.over();
            if too_large.is_some() {
                return Err(io::Error::other("over the write limit"));
            }
            Ok(())
        })
        .map_err(|e| match (too_large, max_bytes) {
            (Some(size), Some(limit)) => FsError::EditTooLarge {
                path: vpath.to_string(),
                size,
                limit,
            },
            _ => io_err(e),
        })?;
        let before = Fingerprint {
            // Not hashed again when the same bytes were lately (what the
            // previous change wrote, most often; `hashes.rs`).
            sha256: self.hashes.sha256(&bytes),
            // It may have grown since it was opened.
            bytes: (bytes.len() <= keep).then_some(bytes),
        };
        let after = self.hashes.sha256(&written);
        self.hashes.remember(written, &after);
        Ok(Recorded {
            value: plan.count,
            before: Some(before),
            after: Some(Fingerprint {
                sha256: after,
                bytes: None,
            }),
        })
    }

    /// The file an edit (`edit_file`, a line edit) works on: its write
    /// target (through in-root links), opened, its encoding read from
    /// its first bytes, its size, and those first bytes (the whole file
    /// when they are fewer than [`BINARY_SNIFF_BYTES`](crate::encoding::BINARY_SNIFF_BYTES));
    /// a binary file, or one whose encoding cannot hold `new_text`, is
    /// refused before anything is read further.
    fn open_for_edit(
        &self,
        vpath: &str,
        new_text: &str,
    ) -> FsResult<(PathBuf, std::fs::File, Encoding, u64, Vec<u8>)> {
        path::check_new_name(vpath)?;
        let target = self.write_target(vpath)?;
        let (file, size) = self.open_file_at(&target, vpath)?;
        let mut head = vec![0u8; crate::encoding::BINARY_SNIFF_BYTES];
        let filled = read_head_into(&file, &mut head)
            .map_err(|e| map_err(e, vpath, FsError::FileNotFound))?;
        head.truncate(filled);
        match classify(&head) {
            Encoding::Binary => Err(FsError::Binary {
                path: vpath.to_string(),
                size,
            }),
            enc if !enc.can_hold(new_text) => Err(FsError::CannotEncode {
                path: vpath.to_string(),
                encoding: enc.name().unwrap_or("UTF-8"),
            }),
            enc => Ok((target, file, enc, size, head)),
        }
    }

    /// A line edit (`line_edit.rs`), streamed like [`Disk::edit`]: a first
    /// pass counts lines and finds the range, a second writes the temp file
    /// that then replaces the file.
    pub(super) fn edit_lines(&self, vpath: &str, edit: &LineEdit) -> FsResult<()> {
        let (target, file, encoding, _, _) = self.open_for_edit(vpath, &edit.new_text())?;
        let io_err = |e: io::Error| map_err(e, vpath, FsError::FileNotFound);
        let text = |file| text_from_start(file, encoding);
        let plan = edit.plan(text(&file).map_err(io_err)?, vpath, reads_utf8(encoding))?;
        let (dir, name) = self.write_dir(&target, vpath)?;
        let mut too_large = None;
        write_atomically(&dir, &name, Commit::Replace, |out| {
            let reader = text(&file)?;
            let mut out = CappedWriter::new(out, edit.limit());
            match encoding {
                Encoding::Utf8 => plan.write(reader, &mut out)?,
                other => {
                    let mut encoded = EncodingWriter::new(&mut out, other)?;
                    plan.write(reader, &mut encoded)?;
                    encoded.flush()?;
                }
            }
            too_large = out.over();
            if too_large.is_some() {
                return Err(io::Error::other("over the write limit"));
            }
            Ok(())
        })
        .map_err(|e| {
            if let (Some(size), Some(limit)) = (too_large, edit.limit()) {
                FsError::EditTooLarge {
                    path: vpath.to_string(),
                    size,
                    limit,
                }
            } else if e.to_string() == line_edit::CHANGED {
                FsError::Io {
                    path: vpath.to_string(),
                    reason: line_edit::CHANGED.to_string(),
                }
            } else {
                io_err(e)
            }
        })
    }
}

/// Whether an edit's plan reads the file's bytes as they are (which must
/// then be UTF-8) rather than decoded text (which is).
fn reads_utf8(encoding: Encoding) -> bool {
    matches!(encoding, Encoding::Utf8 | Encoding::Utf8Bom)
}

//! Where a path leads through the symbolic links inside the root, for
//! path permissions (a link into a denied directory is checked as the
//! directory). Resolution is lexical over what exists: missing components
//! are kept as named, so a file about to be written through a linked
//! directory resolves too.

use std::collections::VecDeque;
use std::path::Component;

use super::Disk;
use crate::path;

/// Links followed before giving up (as the kernel's `ELOOP` limit).
const MAX_HOPS: usize = 40;

impl Disk {
    /// `vpath` with every link along it followed, as a virtual path; `None`
    /// when no link is involved, on a loop, or when a link leads out of
    /// the root (the backend refuses such paths itself).
    pub(super) fn real_path(&self, vpath: &str) -> Option<String> {
        let mut done: Vec<String> = Vec::new();
        let mut todo: VecDeque<String> = path::components(vpath).map(String::from).collect();
        let mut hops = 0;
        while let Some(name) = todo.pop_front() {
            match name.as_str() {
                "" | "." => continue,
                ".." => {
                    done.pop();
                    continue;
                }
                _ => done.push(name),
            }
            let rel = self.rel(&format!("/{}", done.join("/")));
            let is_link = self
                .root
                .symlink_metadata(&rel)
                .is_ok_and(|m| m.file_type().is_symlink());
            if !is_link {
                continue;
            }
            hops += 1;
            if hops > MAX_HOPS {
                return None;
            }
            let target = self.root.read_link_contents(&rel).ok()?;
            done.pop();
            if target.is_absolute() {
                let inside = target.strip_prefix(&self.root_path).ok()?;
                done.clear();
                prepend(&mut todo, inside);
            } else {
                prepend(&mut todo, &target);
            }
        }
        (hops > 0).then(|| format!("/{}", done.join("/")))
    }
}

/// Puts the components of `target` before the rest of the walk.
fn prepend(todo: &mut VecDeque<String>, target: &std::path::Path) {
    let parts: Vec<String> = target
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
            Component::ParentDir => Some("..".to_string()),
            _ => None,
        })
        .collect();
    for part in parts.into_iter().rev() {
        todo.push_front(part);
    }
}

//! [`IgnoreRules`]: `.gitignore` files, honoured by `glob` and `grep` on
//! every backend (the `ignore` crate's gitignore matcher, keyed by the
//! virtual directory each file sits in).
//!
//! ```text
//!  /.gitignore      "target/"   ->  /target/** hidden
//!  /a/.gitignore    "!keep.log" ->  the deepest file with an opinion wins
//! ```

use std::collections::HashMap;
use std::path::Path;

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::path;

/// `.gitignore` rules collected per directory (virtual paths).
#[derive(Debug, Default)]
pub(crate) struct IgnoreRules {
    by_dir: HashMap<String, Gitignore>,
}

impl IgnoreRules {
    /// Adds the `.gitignore` found in directory `dir`.
    pub(crate) fn add(&mut self, dir: &str, content: &str) {
        let mut builder = GitignoreBuilder::new(dir);
        for line in content.lines() {
            // A bad line is skipped, as git does.
            let _ = builder.add_line(None, line);
        }
        match builder.build() {
            Ok(gi) => {
                self.by_dir.insert(dir.to_string(), gi);
            }
            Err(e) => tracing::debug!(dir, error = %e, "skipping unreadable .gitignore"),
        }
    }

    /// Whether the `.gitignore` files above `vpath` ignore it (the deepest
    /// file that has an opinion wins; its parents are not checked).
    pub(crate) fn is_ignored(&self, vpath: &str, is_dir: bool) -> bool {
        if self.by_dir.is_empty() {
            return false;
        }
        let mut dir = path::parent(vpath);
        loop {
            if let Some(gi) = self.by_dir.get(dir) {
                let m = gi.matched(Path::new(vpath), is_dir);
                if m.is_ignore() {
                    return true;
                }
                if m.is_whitelist() {
                    return false;
                }
            }
            if dir == "/" {
                return false;
            }
            dir = path::parent(dir);
        }
    }

    /// Whether `file` is hidden by the rules below `base`: the file itself or
    /// any directory between `base` (exclusive) and it.
    pub(crate) fn hides_below(&self, base: &str, file: &str) -> bool {
        if self.by_dir.is_empty() {
            return false;
        }
        let Some(rel) = path::relative_to(file, base) else {
            return false;
        };
        let mut current = base.to_string();
        let parts: Vec<&str> = rel.split('/').collect();
        for (i, part) in parts.iter().enumerate() {
            current = path::join(&current, part);
            if self.is_ignored(&current, i + 1 < parts.len()) {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignore_rules() {
        let mut rules = IgnoreRules::default();
        rules.add("/", "target/\n*.log\n!keep.log\n");
        rules.add("/sub", "*.txt\n");
        assert!(rules.hides_below("/", "/target/x.rs"));
        assert!(rules.hides_below("/", "/a/b.log"));
        assert!(!rules.hides_below("/", "/keep.log"));
        assert!(rules.hides_below("/", "/sub/a.txt"));
        assert!(!rules.hides_below("/", "/a.txt"));
    }
}

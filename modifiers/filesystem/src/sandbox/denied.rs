//! Path `deny` rules ([`Permissions`](crate::Permissions)) as sandbox
//! denials for the shell: the permission guard runs `execute` inside
//! [`with_denials`], and the shell's sandbox turns the rules into paths a
//! command cannot read (a rule denying reads) or write (one denying only
//! writes, edits or deletes) — see [`expand`].
//!
//! A rule's globs are matched, as the file tools match them, against
//! paths relative to the root, and a directory that matches takes all
//! beneath it. What a mechanism can keep from a command is a path that
//! exists when the command starts: a literal path (`secrets`,
//! `secrets/**`, `.env`) is kept also when it does not exist yet (it
//! cannot be created: an empty read-only directory under bubblewrap, no
//! new entry in its directory under Landlock); a glob with wildcards
//! (`**/*.pem`) covers the files that match **when the command starts**
//! (found by a walk of at most [`WALK_LIMIT`] entries), not a file the
//! command creates or renames to a matching name.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::GlobBuilder;

/// The most entries a walk for a wildcard glob visits.
pub(crate) const WALK_LIMIT: usize = 50_000;

/// One deny rule's globs, as the sandbox applies them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Denial {
    /// The globs, relative to the root.
    pub(crate) globs: Vec<String>,
    /// Reads denied too (else writes only).
    pub(crate) hide: bool,
}

tokio::task_local! {
    static DENIED: Arc<Vec<Denial>>;
}

/// Runs `future` with `denials` (and those of an outer call) applied to
/// the commands it runs.
pub(crate) async fn with_denials<F: Future>(denials: Vec<Denial>, future: F) -> F::Output {
    if denials.is_empty() {
        return future.await;
    }
    let mut all = current();
    all.extend(denials);
    DENIED.scope(Arc::new(all), future).await
}

/// The denials of the call running now.
pub(crate) fn current() -> Vec<Denial> {
    DENIED.try_with(|d| d.as_ref().clone()).unwrap_or_default()
}

/// The paths the denials name in `root` (canonical): `(hidden,
/// read_only)`, absolute. Existing paths are real paths inside the root;
/// a literal path that does not exist yet is listed as named.
pub(crate) fn expand(root: &Path, denials: &[Denial]) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut hidden = Vec::new();
    let mut read_only = Vec::new();
    for denial in denials {
        let found = if denial.hide {
            &mut hidden
        } else {
            &mut read_only
        };
        for glob in &denial.globs {
            for path in paths_of(root, glob) {
                if !found.contains(&path) {
                    found.push(path);
                }
            }
        }
    }
    read_only.retain(|p| !hidden.contains(p));
    (hidden, read_only)
}

/// Whether `text` has a glob wildcard.
fn wild(text: &str) -> bool {
    text.contains(['*', '?', '[', '{', '\\'])
}

/// The paths in `root` that `glob` names (see the module docs).
fn paths_of(root: &Path, glob: &str) -> Vec<PathBuf> {
    let glob = glob.trim();
    let glob = glob.strip_prefix("./").unwrap_or(glob);
    let glob = glob.trim_start_matches('/').trim_end_matches('/');
    let glob = glob.strip_suffix("/**").unwrap_or(glob);
    if glob.is_empty() || glob.split('/').any(|c| c == ".." || c == ".") {
        return Vec::new();
    }
    let inside = |path: PathBuf| match path.canonicalize() {
        Ok(real) => (real.starts_with(root) && real != root).then_some(real),
        // Not there yet (a dangling link is left out, as for the
        // protected paths).
        Err(_) if path.symlink_metadata().is_err() => Some(path),
        Err(_) => None,
    };
    if !wild(glob) {
        return inside(root.join(glob)).into_iter().collect();
    }
    // The literal directories before the first wildcard: where to walk.
    let literal: Vec<&str> = glob.split('/').take_while(|c| !wild(c)).collect();
    let start = root.join(literal.join("/"));
    let Ok(matcher) = GlobBuilder::new(glob)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
    else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut stack = vec![start];
    let mut visited = 0;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            visited += 1;
            if visited > WALK_LIMIT {
                tracing::warn!(glob, "a deny glob's walk stopped at {WALK_LIMIT} entries");
                return found;
            }
            let path = entry.path();
            let Ok(relative) = path.strip_prefix(root) else {
                continue;
            };
            if matcher.is_match(relative) {
                found.extend(inside(path));
            } else if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            }
        }
    }
    found
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn literal_and_wildcard_globs_name_the_paths_there() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("secrets")).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/key.pem"), "").unwrap();
        std::fs::write(root.join("a/ok.txt"), "").unwrap();
        let denials = [
            Denial {
                globs: vec!["secrets/**".into(), "**/*.pem".into(), ".env".into()],
                hide: true,
            },
            Denial {
                globs: vec!["a/*.txt".into()],
                hide: false,
            },
        ];
        let (hidden, read_only) = expand(&root, &denials);
        assert_eq!(
            hidden,
            vec![
                root.join("secrets"),
                root.join("a/b/key.pem"),
                root.join(".env")
            ]
        );
        assert_eq!(read_only, vec![root.join("a/ok.txt")]);
        assert!(expand(
            &root,
            &[Denial {
                globs: vec!["../x".into()],
                hide: true
            }]
        )
        .0
        .is_empty());
    }
}

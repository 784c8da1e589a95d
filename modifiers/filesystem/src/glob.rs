//! [`GlobPattern`]: the `glob` tool's patterns (and grep's `glob` filter),
//! compiled once per call with `globset`.
//!
//! ```text
//!  "*.rs"      -> "**/*.rs"   no `/`: the file name at any depth
//!  "src/*.rs"  -> "src/*.rs"  with `/`: the path relative to the search dir
//!  "/*.md"     -> "*.md"      a leading `/` anchors at the search dir
//!  "../x"      -> Error: Path traversal not allowed: ../x
//! ```

use globset::{GlobBuilder, GlobMatcher};

use super::error::{FsError, FsResult};

/// A compiled `glob` pattern, matched against paths relative to the
/// search directory.
#[derive(Debug, Clone)]
pub struct GlobPattern {
    source: String,
    matcher: GlobMatcher,
}

impl GlobPattern {
    /// Compiles a pattern by the spec's rules: gitignore-style syntax,
    /// case-sensitive; without `/` it matches the file name at any depth;
    /// a leading `/` anchors it at the search directory; `..` is refused.
    ///
    /// ```
    /// use lc_agent_filesystem::GlobPattern;
    ///
    /// let rs = GlobPattern::new("*.rs").unwrap();
    /// assert!(rs.is_match("src/a/b.rs"));
    /// let anchored = GlobPattern::new("/src/*.rs").unwrap();
    /// assert!(anchored.is_match("src/lib.rs") && !anchored.is_match("src/a/b.rs"));
    /// ```
    pub fn new(pattern: &str) -> FsResult<Self> {
        if pattern.split('/').any(|c| c == "..") {
            return Err(FsError::PathTraversal(pattern.to_string()));
        }
        let body = match pattern.strip_prefix('/') {
            Some(anchored) => anchored.to_string(),
            None if !pattern.contains('/') => format!("**/{pattern}"),
            None => pattern.to_string(),
        };
        let glob = GlobBuilder::new(&body)
            .literal_separator(true)
            .backslash_escape(true)
            .empty_alternates(true)
            .build()
            .map_err(|e| FsError::InvalidGlob {
                pattern: pattern.to_string(),
                reason: e.kind().to_string(),
            })?;
        Ok(Self {
            source: pattern.to_string(),
            matcher: glob.compile_matcher(),
        })
    }

    /// Whether `relative` (no leading `/`) matches.
    pub fn is_match(&self, relative: &str) -> bool {
        self.matcher.is_match(relative)
    }
}

/// Two patterns are equal when they were given as the same text.
impl PartialEq for GlobPattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for GlobPattern {}

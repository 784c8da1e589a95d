//! What the trust suites share: a sandbox test site (a workspace root
//! beside an "outside" holding a `~/.ssh`-like secret), and hook settings
//! that gate file writes the same way through every entry point.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// The secret the outside directory holds (`.ssh/id_ed25519`).
pub const SECRET: &str = "-----BEGIN OPENSSH PRIVATE KEY----- s3cr3t-key-material";

/// A `root` whose `workspace` directory (the root itself for `""`) holds
/// `.git/config` (`[core]\n`) and `src/`, and an `outside` directory beside
/// the root holding [`SECRET`] in `.ssh/id_ed25519`; both canonical, all
/// removed with the site.
#[derive(Debug)]
pub struct SandboxSite {
    base: tempfile::TempDir,
    /// The root.
    pub root: PathBuf,
    /// The directory beside it.
    pub outside: PathBuf,
}

impl SandboxSite {
    /// The directory holding the root and the outside (room for a test's
    /// own files: sessions, scripts).
    pub fn base(&self) -> &Path {
        self.base.path()
    }
}

/// A [`SandboxSite`] under `parent` — not `/tmp`, which a sandbox replaces
/// with its own: a crate's `CARGO_TARGET_TMPDIR`.
pub fn sandbox_site(parent: &Path, workspace: &str) -> SandboxSite {
    let base = tempfile::tempdir_in(parent).expect("a temporary directory");
    let root = base.path().join("root");
    let outside = base.path().join("outside");
    let work = root.join(workspace);
    for dir in [work.join(".git"), work.join("src"), outside.join(".ssh")] {
        std::fs::create_dir_all(dir).expect("the site's directories");
    }
    std::fs::write(work.join(".git/config"), "[core]\n").expect("the site's .git/config");
    std::fs::write(outside.join(".ssh/id_ed25519"), SECRET).expect("the site's secret");
    SandboxSite {
        root: root.canonicalize().expect("a canonical root"),
        outside: outside.canonicalize().expect("a canonical outside"),
        base,
    }
}

/// Hook settings gating `write_file`: a `PreToolUse` hook refuses a path
/// under `/secrets/` (exit 2, `secrets stay untouched`), rewrites a write
/// of `/draft.md` into one of `/final.md` with `rewritten` (allowing it),
/// and asks about `/ask.md`; a `PostToolUse` hook adds `checked by the
/// post hook` to every result.
pub fn gate_hooks() -> Value {
    let rewrite = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "updatedInput": {"file_path": "/final.md", "content": "rewritten"}}});
    let ask = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "ask", "permissionDecisionReason": "a person reads ask.md first"}});
    let pre = format!(
        "input=$(cat); case \"$input\" in *'\"/secrets/'*) echo 'secrets stay untouched' >&2; \
         exit 2;; *'\"/draft.md\"'*) echo '{rewrite}';; *'\"/ask.md\"'*) echo '{ask}';; esac; exit 0"
    );
    let post = json!({"hookSpecificOutput": {"hookEventName": "PostToolUse",
        "additionalContext": "checked by the post hook"}});
    json!({"hooks": {
        "PreToolUse": [{"matcher": "write_file", "hooks": [{"type": "command", "command": pre}]}],
        "PostToolUse": [{"hooks": [{"type": "command", "command": format!("cat > /dev/null; echo '{post}'")}]}]
    }})
}

//! The filesystem modifier: seven file tools over pluggable backends, and
//! eviction of large tool results.
//!
//! ```text
//!  FilesystemModifier (modifier.rs) ── tools() ──▶ tools/: Ls ReadFile WriteFile
//!    │ system prompt (prompt.rs)                   EditFile Glob Grep Execute
//!    │ on_post_invoke: evict.rs                    (TypedTools, exact output text;
//!    │                                              tools::is_offered: which are offered)
//!    │                                                   │ path.rs: virtual paths
//!    └──────────────────────────────────────────▶ dyn Backend (backend.rs)
//!       ├─ StateBackend      network.files     (state.rs) ┐ map_backend.rs:
//!       ├─ StoreBackend      key-value store   (store.rs) ┘ ops on a path map
//!       ├─ FilesystemBackend a directory, cap-std (disk.rs; writes: atomic.rs)
//!       ├─ LocalShellBackend disk + execute    (shell.rs)
//!       └─ CompositeBackend  routes by prefix  (composite.rs)
//!                 │ every backend uses the same helpers:
//!                 ▼
//!  glob.rs GlobPattern · gitignore.rs IgnoreRules · grep.rs GrepEngine
//!  encoding.rs UTF-8/UTF-16/binary · paging.rs page · edit.rs plan_edit
//! ```
//!
//! A tool call reads its typed arguments once (the core's
//! `lc_agent::tool_args`, which words every argument error), checks the
//! path, compiles a glob pattern once, asks the backend, and formats the
//! answer; backends return unsorted, uncapped data. Because every backend
//! uses the same helpers (`globset`, `ignore`'s gitignore matcher,
//! `grep-searcher`/`grep-regex`) and the tools format every answer, all
//! backends print the same text for the same files.
//!
//! The behaviour is specified in `filesystem-tools.md` (shared spec);
//! decisions the spec leaves open:
//! - `read_file` counts lines like `cat -n`: a final newline does not start
//!   another line (`"a\nb\n"` has 2 lines).
//! - grep's `max_count` applies in every output mode: the first
//!   `max_count` matching lines in (path, line) order are taken, and
//!   `files_with_matches`/`count` report the files/counts among them.
//! - `execute`'s `[Output truncated: <n> bytes]` names the total number of
//!   bytes the command wrote.
//! - `FilesystemBackend` writes (`write_file`, `edit_file`, uploads) go
//!   through a temp file in the target's directory, fsynced, then renamed
//!   over the target, and the directory fsynced (`atomic.rs`): a killed
//!   writer leaves the old or the new bytes, and a finished write survives
//!   a power cut. Names starting with `.lc-agent-tmp-` are reserved for those
//!   temp files; `ls`, `glob` and `grep` never show them, on any backend
//!   (a file with such a name can still be read by its path).
//! - A write through a dangling symlink whose target is inside the root
//!   creates the target (and its missing directories), as a write through
//!   any in-root link writes its target. A dangling link in the middle of
//!   a path is what `ls` shows it as, a file:
//!   `Cannot create <path>: <link> is a file`.
//! - A path component too long for the filesystem (`ENAMETOOLONG`) names
//!   nothing that exists: reads, `ls`, `glob`, `grep` and `edit_file` give
//!   their not-found error; `write_file` gives `Invalid path` (nothing can be
//!   created there). A path below a file is missing too (`ls /a.txt/x`:
//!   `Directory not found`).
//! - grep's `^`/`$` match at every line start/end (`$` also before
//!   `\r\n`), as ripgrep does. Only `.gitignore` files are ignore rules:
//!   `.git/info/exclude` and global git excludes are never read.

pub mod atomic;
pub mod backend;
pub mod composite;
pub mod disk;
pub mod edit;
pub mod encoding;
pub mod evict;
pub mod gitignore;
pub mod glob;
pub mod grep;
mod map_backend;
pub mod modifier;
pub mod paging;
pub mod path;
pub mod prompt;
pub mod shell;
pub mod state;
pub mod store;
pub mod tools;

pub use backend::{
    Backend, BackendFactory, BackendSource, ExecuteResponse, FileDownloadResponse, FileMatches,
    FileOpError, FileUploadResponse, FsError, FsResult, GrepLine, GrepMode, GrepQuery, LsEntry,
    ReadPage,
};
pub use composite::CompositeBackend;
pub use disk::FilesystemBackend;
pub use glob::GlobPattern;
pub use modifier::FilesystemModifier;
pub use shell::LocalShellBackend;
pub use state::StateBackend;
pub use store::{InMemoryStore, RedisStore, Store, StoreBackend, StoreError};
pub use tools::{run_tool, EditFile, Execute, FileTool, Glob, Grep, Ls, ReadFile, WriteFile};

//! The filesystem modifier: seven file tools over pluggable backends, and
//! eviction of large tool results.
//!
//! ```text
//!  FilesystemModifier ──tools()──▶ ls read_file write_file edit_file glob grep execute
//!        │                               │ (tools.rs: arguments, exact output text)
//!        │ on_post_invoke: evict.rs      ▼
//!        └──────────────────────▶ dyn Backend (backend.rs)
//!                                   ├─ StateBackend      network.files      (state.rs)
//!                                   ├─ FilesystemBackend a directory, cap-std (disk.rs)
//!                                   ├─ LocalShellBackend disk + execute     (shell.rs)
//!                                   ├─ StoreBackend      key-value store    (store.rs)
//!                                   └─ CompositeBackend  routes by prefix   (composite.rs)
//! ```
//!
//! Every backend uses one engine (search.rs: `globset`, `ignore`'s
//! gitignore matcher, `grep-searcher`/`grep-regex`), and the tools format
//! every answer, so all backends print the same text for the same files.
//! Paths follow path.rs: virtual, absolute, normalised.
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

pub mod backend;
pub mod composite;
pub mod disk;
pub mod evict;
mod memory;
pub mod modifier;
pub mod path;
pub mod prompt;
pub mod search;
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
pub use modifier::FilesystemModifier;
pub use shell::LocalShellBackend;
pub use state::StateBackend;
pub use store::{InMemoryStore, RedisStore, Store, StoreBackend, StoreError};
pub use tools::{run_tool, FileTool, ToolKind};

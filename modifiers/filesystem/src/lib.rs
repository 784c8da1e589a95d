//! The file tools of lc-agent: `ls`, `read_file`, `write_file`,
//! `edit_file`, `glob`, `grep`, `delete` and `execute` over pluggable, confined
//! backends, and the filesystem modifier that offers them to a network's
//! chat nodes and evicts large tool results to files. `lc-agent tool`, the
//! MCP file-tool server and the HTTP server's tool endpoints run the tools
//! directly; the agent layer (`lc-agent-deepagent`) puts them on agents.
//! The crate depends only on the core (`lc-agent`).
//!
//! ```text
//!  FilesystemModifier (modifier.rs) ── tools() ──▶ tools/: Ls ReadFile WriteFile
//!    │ system prompt (prompt.rs)                   EditFile Glob Grep Delete Execute
//!    │ on_post_invoke: evict.rs                    (TypedTools, exact output text;
//!    │                                              is_offered: which are offered)
//!    │                                                   │ path.rs: virtual paths
//!    └──────────────────────────────────────────▶ dyn Backend (backend.rs)
//!       ├─ StateBackend      network.files     (state.rs) ┐ map_backend.rs:
//!       ├─ StoreBackend      key-value store   (store.rs) ┘ ops on a path map
//!       ├─ FilesystemBackend a directory, cap-std (disk/; writes: atomic.rs)
//!       ├─ LocalShellBackend disk + execute    (shell.rs), in a Sandbox
//!       │    (sandbox/: SandboxPolicy, SandboxMechanism: Landlock, Bubblewrap, pids cgroup)
//!       ├─ CompositeBackend  routes by prefix  (composite.rs)
//!       ├─ guard: Permissions (permissions/): path rules around any of them
//!       └─ wrappers (wrap.rs: Wrap forwards what they do not change):
//!            FileLimits::apply (limited.rs), the shell, an editor (CLI's ACP)
//!                 │ every backend uses the same helpers:
//!                 ▼
//!  glob.rs GlobPattern · gitignore.rs IgnoreRules · grep.rs GrepEngine
//!  encoding.rs UTF-8/UTF-16/binary · paging.rs page · edit.rs plan_edit
//!  snapshots.rs: write_file/edit_file keep a file's prior content under the
//!  session (named on the tool node); rewind_files puts files back
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
//! - grep's `max_count` applies in every output mode. In `content` and
//!   `count` it is the spec's limit on matching lines, taken in (path,
//!   line) order (`count` reports the counts among them). In
//!   `files_with_matches` no line is reported, so each file is searched
//!   only to its first match and counts as one: `max_count` is the number
//!   of files listed (the first in path order), and the footer `...
//!   (stopped after <max_count> matches; narrow the search)` follows when
//!   more files match.
//! - Once `max_count` stops grep's answer, its notes about files it could
//!   not search (`could not read`, `has a line longer than 8 MiB`) name
//!   only files that come, in path order, before the last file printed:
//!   the search stopped there (the disk backend does not open later
//!   files), so the in-memory backends, which search every file, leave
//!   the later notes out too and every backend prints the same answer.
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
//!
//! ### Files at the edges
//!
//! The tools are handed to anyone (the HTTP server, the MCP server), so a
//! huge or odd file must cost bounded memory and time, and the same
//! answer on every backend:
//! - **Long lines.** `read_file` keeps at most [`MAX_LINE_CHARS`] chars of a
//!   line and counts the rest (` ... [line truncated, <k> more chars]`);
//!   it stops keeping lines once the window passes the 50,000-char output
//!   cap. A 3 GB line costs a few KiB.
//! - **The footer does not count a huge file.** After the window,
//!   `read_file` counts lines for `of <total>` only up to
//!   [`READ_SCAN_BUDGET`] (16 MiB) of bytes it does not show (the rest of
//!   cut lines included). Past it the footer reads `[Showing lines <a>-<b>
//!   of a file too large to count. Use offset=<b> to read more.]` (and the
//!   50,000-char footer `... Showing lines <a>-<b> of a file too large to
//!   count. ...`); a line cut at the budget says `over <k> more chars`.
//!   Skipping to `offset` has no budget (the caller asked for that line),
//!   and an offset past the end still names the exact length.
//! - **Binary is decided by the first 8 KiB** (the spec's rule): a NUL byte
//!   there makes `read_file` and `edit_file` answer `Error: <path> is a
//!   binary file (<n> bytes)` and `grep` skip the file; a NUL byte after
//!   them is text (shown and searched as it is), so no tool reads a whole
//!   file to decide.
//! - **grep's line limit.** The searcher's line buffer stops at
//!   [`GREP_LINE_LIMIT`] (8 MiB): a file with a longer line is not searched,
//!   and the answer begins with `Note: <path> was not searched: it has a
//!   line longer than 8 MiB.` (after the invalid-regex note, one per file,
//!   sorted). Printed lines are cut like `read_file`'s. In-memory backends
//!   search through the same line buffer, so they answer alike.
//! - **Control characters in names.** `write_file`, `edit_file` and
//!   uploads refuse a path with a control character (C0, DEL, C1):
//!   `Error: Invalid path: <path> (file names cannot contain control
//!   characters)` (`invalid_path` for uploads). Wherever a path is printed
//!   (`ls`, `glob`, `grep`, every error) its control characters are
//!   escaped as Rust's `escape_debug` spells them (`\n`, `\t`, `\r`, `\0`,
//!   `\u{1b}`), so a listing has one path per line and a NUL is never
//!   echoed raw; sorting is by the printed line. Existing odd names (made
//!   by a shell, say) are listed, searched and read, escaped.
//! - **Encodings.** A file is decoded by what its first 8 KiB say (the
//!   window of the binary rule): a UTF-16 BOM, a UTF-8 BOM, bytes that are
//!   not UTF-8 (Windows-1252, the superset of Latin-1 every byte of which is
//!   a character), else UTF-8. `read_file` ends with `[File encoding:
//!   <name>]` for any but plain UTF-8 (`UTF-8 with BOM`, `UTF-16LE`,
//!   `UTF-16BE`, `windows-1252`) and never shows a BOM; `grep` searches the
//!   decoded text; `edit_file` writes the file back in its own encoding,
//!   BOM included, and refuses a `new_string` Windows-1252 cannot hold
//!   (`Error: <path> is windows-1252 text, which cannot hold every
//!   character of new_string; the file was not changed`). A bad byte after
//!   the first 8 KiB of a UTF-8 file stays what it was: U+FFFD when read,
//!   and `edit_file` will not rewrite the file.
//! - **Bytes are kept exactly or refused.** `FilesystemBackend` stores any
//!   bytes. `StateBackend` and `StoreBackend` hold text (`content` is lines
//!   of a string): an upload that is not UTF-8 is refused with
//!   `invalid_path` ([`FsError::NotText`]) and nothing is stored; UTF-8 is
//!   kept byte for byte (CR, NUL and all). Keep images and other binary
//!   files on a directory route of a [`CompositeBackend`].
//!
//! ## Layout
//!
//! Modules are private; what they offer is re-exported here (one path to
//! each item), except [`path`] and [`evict`], whose functions are used by
//! name from outside.
//!
//! - `modifier.rs`: [`FilesystemModifier`], offers the tools, adds the prompt section, evicts.
//! - `prompt.rs`: the system-prompt section about the file tools.
//! - [`evict`]: huge tool results to `/large_tool_results/<id>` and their preview.
//! - `tools/`: the eight tools, one type each ([`TypedTool`](lc_agent::TypedTool)s: their
//!   arguments are read, and argument errors worded, by the core's `lc_agent::tool_args`),
//!   [`run_tool`], [`all_tools`], [`offered_tools`] and [`is_offered`], the one rule for
//!   which tools a model is offered.
//!   - `tools/ls.rs`: [`Ls`] and `format_ls`.
//!   - `tools/read_file.rs`: [`ReadFile`]; `read_format.rs`: `format_read`, the text it shows (also for a PDF's text).
//! - `media.rs`: `read_file` on images (an image part, downscaled when too large) and PDFs
//!   (the text of each page, paged like text); [`image_part`], an image file to attach to a message.
//!   - `tools/write_file.rs`: [`WriteFile`].
//!   - `tools/edit_file.rs`: [`EditFile`].
//!   - `tools/glob.rs`: [`Glob`].
//!   - `tools/grep.rs`: [`Grep`] and `format_grep`.
//!   - `tools/execute.rs`: [`Execute`] and `format_execute`.
//!   - `tools/delete.rs`: [`Delete`], a file or (`recursive`) a folder (the agent
//!     layer holds each call for a person's approval by default).
//!   - `tools/lines.rs`: [`InsertLines`], [`ReplaceLines`], [`DeleteLines`] and
//!     [`line_tools`]: edits on a 1-based range of lines, offered only when turned on.
//! - [`path`]: virtual paths: normalisation, the rejection rules, names for new files,
//!   escaping for printing.
//! - `backend.rs`: the [`Backend`] trait and what it returns.
//! - `fingerprint.rs`: [`Fingerprint`], a file named by the SHA-256 of its bytes (whole or in pieces).
//! - `error.rs`: [`FsError`] (the text the model reads), [`FileOpError`], and `shown` (how a path appears).
//! - `state.rs`: [`StateBackend`], files in the network's `files`.
//! - `store.rs`: [`StoreBackend`] over a [`Store`] ([`InMemoryStore`] or [`RedisStore`]).
//! - `map_backend.rs`: the shared logic of map-backed backends (state, store).
//! - `disk/`: [`FilesystemBackend`], a directory confined with cap-std
//!   (`disk/search.rs`: its walk, listing, glob and grep;
//!   `disk/write.rs`: how it writes, through in-root links, atomically;
//!   `disk/links.rs`: where a path leads through links, for path rules;
//!   `disk/hashes.rs`: contents hashed lately, compared instead of hashed again).
//! - `atomic.rs`: crash-safe writes: temp file, fsync, rename (never a torn file).
//! - `shell.rs`: [`LocalShellBackend`], a directory plus `execute`.
//! - `sandbox/`: [`Sandbox`], [`SandboxPolicy`], [`SandboxMode`], the
//!   [`SandboxMechanism`] trait, [`Landlock`] (+ `seccomp.rs`), [`Bubblewrap`]
//!   and the per-command choice between them (`auto.rs`); `limits.rs`, the
//!   per-command pids cgroup (v1 or v2); `env.rs`, the clean environment a
//!   sandboxed process gets; `program.rs`, [`SandboxedProgram`] (an MCP
//!   stdio server under the shell's profile); `bubblewrap/kept/`,
//!   [`KeptSandboxes`] (a bubblewrap sandbox kept across commands, a
//!   spawner inside); `roles.rs`, [`run_helper_if_asked`] (this program as
//!   a sandbox's spawner or network helper); `fd_passing.rs` (SCM_RIGHTS);
//!   `drain.rs` (a command's output, capped).
//! - `branch_diff.rs`: [`diff_branches`], where two sessions' branches part
//!   and what each holds after (tools called, files changed, tokens).
//! - `composite.rs`: [`CompositeBackend`], routes paths by prefix.
//! - `permissions/`: path rules ([`Permissions`], [`PermissionRule`], [`Operation`],
//!   [`RuleMode`], [`Verdict`]; the flag syntax) and `guard.rs`, the backend wrapper that
//!   checks them on every call and filters listings
//!   ([`Permissions::guard`]).
//! - `glob.rs`: [`GlobPattern`], the `glob` tool's patterns.
//! - `gitignore.rs`: `IgnoreRules`, `.gitignore` files.
//! - `limits.rs`: [`FileLimits`], the file tools' read and write size limits
//!   (`docs/file-limits.md`), said by a backend ([`Backend::limits`]);
//!   `limited.rs`: [`FileLimits::apply`], the backend wrapper that says them.
//! - `grep.rs`: `GrepEngine`, the regex search (NUL and line-length limits), and the
//!   invalid-regex note.
//! - `encoding.rs`: UTF-8 (BOM or not), UTF-16 (BOM), Windows-1252 or binary, from a file's
//!   first 8 KiB; the decoding reader and the writer back in a file's own encoding.
//! - `paging.rs`: `page`, the streaming line window of `read_file`, in bounded memory.
//! - `edit.rs`: `plan_edit`, where `edit_file` replaces (CRLF-aware), in a text held whole
//!   (in-graph backends).
//! - `line_edit.rs`: [`LineEdit`], the line tools' edit in two streamed passes (every
//!   backend; bounded memory).
//! - `stream_edit.rs`: the same edit streamed in bounded memory (disk backends): a
//!   checking pass, then a pass writing the temp file.
//! - `text.rs`: [`page_text`], [`edit_text`]: `read` and `edit` on a text held
//!   elsewhere (an editor's buffer), for backends that fetch and store it themselves.
//! - `wrap.rs`: [`Wrap`], a backend around another one. **The rule for
//!   wrappers:** a wrapper that changes some calls (the file limits, the
//!   shell's `execute`, an editor's reads and writes) implements [`Wrap`]
//!   and states only those; every other call, including a method added to
//!   [`Backend`] later, goes to its inner backend. A wrapper with a rule
//!   for every call (the path-rule guard, the composite's routing)
//!   implements [`Backend`] under `#[deny(clippy::missing_trait_methods)]`,
//!   so it states every method. Never forward by hand: a method left out
//!   falls to [`Backend`]'s default, which goes around the inner backend's
//!   own version.

mod atomic;
mod backend;
mod branch_diff;
mod composite;
mod disk;
mod edit;
mod encoding;
mod error;
pub mod evict;
mod fingerprint;
mod gitignore;
mod glob;
mod grep;
mod history;
mod limited;
mod limits;
mod line_edit;
mod map_backend;
mod media;
mod modifier;
mod paging;
pub mod path;
mod permissions;
mod prompt;
mod read_format;
mod sandbox;
mod shell;
mod snapshots;
mod state;
mod store;
mod stream_edit;
mod text;
mod tools;
mod wrap;

pub use atomic::TEMP_PREFIX;
pub use backend::{
    Backend, BackendFactory, BackendSource, ExecuteResponse, FileDownloadResponse, FileMatches,
    FileUploadResponse, GrepLine, GrepMode, GrepQuery, LsEntry, PageLine, ReadPage, Recorded,
};
pub use branch_diff::{diff_branches, BranchDiff, BranchSide};
pub use composite::CompositeBackend;
pub use disk::FilesystemBackend;
pub use error::{FileOpError, FsError};
pub use fingerprint::Fingerprint;
pub use glob::GlobPattern;
pub use grep::GREP_LINE_LIMIT;
pub use history::{
    redo, rewind, HistoryError, HistoryStore, RewindReport, RewindWhat, TurnRecord,
    WorkspaceHistory, DEFAULT_FILE_CAP, IGNORE_FILE, WORKSPACE_HISTORY, WORKSPACE_TREE,
};
pub use limits::FileLimits;
pub use line_edit::LineEdit;
pub use media::image_part;
pub use modifier::FilesystemModifier;
pub use paging::{MAX_LINE_CHARS, READ_SCAN_BUDGET};
pub use permissions::{
    CommandRule, Operation, PermissionError, PermissionRule, Permissions, RuleMode, Verdict,
    PROTECTED_PATHS,
};
pub use sandbox::{
    run_helper_if_asked, Bubblewrap, DomainPattern, KeepAlive, KeptSandboxes, Landlock, Prepared,
    Sandbox, SandboxError, SandboxMechanism, SandboxMode, SandboxNetwork, SandboxPolicy,
    SandboxedProgram,
};
pub use shell::LocalShellBackend;
pub use snapshots::{rewind_files, FileRewind, SNAPSHOT_CAP_BYTES};
pub use state::StateBackend;
pub use store::{InMemoryStore, RedisStore, Store, StoreBackend, StoreError, StoreVersion};
pub use text::{edit_text, page_text};
pub use tools::{
    all as all_tools, is_offered, line_tools, offered as offered_tools, run_tool, Change, Delete,
    DeleteArgs, DeleteLines, DeleteLinesArgs, EditFile, EditFileArgs, Execute, ExecuteArgs,
    FileTool, Glob, GlobArgs, Grep, GrepArgs, InsertLines, InsertLinesArgs, Ls, LsArgs, ReadFile,
    ReadFileArgs, ReplaceLines, ReplaceLinesArgs, WriteFile, WriteFileArgs, LINE_TOOL_NAMES,
    TOOL_NAMES,
};
pub use wrap::Wrap;

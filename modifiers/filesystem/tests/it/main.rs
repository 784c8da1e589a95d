//! The file tools' integration tests, one module per concern, in one test
//! binary. Tests that need an external program carry `#[needs(...)]`
//! (`lc-agent-test-support`): where it is missing they are listed as
//! ignored, with the reason.
//!
//! # Layout
//!
//! - `common` — shared fixtures: the golden table every backend must print
//!   exactly, the files at the edges, temp-file finders, two editors.
//! - `agree` — every backend gives the same answers on a generated tree.
//! - `append` — `Backend::append` on every kind of backend.
//! - `delete` — `delete` on every backend: root refused, rules, rewinds.
//! - `disk_writes` — `FilesystemBackend` writes: symlinks, atomicity, modes.
//! - `e2e` — a scripted model drives the tools through a network.
//! - `execute` — `execute` through `LocalShellBackend`.
//! - `first_match` — grep files_with_matches stops at a file's first match; max_count counts files.
//! - `golden` — the golden table against every backend.
//! - `hostile` — the hostile suite: every escape attempt under each sandbox mechanism, as root
//!   and as an unprivileged user, each effect checked on the host.
//! - `kept` — kept bubblewrap sandboxes: reuse, nothing of one command reaches the next, a
//!   killed spawner, parallel commands.
//! - `kill_writes` — no torn files when a writer is killed mid-write.
//! - `limits` — the size limits of reads and writes on every backend, exact messages.
//! - `lines` — the line tools on every backend: exact answers, bytes left, bounded memory.
//! - `media` — `read_file` on images and PDFs on every backend; a model without images.
//! - `modifier` — the modifier in a running network.
//! - `permissions` — path rules on every backend, with hostile paths.
//! - `properties` — properties of the tools on generated inputs.
//! - `redis_store` — `StoreBackend` over real Redis servers.
//! - `rewind` — files follow the conversation: snapshots and `rewind_files`.
//! - `sandbox` — `execute` in a sandbox: hostile commands, modes, limits.
//! - `security` — the security corpus of the confined backend.
//! - `store_cas` — store writes are compare-and-set.
//! - `unreadable` — folders the process cannot read are named by `ls`, `glob`, `grep`.
//! - `workspace_history` — rewind anything: turn records of a disk workspace (the shell's
//!   changes too), redo, a user's changes kept, the size cap, pruning.
//! - `wrappers` — every `Backend` call through a wrapper (limits, guard, composite, `Wrap`)
//!   reaches the inner backend or is the wrapper's own rule.

// Test code: a failed step is a failed test.
#![allow(clippy::unwrap_used, unreachable_pub)]

mod agree;
mod append;
mod common;
mod delete;
mod disk_writes;
mod e2e;
mod execute;
mod first_match;
mod golden;
mod hostile;
mod kept;
mod kill_writes;
mod limits;
mod lines;
mod media;
mod modifier;
mod permissions;
mod properties;
mod redis_store;
mod rewind;
mod sandbox;
mod security;
mod store_cas;
mod unreadable;
mod workspace_history;
mod wrappers;

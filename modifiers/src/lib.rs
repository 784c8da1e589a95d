//! Modifiers for lc-agent networks.
//!
//! - [`filesystem`]: the [`FilesystemModifier`](filesystem::FilesystemModifier)
//!   — file tools (`ls`, `read_file`, `write_file`, `edit_file`, `glob`,
//!   `grep`, `execute`) over pluggable backends, and eviction of large tool
//!   results to `/large_tool_results/`.
#![deny(missing_docs)]

pub mod checkpoint;
pub mod filesystem;

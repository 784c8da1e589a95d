//! The seven file tools, one type each: [`Ls`], [`ReadFile`], [`WriteFile`],
//! [`EditFile`], [`Glob`], [`Grep`], [`Execute`]. Each holds its backend
//! (given directly or as a factory) and implements [`lc_agent::Tool`].
//!
//! ```text
//!  Tool::call(args, ctx) ─┐                      run_tool(backend, name, args)
//!                         ▼                         │ (by name, no network)
//!     args::parse ─▶ <Tool>Args (typed, fields in order; spec wording)
//!                         ▼
//!     FileTool::run ─▶ path::normalize ─▶ dyn Backend ─▶ format_* ─▶ ToolOutput
//! ```
//!
//! A call reads its arguments once (the object check included) and
//! compiles a glob pattern once; everything the model reads is formatted
//! here, so every backend prints the same text. Argument errors and
//! backend errors alike come back as `Error: ...` results the model reads.

use std::future::Future;
use std::sync::Arc;

use lc_agent::{Tool, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::Value;

use super::backend::{Backend, BackendSource, FsError};

/// Declares a file tool: the type holding its backend, its constructor and
/// its [`Tool`] impl (name, description and schema from [`FileTool`]).
macro_rules! file_tool {
    ($(#[$doc:meta])* $tool:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $tool {
            backend: $crate::filesystem::backend::BackendSource,
        }

        impl $tool {
            /// The tool over `backend` (a backend or a factory).
            pub fn new(backend: impl Into<$crate::filesystem::backend::BackendSource>) -> Self {
                Self {
                    backend: backend.into(),
                }
            }
        }

        #[::async_trait::async_trait]
        impl ::lc_agent::Tool for $tool {
            fn name(&self) -> &str {
                <$tool as $crate::filesystem::tools::FileTool>::NAME
            }

            fn description(&self) -> &str {
                <$tool as $crate::filesystem::tools::FileTool>::DESCRIPTION
            }

            fn parameters(&self) -> ::serde_json::Value {
                <$tool as $crate::filesystem::tools::FileTool>::parameters()
            }

            async fn call(
                &self,
                args: ::serde_json::Value,
                ctx: &::lc_agent::ToolContext,
            ) -> Result<::lc_agent::ToolOutput, ::lc_agent::ToolError> {
                let backend = self.backend.resolve(&ctx.network);
                Ok($crate::filesystem::tools::call::<$tool>(backend.as_ref(), &args).await)
            }
        }
    };
}

pub mod args;
mod edit_file;
mod execute;
mod glob;
mod grep;
mod ls;
mod read_file;
mod write_file;

pub use args::AtLeast;
pub use edit_file::{EditFile, EditFileArgs};
pub use execute::{format_execute, Execute, ExecuteArgs, MAX_TIMEOUT_SECS};
pub use glob::{Glob, GlobArgs};
pub use grep::{format_grep, Grep, GrepArgs};
pub use ls::{format_ls, Ls, LsArgs};
pub use read_file::{format_read, ReadFile, ReadFileArgs, MAX_LINE_CHARS, MAX_READ_CHARS};
pub use write_file::{WriteFile, WriteFileArgs};

/// Lines listed by `ls`, `glob` and `grep` before the footer.
pub const MAX_LIST_LINES: usize = 1000;

/// The seven tool names, in the order they are offered.
pub const TOOL_NAMES: [&str; 7] = [
    Ls::NAME,
    ReadFile::NAME,
    WriteFile::NAME,
    EditFile::NAME,
    Glob::NAME,
    Grep::NAME,
    Execute::NAME,
];

/// The names of the file tools that are never evicted (all but `execute`).
pub const FILE_TOOL_NAMES: [&str; 6] = {
    let [ls, read_file, write_file, edit_file, glob, grep, _execute] = TOOL_NAMES;
    [ls, read_file, write_file, edit_file, glob, grep]
};

/// What each file tool defines: its name, what the model reads about it,
/// its typed arguments, and how one call runs on a backend.
pub trait FileTool {
    /// The function name the model calls.
    const NAME: &'static str;
    /// The description the model reads.
    const DESCRIPTION: &'static str;
    /// The arguments, borrowed from the model's JSON (see [`args`]).
    type Args<'a>: Deserialize<'a> + Send;

    /// The JSON schema of the arguments.
    fn parameters() -> Value;

    /// Runs one call. `Err` is an error result the model reads.
    fn run<'a>(
        backend: &'a dyn Backend,
        args: Self::Args<'a>,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send + 'a;
}

/// Backend errors are results the model reads, with the spec's text.
impl From<FsError> for ToolError {
    fn from(e: FsError) -> Self {
        ToolError::Failed(e.to_string())
    }
}

/// Reads the arguments and runs `T`: always a result, errors included.
async fn call<T: FileTool>(backend: &dyn Backend, args: &Value) -> ToolOutput {
    let result = match args::parse::<T::Args<'_>>(T::NAME, args) {
        Ok(args) => T::run(backend, args).await,
        Err(e) => Err(e),
    };
    result.unwrap_or_else(|e| ToolOutput::error(e.to_string()))
}

/// All seven tools over `backend`, in the order they are offered.
///
/// ```
/// use lc_agent::Tool;
/// use lc_agent_modifiers::filesystem::{tools, StateBackend};
///
/// let all = tools::all(StateBackend::factory());
/// let names: Vec<&str> = all.iter().map(|t| t.name()).collect();
/// assert_eq!(names, tools::TOOL_NAMES);
/// ```
pub fn all(backend: impl Into<BackendSource>) -> Vec<Arc<dyn Tool>> {
    let backend = backend.into();
    vec![
        Arc::new(Ls::new(backend.clone())),
        Arc::new(ReadFile::new(backend.clone())),
        Arc::new(WriteFile::new(backend.clone())),
        Arc::new(EditFile::new(backend.clone())),
        Arc::new(Glob::new(backend.clone())),
        Arc::new(Grep::new(backend.clone())),
        Arc::new(Execute::new(backend)),
    ]
}

/// The tools to offer a model over `backend` (resolved as `resolved`): the
/// six file tools, plus `execute` when the backend can run commands.
pub fn offered(backend: impl Into<BackendSource>, resolved: &dyn Backend) -> Vec<Arc<dyn Tool>> {
    let mut tools = all(backend);
    if !resolved.supports_execute() {
        tools.retain(|t| t.name() != Execute::NAME);
    }
    tools
}

/// Runs one file tool against a backend and returns what the model sees.
/// `None` when `name` is not one of the seven tools.
///
/// ```
/// use lc_agent::RunnableNetwork;
/// use lc_agent_modifiers::filesystem::{run_tool, StateBackend};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let backend = StateBackend::new(RunnableNetwork::new());
/// let out = run_tool(&backend, "write_file", &json!({"file_path": "a.txt", "content": "hi"})).await.unwrap();
/// assert_eq!(out.content, "Successfully wrote to /a.txt");
/// let out = run_tool(&backend, "read_file", &json!({"file_path": "/a.txt"})).await.unwrap();
/// assert_eq!(out.content, "     1\thi");
/// # });
/// ```
pub async fn run_tool(backend: &dyn Backend, name: &str, args: &Value) -> Option<ToolOutput> {
    Some(match name {
        Ls::NAME => call::<Ls>(backend, args).await,
        ReadFile::NAME => call::<ReadFile>(backend, args).await,
        WriteFile::NAME => call::<WriteFile>(backend, args).await,
        EditFile::NAME => call::<EditFile>(backend, args).await,
        Glob::NAME => call::<Glob>(backend, args).await,
        Grep::NAME => call::<Grep>(backend, args).await,
        Execute::NAME => call::<Execute>(backend, args).await,
        _ => return None,
    })
}

/// Caps a sorted list at [`MAX_LIST_LINES`], then a footer naming how many
/// more there are.
fn cap_lines(mut lines: Vec<String>, footer: impl Fn(usize) -> String) -> String {
    if lines.len() > MAX_LIST_LINES {
        let more = lines.len() - MAX_LIST_LINES;
        lines.truncate(MAX_LIST_LINES);
        lines.push(footer(more));
    }
    lines.join("\n")
}

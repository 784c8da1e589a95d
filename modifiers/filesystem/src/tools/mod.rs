//! The eight file tools, one type each: [`Ls`], [`ReadFile`], [`WriteFile`],
//! [`EditFile`], [`Glob`], [`Grep`], [`Delete`], [`Execute`]. Each holds its backend
//! (given directly or as a factory) and is a [`lc_agent::TypedTool`] (so a
//! [`lc_agent::Tool`]).
//!
//! ```text
//!  Tool::call(args, ctx) ─┐                      run_tool(backend, name, args)
//!                         ▼                         │ (by name, no network)
//!     lc_agent::tool_args::parse ─▶ <Tool>Args (typed, fields in order; the core's wording)
//!                         ▼
//!     FileTool::run ─▶ path::normalize ─▶ dyn Backend ─▶ format_* ─▶ ToolOutput
//! ```
//!
//! A call reads its arguments once (the object check included) and
//! compiles a glob pattern once; everything the model reads is formatted
//! here, so every backend prints the same text. Argument errors and
//! backend errors alike come back as `Error: ...` results the model reads;
//! argument errors are worded by the core ([`lc_agent::tool_args`]), which
//! is the spec's wording (`Invalid arguments for <tool>: <reason>`).
//!
//! Which tools are offered to a model is one rule, [`is_offered`]: every
//! file tool, and `execute` only when the backend can run commands.

use std::future::Future;
use std::sync::Arc;

use lc_agent::tool_args;
use lc_agent::{Tool, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::Value;

use super::backend::{Backend, BackendSource};
use super::error::FsError;

/// Declares a file tool: the type holding its backend, its constructor and
/// its [`lc_agent::TypedTool`] impl (name, description, arguments and schema
/// from [`FileTool`]).
macro_rules! file_tool {
    ($(#[$doc:meta])* $tool:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $tool {
            backend: $crate::backend::BackendSource,
        }

        impl $tool {
            /// The tool over `backend` (a backend or a factory).
            pub fn new(backend: impl Into<$crate::backend::BackendSource>) -> Self {
                Self {
                    backend: backend.into(),
                }
            }
        }

        impl ::lc_agent::TypedTool for $tool {
            const NAME: &'static str = <$tool as $crate::tools::FileTool>::NAME;
            type Args<'a> = <$tool as $crate::tools::FileTool>::Args<'a>;

            fn description(&self) -> &str {
                <$tool as $crate::tools::FileTool>::DESCRIPTION
            }

            fn parameters(&self) -> ::serde_json::Value {
                // Built once: a chat turn asks every tool for its spec.
                static PARAMETERS: ::std::sync::OnceLock<::serde_json::Value> =
                    ::std::sync::OnceLock::new();
                PARAMETERS
                    .get_or_init(<$tool as $crate::tools::FileTool>::parameters)
                    .clone()
            }

            // A constant description and the parameters above: a network
            // reads them once, not every turn.
            fn fixed_spec(&self) -> bool {
                true
            }

            async fn call(
                &self,
                args: Self::Args<'_>,
                ctx: &::lc_agent::ToolContext,
            ) -> Result<::lc_agent::ToolOutput, ::lc_agent::ToolError> {
                let backend = self.backend.resolve(&ctx.network);
                let changed = <$tool as $crate::tools::FileTool>::changed_path(&args)
                    .and_then(|p| $crate::path::normalize(p).ok());
                let tree = <$tool as $crate::tools::FileTool>::changes_tree(&args);
                match changed {
                    // Files follow the conversation (snapshots.rs).
                    Some(dir) if tree => {
                        let run = <$tool as $crate::tools::FileTool>::run(backend.as_ref(), args);
                        $crate::snapshots::recorded_tree(backend.as_ref(), ctx, &dir, run).await
                    }
                    Some(file) => {
                        let (out, change) = <$tool as $crate::tools::FileTool>::run_recorded(
                            backend.as_ref(),
                            args,
                            &file,
                            $crate::snapshots::SNAPSHOT_CAP_BYTES,
                        )
                        .await?;
                        if let Some((before, after)) = change {
                            $crate::snapshots::record(ctx, &file, before, after);
                        }
                        Ok(out)
                    }
                    None => <$tool as $crate::tools::FileTool>::run(backend.as_ref(), args).await,
                }
            }
        }
    };
}

mod delete;
mod edit_file;
mod execute;
mod glob;
mod grep;
mod lines;
mod ls;
mod read_file;
mod write_file;

pub use delete::{Delete, DeleteArgs};
pub use edit_file::{EditFile, EditFileArgs};
pub use execute::{Execute, ExecuteArgs};
pub use glob::{Glob, GlobArgs};
pub use grep::{Grep, GrepArgs};
pub(crate) use lc_agent::tool_args::AtLeast;
pub use lines::{
    DeleteLines, DeleteLinesArgs, InsertLines, InsertLinesArgs, ReplaceLines, ReplaceLinesArgs,
};
pub use ls::{Ls, LsArgs};

pub use read_file::{ReadFile, ReadFileArgs};
pub use write_file::{WriteFile, WriteFileArgs};

/// Lines listed by `ls`, `glob` and `grep` before the footer.
pub(crate) const MAX_LIST_LINES: usize = 1000;

/// Declares what comes from the list of the eight tools, written once
/// below: [`TOOL_NAMES`], [`all`] and [`run_tool`].
macro_rules! file_tools {
    ($($tool:ident),* $(,)?; $($line_tool:ident),* $(,)?) => {
        /// The eight tool names, in the order they are offered.
        pub const TOOL_NAMES: [&str; 8] = [$(<$tool as FileTool>::NAME),*];

        /// All eight tools over `backend`, in the order they are offered.
        ///
        /// ```
        /// use lc_agent::Tool;
        /// use lc_agent_filesystem::{all_tools, StateBackend, TOOL_NAMES};
        ///
        /// let all = all_tools(StateBackend::factory());
        /// let names: Vec<&str> = all.iter().map(|t| t.name()).collect();
        /// assert_eq!(names, TOOL_NAMES);
        /// ```
        pub fn all(backend: impl Into<BackendSource>) -> Vec<Arc<dyn Tool>> {
            let backend = backend.into();
            vec![$(Arc::new($tool::new(backend.clone())) as Arc<dyn Tool>),*]
        }

        /// The line tools' names (offered only when turned on, see
        /// [`line_tools`]).
        pub const LINE_TOOL_NAMES: [&str; 3] = [$(<$line_tool as FileTool>::NAME),*];

        /// The line tools over `backend` (`insert_lines`, `replace_lines`,
        /// `delete_lines`): offered only when turned on, as they cost
        /// prompt tokens ([`FilesystemModifier::line_tools`](crate::FilesystemModifier::line_tools)).
        pub fn line_tools(backend: impl Into<BackendSource>) -> Vec<Arc<dyn Tool>> {
            let backend = backend.into();
            vec![$(Arc::new($line_tool::new(backend.clone())) as Arc<dyn Tool>),*]
        }

        /// Runs one file tool (the eight, or a line tool) against a backend
        /// and returns what the model sees. `None` for any other name.
        ///
        /// ```
        /// use lc_agent::RunnableNetwork;
        /// use lc_agent_filesystem::{run_tool, StateBackend};
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
            $(
                if name == <$tool as FileTool>::NAME {
                    return Some(call::<$tool>(backend, args).await);
                }
            )*
            $(
                if name == <$line_tool as FileTool>::NAME {
                    return Some(call::<$line_tool>(backend, args).await);
                }
            )*
            None
        }
    };
}

// The eight file tools, in the order they are offered: the one list.
// The eight file tools, then the line tools (offered when turned on).
file_tools!(Ls, ReadFile, WriteFile, EditFile, Glob, Grep, Delete, Execute; InsertLines, ReplaceLines, DeleteLines);

/// The names of the file tools that are never evicted (all but `execute`).
pub(crate) const FILE_TOOL_NAMES: [&str; 7] = {
    let [ls, read_file, write_file, edit_file, glob, grep, delete, _execute] = TOOL_NAMES;
    [ls, read_file, write_file, edit_file, glob, grep, delete]
};

/// What each file tool defines: its name, what the model reads about it,
/// its typed arguments, and how one call runs on a backend.
pub trait FileTool {
    /// The function name the model calls.
    const NAME: &'static str;
    /// The description the model reads.
    const DESCRIPTION: &'static str;
    /// The arguments, borrowed from the model's JSON (read by
    /// [`lc_agent::tool_args`]).
    type Args<'a>: Deserialize<'a> + Send;

    /// The JSON schema of the arguments.
    fn parameters() -> Value;

    /// The file a call changes (its content is kept for rewinds first),
    /// `None` for tools that change nothing.
    fn changed_path<'a>(_args: &Self::Args<'a>) -> Option<&'a str> {
        None
    }

    /// Whether the call changes everything below
    /// [`changed_path`](Self::changed_path) (a folder), so every file there
    /// is kept for rewinds first.
    fn changes_tree(_args: &Self::Args<'_>) -> bool {
        false
    }

    /// Runs one call. `Err` is an error result the model reads.
    fn run<'a>(
        backend: &'a dyn Backend,
        args: Self::Args<'a>,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send + 'a;

    /// Runs one call that changes `file` (the normalised
    /// [`changed_path`](Self::changed_path)), also saying what the file
    /// held before (bytes kept when at most `keep`) and after, when the
    /// call succeeded. The default fingerprints the file around
    /// [`run`](Self::run); the writing tools ask the backend for both in
    /// the write itself.
    fn run_recorded<'a>(
        backend: &'a dyn Backend,
        args: Self::Args<'a>,
        file: &'a str,
        keep: usize,
    ) -> impl Future<Output = Result<(ToolOutput, Option<Change>), ToolError>> + Send + 'a
    where
        Self: Sized,
    {
        fingerprinted(backend, file, keep, Self::run(backend, args))
    }
}

/// `run` with the file fingerprinted before and after (when it succeeded).
async fn fingerprinted(
    backend: &dyn Backend,
    file: &str,
    keep: usize,
    run: impl Future<Output = Result<ToolOutput, ToolError>> + Send,
) -> Result<(ToolOutput, Option<Change>), ToolError> {
    let before = backend.fingerprint(file, keep).await;
    let out = run.await?;
    if out.status != lc_agent::ToolStatus::Ok {
        return Ok((out, None));
    }
    let after = backend.fingerprint(file, 0).await;
    Ok((out, Some((before, after))))
}

/// A file before and after a change (`None`: no file there).
pub type Change = (
    Option<crate::fingerprint::Fingerprint>,
    Option<crate::fingerprint::Fingerprint>,
);

/// Backend errors are results the model reads, with the spec's text.
impl From<FsError> for ToolError {
    fn from(e: FsError) -> Self {
        ToolError::Failed(e.to_string())
    }
}

/// Reads the arguments and runs `T`: always a result, errors included.
async fn call<T: FileTool>(backend: &dyn Backend, args: &Value) -> ToolOutput {
    let result = match tool_args::parse::<T::Args<'_>>(T::NAME, args) {
        Ok(args) => T::run(backend, args).await,
        Err(e) => Err(e),
    };
    result.unwrap_or_else(|e| ToolOutput::error(e.to_string()))
}

/// Whether the tool named `tool` is offered to a model whose file tools
/// run on `backend`: the one rule (the filesystem modifier's requests,
/// [`offered`], `DeepAgent::offered_tools` and the MCP server all ask it).
/// Every tool is offered except `execute` on a backend that cannot run
/// commands (it stays callable, and a call gets a clear error).
///
/// ```
/// use lc_agent::RunnableNetwork;
/// use lc_agent_filesystem::{is_offered, LocalShellBackend, StateBackend};
///
/// let files = StateBackend::new(RunnableNetwork::new());
/// assert!(is_offered("read_file", &files));
/// assert!(!is_offered("execute", &files));
/// let shell = LocalShellBackend::new(std::env::temp_dir()).unwrap();
/// assert!(is_offered("execute", &shell));
/// ```
pub fn is_offered(tool: &str, backend: &dyn Backend) -> bool {
    tool != Execute::NAME || backend.supports_execute()
}

/// The tools to offer a model over `backend` (resolved as `resolved`): the
/// eight tools as [`is_offered`] says (the seven that work on files, plus `execute`
/// when the backend can run commands).
pub fn offered(backend: impl Into<BackendSource>, resolved: &dyn Backend) -> Vec<Arc<dyn Tool>> {
    let mut tools = all(backend);
    tools.retain(|t| is_offered(t.name(), resolved));
    tools
}

/// At most this many paths a walk could not read are named, one note each
/// (then one note with how many more).
const MAX_UNREADABLE_NOTES: usize = 20;

/// The notes `ls`, `glob` and `grep` print first for the paths their walk
/// could not read (a directory ends with `/`): `Note: could not read
/// <path>; not <missed>.`, sorted by the printed path, at most
/// [`MAX_UNREADABLE_NOTES`], then `Note: could not read <n> more paths; not
/// <missed>.`
fn unreadable_notes(paths: &[String], missed: &str) -> Vec<String> {
    let mut shown: Vec<String> = paths
        .iter()
        .map(|p| crate::path::shown(p).into_owned())
        .collect();
    shown.sort_unstable();
    shown.dedup();
    let more = shown.len().saturating_sub(MAX_UNREADABLE_NOTES);
    shown.truncate(MAX_UNREADABLE_NOTES);
    let mut notes: Vec<String> = shown
        .into_iter()
        .map(|p| format!("Note: could not read {p}; not {missed}."))
        .collect();
    if more > 0 {
        notes.push(format!(
            "Note: could not read {more} more paths; not {missed}."
        ));
    }
    notes
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    // The file tools' arguments read by the core: the spec's wording.
    fn reason<'a, T: Deserialize<'a>>(tool: &str, args: &'a Value) -> String {
        match tool_args::parse::<T>(tool, args) {
            Ok(_) => "ok".to_string(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn the_first_mistake_in_declared_order_whatever_the_key_order() {
        let args = json!({"limit": 0, "offset": "x"});
        assert_eq!(
            reason::<ReadFileArgs>("read_file", &args),
            "Invalid arguments for read_file: missing required argument `file_path`"
        );
        let args = json!({"max_count": 0, "context": -1, "output_mode": "lines", "pattern": "x"});
        assert_eq!(
            reason::<GrepArgs>("grep", &args),
            "Invalid arguments for grep: `output_mode` must be one of \"files_with_matches\", \"content\", \"count\", got \"lines\""
        );
        let args = json!({"max_count": 0, "context": -1, "pattern": "x"});
        assert_eq!(
            reason::<GrepArgs>("grep", &args),
            "Invalid arguments for grep: `context` must be at least 0, got -1"
        );
    }

    #[test]
    fn types_nulls_and_numbers() {
        let cases = [
            ("ls", json!({"path": null, "recursive": null}), "ok"),
            (
                "ls",
                json!({"path": ["/"]}),
                "`path` must be a string, got [\"/\"]",
            ),
            (
                "ls",
                json!({"recursive": 1}),
                "`recursive` must be a boolean, got 1",
            ),
            ("execute", json!({"command": "x", "timeout": 2.0}), "ok"),
            (
                "execute",
                json!({"command": "x", "timeout": 2.5}),
                "`timeout` must be an integer, got 2.5",
            ),
            (
                "execute",
                json!({"command": "x", "timeout": u64::MAX}),
                "`timeout` must be an integer, got 18446744073709551615",
            ),
            (
                "execute",
                json!({"command": 5, "timeout": 0}),
                "`command` must be a string, got 5",
            ),
            (
                "execute",
                json!({"command": "x", "timeout": 0}),
                "`timeout` must be at least 1, got 0",
            ),
        ];
        for (tool, args, expected) in cases {
            let got = match tool {
                "ls" => reason::<LsArgs>(tool, &args),
                _ => reason::<ExecuteArgs>(tool, &args),
            };
            let prefix = format!("Invalid arguments for {tool}: ");
            assert_eq!(got.trim_start_matches(&prefix), expected, "{tool} {args}");
        }
    }

    #[test]
    fn the_arguments_must_be_an_object() {
        assert_eq!(reason::<LsArgs>("ls", &Value::Null), "ok");
        assert_eq!(
            reason::<LsArgs>("ls", &json!([1])),
            "Invalid arguments for ls: expected a JSON object, got [1]"
        );
    }
}

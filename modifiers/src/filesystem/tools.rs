//! The seven file tools: argument parsing, the schemas the model sees, and
//! the exact text of every result.

use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{Tool, ToolContext, ToolError, ToolOutput};
use serde_json::{json, Map, Value};

use super::backend::{
    Backend, BackendSource, ExecuteResponse, FileMatches, FsError, GrepMode, GrepQuery, LsEntry,
    ReadPage,
};
use super::glob::GlobPattern;
use super::grep::invalid_regex_note;
use super::path;

/// Lines listed by `ls`, `glob` and `grep` before the footer.
pub const MAX_LIST_LINES: usize = 1000;
/// Chars of one line `read_file` prints before cutting it.
pub const MAX_LINE_CHARS: usize = 2000;
/// Chars of `read_file` output before it stops at a whole line.
pub const MAX_READ_CHARS: usize = 50_000;
/// The longest `execute` timeout, in seconds.
pub const MAX_TIMEOUT_SECS: u64 = 3600;

/// The names of the file tools that are never evicted.
pub const FILE_TOOL_NAMES: [&str; 6] =
    ["ls", "read_file", "write_file", "edit_file", "glob", "grep"];

/// One of the seven tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// `ls`
    Ls,
    /// `read_file`
    ReadFile,
    /// `write_file`
    WriteFile,
    /// `edit_file`
    EditFile,
    /// `glob`
    Glob,
    /// `grep`
    Grep,
    /// `execute`
    Execute,
}

impl ToolKind {
    /// All seven, in the order they are offered.
    pub const ALL: [ToolKind; 7] = [
        ToolKind::Ls,
        ToolKind::ReadFile,
        ToolKind::WriteFile,
        ToolKind::EditFile,
        ToolKind::Glob,
        ToolKind::Grep,
        ToolKind::Execute,
    ];

    /// The tool by name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The function name.
    pub fn name(self) -> &'static str {
        match self {
            ToolKind::Ls => "ls",
            ToolKind::ReadFile => "read_file",
            ToolKind::WriteFile => "write_file",
            ToolKind::EditFile => "edit_file",
            ToolKind::Glob => "glob",
            ToolKind::Grep => "grep",
            ToolKind::Execute => "execute",
        }
    }

    /// The description the model reads.
    pub fn description(self) -> &'static str {
        match self {
            ToolKind::Ls => "List the files and directories directly under `path` (default \"/\"), one absolute path per line; directories end with `/`. Set `recursive` to true to list everything below `path`. At most 1000 lines are shown; list a subdirectory to see more.",
            ToolKind::ReadFile => "Read a text file. Lines are numbered like `cat -n`. `offset` is the 0-based index of the first line to show (default 0) and `limit` the number of lines (default 500); a footer tells you which offset to use to read more. Always read a file before editing it.",
            ToolKind::WriteFile => "Create a file with `content` (missing parent directories are created). Fails if the file exists, unless `overwrite` is true (default false); to change part of an existing file use edit_file.",
            ToolKind::EditFile => "Replace the exact text `old_string` by `new_string` in a file. `old_string` must occur exactly once unless `replace_all` is true (default false); include surrounding lines to make it unique. Line endings of CRLF files are kept.",
            ToolKind::Glob => "Find files by a glob pattern (`*`, `?`, `[...]`, `{a,b}`, `**`), searched under `path` (default \"/\"). A pattern without `/` matches file names at any depth (`*.rs`); a pattern with `/` matches the path relative to `path`. Returns matching file paths, sorted.",
            ToolKind::Grep => "Search file contents for a regular expression (Rust regex syntax) under `path` (default \"/\"; may be one file). `glob` filters the files searched. `output_mode`: \"files_with_matches\" (default: the paths), \"content\" (`path:line:text`, with `context` lines around each match, default 0) or \"count\" (`path: n`). `case_insensitive` and `fixed_strings` (literal search) default to false. Stops after `max_count` matching lines (default 1000).",
            ToolKind::Execute => "Run a shell command (`sh -c`) in the workspace directory and return its output (stdout and stderr) and exit code. `timeout` is in seconds (default 120, at most 3600); on timeout the command and its children are killed.",
        }
    }

    /// The JSON schema of the arguments.
    pub fn parameters(self) -> Value {
        match self {
            ToolKind::Ls => json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Absolute directory path, e.g. \"/src\". Default \"/\"."},
                    "recursive": {"type": "boolean", "description": "List all descendants. Default false."}
                }
            }),
            ToolKind::ReadFile => json!({
                "type": "object",
                "properties": {
                    "file_path": {"type": "string", "description": "Absolute path of the file, e.g. \"/src/main.rs\"."},
                    "offset": {"type": "integer", "minimum": 0, "description": "0-based index of the first line to read. Default 0."},
                    "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to read. Default 500."}
                },
                "required": ["file_path"]
            }),
            ToolKind::WriteFile => json!({
                "type": "object",
                "properties": {
                    "file_path": {"type": "string", "description": "Absolute path of the file to create."},
                    "content": {"type": "string", "description": "The full file content."},
                    "overwrite": {"type": "boolean", "description": "Replace the file if it exists. Default false."}
                },
                "required": ["file_path", "content"]
            }),
            ToolKind::EditFile => json!({
                "type": "object",
                "properties": {
                    "file_path": {"type": "string", "description": "Absolute path of the file to edit."},
                    "old_string": {"type": "string", "description": "The exact text to replace (not empty)."},
                    "new_string": {"type": "string", "description": "The replacement text."},
                    "replace_all": {"type": "boolean", "description": "Replace every occurrence. Default false."}
                },
                "required": ["file_path", "old_string", "new_string"]
            }),
            ToolKind::Glob => json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Glob pattern, e.g. \"*.rs\" or \"src/**/*.py\"."},
                    "path": {"type": "string", "description": "Directory to search in. Default \"/\"."}
                },
                "required": ["pattern"]
            }),
            ToolKind::Grep => json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regular expression (Rust regex syntax), or literal text with fixed_strings."},
                    "path": {"type": "string", "description": "Directory or file to search. Default \"/\"."},
                    "glob": {"type": "string", "description": "Only search files matching this glob, e.g. \"*.rs\"."},
                    "output_mode": {"type": "string", "enum": ["files_with_matches", "content", "count"], "description": "Default \"files_with_matches\"."},
                    "case_insensitive": {"type": "boolean", "description": "Default false."},
                    "fixed_strings": {"type": "boolean", "description": "Treat the pattern as literal text. Default false."},
                    "context": {"type": "integer", "minimum": 0, "description": "Lines of context around matches in content mode. Default 0."},
                    "max_count": {"type": "integer", "minimum": 1, "description": "Stop after this many matching lines. Default 1000."}
                },
                "required": ["pattern"]
            }),
            ToolKind::Execute => json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The shell command to run."},
                    "timeout": {"type": "integer", "minimum": 1, "maximum": 3600, "description": "Seconds before the command is killed. Default 120."}
                },
                "required": ["command"]
            }),
        }
    }
}

/// A missing or wrongly typed argument: `Invalid arguments for <tool>: <reason>`.
#[derive(Debug)]
struct ArgError(String);

/// Typed access to a tool's arguments, with the spec's error messages.
struct Args<'a> {
    tool: &'static str,
    map: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    fn invalid(&self, reason: String) -> ArgError {
        ArgError(format!("Invalid arguments for {}: {reason}", self.tool))
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn string(&self, key: &str) -> Result<&'a str, ArgError> {
        match self.get(key) {
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(self.invalid(format!("`{key}` must be a string, got {other}"))),
            None => Err(self.invalid(format!("missing required argument `{key}`"))),
        }
    }

    fn opt_string(&self, key: &str) -> Result<Option<&'a str>, ArgError> {
        match self.get(key) {
            None => Ok(None),
            Some(_) => self.string(key).map(Some),
        }
    }

    fn boolean(&self, key: &str, default: bool) -> Result<bool, ArgError> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(self.invalid(format!("`{key}` must be a boolean, got {other}"))),
        }
    }

    fn integer(&self, key: &str, default: i64) -> Result<i64, ArgError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v
                .as_i64()
                .or_else(|| {
                    v.as_f64()
                        .filter(|f| f.fract() == 0.0 && f.abs() < 9e15)
                        .map(|f| f as i64)
                })
                .ok_or_else(|| self.invalid(format!("`{key}` must be an integer, got {v}"))),
        }
    }

    fn at_least(&self, key: &str, default: i64, min: i64) -> Result<usize, ArgError> {
        let n = self.integer(key, default)?;
        if n < min {
            return Err(self.invalid(format!("`{key}` must be at least {min}, got {n}")));
        }
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }
}

fn fs_err(e: FsError) -> ToolOutput {
    ToolOutput::error(e.to_string())
}

macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return Ok(fs_err(e)),
        }
    };
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
    let kind = ToolKind::from_name(name)?;
    let empty = Map::new();
    let map = match args {
        Value::Object(map) => map,
        Value::Null => &empty,
        other => {
            return Some(ToolOutput::error(format!(
                "Invalid arguments for {name}: expected a JSON object, got {other}"
            )))
        }
    };
    let args = Args {
        tool: kind.name(),
        map,
    };
    let result = match kind {
        ToolKind::Ls => ls(backend, &args).await,
        ToolKind::ReadFile => read_file(backend, &args).await,
        ToolKind::WriteFile => write_file(backend, &args).await,
        ToolKind::EditFile => edit_file(backend, &args).await,
        ToolKind::Glob => glob(backend, &args).await,
        ToolKind::Grep => grep(backend, &args).await,
        ToolKind::Execute => execute(backend, &args).await,
    };
    Some(result.unwrap_or_else(|e| ToolOutput::error(e.0)))
}

type ToolResult = Result<ToolOutput, ArgError>;

async fn ls(backend: &dyn Backend, args: &Args<'_>) -> ToolResult {
    let given = args.opt_string("path")?.unwrap_or("/");
    let recursive = args.boolean("recursive", false)?;
    let dir = tri!(path::normalize(given));
    let entries = tri!(backend.ls(&dir, recursive).await);
    Ok(ToolOutput::ok(format_ls(entries)))
}

/// Formats `ls` entries: sorted printed lines, capped.
pub fn format_ls(entries: Vec<LsEntry>) -> String {
    let mut lines: Vec<String> = entries.iter().map(LsEntry::line).collect();
    if lines.is_empty() {
        return "(empty directory)".to_string();
    }
    lines.sort_unstable();
    lines.dedup();
    cap_lines(lines, |n| {
        format!("... ({n} more entries; list a subdirectory)")
    })
}

fn cap_lines(mut lines: Vec<String>, footer: impl Fn(usize) -> String) -> String {
    if lines.len() > MAX_LIST_LINES {
        let more = lines.len() - MAX_LIST_LINES;
        lines.truncate(MAX_LIST_LINES);
        lines.push(footer(more));
    }
    lines.join("\n")
}

async fn read_file(backend: &dyn Backend, args: &Args<'_>) -> ToolResult {
    let given = args.string("file_path")?;
    let offset = args.at_least("offset", 0, 0)?;
    let limit = args.at_least("limit", 500, 1)?;
    let file = tri!(path::normalize(given));
    let page = tri!(backend.read(&file, offset, limit).await);
    Ok(match format_read(&page) {
        Ok(text) => ToolOutput::ok(text),
        Err(e) => fs_err(e),
    })
}

/// Formats a read window (`cat -n` lines, truncation, paging footer).
pub fn format_read(page: &ReadPage) -> Result<String, FsError> {
    if page.blank {
        return Ok("System reminder: File exists but has empty contents".to_string());
    }
    if page.offset >= page.total {
        return Err(FsError::OffsetPastEnd {
            offset: page.offset,
            total: page.total,
        });
    }
    let mut out = String::new();
    let mut chars = 0usize;
    let mut shown = 0usize;
    for (i, line) in page.lines.iter().enumerate() {
        let n = page.offset + i + 1;
        let formatted = match line.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => {
                let more = line[cut..].chars().count();
                format!(
                    "{n:>6}\t{} ... [line truncated, {more} more chars]",
                    &line[..cut]
                )
            }
            None => format!("{n:>6}\t{line}"),
        };
        let added = formatted.chars().count() + usize::from(shown > 0);
        if chars + added > MAX_READ_CHARS && shown > 0 {
            let (a, b) = (page.offset + 1, page.offset + shown);
            out.push_str(&format!(
                "\n[Output truncated at 50,000 chars. Showing lines {a}-{b} of {}. Use offset={b} to read more.]",
                page.total
            ));
            return Ok(out);
        }
        if shown > 0 {
            out.push('\n');
        }
        out.push_str(&formatted);
        chars += added;
        shown += 1;
    }
    let last = page.offset + shown;
    if last < page.total {
        out.push_str(&format!(
            "\n[Showing lines {}-{last} of {}. Use offset={last} to read more.]",
            page.offset + 1,
            page.total
        ));
    }
    Ok(out)
}

async fn write_file(backend: &dyn Backend, args: &Args<'_>) -> ToolResult {
    let given = args.string("file_path")?;
    let content = args.string("content")?;
    let overwrite = args.boolean("overwrite", false)?;
    let file = tri!(path::normalize(given));
    tri!(backend.write(&file, content, overwrite).await);
    Ok(ToolOutput::ok(format!("Successfully wrote to {file}")))
}

async fn edit_file(backend: &dyn Backend, args: &Args<'_>) -> ToolResult {
    let given = args.string("file_path")?;
    let old = args.string("old_string")?;
    let new = args.string("new_string")?;
    let replace_all = args.boolean("replace_all", false)?;
    if old.is_empty() {
        return Ok(fs_err(FsError::EmptyOldString));
    }
    if old == new {
        return Ok(fs_err(FsError::IdenticalStrings));
    }
    let file = tri!(path::normalize(given));
    let n = tri!(backend.edit(&file, old, new, replace_all).await);
    Ok(ToolOutput::ok(format!(
        "Successfully replaced {n} occurrence(s) in {file}"
    )))
}

async fn glob(backend: &dyn Backend, args: &Args<'_>) -> ToolResult {
    let pattern = args.string("pattern")?;
    let given = args.opt_string("path")?.unwrap_or("/");
    let dir = tri!(path::normalize(given));
    tri!(GlobPattern::new(pattern));
    let mut files = tri!(backend.glob(pattern, &dir).await);
    if files.is_empty() {
        return Ok(ToolOutput::ok("No files found"));
    }
    files.sort_unstable();
    files.dedup();
    Ok(ToolOutput::ok(cap_lines(files, |n| {
        format!("... ({n} more matches; narrow the pattern)")
    })))
}

async fn grep(backend: &dyn Backend, args: &Args<'_>) -> ToolResult {
    let pattern = args.string("pattern")?;
    let given = args.opt_string("path")?.unwrap_or("/");
    let glob = args.opt_string("glob")?;
    let mode = match args.opt_string("output_mode")?.unwrap_or("files_with_matches") {
        "files_with_matches" => GrepMode::FilesWithMatches,
        "content" => GrepMode::Content,
        "count" => GrepMode::Count,
        other => {
            return Err(args.invalid(format!(
                "`output_mode` must be one of \"files_with_matches\", \"content\", \"count\", got \"{other}\""
            )))
        }
    };
    let case_insensitive = args.boolean("case_insensitive", false)?;
    let fixed_strings = args.boolean("fixed_strings", false)?;
    let context = args.at_least("context", 0, 0)?;
    let max_count = args.at_least("max_count", 1000, 1)?;
    let target = tri!(path::normalize(given));
    if let Some(g) = glob {
        tri!(GlobPattern::new(g));
    }
    let note = if fixed_strings {
        None
    } else {
        invalid_regex_note(pattern)
    };
    let query = GrepQuery {
        pattern: pattern.to_string(),
        fixed_strings: fixed_strings || note.is_some(),
        case_insensitive,
        glob: glob.map(str::to_string),
        context,
        max_count,
        mode,
    };
    let results = tri!(backend.grep(&query, &target).await);
    let body = format_grep(results, &query);
    Ok(ToolOutput::ok(match note {
        Some(note) => format!("{note}\n{body}"),
        None => body,
    }))
}

/// Formats grep results by the spec: sorted by path, `max_count` matching
/// lines in total taken in (path, line) order.
pub fn format_grep(mut results: Vec<FileMatches>, query: &GrepQuery) -> String {
    results.sort_by(|a, b| a.path.cmp(&b.path));
    let context = if query.mode == GrepMode::Content {
        query.context
    } else {
        0
    };
    let mut remaining = query.max_count;
    let mut stopped = false;
    let mut out: Vec<String> = Vec::new();
    let mut any = false;
    for file in results {
        let matches = file.lines.iter().filter(|l| l.is_match).count();
        if matches == 0 {
            continue;
        }
        if remaining == 0 {
            stopped = true;
            break;
        }
        let take = matches.min(remaining);
        if matches > take {
            stopped = true;
        }
        remaining -= take;
        any = true;
        match query.mode {
            GrepMode::FilesWithMatches => out.push(file.path.clone()),
            GrepMode::Count => out.push(format!("{}: {take}", file.path)),
            GrepMode::Content => {
                let mut seen = 0;
                let mut last_match = 0;
                let mut kept = Vec::new();
                for line in &file.lines {
                    if line.is_match {
                        if seen == take {
                            break;
                        }
                        seen += 1;
                        last_match = line.number;
                    }
                    kept.push(line);
                }
                kept.retain(|l| l.number <= last_match + context as u64);
                let mut previous: Option<u64> = None;
                for line in kept {
                    let separated = previous.map_or(!out.is_empty(), |p| line.number > p + 1);
                    if context > 0 && separated {
                        out.push("--".to_string());
                    }
                    let sep = if line.is_match { ':' } else { '-' };
                    out.push(format!(
                        "{}{sep}{}{sep}{}",
                        file.path, line.number, line.text
                    ));
                    previous = Some(line.number);
                }
            }
        }
        if stopped {
            break;
        }
    }
    if !any {
        return "No matches found".to_string();
    }
    if stopped {
        out.push(format!(
            "... (stopped after {} matches; narrow the search)",
            query.max_count
        ));
    }
    out.join("\n")
}

async fn execute(backend: &dyn Backend, args: &Args<'_>) -> ToolResult {
    let command = args.string("command")?;
    let timeout = args.at_least("timeout", 120, 1)? as u64;
    if timeout > MAX_TIMEOUT_SECS {
        return Err(args.invalid(format!(
            "`timeout` must be at most {MAX_TIMEOUT_SECS} seconds, got {timeout}"
        )));
    }
    if !backend.supports_execute() {
        return Ok(fs_err(FsError::NoSandbox));
    }
    let response = tri!(backend.execute(command, timeout).await);
    Ok(format_execute(&response, timeout))
}

/// Formats an `execute` result.
pub fn format_execute(response: &ExecuteResponse, timeout: u64) -> ToolOutput {
    let mut output = response.output.clone();
    if let Some(total) = response.truncated_bytes {
        if !output.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        output.push_str(&format!("[Output truncated: {total} bytes]"));
    }
    if response.timed_out {
        let mut text = format!("Error: Command timed out after {timeout} s");
        if !output.is_empty() {
            text.push('\n');
            text.push_str(&output);
        }
        return ToolOutput::error(text);
    }
    if !output.is_empty() && !output.ends_with('\n') {
        output.push('\n');
    }
    output.push_str(&format!("Exit code: {}", response.exit_code.unwrap_or(-1)));
    ToolOutput::ok(output)
}

/// A file tool bound to a backend (given directly or as a factory).
pub struct FileTool {
    kind: ToolKind,
    backend: BackendSource,
}

impl FileTool {
    /// The tool `kind` over `backend`.
    pub fn new(kind: ToolKind, backend: impl Into<BackendSource>) -> Self {
        Self {
            kind,
            backend: backend.into(),
        }
    }

    /// All tools for a backend: the six file tools, plus `execute` when the
    /// backend can run commands.
    pub fn all(backend: &BackendSource, resolved: &Arc<dyn Backend>) -> Vec<Arc<dyn Tool>> {
        ToolKind::ALL
            .into_iter()
            .filter(|k| *k != ToolKind::Execute || resolved.supports_execute())
            .map(|k| Arc::new(FileTool::new(k, backend.clone())) as Arc<dyn Tool>)
            .collect()
    }
}

#[async_trait]
impl Tool for FileTool {
    fn name(&self) -> &str {
        self.kind.name()
    }

    fn description(&self) -> &str {
        self.kind.description()
    }

    fn parameters(&self) -> Value {
        self.kind.parameters()
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let backend = self.backend.resolve(&ctx.network);
        Ok(run_tool(backend.as_ref(), self.kind.name(), &args)
            .await
            .unwrap_or_else(|| ToolOutput::error(format!("Unknown tool `{}`", self.kind.name()))))
    }
}

//! [`Grep`]: lines of files that match a regular expression.
//!
//! ```text
//!  GrepArgs -> path, GlobPattern (once), invalid regex? -> Note + literal search
//!    -> GrepQuery -> Backend::grep -> format_grep: (path, line) order,
//!       max_count matching lines in all, files | content (+ context) | count
//! ```

use lc_agent::{ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{unreadable_notes, AtLeast, FileTool};
use crate::backend::{Backend, FileMatches, GrepMode, GrepQuery};
use crate::glob::GlobPattern;
use crate::grep::{invalid_regex_note, GREP_LINE_LIMIT};
use crate::{atomic, path};

/// Matching lines reported when the call gives no `max_count`.
const DEFAULT_MAX_COUNT: usize = 1000;

file_tool! {
    /// The `grep` tool: the lines of files that match a regular expression.
    Grep
}

/// The arguments of `grep`.
#[derive(Debug, Clone, Deserialize)]
pub struct GrepArgs<'a> {
    /// A regular expression (Rust `regex` syntax), or text with `fixed_strings`.
    pub pattern: &'a str,
    /// The directory or file searched (default `/`).
    #[serde(borrow)]
    pub path: Option<&'a str>,
    /// Only files matching this glob (see [`GlobPattern::new`]).
    #[serde(borrow)]
    pub glob: Option<&'a str>,
    /// What to report (default `files_with_matches`).
    pub output_mode: Option<GrepMode>,
    /// Ignore case (default false).
    pub case_insensitive: Option<bool>,
    /// Search `pattern` as literal text (default false).
    pub fixed_strings: Option<bool>,
    /// Context lines around matches in `content` mode (default 0).
    pub context: Option<AtLeast<0>>,
    /// Matching lines reported in all (default 1000).
    pub max_count: Option<AtLeast<1>>,
}

impl FileTool for Grep {
    const NAME: &'static str = "grep";
    const DESCRIPTION: &'static str = "Search file contents for a regular expression (Rust regex syntax) under `path` (default \"/\"; may be one file). `glob` filters the files searched. `output_mode`: \"files_with_matches\" (default: the paths), \"content\" (`path:line:text`, with `context` lines around each match, default 0) or \"count\" (`path: n`). `case_insensitive` and `fixed_strings` (literal search) default to false. Stops after `max_count` matching lines (default 1000; in files_with_matches, after `max_count` files).";
    type Args<'a> = GrepArgs<'a>;

    fn parameters() -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression (Rust regex syntax), or literal text with fixed_strings."},
                "path": {"type": "string", "description": "Directory or file to search. Default \"/\"."},
                "glob": {"type": "string", "description": "Only search files matching this glob, e.g. \"*.rs\"."},
                "output_mode": {"type": "string", "enum": ["files_with_matches", "content", "count"], "description": "Default \"files_with_matches\"."},
                "case_insensitive": {"type": "boolean", "description": "Default false."},
                "fixed_strings": {"type": "boolean", "description": "Treat the pattern as literal text. Default false."},
                "context": {"type": "integer", "minimum": 0, "description": "Lines of context around matches in content mode. Default 0."},
                "max_count": {"type": "integer", "minimum": 1, "description": "Stop after this many matching lines (files in files_with_matches mode). Default 1000."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    async fn run(backend: &dyn Backend, args: GrepArgs<'_>) -> Result<ToolOutput, ToolError> {
        let target = path::normalize(args.path.unwrap_or("/"))?;
        let glob = args.glob.map(GlobPattern::new).transpose()?;
        let fixed_strings = args.fixed_strings.unwrap_or(false);
        let note = if fixed_strings {
            None
        } else {
            invalid_regex_note(args.pattern)
        };
        let query = GrepQuery {
            pattern: args.pattern.to_string(),
            fixed_strings: fixed_strings || note.is_some(),
            case_insensitive: args.case_insensitive.unwrap_or(false),
            glob,
            context: args.context.map_or(0, AtLeast::get),
            max_count: args.max_count.map_or(DEFAULT_MAX_COUNT, AtLeast::get),
            mode: args.output_mode.unwrap_or_default(),
        };
        let mut results = backend.grep(&query, &target).await?;
        results.retain(|f| !atomic::is_temp_path(&f.path));
        // Files that were not searched get a note instead of lines.
        let (skipped, results): (Vec<FileMatches>, Vec<FileMatches>) = results
            .into_iter()
            .partition(|f| f.unreadable || f.line_too_long);
        let (body, stopped_at) = format_grep(results, &query);
        // Once `max_count` stops the search, files after the last one
        // printed were not searched on any backend (the disk backend
        // stops walking there): only those before it are named.
        let skipped: Vec<FileMatches> = skipped
            .into_iter()
            .filter(|f| {
                stopped_at
                    .as_deref()
                    .is_none_or(|last| &*path::shown(&f.path) < last)
            })
            .collect();
        let mut notes: Vec<String> = note.into_iter().collect();
        let unreadable: Vec<String> = skipped
            .iter()
            .filter(|f| f.unreadable)
            .map(|f| f.path.clone())
            .collect();
        notes.extend(unreadable_notes(&unreadable, "searched"));
        let mut too_long: Vec<String> = skipped
            .iter()
            .filter(|f| !f.unreadable)
            .map(|f| path::shown(&f.path).into_owned())
            .collect();
        too_long.sort_unstable();
        notes.extend(too_long.into_iter().map(|p| {
            format!(
                "Note: {p} was not searched: it has a line longer than {} MiB.",
                GREP_LINE_LIMIT >> 20
            )
        }));
        notes.push(body);
        Ok(ToolOutput::ok(notes.join("\n")))
    }
}

/// Formats grep results by the spec: sorted by path, `max_count` matching
/// lines in total taken in (path, line) order. With the text, the path (as
/// shown) of the last file printed when `max_count` stopped the answer.
pub(crate) fn format_grep(
    mut results: Vec<FileMatches>,
    query: &GrepQuery,
) -> (String, Option<String>) {
    // Sorted (and printed) by the path as shown: control characters escaped.
    for file in &mut results {
        if let std::borrow::Cow::Owned(p) = path::shown(&file.path) {
            file.path = p;
        }
    }
    results.sort_by(|a, b| a.path.cmp(&b.path));
    let context = if query.mode == GrepMode::Content {
        query.context
    } else {
        0
    };
    let mut remaining = query.max_count;
    let mut stopped = false;
    let mut out: Vec<String> = Vec::new();
    let mut last: Option<String> = None;
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
        last = Some(file.path);
        if stopped {
            break;
        }
    }
    if last.is_none() {
        return ("No matches found".to_string(), None);
    }
    if stopped {
        out.push(format!(
            "... (stopped after {} matches; narrow the search)",
            query.max_count
        ));
    }
    (out.join("\n"), last.filter(|_| stopped))
}

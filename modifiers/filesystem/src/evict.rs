//! Tool-result eviction: huge tool results are written to
//! `/large_tool_results/<id>` and replaced by a preview.

use sha2::{Digest, Sha256};

/// Where evicted results go.
pub(crate) const EVICTION_DIR: &str = "/large_tool_results";

/// Default `tool_token_limit_before_evict` (tokens; 4 chars per token).
pub(crate) const DEFAULT_TOKEN_LIMIT: usize = 20_000;

/// The file name for a tool call id: chars outside `[A-Za-z0-9_-]` become
/// `_`; ids over 100 chars become `call-` + the SHA-256 hex of the id.
///
/// ```
/// use lc_agent_filesystem::evict::file_name_for;
///
/// assert_eq!(file_name_for("call_1/../x"), "call_1____x");
/// assert!(file_name_for(&"a".repeat(101)).starts_with("call-"));
/// ```
pub fn file_name_for(tool_call_id: &str) -> String {
    if tool_call_id.chars().count() > 100 {
        let digest = Sha256::digest(tool_call_id.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        return format!("call-{hex}");
    }
    tool_call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The virtual path an evicted result is saved to.
pub(crate) fn eviction_path(tool_call_id: &str) -> String {
    format!("{EVICTION_DIR}/{}", file_name_for(tool_call_id))
}

fn cut(line: &str, chars: usize) -> &str {
    match line.char_indices().nth(chars) {
        Some((i, _)) => &line[..i],
        None => line,
    }
}

/// The message the model sees instead of an evicted result.
pub(crate) fn preview(content: &str, saved_to: &str) -> String {
    let chars = content.chars().count();
    let lines: Vec<&str> = content.lines().collect();
    let head: Vec<&str> = lines.iter().take(10).map(|l| cut(l, 500)).collect();
    let tail: Vec<&str> = lines
        .iter()
        .skip(lines.len().saturating_sub(5))
        .map(|l| cut(l, 500))
        .collect();
    format!(
        "Tool result too large ({chars} chars, ~{} tokens). Saved to {saved_to}.\n\nFirst 10 lines:\n{}\n...\nLast 5 lines:\n{}\n\n[Use read_file('{saved_to}', offset=0, limit=100) to view more]",
        chars / 4,
        head.join("\n"),
        tail.join("\n"),
    )
}

//! The system-prompt section the modifier adds to chat requests.

/// The section, naming the tools that are offered.
pub(crate) fn system_section(with_execute: bool) -> String {
    let tools = if with_execute {
        "ls, read_file, write_file, edit_file, glob, grep, delete, execute"
    } else {
        "ls, read_file, write_file, edit_file, glob, grep, delete"
    };
    let mut text = format!(
        "## Filesystem\n\nYou have file tools: {tools}.\n\
         - Paths are absolute and start with `/` (for example `/src/main.rs`).\n\
         - read_file pages through long files: use `offset` (0-based first line) and `limit` (number of lines).\n\
         - Read a file before you edit it; edit_file replaces exact text.\n\
         - Tool results that are too large are saved to `/large_tool_results/`; page through them with read_file."
    );
    if with_execute {
        text.push_str("\n- execute runs a shell command in the workspace directory.");
    }
    text
}

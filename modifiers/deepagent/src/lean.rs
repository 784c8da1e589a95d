//! The lean prompt, for a model whose context window is small (under
//! [`LEAN_BELOW`] tokens; llama-cpp-python's default is 2,048): the full
//! agent's instructions and tool descriptions alone would fill most of it.
//!
//! ```text
//!  DeepAgentBuilder::context_window(Some(2048))   (what the model's server said)
//!     ├─ build():  a short base prompt (LEAN_BASE_PROMPT)
//!     └─ attach(): LeanPrompt, which rewrites every chat request, after
//!                  the modifiers that add tools and sections, before the
//!                  summaries' fit check (priority 50):
//!                    - glob, delete, write_todos, task: not offered
//!                    - the file tools: one-line descriptions, parameters
//!                      without descriptions
//!                    - the Filesystem, Planning and Sub-agents sections:
//!                      one short section instead
//!                    - everything else (skills, memory, MCP tools, the
//!                      user's instructions) untouched
//! ```
//!
//! [`DeepAgentBuilder::lean_notice`](crate::DeepAgentBuilder::lean_notice)
//! says it in one line, for a program to show once.

use async_trait::async_trait;
use lc_agent::{ChatRequest, NetworkModifier, NodeRef, Result, RunnableNetwork};
use serde_json::Value;

/// A model with a window smaller than this many tokens gets the lean
/// prompt.
pub const LEAN_BELOW: usize = 8192;

/// The base prompt of a lean agent.
pub(crate) const LEAN_BASE_PROMPT: &str =
    "You are a helpful agent. Use the tools to look at and change files; answer briefly.";

/// The one section that replaces the tool families' sections.
const LEAN_SECTION: &str = "Paths start with `/`. Read a file before you edit it.";

/// The tools a lean request leaves out.
pub(crate) const LEFT_OUT: [&str; 4] = ["glob", "delete", "write_todos", "task"];

/// The headings of the sections a lean request replaces.
const REPLACED: [&str; 3] = [
    "## Filesystem",
    "## Planning with `write_todos`",
    "## Sub-agents with `task`",
];

/// The one-line description of a built-in tool.
fn short_description(tool: &str) -> Option<&'static str> {
    Some(match tool {
        "ls" => "List a directory.",
        "read_file" => "Read a file (offset, limit: lines).",
        "write_file" => "Create a file.",
        "edit_file" => "Replace exact text in a file.",
        "grep" => "Search files for a pattern.",
        "execute" => "Run a shell command.",
        "insert_lines" => "Insert lines before a line (1-based).",
        "replace_lines" => "Replace a range of lines (1-based).",
        "delete_lines" => "Delete a range of lines (1-based).",
        _ => return None,
    })
}

/// The id of [`LeanPrompt`].
pub(crate) const LEAN_ID: &str = "lean_prompt";

/// Rewrites chat requests for a small window (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LeanPrompt;

/// `schema` without the `description` of its properties.
fn strip_descriptions(schema: &mut Value) {
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        for property in properties.values_mut() {
            if let Some(fields) = property.as_object_mut() {
                fields.remove("description");
            }
        }
    }
}

/// `request`, lean (see the module docs).
pub(crate) fn make_lean(request: &mut ChatRequest) {
    request
        .tools
        .retain(|t| !LEFT_OUT.contains(&t.name.as_str()));
    for tool in request.tools.to_mut() {
        if let Some(text) = short_description(&tool.name) {
            tool.description = text.to_string();
            strip_descriptions(&mut tool.parameters);
        }
    }
    let before = request.system.len();
    request
        .system
        .retain(|s| !REPLACED.iter().any(|heading| s.starts_with(heading)));
    if request.system.len() < before {
        request.system.insert(0, LEAN_SECTION.to_string());
    }
}

#[async_trait]
impl NetworkModifier for LeanPrompt {
    fn id(&self) -> &str {
        LEAN_ID
    }

    /// After the modifiers that add tools and sections (0-10), before the
    /// summaries' fit check (100).
    fn priority(&self) -> i32 {
        50
    }

    async fn on_chat_request(
        &self,
        _network: &RunnableNetwork,
        _node: &NodeRef,
        request: &mut ChatRequest,
    ) -> Result<()> {
        make_lean(request);
        Ok(())
    }
}

/// The line a program shows once for a lean agent whose model reads
/// `window` tokens.
pub(crate) fn notice(window: usize) -> String {
    format!(
        "the model's context window is {window} tokens (under {LEAN_BELOW}), so the agent runs \
         lean: short instructions and tool descriptions, and no {}. For the full set, give the \
         model a window of {LEAN_BELOW} tokens or more (llama-cpp-python: --n_ctx {LEAN_BELOW}; \
         llama.cpp: -c {LEAN_BELOW}; Ollama: num_ctx) and, if its server does not report it, \
         --context-window {LEAN_BELOW}",
        LEFT_OUT.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use lc_agent::ToolSpec;
    use serde_json::json;

    #[test]
    fn a_lean_request_keeps_the_file_tools_short_and_drops_the_extras() {
        let tool = |name: &str| ToolSpec {
            name: name.to_string(),
            description: "A long description. ".repeat(20),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string", "description": "Long."}}}),
        };
        let mut request = ChatRequest {
            tools: ["ls", "read_file", "glob", "write_todos", "task", "mcp_time"]
                .map(tool)
                .into_iter()
                .collect(),
            system: vec![
                "## Filesystem\n\nlong".to_string(),
                "## Planning with `write_todos`\n\nlong".to_string(),
                "## Skills\n\nkept".to_string(),
            ],
            ..ChatRequest::default()
        };
        make_lean(&mut request);
        let names: Vec<_> = request.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["ls", "read_file", "mcp_time"]);
        assert_eq!(request.tools[0].description, "List a directory.");
        assert_eq!(
            request.tools[0].parameters,
            json!({"type": "object", "properties": {"path": {"type": "string"}}})
        );
        assert!(
            request.tools[2].description.starts_with("A long"),
            "not ours: kept"
        );
        assert_eq!(request.system, [LEAN_SECTION, "## Skills\n\nkept"]);
    }
}

//! What the model reads of an MCP tool result: text parts as they are,
//! every other part described in a line, never dropped.
//!
//! ```text
//!  CallToolResult { content: [text, image, resource, ...], structuredContent, isError }
//!        │ text            ─▶ the text
//!        │ image / audio   ─▶ [image: image/png, 1.2 KiB]
//!        │ resource        ─▶ [resource file:///a.txt (text/plain)] + its text
//!        │ resource_link   ─▶ [resource link: name <uri> (mime)]
//!        └ no content, structuredContent ─▶ the structured JSON
//!  isError ─▶ ToolOutput::error ("Error: ...")
//! ```

use lc_agent::ToolOutput;
use serde_json::Value;

/// Turns a `tools/call` result (its JSON) into the tool result the model
/// reads.
///
/// ```
/// use lc_agent_deepagent::mcp::describe_result;
/// use serde_json::json;
///
/// let out = describe_result(&json!({"content": [
///     {"type": "text", "text": "A tiny image:"},
///     {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}]}));
/// assert_eq!(out.content, "A tiny image:\n[image: image/png, 5 bytes]");
/// let err = describe_result(&json!({"content": [{"type": "text", "text": "no"}], "isError": true}));
/// assert_eq!(err.content, "Error: no");
/// ```
pub fn describe_result(result: &Value) -> ToolOutput {
    let parts: Vec<String> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| blocks.iter().map(describe_block).collect())
        .unwrap_or_default();
    let mut text = parts.join("\n");
    if text.is_empty()
        && let Some(structured) = result.get("structuredContent")
    {
        text = structured.to_string();
    }
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        if text.is_empty() {
            text = "the tool failed without a message".to_string();
        }
        ToolOutput::error(text)
    } else {
        ToolOutput::ok(text)
    }
}

/// One content part as text.
fn describe_block(block: &Value) -> String {
    let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let kind = str_of(block, "type").unwrap_or_default();
    match kind.as_str() {
        "text" => str_of(block, "text").unwrap_or_default(),
        "image" | "audio" => {
            let mime = str_of(block, "mimeType").unwrap_or_else(|| "unknown type".into());
            let size = str_of(block, "data").map(|d| base64_len(&d)).unwrap_or(0);
            format!("[{kind}: {mime}, {}]", human_size(size))
        }
        "resource" => {
            let resource = block.get("resource").cloned().unwrap_or(Value::Null);
            let uri = str_of(&resource, "uri").unwrap_or_default();
            let mime = str_of(&resource, "mimeType")
                .map(|m| format!(" ({m})"))
                .unwrap_or_default();
            match (str_of(&resource, "text"), str_of(&resource, "blob")) {
                (Some(text), _) => format!("[resource {uri}{mime}]\n{text}"),
                (None, Some(blob)) => format!(
                    "[resource {uri}{mime}, {} of binary data]",
                    human_size(base64_len(&blob))
                ),
                (None, None) => format!("[resource {uri}{mime}]"),
            }
        }
        "resource_link" => {
            let name = str_of(block, "name").unwrap_or_default();
            let uri = str_of(block, "uri").unwrap_or_default();
            let mime = str_of(block, "mimeType")
                .map(|m| format!(" ({m})"))
                .unwrap_or_default();
            let description = str_of(block, "description")
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            format!("[resource link: {name} <{uri}>{mime}{description}]")
        }
        other => format!(
            "[{} content: {}]",
            if other.is_empty() { "unknown" } else { other },
            block
        ),
    }
}

/// The decoded size of base64 text.
fn base64_len(data: &str) -> usize {
    let data = data.trim_end();
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
        + match data.len() % 4 {
            2 => 1,
            3 => 2,
            _ => 0,
        }
}

/// Bytes as `N bytes`, `N.N KiB` or `N.N MiB`.
fn human_size(bytes: usize) -> String {
    match bytes {
        0..1024 => format!("{bytes} bytes"),
        1024..1_048_576 => format!("{:.1} KiB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MiB", bytes as f64 / 1_048_576.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_is_described() {
        let out = describe_result(&json!({"content": [
            {"type": "text", "text": "t"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "hello"}},
            {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAAAA=="}},
            {"type": "resource_link", "uri": "test://x", "name": "x", "mimeType": "text/plain"},
            {"type": "hologram", "x": 1}
        ]}));
        assert_eq!(
            out.content,
            "t\n[audio: audio/wav, 3 bytes]\n[resource file:///a.txt (text/plain)]\nhello\n\
             [resource file:///b.bin, 4 bytes of binary data]\n\
             [resource link: x <test://x> (text/plain)]\n[hologram content: {\"type\":\"hologram\",\"x\":1}]"
        );
    }

    #[test]
    fn structured_content_when_no_parts() {
        let out = describe_result(&json!({"content": [], "structuredContent": {"a": 1}}));
        assert_eq!(out.content, r#"{"a":1}"#);
        let out = describe_result(&json!({"isError": true}));
        assert_eq!(out.content, "Error: the tool failed without a message");
    }

    #[test]
    fn sizes() {
        assert_eq!(base64_len("aGVsbG8="), 5);
        assert_eq!(base64_len("aGVsbG8"), 5);
        assert_eq!(human_size(2048), "2.0 KiB");
    }
}

//! An output schema sent as a forced tool, for providers and servers
//! without `response_format` (Anthropic always; an OpenAI-compatible server
//! that refused it): the schema becomes a tool the model must call, and
//! that call's arguments become the answer's text.

use std::borrow::Cow;

use serde_json::Value;

use crate::model::{ChatRequest, ChatResponse, ToolChoice};
use crate::tool::ToolSpec;

/// `request` with its output schema as a forced tool (for providers and
/// servers without `response_format`): the tool is added, and must be
/// called (by name when it is the only tool; otherwise some tool must be,
/// so the model can still call the others first). Unchanged without a
/// schema.
pub(crate) fn as_forced_tool(request: &ChatRequest) -> Cow<'_, ChatRequest> {
    forced(request, false)
}

/// [`as_forced_tool`], the schema's tool forced by name even beside other
/// tools: for a server that takes no `tool_choice: required`
/// (llama-cpp-python's function-calling format takes `auto`, `none` or a
/// named tool only), so the model answers at once instead of calling the
/// other tools first.
pub(crate) fn as_forced_tool_by_name(request: &ChatRequest) -> Cow<'_, ChatRequest> {
    forced(request, true)
}

fn forced(request: &ChatRequest, by_name: bool) -> Cow<'_, ChatRequest> {
    let Some(schema) = &request.output_schema else {
        return Cow::Borrowed(request);
    };
    let mut forced = request.clone();
    forced.tools.to_mut().push(ToolSpec {
        name: schema.name().to_string(),
        description: "Give your final answer: call this with it as the arguments.".to_string(),
        parameters: schema.tool_parameters(),
    });
    forced.tool_choice = Some(if by_name || request.tools.is_empty() {
        ToolChoice::Tool(schema.name().to_string())
    } else {
        ToolChoice::Required
    });
    Cow::Owned(forced)
}

/// `response` read for a request whose schema went as a forced tool: a
/// call of that tool is the answer (its arguments become the text, the
/// other calls are dropped). `true` when it was.
pub(crate) fn answer_from_forced_tool(request: &ChatRequest, response: &mut ChatResponse) -> bool {
    let Some(schema) = &request.output_schema else {
        return false;
    };
    let Some(call) = response
        .tool_calls
        .iter()
        .find(|call| call.name == schema.name())
    else {
        return false;
    };
    let arguments = call.arguments.trim();
    let text = if schema.is_object() {
        arguments.to_string()
    } else {
        serde_json::from_str::<Value>(arguments)
            .ok()
            .and_then(|v| v.get("value").cloned())
            .map_or_else(|| arguments.to_string(), |v| v.to_string())
    };
    response.content = text;
    response.tool_calls.clear();
    response.finish_reason = Some("stop".to_string());
    true
}

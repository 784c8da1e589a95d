//! The tool node: one tool call.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use std::time::Instant;

use crate::error::Result;
use crate::event::NetworkEvent;
use crate::message::{Message, ToolCall};
use crate::network::runtime::Attachments;
use crate::node::kinds::{self, BuiltInKind, TypedFields, BUILT_IN_KINDS};
use crate::node::{fields_of, NodeContext, NodeLogic};
use crate::tool::ToolContext;
use crate::tool_call::run_tool_call;

/// Runs one tool call of an AI message (kind `tool`).
///
/// It always produces a tool message: failures of every kind (unknown
/// tool, arguments that are not JSON or of the wrong shape, timeouts,
/// errors inside the tool) become an `Error: ...` result with status
/// `error` that the model reads on its next turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolNode {
    /// The call to run.
    pub tool_call: ToolCall,
}

impl ToolNode {
    /// The kind name (`__node_type__`).
    pub(crate) const KIND: &'static str = kinds::TOOL;
}

#[async_trait]
impl NodeLogic for ToolNode {
    fn kind(&self) -> &str {
        Self::KIND
    }

    async fn invoke(&self, ctx: NodeContext) -> Result<Message> {
        let tools = ctx.network.tools();
        let tool_ctx = ToolContext {
            network: ctx.network.clone(),
            node_id: ctx.node.id(),
            tool_call_id: self.tool_call.id.clone(),
        };
        let (node_id, call) = (ctx.node.id(), &self.tool_call);
        ctx.network.emit_with(|| NetworkEvent::ToolCallStarted {
            node_id,
            tool_call_id: call.id.clone(),
            name: call.name.clone(),
        });
        let clock = Instant::now();
        let output = match crate::call_limits::count_call(
            &ctx.network,
            crate::call_limits::Counted::Tool,
            &call.name,
        ) {
            Ok(()) => run_tool_call(&tools, call, &tool_ctx).await,
            Err(limit) => {
                ctx.node
                    .set_metadata("call_limit_reached", serde_json::json!(limit));
                crate::tool::ToolOutput::error(crate::call_limits::tool_limit_result(
                    &call.name, limit,
                ))
            }
        };
        let elapsed = clock.elapsed();
        ctx.network.emit_with(|| NetworkEvent::ToolCallFinished {
            node_id,
            tool_call_id: call.id.clone(),
            name: call.name.clone(),
            status: output.status,
            elapsed,
        });
        Ok(Message::Tool {
            content: output.content,
            tool_call_id: self.tool_call.id.clone(),
            name: Some(self.tool_call.name.clone()),
            status: output.status,
            parts: output.parts,
        })
    }

    fn save(&self) -> Result<serde_json::Map<String, serde_json::Value>> {
        fields_of(self)
    }
}

#[linkme::distributed_slice(BUILT_IN_KINDS)]
static TOOL_KIND: BuiltInKind = BuiltInKind {
    name: kinds::TOOL,
    load: kinds::serde_load::<ToolNode>,
    typed: Some(|f: &mut TypedFields| match f {
        TypedFields {
            text: None,
            tool_call: Some(_),
            chat_model_name: None,
        } => f.tool_call.take().map(|tool_call| {
            std::sync::Arc::new(ToolNode { tool_call }) as std::sync::Arc<dyn NodeLogic>
        }),
        _ => None,
    }),
    immutable: true,
};

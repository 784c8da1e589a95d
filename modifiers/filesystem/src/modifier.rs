//! [`FilesystemModifier`]: offers the file tools, adds the system-prompt
//! section and evicts large tool results.

use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{ChatRequest, Message, NetworkModifier, NodeRef, RunnableNetwork, Tool, ToolNode};

use super::backend::BackendSource;
use super::evict;
use super::limits::FileLimits;
use super::prompt;
use super::tools::{self, FILE_TOOL_NAMES, LINE_TOOL_NAMES};

/// Gives a network's chat nodes the file tools over a backend.
///
/// ```
/// use lc_agent::{Attachments, HumanNode, RunnableNetwork, ScriptedChatModel, Turn};
/// use lc_agent_filesystem::{FilesystemModifier, StateBackend};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// // A scripted stand-in for a real model.
/// let model = ScriptedChatModel::new([
///     Turn::call("c1", "write_file", json!({"file_path": "/notes.md", "content": "hi"})),
///     Turn::text("done"),
/// ]);
/// let net = RunnableNetwork::builder().default_node("chat").chat_model("m").model("m", model).build();
/// net.add_modifier(FilesystemModifier::new(StateBackend::factory())).unwrap();
/// { let _s = net.enter(); HumanNode::new("write a note"); }
/// net.invoke().await.unwrap();
/// assert_eq!(net.files()["/notes.md"].content, ["hi"]);
/// # });
/// ```
pub struct FilesystemModifier {
    id: String,
    backend: BackendSource,
    token_limit: Option<usize>,
    never_evict: Vec<String>,
    line_tools: bool,
}

impl FilesystemModifier {
    /// The modifier over `backend` (a backend or a factory), with eviction
    /// above 20,000 tokens (80,000 chars).
    pub fn new(backend: impl Into<BackendSource>) -> Self {
        Self {
            id: "filesystem".to_string(),
            backend: backend.into(),
            token_limit: Some(evict::DEFAULT_TOKEN_LIMIT),
            never_evict: FILE_TOOL_NAMES
                .iter()
                .chain(&LINE_TOOL_NAMES)
                .map(|s| s.to_string())
                .collect(),
            line_tools: false,
        }
    }

    /// Also offers the line tools (`insert_lines`, `replace_lines`,
    /// `delete_lines`; see [`line_tools`](crate::line_tools)); off by
    /// default, as their descriptions cost prompt tokens on every turn.
    pub fn line_tools(mut self, on: bool) -> Self {
        self.line_tools = on;
        self
    }

    /// Sets the file tools' size limits (how much `read_file` returns,
    /// how large a file the writing tools may leave; see [`FileLimits`]).
    pub fn limits(mut self, limits: FileLimits) -> Self {
        self.backend = limits.apply(self.backend);
        self
    }

    /// Sets `tool_token_limit_before_evict`; `None` disables eviction.
    pub fn tool_token_limit_before_evict(mut self, limit: Option<usize>) -> Self {
        self.token_limit = limit;
        self
    }

    /// Never evicts results of the tool `name` (the file tools other than `execute` never are).
    pub fn never_evict(mut self, name: impl Into<String>) -> Self {
        self.never_evict.push(name.into());
        self
    }

    /// Sets the modifier id (default `filesystem`), to attach two.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    async fn evict(&self, network: &RunnableNetwork, node: &NodeRef) {
        let Some(limit) = self.token_limit else {
            return;
        };
        let Some(tool_node) = node.downcast::<ToolNode>() else {
            return;
        };
        if self.never_evict.contains(&tool_node.tool_call.name) {
            return;
        }
        let Some(output) = node.output() else {
            return;
        };
        let Message::Tool {
            content,
            tool_call_id,
            name,
            status,
            parts,
        } = output.as_ref()
        else {
            return;
        };
        if content.chars().count() <= limit.saturating_mul(4) {
            return;
        }
        let target = evict::eviction_path(&tool_node.tool_call.id);
        let backend = self.backend.resolve(network);
        match backend.write(&target, content, true).await {
            Ok(()) => node.set_output(Message::Tool {
                content: evict::preview(content, &target),
                tool_call_id: tool_call_id.clone(),
                name: name.clone(),
                status: *status,
                parts: parts.clone(),
            }),
            Err(e) => {
                tracing::warn!(path = %target, error = %e, "could not evict a large tool result");
                node.set_metadata("eviction_error", serde_json::Value::String(e.to_string()));
            }
        }
    }
}

impl std::fmt::Debug for FilesystemModifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilesystemModifier")
            .field("id", &self.id)
            .field("token_limit", &self.token_limit)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl NetworkModifier for FilesystemModifier {
    fn id(&self) -> &str {
        &self.id
    }

    /// Sub-networks (sub-agents, routes) get the same rules: their huge
    /// results are evicted, and `execute` is offered only over a backend
    /// that runs commands.
    fn for_sub_network(&self) -> Option<Arc<dyn NetworkModifier>> {
        Some(Arc::new(FilesystemModifier {
            id: self.id.clone(),
            backend: self.backend.clone(),
            token_limit: self.token_limit,
            never_evict: self.never_evict.clone(),
            line_tools: self.line_tools,
        }))
    }

    async fn on_post_invoke(
        &self,
        network: &RunnableNetwork,
        node: &NodeRef,
    ) -> lc_agent::Result<()> {
        self.evict(network, node).await;
        Ok(())
    }

    async fn on_chat_request(
        &self,
        network: &RunnableNetwork,
        _node: &NodeRef,
        request: &mut ChatRequest,
    ) -> lc_agent::Result<()> {
        let backend = self.backend.resolve(network);
        request
            .tools
            .retain(|t| tools::is_offered(&t.name, backend.as_ref()));
        let with_execute =
            tools::is_offered(<tools::Execute as tools::FileTool>::NAME, backend.as_ref());
        request.system.push(prompt::system_section(with_execute));
        Ok(())
    }

    /// All eight tools (and the line tools when turned on): `execute` is kept so a call to it gets a clear
    /// error, but the model's requests offer only what
    /// [`tools::is_offered`] says (see `on_chat_request`).
    fn tools(&self, _network: &RunnableNetwork) -> Vec<Arc<dyn Tool>> {
        let mut all = tools::all(self.backend.clone());
        if self.line_tools {
            all.extend(tools::line_tools(self.backend.clone()));
        }
        all
    }
}

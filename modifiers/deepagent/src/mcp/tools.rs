//! [`McpTools`]: the tools of a set of MCP servers, offered to a network
//! as a modifier.
//!
//! ```text
//!  McpConfig ─▶ McpTools ── on_begin_invoke: connect the servers not connected
//!                  │     └─ tools(): every server's tools as McpTool
//!                  │         (a name two servers share, or a reserved one,
//!                  │          becomes `<server>_<name>`)
//!                  └─ ServerConnection per server (stdio or streamable HTTP)
//! ```

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{NetworkModifier, RunnableNetwork, Tool};
use tokio::sync::mpsc;

use super::config::McpConfig;
use super::confine::McpSandbox;
use super::connection::ServerConnection;
use super::elicitation::Elicitation;
use super::error::McpError;
use super::tool::McpTool;

/// The modifier id of [`McpTools`].
pub(super) const MCP_MODIFIER_ID: &str = "mcp";

/// MCP servers' tools for a network (see the [module docs](super)).
///
/// ```no_run
/// use lc_agent::Attachments;
/// use lc_agent_deepagent::mcp::{McpConfig, McpTools};
///
/// # async fn demo(net: lc_agent::RunnableNetwork) -> Result<(), Box<dyn std::error::Error>> {
/// let mcp = McpTools::new(McpConfig::from_file("mcp.json")?);
/// for failure in mcp.connect().await {
///     eprintln!("warning: {failure}");
/// }
/// net.add_modifier(mcp)?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct McpTools {
    servers: Arc<[Arc<ServerConnection>]>,
    reserved: Arc<HashSet<String>>,
}

impl McpTools {
    /// The servers of `config`, not connected yet (the first
    /// [`connect`](Self::connect) or `invoke` connects them).
    pub fn new(config: McpConfig) -> Self {
        Self {
            servers: config
                .mcp_servers
                .into_iter()
                .map(|(name, server)| Arc::new(ServerConnection::new(name, server)))
                .collect(),
            reserved: Arc::new(HashSet::new()),
        }
    }

    /// Runs the stdio servers in `sandbox` (the agent's own profile,
    /// the shell's), with a scrubbed environment, except those whose
    /// entry says `"sandbox": "full"`. Without it they run unconfined,
    /// as this process. Call it before connecting.
    pub fn sandboxed(self, sandbox: McpSandbox) -> Self {
        let sandbox = Arc::new(sandbox);
        for server in self.servers.iter() {
            server.set_sandbox(sandbox.clone());
        }
        self
    }

    /// Names other tools of the network use: an MCP tool of such a name is
    /// offered as `<server>_<name>`.
    pub fn reserve_names(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let mut reserved = (*self.reserved).clone();
        reserved.extend(names.into_iter().map(Into::into));
        self.reserved = Arc::new(reserved);
        self
    }

    /// Passes the servers' requests for input (`elicitation/create`, form
    /// mode; see [`Elicitation`]) to the returned channel, and declares
    /// the capability to them, which only a program where a person can
    /// answer should do. Without it a server's request is declined. Call
    /// it before connecting (the capability is declared at the handshake).
    ///
    /// The reader must answer (or drop) each request: the tool call that
    /// asked waits for it, and its timeout does not count the wait.
    pub fn with_elicitation(self) -> (Self, mpsc::Receiver<Elicitation>) {
        let (sender, receiver) = mpsc::channel(4);
        for server in self.servers.iter() {
            server.set_elicitation(sender.clone());
        }
        (self, receiver)
    }

    /// Connects every server that is not connected (concurrently) and
    /// lists its tools; returns the failures (the other servers work).
    pub async fn connect(&self) -> Vec<McpError> {
        let tries = self.servers.iter().map(|s| async move {
            if s.is_connected().await {
                Ok(())
            } else {
                s.connect().await
            }
        });
        futures::future::join_all(tries)
            .await
            .into_iter()
            .filter_map(Result::err)
            .collect()
    }

    /// Closes every connection (spawned servers stop).
    pub async fn disconnect(&self) {
        for server in self.servers.iter() {
            server.disconnect().await;
        }
    }

    /// Every server's tools, under the names the model sees.
    pub fn tool_list(&self) -> Vec<Arc<McpTool>> {
        self.tool_list_named_by(self)
    }

    /// The same servers' connections of another set (one session's), for
    /// the session's own connections.
    pub(crate) fn sibling(&self, session: &str, asks: Option<&mpsc::Sender<Elicitation>>) -> Self {
        Self {
            servers: self
                .servers
                .iter()
                .map(|s| {
                    let own = s.sibling();
                    own.set_session(session.to_string());
                    if let Some(asks) = asks {
                        own.set_elicitation(asks.clone());
                    }
                    Arc::new(own)
                })
                .collect(),
            reserved: self.reserved.clone(),
        }
    }

    /// Whether a call of one of its servers is under way.
    pub(crate) fn is_busy(&self) -> bool {
        self.servers.iter().any(|s| s.is_busy())
    }

    /// This set's tools, each server's list taken from `template`'s same
    /// server until this one has listed its own (before it connects).
    pub(crate) fn tool_list_named_by(&self, template: &McpTools) -> Vec<Arc<McpTool>> {
        let lists: Vec<_> = self
            .servers
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let own = s.tools();
                match template.servers.get(i) {
                    Some(t) if own.is_empty() => (s, t.tools()),
                    _ => (s, own),
                }
            })
            .collect();
        let mut count: HashMap<&str, usize> = HashMap::new();
        for (_, tools) in &lists {
            for tool in tools.iter() {
                *count.entry(tool.name.as_str()).or_default() += 1;
            }
        }
        let mut out = Vec::new();
        for (server, tools) in &lists {
            for tool in tools.iter() {
                let clash = count.get(tool.name.as_str()).copied().unwrap_or(0) > 1
                    || self.reserved.contains(&tool.name);
                let name = if clash {
                    function_name(&format!("{}_{}", server.name(), tool.name))
                } else {
                    function_name(&tool.name)
                };
                out.push(Arc::new(McpTool::new(
                    name,
                    tool.clone(),
                    (*server).clone(),
                )));
            }
        }
        out
    }
}

/// A name a chat API accepts as a function name: `[A-Za-z0-9_-]`, at most
/// 64 characters.
fn function_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

#[async_trait]
impl NetworkModifier for McpTools {
    fn id(&self) -> &str {
        MCP_MODIFIER_ID
    }

    async fn on_begin_invoke(&self, _network: &RunnableNetwork) -> lc_agent::Result<()> {
        for failure in self.connect().await {
            tracing::warn!("{}", lc_agent::error_chain(&failure));
        }
        Ok(())
    }

    fn tools(&self, _network: &RunnableNetwork) -> Vec<Arc<dyn Tool>> {
        self.tool_list()
            .into_iter()
            .map(|t| t as Arc<dyn Tool>)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_names_are_api_safe() {
        assert_eq!(
            function_name("time_get current.time"),
            "time_get_current_time"
        );
        assert_eq!(function_name(&"x".repeat(80)).len(), 64);
    }
}

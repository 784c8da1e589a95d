//! [`McpSessions`]: MCP servers for a program that runs many sessions at
//! once (`lc-agent serve`), each session with connections of its own.
//!
//! ```text
//!  McpSessions ── template: McpTools, connected at start (tool names, /v1/tools)
//!      │  on_begin_invoke(net): the set of session net.id() (made on first use:
//!      │     the same servers, connections of its own, tagged with the session,
//!      │     the capability declared);  tools(net): that set's, else the template's
//!      ├─ session A ─ ServerConnection per server ─┐ elicitation/create
//!      ├─ session B ─ ServerConnection per server ─┤   ─▶ Elicitation { session: A | B }
//!      └─ ...      (idle sets closed)              ┘   ─▶ the one channel of with_elicitation
//! ```
//!
//! A request for input carries no trace of the tool call it belongs to
//! (over stdio it is a bare JSON-RPC request), so a connection shared by
//! sessions cannot say whose person should answer. A connection per
//! session can: every request it gets is its session's. It also keeps one
//! person's MCP server state (a browser, a login) away from another's.
//! A set no call has used for [`McpSessions::idle`] (10 minutes unless
//! set) is closed, and reopened by its session's next call; beyond
//! [`McpSessions::max_sessions`] sets the least recently used idle one
//! is closed first.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use lc_agent::{NetworkModifier, RunnableNetwork, Tool};
use parking_lot::Mutex;
use tokio::sync::mpsc;

use super::config::McpConfig;
use super::elicitation::Elicitation;
use super::tools::{McpTools, MCP_MODIFIER_ID};

/// MCP servers' tools, a connection of its own per session (see the
/// module's documentation).
///
/// ```no_run
/// use lc_agent_deepagent::mcp::{McpConfig, McpSessions};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let (mcp, mut asks) = McpSessions::new(McpConfig::from_file("mcp.json")?);
/// for failure in mcp.connect().await {
///     eprintln!("warning: {failure}");
/// }
/// tokio::spawn(async move {
///     while let Some(ask) = asks.recv().await {
///         // ask.session() names the network whose tool call asked.
///         drop(ask); // declined
///     }
/// });
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct McpSessions {
    template: McpTools,
    asks: mpsc::Sender<Elicitation>,
    sets: Arc<Mutex<HashMap<String, Set>>>,
    idle: Duration,
    max: usize,
}

#[derive(Debug)]
struct Set {
    tools: McpTools,
    used: Instant,
}

impl McpSessions {
    /// The servers of `config`, and the channel every session's requests
    /// for input come out of, each tagged with its session
    /// ([`Elicitation::session`]). The capability is declared to the
    /// servers of every session's set: the reader must answer or drop
    /// each request.
    pub fn new(config: McpConfig) -> (Self, mpsc::Receiver<Elicitation>) {
        Self::from_tools(McpTools::new(config))
    }

    /// [`McpSessions::new`] over servers already set up (their reserved
    /// names kept).
    pub fn from_tools(template: McpTools) -> (Self, mpsc::Receiver<Elicitation>) {
        let (asks, receiver) = mpsc::channel(16);
        (
            Self {
                template,
                asks,
                sets: Arc::default(),
                idle: Duration::from_secs(600),
                max: 64,
            },
            receiver,
        )
    }

    /// How long a session's connections stay open with no call (default
    /// 10 minutes).
    pub fn idle(mut self, idle: Duration) -> Self {
        self.idle = idle;
        self
    }

    /// How many sessions keep connections open at once (default 64; at
    /// least 1): beyond it the least recently used idle set is closed.
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.max = max.max(1);
        self
    }

    /// Connects the template (the first connection of every server, which
    /// names the tools before a session's own lists them); the failures.
    pub async fn connect(&self) -> Vec<super::McpError> {
        self.template.connect().await
    }

    /// The template's tools (what `/v1/tools` lists): calls through them
    /// share one connection per server, with no person to ask.
    pub fn template(&self) -> &McpTools {
        &self.template
    }

    /// How many sessions have connections of their own now.
    pub fn open_sessions(&self) -> usize {
        self.sets.lock().len()
    }

    /// Closes every connection, the template's and every session's.
    pub async fn disconnect(&self) {
        let sets: Vec<McpTools> = self.sets.lock().drain().map(|(_, s)| s.tools).collect();
        for set in sets {
            set.disconnect().await;
        }
        self.template.disconnect().await;
    }

    /// The set of `session`, if it has one, marked used now.
    fn existing(&self, session: &str) -> Option<McpTools> {
        let mut sets = self.sets.lock();
        let set = sets.get_mut(session)?;
        set.used = Instant::now();
        Some(set.tools.clone())
    }

    /// The set of `session`, made on first use, marked used now; the
    /// sets closed to make room or for being idle are closed meanwhile.
    fn set_of(&self, session: String) -> McpTools {
        let now = Instant::now();
        let mut closing = Vec::new();
        let tools = {
            let mut sets = self.sets.lock();
            sets.retain(|_, s| {
                let keep = now.duration_since(s.used) < self.idle || s.tools.is_busy();
                if !keep {
                    closing.push(s.tools.clone());
                }
                keep
            });
            if !sets.contains_key(&session) {
                while sets.len() >= self.max {
                    let oldest = sets
                        .iter()
                        .filter(|(_, s)| !s.tools.is_busy())
                        .min_by_key(|(_, s)| s.used)
                        .map(|(k, _)| k.clone());
                    match oldest.and_then(|k| sets.remove(&k)) {
                        Some(set) => closing.push(set.tools),
                        // Every set is in a call: one more, closed later.
                        None => break,
                    }
                }
            }
            let set = sets.entry(session.clone()).or_insert_with(|| Set {
                tools: self.template.sibling(&session, Some(&self.asks)),
                used: now,
            });
            set.used = now;
            set.tools.clone()
        };
        if !closing.is_empty() {
            tracing::debug!(
                count = closing.len(),
                "closing the MCP connections of idle sessions"
            );
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    for set in closing {
                        set.disconnect().await;
                    }
                });
            }
        }
        tools
    }
}

#[async_trait]
impl NetworkModifier for McpSessions {
    fn id(&self) -> &str {
        MCP_MODIFIER_ID
    }

    async fn on_begin_invoke(&self, network: &RunnableNetwork) -> lc_agent::Result<()> {
        let set = self.set_of(network.id().to_string());
        for failure in set.connect().await {
            tracing::warn!("{}", lc_agent::error_chain(&failure));
        }
        Ok(())
    }

    /// The session's own tools once an invoke of it began; before (a
    /// tool listing, a tool endpoint's call outside any run) the
    /// template's, which ask nobody.
    fn tools(&self, network: &RunnableNetwork) -> Vec<Arc<dyn Tool>> {
        let tools = match self.existing(&network.id().to_string()) {
            Some(set) => set.tool_list_named_by(&self.template),
            None => self.template.tool_list(),
        };
        tools.into_iter().map(|t| t as Arc<dyn Tool>).collect()
    }
}

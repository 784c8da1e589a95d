//! [`AgentContext`]: where an agent runs. The session store (memory
//! without its own `dir` lives beside the sessions: in Redis when they are
//! in Redis, else under `$LC_AGENT_HOME/memory`) and the user. The
//! blueprint ([`spec`](crate::spec)) and composition
//! ([`compose`](crate::compose), which re-exports it) both read it.

use lc_agent::ListConfig;

/// Where an agent runs: its session store and user (see the
/// [`Blueprint`](crate::Blueprint)).
#[derive(Debug, Clone, Default)]
pub struct AgentContext {
    /// Where the sessions live.
    pub sessions: ListConfig,
    /// Whose sessions (memory's user when the session names none).
    pub user: Option<String>,
}

impl AgentContext {
    /// Sessions in `sessions`, for `user`.
    pub fn new(sessions: ListConfig, user: impl Into<String>) -> Self {
        Self {
            sessions,
            user: Some(user.into()),
        }
    }
}

//! Permission modes on the server: each session has one (in its metadata,
//! see `lc_agent_deepagent::PermissionMode`), set at creation
//! (`POST /api/sessions {"mode"}`) or changed later
//! (`PATCH /api/sessions/{id} {"mode"}`), shown by `GET /api/sessions/{id}`
//! (`"mode"`) and switched on the page.
//!
//! ```text
//!  ServerConfig::default_mode(m)   the mode of new sessions (default `default`)
//!  ServerConfig::allow_bypass(on)  whether a client may ask for `bypass` (default no: 403;
//!                                  a server whose default mode is `bypass` allows it)
//!  a run in bypass ─▶ run_started {"warning": "..."} on the SSE stream, and a warning in the log
//! ```
//!
//! Only the server's operator decides whether `bypass` is possible: a
//! client's request for it on a server that does not allow it is refused
//! (403), whatever the session's blueprint says.

use lc_agent::RunnableNetwork;
use lc_agent_deepagent::{permission_mode, set_permission_mode, PermissionMode, MODE_KEY};

use crate::config::ServerConfig;
use crate::error::ApiError;

/// The server's rules about modes (see the [module docs](self)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ModePolicy {
    /// The mode of a new session without one of its blueprint's.
    default: Option<PermissionMode>,
    /// Whether clients may ask for `bypass`.
    allow_bypass: bool,
}

impl ServerConfig {
    /// The permission mode of new sessions (default `default`; a
    /// blueprint's `mode` wins). `bypass` here also allows clients to ask
    /// for it.
    #[must_use]
    pub fn default_mode(mut self, mode: PermissionMode) -> Self {
        self.modes.default = Some(mode);
        self
    }

    /// Whether a client may put a session in `bypass` mode (default: no,
    /// such a request is refused with 403).
    #[must_use]
    pub fn allow_bypass(mut self, on: bool) -> Self {
        self.modes.allow_bypass = on;
        self
    }
}

impl ModePolicy {
    /// Whether a client may ask for `mode`.
    pub(crate) fn check(&self, mode: PermissionMode) -> Result<(), ApiError> {
        if mode == PermissionMode::Bypass
            && !self.allow_bypass
            && self.default != Some(PermissionMode::Bypass)
        {
            return Err(ApiError::Refused(
                "this server does not allow bypass mode (its operator can start it with \
                 `--allow-bypass`)"
                    .to_string(),
            ));
        }
        Ok(())
    }

    /// Gives a new session the server's default mode, unless its
    /// blueprint gave it one.
    pub(crate) fn apply_default(&self, net: &RunnableNetwork) {
        if let (Some(mode), None) = (self.default, net.metadata_value(MODE_KEY)) {
            set_permission_mode(net, mode);
        }
    }

    /// A client's choice of mode for `net`, checked.
    pub(crate) fn set(&self, net: &RunnableNetwork, mode: PermissionMode) -> Result<(), ApiError> {
        self.check(mode)?;
        set_permission_mode(net, mode);
        Ok(())
    }
}

/// The warning a run of `net` starts with, when it runs in bypass mode.
pub(crate) fn run_warning(net: &RunnableNetwork) -> Option<String> {
    (permission_mode(net) == PermissionMode::Bypass).then(|| {
        tracing::warn!(session = %net.id(), "{}", lc_agent_deepagent::BYPASS_WARNING);
        lc_agent_deepagent::BYPASS_WARNING.to_string()
    })
}

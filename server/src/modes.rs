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
use lc_agent_deepagent::{permission_mode, set_permission_mode, PermissionMode};

use crate::config::ServerConfig;
use crate::error::ApiError;

/// Whether a client may ask for `mode` on this server.
fn check(config: &ServerConfig, mode: PermissionMode) -> Result<(), ApiError> {
    if mode == PermissionMode::Bypass
        && !config.allow_bypass
        && config.default_mode != Some(PermissionMode::Bypass)
    {
        return Err(ApiError::Refused(
            "this server does not allow bypass mode (its operator can start it with \
             `--allow-bypass`)"
                .to_string(),
        ));
    }
    Ok(())
}

/// A client's choice of mode for `net`, checked.
pub(crate) fn set(
    config: &ServerConfig,
    net: &RunnableNetwork,
    mode: PermissionMode,
) -> Result<(), ApiError> {
    check(config, mode)?;
    set_permission_mode(net, mode);
    Ok(())
}

/// The warning a run of `net` starts with, when it runs in bypass mode.
pub(crate) fn run_warning(net: &RunnableNetwork) -> Option<String> {
    (permission_mode(net) == PermissionMode::Bypass).then(|| {
        tracing::warn!(session = %net.id(), "{}", lc_agent_deepagent::BYPASS_WARNING);
        lc_agent_deepagent::BYPASS_WARNING.to_string()
    })
}

//! The workspace files as MCP resources, and the server's log messages,
//! for [`FileToolServer`](super::FileToolServer).
//!
//! ```text
//!  resources/list            ─▶ backend.ls("/", recursive) ─▶ file:///<path> per file (pages of 500)
//!  resources/templates/list  ─▶ file:///{+path}
//!  resources/read  file:///p ─▶ normalize(p) ─▶ backend.download_files ─▶ text (UTF-8) | blob (base64)
//!  resources/subscribe       ─▶ Session.watched[p] = SHA-256 ─▶ watcher every 250 ms:
//!                               changed, created or deleted ─▶ notifications/resources/updated
//!  logging/setLevel          ─▶ Session.level; each tool call ─▶ notifications/message
//! ```
//!
//! Everything goes through the same backend as the tools, so the path
//! rules (`--deny`, `--ask`) hide a file from the list and refuse reading
//! or watching it, and nothing outside the root is reachable: a URI's
//! path is normalised exactly as a tool's `file_path` (`..`, `~` refused).
//! A URI is `file://` + the virtual path (absolute inside the root),
//! percent-encoded. No log message is sent until the client sets a level.

#![allow(deprecated)] // rmcp marks MCP logging deprecated (SEP-2577); clients still use it.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use base64::Engine as _;
use lc_agent_filesystem::{path, Backend};
use parking_lot::Mutex;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, LoggingLevel,
    LoggingMessageNotificationParam, ReadResourceResult, Resource, ResourceContents,
    ResourceTemplate, ResourceUpdatedNotificationParam,
};
use rmcp::service::Peer;
use rmcp::RoleServer;
use serde_json::Value;

/// Resources per `resources/list` page.
const PAGE: usize = 500;

/// How often subscribed files are looked at.
const WATCH_EVERY: Duration = Duration::from_millis(250);

/// The URI scheme of the workspace files.
const SCHEME: &str = "file://";

/// One client's state: its log level and the files it watches.
#[derive(Default)]
pub(crate) struct Session {
    level: Mutex<Option<LoggingLevel>>,
    /// Watched path -> the SHA-256 last seen (`None`: no file there).
    watched: Mutex<HashMap<String, Option<String>>>,
    watcher: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(task) = self.watcher.get_mut().take() {
            task.abort();
        }
    }
}

/// The URI of a virtual path.
pub(crate) fn uri(path: &str) -> String {
    let mut out = String::from(SCHEME);
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The normalised virtual path a URI names, or why it names none.
pub(crate) fn path_of(uri: &str) -> Result<String, rmcp::ErrorData> {
    let rest = uri.strip_prefix(SCHEME).ok_or_else(|| {
        rmcp::ErrorData::invalid_params(
            format!("`{uri}` is not a workspace file (the URIs start with file:///)"),
            None,
        )
    })?;
    let bytes = rest.as_bytes();
    let mut raw = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                raw.push(b);
                i += 3;
            }
            (b, _) => {
                raw.push(b);
                i += 1;
            }
        }
    }
    let text = String::from_utf8(raw).map_err(|_| {
        rmcp::ErrorData::invalid_params(format!("`{uri}`: the path is not UTF-8"), None)
    })?;
    path::normalize(&text).map_err(|e| rmcp::ErrorData::invalid_params(format!("Error: {e}"), None))
}

/// The MIME type told by a file's extension (`None`: unknown).
fn mime_of(path: &str) -> Option<&'static str> {
    let ext = path.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match ext.as_str() {
        "txt" | "log" => "text/plain",
        "md" | "markdown" => "text/markdown",
        "rs" => "text/x-rust",
        "py" => "text/x-python",
        "js" | "mjs" => "text/javascript",
        "ts" => "text/x-typescript",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "toml" => "application/toml",
        "yaml" | "yml" => "application/yaml",
        "json" => "application/json",
        "xml" => "application/xml",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" => "application/gzip",
        _ => return None,
    })
}

/// `resources/list`: the files under the root, a page at `cursor`.
pub(crate) async fn list(
    backend: &dyn Backend,
    cursor: Option<&str>,
) -> Result<ListResourcesResult, rmcp::ErrorData> {
    let mut files: Vec<String> = backend
        .ls("/", true)
        .await
        .map_err(|e| rmcp::ErrorData::internal_error(format!("Error: {e}"), None))?
        .into_iter()
        .filter(|e| !e.is_dir && !e.path.ends_with('/'))
        .map(|e| e.path)
        .collect();
    files.sort();
    let start: usize = match cursor {
        None => 0,
        Some(c) => c
            .parse()
            .map_err(|_| rmcp::ErrorData::invalid_params(format!("bad cursor `{c}`"), None))?,
    };
    let end = files.len().min(start.saturating_add(PAGE));
    let resources = files
        .get(start..end)
        .unwrap_or_default()
        .iter()
        .map(|p| {
            let mut raw = Resource::new(uri(p), p.trim_start_matches('/').to_string());
            raw.mime_type = mime_of(p).map(str::to_string);
            raw
        })
        .collect();
    let mut result = ListResourcesResult::with_all_items(resources);
    result.next_cursor = (end < files.len()).then(|| end.to_string());
    Ok(result)
}

/// `resources/templates/list`: any file under the root by its path.
pub(crate) fn templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(vec![ResourceTemplate::new(
        format!("{SCHEME}/{{+path}}"),
        "workspace file",
    )
    .with_description(
        "A file of the workspace by its path from the root, such as file:///notes/todo.md",
    )])
}

/// `resources/read`: one file, as text when it is UTF-8, else base64.
pub(crate) async fn read(
    backend: &dyn Backend,
    uri: &str,
) -> Result<ReadResourceResult, rmcp::ErrorData> {
    let path = path_of(uri)?;
    let answer = backend.download_files(vec![path.clone()]).await.pop();
    let bytes = match answer {
        Some(r) if r.error.is_none() => r.content.unwrap_or_default(),
        Some(r) => {
            let code = r
                .error
                .map_or_else(|| "unreadable".to_string(), |c| c.to_string());
            return Err(rmcp::ErrorData::resource_not_found(
                format!("Error: cannot read {path}: {code}"),
                Some(serde_json::json!({"uri": uri})),
            ));
        }
        None => {
            return Err(rmcp::ErrorData::resource_not_found(
                format!("Error: cannot read {path}"),
                Some(serde_json::json!({"uri": uri})),
            ))
        }
    };
    let mime = mime_of(&path);
    let contents = match String::from_utf8(bytes) {
        Ok(text) => ResourceContents::text(text, uri)
            .with_mime_type(mime.unwrap_or("text/plain").to_string()),
        Err(e) => ResourceContents::blob(
            base64::engine::general_purpose::STANDARD.encode(e.as_bytes()),
            uri,
        )
        .with_mime_type(mime.unwrap_or("application/octet-stream").to_string()),
    };
    Ok(ReadResourceResult::new(vec![contents]))
}

/// The SHA-256 of a file, `None` when there is none (or it is hidden).
async fn hash(backend: &dyn Backend, path: &str) -> Option<String> {
    backend.fingerprint(path, 0).await.map(|f| f.sha256)
}

impl Session {
    /// `resources/subscribe`: watches `uri`'s file (started on the first).
    pub(crate) async fn subscribe(
        self: &Arc<Self>,
        backend: Arc<dyn Backend>,
        peer: Peer<RoleServer>,
        uri: &str,
    ) -> Result<(), rmcp::ErrorData> {
        let path = path_of(uri)?;
        // A path the rules hide is refused, as a read of it would be.
        if let Some(Some(code)) = backend
            .download_files(vec![path.clone()])
            .await
            .pop()
            .map(|r| r.error)
            && code == lc_agent_filesystem::FileOpError::PermissionDenied
        {
            return Err(rmcp::ErrorData::invalid_params(
                format!("Error: cannot watch {path}: {code}"),
                None,
            ));
        }
        let seen = hash(backend.as_ref(), &path).await;
        self.watched.lock().insert(path, seen);
        let mut watcher = self.watcher.lock();
        if watcher.is_none() {
            *watcher = Some(tokio::spawn(watch(Arc::downgrade(self), backend, peer)));
        }
        Ok(())
    }

    /// `resources/unsubscribe`.
    pub(crate) fn unsubscribe(&self, uri: &str) -> Result<(), rmcp::ErrorData> {
        let path = path_of(uri)?;
        self.watched.lock().remove(&path);
        Ok(())
    }

    /// `logging/setLevel`.
    pub(crate) fn set_level(&self, level: LoggingLevel) {
        *self.level.lock() = Some(level);
    }

    /// Sends a log message when the client's level lets it through.
    pub(crate) async fn log(&self, peer: &Peer<RoleServer>, level: LoggingLevel, data: Value) {
        let wanted = *self.level.lock();
        if wanted.is_some_and(|w| rank(level) >= rank(w)) {
            let mut message = LoggingMessageNotificationParam::new(level, data);
            message.logger = Some("lc-agent".into());
            if let Err(e) = peer.notify_logging_message(message).await {
                tracing::debug!(error = %e, "MCP log message not sent");
            }
        }
    }
}

/// The severity order of the levels.
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// Tells the client about its watched files' changes until it leaves.
async fn watch(session: Weak<Session>, backend: Arc<dyn Backend>, peer: Peer<RoleServer>) {
    loop {
        tokio::time::sleep(WATCH_EVERY).await;
        let Some(session) = session.upgrade() else {
            return;
        };
        let paths: Vec<String> = session.watched.lock().keys().cloned().collect();
        for path in paths {
            let now = hash(backend.as_ref(), &path).await;
            let changed = {
                let mut watched = session.watched.lock();
                match watched.get_mut(&path) {
                    Some(seen) if *seen != now => {
                        *seen = now;
                        true
                    }
                    _ => false,
                }
            };
            if changed
                && peer
                    .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri(&path)))
                    .await
                    .is_err()
            {
                // The client is gone.
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip_and_stay_inside() {
        assert_eq!(uri("/notes/a b#1.md"), "file:///notes/a%20b%231.md");
        assert_eq!(
            path_of("file:///notes/a%20b%231.md").unwrap(),
            "/notes/a b#1.md"
        );
        assert!(path_of("file:///../etc/passwd").is_err());
        assert!(path_of("file:///%2E%2E/etc/passwd").is_err());
        assert!(path_of("http://x/a").is_err());
    }
}

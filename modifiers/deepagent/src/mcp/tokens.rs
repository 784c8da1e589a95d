//! [`TokenFile`]: the OAuth tokens of remote MCP servers, kept per server
//! outside every session and log, in one file only its owner can read.
//!
//! ```text
//!  $LC_AGENT_HOME/mcp-tokens.json (else ~/.lc-agent/mcp-tokens.json), mode 0600
//!  {"servers": {"<server URL>": {"name": "<config name>", "client_id": ...,
//!                                "token_response": {...}, "granted_scopes": [...], ...}}}
//! ```
//!
//! The key is the server's URL (the OAuth "resource"), so one login serves
//! every configuration that names the same server. A write goes to a
//! temporary file created with mode 0600 and is renamed over the old one, so
//! a crash never leaves half a file and the tokens are never readable by
//! others, not even for a moment. `lc-agent mcp login` writes an entry; a
//! connection reads it and writes the refreshed tokens back (rmcp's
//! [`CredentialStore`]).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

/// The file's name under the lc-agent home directory.
const FILE_NAME: &str = "mcp-tokens.json";

/// One server's entry.
#[derive(Serialize, Deserialize)]
struct Entry {
    /// The configuration name it was logged in as (for people reading the file).
    #[serde(default)]
    name: String,
    #[serde(flatten)]
    credentials: StoredCredentials,
}

/// The whole file.
#[derive(Default, Serialize, Deserialize)]
struct Contents {
    #[serde(default)]
    servers: BTreeMap<String, Entry>,
}

/// The token file (see the [module docs](self)).
#[derive(Debug, Clone)]
pub(crate) struct TokenFile {
    path: PathBuf,
    /// Serializes this process's read-modify-write cycles.
    lock: Arc<tokio::sync::Mutex<()>>,
}

impl TokenFile {
    /// The file at `path`.
    pub(crate) fn at(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            lock: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// `$LC_AGENT_HOME/mcp-tokens.json`, else `~/.lc-agent/mcp-tokens.json`.
    pub(crate) fn default_path() -> PathBuf {
        match std::env::var_os("LC_AGENT_HOME") {
            Some(home) if !home.is_empty() => PathBuf::from(home).join(FILE_NAME),
            _ => std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default()
                .join(".lc-agent")
                .join(FILE_NAME),
        }
    }

    /// Where it is.
    #[cfg(test)]
    pub(crate) fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The store of one server's tokens in this file.
    pub(crate) fn server(&self, name: &str, url: &str) -> ServerTokens {
        ServerTokens {
            file: self.clone(),
            name: name.to_string(),
            key: url.to_string(),
        }
    }

    fn read(&self) -> Result<Contents, AuthError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                store_error(format!(
                    "{} is not a token file ({e}); remove it and log in again",
                    self.path.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Contents::default()),
            Err(e) => Err(store_error(format!(
                "cannot read {}: {e}",
                self.path.display()
            ))),
        }
    }

    fn write(&self, contents: &Contents) -> Result<(), AuthError> {
        let fail =
            |e: std::io::Error| store_error(format!("cannot write {}: {e}", self.path.display()));
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        let bytes = serde_json::to_vec_pretty(contents)
            .map_err(|e| store_error(format!("cannot encode the tokens: {e}")))?;
        let temp = self
            .path
            .with_extension(format!("json.{}.tmp", std::process::id()));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let written = options.open(&temp).and_then(|mut file| {
            file.write_all(&bytes)?;
            file.sync_all()
        });
        if let Err(e) = written.and_then(|()| std::fs::rename(&temp, &self.path)) {
            let _ = std::fs::remove_file(&temp);
            return Err(fail(e));
        }
        Ok(())
    }
}

/// One server's tokens in the [`TokenFile`]: rmcp's [`CredentialStore`].
#[derive(Debug, Clone)]
pub(crate) struct ServerTokens {
    file: TokenFile,
    name: String,
    key: String,
}

impl ServerTokens {
    /// Whether an access token is stored.
    pub(crate) async fn has_token(&self) -> bool {
        matches!(self.load().await, Ok(Some(c)) if c.token_response.is_some())
    }
}

#[async_trait::async_trait]
impl CredentialStore for ServerTokens {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let _guard = self.file.lock.lock().await;
        let mut contents = self.file.read()?;
        Ok(contents.servers.remove(&self.key).map(|e| e.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let _guard = self.file.lock.lock().await;
        let mut contents = self.file.read()?;
        contents.servers.insert(
            self.key.clone(),
            Entry {
                name: self.name.clone(),
                credentials,
            },
        );
        self.file.write(&contents)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let _guard = self.file.lock.lock().await;
        let mut contents = self.file.read()?;
        if contents.servers.remove(&self.key).is_some() {
            self.file.write(&contents)?;
        }
        Ok(())
    }
}

fn store_error(message: String) -> AuthError {
    AuthError::CredentialStoreError(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn entries_are_per_server_and_the_file_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let file = TokenFile::at(dir.path().join("home/mcp-tokens.json"));
        let a = file.server("a", "http://127.0.0.1:1/mcp");
        let b = file.server("b", "http://127.0.0.1:2/mcp");
        assert!(a.load().await.unwrap().is_none());
        a.save(StoredCredentials::new(
            "client-a".into(),
            None,
            vec![],
            None,
        ))
        .await
        .unwrap();
        b.save(StoredCredentials::new(
            "client-b".into(),
            None,
            vec![],
            None,
        ))
        .await
        .unwrap();
        assert_eq!(a.load().await.unwrap().unwrap().client_id, "client-a");
        assert_eq!(b.load().await.unwrap().unwrap().client_id, "client-b");
        assert!(!a.has_token().await);
        a.clear().await.unwrap();
        assert!(a.load().await.unwrap().is_none());
        assert_eq!(b.load().await.unwrap().unwrap().client_id, "client-b");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(file.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let names: Vec<_> = std::fs::read_dir(dir.path().join("home"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["mcp-tokens.json"]);
    }
}

//! [`McpConfig`]: which MCP servers to use, in the `mcpServers` format that
//! desktop MCP clients write.
//!
//! ```json
//! {"mcpServers": {
//!   "time":  {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},
//!   "files": {"command": "lc-agent", "args": ["mcp", "--root", "."],
//!             "env": {"RUST_LOG": "warn"}},
//!   "remote": {"url": "http://127.0.0.1:8931/mcp",
//!              "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"}},
//!   "tracker": {"url": "https://mcp.example.com/mcp",
//!               "oauth": {"clientId": "lc-agent", "clientSecret": "${TRACKER_SECRET}",
//!                         "scopes": ["read"], "redirectPort": 8765}}
//! }}
//! ```
//!
//! An entry has `command` (with optional `args` and `env`) for a server
//! spawned over stdio, or `url` (with optional `headers`) for streamable
//! HTTP. Secrets stay out of the file (and out of a saved
//! [`AgentSpec`](crate::spec::AgentSpec)): `${NAME}` in an argument, an
//! `env` value, the URL or a header is replaced with the environment
//! variable `NAME` when the server is started ([`McpServerConfig::resolve`]).
//! An HTTP server without an `Authorization` header may ask for OAuth: its
//! tokens come from `lc-agent mcp login NAME` and live in the token file,
//! never here; `oauth` ([`McpOAuthConfig`], optional) names a pre-registered
//! client, the scopes to ask for, or the client-credentials grant.
//! This part is plain data and builds without the `mcp` feature.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use indexmap::IndexMap;
use lc_agent_filesystem::SandboxMode;
use regex::Regex;
use serde::{Deserialize, Deserializer, Serialize};

/// The default time a tool call may take, in seconds.
#[cfg(feature = "mcp")]
const DEFAULT_CALL_TIMEOUT_SECS: f64 = 60.0;

/// The least time a server gets to start and list its tools, in seconds
/// (more when the call timeout is longer).
#[cfg(feature = "mcp")]
const MIN_CONNECT_TIMEOUT_SECS: f64 = 30.0;

/// A set of MCP servers by name: the `mcpServers` object.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpConfig {
    /// Server name -> how to reach it (in the file's order).
    #[serde(default)]
    pub mcp_servers: IndexMap<String, McpServerConfig>,
}

/// How to reach one MCP server: spawn `command`, or connect to `url`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerConfig {
    /// The program to spawn (stdio transport).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment variables for it (values may be `${NAME}` references);
    /// a list of names (`["GITHUB_TOKEN"]`) passes those variables of
    /// this process by name (`{"GITHUB_TOKEN": "${GITHUB_TOKEN}"}`).
    /// Unless `sandbox` is `full`, the program gets only these besides
    /// `PATH`, `HOME` and `LANG`.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "env_map"
    )]
    pub env: BTreeMap<String, String>,
    /// How a stdio server is confined. Absent (or `workspace-write`): in
    /// the agent's own sandbox profile, as the shell's commands are
    /// (the workspace's root and the program's own directory, no
    /// network unless the profile allows it, a scrubbed environment);
    /// `read-only`: that profile, read-only; `full`: unconfined, with
    /// this process's whole environment — the user's choice, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
    /// The working directory of the spawned program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// The streamable HTTP endpoint (instead of `command`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP headers sent with every request (values may be `${NAME}` references).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// How long one tool call may take, in seconds (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// OAuth settings of an HTTP server (without them, a server that asks
    /// for OAuth gets a dynamically registered client).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<McpOAuthConfig>,
}

/// How lc-agent authorizes with an OAuth-protected HTTP server. Every field
/// is optional; secrets should be `${NAME}` references.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpOAuthConfig {
    /// A client id registered with the authorization server beforehand
    /// (without it, lc-agent registers itself dynamically).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// That client's secret (a `${NAME}` reference; confidential clients only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The scopes to ask for (default: those the server's challenge or
    /// metadata name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// The loopback port of the login's redirect listener (default: any
    /// free port); a pre-registered client's redirect URI is
    /// `http://127.0.0.1:PORT/callback`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_port: Option<u16>,
    /// `"client_credentials"`: no person logs in; the client id and secret
    /// are exchanged for a token whenever one is needed (a service's own
    /// account). Default: the authorization-code flow of `lc-agent mcp login`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<String>,
}

/// [`McpOAuthConfig`] with its references resolved (its `Debug` hides the
/// secret).
#[derive(Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct OAuthSettings {
    /// The pre-registered client id.
    pub client_id: Option<String>,
    /// Its secret.
    pub client_secret: Option<String>,
    /// The scopes to ask for.
    pub scopes: Vec<String>,
    /// The redirect listener's port.
    pub redirect_port: Option<u16>,
    /// Whether the client-credentials grant is used.
    pub client_credentials: bool,
}

impl std::fmt::Debug for OAuthSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthSettings")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[hidden]"),
            )
            .field("scopes", &self.scopes)
            .field("redirect_port", &self.redirect_port)
            .field("client_credentials", &self.client_credentials)
            .finish()
    }
}

/// A server entry with its references resolved: what to connect to.
#[derive(Debug, Clone, PartialEq)]
pub enum McpEndpoint {
    /// Spawn a program and talk over its stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: BTreeMap<String, String>,
        /// Its working directory.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
        /// Its OAuth settings, if any.
        oauth: Option<OAuthSettings>,
    },
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read MCP config {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The text is not an `mcpServers` configuration.
    #[error("invalid MCP config: {0}")]
    Json(#[from] serde_json::Error),
    /// An entry has neither or both of `command` and `url`, or a bad value.
    #[error("MCP server `{server}`: {reason}")]
    Invalid {
        /// The entry.
        server: String,
        /// What is wrong.
        reason: String,
    },
    /// A `${NAME}` reference to a variable that is not set.
    #[error("MCP server `{server}`: `{field}` refers to ${{{variable}}}, which is not set")]
    MissingVariable {
        /// The entry.
        server: String,
        /// Where the reference is.
        field: String,
        /// The variable.
        variable: String,
    },
}

impl McpConfig {
    /// Reads the `mcpServers` JSON text.
    ///
    /// ```
    /// use lc_agent_deepagent::mcp::McpConfig;
    ///
    /// let config = McpConfig::from_json(r#"{"mcpServers": {
    ///     "time": {"command": "mcp-server-time"},
    ///     "web": {"url": "http://127.0.0.1:3001/mcp"}}}"#).unwrap();
    /// assert_eq!(config.mcp_servers.len(), 2);
    /// assert!(McpConfig::from_json(r#"{"mcpServers": {"x": {}}}"#).is_err());
    /// ```
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        let config: Self = serde_json::from_str(text)?;
        config.validate()?;
        Ok(config)
    }

    /// Reads an `mcpServers` JSON file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_json(&text)
    }

    /// Checks every entry's shape (references are resolved later, when a
    /// server starts).
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        for (name, server) in &self.mcp_servers {
            server.check(name)?;
        }
        Ok(())
    }

    /// Adds the servers of `other`; an entry of the same name is replaced.
    pub fn merge(&mut self, other: McpConfig) {
        self.mcp_servers.extend(other.mcp_servers);
    }

    /// Whether there are no servers.
    pub fn is_empty(&self) -> bool {
        self.mcp_servers.is_empty()
    }
}

impl McpServerConfig {
    /// A server spawned as `command args...`.
    pub fn stdio(
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            command: Some(command.into()),
            args: args.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// A streamable HTTP server at `url`.
    pub fn http(url: impl Into<String>) -> Self {
        Self {
            url: Some(url.into()),
            ..Self::default()
        }
    }

    /// Adds an environment variable for the spawned program.
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }

    /// Adds an HTTP header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// Sets the call timeout in seconds.
    pub fn with_timeout(mut self, seconds: f64) -> Self {
        self.timeout = Some(seconds);
        self
    }

    /// The call timeout.
    #[cfg(feature = "mcp")]
    pub(crate) fn call_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs_f64(self.timeout.unwrap_or(DEFAULT_CALL_TIMEOUT_SECS))
    }

    /// How long starting the server and listing its tools may take: the
    /// call timeout, at least [`MIN_CONNECT_TIMEOUT_SECS`].
    #[cfg(feature = "mcp")]
    pub(crate) fn connect_timeout(&self) -> std::time::Duration {
        self.call_timeout()
            .max(std::time::Duration::from_secs_f64(MIN_CONNECT_TIMEOUT_SECS))
    }

    fn check(&self, name: &str) -> Result<(), ConfigError> {
        let invalid = |reason: &str| ConfigError::Invalid {
            server: name.to_string(),
            reason: reason.to_string(),
        };
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => return Err(invalid("has both `command` and `url`; give one")),
            (None, None) => return Err(invalid("needs `command` (stdio) or `url` (HTTP)")),
            (Some(c), None) if c.trim().is_empty() => return Err(invalid("`command` is empty")),
            _ => {}
        }
        if self.sandbox.is_some() && self.url.is_some() {
            return Err(invalid("`sandbox` is for servers started with `command`"));
        }
        if let Some(t) = self.timeout
            && !(t.is_finite() && t > 0.0)
        {
            return Err(invalid("`timeout` must be a positive number of seconds"));
        }
        if let Some(oauth) = &self.oauth {
            if self.url.is_none() {
                return Err(invalid("`oauth` is for HTTP servers (`url`)"));
            }
            match oauth.grant.as_deref() {
                None | Some("authorization_code") => {}
                Some("client_credentials") => {
                    if oauth.client_id.is_none() || oauth.client_secret.is_none() {
                        return Err(invalid(
                            "`oauth.grant` \"client_credentials\" needs `clientId` and `clientSecret`",
                        ));
                    }
                }
                Some(other) => {
                    return Err(invalid(&format!(
                        "`oauth.grant` is \"authorization_code\" or \"client_credentials\", not {other:?}"
                    )))
                }
            }
            if oauth.client_secret.is_some() && oauth.client_id.is_none() {
                return Err(invalid("`oauth.clientSecret` needs `oauth.clientId`"));
            }
        }
        Ok(())
    }

    /// What to connect to, with every `${NAME}` replaced from the
    /// environment.
    ///
    /// ```standalone_crate
    /// use lc_agent_deepagent::mcp::{McpEndpoint, McpServerConfig};
    ///
    /// // SAFETY: this example is a process of its own (`standalone_crate`);
    /// // no other thread reads the environment.
    /// unsafe { std::env::set_var("DOC_MCP_TOKEN", "s3cret") };
    /// let server = McpServerConfig::http("http://127.0.0.1:9/mcp")
    ///     .with_header("Authorization", "Bearer ${DOC_MCP_TOKEN}");
    /// let McpEndpoint::Http { headers, .. } = server.resolve("web").unwrap() else { panic!() };
    /// assert_eq!(headers["Authorization"], "Bearer s3cret");
    /// ```
    pub fn resolve(&self, name: &str) -> Result<McpEndpoint, ConfigError> {
        self.check(name)?;
        let expand = |field: &str, value: &str| expand(name, field, value);
        let map = |field: &str, values: &BTreeMap<String, String>| {
            values
                .iter()
                .map(|(k, v)| Ok((k.clone(), expand(&format!("{field}.{k}"), v)?)))
                .collect::<Result<BTreeMap<_, _>, ConfigError>>()
        };
        match (&self.command, &self.url) {
            (Some(command), _) => Ok(McpEndpoint::Stdio {
                command: expand("command", command)?,
                args: self
                    .args
                    .iter()
                    .map(|a| expand("args", a))
                    .collect::<Result<_, _>>()?,
                env: map("env", &self.env)?,
                cwd: self.cwd.clone(),
            }),
            (None, Some(url)) => Ok(McpEndpoint::Http {
                url: expand("url", url)?,
                headers: map("headers", &self.headers)?,
                oauth: self
                    .oauth
                    .as_ref()
                    .map(|o| {
                        let opt = |field: &str, v: &Option<String>| {
                            v.as_deref().map(|v| expand(field, v)).transpose()
                        };
                        Ok::<_, ConfigError>(OAuthSettings {
                            client_id: opt("oauth.clientId", &o.client_id)?,
                            client_secret: opt("oauth.clientSecret", &o.client_secret)?,
                            scopes: o.scopes.clone(),
                            redirect_port: o.redirect_port,
                            client_credentials: o.grant.as_deref() == Some("client_credentials"),
                        })
                    })
                    .transpose()?,
            }),
            (None, None) => Err(ConfigError::Invalid {
                server: name.to_string(),
                reason: "needs `command` (stdio) or `url` (HTTP)".to_string(),
            }),
        }
    }
}

/// `env` as a map of values, or a list of names passed by reference.
fn env_map<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Env {
        Map(BTreeMap<String, String>),
        Names(Vec<String>),
    }
    Ok(match Env::deserialize(d)? {
        Env::Map(map) => map,
        Env::Names(names) => names
            .into_iter()
            .map(|name| {
                let reference = format!("${{{name}}}");
                (name, reference)
            })
            .collect(),
    })
}

static REFERENCE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}").ok());

/// Replaces each `${NAME}` in `value` with the variable's value.
fn expand(server: &str, field: &str, value: &str) -> Result<String, ConfigError> {
    let Some(re) = REFERENCE.as_ref() else {
        return Ok(value.to_string());
    };
    let mut out = String::with_capacity(value.len());
    let mut last = 0;
    for caps in re.captures_iter(value) {
        let (Some(whole), Some(var)) = (caps.get(0), caps.get(1)) else {
            continue;
        };
        out.push_str(&value[last..whole.start()]);
        let resolved = std::env::var(var.as_str()).map_err(|_| ConfigError::MissingVariable {
            server: server.to_string(),
            field: field.to_string(),
            variable: var.as_str().to_string(),
        })?;
        out.push_str(&resolved);
        last = whole.end();
    }
    out.push_str(&value[last..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn desktop_format_reads_and_round_trips() {
        let text = r#"{"mcpServers": {
            "a": {"command": "srv", "args": ["-v"], "env": {"K": "v"}},
            "b": {"url": "http://127.0.0.1:1/mcp", "headers": {"X": "y"}, "timeout": 2.5}}}"#;
        let config = McpConfig::from_json(text).unwrap();
        let names: Vec<_> = config.mcp_servers.keys().cloned().collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(config.mcp_servers["b"].call_timeout().as_secs_f64(), 2.5);
        let again = serde_json::to_string(&config).unwrap();
        assert_eq!(McpConfig::from_json(&again).unwrap(), config);
    }

    #[test]
    fn env_is_a_map_or_names_and_sandbox_is_for_stdio() {
        let text = r#"{"mcpServers": {
            "a": {"command": "srv", "env": ["GITHUB_TOKEN"], "sandbox": "full"}}}"#;
        let config = McpConfig::from_json(text).unwrap();
        let a = &config.mcp_servers["a"];
        assert_eq!(a.env["GITHUB_TOKEN"], "${GITHUB_TOKEN}");
        assert_eq!(a.sandbox, Some(SandboxMode::Full));
        let http = r#"{"mcpServers": {"w": {"url": "http://h/mcp", "sandbox": "full"}}}"#;
        assert_eq!(
            McpConfig::from_json(http).unwrap_err().to_string(),
            "MCP server `w`: `sandbox` is for servers started with `command`"
        );
    }

    #[test]
    fn bad_entries_say_which_and_why() {
        let both = r#"{"mcpServers": {"x": {"command": "a", "url": "http://h"}}}"#;
        assert_eq!(
            McpConfig::from_json(both).unwrap_err().to_string(),
            "MCP server `x`: has both `command` and `url`; give one"
        );
        let timeout = r#"{"mcpServers": {"x": {"command": "a", "timeout": -1}}}"#;
        assert!(McpConfig::from_json(timeout)
            .unwrap_err()
            .to_string()
            .contains("timeout"));
        assert!(McpConfig::from_json("[1]").is_err());
    }

    #[test]
    fn references_resolve_or_name_the_missing_variable() {
        // SAFETY: a variable only this test reads, set before the model that reads it is built.
        unsafe { std::env::set_var("LC_MCP_TEST_VALUE", "42") };
        let server = McpServerConfig::stdio("srv", ["--n=${LC_MCP_TEST_VALUE}"])
            .with_env("A", "${LC_MCP_TEST_VALUE}-$x-${LC_MCP_TEST_VALUE}");
        let McpEndpoint::Stdio { args, env, .. } = server.resolve("s").unwrap() else {
            panic!("stdio expected")
        };
        assert_eq!(args, ["--n=42"]);
        assert_eq!(env["A"], "42-$x-42");
        let missing = McpServerConfig::stdio("srv", ["${LC_MCP_TEST_NOT_SET}"]);
        assert_eq!(
            missing.resolve("s").unwrap_err().to_string(),
            "MCP server `s`: `args` refers to ${LC_MCP_TEST_NOT_SET}, which is not set"
        );
    }

    #[test]
    fn a_saved_agent_spec_keeps_references_never_secrets() {
        use crate::spec::AgentSpec;
        // SAFETY: a variable only this test reads, set before the model that reads it is built.
        unsafe { std::env::set_var("LC_MCP_TEST_SECRET", "hunter2") };
        let spec = AgentSpec::from_toml(
            "[models.main]\nmodel = \"m\"\n\
             [mcp_servers.web]\nurl = \"http://127.0.0.1:1/mcp\"\n\
             headers = { Authorization = \"Bearer ${LC_MCP_TEST_SECRET}\" }\n",
        )
        .unwrap();
        let net = lc_agent::RunnableNetwork::new();
        spec.store_in(&net).unwrap();
        let saved = net.to_json().unwrap();
        assert!(saved.contains("Bearer ${LC_MCP_TEST_SECRET}"));
        assert!(!saved.contains("hunter2"));
        let loaded = lc_agent::RunnableNetwork::from_json(&saved).unwrap();
        let again = AgentSpec::from_network(&loaded).unwrap().unwrap();
        assert_eq!(again, spec);
        let config = again.mcp_config().unwrap();
        let McpEndpoint::Http { headers, .. } = config.mcp_servers["web"].resolve("web").unwrap()
        else {
            panic!("http expected")
        };
        assert_eq!(headers["Authorization"], "Bearer hunter2");
    }
}

//! [`RedisConnector`]: where Redis is — one server (`redis://`, `rediss://`,
//! `redis+unix://`) or a Redis Cluster — and the one connection every
//! Redis path of the workspace uses ([`RedisNetworkList`](super::RedisNetworkList),
//! and `RedisStore` in `lc-agent-deepagent`).
//!
//! ```text
//!  RedisConnector (clones share it)
//!    ├─ target: one server ── Client ──────── ConnectionManager ─┐
//!    │          (TLS: rustls, optional CA)                       ├─ RedisConnection
//!    │          a Cluster ── ClusterClient ── ClusterConnection ─┘  (one aio::ConnectionLike)
//!    └─ run(what, op): made on first use ▸ op ▸ a dropped connection is
//!       retried once ▸ all within the deadline ▸ ListError::Unavailable
//! ```
//!
//! Everything goes through the `redis` crate: the operations are written
//! once against [`redis::aio::ConnectionLike`], which [`RedisConnection`]
//! implements for both kinds of target, so a single server, a TLS server
//! and a Cluster share the code. The single-server connection is a
//! [`ConnectionManager`] (a multiplexed connection that reconnects after
//! a failure); the Cluster connection routes each request to the node
//! that owns its keys' slot and follows the cluster's changes by itself.
//! A connection is made on first use and kept only once it worked, so a
//! server that is down at first (or a wrong password) is tried again by
//! the next operation.
//!
//! Every operation has a deadline (default 5 s, connecting included):
//! while Redis is down it fails with [`ListError::Unavailable`] instead of
//! hanging. An operation that meets a dropped connection (a restart) is
//! retried once, on the connection the manager makes meanwhile.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use ::redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use ::redis::cluster::{ClusterClient, ClusterClientBuilder};
use ::redis::cluster_async::ClusterConnection;
use ::redis::{
    Client, Cmd, ConnectionAddr, ErrorKind, IntoConnectionInfo, Pipeline, RedisError, RedisFuture,
    TlsCertificates, Value,
};

use crate::list::{ListError, ListResult};

/// The URL used unless the builder or `LC_AGENT_REDIS_URL` says otherwise.
pub(crate) const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379";
/// The deadline of one operation unless the builder says otherwise.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Where Redis is, how long an operation may take, and the connection to
/// it, made on first use and shared by clones.
///
/// ```no_run
/// use lc_agent::RedisConnector;
///
/// # async fn demo() -> Result<(), lc_agent::ListError> {
/// // One server over TLS, trusting a private CA.
/// let ca = std::fs::read("ca.pem")?;
/// let tls = RedisConnector::builder()
///     .url("rediss://redis.internal:6380")
///     .tls_root_certificates(ca)
///     .build()?;
/// // A Redis Cluster, from any of its nodes.
/// let cluster = RedisConnector::builder()
///     .cluster(["redis://10.0.0.1:7000", "redis://10.0.0.2:7000"])
///     .build()?;
/// let pong: String = cluster
///     .run("ping", |mut conn| async move { redis::cmd("PING").query_async(&mut conn).await })
///     .await?;
/// # let _ = (tls, pong);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisConnector {
    inner: Arc<Inner>,
}

struct Inner {
    target: Target,
    /// For messages: the address(es), never a password.
    describe: String,
    timeout: Duration,
    conn: tokio::sync::Mutex<Option<RedisConnection>>,
}

// One per connector, behind its Arc: the size does not matter.
#[allow(clippy::large_enum_variant)]
enum Target {
    Server(Client),
    Cluster(ClusterClient),
}

impl std::fmt::Debug for RedisConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisConnector")
            .field("target", &self.inner.describe)
            .field("timeout", &self.inner.timeout)
            .finish_non_exhaustive()
    }
}

/// Configures a [`RedisConnector`].
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct RedisConnectorBuilder {
    url: Option<String>,
    cluster: Vec<String>,
    root_certificates: Option<Vec<u8>>,
    timeout: Option<Duration>,
}

impl RedisConnectorBuilder {
    /// One server: `redis://[:password@]host:port[/db]`, `rediss://...`
    /// (TLS) or `redis+unix:///path/to/socket[?db=N]` (default:
    /// `LC_AGENT_REDIS_URL`, else `redis://127.0.0.1:6379`).
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self
    }

    /// A Redis Cluster, reached through any of these nodes (`redis://` or,
    /// for TLS, `rediss://` URLs; the password of the first one is used
    /// for every node). Takes precedence over [`url`](Self::url).
    pub fn cluster<S: Into<String>>(mut self, nodes: impl IntoIterator<Item = S>) -> Self {
        self.cluster = nodes.into_iter().map(Into::into).collect();
        self
    }

    /// Trust these PEM certificates (a private CA) for `rediss://`
    /// instead of the system's roots.
    pub fn tls_root_certificates(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.root_certificates = Some(pem.into());
        self
    }

    /// The deadline of one operation, connecting included (default
    /// 5 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Checks the configuration; connects on first use.
    pub fn build(self) -> ListResult<RedisConnector> {
        let certificates = self.root_certificates.map(|pem| TlsCertificates {
            client_tls: None,
            root_cert: Some(pem),
        });
        let (target, describe) = if self.cluster.is_empty() {
            let url = match self.url {
                Some(u) => u,
                None => std::env::var("LC_AGENT_REDIS_URL")
                    .ok()
                    .filter(|u| !u.is_empty())
                    .unwrap_or_else(|| DEFAULT_REDIS_URL.to_string()),
            };
            let bad = |e: RedisError| ListError::Config(format!("redis url `{url}`: {e}"));
            let info = url.as_str().into_connection_info().map_err(bad)?;
            let describe = format!("redis at {}", address(info.addr()));
            let tls = matches!(info.addr(), ConnectionAddr::TcpTls { .. });
            if tls {
                install_tls_provider();
            }
            let client = match certificates {
                Some(certs) if tls => Client::build_with_tls(info, certs).map_err(bad)?,
                Some(_) => {
                    return Err(ListError::Config(format!(
                        "redis url `{url}`: TLS root certificates need a rediss:// URL"
                    )))
                }
                None => Client::open(info).map_err(bad)?,
            };
            (Target::Server(client), describe)
        } else {
            let nodes = self.cluster;
            let bad = |e: RedisError| {
                ListError::Config(format!("redis cluster `{}`: {e}", nodes.join(",")))
            };
            let mut addresses = Vec::with_capacity(nodes.len());
            for node in &nodes {
                let info = node.as_str().into_connection_info().map_err(bad)?;
                if matches!(info.addr(), ConnectionAddr::TcpTls { .. }) {
                    install_tls_provider();
                }
                addresses.push(address(info.addr()));
            }
            let describe = format!("redis cluster at {}", addresses.join(","));
            let timeout = self.timeout.unwrap_or(DEFAULT_TIMEOUT);
            let mut builder = ClusterClientBuilder::new(nodes.iter().map(String::as_str))
                .connection_timeout(timeout)
                .response_timeout(timeout);
            if let Some(certs) = certificates {
                builder = builder.certs(certs);
            }
            (Target::Cluster(builder.build().map_err(bad)?), describe)
        };
        Ok(RedisConnector {
            inner: Arc::new(Inner {
                target,
                describe,
                timeout: self.timeout.unwrap_or(DEFAULT_TIMEOUT),
                conn: tokio::sync::Mutex::new(None),
            }),
        })
    }
}

/// `scheme://address` of a connection, without credentials.
fn address(addr: &ConnectionAddr) -> String {
    let scheme = match addr {
        ConnectionAddr::TcpTls { .. } => "rediss",
        ConnectionAddr::Unix(_) => "redis+unix",
        _ => "redis",
    };
    format!("{scheme}://{addr}")
}

/// rustls needs a process-wide crypto provider: use ring (the one the rest
/// of the crate already links) unless the application installed one.
fn install_tls_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race against another installer is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// Whether an error means the connection (not the command) failed.
fn is_connection_error(e: &RedisError) -> bool {
    e.is_connection_dropped() || e.is_io_error() || e.is_connection_refusal() || e.is_timeout()
}

impl RedisConnector {
    /// Starts configuring a connector.
    pub fn builder() -> RedisConnectorBuilder {
        RedisConnectorBuilder::default()
    }

    /// A connector to one server at `url` with the default deadline.
    pub fn new(url: impl Into<String>) -> ListResult<Self> {
        Self::builder().url(url).build()
    }

    /// Whether the target is a Redis Cluster.
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self.inner.target, Target::Cluster(_))
    }

    /// The target, for messages (`redis at rediss://host:port`, `redis
    /// cluster at ...`), never with a password.
    pub fn describe(&self) -> &str {
        &self.inner.describe
    }

    /// The shared connection, made now if there is none yet (within the
    /// deadline).
    pub async fn connection(&self) -> ListResult<RedisConnection> {
        self.within_deadline("connect", self.connect()).await
    }

    async fn connect(&self) -> Result<RedisConnection, RedisError> {
        let mut slot = self.inner.conn.lock().await;
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let timeout = self.inner.timeout;
        let conn = match &self.inner.target {
            Target::Server(client) => {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(timeout))
                    .set_response_timeout(Some(timeout))
                    .set_number_of_retries(1)
                    .set_max_delay(Duration::from_millis(100));
                let manager = ConnectionManager::new_with_config(client.clone(), config).await?;
                RedisConnection(Kind::Server(manager))
            }
            Target::Cluster(client) => {
                RedisConnection(Kind::Cluster(client.get_async_connection().await?))
            }
        };
        *slot = Some(conn.clone());
        Ok(conn)
    }

    /// Runs one operation on the shared connection within the deadline; an
    /// operation that meets a dropped connection runs once more (the
    /// connection reconnects meanwhile). Failures become
    /// [`ListError::Unavailable`], saying `what` was tried.
    pub async fn run<T, F, Fut>(&self, what: &str, op: F) -> ListResult<T>
    where
        F: Fn(RedisConnection) -> Fut,
        Fut: Future<Output = Result<T, RedisError>>,
    {
        self.within_deadline(what, async {
            let mut last = None;
            for _ in 0..2 {
                let result = match self.connect().await {
                    Ok(conn) => op(conn).await,
                    Err(e) => Err(e),
                };
                match result {
                    Err(e) if is_connection_error(&e) => {
                        tracing::debug!(error = %e, what, "redis connection error; retrying once");
                        last = Some(e);
                    }
                    other => return other,
                }
            }
            Err(last.unwrap_or_else(|| RedisError::from((ErrorKind::Io, "no connection"))))
        })
        .await
    }

    /// Bounds an operation by the deadline and turns Redis failures into
    /// [`ListError::Unavailable`].
    async fn within_deadline<T>(
        &self,
        what: &str,
        attempt: impl Future<Output = Result<T, RedisError>>,
    ) -> ListResult<T> {
        let inner = &self.inner;
        match tokio::time::timeout(inner.timeout, attempt).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                let failed = if is_connection_error(&e) {
                    ""
                } else {
                    " failed"
                };
                Err(ListError::Unavailable {
                    reason: format!("{} ({what}){failed}: {e}", inner.describe),
                    source: Some(Box::new(e)),
                })
            }
            Err(_) => Err(ListError::Unavailable {
                reason: format!(
                    "{} ({what}): no answer within {:?}",
                    inner.describe, inner.timeout
                ),
                source: None,
            }),
        }
    }
}

/// A connection to one server or to a Cluster: one
/// [`redis::aio::ConnectionLike`] for both, cheap to clone (clones share
/// the underlying multiplexed connections).
///
/// On a Cluster every request goes to the node that owns the slot of its
/// keys; a pipeline goes whole to the node of its first keyed command, so
/// all the keys of one pipeline must share a slot (a hash tag).
#[derive(Clone)]
pub struct RedisConnection(Kind);

#[derive(Clone)]
enum Kind {
    Server(ConnectionManager),
    Cluster(ClusterConnection),
}

impl std::fmt::Debug for RedisConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Kind::Server(_) => "RedisConnection::Server",
            Kind::Cluster(_) => "RedisConnection::Cluster",
        })
    }
}

impl ConnectionLike for RedisConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match &mut self.0 {
            Kind::Server(c) => c.req_packed_command(cmd),
            Kind::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match &mut self.0 {
            Kind::Server(c) => c.req_packed_commands(pipeline, offset, count),
            Kind::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match &self.0 {
            Kind::Server(c) => c.get_db(),
            Kind::Cluster(c) => c.get_db(),
        }
    }
}

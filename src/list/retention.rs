//! [`RetentionList`]: a session list whose sessions expire a while after
//! their latest save, and whose sessions keep the file contents of only
//! their last turns.
//!
//! ```text
//!  load(id)  ─▶ inner.load ─▶ saved longer ago than the retention? ─▶ delete, NotFound
//!  list(..)  ─▶ (at most once a minute) every expired session of the user is deleted
//!            ─▶ inner.list, without the expired ones
//!  save      ─▶ (snapshot turns set) contents older rewinds need dropped
//!            ─▶ inner.save (a save renews the session)
//! ```
//!
//! The age is the session's `updated_at` (its latest save). An expired
//! session is deleted like any other (a delete is final: a copy still
//! running elsewhere cannot bring it back). In Redis the user's keys also
//! carry a TTL of the same length ([`ListConfig::open`](super::ListConfig)
//! with [`Lists::retention`](super::Lists::retention)), so the data of a
//! user nobody serves any more goes away by itself.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use uuid::Uuid;

use super::{ListError, ListPage, ListQuery, ListResult, NetworkList, SessionInfo, UPDATED_AT_KEY};
use crate::network::snapshots::SnapshotsExt;
use crate::network::RunnableNetwork;

/// How often a listing looks for expired sessions to delete.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// A [`NetworkList`] whose sessions expire `retention` after their latest
/// save (`list/retention.rs`'s module docs say how).
pub(crate) struct RetentionList {
    inner: Arc<dyn NetworkList>,
    retention: Option<Duration>,
    snapshot_turns: Option<usize>,
    last_prune: Mutex<Option<Instant>>,
}

impl RetentionList {
    /// `inner`, with sessions kept for `retention` after their latest save
    /// (`None`: kept), each keeping the file contents rewinds to its last
    /// `snapshot_turns` turns need (`None`: all of them).
    pub(crate) fn new(
        inner: Arc<dyn NetworkList>,
        retention: Option<Duration>,
        snapshot_turns: Option<usize>,
    ) -> Self {
        Self {
            inner,
            retention,
            snapshot_turns,
            last_prune: Mutex::new(None),
        }
    }

    fn expired_at(&self, updated: DateTime<Utc>) -> bool {
        let Some(retention) = self.retention else {
            return false;
        };
        let age = Utc::now().signed_duration_since(updated);
        age.to_std().is_ok_and(|age| age > retention)
    }

    fn expired_net(&self, net: &RunnableNetwork) -> bool {
        net.metadata_value(UPDATED_AT_KEY)
            .and_then(|v| v.as_str().map(str::to_string))
            .and_then(|t| DateTime::parse_from_rfc3339(&t).ok())
            .is_some_and(|t| self.expired_at(t.with_timezone(&Utc)))
    }

    /// Deletes every expired session of the user; how many.
    pub(crate) async fn prune(&self) -> ListResult<usize> {
        *self.last_prune.lock() = Some(Instant::now());
        let mut removed = 0;
        for info in self.inner.list_everything().await?.into_iter().flatten() {
            if self.expired_at(info.updated_at) && self.inner.delete(info.id).await? {
                tracing::info!(user = %info.user, session = %info.id, updated_at = %info.updated_at, "removed an expired session");
                removed += 1;
            }
        }
        Ok(removed)
    }

    async fn prune_now_and_then(&self) -> ListResult<()> {
        if self.retention.is_none() {
            return Ok(());
        }
        let due = self
            .last_prune
            .lock()
            .is_none_or(|t| t.elapsed() >= PRUNE_EVERY);
        if due {
            self.prune().await?;
        }
        Ok(())
    }
}

#[async_trait]
impl NetworkList for RetentionList {
    fn user(&self) -> &str {
        self.inner.user()
    }

    async fn save(&self, network: &RunnableNetwork) -> ListResult<SessionInfo> {
        if let Some(turns) = self.snapshot_turns {
            network.trim_file_snapshots(turns);
        }
        self.inner.save(network).await
    }

    async fn stored_revision(&self, id: Uuid) -> ListResult<Option<u64>> {
        self.inner.stored_revision(id).await
    }

    async fn load(&self, id: Uuid) -> ListResult<RunnableNetwork> {
        let net = self.inner.load(id).await?;
        if self.expired_net(&net) {
            self.inner.delete(id).await?;
            return Err(ListError::NotFound { id });
        }
        Ok(net)
    }

    async fn load_json(&self, id: Uuid) -> ListResult<String> {
        self.load(id).await?;
        self.inner.load_json(id).await
    }

    async fn delete(&self, id: Uuid) -> ListResult<bool> {
        self.inner.delete(id).await
    }

    async fn list(&self, query: &ListQuery) -> ListResult<ListPage> {
        if query.user.is_none() {
            self.prune_now_and_then().await?;
        }
        let mut page = self.inner.list(query).await?;
        let before = page.sessions.len();
        page.sessions.retain(|s| !self.expired_at(s.updated_at));
        page.total = page.total.saturating_sub(before - page.sessions.len());
        Ok(page)
    }
}

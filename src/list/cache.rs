//! [`CachedNetworkList`]: a session list that keeps the networks it saved
//! (or loaded), parsed, so the next load of an unchanged session is a
//! revision check instead of a read and a parse.
//!
//! ```text
//!  save(net)  ─▶ inner.save ─▶ ok: keep (user, id) -> (revision, net)   failed: forget it
//!  load(id)   ─▶ kept, nobody else holds it, inner.stored_revision(id) == its revision?
//!                 yes ─▶ hand it out (runtime reset: as freshly loaded), no longer kept
//!                 no  ─▶ inner.load(id)  (a save elsewhere, a delete — tombstones too — or
//!                                         a copy still in use)
//!  delete(id) ─▶ forget it ─▶ inner.delete
//! ```
//!
//! A kept network is handed to one caller at a time (it leaves the cache
//! on load and comes back on that caller's next successful save), so no
//! two requests ever share one, and a copy changed but never saved (a
//! refused decision, a failed run) is never handed out as the stored one.
//! The revision check sees saves and deletes made by any other process or
//! server on the same store. The cache is shared by every user's list of
//! one [`Lists`](super::Lists) and holds at most `capacity` networks
//! (the least recently saved go first).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;
use serde_json::Value;
use uuid::Uuid;

use super::{ListPage, ListQuery, ListResult, NetworkList, SessionInfo};
use crate::network::RunnableNetwork;

/// The parsed networks of a [`Lists`](super::Lists), shared by its users'
/// lists. Cheap to clone.
#[derive(Clone, Default)]
pub struct SessionCache(Arc<Mutex<Entries>>);

#[derive(Default)]
struct Entries {
    capacity: usize,
    map: HashMap<(String, Uuid), (u64, RunnableNetwork)>,
    /// Keys, least recently kept first (may hold stale keys).
    order: VecDeque<(String, Uuid)>,
    hits: u64,
    misses: u64,
}

impl std::fmt::Debug for SessionCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = self.0.lock();
        f.debug_struct("SessionCache")
            .field("capacity", &e.capacity)
            .field("kept", &e.map.len())
            .field("hits", &e.hits)
            .field("misses", &e.misses)
            .finish()
    }
}

impl SessionCache {
    /// A cache of at most `capacity` networks (0 keeps none).
    pub(crate) fn new(capacity: usize) -> Self {
        Self(Arc::new(Mutex::new(Entries {
            capacity,
            ..Entries::default()
        })))
    }

    /// Loads served from the cache and loads that read the store.
    pub fn hits_and_misses(&self) -> (u64, u64) {
        let e = self.0.lock();
        (e.hits, e.misses)
    }

    fn keep(&self, key: (String, Uuid), revision: u64, net: RunnableNetwork) {
        let mut e = self.0.lock();
        if e.capacity == 0 {
            return;
        }
        e.map.insert(key.clone(), (revision, net));
        e.order.push_back(key);
        while e.map.len() > e.capacity {
            let Some(old) = e.order.pop_front() else {
                break;
            };
            e.map.remove(&old);
        }
        if e.order.len() > e.capacity.saturating_mul(4) + 16 {
            let Entries { map, order, .. } = &mut *e;
            let mut seen = std::collections::HashSet::new();
            let kept: Vec<_> = order
                .iter()
                .rev()
                .filter(|k| map.contains_key(*k) && seen.insert((*k).clone()))
                .cloned()
                .collect();
            *order = kept.into_iter().rev().collect();
        }
    }

    fn take(&self, key: &(String, Uuid)) -> Option<(u64, RunnableNetwork)> {
        self.0.lock().map.remove(key)
    }

    fn forget(&self, key: &(String, Uuid)) {
        self.0.lock().map.remove(key);
    }

    fn count(&self, hit: bool) {
        let mut e = self.0.lock();
        if hit {
            e.hits += 1;
        } else {
            e.misses += 1;
        }
    }
}

/// A [`NetworkList`] that keeps parsed networks in a [`SessionCache`]
/// (how it stays right: `list/cache.rs`'s module docs).
pub(crate) struct CachedNetworkList {
    inner: Arc<dyn NetworkList>,
    cache: SessionCache,
}

impl CachedNetworkList {
    /// `inner`, with its networks kept in `cache`.
    pub(crate) fn new(inner: Arc<dyn NetworkList>, cache: SessionCache) -> Self {
        Self { inner, cache }
    }

    fn key(&self, id: Uuid) -> (String, Uuid) {
        (self.inner.user().to_string(), id)
    }
}

#[async_trait]
impl NetworkList for CachedNetworkList {
    fn user(&self) -> &str {
        self.inner.user()
    }

    async fn save(&self, network: &RunnableNetwork) -> ListResult<SessionInfo> {
        let key = self.key(network.id());
        match self.inner.save(network).await {
            Ok(info) => {
                self.cache.keep(key, info.revision, network.clone());
                Ok(info)
            }
            Err(e) => {
                self.cache.forget(&key);
                Err(e)
            }
        }
    }

    async fn stored_revision(&self, id: Uuid) -> ListResult<Option<u64>> {
        self.inner.stored_revision(id).await
    }

    async fn load(&self, id: Uuid) -> ListResult<RunnableNetwork> {
        let key = self.key(id);
        if let Some((revision, net)) = self.cache.take(&key) {
            // Still held elsewhere (a stream still reading it): not ours
            // to hand out.
            if net.is_unshared() {
                drop(key);
                if self.inner.stored_revision(id).await? == Some(revision) {
                    net.reset_runtime();
                    self.cache.count(true);
                    return Ok(net);
                }
            }
        }
        self.cache.count(false);
        self.inner.load(id).await
    }

    async fn load_json(&self, id: Uuid) -> ListResult<String> {
        self.inner.load_json(id).await
    }

    async fn delete(&self, id: Uuid) -> ListResult<bool> {
        self.cache.forget(&self.key(id));
        self.inner.delete(id).await
    }

    async fn list(&self, query: &ListQuery) -> ListResult<ListPage> {
        self.inner.list(query).await
    }

    async fn find(&self, key: &str, value: &Value) -> ListResult<Vec<SessionInfo>> {
        self.inner.find(key, value).await
    }
}

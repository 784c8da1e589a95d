//! `StoreBackend` writes are compare-and-set: two backends over one
//! in-memory store (two app servers sharing a store) editing one file at
//! once lose no update. The same check on Redis is in `redis_store.rs`.
#![allow(clippy::unwrap_used, unreachable_pub)]

mod common;

use std::sync::Arc;

use lc_agent_filesystem::{Backend, InMemoryStore, StoreBackend};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_editors_on_one_in_memory_store_lose_nothing() {
    let store = InMemoryStore::new();
    let a: Arc<dyn Backend> = Arc::new(StoreBackend::new(store.clone(), ["user-1"]));
    let b: Arc<dyn Backend> = Arc::new(StoreBackend::new(store, ["user-1"]));
    let rounds = 300;
    let lines = common::two_editors(a, b, rounds).await;
    common::assert_no_lost_update(&lines, rounds);
}

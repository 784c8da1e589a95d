//! `save_patiently`: a save whose write landed but whose reply was lost
//! (a Redis stop between the two) is not a conflict with itself on the
//! next try; a real conflict stays one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use lc_agent::{
    revision_of, save_patiently, HumanNode, JsonNetworkList, ListError, ListPage, ListQuery,
    NetworkList, RunnableNetwork, SessionInfo,
};
use uuid::Uuid;

type ListResult<T> = Result<T, ListError>;

/// A list whose next `down` saves fail unwritten, and whose next `lost`
/// saves are written but answered `Unavailable`.
struct LostReplies {
    inner: JsonNetworkList,
    down: AtomicUsize,
    lost: AtomicUsize,
}

fn take(n: &AtomicUsize) -> bool {
    n.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

#[async_trait]
impl NetworkList for LostReplies {
    fn user(&self) -> &str {
        self.inner.user()
    }
    async fn save(&self, network: &RunnableNetwork) -> ListResult<SessionInfo> {
        if take(&self.down) {
            return Err(ListError::Unavailable {
                reason: "connection refused".into(),
                source: None,
            });
        }
        let saved = self.inner.save(network).await?;
        if take(&self.lost) {
            // The store wrote it; the reply never came back, and the
            // caller's copy stays as it was (as a failed save leaves it).
            network.set_metadata("revision", serde_json::json!(saved.revision - 1));
            return Err(ListError::Unavailable {
                reason: "connection reset (the reply was lost)".into(),
                source: None,
            });
        }
        Ok(saved)
    }
    async fn stored_revision(&self, id: Uuid) -> ListResult<Option<u64>> {
        self.inner.stored_revision(id).await
    }
    async fn load(&self, id: Uuid) -> ListResult<RunnableNetwork> {
        self.inner.load(id).await
    }
    async fn load_json(&self, id: Uuid) -> ListResult<String> {
        self.inner.load_json(id).await
    }
    async fn delete(&self, id: Uuid) -> ListResult<bool> {
        self.inner.delete(id).await
    }
    async fn list(&self, query: &ListQuery) -> ListResult<ListPage> {
        self.inner.list(query).await
    }
}

fn lists(dir: &std::path::Path, lost: usize) -> Arc<LostReplies> {
    Arc::new(LostReplies {
        inner: JsonNetworkList::new(dir).with_user("alice").unwrap(),
        down: AtomicUsize::new(0),
        lost: AtomicUsize::new(lost),
    })
}

/// A network saved once, then given a node; the store's next reply (to
/// the save of that change) will be lost.
async fn saved_then_changed_with_a_reply_to_lose(
) -> (tempfile::TempDir, Arc<LostReplies>, RunnableNetwork) {
    let dir = tempfile::tempdir().unwrap();
    let list = lists(dir.path(), 0);
    let net = RunnableNetwork::builder().name("outage").build();
    list.save(&net).await.unwrap();
    {
        let _s = net.enter();
        HumanNode::new("hello");
    }
    list.lost.store(1, Ordering::SeqCst);
    (dir, list, net)
}

#[tokio::test]
async fn a_save_that_landed_before_its_reply_was_lost_is_not_a_conflict_with_itself() {
    let (_dir, list, net) = saved_then_changed_with_a_reply_to_lose().await;
    // A plain retry meets its own write as a newer revision.
    let plain = {
        let again = list.save(&net).await;
        assert!(matches!(again, Err(ListError::Unavailable { .. })));
        list.save(&net).await
    };
    assert!(
        matches!(
            plain,
            Err(ListError::Conflict {
                expected: 1,
                found: 2,
                ..
            })
        ),
        "{plain:?}"
    );

    // The patient save knows its own write.
    let (_dir, list, net) = saved_then_changed_with_a_reply_to_lose().await;
    let info = save_patiently(list.as_ref(), &net, Duration::from_secs(5), "test")
        .await
        .unwrap();
    assert_eq!(revision_of(&net), info.revision);
    let stored = list.load(net.id()).await.unwrap();
    assert_eq!(stored.nodes().len(), net.nodes().len());
    // And it goes on saving as usual.
    {
        let _s = net.enter();
        HumanNode::new("more");
    }
    save_patiently(list.as_ref(), &net, Duration::from_secs(5), "test")
        .await
        .unwrap();
    assert_eq!(
        list.load(net.id()).await.unwrap().nodes().len(),
        net.nodes().len()
    );
    assert_eq!(net.nodes().len(), 2);
}

#[tokio::test]
async fn another_writers_save_during_the_outage_is_still_a_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let list = lists(dir.path(), 0);
    let net = RunnableNetwork::builder().name("outage").build();
    list.save(&net).await.unwrap();
    // Someone else saves a different copy.
    let other = list.load(net.id()).await.unwrap();
    other.set_name("theirs");
    list.save(&other).await.unwrap();
    // Our first try never reaches the store; the next one meets their
    // revision (one above ours, as our own would be): a real conflict.
    {
        let _s = net.enter();
        HumanNode::new("mine");
    }
    list.down.store(1, Ordering::SeqCst);
    let r = save_patiently(list.as_ref(), &net, Duration::from_secs(2), "test").await;
    assert!(matches!(r, Err(ListError::Conflict { .. })), "{r:?}");
    assert_eq!(list.load(net.id()).await.unwrap().name(), "theirs");
}

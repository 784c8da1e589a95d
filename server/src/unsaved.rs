//! [`Unsaved`]: where a run's saves go when the client asked for
//! `store: false` (OpenAI's flag): nowhere. The run goes on as any other;
//! nothing of it is kept, and the answer names no session.

use async_trait::async_trait;
use lc_agent::{revision_of, ListError, ListPage, ListQuery, ListResult, NetworkList};
use lc_agent::{RunnableNetwork, SessionInfo, REVISION_KEY};
use uuid::Uuid;

/// A list that keeps nothing: a save only counts the revision up.
pub(crate) struct Unsaved {
    pub(crate) user: String,
}

#[async_trait]
impl NetworkList for Unsaved {
    fn user(&self) -> &str {
        &self.user
    }

    async fn save(&self, network: &RunnableNetwork) -> ListResult<SessionInfo> {
        let revision = revision_of(network) + 1;
        network.set_metadata(REVISION_KEY, revision.into());
        let now = chrono::Utc::now();
        Ok(SessionInfo {
            id: network.id(),
            user: self.user.clone(),
            name: network.name(),
            created_at: now,
            updated_at: now,
            node_count: network.len(),
            bytes: 0,
            revision,
            metadata: Default::default(),
        })
    }

    async fn stored_revision(&self, _id: Uuid) -> ListResult<Option<u64>> {
        Ok(None)
    }

    async fn load(&self, id: Uuid) -> ListResult<RunnableNetwork> {
        Err(ListError::NotFound { id })
    }

    async fn load_json(&self, id: Uuid) -> ListResult<String> {
        Err(ListError::NotFound { id })
    }

    async fn delete(&self, _id: Uuid) -> ListResult<bool> {
        Ok(false)
    }

    async fn list(&self, _query: &ListQuery) -> ListResult<ListPage> {
        Ok(ListPage::default())
    }
}

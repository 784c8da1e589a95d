//! What a listing shows: [`SessionInfo`], [`ListQuery`] and [`ListPage`],
//! and the rule for user (namespace) names.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::{ListError, ListResult, DEFAULT_PAGE_SIZE};

/// What a list shows about one session, without loading the network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// The network id.
    pub id: Uuid,
    /// The user (namespace) the session belongs to.
    pub user: String,
    /// The network's human-readable name.
    pub name: String,
    /// Time of the first save.
    pub created_at: DateTime<Utc>,
    /// Time of the latest save.
    pub updated_at: DateTime<Utc>,
    /// Number of nodes.
    pub node_count: usize,
    /// Size of the saved JSON in bytes.
    pub bytes: u64,
    /// The stored revision.
    pub revision: u64,
    /// The network's metadata (used by [`NetworkList::find`](super::NetworkList::find)).
    #[serde(default)]
    pub metadata: Map<String, Value>,
}

/// Which page of sessions to list: its fields, the rest as
/// `ListQuery::default()` has them (the list's own user, from the newest,
/// a default-size page).
///
/// ```
/// use lc_agent::ListQuery;
/// let q = ListQuery {
///     user: Some("bob".into()),
///     offset: 50,
///     limit: 25,
/// };
/// assert_eq!((q.offset, q.limit), (50, 25));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    /// The user (namespace) to list; `None` means the list's own user.
    pub user: Option<String>,
    /// Sessions to skip (newest first).
    pub offset: usize,
    /// Page size.
    pub limit: usize,
}

impl Default for ListQuery {
    fn default() -> Self {
        Self {
            user: None,
            offset: 0,
            limit: DEFAULT_PAGE_SIZE,
        }
    }
}

impl ListQuery {
    /// The user to list: the query's (checked), else `own`.
    pub(crate) fn user_or(&self, own: &str) -> ListResult<String> {
        match &self.user {
            Some(u) => {
                validate_user(u)?;
                Ok(u.clone())
            }
            None => Ok(own.to_string()),
        }
    }
}

/// One page of a listing.
#[derive(Debug, Default)]
pub struct ListPage {
    /// Sessions, most recently updated first.
    pub sessions: Vec<SessionInfo>,
    /// Entries of this page that could not be read (corrupt files or
    /// index entries); the listing goes on without them. Unreadable files
    /// that a [`JsonNetworkList`](super::JsonNetworkList) cannot place in the order at all are
    /// reported with the first page (offset 0).
    pub errors: Vec<ListError>,
    /// Number of sessions of the user (all pages).
    pub total: usize,
}

/// Checks a user (namespace) name: 1 to 128 characters among
/// `A-Z a-z 0-9 . _ -`, not starting with `.`.
pub fn validate_user(user: &str) -> ListResult<()> {
    let ok = !user.is_empty()
        && user.len() <= 128
        && !user.starts_with('.')
        && user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(ListError::InvalidUser(user.to_string()))
    }
}

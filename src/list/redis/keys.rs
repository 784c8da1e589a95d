//! The key layout of [`RedisNetworkList`](super::RedisNetworkList), with
//! the user as a Cluster hash tag.
//!
//! ```text
//!  <prefix>:user:{alice}:entry:<id>  string      the network JSON
//!  <prefix>:user:{alice}:info        hash        id → SessionInfo JSON
//!  <prefix>:user:{alice}:timeline    sorted set  id, scored by update time (µs)
//!  <prefix>:user:{alice}:rev:<id>    string      the stored revision
//!  <prefix>:user:{alice}:journal:<id> list       incremental saves since the entry
//!  <prefix>:user:{alice}:pending:<id>:<nonce>    a network during its save
//!                └──┬──┘
//!   hash tag: a Cluster hashes only `alice`, so one user's keys share a
//!   slot and a save's script runs on one node
//! ```
//!
//! A network is a string of its own, not a hash field: Redis stores a
//! `SET`'s big argument as it arrived, while `HSET` copies it (for 1 MB,
//! about 0.25 ms of the server's time).
//!
//! Before this layout (the *legacy* one, [`UserKeys::legacy`]) the user
//! stood bare and the networks shared a hash,
//! `<prefix>:user:alice:entries`: the migration moves such data over (see
//! [`RedisNetworkList::migrate_legacy_keys`](super::RedisNetworkList::migrate_legacy_keys)).

use crate::list::{ListError, ListResult};

/// The keys of one user's sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UserKeys {
    /// A session's network JSON is under this followed by its id (legacy:
    /// the hash id → network JSON).
    pub(crate) entries: String,
    /// id → SessionInfo JSON.
    pub(crate) info: String,
    /// id scored by update time.
    pub(crate) timeline: String,
    /// A session's rev key is this followed by its id.
    pub(crate) rev_prefix: String,
    /// A network on its way in (see `save.rs`): this, its id and a nonce.
    pending_prefix: String,
    /// A session's journal key is this followed by its id.
    pub(crate) journal_prefix: String,
}

impl UserKeys {
    /// The keys of `user` under `prefix` (hash-tagged).
    pub(crate) fn new(prefix: &str, user: &str) -> Self {
        Self::under(format!("{prefix}:user:{{{user}}}"), "entry:")
    }

    /// The keys of `user` in the legacy layout (no hash tag; `entries` is
    /// the hash of networks).
    pub(crate) fn legacy(prefix: &str, user: &str) -> Self {
        Self::under(format!("{prefix}:user:{user}"), "entries")
    }

    fn under(base: String, entries: &str) -> Self {
        Self {
            entries: format!("{base}:{entries}"),
            info: format!("{base}:info"),
            timeline: format!("{base}:timeline"),
            rev_prefix: format!("{base}:rev:"),
            pending_prefix: format!("{base}:pending:"),
            journal_prefix: format!("{base}:journal:"),
        }
    }

    /// One of the user's keys by name (`info`, `timeline`, `entry:<id>`,
    /// `rev:<id>`).
    pub(crate) fn named(prefix: &str, user: &str, what: &str) -> String {
        format!("{prefix}:user:{{{user}}}:{what}")
    }

    /// The key holding a session's network JSON.
    pub(crate) fn entry(&self, id: &str) -> String {
        format!("{}{id}", self.entries)
    }

    /// Where a save puts the network until its commit moves it.
    pub(crate) fn pending(&self, id: &str, nonce: &str) -> String {
        format!("{}{id}:{nonce}", self.pending_prefix)
    }

    /// The list of a session's incremental saves since its entry.
    pub(crate) fn journal(&self, id: &str) -> String {
        format!("{}{id}", self.journal_prefix)
    }

    /// The key holding a session's stored revision.
    pub(crate) fn rev(&self, id: &str) -> String {
        format!("{}{id}", self.rev_prefix)
    }
}

/// A prefix must not contain a hash tag of its own: it would put every
/// user in one slot (and the legacy scan relies on it).
pub(crate) fn check_prefix(prefix: &str) -> ListResult<()> {
    if prefix.contains(['{', '}']) {
        return Err(ListError::Config(format!(
            "redis key prefix `{prefix}`: `{{` and `}}` are reserved for the per-user hash tag"
        )));
    }
    Ok(())
}

/// `text` with the glob characters of `SCAN ... MATCH` escaped.
pub(crate) fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_user_one_hash_tag() {
        let keys = UserKeys::new("app", "alice");
        assert_eq!(keys.entry("42"), "app:user:{alice}:entry:42");
        assert_eq!(keys.info, "app:user:{alice}:info");
        assert_eq!(keys.timeline, "app:user:{alice}:timeline");
        assert_eq!(keys.rev("42"), "app:user:{alice}:rev:42");
        assert_eq!(keys.pending("42", "n"), "app:user:{alice}:pending:42:n");
        assert_eq!(keys.journal("42"), "app:user:{alice}:journal:42");
        assert_eq!(
            UserKeys::named("app", "alice", "info"),
            keys.info,
            "named and new agree"
        );
        let old = UserKeys::legacy("app", "alice");
        assert_eq!(old.entries, "app:user:alice:entries");
        assert_eq!(old.rev("42"), "app:user:alice:rev:42");
    }

    #[test]
    fn prefixes_with_braces_are_refused() {
        assert!(check_prefix("lc_agent").is_ok());
        assert!(check_prefix("").is_ok());
        assert!(matches!(check_prefix("a{b}"), Err(ListError::Config(_))));
        assert_eq!(glob_escape("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
    }
}

//! Saving through a store outage: a save that fails because the store
//! cannot be reached is tried again (0.1 s doubling to 2 s) for a bounded
//! time. A failed round trip is ambiguous: the write may have landed and
//! only its reply been lost (Redis stopped between the two). The next try
//! then meets its own write as a newer revision; when the stored session
//! is exactly this copy, the save did happen and the copy takes that
//! revision, instead of failing with a conflict with itself.
//!
//! ```text
//!  save ─▶ Unavailable ─▶ wait, try again ─▶ Conflict(found = expected + 1)
//!                                             └─ stored == this copy? ─▶ adopt found, saved
//!                                             └─ else ─▶ the conflict, as any save
//! ```

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{revision_of, ListError, ListResult, NetworkList, SessionInfo};
use super::{CREATED_AT_KEY, UPDATED_AT_KEY};
use crate::network::format::journal::REVISION_KEY;
use crate::network::RunnableNetwork;

/// Saves `network` into `list`, waiting out an unreachable store for up to
/// `patience` (see the module's documentation); `what` names the save in the
/// log. With a zero patience, one plain [`NetworkList::save`].
pub async fn save_patiently(
    list: &dyn NetworkList,
    network: &RunnableNetwork,
    patience: Duration,
    what: &str,
) -> ListResult<SessionInfo> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(100);
    let mut ambiguous = false;
    loop {
        match list.save(network).await {
            Err(e @ ListError::Unavailable { .. }) if started.elapsed() < patience => {
                tracing::warn!(id = %network.id(), what, error = %e, "the session store cannot be reached; trying again");
                ambiguous = true;
                tokio::time::sleep(pause.min(patience.saturating_sub(started.elapsed()))).await;
                pause = (pause * 2).min(Duration::from_secs(2));
            }
            Err(ListError::Conflict {
                id,
                expected,
                found,
            }) if ambiguous && found == expected + 1 => {
                if !landed(list, network).await {
                    return Err(ListError::Conflict {
                        id,
                        expected,
                        found,
                    });
                }
                tracing::info!(%id, what, revision = found, "the save before the outage had landed");
                // This copy is the stored one: it takes its revision, and
                // saves in full from now on (its base is older).
                network.set_metadata(REVISION_KEY, Value::from(found));
                network.forget_base();
                ambiguous = false;
            }
            other => return other,
        }
    }
}

/// Whether the stored session is this very copy, its revision and save
/// times aside.
async fn landed(list: &dyn NetworkList, network: &RunnableNetwork) -> bool {
    let Ok(json) = list.load_json(network.id()).await else {
        return false;
    };
    let stored = match RunnableNetwork::from_json(&json) {
        Ok(stored) => stored,
        Err(_) => return false,
    };
    let shape = |n: &RunnableNetwork| -> Option<Value> {
        let mut v: Value = serde_json::from_str(&n.to_json().ok()?).ok()?;
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for key in [REVISION_KEY, CREATED_AT_KEY, UPDATED_AT_KEY] {
                meta.remove(key);
            }
        }
        Some(v)
    };
    let ours = revision_of(network);
    let theirs = revision_of(&stored);
    theirs == ours + 1 && shape(&stored).is_some() && shape(&stored) == shape(network)
}

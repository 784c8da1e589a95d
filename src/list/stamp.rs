//! Revisions and timestamps: stamping a network before it is saved, and
//! reading them back out of a saved document for a listing.
//!
//! ```text
//!  stamp(net, write) ─▶ revision+1, created_at (kept), updated_at = now
//!                   ─▶ write: to_json, or straight into a Redis command
//!     └─ the save fails ─▶ Stamped::restore puts the old values back
//!  info_from_json(bytes) ─▶ SessionInfo (header only, nodes counted)
//! ```

use chrono::{DateTime, SecondsFormat, SubsecRound, Utc};
use serde_json::Value;

use super::{ListResult, SessionInfo, CREATED_AT_KEY, UPDATED_AT_KEY};
use crate::network::format::journal::REVISION_KEY;
use crate::network::format::SavedHead;
use crate::network::RunnableNetwork;

/// The revision a network was loaded or last saved at (0 if never saved).
pub fn revision_of(network: &RunnableNetwork) -> u64 {
    network
        .metadata_value(REVISION_KEY)
        .and_then(|v| v.as_u64())
        .unwrap_or(0)
}

/// A network stamped for saving: what was written at the new revision
/// (its JSON, or a request holding it), the session's info, and what to
/// put back if the save does not happen.
pub(crate) struct Stamped<T> {
    pub(crate) expected: u64,
    pub(crate) written: T,
    pub(crate) info: SessionInfo,
    previous: [(&'static str, Option<Value>); 3],
}

pub(crate) fn timestamp(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

fn parse_time(v: Option<&Value>) -> Option<DateTime<Utc>> {
    v.and_then(Value::as_str)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
}

/// Sets the next revision and timestamps on the network, then lets `write`
/// serialize it (into a string, a file buffer or a Redis command; it
/// returns what it wrote and the JSON's length). If `write` fails, the
/// network's revision and timestamps are put back.
pub(crate) fn stamp<T>(
    network: &RunnableNetwork,
    user: &str,
    write: impl FnOnce(&RunnableNetwork) -> crate::Result<(T, usize)>,
) -> ListResult<Stamped<T>> {
    let previous =
        [REVISION_KEY, CREATED_AT_KEY, UPDATED_AT_KEY].map(|k| (k, network.metadata_value(k)));
    let expected = revision_of(network);
    // Micro-second precision: what the saved text and Redis scores hold.
    let now = Utc::now().trunc_subsecs(6);
    let created = parse_time(previous[1].1.as_ref()).unwrap_or(now);
    network.set_metadata(REVISION_KEY, Value::from(expected + 1));
    network.set_metadata(CREATED_AT_KEY, Value::from(timestamp(&created)));
    network.set_metadata(UPDATED_AT_KEY, Value::from(timestamp(&now)));
    let (written, bytes) = match write(network) {
        Ok(w) => w,
        Err(e) => {
            restore(network, &previous);
            return Err(e.into());
        }
    };
    Ok(Stamped {
        expected,
        written,
        info: SessionInfo {
            id: network.id(),
            user: user.to_string(),
            name: network.name(),
            created_at: created,
            updated_at: now,
            node_count: network.len(),
            bytes: bytes as u64,
            revision: expected + 1,
            metadata: network.metadata(),
        },
        previous,
    })
}

fn restore(network: &RunnableNetwork, previous: &[(&'static str, Option<Value>)]) {
    for (key, value) in previous {
        match value {
            Some(v) => network.set_metadata(*key, v.clone()),
            None => {
                network.with_metadata_mut(|m| m.shift_remove(*key));
            }
        }
    }
}

impl<T> Stamped<T> {
    /// Puts the network's revision and timestamps back (the save failed).
    pub(crate) fn restore(&self, network: &RunnableNetwork) {
        restore(network, &self.previous);
    }
}

/// Reads the listing info out of a saved network's JSON.
pub(crate) fn info_from_json(
    json: &[u8],
    user: &str,
    fallback_time: DateTime<Utc>,
) -> Result<SessionInfo, String> {
    let head: SavedHead = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    head.check_format().map_err(|e| e.to_string())?;
    let updated = parse_time(head.metadata.get(UPDATED_AT_KEY))
        .unwrap_or(fallback_time)
        .trunc_subsecs(6);
    Ok(SessionInfo {
        id: head.id,
        user: user.to_string(),
        name: head.name,
        created_at: parse_time(head.metadata.get(CREATED_AT_KEY)).unwrap_or(updated),
        updated_at: updated,
        node_count: head.nodes.0,
        bytes: json.len() as u64,
        revision: head
            .metadata
            .get(REVISION_KEY)
            .and_then(Value::as_u64)
            .unwrap_or(0),
        metadata: head.metadata,
    })
}

//! The save of [`RedisNetworkList`](super::RedisNetworkList): one
//! optimistic transaction, sent as one pipeline (one round trip).
//!
//! ```text
//!  WATCH rev ▸ EVAL check(rev, info, timeline; id, expected, ttl) ▸ MULTI
//!    ▸ SET entry:<id> <json> ▸ HSET info id <info> ▸ ZADD timeline µs id
//!    ▸ SET rev n [▸ PEXPIRE info, timeline] ▸ EXEC
//!
//!  check ≥ 0   the stored copy is newer: the check touched `rev`, so the
//!              EXEC applied nothing ──────────────────────▶ Conflict
//!  EXEC nil    another writer touched `rev` in between ──▶ start over
//!  EXEC [...]  written
//! ```
//!
//! The whole pipeline goes out as one request, so on a multiplexed
//! connection no other request of the process comes between its `WATCH`
//! and its `EXEC`: the watch is this save's alone. Every key has the
//! user's hash tag, so on a Cluster the pipeline goes whole to the one
//! node that owns the user's slot. The network JSON travels as a plain
//! `SET` argument, which Redis keeps as it arrived (passing a megabyte
//! through Lua, or `HSET`, copies it), and the pipeline is built once per
//! save: a save that starts over sends the same request again without
//! copying the JSON again.
//!
//! With a TTL, the user's keys expire together, the TTL after the latest
//! save of any of their sessions: the check script renews the expiry of
//! every session's network (O(sessions) per save, only with a TTL) and
//! the transaction sets it on the rest.

use ::redis::aio::ConnectionLike;
use ::redis::{ErrorKind, Pipeline, RedisError, Value};

use super::keys::UserKeys;

/// The revision check, run between the `WATCH` and the `MULTI`. KEYS: the
/// session's rev key, the user's info hash and timeline; ARGV: id,
/// expected revision, TTL in ms (0: none), the prefix of entry keys.
/// Returns the stored revision when it is newer than expected (after
/// touching the watched rev key, which aborts the transaction queued
/// behind it), -2 after dropping a damaged rev key (the transaction is
/// aborted the same way and the save starts over), else -1. With a TTL it
/// first renews the expiry of every session's network. Only small values
/// pass through Lua.
const CHECK_LUA: &str = r#"
local ttl = tonumber(ARGV[3])
if ttl > 0 then
  for _, id in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
    redis.call('PEXPIRE', ARGV[4] .. id, ttl)
  end
end
local raw = redis.pcall('GET', KEYS[1])
if type(raw) == 'table' and raw.err then
  -- Not a string (damaged): drop it, which also aborts the queued EXEC;
  -- the retry falls back to the revision in the info hash.
  redis.call('DEL', KEYS[1])
  return -2
end
local stored = tonumber(raw)
if not stored then
  stored = 0
  local cur = redis.call('HGET', KEYS[2], ARGV[1])
  if cur then
    local ok, decoded = pcall(cjson.decode, cur)
    if ok and type(decoded) == 'table' and tonumber(decoded['revision']) then
      stored = tonumber(decoded['revision'])
    end
  end
end
if stored > tonumber(ARGV[2]) then
  redis.call('SET', KEYS[1], stored)
  return stored
end
return -1
"#;

/// How often a save starts over because another writer saved the same
/// session between its `WATCH` and its `EXEC`.
const SAVE_ATTEMPTS: usize = 32;

/// What one save writes.
pub(crate) struct SaveWrite<'a> {
    pub(crate) keys: &'a UserKeys,
    pub(crate) id: &'a str,
    /// The revision the caller's copy was loaded at.
    pub(crate) expected: u64,
    /// The revision being written.
    pub(crate) revision: u64,
    pub(crate) json: &'a str,
    pub(crate) info_json: &'a str,
    /// Update time, µs since the epoch.
    pub(crate) score: i64,
    /// Expiry of the user's keys in ms (0: none).
    pub(crate) ttl_ms: u64,
}

impl SaveWrite<'_> {
    /// The whole save as one pipeline (see the [module docs](self)).
    pub(crate) fn pipeline(&self) -> Pipeline {
        let keys = self.keys;
        let rev_key = keys.rev(self.id);
        let mut pipe = ::redis::pipe();
        pipe.cmd("WATCH").arg(&rev_key);
        pipe.cmd("EVAL")
            .arg(CHECK_LUA)
            .arg(3)
            .arg(&rev_key)
            .arg(&keys.info)
            .arg(&keys.timeline)
            .arg(self.id)
            .arg(self.expected)
            .arg(self.ttl_ms)
            .arg(&keys.entries);
        pipe.cmd("MULTI");
        let ttl = |cmd: &mut Pipeline| {
            if self.ttl_ms > 0 {
                cmd.arg("PX").arg(self.ttl_ms);
            }
        };
        // Sized up front: the JSON is copied once, into its final place.
        let json = self.json.as_bytes();
        let mut set = ::redis::Cmd::with_capacity(5, json.len() + 160);
        set.arg("SET").arg(keys.entry(self.id)).arg(json);
        pipe.add_command(set);
        ttl(&mut pipe);
        pipe.hset(&keys.info, self.id, self.info_json.as_bytes());
        pipe.zadd(&keys.timeline, self.id, self.score);
        pipe.cmd("SET").arg(&rev_key).arg(self.revision);
        ttl(&mut pipe);
        if self.ttl_ms > 0 {
            for key in [&keys.info, &keys.timeline] {
                pipe.cmd("PEXPIRE").arg(key).arg(self.ttl_ms);
            }
        }
        pipe.cmd("EXEC");
        pipe
    }
}

/// What one sending of the save pipeline did.
#[derive(Debug, PartialEq, Eq)]
enum Round {
    Written,
    /// The stored revision is newer than expected.
    Stale(u64),
    /// The watched key changed: start over.
    Again,
}

/// Reads the replies of the save pipeline: WATCH, EVAL, MULTI, QUEUED...,
/// EXEC. (Error replies at the top level already failed the query.)
fn round(replies: &[Value]) -> Result<Round, RedisError> {
    let unexpected = |what: &str, value: Option<&Value>| {
        RedisError::from((
            ErrorKind::UnexpectedReturnType,
            "Unexpected reply from redis",
            format!("{what}: {value:?}"),
        ))
    };
    let check = match replies.get(1) {
        Some(Value::Int(n)) => *n,
        other => return Err(unexpected("revision check", other)),
    };
    match replies.last() {
        // A stale copy: the check touched the watched key, nothing applied.
        _ if check >= 0 => Ok(Round::Stale(check.unsigned_abs())),
        Some(Value::Nil) => Ok(Round::Again),
        Some(Value::Array(results)) => match results.iter().find_map(|v| match v {
            Value::ServerError(e) => Some(e),
            _ => None,
        }) {
            Some(e) => Err(e.clone().into()),
            None => Ok(Round::Written),
        },
        other => Err(unexpected("EXEC", other)),
    }
}

/// Sends the save pipeline until it is written (`Ok(Ok(()))`) or refused
/// because the stored revision is newer (`Ok(Err(stored))`).
pub(crate) async fn run<C: ConnectionLike + Send>(
    conn: &mut C,
    pipe: &Pipeline,
    id: &str,
) -> Result<Result<(), u64>, RedisError> {
    for _ in 0..SAVE_ATTEMPTS {
        let replies: Vec<Value> = pipe.query_async(conn).await?;
        match round(&replies)? {
            Round::Written => return Ok(Ok(())),
            Round::Stale(stored) => return Ok(Err(stored)),
            Round::Again => tracing::debug!(id, "concurrent save of this session; retrying"),
        }
    }
    Err(RedisError::from((
        ErrorKind::Server(::redis::ServerErrorKind::TryAgain),
        "too many concurrent saves of this session; the save was not applied",
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pipeline_keeps_every_key_in_the_users_slot() {
        let keys = UserKeys::new("p", "alice");
        let write = SaveWrite {
            keys: &keys,
            id: "id-1",
            expected: 3,
            revision: 4,
            json: "{}",
            info_json: "{\"revision\":4}",
            score: 17,
            ttl_ms: 1000,
        };
        let pipe = write.pipeline();
        let names: Vec<String> = pipe
            .cmd_iter()
            .map(|c| match c.args_iter().next() {
                Some(::redis::Arg::Simple(name)) => String::from_utf8_lossy(name).into_owned(),
                _ => String::new(),
            })
            .collect();
        assert_eq!(
            names,
            [
                "WATCH", "EVAL", "MULTI", "SET", "HSET", "ZADD", "SET", "PEXPIRE", "PEXPIRE",
                "EXEC"
            ]
        );
        for cmd in pipe.cmd_iter() {
            for arg in cmd.args_iter() {
                if let ::redis::Arg::Simple(bytes) = arg {
                    let text = String::from_utf8_lossy(bytes);
                    if text.starts_with("p:") {
                        assert!(text.starts_with("p:user:{alice}:"), "{text}");
                    }
                }
            }
        }
    }

    #[test]
    fn replies_decide_the_round() {
        let ok = Value::Okay;
        let queued = || Value::SimpleString("QUEUED".into());
        let base = |check: i64, exec: Value| {
            vec![ok.clone(), Value::Int(check), ok.clone(), queued(), exec]
        };
        assert_eq!(
            round(&base(-1, Value::Array(vec![Value::Int(1)]))).ok(),
            Some(Round::Written)
        );
        assert_eq!(round(&base(-1, Value::Nil)).ok(), Some(Round::Again));
        assert_eq!(round(&base(-2, Value::Nil)).ok(), Some(Round::Again));
        assert_eq!(round(&base(7, Value::Nil)).ok(), Some(Round::Stale(7)));
        assert!(round(&base(-1, Value::Okay)).is_err());
        assert!(round(&[ok.clone(), ok.clone()]).is_err());
    }
}

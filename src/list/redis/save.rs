//! The save of [`RedisNetworkList`](super::RedisNetworkList): one
//! pipeline of two commands (one round trip), the second a script that
//! checks the revision and commits atomically.
//!
//! ```text
//!  SET pending:<id>:<nonce> <json> PX 60000        the network, as sent
//!  EVALSHA commit(entry:<id>, info, timeline, rev:<id>, journal:<id>, pending;
//!                 id, expected, revision, info, µs, ttl, prefixes)
//!    rev:<id> is the tombstone ─▶ DEL pending ───────────────▶ Deleted
//!    stored revision > expected ─▶ DEL pending ──────────────▶ Conflict
//!    else RENAME pending → entry:<id> (no copy; a pending key that
//!         expired fails it) ▸ HSET info ▸ ZADD
//!         timeline ▸ SET rev [▸ expiries] ───────────────────▶ saved
//!  NOSCRIPT (a restarted server) ─▶ SCRIPT LOAD, send both again
//!
//!  an incremental save (one command, one round trip):
//!  EVALSHA append(entry:<id>, info, timeline, rev:<id>, journal:<id>;
//!                 id, expected, revision, info, µs, ttl, prefixes, record)
//!    tombstone / stored revision > expected ─▶ as above
//!    stored ≠ expected or no entry ─▶ -3: the caller saves in full
//!    else RPUSH journal record ▸ HSET info ▸ ZADD timeline ▸ SET rev
//!  a full save deletes the journal in the same script (compaction)
//! ```
//!
//! Both scripts are one check (`check_lua!`: tombstone, stored revision)
//! and one tail (`commit_tail_lua!`: info, timeline, revision, expiries)
//! around their own write, so the rule is written once.
//!
//! The script runs atomically, so two writers of one session cannot both
//! pass the check: the second sees the first's revision and gets a
//! conflict; writers of different sessions never disturb each other. A
//! save does not depend on any connection state (no `WATCH`), so it is
//! safe on a multiplexed connection shared by every task of the process.
//! Every key has the user's hash tag, so on a Cluster the pipeline goes
//! whole to the one node that owns the user's slot.
//!
//! The network is serialized straight into the `SET` command's buffer
//! (no string in between) and travels as a plain argument, which Redis keeps
//! as it arrived, and the script moves it into place with `RENAME`: it is
//! never copied by the server (passing a megabyte through Lua, or `HSET`,
//! copies it). The pending key has a nonce of its own (concurrent saves of
//! one session do not share it) and expires after a minute if its script
//! never runs.
//!
//! With a TTL, the user's keys expire together, the TTL after the latest
//! save of any of their sessions: the script renews the expiry of every
//! session's network (O(sessions) per save, only with a TTL).

use std::sync::OnceLock;

use ::redis::aio::ConnectionLike;
use ::redis::{Cmd, ErrorKind, Pipeline, RedisError, RedisWrite, Script, ServerErrorKind, Value};

use super::keys::UserKeys;
use crate::network::RunnableNetwork;

/// How long a pending network waits for its commit script.
const PENDING_MS: u64 = 60_000;

/// The part both save scripts share, up to the write: the revision check.
/// KEYS (both scripts): entry, info, timeline, rev, journal, and the
/// commit's pending key. ARGV: id, expected revision, new revision, info
/// JSON, score, TTL in ms (0: none), the prefix of entry keys, the prefix
/// of journal keys, and the append's record. The script defines
/// `refuse()` (what to undo when it writes nothing) before this piece.
/// Returns -2 when the session was deleted (its revision key holds the
/// tombstone), the stored revision when it is newer than expected;
/// otherwise goes on with `stored` set.
macro_rules! check_lua {
    () => {
        r#"
local raw = redis.pcall('GET', KEYS[4])
if raw == 'deleted' then
  refuse()
  return -2
end
local stored = nil
if type(raw) ~= 'table' then stored = tonumber(raw) end
if not stored then
  stored = 0
  local cur = redis.call('HGET', KEYS[2], ARGV[1])
  if cur then
    local ok, d = pcall(cjson.decode, cur)
    if ok and type(d) == 'table' and tonumber(d['revision']) then
      stored = tonumber(d['revision'])
    end
  end
end
if stored > tonumber(ARGV[2]) then
  refuse()
  return stored
end
"#
    };
}

/// The part both save scripts share after their write: the info, the
/// timeline, the revision and the expiries (with a TTL, every session of
/// the user's; without, the session's keys persist). Returns -1.
macro_rules! commit_tail_lua {
    () => {
        r#"
redis.call('HSET', KEYS[2], ARGV[1], ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[1])
local ttl = tonumber(ARGV[6])
if ttl > 0 then
  redis.call('SET', KEYS[4], ARGV[3], 'PX', ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
  redis.call('PEXPIRE', KEYS[3], ttl)
  for _, id in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
    redis.call('PEXPIRE', ARGV[7] .. id, ttl)
    redis.call('PEXPIRE', ARGV[8] .. id, ttl)
  end
else
  redis.call('SET', KEYS[4], ARGV[3])
  redis.call('PERSIST', KEYS[1])
  redis.call('PERSIST', KEYS[5])
end
return -1
"#
    };
}

/// The check and commit of a full save (KEYS and ARGV: see `check_lua!`;
/// KEYS[6] is the pending network): the pending network is renamed into
/// place and the journal dropped. Returns as the check does, else -1.
const COMMIT_LUA: &str = concat!(
    "local function refuse() redis.call('DEL', KEYS[6]) end",
    check_lua!(),
    r#"
local moved = redis.pcall('RENAME', KEYS[6], KEYS[1])
if type(moved) == 'table' and moved.err then
  return redis.error_reply('ERR the pending network expired before its commit')
end
redis.call('DEL', KEYS[5])
"#,
    commit_tail_lua!()
);

fn commit_script() -> &'static Script {
    static S: OnceLock<Script> = OnceLock::new();
    S.get_or_init(|| Script::new(COMMIT_LUA))
}

/// The check and append of an incremental save (KEYS and ARGV: see
/// `check_lua!`; ARGV[9] is the record). Returns as the commit does, or -3
/// when the stored session is not the one the record follows (nothing
/// written).
const APPEND_LUA: &str = concat!(
    "local function refuse() end",
    check_lua!(),
    r#"
if stored ~= tonumber(ARGV[2]) or redis.call('EXISTS', KEYS[1]) == 0 then
  return -3
end
redis.call('RPUSH', KEYS[5], ARGV[9])
"#,
    commit_tail_lua!()
);

fn append_script() -> &'static Script {
    static S: OnceLock<Script> = OnceLock::new();
    S.get_or_init(|| Script::new(APPEND_LUA))
}

/// The first command of a save: `SET pending:<id>:<nonce> <json> PX ..`,
/// the network serialized straight into the command's buffer.
#[derive(Default)]
pub(crate) struct PendingSet {
    key: String,
    cmd: Cmd,
}

impl PendingSet {
    /// Serializes `network` into a new pending `SET`; returns it with the
    /// JSON's length and the base the save makes.
    pub(crate) fn of(
        keys: &UserKeys,
        id: &str,
        network: &RunnableNetwork,
    ) -> crate::Result<(PendingSet, usize, crate::network::format::base::SaveBase)> {
        let key = keys.pending(id, &uuid::Uuid::new_v4().simple().to_string());
        // Sized for the JSON up front: it is written once, into its final
        // place, with no string in between.
        let mut cmd = Cmd::with_capacity(5, network.saved_len_hint() + key.len() + 64);
        cmd.arg("SET").arg(&key);
        let (len, base) = network.write_json_based(cmd.writer_for_next_arg())?;
        cmd.arg("PX").arg(PENDING_MS);
        Ok((PendingSet { key, cmd }, len, base))
    }
}

/// What one save writes besides the network.
pub(crate) struct SaveWrite<'a> {
    pub(crate) keys: &'a UserKeys,
    pub(crate) id: &'a str,
    /// The revision the caller's copy was loaded at.
    pub(crate) expected: u64,
    /// The revision being written.
    pub(crate) revision: u64,
    pub(crate) info_json: &'a str,
    /// Update time, µs since the epoch.
    pub(crate) score: i64,
    /// Expiry of the user's keys in ms (0: none).
    pub(crate) ttl_ms: u64,
}

impl SaveWrite<'_> {
    /// The whole save as one pipeline (see the [module docs](self)).
    pub(crate) fn pipeline(&self, pending: PendingSet) -> Pipeline {
        let keys = self.keys;
        let mut pipe = ::redis::pipe();
        pipe.add_command(pending.cmd);
        pipe.cmd("EVALSHA")
            .arg(commit_script().get_hash())
            .arg(6)
            .arg(keys.entry(self.id))
            .arg(&keys.info)
            .arg(&keys.timeline)
            .arg(keys.rev(self.id))
            .arg(keys.journal(self.id))
            .arg(&pending.key)
            .arg(self.id)
            .arg(self.expected)
            .arg(self.revision)
            .arg(self.info_json)
            .arg(self.score)
            .arg(self.ttl_ms)
            .arg(&keys.entries)
            .arg(&keys.journal_prefix);
        pipe
    }

    /// An incremental save: one script appending `record` to the journal.
    pub(crate) fn append_pipeline(&self, record: &str) -> Pipeline {
        let keys = self.keys;
        let mut pipe = ::redis::pipe();
        pipe.cmd("EVALSHA")
            .arg(append_script().get_hash())
            .arg(5)
            .arg(keys.entry(self.id))
            .arg(&keys.info)
            .arg(&keys.timeline)
            .arg(keys.rev(self.id))
            .arg(keys.journal(self.id))
            .arg(self.id)
            .arg(self.expected)
            .arg(self.revision)
            .arg(self.info_json)
            .arg(self.score)
            .arg(self.ttl_ms)
            .arg(&keys.entries)
            .arg(&keys.journal_prefix)
            .arg(record);
        pipe
    }
}

/// How a save ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Written.
    Saved,
    /// Refused: the stored revision is this one, newer than expected.
    Conflict(u64),
    /// Refused: the session was deleted.
    Deleted,
    /// Not written: the stored session is not the one the incremental
    /// save follows (save in full).
    NeedsFull,
}

/// Reads the replies of the save pipeline.
fn outcome(replies: &[Value]) -> Result<Outcome, RedisError> {
    match replies.last() {
        Some(Value::Int(n)) if *n >= 0 => Ok(Outcome::Conflict(n.unsigned_abs())),
        Some(Value::Int(-2)) => Ok(Outcome::Deleted),
        Some(Value::Int(-3)) => Ok(Outcome::NeedsFull),
        Some(Value::Int(_)) => Ok(Outcome::Saved),
        other => Err(RedisError::from((
            ErrorKind::UnexpectedReturnType,
            "Unexpected reply from redis",
            format!("save commit: {other:?}"),
        ))),
    }
}

/// Sends the save pipeline and says how it ended. A server that lost the
/// script (restarted) gets it again and the save is sent once more.
pub(crate) async fn run<C: ConnectionLike + Send>(
    conn: &mut C,
    pipe: &Pipeline,
) -> Result<Outcome, RedisError> {
    let replies: Vec<Value> = match pipe.query_async(conn).await {
        Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
            commit_script().load_async(conn).await?;
            append_script().load_async(conn).await?;
            pipe.query_async(conn).await?
        }
        other => other?,
    };
    outcome(&replies)
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
            info_json: "{\"revision\":4}",
            score: 17,
            ttl_ms: 1000,
        };
        let net = RunnableNetwork::builder().name("n").build();
        let (pending, len, _) = PendingSet::of(&keys, "id-1", &net).expect("serialize");
        let json = net.to_json().expect("json");
        assert_eq!(len, json.len());
        let set: Vec<_> = pending.cmd.args_iter().collect();
        assert!(matches!(set[2], ::redis::Arg::Simple(bytes) if bytes == json.as_bytes()));
        let pipe = write.pipeline(pending);
        let names: Vec<String> = pipe
            .cmd_iter()
            .map(|c| match c.args_iter().next() {
                Some(::redis::Arg::Simple(name)) => String::from_utf8_lossy(name).into_owned(),
                _ => String::new(),
            })
            .collect();
        assert_eq!(names, ["SET", "EVALSHA"]);
        let mut keyed = 0;
        for cmd in pipe.cmd_iter() {
            for arg in cmd.args_iter() {
                if let ::redis::Arg::Simple(bytes) = arg {
                    let text = String::from_utf8_lossy(bytes);
                    if text.starts_with("p:") {
                        assert!(text.starts_with("p:user:{alice}:"), "{text}");
                        keyed += 1;
                    }
                }
            }
        }
        // pending (twice), entry, info, timeline, rev, journal, entry and
        // journal prefixes.
        assert_eq!(keyed, 9);
    }

    #[test]
    fn both_scripts_share_one_check_and_one_tail() {
        for script in [COMMIT_LUA, APPEND_LUA] {
            assert_eq!(script.matches(check_lua!()).count(), 1);
            assert!(script.ends_with(commit_tail_lua!()));
        }
    }

    #[test]
    fn replies_decide_the_outcome() {
        assert_eq!(
            outcome(&[Value::Okay, Value::Int(-1)]).ok(),
            Some(Outcome::Saved)
        );
        assert_eq!(
            outcome(&[Value::Okay, Value::Int(7)]).ok(),
            Some(Outcome::Conflict(7))
        );
        assert_eq!(
            outcome(&[Value::Okay, Value::Int(-2)]).ok(),
            Some(Outcome::Deleted)
        );
        assert!(outcome(&[Value::Okay, Value::Nil]).is_err());
        assert!(outcome(&[]).is_err());
    }
}

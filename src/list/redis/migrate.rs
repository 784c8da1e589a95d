//! Moving sessions saved in the legacy key layout (before the per-user
//! hash tag) into the current one.
//!
//! ```text
//!  SCAN <prefix>:user:*  ──▶ users with legacy keys (`...:user:alice:...`)
//!  per user, one script (single server only):
//!    <prefix>:user:alice:entries (hash id → JSON) ──▶ <prefix>:user:{alice}:entry:<id>
//!    <prefix>:user:alice:{info,timeline,rev:<id>} ──▶ <prefix>:user:{alice}:{info,timeline,rev:<id>}
//!    a session in both layouts keeps the higher revision;
//!    the legacy keys are deleted; their expiry carries over
//! ```
//!
//! The legacy layout could only ever work on a single server (its save
//! touched keys of several slots), so on a Cluster there is nothing to
//! migrate. The migration is idempotent: run it again and it finds
//! nothing, or only what a process still running the old version wrote
//! meanwhile.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use ::redis::Script;

use super::keys::{glob_escape, UserKeys};
use super::RedisNetworkList;
use crate::list::{validate_user, ListResult};

/// What [`RedisNetworkList::migrate_legacy_keys`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Migration {
    /// Users that had legacy keys.
    pub users: usize,
    /// Sessions moved into the current layout.
    pub moved: usize,
    /// Legacy sessions dropped because the current layout already held the
    /// same session at the same or a higher revision.
    pub superseded: usize,
}

/// KEYS: legacy entries (hash), info, timeline; current info, timeline.
/// ARGV: legacy rev prefix, current rev prefix, current entry prefix.
/// Returns {moved, superseded}.
const MIGRATE_LUA: &str = r#"
local function revision(info)
  if not info then return -1 end
  local ok, d = pcall(cjson.decode, info)
  if ok and type(d) == 'table' and tonumber(d['revision']) then
    return tonumber(d['revision'])
  end
  return 0
end
local existed = {}
for i = 4, 5 do existed[i] = redis.call('EXISTS', KEYS[i]) == 1 end
local entries_ttl = redis.call('PTTL', KEYS[1])
local ids, seen = {}, {}
local function add(id) if not seen[id] then seen[id] = true; ids[#ids + 1] = id end end
for _, id in ipairs(redis.call('HKEYS', KEYS[1])) do add(id) end
for _, id in ipairs(redis.call('HKEYS', KEYS[2])) do add(id) end
for _, id in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do add(id) end
local moved, superseded = 0, 0
for _, id in ipairs(ids) do
  local old_rev = ARGV[1] .. id
  local old_info = redis.call('HGET', KEYS[2], id)
  local new_info = redis.call('HGET', KEYS[4], id)
  if new_info and revision(new_info) >= revision(old_info) then
    superseded = superseded + 1
  else
    local entry = redis.call('HGET', KEYS[1], id)
    if entry then
      redis.call('SET', ARGV[3] .. id, entry)
      if entries_ttl > 0 then redis.call('PEXPIRE', ARGV[3] .. id, entries_ttl) end
    end
    if old_info then redis.call('HSET', KEYS[4], id, old_info) end
    local score = redis.call('ZSCORE', KEYS[3], id)
    if score then redis.call('ZADD', KEYS[5], score, id) end
    local raw = redis.pcall('GET', old_rev)
    local rev = revision(old_info)
    if type(raw) ~= 'table' and tonumber(raw) and tonumber(raw) > rev then rev = tonumber(raw) end
    local new_rev = ARGV[2] .. id
    if rev > 0 then redis.call('SET', new_rev, rev) else redis.call('DEL', new_rev) end
    local ttl = redis.call('PTTL', old_rev)
    if ttl > 0 then redis.call('PEXPIRE', new_rev, ttl) end
    moved = moved + 1
  end
  redis.call('DEL', old_rev)
end
for i = 2, 3 do
  local ttl = redis.call('PTTL', KEYS[i])
  if ttl > 0 and not existed[i + 2] then redis.call('PEXPIRE', KEYS[i + 2], ttl) end
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
return {moved, superseded}
"#;

fn migrate_script() -> &'static Script {
    static S: OnceLock<Script> = OnceLock::new();
    S.get_or_init(|| Script::new(MIGRATE_LUA))
}

/// The users that have keys in the legacy layout under `prefix`.
async fn legacy_users(list: &RedisNetworkList, prefix: &str) -> ListResult<BTreeSet<String>> {
    let start = format!("{prefix}:user:");
    let pattern = format!("{}*", glob_escape(&start));
    let mut users = BTreeSet::new();
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<String>) = list
            .connector()
            .run("migrate (scan)", |mut conn| {
                let pattern = &pattern;
                async move {
                    ::redis::cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(pattern)
                        .arg("COUNT")
                        .arg(1000)
                        .query_async(&mut conn)
                        .await
                }
            })
            .await?;
        for key in &keys {
            // `alice:entries`, `alice:rev:<id>`; `{alice}:...` is current.
            let user = key
                .strip_prefix(&start)
                .and_then(|rest| rest.split(':').next());
            if let Some(user) = user.filter(|u| validate_user(u).is_ok()) {
                users.insert(user.to_string());
            }
        }
        if next == 0 {
            return Ok(users);
        }
        cursor = next;
    }
}

/// Moves every user's legacy keys under the list's prefix (see the
/// [module docs](self)).
pub(crate) async fn migrate(list: &RedisNetworkList, prefix: &str) -> ListResult<Migration> {
    let mut done = Migration::default();
    if list.connector().is_cluster() {
        tracing::info!("a cluster never held the legacy layout: nothing to migrate");
        return Ok(done);
    }
    for user in legacy_users(list, prefix).await? {
        let old = UserKeys::legacy(prefix, &user);
        let new = UserKeys::new(prefix, &user);
        let (moved, superseded): (usize, usize) = list
            .connector()
            .run("migrate", |mut conn| {
                let mut call = migrate_script().prepare_invoke();
                call.key(&old.entries).key(&old.info).key(&old.timeline);
                call.key(&new.info).key(&new.timeline);
                call.arg(&old.rev_prefix)
                    .arg(&new.rev_prefix)
                    .arg(&new.entries);
                async move { call.invoke_async(&mut conn).await }
            })
            .await?;
        tracing::info!(user, moved, superseded, "migrated legacy redis keys");
        done.users += 1;
        done.moved += moved;
        done.superseded += superseded;
    }
    Ok(done)
}

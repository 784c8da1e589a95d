//! RedisNetworkList against real servers started by each test on
//! loopback: a plain `redis-server`, a TLS-only one (certificates made
//! here with rcgen) and a 3-master Redis Cluster. The conformance suite
//! runs on all three; here key layout (hash tags), the legacy-layout
//! migration, corrupt entries, concurrent writers and incremental saves;
//! connections (restarts, outages, URLs, Cluster, TLS) in
//! `list_redis_connections.rs`.

use std::time::Duration;

use lc_agent::RunnableNetwork;
use lc_agent::{ListError, ListQuery, NetworkList, RedisNetworkList, REVISION_KEY};
use lc_agent::{Migration, RedisConnector};
use lc_agent_test_support::{needs, RedisCluster, RedisServer};
use serde_json::json;

use crate::conformance;

pub(crate) fn list_for(server: &RedisServer, prefix: &str) -> RedisNetworkList {
    RedisNetworkList::builder(
        RedisConnector::builder()
            .url(server.url())
            .timeout(Duration::from_secs(2))
            .build()
            .expect("connector"),
    )
    .prefix(prefix)
    .user("alice")
    .build()
    .expect("build")
}

pub(crate) async fn raw(server: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(server.url())
        .expect("client")
        .get_multiplexed_async_connection()
        .await
        .expect("connect")
}

#[needs(redis)]
#[tokio::test]
async fn conformance_suite() {
    let server = RedisServer::start();
    let list = list_for(&server, "conf");
    let other = list.with_user("bob").expect("user");
    conformance::run_all(&list, &other).await;
}

#[needs(redis)]
#[tokio::test]
async fn keys_layout_and_delete_leaves_only_a_tombstone() {
    let server = RedisServer::start();
    let list = list_for(&server, "app");
    let (net, _) = conformance::conversation("layout").await;
    let info = list.save(&net).await.expect("save");
    let mut conn = raw(&server).await;
    let id = net.id().to_string();
    let json: String = redis::cmd("GET")
        .arg(format!("app:user:{{alice}}:entry:{id}"))
        .query_async(&mut conn)
        .await
        .expect("get");
    assert_eq!(json, net.to_json().expect("json"));
    let stored_info: String = redis::cmd("HGET")
        .arg("app:user:{alice}:info")
        .arg(&id)
        .query_async(&mut conn)
        .await
        .expect("hget");
    let stored_info: serde_json::Value = serde_json::from_str(&stored_info).expect("info json");
    assert_eq!(stored_info["revision"], json!(1));
    assert_eq!(stored_info["node_count"], json!(4));
    assert!(stored_info.get("nodes").is_none(), "info must stay small");
    let score: f64 = redis::cmd("ZSCORE")
        .arg("app:user:{alice}:timeline")
        .arg(&id)
        .query_async(&mut conn)
        .await
        .expect("zscore");
    assert_eq!(score as i64, info.updated_at.timestamp_micros());
    assert!(list.delete(net.id()).await.expect("delete"));
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("app:*")
        .query_async(&mut conn)
        .await
        .expect("keys");
    // Only the tombstone stays: a delete is final.
    assert_eq!(
        keys,
        [format!("app:user:{{alice}}:rev:{id}")],
        "left behind"
    );
    let tombstone: String = redis::cmd("GET")
        .arg(&keys[0])
        .query_async(&mut conn)
        .await
        .expect("get");
    assert_eq!(tombstone, "deleted");
}

#[needs(redis)]
#[tokio::test]
async fn ttl_applies_to_the_users_keys() {
    let server = RedisServer::start();
    let list = RedisNetworkList::builder(RedisConnector::new(server.url()).expect("connector"))
        .prefix("ttl")
        .ttl(Duration::from_secs(60))
        .build()
        .expect("build");
    let net = RunnableNetwork::new();
    list.save(&net).await.expect("save");
    let mut conn = raw(&server).await;
    let entry = format!("entry:{}", net.id());
    let rev = format!("rev:{}", net.id());
    for what in [entry.as_str(), "info", "timeline", rev.as_str()] {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(format!("ttl:user:{{default}}:{what}"))
            .query_async(&mut conn)
            .await
            .expect("pttl");
        assert!(ttl > 50_000 && ttl <= 60_000, "{what}: {ttl}");
    }
    // The user's sessions expire together: a save renews every network.
    let _: () = redis::cmd("PEXPIRE")
        .arg(format!("ttl:user:{{default}}:{entry}"))
        .arg(5_000)
        .query_async(&mut conn)
        .await
        .expect("pexpire");
    list.save(&RunnableNetwork::new())
        .await
        .expect("save another");
    let ttl: i64 = redis::cmd("PTTL")
        .arg(format!("ttl:user:{{default}}:{entry}"))
        .query_async(&mut conn)
        .await
        .expect("pttl");
    assert!(ttl > 50_000, "not renewed: {ttl}");
}

#[needs(redis)]
#[tokio::test]
async fn corrupt_entries_are_reported() {
    let server = RedisServer::start();
    let list = list_for(&server, "bad");
    let good = RunnableNetwork::builder().name("good").build();
    let broken = RunnableNetwork::builder().name("broken").build();
    let no_info = RunnableNetwork::builder().name("no info").build();
    for n in [&good, &broken, &no_info] {
        list.save(n).await.expect("save");
    }
    let mut conn = raw(&server).await;
    let _: () = redis::cmd("SET")
        .arg(format!("bad:user:{{alice}}:entry:{}", broken.id()))
        .arg("{\"format\":")
        .query_async(&mut conn)
        .await
        .expect("set");
    let _: () = redis::cmd("HSET")
        .arg("bad:user:{alice}:info")
        .arg(broken.id().to_string())
        .arg("not json")
        .query_async(&mut conn)
        .await
        .expect("hset");
    let _: () = redis::cmd("HDEL")
        .arg("bad:user:{alice}:info")
        .arg(no_info.id().to_string())
        .query_async(&mut conn)
        .await
        .expect("hdel");
    match list.load(broken.id()).await {
        Err(ListError::Corrupt { location, id, .. }) => {
            assert_eq!(
                location,
                format!("redis bad:user:{{alice}}:entry:{}", broken.id())
            );
            assert_eq!(id, Some(broken.id()));
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    let page = list.list(&ListQuery::default()).await.expect("list");
    assert_eq!(page.total, 3);
    assert_eq!(
        page.sessions.iter().map(|s| s.id).collect::<Vec<_>>(),
        [good.id()]
    );
    assert_eq!(page.errors.len(), 2);
    assert!(page
        .errors
        .iter()
        .all(|e| matches!(e, ListError::Corrupt { .. })));
    let all = list.load_all().await.expect("load_all");
    // `good` loads; both damaged info entries are error entries.
    assert_eq!(all.iter().filter(|r| r.is_ok()).count(), 1);
    assert_eq!(all.iter().filter(|r| r.is_err()).count(), 2);
    // A forced save repairs the broken session.
    list.save_force(&broken).await.expect("force");
    assert_eq!(list.load(broken.id()).await.expect("load").name(), "broken");
}

/// Two "app servers" (separate clients and connections) update one session
/// concurrently with load, change, save, retry on conflict: no update is
/// lost.
#[needs(redis)]
#[tokio::test]
async fn concurrent_writers_lose_no_update() {
    let server = RedisServer::start();
    let shared = RunnableNetwork::builder().name("shared").build();
    shared.set_metadata("log", json!([]));
    list_for(&server, "cc").save(&shared).await.expect("save");
    let rounds = 30;
    let mut tasks = Vec::new();
    for tag in ["left", "right"] {
        let list = list_for(&server, "cc");
        let id = shared.id();
        tasks.push(tokio::spawn(async move {
            let mut conflicts = 0;
            for i in 0..rounds {
                loop {
                    let net = list.load(id).await.expect("load");
                    let mut log: Vec<String> =
                        serde_json::from_value(net.metadata_value("log").expect("log"))
                            .expect("log");
                    log.push(format!("{tag}-{i}"));
                    net.set_metadata("log", json!(log));
                    match list.save(&net).await {
                        Ok(_) => break,
                        Err(ListError::Conflict { .. }) => conflicts += 1,
                        Err(e) => panic!("{e}"),
                    }
                    tokio::task::yield_now().await;
                }
            }
            conflicts
        }));
    }
    let mut conflicts = 0;
    for t in tasks {
        conflicts += t.await.expect("task");
    }
    let stored = list_for(&server, "cc")
        .load(shared.id())
        .await
        .expect("load");
    let log: Vec<String> =
        serde_json::from_value(stored.metadata_value("log").expect("log")).expect("log");
    assert_eq!(log.len(), 2 * rounds, "an update was lost");
    assert_eq!(
        stored.metadata_value(REVISION_KEY),
        Some(json!(1 + 2 * rounds as u64))
    );
    println!("redis writers: {conflicts} conflicts detected and retried");
}

#[needs(redis)]
#[tokio::test]
async fn many_sessions_of_one_user_save_at_once() {
    // Saves watch their own session only: 200 concurrent saves of
    // different sessions of one user all land, none is refused.
    let server = RedisServer::start();
    let list = list_for(&server, "busy");
    let mut tasks = Vec::new();
    for i in 0..200 {
        let list = list.clone();
        tasks.push(tokio::spawn(async move {
            let net = RunnableNetwork::builder().name(format!("s{i}")).build();
            list.save(&net).await.map(|_| ())
        }));
    }
    for t in tasks {
        t.await.expect("task").expect("save");
    }
    let page = list
        .list(&ListQuery {
            limit: 500,
            ..ListQuery::default()
        })
        .await
        .expect("list");
    assert_eq!(page.total, 200);
}

#[needs(redis)]
#[tokio::test]
async fn a_damaged_revision_key_heals_on_the_next_save() {
    let server = RedisServer::start();
    let list = list_for(&server, "dmg");
    let net = RunnableNetwork::builder().name("first").build();
    list.save(&net).await.expect("save");
    let mut conn = raw(&server).await;
    let rev_key = format!("dmg:user:{{alice}}:rev:{}", net.id());
    let _: () = redis::cmd("DEL")
        .arg(&rev_key)
        .query_async(&mut conn)
        .await
        .expect("del");
    let _: () = redis::cmd("HSET")
        .arg(&rev_key)
        .arg("not")
        .arg("a string")
        .query_async(&mut conn)
        .await
        .expect("hset");
    net.set_name("second");
    let info = list.save(&net).await.expect("save over a damaged rev key");
    assert_eq!(info.revision, 2);
    assert_eq!(list.load(net.id()).await.expect("load").name(), "second");
    let stored: String = redis::cmd("GET")
        .arg(&rev_key)
        .query_async(&mut conn)
        .await
        .expect("get");
    assert_eq!(stored, "2");
}

/// Rewrites `user`'s sessions from the current layout into the legacy one
/// (`<prefix>:user:<user>:entries` hash, no hash tag), as the version
/// before hash tags wrote them, keeping any expiry.
async fn to_legacy_layout(conn: &mut redis::aio::MultiplexedConnection, prefix: &str, user: &str) {
    let script = redis::Script::new(
        r#"
local ids = redis.call('ZRANGE', KEYS[2], 0, -1)
for _, id in ipairs(ids) do
  redis.call('HSET', KEYS[4], id, redis.call('GET', ARGV[1] .. id))
  redis.call('DEL', ARGV[1] .. id)
  redis.call('RENAME', ARGV[2] .. id, ARGV[3] .. id)
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[4], ttl) end
redis.call('RENAME', KEYS[1], KEYS[5])
redis.call('RENAME', KEYS[2], KEYS[6])
return #ids
"#,
    );
    let (new, old) = (
        format!("{prefix}:user:{{{user}}}"),
        format!("{prefix}:user:{user}"),
    );
    let moved: usize = script
        .key(format!("{new}:info"))
        .key(format!("{new}:timeline"))
        .key("unused")
        .key(format!("{old}:entries"))
        .key(format!("{old}:info"))
        .key(format!("{old}:timeline"))
        .arg(format!("{new}:entry:"))
        .arg(format!("{new}:rev:"))
        .arg(format!("{old}:rev:"))
        .invoke_async(conn)
        .await
        .expect("to legacy");
    assert!(moved > 0);
}

#[needs(redis)]
#[tokio::test]
async fn legacy_keys_migrate_to_hash_tags() {
    let server = RedisServer::start();
    let alice = RedisNetworkList::builder(RedisConnector::new(server.url()).expect("connector"))
        .prefix("mig")
        .user("alice")
        .ttl(Duration::from_secs(600))
        .build()
        .expect("build");
    let bob = alice.with_user("bob").expect("user");
    let (a1, _) = conformance::conversation("a1").await;
    let a2 = RunnableNetwork::builder().name("a2").build();
    for net in [&a1, &a2] {
        alice.save(net).await.expect("save");
    }
    let b1 = RunnableNetwork::builder().name("b1 old").build();
    bob.save(&b1).await.expect("save");
    let mut conn = raw(&server).await;
    to_legacy_layout(&mut conn, "mig", "alice").await;
    to_legacy_layout(&mut conn, "mig", "bob").await;
    // Legacy data is not read by this version...
    assert_eq!(
        alice.list(&ListQuery::default()).await.expect("list").total,
        0
    );
    // ... and bob saved b1 again meanwhile (revision 2, current layout).
    b1.set_name("b1 new");
    bob.save_force(&b1).await.expect("save");
    let untouched = RunnableNetwork::builder().name("other prefix").build();
    let other_prefix =
        RedisNetworkList::builder(RedisConnector::new(server.url()).expect("connector"))
            .prefix("mig2")
            .build()
            .expect("build");
    other_prefix.save(&untouched).await.expect("save");

    let done = alice.migrate_legacy_keys().await.expect("migrate");
    assert_eq!(
        (done.users, done.moved, done.superseded),
        (2, 2, 1),
        "{done:?}"
    );
    let page = alice.list(&ListQuery::default()).await.expect("list");
    assert_eq!(
        page.sessions
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>(),
        ["a2", "a1"]
    );
    assert_eq!(
        alice.load_json(a1.id()).await.expect("load"),
        a1.to_json().expect("json")
    );
    // The revision travelled too: a stale copy still conflicts.
    let stale = RunnableNetwork::from_json(&a1.to_json().expect("json")).expect("copy");
    alice
        .save(&a1)
        .await
        .expect("save at the migrated revision");
    assert!(matches!(
        alice.save(&stale).await,
        Err(ListError::Conflict { .. })
    ));
    assert_eq!(bob.load(b1.id()).await.expect("load").name(), "b1 new");
    // The expiry carried over; nothing legacy is left; other prefixes untouched.
    let ttl: i64 = redis::cmd("PTTL")
        .arg("mig:user:{alice}:info")
        .query_async(&mut conn)
        .await
        .expect("pttl");
    assert!(ttl > 0, "{ttl}");
    let legacy: Vec<String> = redis::cmd("KEYS")
        .arg("mig:user:[ab]*")
        .query_async(&mut conn)
        .await
        .expect("keys");
    assert!(legacy.is_empty(), "left behind: {legacy:?}");
    assert_eq!(
        other_prefix
            .load(untouched.id())
            .await
            .expect("load")
            .name(),
        "other prefix"
    );
    // Idempotent.
    assert_eq!(
        alice.migrate_legacy_keys().await.expect("again"),
        Migration::default()
    );
}

#[tokio::test]
async fn a_prefix_cannot_carry_a_hash_tag() {
    let connector = RedisConnector::new("redis://127.0.0.1:1").expect("connector");
    let r = RedisNetworkList::builder(connector.clone())
        .prefix("app{x}")
        .build();
    assert!(matches!(r, Err(ListError::Config(_))), "{r:?}");
    // A connector can be shared by lists of several prefixes.
    let list = RedisNetworkList::builder(connector.clone())
        .prefix("a")
        .build()
        .expect("build");
    assert_eq!(list.connector().describe(), "redis at redis://127.0.0.1:1");
}

/// Incremental saves on one server and on a Cluster: many turns round
/// trip exactly, a turn appends one small record to the session's journal
/// (in the user's slot), a full save compacts it, stale copies are refused.
#[needs(redis)]
#[tokio::test]
async fn incremental_saves_round_trip() {
    use crate::incremental::{many_turns_round_trip, stale_copies_are_refused, turn};
    let server = RedisServer::start();
    let list = list_for(&server, "inc");
    many_turns_round_trip(&list, &list_for(&server, "inc")).await;
    stale_copies_are_refused(&list).await;

    let net = crate::incremental::chat_network();
    net.set_metadata("payload", json!("x".repeat(50_000)));
    list.save(&net).await.expect("save");
    let mut conn = raw(&server).await;
    let journal = format!("inc:user:{{alice}}:journal:{}", net.id());
    let entry = format!("inc:user:{{alice}}:entry:{}", net.id());
    let (mut records, mut compactions) = (0, 0);
    for i in 0..100 {
        turn(&net, i).await;
        list.save(&net).await.expect("save turn");
        let len: usize = redis::cmd("LLEN")
            .arg(&journal)
            .query_async(&mut conn)
            .await
            .expect("llen");
        if len == 0 {
            compactions += 1;
        } else {
            let last: String = redis::cmd("LINDEX")
                .arg(&journal)
                .arg(-1)
                .query_async(&mut conn)
                .await
                .expect("lindex");
            assert!(last.len() < 2_000, "turn {i} wrote {} bytes", last.len());
            records += 1;
        }
    }
    assert!(
        records > 50 && compactions >= 1,
        "{records} records, {compactions} compactions"
    );
    let entry_len: usize = redis::cmd("STRLEN")
        .arg(&entry)
        .query_async(&mut conn)
        .await
        .expect("strlen");
    assert!(entry_len > 50_000);
    let loaded = list_for(&server, "inc").load(net.id()).await.expect("load");
    assert_eq!(loaded.to_json().unwrap(), net.to_json().unwrap());
    assert!(list.delete(net.id()).await.expect("delete"));
    let left: usize = redis::cmd("EXISTS")
        .arg(&journal)
        .query_async(&mut conn)
        .await
        .expect("exists");
    assert_eq!(left, 0, "the delete removes the journal");

    let cluster = RedisCluster::start();
    let clustered = || {
        RedisNetworkList::builder(
            RedisConnector::builder()
                .cluster(cluster.urls())
                .timeout(Duration::from_secs(5))
                .build()
                .expect("connector"),
        )
        .prefix("inc")
        .user("alice")
        .build()
        .expect("build")
    };
    many_turns_round_trip(&clustered(), &clustered()).await;
}

/// kill -9 of a process making incremental saves of a growing chat, 20
/// times at different moments: the session loads whole, at the last
/// acknowledged turn or the one after it.
#[needs(redis)]
#[tokio::test]
async fn kill_9_during_incremental_saves() {
    let server = RedisServer::start();
    crate::list_json::kill_9_during_turns(
        &[("REDIS", server.url())],
        || {
            let list: Box<dyn NetworkList> = Box::new(list_for(&server, "crash"));
            list
        },
        || {
            // Close every client connection now: the dead child's last
            // request, if still unread, can then never run after the loads.
            let out = std::process::Command::new("redis-cli")
                .args([
                    "-p",
                    &server.port().to_string(),
                    "CLIENT",
                    "KILL",
                    "TYPE",
                    "normal",
                ])
                .output()
                .expect("redis-cli");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        },
    )
    .await;
}

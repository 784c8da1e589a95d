//! RedisNetworkList against a real `redis-server` started by each test:
//! the conformance suite, key layout, corrupt entries, concurrent writers,
//! restart and outage behaviour.

#[path = "support/conformance.rs"]
mod conformance;
#[path = "support/redis.rs"]
mod redis_server;

use std::time::{Duration, Instant};

use lc_agent::list::{ListError, ListQuery, NetworkList, RedisNetworkList, REVISION_KEY};
use lc_agent::RunnableNetwork;
use redis_server::RedisServer;
use serde_json::json;

fn list_for(server: &RedisServer, prefix: &str) -> RedisNetworkList {
    RedisNetworkList::builder()
        .url(server.url())
        .prefix(prefix)
        .user("alice")
        .timeout(Duration::from_secs(2))
        .build()
        .expect("build")
}

async fn raw(server: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(server.url())
        .expect("client")
        .get_multiplexed_async_connection()
        .await
        .expect("connect")
}

#[tokio::test]
async fn conformance_suite() {
    let Some(server) = RedisServer::start("conformance_suite") else {
        return;
    };
    let list = list_for(&server, "conf");
    let other = list.with_user("bob").expect("user");
    conformance::run_all(&list, &other).await;
}

#[tokio::test]
async fn keys_layout_and_delete_removes_every_trace() {
    let Some(server) = RedisServer::start("keys_layout") else {
        return;
    };
    let list = list_for(&server, "app");
    let (net, _) = conformance::conversation("layout").await;
    let info = list.save(&net).await.expect("save");
    let mut conn = raw(&server).await;
    let id = net.id().to_string();
    let json: String = redis::cmd("HGET")
        .arg("app:user:alice:entries")
        .arg(&id)
        .query_async(&mut conn)
        .await
        .expect("hget");
    assert_eq!(json, net.to_json().expect("json"));
    let stored_info: String = redis::cmd("HGET")
        .arg("app:user:alice:info")
        .arg(&id)
        .query_async(&mut conn)
        .await
        .expect("hget");
    let stored_info: serde_json::Value = serde_json::from_str(&stored_info).expect("info json");
    assert_eq!(stored_info["revision"], json!(1));
    assert_eq!(stored_info["node_count"], json!(4));
    assert!(stored_info.get("nodes").is_none(), "info must stay small");
    let score: f64 = redis::cmd("ZSCORE")
        .arg("app:user:alice:timeline")
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
    assert!(keys.is_empty(), "left behind: {keys:?}");
}

#[tokio::test]
async fn ttl_applies_to_the_users_keys() {
    let Some(server) = RedisServer::start("ttl") else {
        return;
    };
    let list = RedisNetworkList::builder()
        .url(server.url())
        .prefix("ttl")
        .ttl(Duration::from_secs(60))
        .build()
        .expect("build");
    let net = RunnableNetwork::new();
    list.save(&net).await.expect("save");
    let mut conn = raw(&server).await;
    let rev = format!("rev:{}", net.id());
    for what in ["entries", "info", "timeline", rev.as_str()] {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(format!("ttl:user:default:{what}"))
            .query_async(&mut conn)
            .await
            .expect("pttl");
        assert!(ttl > 50_000 && ttl <= 60_000, "{what}: {ttl}");
    }
}

#[tokio::test]
async fn corrupt_entries_are_reported() {
    let Some(server) = RedisServer::start("corrupt_entries") else {
        return;
    };
    let list = list_for(&server, "bad");
    let good = RunnableNetwork::builder().name("good").build();
    let broken = RunnableNetwork::builder().name("broken").build();
    let no_info = RunnableNetwork::builder().name("no info").build();
    for n in [&good, &broken, &no_info] {
        list.save(n).await.expect("save");
    }
    let mut conn = raw(&server).await;
    let _: () = redis::cmd("HSET")
        .arg("bad:user:alice:entries")
        .arg(broken.id().to_string())
        .arg("{\"format\":")
        .query_async(&mut conn)
        .await
        .expect("hset");
    let _: () = redis::cmd("HSET")
        .arg("bad:user:alice:info")
        .arg(broken.id().to_string())
        .arg("not json")
        .query_async(&mut conn)
        .await
        .expect("hset");
    let _: () = redis::cmd("HDEL")
        .arg("bad:user:alice:info")
        .arg(no_info.id().to_string())
        .query_async(&mut conn)
        .await
        .expect("hdel");
    match list.load(broken.id()).await {
        Err(ListError::Corrupt { location, id, .. }) => {
            assert_eq!(
                location,
                format!("redis bad:user:alice:entries field {}", broken.id())
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
#[tokio::test]
async fn concurrent_writers_lose_no_update() {
    let Some(server) = RedisServer::start("concurrent_writers") else {
        return;
    };
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

#[tokio::test]
async fn restart_between_operations_reconnects() {
    let Some(mut server) = RedisServer::start("restart") else {
        return;
    };
    let list = list_for(&server, "rs");
    let net = RunnableNetwork::builder().name("before").build();
    list.save(&net).await.expect("save");
    assert_eq!(
        list.list(&ListQuery::default()).await.expect("list").total,
        1
    );
    server.restart(); // persistence is off: the data is gone, the connection broken
    let after = RunnableNetwork::builder().name("after").build();
    list.save(&after)
        .await
        .expect("the first operation after a restart succeeds");
    let page = list.list(&ListQuery::default()).await.expect("list");
    assert_eq!(
        page.sessions
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>(),
        ["after"]
    );
    assert!(matches!(
        list.load(net.id()).await,
        Err(ListError::NotFound { .. })
    ));
    // Down, then back: errors while down, and the next operation works.
    server.stop();
    assert!(matches!(
        list.load(after.id()).await,
        Err(ListError::Unavailable { .. })
    ));
    server.restart();
    list.save(&after).await.expect("save after coming back");
    assert_eq!(list.load(after.id()).await.expect("load").name(), "after");
}

#[tokio::test]
async fn outage_fails_within_the_timeout() {
    let Some(mut server) = RedisServer::start("outage") else {
        return;
    };
    // Refused connections, before the first connection was ever made.
    let port = server.port();
    server.stop();
    let list = RedisNetworkList::builder()
        .url(format!("redis://127.0.0.1:{port}"))
        .timeout(Duration::from_millis(800))
        .build()
        .expect("build");
    let started = Instant::now();
    let r = list.save(&RunnableNetwork::new()).await;
    assert!(matches!(r, Err(ListError::Unavailable { .. })), "{r:?}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );

    // A server that accepts and never answers: the default 5 s deadline.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!(
        "redis://127.0.0.1:{}",
        silent.local_addr().expect("addr").port()
    );
    let hold = std::thread::spawn(move || {
        // Accept a few connections and keep them open without answering.
        let mut held = Vec::new();
        silent.set_nonblocking(true).expect("nonblocking");
        let until = Instant::now() + Duration::from_secs(8);
        while Instant::now() < until {
            if let Ok((s, _)) = silent.accept() {
                held.push(s);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let list = RedisNetworkList::builder().url(url).build().expect("build");
    let started = Instant::now();
    let r = list.list(&ListQuery::default()).await;
    let took = started.elapsed();
    assert!(matches!(r, Err(ListError::Unavailable { .. })), "{r:?}");
    assert!(
        took >= Duration::from_millis(4500) && took < Duration::from_secs(7),
        "{took:?}"
    );
    drop(hold);
}

#[tokio::test]
async fn many_sessions_of_one_user_save_at_once() {
    // Saves watch their own session only: 200 concurrent saves of
    // different sessions of one user all land, none is refused.
    let Some(server) = RedisServer::start("many_at_once") else {
        return;
    };
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

#[tokio::test]
async fn a_damaged_revision_key_heals_on_the_next_save() {
    let Some(server) = RedisServer::start("damaged_rev") else {
        return;
    };
    let list = list_for(&server, "dmg");
    let net = RunnableNetwork::builder().name("first").build();
    list.save(&net).await.expect("save");
    let mut conn = raw(&server).await;
    let rev_key = format!("dmg:user:alice:rev:{}", net.id());
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

#[tokio::test]
async fn password_and_database_from_the_url() {
    let Some(server) =
        RedisServer::start_with("password_and_database", &["--requirepass", "secret"])
    else {
        return;
    };
    let url = format!("redis://:secret@127.0.0.1:{}/3", server.port());
    let list = RedisNetworkList::builder()
        .url(&url)
        .prefix("auth")
        .user("alice")
        .timeout(Duration::from_secs(2))
        .build()
        .expect("build");
    let (net, _) = conformance::conversation("behind a password").await;
    list.save(&net).await.expect("save");
    let json = net.to_json().expect("json");
    assert_eq!(list.load_json(net.id()).await.expect("load"), json);
    assert_eq!(
        list.list(&ListQuery::default()).await.expect("list").total,
        1
    );
    // The data landed in database 3, and nowhere else.
    let client = redis::Client::open(url.as_str()).expect("client");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    let stored: String = redis::cmd("HGET")
        .arg("auth:user:alice:entries")
        .arg(net.id().to_string())
        .query_async(&mut conn)
        .await
        .expect("hget");
    assert_eq!(stored, json);
    let db0 = redis::Client::open(format!("redis://:secret@127.0.0.1:{}/0", server.port()))
        .expect("client");
    let mut conn0 = db0
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    let keys: usize = redis::cmd("DBSIZE")
        .query_async(&mut conn0)
        .await
        .expect("dbsize");
    assert_eq!(keys, 0);

    // A wrong password fails promptly and clearly, for saves and loads.
    let wrong = RedisNetworkList::builder()
        .url(format!("redis://:wrong@127.0.0.1:{}/3", server.port()))
        .prefix("auth")
        .user("alice")
        .timeout(Duration::from_secs(2))
        .build()
        .expect("build");
    let started = Instant::now();
    match wrong.save(&RunnableNetwork::new()).await {
        Err(ListError::Unavailable {
            reason: message, ..
        }) => assert!(
            message.to_lowercase().contains("auth") || message.contains("WRONGPASS"),
            "{message}"
        ),
        other => panic!("expected Unavailable, got {other:?}"),
    }
    assert!(matches!(
        wrong.load_json(net.id()).await,
        Err(ListError::Unavailable { .. })
    ));
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[cfg(unix)]
#[tokio::test]
async fn unix_socket_url() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("redis.sock");
    let socket = socket.to_str().expect("utf-8 path");
    let Some(_server) = RedisServer::start_with("unix_socket", &["--unixsocket", socket]) else {
        return;
    };
    let list = RedisNetworkList::builder()
        .url(format!("redis+unix://{socket}?db=2"))
        .prefix("unix")
        .timeout(Duration::from_secs(2))
        .build()
        .expect("build");
    let (net, _) = conformance::conversation("over a unix socket").await;
    list.save(&net).await.expect("save");
    let loaded = list.load(net.id()).await.expect("load");
    assert_eq!(
        loaded.to_json().expect("json"),
        net.to_json().expect("json")
    );
    assert_eq!(
        list.list(&ListQuery::default()).await.expect("list").total,
        1
    );
}

/// After a restart every pooled connection is stale: the first save and
/// the first load still succeed from the caller's point of view.
#[tokio::test]
async fn a_restart_replaces_stale_pooled_connections() {
    let Some(mut server) = RedisServer::start("stale_pool") else {
        return;
    };
    let list = list_for(&server, "stale");
    // Several idle connections: concurrent saves and loads.
    let nets: Vec<RunnableNetwork> = (0..6)
        .map(|i| RunnableNetwork::builder().name(format!("n{i}")).build())
        .collect();
    let saves = nets.iter().map(|n| list.save(n));
    for r in futures::future::join_all(saves).await {
        r.expect("save");
    }
    let loads = nets.iter().map(|n| list.load_json(n.id()));
    for r in futures::future::join_all(loads).await {
        r.expect("load");
    }
    server.restart();
    let after = RunnableNetwork::builder().name("after").build();
    let info = list
        .save(&after)
        .await
        .expect("the first save after a restart succeeds");
    assert_eq!(info.revision, 1);
    assert_eq!(
        list.load(after.id()).await.expect("first load").name(),
        "after"
    );
    // The old data is gone (persistence is off), and it says so.
    assert!(matches!(
        list.load_json(nets[0].id()).await,
        Err(ListError::NotFound { .. })
    ));
    // And again, with loads first this time.
    server.restart();
    assert!(matches!(
        list.load_json(after.id()).await,
        Err(ListError::NotFound { .. })
    ));
    after.set_name("again");
    list.save_force(&after).await.expect("save");
    assert_eq!(list.load(after.id()).await.expect("load").name(), "again");
}

/// Saves and loads use direct connections: a server that never answers
/// makes them fail at the deadline, not hang.
#[tokio::test]
async fn direct_operations_fail_within_the_timeout() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!(
        "redis://127.0.0.1:{}",
        silent.local_addr().expect("addr").port()
    );
    let list = RedisNetworkList::builder()
        .url(url)
        .timeout(Duration::from_millis(600))
        .build()
        .expect("build");
    let net = RunnableNetwork::new();
    for op in ["save", "load"] {
        let started = Instant::now();
        let r = match op {
            "save" => list.save(&net).await.map(|_| ()),
            _ => list.load_json(net.id()).await.map(|_| ()),
        };
        let took = started.elapsed();
        assert!(
            matches!(r, Err(ListError::Unavailable { .. })),
            "{op}: {r:?}"
        );
        assert!(
            took >= Duration::from_millis(550) && took < Duration::from_secs(2),
            "{op}: {took:?}"
        );
    }
    // A failed save leaves the network's metadata as it was.
    assert_eq!(net.metadata_value(REVISION_KEY), None);
    drop(silent);
}

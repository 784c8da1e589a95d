//! RedisNetworkList's connections, against real servers started by each
//! test on loopback: a restart between operations, an outage, a stale
//! connection after a restart, timeouts, passwords and databases from the
//! URL, a Unix socket, and the conformance suite on a Cluster and over TLS.

use std::time::{Duration, Instant};

use lc_agent::RedisConnector;
use lc_agent::RunnableNetwork;
use lc_agent::{revision_of, ListError, ListQuery, NetworkList, RedisNetworkList, REVISION_KEY};
use lc_agent_test_support::{needs, RedisCluster, RedisServer, TestCertificates};
use serde_json::json;

use crate::conformance;
use crate::list_redis::list_for;

#[needs(redis)]
#[tokio::test]
async fn restart_between_operations_reconnects() {
    let mut server = RedisServer::start();
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

#[needs(redis)]
#[tokio::test]
async fn outage_fails_within_the_timeout() {
    let mut server = RedisServer::start();
    // Refused connections, before the first connection was ever made.
    let port = server.port();
    server.stop();
    let list = RedisNetworkList::builder(
        RedisConnector::builder()
            .url(format!("redis://127.0.0.1:{port}"))
            .timeout(Duration::from_millis(800))
            .build()
            .expect("connector"),
    )
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
    let list = RedisNetworkList::builder(RedisConnector::new(url).expect("connector"))
        .build()
        .expect("build");
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

#[needs(redis)]
#[tokio::test]
async fn password_and_database_from_the_url() {
    let server = RedisServer::start_with(&["--requirepass", "secret"]);
    let url = format!("redis://:secret@127.0.0.1:{}/3", server.port());
    let list = RedisNetworkList::builder(
        RedisConnector::builder()
            .url(&url)
            .timeout(Duration::from_secs(2))
            .build()
            .expect("connector"),
    )
    .prefix("auth")
    .user("alice")
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
    let stored: String = redis::cmd("GET")
        .arg(format!("auth:user:{{alice}}:entry:{}", net.id()))
        .query_async(&mut conn)
        .await
        .expect("get");
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
    let wrong = RedisNetworkList::builder(
        RedisConnector::builder()
            .url(format!("redis://:wrong@127.0.0.1:{}/3", server.port()))
            .timeout(Duration::from_secs(2))
            .build()
            .expect("connector"),
    )
    .prefix("auth")
    .user("alice")
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
#[needs(redis)]
#[tokio::test]
async fn unix_socket_url() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("redis.sock");
    let socket = socket.to_str().expect("utf-8 path");
    let _server = RedisServer::start_with(&["--unixsocket", socket]);
    let list = RedisNetworkList::builder(
        RedisConnector::builder()
            .url(format!("redis+unix://{socket}?db=2"))
            .timeout(Duration::from_secs(2))
            .build()
            .expect("connector"),
    )
    .prefix("unix")
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

/// After a restart the shared connection is stale: the first save and
/// the first load (concurrent ones before it) still succeed from the
/// caller's point of view.
#[needs(redis)]
#[tokio::test]
async fn a_restart_replaces_the_stale_connection() {
    let mut server = RedisServer::start();
    let list = list_for(&server, "stale");
    // Concurrent saves and loads on the one multiplexed connection.
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

/// A server that never answers makes saves and loads fail at the
/// deadline, not hang.
#[tokio::test]
async fn saves_and_loads_fail_within_the_timeout() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!(
        "redis://127.0.0.1:{}",
        silent.local_addr().expect("addr").port()
    );
    let list = RedisNetworkList::builder(
        RedisConnector::builder()
            .url(url)
            .timeout(Duration::from_millis(600))
            .build()
            .expect("connector"),
    )
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

#[needs(redis)]
#[tokio::test]
async fn conformance_suite_on_a_cluster() {
    let cluster = RedisCluster::start();
    let list = RedisNetworkList::builder(
        RedisConnector::builder()
            .cluster(cluster.urls())
            .timeout(Duration::from_secs(5))
            .build()
            .expect("connector"),
    )
    .prefix("conf")
    .user("alice")
    .build()
    .expect("build");
    assert!(list.connector().describe().starts_with("redis cluster at "));
    let other = list.with_user("bob").expect("user");
    conformance::run_all(&list, &other).await;

    // Many users: their slots spread over the three masters, and every
    // user's save, list, load and delete runs within its own slot.
    let mut ids = Vec::new();
    for i in 0..24 {
        let user = list.with_user(format!("user-{i}")).expect("user");
        let net = RunnableNetwork::builder().name(format!("n{i}")).build();
        user.save(&net).await.expect("save");
        net.set_name(format!("n{i} again"));
        user.save(&net).await.expect("save again");
        ids.push((user, net.id()));
    }
    for (user, id) in &ids {
        let page = user.list(&ListQuery::default()).await.expect("list");
        assert_eq!(page.total, 1);
        assert_eq!(page.sessions[0].revision, 2);
        assert_eq!(revision_of(&user.load(*id).await.expect("load")), 2);
    }
    let mut masters_with_keys = 0;
    for url in cluster.urls() {
        let mut conn = redis::Client::open(url)
            .expect("client")
            .get_multiplexed_async_connection()
            .await
            .expect("connect");
        let keys: usize = redis::cmd("DBSIZE")
            .query_async(&mut conn)
            .await
            .expect("dbsize");
        masters_with_keys += usize::from(keys > 0);
    }
    assert!(masters_with_keys >= 2, "users all landed on one master");
    for (user, id) in &ids {
        assert!(user.delete(*id).await.expect("delete"));
    }
}

#[needs(redis)]
#[tokio::test]
async fn conformance_suite_over_tls() {
    let certs = TestCertificates::new();
    let server = RedisServer::start_tls(&certs.cert(), &certs.key(), &certs.ca());
    assert!(server.url().starts_with("rediss://"));
    let list = RedisNetworkList::builder(
        RedisConnector::builder()
            .url(server.url())
            .tls_root_certificates(certs.ca_pem.clone())
            .timeout(Duration::from_secs(5))
            .build()
            .expect("connector"),
    )
    .prefix("tls")
    .user("alice")
    .build()
    .expect("build");
    let other = list.with_user("bob").expect("user");
    conformance::run_all(&list, &other).await;
    // A big network crosses TLS records intact.
    let (net, _) = conformance::conversation("over tls").await;
    net.set_metadata("blob", json!("x".repeat(3 << 20)));
    list.save(&net).await.expect("save");
    assert_eq!(
        list.load_json(net.id()).await.expect("load"),
        net.to_json().expect("json")
    );

    // A client that does not trust the CA fails clearly, promptly.
    let untrusting = RedisNetworkList::builder(
        RedisConnector::builder()
            .url(server.url())
            .timeout(Duration::from_secs(2))
            .build()
            .expect("connector"),
    )
    .build()
    .expect("build");
    let started = Instant::now();
    match untrusting.load_json(net.id()).await {
        Err(ListError::Unavailable { reason, .. }) => {
            assert!(reason.contains("rediss://127.0.0.1"), "{reason}")
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(2));
    // Certificates need a rediss:// URL.
    assert!(matches!(
        RedisConnector::builder()
            .url("redis://127.0.0.1:1")
            .tls_root_certificates(certs.ca_pem.clone())
            .build(),
        Err(ListError::Config(_))
    ));
}

//! `StoreBackend` over real Redis servers started on free loopback ports:
//! one plain server, a 3-master Cluster and a TLS-only server. Without
//! redis-server (and redis-cli) the tests fail under CI=true and print a
//! skip note elsewhere.
#![allow(clippy::unwrap_used, unreachable_pub)]

mod common;
#[path = "../../../tests/support/redis_cluster.rs"]
mod redis_cluster;
#[path = "../../../tests/support/redis.rs"]
mod redis_server;
#[path = "../../../tests/support/tls.rs"]
mod tls;

use lc_agent::RedisConnector;
use lc_agent_filesystem::{run_tool, RedisStore, StoreBackend};
use serde_json::json;

async fn command_calls(url: &str, command: &str) -> u64 {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut conn)
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("cmdstat_{command}:calls=")))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

#[tokio::test]
async fn redis_store_backend() {
    let Some(server) = redis_server::RedisServer::start("redis_store_backend") else {
        return;
    };
    let url = server.url();
    let backend = StoreBackend::redis(&url, ["user-42", "filesystem"]);
    let failures = common::run_table(&backend, "").await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));

    // grep and glob read the namespace in one round trip, never file by file.
    let (hget, hgetall) = (
        command_calls(&url, "hget").await,
        command_calls(&url, "hgetall").await,
    );
    let out = run_tool(&backend, "grep", &json!({"pattern": "file 100[0-4]"}))
        .await
        .unwrap();
    assert_eq!(out.content.lines().count(), 5);
    let out = run_tool(
        &backend,
        "glob",
        &json!({"pattern": "*.txt", "path": "/many"}),
    )
    .await
    .unwrap();
    assert!(out
        .content
        .ends_with("... (5 more matches; narrow the pattern)"));
    assert_eq!(command_calls(&url, "hget").await, hget);
    assert_eq!(command_calls(&url, "hgetall").await, hgetall + 1);

    // Another session (a new backend) sees the same files; other namespaces do not.
    let again = StoreBackend::redis(&url, ["user-42", "filesystem"]);
    let out = run_tool(
        &again,
        "read_file",
        &json!({"file_path": "/src/main.rs", "limit": 1}),
    )
    .await
    .unwrap();
    assert_eq!(
        out.content,
        "     1\tfn main() {\n[Showing lines 1-1 of 3. Use offset=1 to read more.]"
    );
    let other = StoreBackend::redis(&url, ["user-43", "filesystem"]);
    let out = run_tool(&other, "ls", &json!({"path": "/"})).await.unwrap();
    assert_eq!(out.content, "(empty directory)");

    // A server that is gone is an error result, not a panic.
    let gone = StoreBackend::redis("redis://127.0.0.1:1/0", ["x"]);
    let out = run_tool(&gone, "ls", &json!({})).await.unwrap();
    assert!(
        out.content.starts_with("Error: Storage error: redis:"),
        "{}",
        out.content
    );
}

/// The whole tool table on a connector of its own (a Cluster, TLS).
async fn table_on(connector: RedisConnector) {
    let backend = StoreBackend::new(
        RedisStore::with_connector(connector),
        ["user-42", "filesystem"],
    );
    let failures = common::run_table(&backend, "").await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[tokio::test]
async fn redis_store_backend_on_a_cluster() {
    let Some(cluster) = redis_cluster::RedisCluster::start("redis_store_on_a_cluster") else {
        return;
    };
    let connector = RedisConnector::builder()
        .cluster(cluster.urls())
        .build()
        .unwrap();
    table_on(connector).await;
}

#[tokio::test]
async fn redis_store_backend_over_tls() {
    let certs = tls::TestCertificates::new();
    let Some(server) = redis_server::RedisServer::start_tls(
        "redis_store_over_tls",
        &certs.cert(),
        &certs.key(),
        &certs.ca(),
    ) else {
        return;
    };
    let connector = RedisConnector::builder()
        .url(server.url())
        .tls_root_certificates(certs.ca_pem.clone())
        .build()
        .unwrap();
    table_on(connector).await;
}

/// Two app servers (two stores, two connections) edit one file at once:
/// the compare-and-set write loses no update.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_editing_one_file_lose_no_update() {
    let Some(server) = redis_server::RedisServer::start("redis_store_two_editors") else {
        return;
    };
    let url = server.url();
    let a: std::sync::Arc<dyn lc_agent_filesystem::Backend> =
        std::sync::Arc::new(StoreBackend::redis(&url, ["user-7", "memories"]));
    let b: std::sync::Arc<dyn lc_agent_filesystem::Backend> =
        std::sync::Arc::new(StoreBackend::redis(&url, ["user-7", "memories"]));
    let rounds = 60;
    let lines = common::two_editors(a, b, rounds).await;
    common::assert_no_lost_update(&lines, rounds);
}

/// Files at the edges (issue 21, items 13-15) on Redis: huge lines, late
/// NUL bytes, files too large to count, odd names, bytes that are not UTF-8.
#[tokio::test]
async fn redis_store_edges() {
    use lc_agent_filesystem::Store;
    let Some(server) = redis_server::RedisServer::start("redis_store_edges") else {
        return;
    };
    let store = RedisStore::new(server.url());
    let backend = StoreBackend::new(store.clone(), ["user-42", "edges"]);
    common::edges::load(&backend, "").await;
    let failures = common::run_cases(&backend, "", common::edges::table()).await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    let ns = ["user-42".to_string(), "edges".to_string()];
    for name in common::edges::ODD_NAMES {
        store
            .put(&ns, name, &lc_agent::FileData::new("needle\n"))
            .await
            .unwrap();
    }
    let failures = common::run_cases(&backend, "", common::edges::odd_table()).await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    let failures = common::edges::check_uploads(&backend, "", false).await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

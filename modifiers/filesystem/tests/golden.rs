//! The golden table (tests/common) against every backend: exact outputs.
#![allow(clippy::unwrap_used, unreachable_pub)]

mod common;

use lc_agent::RunnableNetwork;
use lc_agent_filesystem::StateBackend;

fn assert_clean(failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[tokio::test]
async fn golden_state_backend() {
    let backend = StateBackend::new(RunnableNetwork::new());
    assert_clean(common::run_table(&backend, "").await);
}

#[tokio::test]
async fn golden_filesystem_backend() {
    let dir = tempfile::tempdir().unwrap();
    let backend = lc_agent_filesystem::FilesystemBackend::new(dir.path()).unwrap();
    assert_clean(common::run_table(&backend, "").await);
}

#[tokio::test]
async fn golden_composite_route_to_disk() {
    use lc_agent_filesystem::{CompositeBackend, FilesystemBackend};
    let dir = tempfile::tempdir().unwrap();
    let net = RunnableNetwork::new();
    let composite = CompositeBackend::new(StateBackend::factory())
        .route("/ws/", FilesystemBackend::new(dir.path()).unwrap())
        .resolve(&net);
    assert_clean(common::run_table(&*composite, "/ws").await);
    // The routed files went to disk, not to the network.
    assert!(net.files().is_empty());
    assert!(dir.path().join("src/main.rs").is_file());
}

#[tokio::test]
async fn golden_store_backend_in_memory() {
    use lc_agent_filesystem::{InMemoryStore, StoreBackend};
    let backend = StoreBackend::new(InMemoryStore::new(), ["user-42", "filesystem"]);
    assert_clean(common::run_table(&backend, "").await);
}

#[tokio::test]
async fn golden_composite_route_to_store() {
    use lc_agent_filesystem::{CompositeBackend, InMemoryStore, StoreBackend};
    let net = RunnableNetwork::new();
    let composite = CompositeBackend::new(StateBackend::factory())
        .route("/ws", StoreBackend::new(InMemoryStore::new(), ["n"]))
        .resolve(&net);
    assert_clean(common::run_table(&*composite, "/ws").await);
}

// Files at the edges (issue 21, items 13-15): the same answers on every
// backend, in bounded memory.

async fn edges(backend: &dyn lc_agent_filesystem::Backend, prefix: &str) {
    common::edges::load(backend, prefix).await;
    assert_clean(common::run_cases(backend, prefix, common::edges::table()).await);
}

async fn odd_names(backend: &dyn lc_agent_filesystem::Backend, prefix: &str) {
    assert_clean(common::run_cases(backend, prefix, common::edges::odd_table()).await);
}

fn plant_state(net: &RunnableNetwork) {
    net.with_files_mut(|files| {
        for name in common::edges::ODD_NAMES {
            files.insert(name.to_string(), lc_agent::FileData::new("needle\n"));
        }
    });
}

async fn plant_store(store: &lc_agent_filesystem::InMemoryStore, ns: &[&str]) {
    use lc_agent_filesystem::Store;
    let ns: Vec<String> = ns.iter().map(|s| s.to_string()).collect();
    for name in common::edges::ODD_NAMES {
        store
            .put(&ns, name, &lc_agent::FileData::new("needle\n"))
            .await
            .unwrap();
    }
}

fn plant_disk(dir: &std::path::Path) {
    std::fs::create_dir_all(dir.join("odd")).unwrap();
    for name in common::edges::ODD_NAMES {
        std::fs::write(dir.join(&name[1..]), "needle\n").unwrap();
    }
}

#[tokio::test]
async fn edges_state_backend() {
    let net = RunnableNetwork::new();
    let backend = StateBackend::new(net.clone());
    edges(&backend, "").await;
    plant_state(&net);
    odd_names(&backend, "").await;
    assert_clean(common::edges::check_uploads(&backend, "", false).await);
}

#[tokio::test]
async fn edges_filesystem_backend() {
    let dir = tempfile::tempdir().unwrap();
    let backend = lc_agent_filesystem::FilesystemBackend::new(dir.path()).unwrap();
    edges(&backend, "").await;
    plant_disk(dir.path());
    odd_names(&backend, "").await;
    assert_clean(common::edges::check_uploads(&backend, "", true).await);
}

#[tokio::test]
async fn edges_store_backend_in_memory() {
    use lc_agent_filesystem::{InMemoryStore, StoreBackend};
    let store = InMemoryStore::new();
    let backend = StoreBackend::new(store.clone(), ["user-42", "filesystem"]);
    edges(&backend, "").await;
    plant_store(&store, &["user-42", "filesystem"]).await;
    odd_names(&backend, "").await;
    assert_clean(common::edges::check_uploads(&backend, "", false).await);
}

#[tokio::test]
async fn edges_composite_route_to_disk() {
    use lc_agent_filesystem::{CompositeBackend, FilesystemBackend};
    let dir = tempfile::tempdir().unwrap();
    let net = RunnableNetwork::new();
    let composite = CompositeBackend::new(StateBackend::factory())
        .route("/ws/", FilesystemBackend::new(dir.path()).unwrap())
        .resolve(&net);
    edges(&*composite, "/ws").await;
    plant_disk(dir.path());
    odd_names(&*composite, "/ws").await;
    assert_clean(common::edges::check_uploads(&*composite, "/ws", true).await);
    // A write straight to the backend is refused too, naming the routed path.
    let err = composite
        .write("/ws/evil\nx.txt", "x", false)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Invalid path: /ws/evil\\nx.txt (file names cannot contain control characters)"
    );
    // The default route (the network's files) keeps text only.
    assert_clean(common::edges::check_uploads(&*composite, "", false).await);
}

#[tokio::test]
async fn edges_composite_route_to_store() {
    use lc_agent_filesystem::{CompositeBackend, InMemoryStore, StoreBackend};
    let net = RunnableNetwork::new();
    let store = InMemoryStore::new();
    let composite = CompositeBackend::new(StateBackend::factory())
        .route("/ws", StoreBackend::new(store.clone(), ["n"]))
        .resolve(&net);
    edges(&*composite, "/ws").await;
    plant_store(&store, &["n"]).await;
    odd_names(&*composite, "/ws").await;
    assert_clean(common::edges::check_uploads(&*composite, "/ws", false).await);
    let err = composite
        .upload_files(vec![("/ws/x.bin".into(), vec![0xFF, 0x00])])
        .await;
    assert_eq!(
        err[0].error,
        Some(lc_agent_filesystem::FileOpError::InvalidPath)
    );
    let err = composite
        .write("/ws/tab\tx.txt", "x", false)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Invalid path: /ws/tab\\tx.txt (file names cannot contain control characters)"
    );
}

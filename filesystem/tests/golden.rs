//! The golden table (tests/common) against every backend: exact outputs.

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

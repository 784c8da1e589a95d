//! `Backend::append` on every kind of backend: a missing file is created
//! (with its parents), what a file held stays, pieces join where the last
//! one ended; through a composite route too.
#![allow(clippy::unwrap_used, unreachable_pub)]

use std::sync::Arc;

use lc_agent::RunnableNetwork;
use lc_agent_filesystem::{
    Backend, CompositeBackend, FilesystemBackend, FsError, InMemoryStore, StateBackend,
    StoreBackend,
};

async fn text(backend: &dyn Backend, path: &str) -> String {
    let got = backend.download_files(vec![path.to_string()]).await;
    String::from_utf8(got[0].content.clone().expect("the file")).unwrap()
}

async fn check(backend: &dyn Backend, label: &str) {
    backend
        .append("/log/history.md", "## one\n\nfirst")
        .await
        .unwrap();
    backend
        .append("/log/history.md", " line\n## two\n")
        .await
        .unwrap();
    backend.append("/log/history.md", "").await.unwrap();
    assert_eq!(
        text(backend, "/log/history.md").await,
        "## one\n\nfirst line\n## two\n",
        "{label}"
    );
    backend.write("/file", "x", false).await.unwrap();
    let err = backend.append("/file/below", "y").await.unwrap_err();
    assert!(
        matches!(err, FsError::ParentIsFile { .. } | FsError::Io { .. }),
        "{label}: {err:?}"
    );
    assert_eq!(text(backend, "/file").await, "x", "{label}: nothing lost");
}

#[tokio::test]
async fn append_keeps_what_the_file_held_on_every_backend() {
    let net = RunnableNetwork::new();
    check(&StateBackend::new(net.clone()), "state").await;
    assert_eq!(
        net.files()["/log/history.md"].content,
        ["## one", "", "first line", "## two", ""]
    );

    let dir = tempfile::tempdir().unwrap();
    check(&FilesystemBackend::new(dir.path()).unwrap(), "disk").await;
    assert_eq!(
        std::fs::read_to_string(dir.path().join("log/history.md")).unwrap(),
        "## one\n\nfirst line\n## two\n"
    );

    check(
        &StoreBackend::new(InMemoryStore::new(), ["u", "fs"]),
        "store",
    )
    .await;

    let routed_dir = tempfile::tempdir().unwrap();
    let routed_net = RunnableNetwork::new();
    let composite = CompositeBackend::new(StateBackend::factory())
        .route("/disk/", FilesystemBackend::new(routed_dir.path()).unwrap());
    let backend: Arc<dyn Backend> = composite.resolve(&routed_net);
    backend.append("/disk/a.md", "a").await.unwrap();
    backend.append("/disk/a.md", "b").await.unwrap();
    backend.append("/state.md", "s").await.unwrap();
    assert_eq!(
        std::fs::read_to_string(routed_dir.path().join("a.md")).unwrap(),
        "ab"
    );
    assert_eq!(routed_net.files()["/state.md"].text(), "s");
}

//! `delete` (issue 36 item 5): a file, or a folder and everything in it
//! with `recursive`, the same on every backend; the workspace root (and a
//! route's own folder) refused; path rules with operation `delete` hold for
//! everything inside a folder; a rewind puts deleted files back.

use crate::common::{case, run_cases, Case};

use lc_agent::{Attachments, HumanNode, RunnableNetwork, ScriptedChatModel, ToolCall, Turn};
use lc_agent_filesystem::{
    rewind_files, Backend, CompositeBackend, Delete, FilesystemBackend, FilesystemModifier,
    InMemoryStore, PermissionRule, Permissions, RuleMode, StateBackend, StoreBackend,
};
use serde_json::json;

async fn load(backend: &dyn Backend, prefix: &str) {
    for (path, content) in [
        ("/a.txt", "a\n"),
        ("/dir/b.txt", "b\n"),
        ("/dir/sub/c.txt", "c\n"),
        ("/dir/.git/HEAD", "ref\n"),
        ("/keep/k.txt", "k\n"),
    ] {
        backend
            .write(&format!("{prefix}{path}"), content, true)
            .await
            .unwrap();
    }
}

fn table() -> Vec<Case> {
    vec![
        case(
            "delete",
            json!({"path": "/"}),
            "Error: Cannot delete /: it is the workspace root",
        ),
        case(
            "delete",
            json!({"path": "//", "recursive": true}),
            "Error: Cannot delete /: it is the workspace root",
        ),
        case(
            "delete",
            json!({"path": "{R}/nope.txt"}),
            "Error: File not found: {R}/nope.txt",
        ),
        case(
            "delete",
            json!({"path": "{R}/../x"}),
            "Error: Path traversal not allowed: {R}/../x",
        ),
        case(
            "delete",
            json!({"recursive": true}),
            "Error: Invalid arguments for delete: missing required argument `path`",
        ),
        case(
            "delete",
            json!({"path": "{R}/dir"}),
            "Error: {R}/dir is a directory; set recursive=true to delete it and everything in it",
        ),
        case(
            "delete",
            json!({"path": "{R}/a.txt"}),
            "Successfully deleted {R}/a.txt",
        ),
        case(
            "read_file",
            json!({"file_path": "{R}/a.txt"}),
            "Error: File not found: {R}/a.txt",
        ),
        case(
            "delete",
            json!({"path": "{R}/a.txt"}),
            "Error: File not found: {R}/a.txt",
        ),
        case(
            "delete",
            json!({"path": "{R}/dir/", "recursive": true}),
            "Successfully deleted {R}/dir and everything in it",
        ),
        case(
            "ls",
            json!({"path": "{R}/", "recursive": true}),
            "{R}/keep/\n{R}/keep/k.txt",
        ),
        case(
            "read_file",
            json!({"file_path": "{R}/dir/.git/HEAD"}),
            "Error: File not found: {R}/dir/.git/HEAD",
        ),
        case(
            "delete",
            json!({"path": "{R}/dir", "recursive": true}),
            "Error: File not found: {R}/dir",
        ),
        case(
            "delete",
            json!({"path": "{R}/keep/k.txt", "recursive": true}),
            "Successfully deleted {R}/keep/k.txt",
        ),
    ]
}

fn assert_clean(failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

async fn golden(backend: &dyn Backend, prefix: &str) {
    load(backend, prefix).await;
    assert_clean(run_cases(backend, prefix, table()).await);
}

#[tokio::test]
async fn delete_on_every_backend() {
    golden(&StateBackend::new(RunnableNetwork::new()), "").await;
    let dir = tempfile::tempdir().unwrap();
    golden(&FilesystemBackend::new(dir.path()).unwrap(), "").await;
    let shell_dir = tempfile::tempdir().unwrap();
    golden(
        &lc_agent_filesystem::LocalShellBackend::new(shell_dir.path()).unwrap(),
        "",
    )
    .await;
    golden(&StoreBackend::new(InMemoryStore::new(), ["u", "fs"]), "").await;
    let net = RunnableNetwork::new();
    let disk_dir = tempfile::tempdir().unwrap();
    let to_disk = CompositeBackend::new(StateBackend::factory())
        .route("/ws/", FilesystemBackend::new(disk_dir.path()).unwrap())
        .resolve(&net);
    golden(&*to_disk, "/ws").await;
    // A route's own folder holds everything its backend keeps: refused.
    let out = lc_agent_filesystem::run_tool(
        &*to_disk,
        "delete",
        &json!({"path": "/ws", "recursive": true}),
    )
    .await
    .unwrap();
    assert_eq!(
        out.content,
        "Error: Cannot delete /ws: it is the workspace root"
    );
    let to_store = CompositeBackend::new(StateBackend::factory())
        .route("/ws", StoreBackend::new(InMemoryStore::new(), ["n"]))
        .resolve(&RunnableNetwork::new());
    golden(&*to_store, "/ws").await;
    // Nothing was left on disk by the folder delete.
    assert!(!disk_dir.path().join("dir").exists());
    assert!(!dir.path().join("dir").exists());
}

#[tokio::test]
async fn a_delete_rule_on_anything_inside_holds_for_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    let rules =
        Permissions::new([PermissionRule::parse(RuleMode::Deny, "delete:/dir/sub/**").unwrap()])
            .unwrap();
    let net = RunnableNetwork::new();
    // Loaded beside the rules: `/dir/.git` is a protected path.
    load(&FilesystemBackend::new(dir.path()).unwrap(), "").await;
    let guarded = rules
        .guard(FilesystemBackend::new(dir.path()).unwrap(), false)
        .resolve(&net);
    let out = lc_agent_filesystem::run_tool(
        &*guarded,
        "delete",
        &json!({"path": "/dir", "recursive": true}),
    )
    .await
    .unwrap();
    assert!(out.content.starts_with("Error: "), "{}", out.content);
    assert!(out.content.contains("/dir/sub"), "{}", out.content);
    assert!(dir.path().join("dir/sub/c.txt").is_file());
    assert!(dir.path().join("dir/b.txt").is_file());
    let out = lc_agent_filesystem::run_tool(&*guarded, "delete", &json!({"path": "/dir/b.txt"}))
        .await
        .unwrap();
    assert_eq!(out.content, "Successfully deleted /dir/b.txt");
}

#[tokio::test]
async fn a_rewind_puts_deleted_files_back() {
    let dir = tempfile::tempdir().unwrap();
    let backend = FilesystemBackend::new(dir.path()).unwrap();
    let write = |id: &str, path: &str, content: &str| {
        ToolCall::new(
            id,
            "write_file",
            json!({"file_path": path, "content": content}),
        )
    };
    let script = vec![
        Turn::tool_calls([
            write("1", "/a.txt", "a1"),
            write("2", "/dir/b.txt", "b1"),
            write("3", "/dir/sub/c.txt", "c1"),
        ]),
        Turn::text("made"),
        Turn::tool_calls([
            ToolCall::new("4", "delete", json!({"path": "/a.txt"})),
            ToolCall::new("5", "delete", json!({"path": "/dir", "recursive": true})),
        ]),
        Turn::text("deleted"),
    ];
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("m")
        .model("m", ScriptedChatModel::new(script))
        .tool(Delete::new(backend.clone()))
        .build();
    net.add_modifier(FilesystemModifier::new(backend.clone()))
        .unwrap();
    let mut leaves = Vec::new();
    for text in ["make", "delete"] {
        {
            let _scope = net.enter();
            HumanNode::new(text);
        }
        net.invoke().await.unwrap();
        leaves.push(net.current_leaf().unwrap().id());
    }
    assert!(!dir.path().join("a.txt").exists());
    assert!(!dir.path().join("dir").exists());
    let report = rewind_files(&net, &backend, Some(leaves[0])).await.unwrap();
    assert_eq!(report.restored, ["/a.txt", "/dir/b.txt", "/dir/sub/c.txt"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "a1"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("dir/sub/c.txt")).unwrap(),
        "c1"
    );
}

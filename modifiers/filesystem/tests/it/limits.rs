//! The file tools' size limits ([`FileLimits`]) on every backend: what
//! `read_file` returns, how large a file `write_file`, `edit_file` and the
//! line tools may leave, the exact messages, and that a refused write or
//! edit leaves the file as it was (also through a running network, where
//! edits are recorded for rewinds).

use lc_agent::{Attachments, HumanNode, Message, RunnableNetwork, ScriptedChatModel, Turn};
use lc_agent_filesystem::{
    Backend, CompositeBackend, FileLimits, FilesystemBackend, FilesystemModifier, InMemoryStore,
    StateBackend, StoreBackend,
};
use serde_json::json;

use crate::common::{self, case, Case};

/// The write limit of the golden rows.
const WRITE_LIMIT: u64 = 40;

/// The golden rows; `{R}` is the route prefix.
fn table() -> Vec<Case> {
    let a = "{R}/cap/a.txt";
    let forty = "x".repeat(39) + "\n";
    vec![
        // write_file: content over the limit is refused, nothing is created.
        case(
            "write_file",
            json!({"file_path": a, "content": forty.clone() + "y"}),
            format!(
                "Error: Cannot write to {a}: the content is 41 bytes, over the write limit of \
                 40 bytes. Nothing was written; write less, or split the content across several files."
            ),
        ),
        case(
            "read_file",
            json!({"file_path": a}),
            format!("Error: File not found: {a}"),
        ),
        // Exactly at the limit: written.
        case(
            "write_file",
            json!({"file_path": a, "content": forty}),
            format!("Successfully wrote to {a}"),
        ),
        // Over the limit with overwrite too, and the file stays as it was.
        case(
            "write_file",
            json!({"file_path": a, "content": "z".repeat(50), "overwrite": true}),
            format!(
                "Error: Cannot write to {a}: the content is 50 bytes, over the write limit of \
                 40 bytes. Nothing was written; write less, or split the content across several files."
            ),
        ),
        // edit_file: the edited file would be 41 bytes.
        case(
            "edit_file",
            json!({"file_path": a, "old_string": "xx\n", "new_string": "xxy\n"}),
            format!(
                "Error: Cannot edit {a}: the edited file would be 41 bytes, over the write limit \
                 of 40 bytes. The file was not changed; make a smaller change, or split the file into several."
            ),
        ),
        case(
            "edit_file",
            json!({"file_path": a, "old_string": "x", "new_string": "yy", "replace_all": true}),
            format!(
                "Error: Cannot edit {a}: the edited file would be 79 bytes, over the write limit \
                 of 40 bytes. The file was not changed; make a smaller change, or split the file into several."
            ),
        ),
        case(
            "read_file",
            json!({"file_path": a}),
            format!("     1\t{}", "x".repeat(39)),
        ),
        // A smaller edit goes through.
        case(
            "edit_file",
            json!({"file_path": a, "old_string": "xxxxxxxxxx\n", "new_string": "y\n"}),
            "Successfully replaced 1 occurrence(s) in {R}/cap/a.txt",
        ),
        // The line tools: the same limit, the same words.
        case(
            "insert_lines",
            json!({"file_path": a, "line": 2, "content": "0123456789"}),
            format!(
                "Error: Cannot edit {a}: the edited file would be 42 bytes, over the write limit \
                 of 40 bytes. The file was not changed; make a smaller change, or split the file into several."
            ),
        ),
        case(
            "replace_lines",
            json!({"file_path": a, "start_line": 1, "content": "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\no\np\nq\nr\ns\nt\nu"}),
            format!(
                "Error: Cannot edit {a}: the edited file would be 42 bytes, over the write limit \
                 of 40 bytes. The file was not changed; make a smaller change, or split the file into several."
            ),
        ),
        case(
            "read_file",
            json!({"file_path": a}),
            format!("     1\t{}y", "x".repeat(29)),
        ),
        case(
            "insert_lines",
            json!({"file_path": a, "line": 2, "content": "01234567"}),
            "Successfully inserted 1 line(s) at line 2 in {R}/cap/a.txt",
        ),
        case(
            "delete_lines",
            json!({"file_path": a, "start_line": 2}),
            "Successfully deleted lines 2-2 from {R}/cap/a.txt",
        ),
        // Reads are not writes: a file over the write limit reads as usual.
        case(
            "read_file",
            json!({"file_path": "{R}/cap/long.txt", "limit": 2}),
            format!(
                "{}\n[Showing lines 1-2 of 400. Use offset=2 to read more.]",
                long_lines(0, 2)
            ),
        ),
        // read_file stops at a whole line before the read limit (8 KiB).
        case(
            "read_file",
            json!({"file_path": "{R}/cap/long.txt"}),
            format!(
                "{}\n[Output truncated at the read limit of 8192 bytes. Showing lines 1-{n} of 400. \
                 Use offset={n} to read more.]",
                long_lines(0, read_lines()),
                n = read_lines()
            ),
        ),
        case(
            "read_file",
            json!({"file_path": "{R}/cap/long.txt", "offset": 390}),
            long_lines(390, 10),
        ),
    ]
}

/// Line `i` (0-based) of `long.txt`: 40 bytes with its newline.
fn long_line(i: usize) -> String {
    format!("line {i:04} {}", "-".repeat(29))
}

/// `count` lines of `long.txt` from `from`, as `read_file` prints them.
fn long_lines(from: usize, count: usize) -> String {
    (from..from + count)
        .map(|i| format!("{:>6}\t{}", i + 1, long_line(i)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// How many lines of `long.txt` fit in 8192 bytes of `read_file` output:
/// each prints as 6 + 1 + 39 bytes, and a newline between two.
fn read_lines() -> usize {
    (8192 + 1) / (6 + 1 + 39 + 1)
}

/// The limits of the golden rows around `inner`.
fn limited(inner: impl Into<lc_agent_filesystem::BackendSource>) -> std::sync::Arc<dyn Backend> {
    FileLimits::default()
        .max_read_bytes(8192)
        .max_write_bytes(WRITE_LIMIT)
        .apply(inner)
        .resolve(&RunnableNetwork::new())
}

async fn golden(backend: &dyn Backend, prefix: &str) {
    // Put by upload: uploads are not capped.
    let long: String = (0..400).map(|i| long_line(i) + "\n").collect();
    let put = backend
        .upload_files(vec![(format!("{prefix}/cap/long.txt"), long.into_bytes())])
        .await;
    assert_eq!(put[0].error, None);
    let failures = common::run_cases(backend, prefix, table()).await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[tokio::test]
async fn limits_state_backend() {
    golden(&*limited(StateBackend::new(RunnableNetwork::new())), "").await;
}

#[tokio::test]
async fn limits_filesystem_backend() {
    let dir = tempfile::tempdir().unwrap();
    golden(&*limited(FilesystemBackend::new(dir.path()).unwrap()), "").await;
    // A refused edit left no temp file behind.
    assert!(common::temp_files(dir.path()).is_empty());
}

#[tokio::test]
async fn limits_store_backend() {
    golden(
        &*limited(StoreBackend::new(InMemoryStore::new(), ["u", "fs"])),
        "",
    )
    .await;
}

#[tokio::test]
async fn limits_composite_routes() {
    let dir = tempfile::tempdir().unwrap();
    let composite = CompositeBackend::new(StateBackend::factory())
        .route("/disk/", FilesystemBackend::new(dir.path()).unwrap())
        .route("/store/", StoreBackend::new(InMemoryStore::new(), ["n"]));
    let backend = limited(composite);
    golden(&*backend, "/disk").await;
    golden(&*backend, "/store").await;
    golden(&*backend, "").await;
}

/// The limit of a file in another encoding counts the bytes it is
/// written in: a Windows-1252 file of 40 bytes holds 40 `é`s (80 bytes of
/// UTF-8).
#[tokio::test]
async fn an_edit_is_measured_in_the_files_own_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let backend = limited(FilesystemBackend::new(dir.path()).unwrap());
    std::fs::write(dir.path().join("l.txt"), b"caf\xe9 ").unwrap();
    let out = lc_agent_filesystem::run_tool(
        &*backend,
        "edit_file",
        &json!({"file_path": "/l.txt", "old_string": " ", "new_string": "é".repeat(35)}),
    )
    .await
    .unwrap();
    assert_eq!(
        out.content,
        "Successfully replaced 1 occurrence(s) in /l.txt"
    );
    let bytes = std::fs::read(dir.path().join("l.txt")).unwrap();
    assert_eq!(bytes.len(), 39);
    let out = lc_agent_filesystem::run_tool(
        &*backend,
        "edit_file",
        &json!({"file_path": "/l.txt", "old_string": "caf", "new_string": "éééé"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out.content,
        "Successfully replaced 1 occurrence(s) in /l.txt"
    );
    let bytes = std::fs::read(dir.path().join("l.txt")).unwrap();
    assert_eq!(bytes.len(), 40);
    let out = lc_agent_filesystem::run_tool(
        &*backend,
        "edit_file",
        &json!({"file_path": "/l.txt", "old_string": "é", "new_string": "éé", "replace_all": true}),
    )
    .await
    .unwrap();
    assert_eq!(
        out.content,
        "Error: Cannot edit /l.txt: the edited file would be 80 bytes, over the write limit of 40 \
         bytes. The file was not changed; make a smaller change, or split the file into several."
    );
    assert_eq!(std::fs::read(dir.path().join("l.txt")).unwrap(), bytes);
}

/// Through a running network (the modifier's tools record each change for
/// rewinds): the same refusals, the file as it was, no change recorded.
#[tokio::test]
async fn the_modifier_keeps_to_its_limits() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "0123456789\n").unwrap();
    let model = ScriptedChatModel::new([
        Turn::call(
            "c1",
            "edit_file",
            json!({"file_path": "/a.txt", "old_string": "5", "new_string": "5".repeat(20)}),
        ),
        Turn::call(
            "c2",
            "write_file",
            json!({"file_path": "/b.txt", "content": "b".repeat(20)}),
        ),
        Turn::call(
            "c3",
            "replace_lines",
            json!({"file_path": "/a.txt", "start_line": 1, "content": "x".repeat(20)}),
        ),
        Turn::text("done"),
    ]);
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("m")
        .model("m", model)
        .build();
    let limits = FileLimits::default().max_write_bytes(16);
    net.add_modifier(
        FilesystemModifier::new(FilesystemBackend::new(dir.path()).unwrap())
            .line_tools(true)
            .limits(limits),
    )
    .unwrap();
    {
        let _s = net.enter();
        HumanNode::new("go");
    }
    net.invoke().await.unwrap();
    let results: Vec<String> = net
        .nodes()
        .iter()
        .filter_map(|n| match n.output().as_deref() {
            Some(Message::Tool { content, .. }) => Some(content.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            "Error: Cannot edit /a.txt: the edited file would be 30 bytes, over the write limit \
             of 16 bytes. The file was not changed; make a smaller change, or split the file into several.",
            "Error: Cannot write to /b.txt: the content is 20 bytes, over the write limit of 16 \
             bytes. Nothing was written; write less, or split the content across several files.",
            "Error: Cannot edit /a.txt: the edited file would be 21 bytes, over the write limit \
             of 16 bytes. The file was not changed; make a smaller change, or split the file into several.",
        ]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "0123456789\n"
    );
    assert!(!dir.path().join("b.txt").exists());
}

#[test]
fn defaults_and_the_smallest_read_limit() {
    let limits = FileLimits::default();
    assert!(limits.is_default());
    assert_eq!(limits.read_limit(), 256 << 10);
    assert_eq!(limits.write_limit(), 4 << 30);
    // One line at its longest always fits.
    assert_eq!(limits.max_read_bytes(10).read_limit(), 8192);
    let toml: FileLimits = serde_json::from_value(json!({"max_write_bytes": 5})).unwrap();
    assert_eq!(toml, FileLimits::default().max_write_bytes(5));
    assert!(serde_json::from_value::<FileLimits>(json!({"max_writes": 5})).is_err());
}

//! The line tools (`insert_lines`, `replace_lines`, `delete_lines`): the
//! same exact answers on every backend, the bytes they leave (line
//! endings, a missing final newline, encodings), and bounded memory on a
//! huge file.

use lc_agent::RunnableNetwork;
use lc_agent_filesystem::{
    run_tool, Backend, CompositeBackend, FilesystemBackend, InMemoryStore, StateBackend,
    StoreBackend,
};
use serde_json::json;

use crate::common::{self, case, Case};

/// The golden rows; `{R}` is the route prefix.
fn table() -> Vec<Case> {
    let a = "{R}/lines/a.txt";
    vec![
        case(
            "write_file",
            json!({"file_path": a, "content": "one\ntwo\nthree\n"}),
            format!("Successfully wrote to {a}"),
        ),
        case(
            "insert_lines",
            json!({"file_path": a, "line": 2, "content": "x\ny"}),
            format!("Successfully inserted 2 line(s) at line 2 in {a}"),
        ),
        case(
            "read_file",
            json!({"file_path": a}),
            "     1\tone\n     2\tx\n     3\ty\n     4\ttwo\n     5\tthree",
        ),
        case(
            "replace_lines",
            json!({"file_path": a, "start_line": 2, "end_line": 3, "content": "X\n"}),
            format!("Successfully replaced lines 2-3 with 1 line(s) in {a}"),
        ),
        case(
            "delete_lines",
            json!({"file_path": a, "start_line": 1}),
            format!("Successfully deleted lines 1-1 from {a}"),
        ),
        case(
            "read_file",
            json!({"file_path": a}),
            "     1\tX\n     2\ttwo\n     3\tthree",
        ),
        case(
            "insert_lines",
            json!({"file_path": a, "line": 4, "content": "four"}),
            format!("Successfully inserted 1 line(s) at line 4 in {a}"),
        ),
        case(
            "replace_lines",
            json!({"file_path": a, "start_line": 4, "content": "4\n\n5"}),
            format!("Successfully replaced lines 4-4 with 3 line(s) in {a}"),
        ),
        case(
            "read_file",
            json!({"file_path": a}),
            "     1\tX\n     2\ttwo\n     3\tthree\n     4\t4\n     5\t\n     6\t5",
        ),
        // Errors, in the order they are checked.
        case(
            "insert_lines",
            json!({"file_path": a, "line": 0, "content": "x"}),
            "Error: Invalid arguments for insert_lines: `line` must be at least 1, got 0",
        ),
        case(
            "delete_lines",
            json!({"file_path": a}),
            "Error: Invalid arguments for delete_lines: missing required argument `start_line`",
        ),
        case(
            "replace_lines",
            json!({"file_path": a, "start_line": 3, "end_line": 2, "content": "x"}),
            "Error: end_line (2) is before start_line (3)",
        ),
        case(
            "replace_lines",
            json!({"file_path": a, "start_line": 1, "content": ""}),
            "Error: content cannot be empty; use delete_lines to remove lines",
        ),
        case(
            "insert_lines",
            json!({"file_path": a, "line": 1, "content": ""}),
            "Error: content cannot be empty",
        ),
        case(
            "insert_lines",
            json!({"file_path": "{R}/../x", "line": 1, "content": "x"}),
            "Error: Path traversal not allowed: {R}/../x",
        ),
        case(
            "delete_lines",
            json!({"file_path": "{R}/lines/nope.txt", "start_line": 1}),
            "Error: File not found: {R}/lines/nope.txt",
        ),
        case(
            "delete_lines",
            json!({"file_path": "{R}/bin.dat", "start_line": 1}),
            "Error: {R}/bin.dat is a binary file (7 bytes)",
        ),
        case(
            "insert_lines",
            json!({"file_path": a, "line": 8, "content": "x"}),
            "Error: Line 8 exceeds file length + 1 (6 lines); use line 7 to append",
        ),
        case(
            "delete_lines",
            json!({"file_path": a, "start_line": 7}),
            "Error: start_line 7 exceeds file length (6 lines)",
        ),
        case(
            "replace_lines",
            json!({"file_path": a, "start_line": 5, "end_line": 9, "content": "x"}),
            "Error: end_line 9 exceeds file length (6 lines)",
        ),
        case(
            "read_file",
            json!({"file_path": a}),
            "     1\tX\n     2\ttwo\n     3\tthree\n     4\t4\n     5\t\n     6\t5",
        ),
        // A CRLF file keeps its line endings (its bytes are checked below).
        case(
            "insert_lines",
            json!({"file_path": "{R}/crlf.txt", "line": 2, "content": "x"}),
            "Successfully inserted 1 line(s) at line 2 in {R}/crlf.txt",
        ),
        case(
            "delete_lines",
            json!({"file_path": "{R}/crlf.txt", "start_line": 3}),
            "Successfully deleted lines 3-3 from {R}/crlf.txt",
        ),
        case(
            "read_file",
            json!({"file_path": "{R}/crlf.txt"}),
            "     1\tone\n     2\tx\n     3\tthree",
        ),
        // An empty file gets its first lines.
        case(
            "insert_lines",
            json!({"file_path": "{R}/empty.txt", "line": 1, "content": "first"}),
            "Successfully inserted 1 line(s) at line 1 in {R}/empty.txt",
        ),
        case(
            "read_file",
            json!({"file_path": "{R}/empty.txt"}),
            "     1\tfirst",
        ),
        case(
            "delete_lines",
            json!({"file_path": "{R}/empty.txt", "start_line": 1}),
            "Successfully deleted lines 1-1 from {R}/empty.txt",
        ),
        case(
            "read_file",
            json!({"file_path": "{R}/empty.txt"}),
            "System reminder: File exists but has empty contents",
        ),
    ]
}

/// Runs the table (fixture first) and checks the bytes left behind.
async fn golden(backend: &dyn Backend, prefix: &str) {
    common::load_fixture(backend, prefix).await;
    let failures = common::run_cases(backend, prefix, table()).await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    let bytes = |path: String| async move {
        let got = backend.download_files(vec![path]).await;
        String::from_utf8(got[0].content.clone().unwrap()).unwrap()
    };
    assert_eq!(
        bytes(format!("{prefix}/crlf.txt")).await,
        "one\r\nx\r\nthree\r\n"
    );
    assert_eq!(bytes(format!("{prefix}/empty.txt")).await, "");
    // Without a final newline, the last line stays without one.
    let p = format!("{prefix}/lines/open.txt");
    backend.write(&p, "p\nq", true).await.unwrap();
    let call = |tool: &str, args: serde_json::Value| {
        let tool = tool.to_string();
        async move { run_tool(backend, &tool, &args).await.unwrap().content }
    };
    call(
        "insert_lines",
        json!({"file_path": p, "line": 3, "content": "r"}),
    )
    .await;
    assert_eq!(bytes(p.clone()).await, "p\nq\nr");
    call(
        "delete_lines",
        json!({"file_path": p, "start_line": 2, "end_line": 3}),
    )
    .await;
    assert_eq!(bytes(p.clone()).await, "p");
    call(
        "replace_lines",
        json!({"file_path": p, "start_line": 1, "content": "s\nt\n"}),
    )
    .await;
    assert_eq!(bytes(p.clone()).await, "s\nt");
    // A UTF-8 BOM stays.
    let bom = format!("{prefix}/lines/bom.txt");
    backend
        .upload_files(vec![(bom.clone(), b"\xEF\xBB\xBFa\nb\n".to_vec())])
        .await;
    let out = call(
        "replace_lines",
        json!({"file_path": bom, "start_line": 2, "content": "é"}),
    )
    .await;
    assert_eq!(
        out,
        format!("Successfully replaced lines 2-2 with 1 line(s) in {bom}")
    );
    assert_eq!(bytes(bom).await, "\u{feff}a\né\n");
}

#[tokio::test]
async fn golden_state_backend() {
    golden(&StateBackend::new(RunnableNetwork::new()), "").await;
}

#[tokio::test]
async fn golden_filesystem_backend() {
    let dir = tempfile::tempdir().unwrap();
    golden(&FilesystemBackend::new(dir.path()).unwrap(), "").await;
    // Nothing left of the atomic writes.
    assert!(common::temp_files(dir.path()).is_empty());
}

#[tokio::test]
async fn golden_store_backend() {
    golden(&StoreBackend::new(InMemoryStore::new(), ["u", "fs"]), "").await;
}

#[tokio::test]
async fn golden_composite_routes() {
    let dir = tempfile::tempdir().unwrap();
    let net = RunnableNetwork::new();
    let composite = CompositeBackend::new(StateBackend::factory())
        .route("/ws/", FilesystemBackend::new(dir.path()).unwrap())
        .route("/kv/", StoreBackend::new(InMemoryStore::new(), ["n"]))
        .resolve(&net);
    golden(&*composite, "/ws").await;
    golden(&*composite, "/kv").await;
    assert!(dir.path().join("lines/a.txt").is_file());
}

/// Windows-1252 on disk: decoded, edited, written back in its encoding;
/// a character it cannot hold is refused.
#[tokio::test]
async fn windows_1252_is_written_back_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("l.txt"), b"caf\xe9\nna\xefve\n").unwrap();
    let backend = FilesystemBackend::new(dir.path()).unwrap();
    let out = run_tool(
        &backend,
        "insert_lines",
        &json!({"file_path": "/l.txt", "line": 2, "content": "d\u{e9}j\u{e0}"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out.content,
        "Successfully inserted 1 line(s) at line 2 in /l.txt"
    );
    assert_eq!(
        std::fs::read(dir.path().join("l.txt")).unwrap(),
        b"caf\xe9\nd\xe9j\xe0\nna\xefve\n"
    );
    let out = run_tool(
        &backend,
        "replace_lines",
        &json!({"file_path": "/l.txt", "start_line": 1, "content": "\u{4e2d}"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out.content,
        "Error: /l.txt is windows-1252 text, which cannot hold every character of content; the file was not changed"
    );
}

/// The size of the huge files (MiB): large enough that holding one would
/// show, small enough for a debug build.
const HUGE_MIB: usize = 256;
/// The most a child may hold at once while it edits them.
const LIMIT_KIB: u64 = 64 * 1024;
/// Set in the child process this test starts (its own peak memory).
const CHILD_ENV: &str = "LC_AGENT_LINES_HUGE_DIR";

fn vm_hwm_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// In the child: each line tool on each huge file, printing the results
/// and the peak.
fn huge_child(dir: &std::path::Path) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let backend = FilesystemBackend::new(dir).unwrap();
    let lines = (HUGE_MIB << 20) / 64;
    let calls = [
        (
            "insert_lines",
            json!({"file_path": "/many.txt", "line": 2, "content": "new"}),
        ),
        (
            "replace_lines",
            json!({"file_path": "/many.txt", "start_line": lines, "content": "last"}),
        ),
        (
            "delete_lines",
            json!({"file_path": "/many.txt", "start_line": 1, "end_line": 2}),
        ),
        (
            "insert_lines",
            json!({"file_path": "/one.txt", "line": 1, "content": "head"}),
        ),
        (
            "replace_lines",
            json!({"file_path": "/one.txt", "start_line": 2, "content": "short"}),
        ),
    ];
    for (tool, args) in calls {
        let out = rt.block_on(run_tool(&backend, tool, &args)).unwrap();
        println!("RESULT {}", out.content);
    }
    println!("PEAK {}", vm_hwm_kib());
}

#[test]
fn line_tools_stay_bounded_on_a_huge_file() {
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        huge_child(std::path::Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut line = [b'a'; 64];
    line[63] = b'\n';
    let many: Vec<u8> = line.repeat(1 << 14);
    let one = vec![b'b'; 1 << 20];
    let mut m = std::fs::File::create(dir.path().join("many.txt")).unwrap();
    let mut o = std::fs::File::create(dir.path().join("one.txt")).unwrap();
    for _ in 0..HUGE_MIB {
        std::io::Write::write_all(&mut m, &many).unwrap();
        std::io::Write::write_all(&mut o, &one).unwrap();
    }
    drop((m, o));
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "lines::line_tools_stay_bounded_on_a_huge_file",
            "--nocapture",
        ])
        .env(CHILD_ENV, dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let results: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("RESULT "))
        .collect();
    let lines = (HUGE_MIB << 20) / 64;
    assert_eq!(
        results,
        [
            "Successfully inserted 1 line(s) at line 2 in /many.txt".to_string(),
            format!("Successfully replaced lines {lines}-{lines} with 1 line(s) in /many.txt"),
            "Successfully deleted lines 1-2 from /many.txt".to_string(),
            "Successfully inserted 1 line(s) at line 1 in /one.txt".to_string(),
            "Successfully replaced lines 2-2 with 1 line(s) in /one.txt".to_string(),
        ],
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let peak: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("PEAK "))
        .unwrap()
        .parse()
        .unwrap();
    eprintln!(
        "line tools on {HUGE_MIB} MiB files: peak {} MB",
        peak / 1024
    );
    assert!(peak < LIMIT_KIB, "peak {peak} KiB");
    // The edits landed where asked.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("one.txt")).unwrap(),
        "head\nshort"
    );
    let many = std::fs::metadata(dir.path().join("many.txt"))
        .unwrap()
        .len();
    // + "new\n", a 64-byte line for "last\n", less a 64-byte line and "new\n".
    assert_eq!(many, (HUGE_MIB as u64) * (1 << 20) + 4 - 64 + 5 - 64 - 4);
}

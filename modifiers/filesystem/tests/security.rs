//! The security corpus: `FilesystemBackend` in virtual mode must never
//! read, write, list or reveal anything outside its root, and never print a
//! host path.
#![allow(clippy::unwrap_used, unreachable_pub)]

use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lc_agent_filesystem::{run_tool, Backend, FileOpError, FilesystemBackend};
use serde_json::{json, Value};

struct Sandbox {
    _tmp: tempfile::TempDir,
    host: String,
    root: std::path::PathBuf,
    outside: std::path::PathBuf,
    backend: FilesystemBackend,
}

fn sandbox() -> Sandbox {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(root.join("mid")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "TOPSECRET\n").unwrap();
    std::fs::write(root.join("inside.txt"), "hello\n").unwrap();
    std::fs::write(root.join("sub/real.txt"), "real hello\n").unwrap();
    symlink("inside.txt", root.join("link_in_file")).unwrap();
    symlink("sub", root.join("link_in_dir")).unwrap();
    symlink("../outside/secret.txt", root.join("link_out_file")).unwrap();
    symlink("../outside", root.join("link_out_dir")).unwrap();
    symlink(outside.join("secret.txt"), root.join("abs_link")).unwrap();
    symlink(root.join("inside.txt"), root.join("abs_link_in")).unwrap();
    symlink("loop_b", root.join("loop_a")).unwrap();
    symlink("loop_a", root.join("loop_b")).unwrap();
    symlink("nothing.txt", root.join("dangling")).unwrap();
    symlink("../../outside", root.join("mid/esc")).unwrap();
    let backend = FilesystemBackend::new(&root).unwrap();
    Sandbox {
        host: tmp.path().to_string_lossy().into_owned(),
        _tmp: tmp,
        root,
        outside,
        backend,
    }
}

impl Sandbox {
    async fn call(&self, tool: &str, args: Value) -> String {
        let out = run_tool(&self.backend, tool, &args).await.unwrap().content;
        assert!(
            !out.contains("TOPSECRET"),
            "{tool} {args} revealed outside content: {out}"
        );
        assert!(
            !out.contains(&self.host),
            "{tool} {args} revealed a host path: {out}"
        );
        out
    }
}

#[tokio::test]
async fn traversal_forms_are_refused() {
    let s = sandbox();
    for (arg, expected) in [
        (
            "/../outside/secret.txt",
            "Error: Path traversal not allowed: /../outside/secret.txt",
        ),
        (
            "../outside/secret.txt",
            "Error: Path traversal not allowed: ../outside/secret.txt",
        ),
        (
            "sub/../../outside/secret.txt",
            "Error: Path traversal not allowed: sub/../../outside/secret.txt",
        ),
        ("/sub/..", "Error: Path traversal not allowed: /sub/.."),
        ("~", "Error: Path traversal not allowed: ~"),
        (
            "~/secret.txt",
            "Error: Path traversal not allowed: ~/secret.txt",
        ),
        (
            "C:\\Windows\\win.ini",
            "Error: Invalid path: C:\\Windows\\win.ini",
        ),
        ("c:/x", "Error: Invalid path: c:/x"),
        (
            "\\\\server\\share",
            "Error: Invalid path: \\\\server\\share",
        ),
        (
            "/inside.txt\u{0}.png",
            // A NUL byte is never echoed raw (escaped as `\0`).
            "Error: Invalid path: /inside.txt\\0.png",
        ),
    ] {
        assert_eq!(
            s.call("read_file", json!({"file_path": arg})).await,
            expected
        );
        let expected_write = expected.to_string();
        assert_eq!(
            s.call("write_file", json!({"file_path": arg, "content": "x"}))
                .await,
            expected_write
        );
        assert_eq!(s.call("ls", json!({"path": arg})).await, expected);
        assert_eq!(
            s.call("grep", json!({"pattern": "x", "path": arg})).await,
            expected
        );
    }
    // An absolute host path is a virtual path below the root.
    let host_secret = s.outside.join("secret.txt");
    let host_secret = host_secret.to_string_lossy();
    let out = run_tool(&s.backend, "read_file", &json!({"file_path": host_secret}))
        .await
        .unwrap()
        .content;
    assert_eq!(out, format!("Error: File not found: {host_secret}"));
    assert_eq!(
        s.call("read_file", json!({"file_path": "/etc/passwd"}))
            .await,
        "Error: File not found: /etc/passwd"
    );
    assert_eq!(
        s.call("read_file", json!({"file_path": "//etc//passwd"}))
            .await,
        "Error: File not found: /etc/passwd"
    );
    let long = format!("/{}", "a".repeat(4096));
    assert_eq!(
        s.call("read_file", json!({"file_path": long})).await,
        format!("Error: Invalid path: {long}")
    );
}

#[tokio::test]
async fn symlinks_inside_are_followed_outside_refused() {
    let s = sandbox();
    assert_eq!(
        s.call("read_file", json!({"file_path": "/link_in_file"}))
            .await,
        "     1\thello"
    );
    assert_eq!(
        s.call("read_file", json!({"file_path": "/link_in_dir/real.txt"}))
            .await,
        "     1\treal hello"
    );
    for p in [
        "/link_out_file",
        "/link_out_dir/secret.txt",
        "/abs_link",
        "/abs_link_in",
        "/mid/esc/secret.txt",
    ] {
        let esc = format!("Error: Path escapes the workspace: {p}");
        assert_eq!(s.call("read_file", json!({"file_path": p})).await, esc);
        assert_eq!(
            s.call("write_file", json!({"file_path": p, "content": "pwned"}))
                .await,
            esc
        );
        assert_eq!(
            s.call(
                "write_file",
                json!({"file_path": p, "content": "pwned", "overwrite": true})
            )
            .await,
            esc
        );
        assert_eq!(
            s.call(
                "edit_file",
                json!({"file_path": p, "old_string": "TOPSECRET", "new_string": "x"})
            )
            .await,
            esc
        );
    }
    for p in [
        "/link_out_dir/new.txt",
        "/mid/esc/new.txt",
        "/link_out_dir/deep/new.txt",
    ] {
        assert_eq!(
            s.call("write_file", json!({"file_path": p, "content": "pwned"}))
                .await,
            format!("Error: Path escapes the workspace: {p}")
        );
    }
    assert_eq!(
        s.call("read_file", json!({"file_path": "/loop_a"})).await,
        "Error: Too many levels of symbolic links: /loop_a"
    );
    assert_eq!(
        s.call("read_file", json!({"file_path": "/dangling"})).await,
        "Error: File not found: /dangling"
    );
    assert_eq!(
        s.call("ls", json!({"path": "/link_out_dir"})).await,
        "Error: Path escapes the workspace: /link_out_dir"
    );
    assert_eq!(
        s.call("ls", json!({"path": "/mid/esc"})).await,
        "Error: Path escapes the workspace: /mid/esc"
    );
    assert_eq!(
        s.call("glob", json!({"pattern": "*", "path": "/link_out_dir"}))
            .await,
        "Error: Path escapes the workspace: /link_out_dir"
    );
    assert_eq!(
        s.call("grep", json!({"pattern": "T", "path": "/link_out_dir"}))
            .await,
        "Error: Path escapes the workspace: /link_out_dir"
    );
    assert_eq!(
        s.call("grep", json!({"pattern": "T", "path": "/link_out_file"}))
            .await,
        "Error: Path escapes the workspace: /link_out_file"
    );

    // Listing shows links under their own names; `/` only for in-root dirs.
    assert_eq!(
        s.call("ls", json!({"path": "/"})).await,
        "/abs_link\n/abs_link_in\n/dangling\n/inside.txt\n/link_in_dir/\n/link_in_file\n/link_out_dir\n/link_out_file\n/loop_a\n/loop_b\n/mid/\n/sub/"
    );
    // Walks skip links that escape, dangle or loop, and never enter linked dirs.
    assert_eq!(
        s.call("ls", json!({"path": "/", "recursive": true})).await,
        "/inside.txt\n/link_in_dir/\n/link_in_file\n/mid/\n/sub/\n/sub/real.txt"
    );
    assert_eq!(
        s.call("glob", json!({"pattern": "*"})).await,
        "/inside.txt\n/link_in_file\n/sub/real.txt"
    );
    assert_eq!(
        s.call("grep", json!({"pattern": "TOPSECRET"})).await,
        "No matches found"
    );
    assert_eq!(
        s.call("grep", json!({"pattern": "hello"})).await,
        "/inside.txt\n/link_in_file\n/sub/real.txt"
    );

    // Writing through an in-root link writes its target.
    assert_eq!(
        s.call(
            "write_file",
            json!({"file_path": "/link_in_file", "content": "new\n", "overwrite": true})
        )
        .await,
        "Successfully wrote to /link_in_file"
    );
    assert_eq!(
        std::fs::read_to_string(s.root.join("inside.txt")).unwrap(),
        "new\n"
    );
    // Nothing outside changed.
    assert_eq!(
        std::fs::read_to_string(s.outside.join("secret.txt")).unwrap(),
        "TOPSECRET\n"
    );
    assert_eq!(std::fs::read_dir(&s.outside).unwrap().count(), 1);

    // Structured codes.
    let down = s
        .backend
        .download_files(vec![
            "/link_out_file".into(),
            "/../x".into(),
            "/sub".into(),
            "/nope".into(),
        ])
        .await;
    let codes: Vec<_> = down.iter().map(|d| d.error).collect();
    assert_eq!(
        codes,
        [
            Some(FileOpError::PermissionDenied),
            Some(FileOpError::InvalidPath),
            Some(FileOpError::IsDirectory),
            Some(FileOpError::FileNotFound)
        ]
    );
    let up = s
        .backend
        .upload_files(vec![
            ("/link_out_dir/x".into(), b"x".to_vec()),
            ("~/x".into(), b"x".to_vec()),
            ("/up.bin".into(), vec![0, 1, 2]),
        ])
        .await;
    let codes: Vec<_> = up.iter().map(|u| u.error).collect();
    assert_eq!(
        codes,
        [
            Some(FileOpError::PermissionDenied),
            Some(FileOpError::InvalidPath),
            None
        ]
    );
    assert_eq!(std::fs::read(s.root.join("up.bin")).unwrap(), [0, 1, 2]);
    assert_eq!(std::fs::read_dir(&s.outside).unwrap().count(), 1);
}

/// Swaps `/race` between a real directory and a symlink to outside, as fast
/// as it can, while the tools run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directory_swapped_for_symlink_during_operations() {
    let s = sandbox();
    let race = s.root.join("race");
    std::fs::create_dir_all(race.join("deep")).unwrap();
    for i in 0..20 {
        std::fs::write(race.join(format!("f{i}.txt")), "needle inside\n").unwrap();
        std::fs::write(s.outside.join(format!("f{i}.txt")), "needle TOPSECRET\n").unwrap();
    }
    std::fs::write(race.join("deep/a.txt"), "needle deep\n").unwrap();
    std::fs::create_dir_all(s.outside.join("deep")).unwrap();
    std::fs::write(s.outside.join("deep/a.txt"), "needle TOPSECRET deep\n").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let race = race.clone();
        let parked = s.root.join("race_parked");
        let outside = s.outside.clone();
        std::thread::spawn(move || {
            let mut swaps = 0u32;
            while !stop.load(Ordering::Relaxed) {
                if std::fs::rename(&race, &parked).is_err() {
                    continue;
                }
                if symlink(&outside, &race).is_ok() {
                    std::thread::yield_now();
                    let _ = std::fs::remove_file(&race);
                    swaps += 1;
                }
                // A concurrent write_file may have created a fresh `race/`.
                while std::fs::rename(&parked, &race).is_err() {
                    let _ = std::fs::remove_dir_all(&race);
                }
            }
            swaps
        })
    };
    let start = Instant::now();
    let mut rounds = 0;
    while start.elapsed() < Duration::from_millis(1500) {
        s.call(
            "grep",
            json!({"pattern": "needle", "output_mode": "content"}),
        )
        .await;
        s.call(
            "grep",
            json!({"pattern": "needle", "path": "/race", "output_mode": "content"}),
        )
        .await;
        s.call("ls", json!({"path": "/race", "recursive": true}))
            .await;
        s.call("ls", json!({"path": "/race/deep"})).await;
        s.call("read_file", json!({"file_path": "/race/f1.txt"}))
            .await;
        s.call("read_file", json!({"file_path": "/race/deep/a.txt"}))
            .await;
        s.call("glob", json!({"pattern": "**/*.txt"})).await;
        s.call(
            "write_file",
            json!({"file_path": "/race/deep/w.txt", "content": "w", "overwrite": true}),
        )
        .await;
        s.call("edit_file", json!({"file_path": "/race/f2.txt", "old_string": "needle", "new_string": "needle", "replace_all": true})).await;
        rounds += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(rounds > 5 && swaps > 5, "rounds {rounds}, swaps {swaps}");
    // Nothing was written outside.
    assert!(!Path::new(&s.outside.join("deep/w.txt")).exists());
    for i in 0..20 {
        assert_eq!(
            std::fs::read_to_string(s.outside.join(format!("f{i}.txt"))).unwrap(),
            "needle TOPSECRET\n"
        );
    }
}

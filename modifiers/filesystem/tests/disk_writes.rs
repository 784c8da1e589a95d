//! `FilesystemBackend` writes: through symlinks (dangling ones included),
//! names too long for the filesystem, atomic replacement (modes kept, no
//! temp file left), and temp names hidden from the listing tools.
#![allow(clippy::unwrap_used, unreachable_pub)]

mod common;

use std::os::unix::fs::{symlink, PermissionsExt};

use lc_agent::RunnableNetwork;
use lc_agent_filesystem::TEMP_PREFIX;
use lc_agent_filesystem::{run_tool, Backend, FileOpError, FilesystemBackend, StateBackend};
use serde_json::{json, Value};

async fn call(backend: &dyn Backend, tool: &str, args: Value) -> String {
    run_tool(backend, tool, &args).await.unwrap().content
}

#[tokio::test]
async fn write_through_a_dangling_in_root_link_creates_its_target() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("r")).unwrap();
    symlink("nothere.txt", root.join("r/dang")).unwrap();
    symlink("r/dang", root.join("chain")).unwrap();
    symlink("sub/deeper/new.txt", root.join("r/deep")).unwrap();
    symlink("../r/other.txt", root.join("r/via_parent")).unwrap();
    symlink("../../outside.txt", root.join("r/out")).unwrap();
    symlink("/tmp/nowhere.txt", root.join("r/abs")).unwrap();
    symlink("..", root.join("r/up")).unwrap();
    symlink("missing.txt", root.join("r/dang2")).unwrap();
    let b = FilesystemBackend::new(&root).unwrap();

    // A dangling link in the middle of a path is listed as a file: nothing
    // is created through it.
    assert_eq!(
        call(
            &b,
            "write_file",
            json!({"file_path": "/r/dang2/x.txt", "content": "x"})
        )
        .await,
        "Error: Cannot create /r/dang2/x.txt: /r/dang2 is a file"
    );
    assert!(!root.join("r/missing.txt").exists());

    assert_eq!(
        call(
            &b,
            "write_file",
            json!({"file_path": "/r/dang", "content": "one\n"})
        )
        .await,
        "Successfully wrote to /r/dang"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("r/nothere.txt")).unwrap(),
        "one\n"
    );
    assert!(std::fs::symlink_metadata(root.join("r/dang"))
        .unwrap()
        .file_type()
        .is_symlink());
    // Now the target exists: the usual rule, then overwrite through a chain.
    assert_eq!(
        call(&b, "write_file", json!({"file_path": "/r/dang", "content": "x"})).await,
        "Error: Cannot write to /r/dang because it already exists. Read it and use edit_file, or call write_file with overwrite=true."
    );
    assert_eq!(
        call(
            &b,
            "write_file",
            json!({"file_path": "/chain", "content": "two\n", "overwrite": true})
        )
        .await,
        "Successfully wrote to /chain"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("r/nothere.txt")).unwrap(),
        "two\n"
    );
    assert_eq!(
        call(
            &b,
            "edit_file",
            json!({"file_path": "/chain", "old_string": "two", "new_string": "three"})
        )
        .await,
        "Successfully replaced 1 occurrence(s) in /chain"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("r/nothere.txt")).unwrap(),
        "three\n"
    );
    assert!(std::fs::symlink_metadata(root.join("chain"))
        .unwrap()
        .file_type()
        .is_symlink());
    // Missing directories of the target are created, like the path's own.
    assert_eq!(
        call(
            &b,
            "write_file",
            json!({"file_path": "/r/deep", "content": "d"})
        )
        .await,
        "Successfully wrote to /r/deep"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("r/sub/deeper/new.txt")).unwrap(),
        "d"
    );
    assert_eq!(
        call(
            &b,
            "write_file",
            json!({"file_path": "/r/via_parent", "content": "p"})
        )
        .await,
        "Successfully wrote to /r/via_parent"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("r/other.txt")).unwrap(),
        "p"
    );
    assert_eq!(
        call(&b, "read_file", json!({"file_path": "/r/via_parent"})).await,
        "     1\tp"
    );
    // Dangling links that leave the root stay escapes, and create nothing.
    for p in ["/r/out", "/r/abs"] {
        for overwrite in [false, true] {
            assert_eq!(
                call(
                    &b,
                    "write_file",
                    json!({"file_path": p, "content": "pwned", "overwrite": overwrite})
                )
                .await,
                format!("Error: Path escapes the workspace: {p}")
            );
        }
    }
    assert!(!tmp.path().join("outside.txt").exists());
    assert!(!std::path::Path::new("/tmp/nowhere.txt").exists());
    assert_eq!(
        call(
            &b,
            "write_file",
            json!({"file_path": "/r/up", "content": "x", "overwrite": true})
        )
        .await,
        "Error: /r/up is a directory"
    );
    assert_eq!(
        common::temp_files(tmp.path()),
        Vec::<std::path::PathBuf>::new()
    );
}

#[tokio::test]
async fn a_name_too_long_for_the_filesystem_is_an_invalid_path_to_write() {
    let dir = tempfile::tempdir().unwrap();
    let b = FilesystemBackend::new(dir.path()).unwrap();
    let long = "n".repeat(300);
    for p in [
        format!("/{long}"),
        format!("/{long}/x.txt"),
        format!("/a/{long}"),
    ] {
        assert_eq!(
            call(&b, "write_file", json!({"file_path": p, "content": "x"})).await,
            format!("Error: Invalid path: {p}")
        );
        assert_eq!(
            call(&b, "read_file", json!({"file_path": p})).await,
            format!("Error: File not found: {p}")
        );
    }
    let up = b
        .upload_files(vec![(format!("/{long}"), b"x".to_vec())])
        .await;
    assert_eq!(up[0].error, Some(FileOpError::InvalidPath));
    let down = b.download_files(vec![format!("/{long}")]).await;
    assert_eq!(down[0].error, Some(FileOpError::FileNotFound));
}

#[tokio::test]
async fn replacing_keeps_the_mode_and_leaves_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let b = FilesystemBackend::new(dir.path()).unwrap();
    let file = dir.path().join("s/run.sh");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "echo one\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o750)).unwrap();
    let mode = || std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777;
    assert_eq!(
        call(
            &b,
            "write_file",
            json!({"file_path": "/s/run.sh", "content": "echo two\n", "overwrite": true})
        )
        .await,
        "Successfully wrote to /s/run.sh"
    );
    assert_eq!(mode(), 0o750);
    assert_eq!(
        call(
            &b,
            "edit_file",
            json!({"file_path": "/s/run.sh", "old_string": "two", "new_string": "three"})
        )
        .await,
        "Successfully replaced 1 occurrence(s) in /s/run.sh"
    );
    assert_eq!(mode(), 0o750);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "echo three\n");
    // Failed edits and refused writes change nothing and leave nothing.
    call(
        &b,
        "edit_file",
        json!({"file_path": "/s/run.sh", "old_string": "zzz", "new_string": "y"}),
    )
    .await;
    call(
        &b,
        "write_file",
        json!({"file_path": "/s/run.sh", "content": "x"}),
    )
    .await;
    call(
        &b,
        "write_file",
        json!({"file_path": "/s", "content": "x", "overwrite": true}),
    )
    .await;
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "echo three\n");
    assert_eq!(
        common::temp_files(dir.path()),
        Vec::<std::path::PathBuf>::new()
    );
}

#[tokio::test]
async fn temp_names_are_hidden_from_ls_glob_and_grep() {
    let dir = tempfile::tempdir().unwrap();
    let disk = FilesystemBackend::new(dir.path()).unwrap();
    let state = StateBackend::new(RunnableNetwork::new());
    let left_over = format!("{TEMP_PREFIX}4242-0-1f");
    for b in [&disk as &dyn Backend, &state] {
        b.write("/a/kept.txt", "needle\n", true).await.unwrap();
        b.write(&format!("/a/{left_over}"), "needle\n", true)
            .await
            .unwrap();
        b.write(&format!("/{left_over}"), "needle\n", true)
            .await
            .unwrap();
        assert_eq!(call(b, "ls", json!({"path": "/"})).await, "/a/");
        assert_eq!(call(b, "ls", json!({"path": "/a"})).await, "/a/kept.txt");
        assert_eq!(
            call(b, "ls", json!({"path": "/", "recursive": true})).await,
            "/a/\n/a/kept.txt"
        );
        assert_eq!(
            call(b, "glob", json!({"pattern": "*"})).await,
            "/a/kept.txt"
        );
        assert_eq!(
            call(b, "glob", json!({"pattern": ".lc-agent-tmp-*"})).await,
            "No files found"
        );
        assert_eq!(
            call(b, "grep", json!({"pattern": "needle"})).await,
            "/a/kept.txt"
        );
        assert_eq!(
            call(
                b,
                "grep",
                json!({"pattern": "needle", "path": format!("/{left_over}")})
            )
            .await,
            "No matches found"
        );
        // Still a file that can be read by its path (like a file in .git).
        assert_eq!(
            call(
                b,
                "read_file",
                json!({"file_path": format!("/{left_over}")})
            )
            .await,
            "     1\tneedle"
        );
    }
}

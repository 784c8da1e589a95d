//! Every backend gives the same answers on the same files: a generated tree
//! (with .gitignore files, .git dirs, CRLF, hidden files) queried through
//! StateBackend, FilesystemBackend, StoreBackend and a CompositeBackend.

use lc_agent::RunnableNetwork;
use lc_agent_filesystem::{
    run_tool, Backend, CompositeBackend, FilesystemBackend, InMemoryStore, StateBackend,
    StoreBackend,
};
use serde_json::{json, Value};

fn tree() -> Vec<(String, String)> {
    let mut seed = 12345u64;
    let mut next = move |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let words = [
        "apple",
        "Banana",
        "cherry",
        "TODO",
        "fn main",
        "x = 1;",
        "ünïcode",
        "tab\there",
    ];
    let dirs = [
        "/",
        "/a/",
        "/a/b/",
        "/.hidden/",
        "/c/",
        "/c/.git/",
        "/a/b/c/d/",
        "/build/",
    ];
    let exts = ["rs", "py", "md", "txt", "log"];
    let mut files = vec![
        ("/.gitignore".to_string(), "build/\n*.log\n".to_string()),
        (
            "/a/.gitignore".to_string(),
            "secret*\n!secret_ok.md\n".to_string(),
        ),
        ("/a/secret1.md".to_string(), "apple\n".to_string()),
        ("/a/secret_ok.md".to_string(), "apple\n".to_string()),
    ];
    for i in 0..120 {
        let dir = dirs[next(dirs.len() as u64) as usize];
        let ext = exts[next(exts.len() as u64) as usize];
        let crlf = next(5) == 0;
        let lines = 1 + next(30);
        let mut text = String::new();
        for _ in 0..lines {
            let n = 1 + next(4);
            let line: Vec<&str> = (0..n)
                .map(|_| words[next(words.len() as u64) as usize])
                .collect();
            text.push_str(&line.join(" "));
            text.push_str(if crlf { "\r\n" } else { "\n" });
        }
        files.push((format!("{dir}f{i}.{ext}"), text));
    }
    files
}

fn queries() -> Vec<(&'static str, Value)> {
    let mut q = vec![
        ("ls", json!({"path": "/"})),
        ("ls", json!({"path": "/", "recursive": true})),
        ("ls", json!({"path": "/a", "recursive": true})),
        ("ls", json!({"path": "/c"})),
    ];
    for pattern in [
        "*",
        "*.rs",
        "a/**/*.md",
        "/*.txt",
        "**/d/*",
        "*.{py,log}",
        "f1?.*",
        "[a-c]/*",
    ] {
        q.push(("glob", json!({"pattern": pattern})));
        q.push(("glob", json!({"pattern": pattern, "path": "/a"})));
    }
    for (pattern, extra) in [
        ("apple", json!({})),
        ("TODO", json!({"output_mode": "content", "context": 2})),
        ("^fn main", json!({"output_mode": "count"})),
        (
            "banana",
            json!({"case_insensitive": true, "output_mode": "content"}),
        ),
        (
            "x = 1;",
            json!({"fixed_strings": true, "max_count": 7, "output_mode": "content"}),
        ),
        ("here$", json!({"output_mode": "content", "max_count": 5})),
        ("ünïcode", json!({"glob": "*.md", "output_mode": "count"})),
        ("(unclosed", json!({})),
        ("cherry", json!({"path": "/a", "glob": "b/**"})),
    ] {
        let mut args = json!({"pattern": pattern});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        q.push(("grep", args));
    }
    for i in [0, 5, 17, 42, 99] {
        q.push((
            "read_file",
            json!({"file_path": format!("/f{i}.rs"), "offset": 1, "limit": 3}),
        ));
    }
    q
}

async fn answers(backend: &dyn Backend) -> Vec<String> {
    answers_under(backend, "").await
}

/// Writes the tree under `prefix`, queries it there, and strips the prefix
/// from the answers.
async fn answers_under(backend: &dyn Backend, prefix: &str) -> Vec<String> {
    for (path, text) in tree() {
        backend
            .write(&format!("{prefix}{path}"), &text, true)
            .await
            .unwrap();
    }
    let mut out = Vec::new();
    for (tool, args) in queries() {
        let mut routed = args.clone();
        let map = routed.as_object_mut().unwrap();
        for key in ["path", "file_path"] {
            let given = map
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("/")
                .to_string();
            if key == "path" || map.contains_key(key) {
                map.insert(key.into(), json!(format!("{prefix}{given}")));
            }
        }
        let text = run_tool(backend, tool, &routed).await.unwrap().content;
        let text = if prefix.is_empty() {
            text
        } else {
            text.replace(&format!("{prefix}/"), "/")
        };
        out.push(format!("{tool} {args}\n{text}"));
    }
    out
}

#[tokio::test]
async fn backends_agree() {
    let state = answers(&StateBackend::new(RunnableNetwork::new())).await;
    let dir = tempfile::tempdir().unwrap();
    let disk = answers(&FilesystemBackend::new(dir.path()).unwrap()).await;
    let store = answers(&StoreBackend::new(InMemoryStore::new(), ["ns"])).await;
    let composite = CompositeBackend::new(StateBackend::factory())
        .route("/zzz/", StoreBackend::new(InMemoryStore::new(), ["ns"]))
        .resolve(&RunnableNetwork::new());
    let composite = answers_under(&*composite, "/zzz").await;
    // Sanity: the queries found things.
    assert!(state.iter().filter(|a| a.contains("No ")).count() < state.len() / 2);
    for (name, other) in [
        ("disk", &disk),
        ("store", &store),
        ("composite", &composite),
    ] {
        for (a, b) in state.iter().zip(other.iter()) {
            assert_eq!(a, b, "StateBackend and {name} disagree");
        }
    }
}

#[tokio::test]
async fn composite_merges_routes() {
    let net = RunnableNetwork::new();
    let store = InMemoryStore::new();
    let composite = CompositeBackend::new(StateBackend::factory())
        .route(
            "/memories/",
            StoreBackend::new(store.clone(), ["user-42", "filesystem"]),
        )
        .route("/deep/inner/", StoreBackend::new(store.clone(), ["other"]))
        .resolve(&net);
    let b = &*composite;
    for (path, text) in [
        ("/notes.md", "TODO top\n"),
        ("/memories/prefs.md", "TODO remember\n"),
        ("/deep/inner/x.md", "TODO deep\n"),
    ] {
        assert_eq!(
            run_tool(
                b,
                "write_file",
                &json!({"file_path": path, "content": text})
            )
            .await
            .unwrap()
            .content,
            format!("Successfully wrote to {path}")
        );
    }
    let call = |tool: &'static str, args: Value| async move {
        run_tool(b, tool, &args).await.unwrap().content
    };
    assert_eq!(
        call("ls", json!({"path": "/"})).await,
        "/deep/\n/memories/\n/notes.md"
    );
    assert_eq!(
        call("ls", json!({"path": "/", "recursive": true})).await,
        "/deep/\n/deep/inner/\n/deep/inner/x.md\n/memories/\n/memories/prefs.md\n/notes.md"
    );
    assert_eq!(
        call("ls", json!({"path": "/memories"})).await,
        "/memories/prefs.md"
    );
    assert_eq!(
        call("glob", json!({"pattern": "*.md"})).await,
        "/deep/inner/x.md\n/memories/prefs.md\n/notes.md"
    );
    assert_eq!(
        call("glob", json!({"pattern": "memories/*.md"})).await,
        "/memories/prefs.md"
    );
    assert_eq!(
        call("grep", json!({"pattern": "TODO", "output_mode": "content"})).await,
        "/deep/inner/x.md:1:TODO deep\n/memories/prefs.md:1:TODO remember\n/notes.md:1:TODO top"
    );
    assert_eq!(
        call("grep", json!({"pattern": "TODO", "glob": "memories/*"})).await,
        "/memories/prefs.md"
    );
    assert_eq!(
        call("read_file", json!({"file_path": "/memories/nope.md"})).await,
        "Error: File not found: /memories/nope.md"
    );
    assert_eq!(
        call("execute", json!({"command": "ls"})).await,
        "Error: execute is not available: the backend cannot run commands"
    );
    // The store got the path without its prefix; the network only its own file.
    let stored = StoreBackend::new(store.clone(), ["user-42", "filesystem"]);
    assert_eq!(
        stored.read("/prefs.md", 0, 10).await.unwrap().lines,
        [lc_agent_filesystem::PageLine::whole("TODO remember")]
    );
    assert_eq!(
        net.files().keys().cloned().collect::<Vec<_>>(),
        ["/notes.md"]
    );
    let down = b
        .download_files(vec!["/memories/prefs.md".into(), "/nope".into()])
        .await;
    assert_eq!(down[0].content.as_deref(), Some(&b"TODO remember\n"[..]));
    assert_eq!(down[1].error.map(|e| e.as_str()), Some("file_not_found"));
}

#[tokio::test]
async fn disk_specific_rules() {
    let dir = tempfile::tempdir().unwrap();
    let backend = FilesystemBackend::new(dir.path()).unwrap();
    let call = |tool: &'static str, args: Value| {
        let backend = backend.clone();
        async move { run_tool(&backend, tool, &args).await.unwrap().content }
    };
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    assert_eq!(
        call("ls", json!({"path": "/empty"})).await,
        "(empty directory)"
    );
    // UTF-16 files are decoded, searched, and edited back as UTF-16.
    let mut utf16 = vec![0xFF, 0xFE];
    for u in "héllo\r\nwörld\r\n".encode_utf16() {
        utf16.extend_from_slice(&u.to_le_bytes());
    }
    std::fs::write(dir.path().join("u16.txt"), &utf16).unwrap();
    assert_eq!(
        call("read_file", json!({"file_path": "/u16.txt"})).await,
        "     1\théllo\n     2\twörld\n[File encoding: UTF-16LE]"
    );
    assert_eq!(
        call(
            "grep",
            json!({"pattern": "wörld", "output_mode": "content"})
        )
        .await,
        "/u16.txt:2:wörld"
    );
    assert_eq!(call("edit_file", json!({"file_path": "/u16.txt", "old_string": "héllo\nwörld", "new_string": "hi\nworld"})).await, "Successfully replaced 1 occurrence(s) in /u16.txt");
    let bytes = std::fs::read(dir.path().join("u16.txt")).unwrap();
    assert_eq!(&bytes[..2], &[0xFF, 0xFE]);
    let units: Vec<u16> = bytes[2..]
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    assert_eq!(String::from_utf16(&units).unwrap(), "hi\r\nworld\r\n");
    // Issue 36 item 6: not UTF-8 in the first 8 KiB is Windows-1252
    // (Latin-1): read, searched and edited in its own encoding.
    std::fs::write(
        dir.path().join("latin1.txt"),
        b"caf\xe9\r\nna\xefve \x80\r\n",
    )
    .unwrap();
    assert_eq!(
        call("read_file", json!({"file_path": "/latin1.txt"})).await,
        "     1\tcafé\n     2\tnaïve €\n[File encoding: windows-1252]"
    );
    assert_eq!(
        call(
            "grep",
            json!({"pattern": "ï|é", "path": "/latin1.txt", "output_mode": "content"})
        )
        .await,
        "/latin1.txt:1:café\n/latin1.txt:2:naïve €"
    );
    assert_eq!(
        call(
            "edit_file",
            json!({"file_path": "/latin1.txt", "old_string": "café\nnaïve", "new_string": "thé\nnaïf"})
        )
        .await,
        "Successfully replaced 1 occurrence(s) in /latin1.txt"
    );
    assert_eq!(
        std::fs::read(dir.path().join("latin1.txt")).unwrap(),
        b"th\xe9\r\nna\xeff \x80\r\n"
    );
    assert_eq!(
        call(
            "edit_file",
            json!({"file_path": "/latin1.txt", "old_string": "thé", "new_string": "茶"})
        )
        .await,
        "Error: /latin1.txt is windows-1252 text, which cannot hold every character of new_string; the file was not changed"
    );
    // Past the first 8 KiB a bad byte is a bad byte: U+FFFD, never rewritten.
    let mut late = "ok\n".repeat(3000).into_bytes();
    late.extend_from_slice(b"caf\xe9\n");
    std::fs::write(dir.path().join("late_bad.txt"), &late).unwrap();
    assert_eq!(
        call(
            "read_file",
            json!({"file_path": "/late_bad.txt", "offset": 3000})
        )
        .await,
        "  3001\tcaf\u{FFFD}"
    );
    assert_eq!(
        call(
            "edit_file",
            json!({"file_path": "/late_bad.txt", "old_string": "caf", "new_string": "tea"})
        )
        .await,
        "Error: /late_bad.txt is not valid UTF-8; edit_file will not rewrite it"
    );
    // UTF-8 with a BOM: named, not shown, kept on edit.
    std::fs::write(dir.path().join("bom.txt"), b"\xef\xbb\xbfh\xc3\xa9llo\n").unwrap();
    call(
        "edit_file",
        json!({"file_path": "/bom.txt", "old_string": "héllo", "new_string": "hello"}),
    )
    .await;
    assert_eq!(
        std::fs::read(dir.path().join("bom.txt")).unwrap(),
        b"\xef\xbb\xbfhello\n"
    );
    // CRLF kept on disk.
    std::fs::write(dir.path().join("crlf.txt"), "a\r\nb\r\n").unwrap();
    call(
        "edit_file",
        json!({"file_path": "/crlf.txt", "old_string": "a\nb", "new_string": "c\nd"}),
    )
    .await;
    assert_eq!(
        std::fs::read(dir.path().join("crlf.txt")).unwrap(),
        b"c\r\nd\r\n"
    );
    // A .gitignore below a search path applies without a git repository.
    std::fs::create_dir_all(dir.path().join("p/q")).unwrap();
    std::fs::write(dir.path().join("p/.gitignore"), "q/\n").unwrap();
    std::fs::write(dir.path().join("p/q/hidden.rs"), "x").unwrap();
    std::fs::write(dir.path().join("p/seen.rs"), "x").unwrap();
    assert_eq!(call("glob", json!({"pattern": "*.rs"})).await, "/p/seen.rs");
    assert_eq!(
        call("glob", json!({"pattern": "*.rs", "path": "/p"})).await,
        "/p/seen.rs"
    );
    // Deleting.
    assert_eq!(backend.delete("/p/seen.rs").await, Ok(()));
    assert!(!dir.path().join("p/seen.rs").exists());
}

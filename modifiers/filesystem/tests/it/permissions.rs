//! Path permissions on every backend, with hostile spellings of denied
//! paths (`..`, `//`, `./`, trailing `/`, case variants, NFC/NFD, and on
//! disk symlinks into the denied directory): a denied path is never read,
//! written, edited, deleted, listed or matched — its content and its name
//! are absent from every answer, and the files behind it are unchanged.

use std::sync::Arc;

use lc_agent::RunnableNetwork;
use lc_agent_filesystem::{
    run_tool, Backend, BackendSource, CompositeBackend, FilesystemBackend, InMemoryStore,
    LocalShellBackend, PermissionRule, Permissions, RuleMode, StateBackend, StoreBackend,
};
use lc_agent_test_support::{needs, RedisServer};
use serde_json::json;

/// NFC `café` and the same name in NFD (`e` + combining acute).
const CAFE_NFC: &str = "caf\u{e9}";
const CAFE_NFD: &str = "cafe\u{301}";

/// The files every backend holds: secrets in denied places, one public file.
fn files() -> Vec<(String, String)> {
    vec![
        ("/secrets/key.pem".into(), "TOPSECRET-key\n".into()),
        ("/secrets/deep/token.txt".into(), "TOPSECRET-token\n".into()),
        ("/Secrets/upper.txt".into(), "TOPSECRET-upper\n".into()),
        (format!("/{CAFE_NFC}/note.txt"), "TOPSECRET-nfc\n".into()),
        (format!("/{CAFE_NFD}/nfd.txt"), "TOPSECRET-nfd\n".into()),
        ("/public/readme.md".into(), "hello public\n".into()),
    ]
}

/// Names no answer may contain (lower-cased comparison).
fn denied_names() -> Vec<String> {
    vec![
        "secrets".into(),
        "key.pem".into(),
        "token.txt".into(),
        "upper.txt".into(),
        "note.txt".into(),
        "nfd.txt".into(),
        CAFE_NFC.into(),
        CAFE_NFD.into(),
        "link".into(),
    ]
}

fn rules() -> Permissions {
    Permissions::new([
        PermissionRule::parse(RuleMode::Deny, "secrets/**").unwrap(),
        PermissionRule::parse(RuleMode::Deny, &format!("*:{CAFE_NFC}/**")).unwrap(),
        PermissionRule::parse(RuleMode::Ask, "write:docs/**").unwrap(),
    ])
    .unwrap()
}

/// Hostile spellings of denied paths (files and directories).
fn hostile(disk: bool) -> Vec<String> {
    let mut out: Vec<String> = [
        "/secrets/key.pem",
        "secrets/key.pem",
        "//secrets//key.pem",
        "/secrets/./key.pem",
        "/./secrets/deep/../key.pem",
        "/public/../secrets/key.pem",
        "/secrets/key.pem/",
        "/secrets",
        "/secrets/",
        "//secrets//",
        "/SECRETS/key.pem",
        "/Secrets/upper.txt",
        "/sEcReTs/deep/token.txt",
        "/secrets/deep/token.txt",
        "/secrets/new.txt",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    out.push(format!("/{CAFE_NFC}/note.txt"));
    out.push(format!("/{CAFE_NFD}/nfd.txt"));
    out.push(format!("/{CAFE_NFD}/note.txt"));
    out.push(format!("/{}/note.txt", CAFE_NFC.to_uppercase()));
    out.push(format!("/{CAFE_NFD}"));
    if disk {
        for p in [
            "/link/key.pem",
            "/link/deep/token.txt",
            "/link/",
            "/link",
            "/keylink.txt",
            "/deeplink/token.txt",
            "/dangling.txt",
            "/public/up/secrets/key.pem",
            "/public/up/link/key.pem",
            "/chain.txt",
        ] {
            out.push(p.to_string());
        }
    }
    out
}

/// Plants the fixture (through the unguarded backend) and, on disk, links
/// pointing into the denied directory.
async fn plant(inner: &dyn Backend, disk_root: Option<&std::path::Path>) {
    for (path, content) in files() {
        inner.write(&path, &content, true).await.unwrap();
    }
    if let Some(root) = disk_root {
        use std::os::unix::fs::symlink;
        symlink("secrets", root.join("link")).unwrap();
        symlink("secrets/key.pem", root.join("keylink.txt")).unwrap();
        symlink("secrets/deep", root.join("deeplink")).unwrap();
        symlink("secrets/planted.txt", root.join("dangling.txt")).unwrap();
        symlink("..", root.join("public/up")).unwrap();
        symlink("keylink.txt", root.join("chain.txt")).unwrap();
    }
}

fn problems(answer: &str, context: &str) -> Vec<String> {
    let mut out = Vec::new();
    if answer.contains("TOPSECRET") {
        out.push(format!("{context}: secret content shown:\n{answer}"));
    }
    if answer.contains("PWNED") {
        out.push(format!("{context}: written content shown:\n{answer}"));
    }
    out
}

/// Whether a listing line names a denied path (the error lines of a
/// refused call name the path the caller gave; listings must not).
fn listing_problems(answer: &str, context: &str) -> Vec<String> {
    let lower = answer.to_lowercase();
    denied_names()
        .into_iter()
        .filter(|n| lower.contains(&n.to_lowercase()))
        .map(|n| format!("{context}: denied name `{n}` listed:\n{answer}"))
        .collect()
}

/// Runs the whole hostile table through the tools over `guarded`, and
/// checks `inner` afterwards: nothing behind a rule changed.
async fn hostile_table(guarded: &dyn Backend, inner: &dyn Backend, disk: bool) -> Vec<String> {
    let mut fails = Vec::new();
    let run = |name: &'static str, args: serde_json::Value| async move {
        run_tool(guarded, name, &args).await.unwrap().content
    };
    // The public file is served as usual.
    let public = run("read_file", json!({"file_path": "/public/readme.md"})).await;
    if !public.contains("hello public") {
        fails.push(format!("public file not readable: {public}"));
    }
    for p in hostile(disk) {
        for (tool, args) in [
            ("read_file", json!({"file_path": p})),
            (
                "write_file",
                json!({"file_path": p, "content": "PWNED", "overwrite": true}),
            ),
            (
                "edit_file",
                json!({"file_path": p, "old_string": "SECRET-", "new_string": "PWNED-", "replace_all": true}),
            ),
            ("ls", json!({"path": p, "recursive": true})),
            ("glob", json!({"pattern": "**/*", "path": p})),
            (
                "grep",
                json!({"pattern": "TOPSECRET", "path": p, "output_mode": "content"}),
            ),
            (
                "grep",
                json!({"pattern": ".", "path": p, "output_mode": "files_with_matches"}),
            ),
        ] {
            let out = run(tool, args.clone()).await;
            let context = format!("{tool} {args}");
            fails.extend(problems(&out, &context));
            if !out.starts_with("Error: ") && !out.starts_with("No ") {
                fails.push(format!("{context}: not refused: {out}"));
            }
        }
    }
    // Listings and searches from the root leave out every denied name.
    for (tool, args) in [
        ("ls", json!({"path": "/", "recursive": true})),
        ("ls", json!({"path": "/"})),
        ("ls", json!({"path": "/public", "recursive": true})),
        ("glob", json!({"pattern": "**/*"})),
        ("glob", json!({"pattern": "*"})),
        ("glob", json!({"pattern": "**/*.pem"})),
        (
            "grep",
            json!({"pattern": "TOPSECRET", "output_mode": "content"}),
        ),
        (
            "grep",
            json!({"pattern": ".", "output_mode": "files_with_matches"}),
        ),
        ("grep", json!({"pattern": ".", "output_mode": "count"})),
        (
            "grep",
            json!({"pattern": "topsecret", "case_insensitive": true, "output_mode": "content"}),
        ),
    ] {
        let out = run(tool, args.clone()).await;
        let context = format!("{tool} {args}");
        fails.extend(problems(&out, &context));
        fails.extend(listing_problems(&out, &context));
        if tool != "grep" && !out.contains("/public") && !out.starts_with("No ") {
            fails.push(format!("{context}: allowed files missing: {out}"));
        }
    }
    // Downloads and uploads obey the same rules.
    let down = guarded
        .download_files(vec!["/secrets/key.pem".into(), "/SECRETS//key.pem/".into()])
        .await;
    if down.iter().any(|d| d.content.is_some()) {
        fails.push("download of a denied file returned bytes".into());
    }
    let up = guarded
        .upload_files(vec![("/secrets/up.txt".into(), b"PWNED".to_vec())])
        .await;
    if up.iter().any(|u| u.error.is_none()) {
        fails.push("upload into a denied directory succeeded".into());
    }
    if guarded.delete("/secrets/key.pem").await.is_ok() {
        fails.push("delete of a denied file succeeded".into());
    }
    if guarded.append("/secrets/key.pem", "PWNED").await.is_ok() {
        fails.push("append to a denied file succeeded".into());
    }
    // Nothing behind the rules changed: every planted file as it was, no
    // new file anywhere, no PWNED.
    for (path, content) in files() {
        let got = inner.download_files(vec![path.clone()]).await;
        let bytes = got[0].content.clone().unwrap_or_default();
        if bytes != content.as_bytes() {
            fails.push(format!(
                "{path} changed: {:?}",
                String::from_utf8_lossy(&bytes)
            ));
        }
    }
    let all = inner.ls("/", true).await.unwrap();
    let unexpected: Vec<_> = all
        .iter()
        .filter(|e| !e.is_dir)
        .map(|e| e.path.clone())
        .filter(|p| !files().iter().any(|(f, _)| f == p))
        .filter(|p| !matches!(p.as_str(), "/keylink.txt" | "/dangling.txt" | "/chain.txt"))
        .collect();
    if !unexpected.is_empty() {
        fails.push(format!("new files appeared: {unexpected:?}"));
    }
    // The `ask` rule refuses where nobody can approve, saying so.
    let ask = run(
        "write_file",
        json!({"file_path": "/docs/a.md", "content": "x"}),
    )
    .await;
    if !ask.starts_with("Error: Approval needed: path rule 3 (ask write:docs/**)") {
        fails.push(format!("ask not refused with its rule: {ask}"));
    }
    fails
}

fn assert_clean(fails: Vec<String>) {
    assert!(
        fails.is_empty(),
        "{} failures:\n{}",
        fails.len(),
        fails.join("\n\n")
    );
}

fn guard(inner: Arc<dyn Backend>) -> Arc<dyn Backend> {
    match rules().guard(inner, false) {
        BackendSource::Ready(b) => b,
        BackendSource::Factory(_) => unreachable!("a ready backend stays ready"),
    }
}

#[tokio::test]
async fn denied_paths_on_the_state_backend() {
    let inner: Arc<dyn Backend> = Arc::new(StateBackend::new(RunnableNetwork::new()));
    plant(inner.as_ref(), None).await;
    assert_clean(hostile_table(guard(inner.clone()).as_ref(), inner.as_ref(), false).await);
}

#[tokio::test]
async fn denied_paths_on_the_in_memory_store() {
    let inner: Arc<dyn Backend> = Arc::new(StoreBackend::new(InMemoryStore::new(), ["u", "fs"]));
    plant(inner.as_ref(), None).await;
    assert_clean(hostile_table(guard(inner.clone()).as_ref(), inner.as_ref(), false).await);
}

#[needs(redis)]
#[tokio::test]
async fn denied_paths_on_the_redis_store() {
    let server = RedisServer::start();
    let inner: Arc<dyn Backend> = Arc::new(StoreBackend::redis(server.url(), ["u", "fs"]));
    plant(inner.as_ref(), None).await;
    assert_clean(hostile_table(guard(inner.clone()).as_ref(), inner.as_ref(), false).await);
}

#[tokio::test]
async fn denied_paths_on_disk_through_links() {
    let dir = tempfile::tempdir().unwrap();
    let inner: Arc<dyn Backend> = Arc::new(FilesystemBackend::new(dir.path()).unwrap());
    plant(inner.as_ref(), Some(dir.path())).await;
    assert_clean(hostile_table(guard(inner.clone()).as_ref(), inner.as_ref(), true).await);
    // The dangling link's target was never created, on the real disk.
    assert!(!dir.path().join("secrets/planted.txt").exists());
    assert!(!dir.path().join("secrets/new.txt").exists());
}

#[tokio::test]
async fn denied_paths_on_a_local_shell_and_its_command_rule() {
    let dir = tempfile::tempdir().unwrap();
    let inner: Arc<dyn Backend> = Arc::new(LocalShellBackend::new(dir.path()).unwrap());
    plant(inner.as_ref(), Some(dir.path())).await;
    assert_clean(hostile_table(guard(inner.clone()).as_ref(), inner.as_ref(), true).await);
    // `execute` rules match every command (the working directory is the root).
    let held = Permissions::new([PermissionRule::parse(RuleMode::Deny, "execute:**").unwrap()])
        .unwrap()
        .guard(inner.clone(), false);
    let BackendSource::Ready(shell) = held else {
        unreachable!()
    };
    let out = run_tool(shell.as_ref(), "execute", &json!({"command": "touch ran"}))
        .await
        .unwrap()
        .content;
    assert_eq!(
        out,
        "Error: Permission denied by path rule 1 (deny execute:**): cannot run commands in /"
    );
    assert!(!dir.path().join("ran").exists());
}

#[tokio::test]
async fn denied_paths_on_a_composite_of_state_and_disk() {
    let dir = tempfile::tempdir().unwrap();
    let net = RunnableNetwork::new();
    // Secrets live on the routed disk, the rest in the network.
    let composite = CompositeBackend::new(StateBackend::factory())
        .route("/secrets/", FilesystemBackend::new(dir.path()).unwrap());
    let inner = composite.resolve(&net);
    plant(inner.as_ref(), None).await;
    assert!(dir.path().join("key.pem").is_file());
    let guarded = match rules().guard(composite, false) {
        BackendSource::Factory(f) => f.build(&net),
        BackendSource::Ready(b) => b,
    };
    assert_clean(hostile_table(guarded.as_ref(), inner.as_ref(), false).await);
}

#[tokio::test]
async fn first_match_wins_and_errors_name_the_rule() {
    let net = RunnableNetwork::new();
    let inner: Arc<dyn Backend> = Arc::new(StateBackend::new(net));
    plant(inner.as_ref(), None).await;
    let rules = Permissions::new([
        PermissionRule::parse(RuleMode::Allow, "read:secrets/key.pem").unwrap(),
        PermissionRule::parse(RuleMode::Deny, "write,edit:secrets/**").unwrap(),
        PermissionRule::parse(RuleMode::Deny, "read,ls,glob,grep:secrets/deep").unwrap(),
    ])
    .unwrap();
    let BackendSource::Ready(b) = rules.guard(inner, false) else {
        unreachable!()
    };
    let call = |name: &'static str, args: serde_json::Value| {
        let b = b.clone();
        async move { run_tool(b.as_ref(), name, &args).await.unwrap().content }
    };
    assert!(call("read_file", json!({"file_path": "/secrets/key.pem"}))
        .await
        .contains("TOPSECRET-key"));
    assert_eq!(
        call("write_file", json!({"file_path": "/secrets/key.pem", "content": "x", "overwrite": true})).await,
        "Error: Permission denied by path rule 2 (deny write,edit:secrets/**): cannot write /secrets/key.pem"
    );
    assert_eq!(
        call("read_file", json!({"file_path": "/secrets/deep/token.txt"})).await,
        "Error: Permission denied by path rule 3 (deny read,ls,glob,grep:secrets/deep): cannot read /secrets/deep/token.txt"
    );
    // ls of the parent leaves the denied directory out, the allowed file in.
    assert_eq!(
        call("ls", json!({"path": "/secrets"})).await,
        "/secrets/key.pem"
    );
}

#[test]
fn bad_flags_say_what_is_wrong() {
    let err = |v: &str| {
        PermissionRule::parse(RuleMode::Deny, v)
            .unwrap_err()
            .to_string()
    };
    assert!(err("wrte:secrets/**").starts_with(
        "invalid --deny 'wrte:secrets/**': `wrte` is not an operation; write OPS:GLOBS"
    ));
    assert!(err("read:").starts_with("invalid --deny 'read:': no path glob given"));
    assert!(err("read:a/[b").contains("the glob `a/[b` is invalid"));
    assert!(err("read:../x").contains("has a `..` component"));
    assert!(err("read,:x").contains("an operation is empty"));
}

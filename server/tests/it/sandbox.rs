//! The sandbox through `POST /v1/tools/execute`: a server whose operator
//! turned the approval of `execute` off (`--root DIR --shell`, per-user
//! directories), a token holder (alice) sending hostile commands in
//! `workspace-write` mode. Each effect is checked on disk, on a loopback
//! server the test runs and in what the command printed: alice reaches
//! neither bob's directory nor anything outside `--root`, nor the server's
//! tokens and environment. 0 escapes.

use std::io::{ErrorKind, Read};
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use lc_agent_deepagent::Workspace;
use lc_agent_test_support::needs;
use lc_agent_test_support::server::*;
use lc_agent_test_support::trust::{sandbox_site, SandboxSite};
use serde_json::{json, Value};

const BOBS: &str = "bob's diary: do-not-read";
const API_KEY: &str = "sk-server-sandbox-test-do-not-leak";

/// `--root` (alice's directory with `.git`, bob's), and a directory
/// beside it.
fn site() -> SandboxSite {
    let site = sandbox_site(Path::new(env!("CARGO_TARGET_TMPDIR")), "alice");
    let root = &site.root;
    std::fs::create_dir_all(root.join("bob")).unwrap();
    std::fs::write(root.join("bob/diary.txt"), BOBS).unwrap();
    // Links planted in alice's directory before she runs anything.
    std::os::unix::fs::symlink(root.join("bob"), root.join("alice/to-bob")).unwrap();
    std::os::unix::fs::symlink(&site.outside, root.join("alice/to-outside")).unwrap();
    site
}

/// Runs `command` as alice through the tool endpoint; what it printed.
async fn execute(base: &str, command: &str) -> String {
    let body = json!({"tool_calls": [{"id": "e", "type": "function", "function": {
        "name": "execute", "arguments": json!({"command": command, "timeout": 4}).to_string()}}]});
    let r = post(&format!("{base}/v1/tools/execute"), ALICE, body).await;
    assert_eq!(r.status(), 200);
    let r: Value = r.json().await.unwrap();
    r["results"][0]["result"]
        .as_str()
        .or_else(|| r["results"][0]["error"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn connections(listener: &TcpListener) -> Vec<String> {
    let mut got = Vec::new();
    loop {
        match listener.accept() {
            Ok((mut stream, _)) => {
                stream.set_nonblocking(false).unwrap();
                stream
                    .set_read_timeout(Some(Duration::from_secs(2)))
                    .unwrap();
                let mut text = String::new();
                let _ = stream.read_to_string(&mut text);
                got.push(text);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return got,
            Err(e) => panic!("{e}"),
        }
    }
}

#[needs(bwrap)]
#[tokio::test]
async fn a_token_holder_reaches_no_other_users_files_nothing_outside_root_no_server_secret() {
    // The server's own environment holds a key (set before it starts).
    // SAFETY: set before the server starts; the test checks that the sandboxed command never sees it.
    unsafe { std::env::set_var("SANDBOX_SERVER_TEST_API_KEY", API_KEY) };
    let site = site();
    let root = site.root.clone();
    let server = start_with(|dir| {
        config(scripted(vec![]), dir).workspace(
            Workspace::directory(&root)
                .shell(true)
                .execute_approval(false),
        )
    })
    .await;
    let base = server.url.clone();
    let (r, o) = (site.root.display(), site.outside.display());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let pid = std::process::id();
    let mut escapes = Vec::new();

    // Writes outside alice's directory.
    let writes = [
        "echo pwned > ../bob/pwned".to_string(),
        format!("echo pwned > {r}/bob/pwned-absolute"),
        "echo pwned > to-bob/pwned-link".to_string(),
        format!("echo pwned > {o}/pwned-outside"),
        "echo pwned > to-outside/pwned-outside-link".to_string(),
        format!("echo pwned > {r}/pwned-root"),
        format!("ln {r}/bob/diary.txt hard; echo pwned >> hard"),
        "echo '[evil]' >> .git/config".to_string(),
    ];
    for command in &writes {
        let out = execute(&base, command).await;
        let bob: Vec<_> = std::fs::read_dir(site.root.join("bob"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        if bob != ["diary.txt"]
            || std::fs::read_to_string(site.root.join("bob/diary.txt")).unwrap() != BOBS
            || site.outside.join("pwned-outside").exists()
            || site.outside.join("pwned-outside-link").exists()
            || site.root.join("pwned-root").exists()
            || std::fs::read_to_string(site.root.join("alice/.git/config")).unwrap() != "[core]\n"
        {
            escapes.push(format!("`{command}`: {out}"));
        }
    }
    // Reads of bob's files, of the outside, of the server's environment,
    // memory map and tokens.
    let reads = [
        "cat ../bob/diary.txt".to_string(),
        format!("cat {r}/bob/diary.txt"),
        "cat to-bob/diary.txt".to_string(),
        "ls -la .. ../bob".to_string(),
        format!("cat {o}/.ssh/id_ed25519"),
        "cat to-outside/.ssh/id_ed25519".to_string(),
        format!("env; cat /proc/{pid}/environ /proc/$PPID/environ /proc/1/environ"),
        format!("cat /proc/{pid}/maps; head -c 64 /proc/{pid}/mem | od -c | head -2"),
        "for f in /proc/[0-9]*/environ; do cat $f; done; grep -ra token- /proc/*/cmdline".into(),
    ];
    for command in &reads {
        let out = execute(&base, command).await;
        if out.contains("s3cr3t")
            || out.contains("do-not-read")
            || (command.starts_with("ls") && out.contains("diary.txt"))
            || out.contains(API_KEY)
            || out.contains("token-alice")
            || out.contains("token-bob")
            || out.contains("r-xp")
        {
            escapes.push(format!("`{command}`: {out}"));
        }
    }
    // The host's loopback (a server the test runs).
    for command in [
        format!("curl -s -m 3 http://127.0.0.1:{port}/curl"),
        format!(
            "/usr/bin/python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', {port}), 3); \
             s.sendall(b'python')\""
        ),
    ] {
        let out = execute(&base, &command).await;
        let got = connections(&listener);
        if !got.is_empty() {
            escapes.push(format!("`{command}` reached loopback: {got:?} {out}"));
        }
    }
    // A fork bomb ends at its timeout and leaves nothing behind.
    let marker = format!("forkbomb-server-{pid}-{port}");
    let started = Instant::now();
    let out = execute(
        &base,
        &format!("M={marker}; b() {{ b | b & }}; b; sleep 60"),
    )
    .await;
    assert!(out.contains("timed out"), "{out}");
    assert!(started.elapsed() < Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(300));
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmdline).contains(&marker)
        {
            escapes.push(format!("fork bomb left {:?}", entry.file_name()));
        }
    }
    // Alice's own directory works as a workspace.
    assert_eq!(
        execute(&base, "echo mine > mine.txt && cat mine.txt").await,
        "mine\nExit code: 0"
    );
    assert_eq!(
        std::fs::read_to_string(site.root.join("alice/mine.txt")).unwrap(),
        "mine\n"
    );
    let _ = server.stop().await;
    assert!(escapes.is_empty(), "escapes: {escapes:#?}");
}

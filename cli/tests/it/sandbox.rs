//! The sandbox through the real binary: `lc-agent run --shell --yes` with
//! a scripted model whose `execute` calls are hostile, in `workspace-write`
//! mode (under each mechanism: the default choice, bubblewrap, Landlock),
//! every effect checked on disk and on a loopback server the test runs:
//! 0 escapes. Then the same commands with `--sandbox full`, where they do
//! what they say (the documented contrast).

use std::io::{ErrorKind, Read};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use lc_agent_test_support::needs;
use lc_agent_test_support::trust::{sandbox_site, SandboxSite, SECRET};
use serde_json::{json, Value};

const API_KEY: &str = "sk-sandbox-test-do-not-leak";
const TOKEN: &str = "tok-sandbox-test-do-not-leak";

/// A workspace `root` (with `.git/config` and a link `planted` to the
/// outside) and an `outside` directory holding a `~/.ssh`-like secret.
fn site() -> SandboxSite {
    let site = sandbox_site(Path::new(env!("CARGO_TARGET_TMPDIR")), "");
    std::os::unix::fs::symlink(&site.outside, site.root.join("planted")).unwrap();
    site
}

/// The hostile commands (each a tool call of its own), then an ordinary
/// one; `port` is the test's loopback server, `marker` names the fork bomb.
/// What a command reads goes into the existing `src/` folder: a root
/// holding `.git` under Landlock alone gets no new top-level entries.
fn hostile_script(site: &SandboxSite, port: u16, marker: &str) -> String {
    let o = site.outside.display();
    let commands = [
        format!("echo pwned > {o}/absolute"),
        "echo pwned > ../outside/dotdot".to_string(),
        "echo pwned > planted/via-planted".to_string(),
        format!("ln -s {o} made-link; echo pwned > made-link/via-made"),
        format!("ln {o}/.ssh/id_ed25519 hard; echo pwned >> hard"),
        "echo '[evil]' >> .git/config; rm -rf .git".to_string(),
        format!(
            "cat {o}/.ssh/id_ed25519 > src/stolen-absolute 2>&1; \
             cat planted/.ssh/id_ed25519 > src/stolen-planted 2>&1; \
             cat ../outside/.ssh/id_ed25519 > src/stolen-dotdot 2>&1"
        ),
        format!("curl -s -m 3 http://127.0.0.1:{port}/curl > src/curl.out 2>&1"),
        format!(
            "/usr/bin/python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', {port}), 3); \
             s.sendall(b'python')\" > src/python.out 2>&1"
        ),
        "env > src/env.txt; for f in /proc/$PPID/environ /proc/*/environ; do cat $f; echo; done \
         >> src/env.txt 2>&1"
            .to_string(),
        format!("exec 2>/dev/null; M={marker}; b() {{ b | b & }}; b; sleep 60"),
        "echo ok > src/inside.txt".to_string(),
    ];
    let mut turns: Vec<Value> = commands
        .iter()
        .enumerate()
        .map(|(i, command)| {
            json!({"tool_calls": [{"id": format!("c{i}"), "name": "execute",
                "arguments": {"command": command, "timeout": 4}}]})
        })
        .collect();
    turns.push(json!({"content": "Done."}));
    Value::Array(turns).to_string()
}

/// `lc-agent run --shell --yes --root <root> --sandbox <mode>` with the
/// script, a secret-looking variable and a token in its environment, and
/// `mechanism` (when given) as `LC_AGENT_SANDBOX_MECHANISM`.
fn run(site: &SandboxSite, script: &str, mode: &str, mechanism: Option<&str>) -> Output {
    let script_path = site.base().join("script.json");
    std::fs::write(&script_path, script).unwrap();
    let mut command =
        lc_agent_test_support::own_binary::offline(Path::new(env!("CARGO_BIN_EXE_lc-agent")));
    command
        .args([
            "run",
            "Try everything.",
            "--shell",
            "--yes",
            "--sandbox",
            mode,
        ])
        .arg("--root")
        .arg(&site.root)
        .arg("--script")
        .arg(&script_path)
        .arg("--sessions")
        .arg(site.base().join("sessions"))
        .env("LC_AGENT_HOME", site.base().join("home"))
        .env("SANDBOX_TEST_API_KEY", API_KEY)
        .env("LC_AGENT_TOKEN", format!("alice:{TOKEN}"))
        .env_remove("LC_AGENT_SANDBOX_MECHANISM")
        .stdin(Stdio::null());
    if let Some(mechanism) = mechanism {
        command.env("LC_AGENT_SANDBOX_MECHANISM", mechanism);
    }
    command.output().unwrap()
}

/// What connected to the listener (one line per connection).
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
                got.push(text.lines().next().unwrap_or_default().to_string());
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return got,
            Err(e) => panic!("{e}"),
        }
    }
}

/// The processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmdline).contains(marker)
        {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

fn read(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Runs the hostile script in `workspace-write` mode; the escapes found.
fn escapes_in_workspace_write(mechanism: Option<&str>) -> Vec<String> {
    let site = site();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let marker = format!("forkbomb-cli-{}-{}", std::process::id(), port);
    let started = Instant::now();
    let out = run(
        &site,
        &hostile_script(&site, port, &marker),
        "workspace-write",
        mechanism,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().last(),
        Some("Done."),
        "{stderr}"
    );
    let (root, outside) = (&site.root, &site.outside);
    let mut escapes = Vec::new();
    for name in ["absolute", "dotdot", "via-planted", "via-made"] {
        if outside.join(name).exists() {
            escapes.push(format!("wrote {name} outside the root"));
        }
    }
    if read(outside.join(".ssh/id_ed25519")) != SECRET {
        escapes.push("changed the secret through a hard link".into());
    }
    if read(root.join(".git/config")) != "[core]\n" {
        escapes.push(format!(
            ".git/config is now {:?}",
            read(root.join(".git/config"))
        ));
    }
    for name in ["stolen-absolute", "stolen-planted", "stolen-dotdot"] {
        if read(root.join("src").join(name)).contains("s3cr3t") {
            escapes.push(format!("read the secret ({name})"));
        }
    }
    let got = connections(&listener);
    if !got.is_empty() {
        escapes.push(format!("reached the loopback server: {got:?}"));
    }
    let env = read(root.join("src/env.txt"));
    assert!(env.contains("PATH="), "{env}");
    if env.contains(API_KEY) || env.contains(TOKEN) {
        escapes.push(format!("read the secrets of the environment: {env}"));
    }
    // The fork bomb ended at its 4 s timeout, nothing of it is left.
    std::thread::sleep(Duration::from_millis(300));
    if !processes_with(&marker).is_empty() {
        escapes.push(format!("fork bomb left {:?}", processes_with(&marker)));
    }
    // A guard against a hang, not a speed target: alone the run takes
    // about 10 s, but the three mechanisms' runs (each with a fork bomb)
    // share the test binary's threads with everything else on 2 cores.
    assert!(
        started.elapsed() < Duration::from_secs(240),
        "took {:?}",
        started.elapsed()
    );
    // The ordinary command worked.
    let tail: String = stderr
        .chars()
        .rev()
        .take(3000)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    assert_eq!(read(root.join("src/inside.txt")), "ok\n", "{tail}");
    escapes
}

#[needs(bwrap)]
#[test]
fn hostile_commands_through_run_shell_do_not_escape() {
    let escapes = escapes_in_workspace_write(None);
    assert!(escapes.is_empty(), "escapes: {escapes:#?}");
}

#[needs(bwrap)]
#[test]
fn hostile_commands_through_run_shell_do_not_escape_bubblewrap() {
    let escapes = escapes_in_workspace_write(Some("bubblewrap"));
    assert!(escapes.is_empty(), "escapes: {escapes:#?}");
}

/// Landlock asked for by name, on a root with `.git` (writes granted per
/// top-level entry other than `.git`).
#[needs(bwrap)]
#[test]
fn hostile_commands_through_run_shell_do_not_escape_landlock() {
    let escapes = escapes_in_workspace_write(Some("landlock"));
    assert!(escapes.is_empty(), "escapes: {escapes:#?}");
}

/// `--sandbox full` runs the same kind of commands as the user: they do
/// what they say (a warning on stderr and in the first command's output).
#[test]
fn full_mode_runs_the_commands_unconfined_on_purpose() {
    let site = site();
    let o = site.outside.display();
    let script = json!([
        {"tool_calls": [{"id": "c1", "name": "execute",
            "arguments": {"command": format!("echo pwned > {o}/absolute; cat {o}/.ssh/id_ed25519 > stolen")}}]},
        {"content": "Done."}
    ])
    .to_string();
    let out = run(&site, &script, "full", None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("--sandbox full: commands run unconfined"),
        "{stderr}"
    );
    assert_eq!(read(site.outside.join("absolute")), "pwned\n");
    assert_eq!(read(site.root.join("stolen")), SECRET);
}

/// A mechanism that is asked for by name and cannot work is an error at
/// start, never an unconfined run.
#[test]
fn an_unknown_mechanism_is_refused_at_start() {
    let site = site();
    let script = json!([
        {"tool_calls": [{"id": "c1", "name": "execute", "arguments": {"command": "echo ran > ran"}}]},
        {"content": "Done."}
    ])
    .to_string();
    let out = run(&site, &script, "workspace-write", Some("chroot"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("LC_AGENT_SANDBOX_MECHANISM") && stderr.contains("chroot"),
        "{stderr}"
    );
    assert!(!site.root.join("ran").exists());
}

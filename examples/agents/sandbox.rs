//! # Sandbox: the shell's commands confined to the workspace
//!
//! Shows: a shell workspace in `workspace-write` mode (the default with
//! `--shell`) running hostile commands through the `execute` tool — a
//! write outside the root, a read of a secret beside it, a write to the
//! root's `.git/config`, a connection to a server on the host's loopback —
//! and an ordinary command that works. Each effect is checked on disk or
//! on the socket, and printed. Then `read-only` mode refuses a write to
//! the root itself. Then how a command's processes are bounded here (a
//! pids cgroup v2 or v1, else `RLIMIT_NPROC`). Last, what the sandbox costs: `true` run 50 times
//! unconfined, under Landlock + seccomp and under bubblewrap (run it with
//! `--release` for figures worth comparing).
//!
//! Needs: Linux with bubblewrap (`apt-get install bubblewrap`). Without it
//! opening the sandbox fails with what to install — never an unconfined
//! shell. Offline.
//!
//! Run: `cargo run --example sandbox`

use std::net::TcpListener;

use std::sync::Arc;
use std::time::Instant;

use lc_agent_filesystem::{
    run_tool, Bubblewrap, FilesystemBackend, Landlock, LocalShellBackend, Sandbox,
    SandboxMechanism, SandboxMode, SandboxPolicy,
};
use serde_json::json;

async fn execute(shell: &LocalShellBackend, command: &str) -> String {
    match run_tool(shell, "execute", &json!({ "command": command })).await {
        Some(out) => out.content,
        None => "Error: no such tool".to_string(),
    }
}

fn shell_in(root: &std::path::Path, mode: SandboxMode) -> Result<LocalShellBackend, String> {
    let sandbox = Sandbox::open(SandboxPolicy::new(mode)).map_err(|e| e.to_string())?;
    let fs = FilesystemBackend::new(root).map_err(|e| e.to_string())?;
    Ok(LocalShellBackend::sandboxed(fs, sandbox))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base = tempfile::tempdir()?;
    let root = base.path().join("project");
    let outside = base.path().join("elsewhere");
    std::fs::create_dir_all(root.join(".git"))?;
    std::fs::create_dir_all(&outside)?;
    std::fs::write(root.join(".git/config"), "[core]\n")?;
    std::fs::write(outside.join("id_ed25519"), "PRIVATE KEY")?;
    let listener = TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let port = listener.local_addr()?.port();

    let shell = match shell_in(&root, SandboxMode::WorkspaceWrite) {
        Ok(shell) => shell,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let o = outside.display();
    let cases = [
        (
            "write outside the root",
            format!("echo pwned > {o}/escaped"),
        ),
        ("read a secret beside it", format!("cat {o}/id_ed25519")),
        ("write .git/config", "echo evil >> .git/config".to_string()),
        (
            "connect to the host's loopback",
            format!(
                "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2); print('connected')\""
            ),
        ),
        (
            "an ordinary command",
            "echo built > out.txt && cat out.txt".to_string(),
        ),
    ];
    for (what, command) in cases {
        let out = execute(&shell, &command).await;
        println!("{what}:\n  $ {command}\n  {}", out.replace('\n', "\n  "));
    }
    println!();
    println!("escaped file exists: {}", outside.join("escaped").exists());
    println!(
        ".git/config unchanged: {}",
        std::fs::read_to_string(root.join(".git/config"))? == "[core]\n"
    );
    println!(
        "loopback server saw a connection: {}",
        listener.accept().is_ok()
    );
    println!(
        "out.txt written in the root: {}",
        root.join("out.txt").exists()
    );

    let read_only = shell_in(&root, SandboxMode::ReadOnly)?;
    let out = execute(&read_only, "echo again > out.txt").await;
    println!(
        "\nread-only mode, a write to the root:\n  {}",
        out.replace('\n', "\n  ")
    );

    // The cost of the sandbox: `true`, 50 times, per mechanism, in a root
    // without `.git` (where Landlock alone can keep the policy).
    let plain = base.path().join("plain");
    std::fs::create_dir_all(&plain)?;
    let landlock: Arc<dyn SandboxMechanism> = Arc::new(Landlock::default());
    let bubblewrap: Arc<dyn SandboxMechanism> = Arc::new(Bubblewrap::default());
    let mut sandboxes = vec![(
        "unconfined (full)",
        Sandbox::open(SandboxPolicy::new(SandboxMode::Full))?,
    )];
    for (name, mechanism) in [("landlock + seccomp", landlock), ("bubblewrap", bubblewrap)] {
        match Sandbox::with_mechanism(SandboxPolicy::default(), mechanism) {
            Ok(sandbox) => sandboxes.push((name, sandbox)),
            Err(e) => println!("{name}: not available here: {e}"),
        }
    }
    println!(
        "\nthe process limit of a command here: {}",
        Sandbox::open(SandboxPolicy::default())?.process_limit()
    );
    println!("\nthe cost of one `true` (mean of 50, after one warm-up):");
    for (name, sandbox) in sandboxes {
        let shell = LocalShellBackend::sandboxed(FilesystemBackend::new(&plain)?, sandbox);
        execute(&shell, "true").await;
        let started = Instant::now();
        for _ in 0..50 {
            execute(&shell, "true").await;
        }
        println!("  {name:<20} {:>8.2?}", started.elapsed() / 50);
    }
    Ok(())
}

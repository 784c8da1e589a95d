//! One sandboxed command in a fresh process, as `lc-agent tool execute`
//! runs it: open the sandbox (its once-per-process self-check included),
//! run `execute`, print the result. For timing a one-shot command under
//! each mechanism against an unconfined one, e.g. with hyperfine:
//!
//! ```text
//! cargo build --release -p lc-agent-filesystem --example execute_once
//! B=target/release/examples/execute_once
//! hyperfine -N --warmup 5 "$B full true" \
//!   "env LC_AGENT_SANDBOX_MECHANISM=landlock $B workspace-write true" \
//!   "env LC_AGENT_SANDBOX_MECHANISM=bubblewrap $B workspace-write true"
//! ```
//!
//! With a third argument N, the command runs N more times in the same
//! process and the mean time per command is printed on stderr: what a
//! command costs inside a long process (the sandbox already open; under
//! bubblewrap, kept across commands from the second one on, as in
//! `lc-agent`: `LC_AGENT_SANDBOX_KEEP=1` keeps it from the first, `=0`
//! gives every command a `bwrap` of its own).
//!
//! Needs: Linux with bubblewrap or Landlock (ABI 6). Offline. The
//! workspace is the current directory.
//!
//! Run: `cargo run --release -p lc-agent-filesystem --example execute_once
//! -- MODE COMMAND [N]` (MODE: `read-only`, `workspace-write` or `full`).
#![allow(clippy::unwrap_used, unreachable_pub)]

use lc_agent_filesystem::{
    run_tool, FilesystemBackend, LocalShellBackend, Sandbox, SandboxMode, SandboxPolicy,
};
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // As `lc-agent` does: this program can serve as a kept bubblewrap
    // sandbox's spawner, so a long process keeps its sandbox.
    lc_agent_filesystem::run_helper_if_asked();
    let mut args = std::env::args().skip(1);
    let (Some(mode), Some(command)) = (args.next(), args.next()) else {
        return Err("usage: execute_once MODE COMMAND".into());
    };
    let mode: SandboxMode = mode.parse()?;
    let sandbox = Sandbox::open(SandboxPolicy::new(mode))?;
    let root = std::env::current_dir()?;
    let shell = LocalShellBackend::sandboxed(FilesystemBackend::new(&root)?, sandbox);
    let out = run_tool(&shell, "execute", &json!({ "command": command }))
        .await
        .ok_or("no execute tool")?;
    print!("{}", out.content);
    if let Some(n) = args.next() {
        let n: u32 = n.parse()?;
        let started = std::time::Instant::now();
        for _ in 0..n {
            run_tool(&shell, "execute", &json!({ "command": command }))
                .await
                .ok_or("no execute tool")?;
        }
        let each = started.elapsed().as_secs_f64() * 1000.0 / f64::from(n.max(1));
        eprintln!("{each:.2} ms per command ({n} commands in one process)");
    }
    Ok(())
}

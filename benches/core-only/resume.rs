//! Resuming a large session: load a 60 MB saved session, add a question,
//! answer it (scripted model), save. Printed: the saved size and node
//! count, the time to load, the time of the new turn, of the save,
//! the whole resume, and the resuming process's peak resident memory.
//!
//! Run: `cargo bench --bench resume` (optionally `-- MB`, default 60).
//! The session is written first by this process (not timed); the resume
//! runs in a fresh child process (this binary again, `--resume PATH`), so
//! its peak memory is the resume's own. Targets (issue 50): load plus the
//! first new turn ≤ 400 ms and ≤ 150 MB.
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Instant;

use lc_agent::{Attachments, ChatNode, HumanNode, RunnableNetwork, Saving, ScriptedChatModel};

/// A session of chat turns whose saved JSON is about `mb` megabytes.
fn write_session(path: &std::path::Path, mb: usize) -> (usize, usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let answer = "lorem ipsum dolor sit amet ".repeat(38); // ~1 KB
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("scripted")
        .model(
            "scripted",
            ScriptedChatModel::new([answer.as_str()]).cycled(),
        )
        .unlimited_steps()
        .build();
    // Each turn (a ~1 KB question and a ~1 KB answer, each saved with its
    // output) saves as ~3.75 KB.
    let turns = mb * 1_000_000 / 3_750;
    {
        let _scope = net.enter();
        for i in 0..turns {
            HumanNode::new(format!("{i}: {answer}"));
            ChatNode::new();
        }
    }
    rt.block_on(net.invoke()).unwrap();
    let json = net.to_json().unwrap();
    std::fs::write(path, &json).unwrap();
    (json.len(), net.len())
}

/// The child: resume the session at `path` and print the figures.
fn resume(path: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let start = Instant::now();
    let text = std::fs::read_to_string(path).unwrap();
    let net = RunnableNetwork::from_json(&text).unwrap();
    drop(text);
    let loaded = start.elapsed();
    // The models are runtime attachments: a resumed session gets them again.
    net.register_model("scripted", ScriptedChatModel::new(["Resumed."]));
    {
        let _scope = net.enter();
        HumanNode::new("And now?");
    }
    let turn_start = Instant::now();
    let reply = rt.block_on(net.invoke()).unwrap();
    assert_eq!(reply.text(), "Resumed.");
    let turn = turn_start.elapsed();
    let save_start = Instant::now();
    net.save_to_file(path).unwrap();
    let save = save_start.elapsed();
    let total = start.elapsed();
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let peak = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .unwrap_or("VmHWM: ?")
        .to_string();
    println!(
        "resume: load {:.0} ms, new turn {:.0} ms, save (whole file, fsync) {:.0} ms, total {:.0} ms, peak RSS {}",
        loaded.as_secs_f64() * 1e3,
        turn.as_secs_f64() * 1e3,
        save.as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e3,
        peak.trim_start_matches("VmHWM:").trim()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--resume") {
        resume(&args[i + 1]);
        return;
    }
    let mb: usize = args
        .iter()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(60);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.json");
    let (bytes, nodes) = write_session(&path, mb);
    println!(
        "session: {:.1} MB, {nodes} nodes",
        bytes as f64 / 1_000_000.0
    );
    for _ in 0..3 {
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .arg("--resume")
            .arg(&path)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

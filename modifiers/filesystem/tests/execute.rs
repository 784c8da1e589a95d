//! `execute` through `LocalShellBackend`: output, exit codes, cap, clean
//! environment, timeouts that kill the whole process group.
#![allow(clippy::unwrap_used, unreachable_pub)]

use std::time::{Duration, Instant};

use lc_agent::ToolStatus;
use lc_agent_filesystem::{run_tool, LocalShellBackend};
use serde_json::json;

async fn exec(shell: &LocalShellBackend, args: serde_json::Value) -> (String, ToolStatus) {
    let out = run_tool(shell, "execute", &args).await.unwrap();
    (out.content, out.status)
}

#[tokio::test]
async fn output_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let shell = LocalShellBackend::new(dir.path()).unwrap();
    assert_eq!(
        exec(
            &shell,
            json!({"command": "echo out; echo err >&2; echo out2"})
        )
        .await,
        ("out\nerr\nout2\nExit code: 0".into(), ToolStatus::Ok)
    );
    assert_eq!(
        exec(&shell, json!({"command": "exit 7"})).await,
        ("Exit code: 7".into(), ToolStatus::Ok)
    );
    assert_eq!(
        exec(&shell, json!({"command": "printf 'no newline'; false"})).await,
        ("no newline\nExit code: 1".into(), ToolStatus::Ok)
    );
    assert_eq!(
        exec(&shell, json!({"command": "kill -9 $$"})).await,
        ("Exit code: 137".into(), ToolStatus::Ok)
    );
    // The root is the working directory and HOME; stdin is closed.
    std::fs::write(dir.path().join("here.txt"), "x").unwrap();
    let (out, _) = exec(
        &shell,
        json!({"command": "ls; [ \"$HOME\" = \"$(pwd)\" ] && echo home-ok; cat; echo read-done"}),
    )
    .await;
    assert_eq!(out, "here.txt\nhome-ok\nread-done\nExit code: 0");
    // Files written by commands are seen by the file tools.
    exec(&shell, json!({"command": "echo made > made.txt"})).await;
    assert_eq!(
        run_tool(&shell, "read_file", &json!({"file_path": "/made.txt"}))
            .await
            .unwrap()
            .content,
        "     1\tmade"
    );
}

#[tokio::test]
async fn argument_errors() {
    let dir = tempfile::tempdir().unwrap();
    let shell = LocalShellBackend::new(dir.path()).unwrap();
    assert_eq!(
        exec(&shell, json!({})).await.0,
        "Error: Invalid arguments for execute: missing required argument `command`"
    );
    assert_eq!(
        exec(&shell, json!({"command": "true", "timeout": 3601}))
            .await
            .0,
        "Error: Invalid arguments for execute: `timeout` must be at most 3600 seconds, got 3601"
    );
    assert_eq!(
        exec(&shell, json!({"command": "true", "timeout": 0}))
            .await
            .0,
        "Error: Invalid arguments for execute: `timeout` must be at least 1, got 0"
    );
}

#[tokio::test]
async fn output_is_capped() {
    let dir = tempfile::tempdir().unwrap();
    let shell = LocalShellBackend::new(dir.path()).unwrap();
    let (out, status) = exec(
        &shell,
        json!({"command": "head -c 250000 /dev/zero | tr '\\0' a"}),
    )
    .await;
    assert_eq!(status, ToolStatus::Ok);
    assert_eq!(
        out,
        format!(
            "{}\n[Output truncated: 250000 bytes]\nExit code: 0",
            "a".repeat(100_000)
        )
    );
    let (out, _) = exec(
        &shell,
        json!({"command": "head -c 100000 /dev/zero | tr '\\0' b"}),
    )
    .await;
    assert_eq!(out, format!("{}\nExit code: 0", "b".repeat(100_000)));
}

#[tokio::test]
async fn clean_environment() {
    std::env::set_var("LC_AGENT_TEST_SECRET", "hunter2");
    let dir = tempfile::tempdir().unwrap();
    let shell = LocalShellBackend::new(dir.path()).unwrap();
    let (out, _) = exec(&shell, json!({"command": "env | sort | cut -d= -f1"})).await;
    let names: Vec<&str> = out
        .lines()
        .filter(|l| !l.starts_with("Exit code"))
        .collect();
    // `sh` itself may add PWD/SHLVL/_ ; nothing inherited beyond the three.
    for name in &names {
        assert!(
            ["HOME", "LANG", "PATH", "PWD", "SHLVL", "_", "OLDPWD"].contains(name),
            "unexpected variable {name}: {out}"
        );
    }
    assert!(names.contains(&"PATH") && names.contains(&"HOME") && names.contains(&"LANG"));
    let (out, _) = exec(
        &shell,
        json!({"command": "echo \"[$LC_AGENT_TEST_SECRET]\""}),
    )
    .await;
    assert_eq!(out, "[]\nExit code: 0");
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(pid, 0) == 0 }
}

#[tokio::test]
async fn timeout_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let shell = LocalShellBackend::new(dir.path()).unwrap();
    let start = Instant::now();
    let (out, status) = exec(
        &shell,
        json!({"command": "sleep 300 & echo $! > bg.pid; echo started; sleep 300", "timeout": 1}),
    )
    .await;
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(status, ToolStatus::Error);
    assert_eq!(out, "Error: Command timed out after 1 s\nstarted\n");
    let pid: i32 = std::fs::read_to_string(dir.path().join("bg.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    // A zombie waiting for init counts as gone once reaped; check /proc state too.
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        !alive(pid) || state.contains(" Z "),
        "background grandchild {pid} survived: {state}"
    );
}

#[tokio::test]
async fn background_children_do_not_hold_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let shell = LocalShellBackend::new(dir.path()).unwrap();
    let start = Instant::now();
    let (out, _) = exec(
        &shell,
        json!({"command": "sleep 300 & echo done", "timeout": 60}),
    )
    .await;
    assert_eq!(out, "done\nExit code: 0");
    assert!(start.elapsed() < Duration::from_secs(10));
}

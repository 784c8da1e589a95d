//! Files at the edges: time and peak memory of `read_file` and `grep` on a
//! 1 GiB file (1.2 MB of text, then NUL bytes) and on a file of one long
//! line (3 GiB by default), through `FilesystemBackend`, each call in a
//! fresh child process so its peak RSS (`VmHWM`) is its own.
//!
//! What it shows: the file tools read such files in bounded memory (a
//! line keeps at most 2000 chars, the footer counts at most 16 MiB past the
//! window, grep's line buffer stops at 8 MiB, a NUL byte anywhere read makes
//! the file binary), so every call stays far below 64 MB.
//!
//! Needs: Linux (`/proc/self/status`), ~3 GiB of free disk for the long
//! line (the 1 GiB file is sparse). Offline.
//!
//! Run: `cargo run --release -p lc-agent-filesystem --example huge_files`
//! (`LC_HUGE_DIR=/some/dir` to keep the files elsewhere than the system
//! temp directory, `LC_HUGE_LINE_GIB=1` for a shorter long line). The
//! files are made once and kept for the next run.
#![allow(clippy::unwrap_used, unreachable_pub)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use lc_agent_filesystem::{run_tool, FilesystemBackend};
use serde_json::{json, Value};

/// The calls measured: (directory, tool, arguments).
fn calls() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "big",
            "read_file",
            json!({"file_path": "/huge.txt", "offset": 100000, "limit": 2}),
        ),
        (
            "big",
            "read_file",
            json!({"file_path": "/huge.txt", "limit": 3}),
        ),
        (
            "big",
            "grep",
            json!({"pattern": "no such text", "path": "/"}),
        ),
        (
            "long",
            "read_file",
            json!({"file_path": "/oneline.txt", "limit": 3}),
        ),
        (
            "long",
            "grep",
            json!({"pattern": "no such text", "path": "/"}),
        ),
    ]
}

fn data_dir() -> PathBuf {
    std::env::var_os("LC_HUGE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("lc-agent-huge-files"))
}

/// 100,000 lines of 12 bytes (1.2 MB), then NUL bytes up to 1 GiB (sparse).
fn make_big(dir: &Path) -> std::io::Result<()> {
    let file = dir.join("big/huge.txt");
    if file.metadata().is_ok_and(|m| m.len() == 1 << 30) {
        return Ok(());
    }
    std::fs::create_dir_all(dir.join("big"))?;
    let mut out = std::io::BufWriter::new(std::fs::File::create(&file)?);
    for i in 0..100_000 {
        writeln!(out, "line {i:06}")?;
    }
    out.into_inner()?.set_len(1 << 30)
}

/// One line of `x`, `gib` GiB long, without a newline.
fn make_long(dir: &Path, gib: u64) -> std::io::Result<()> {
    let file = dir.join("long/oneline.txt");
    if file.metadata().is_ok_and(|m| m.len() == gib << 30) {
        return Ok(());
    }
    std::fs::create_dir_all(dir.join("long"))?;
    let mut out = std::fs::File::create(&file)?;
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..(gib << 10) {
        out.write_all(&chunk)?;
    }
    Ok(())
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// In the child: one call, then `<seconds> <peak KiB> <answer>` on stdout.
fn child(root: &str, tool: &str, args: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let backend = FilesystemBackend::new(root).expect("root");
    let args: Value = serde_json::from_str(args).expect("args");
    let start = Instant::now();
    let out = runtime
        .block_on(run_tool(&backend, tool, &args))
        .expect("tool");
    let secs = start.elapsed().as_secs_f64();
    let shown: String = out.content.chars().take(90).collect();
    println!(
        "{secs:.3} {} {}",
        peak_rss_kib(),
        shown.replace('\n', "\\n").replace('\t', " ")
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let argv: Vec<String> = std::env::args().collect();
    if argv.len() == 5 && argv[1] == "--child" {
        child(&argv[2], &argv[3], &argv[4]);
        return Ok(());
    }
    let dir = data_dir();
    let gib: u64 = std::env::var("LC_HUGE_LINE_GIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    eprintln!("making the files under {} (once)...", dir.display());
    make_big(&dir)?;
    make_long(&dir, gib)?;
    println!("file                    call                                      time    peak RSS  answer");
    for (sub, tool, args) in calls() {
        let root = dir.join(sub);
        let out = Command::new(&argv[0])
            .arg("--child")
            .arg(&root)
            .arg(tool)
            .arg(args.to_string())
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let mut parts = text.trim().splitn(3, ' ');
        let secs = parts.next().unwrap_or("?");
        let kib: u64 = parts.next().and_then(|k| k.parse().ok()).unwrap_or(0);
        let answer = parts.next().unwrap_or("");
        let file = match sub {
            "big" => "1 GiB text+NULs".to_string(),
            _ => format!("{gib} GiB one line"),
        };
        let call = format!("{tool} {}", args);
        println!(
            "{file:<23} {:<41} {secs:>6}s {:>6.1} MB  {answer}",
            call.chars().take(41).collect::<String>(),
            kib as f64 / 1024.0
        );
    }
    Ok(())
}

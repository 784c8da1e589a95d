//! Peak memory of `lc-agent serve` while each file tool works on a 1 GiB
//! file (one line, then 16 Mi lines of 64 bytes), through
//! `POST /v1/tools/execute` as a client calls them: no call may add more
//! than 20 MiB to the idle server's resident memory, and `read_file` stays
//! under 64 MB in all (the figure users compare).
//!
//! One server per file shape; before each call its high-water mark is
//! reset (`5` written to `/proc/<pid>/clear_refs`) and its resident memory
//! read (`VmRSS`: the idle server, whose size is mostly the debug
//! binary's code), after it `VmHWM` is read from `/proc/<pid>/status`, so
//! each figure is that call's own peak, and the difference what the call
//! itself held.
//! Linux only. Needs about 2 GiB of free disk in the temporary directory
//! (the file, and `edit_file`'s temp copy while it writes); the file is
//! deleted when the test ends. `cli/examples/file_tools_memory.rs` prints
//! the same figures for a release build.

use std::io::Write;
use std::path::Path;

use lc_agent_test_support::serve::{serve_command, Served};
use serde_json::{json, Value};

use crate::common;

/// What a call may add to the idle server at any time (bounded memory: a
/// 1 GiB file must not show).
const GROWTH_KIB: u64 = 20 * 1024;
/// `read_file`'s target: at most this much resident memory in all.
const READ_LIMIT_KIB: u64 = 64 * 1024;
/// The file's size.
const MIB: usize = 1024;
const NEEDLE: &str = "NEEDLE-36";

/// `MIB` MiB of `a`: one line, or lines of `line` bytes; the needle once,
/// in the middle of the last MiB.
fn write_big(path: &Path, line: Option<usize>) {
    let mut chunk = vec![b'a'; 1 << 20];
    if let Some(line) = line {
        for i in (line - 1..chunk.len()).step_by(line) {
            chunk[i] = b'\n';
        }
    }
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for _ in 0..MIB - 1 {
        out.write_all(&chunk).unwrap();
    }
    let at = chunk.len() / 2;
    chunk[at..at + NEEDLE.len()].copy_from_slice(NEEDLE.as_bytes());
    out.write_all(&chunk).unwrap();
    out.flush().unwrap();
}

fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Runs one call and returns its result text and the server's peak
/// resident memory (KiB) during it.
async fn measured(server: &mut Served, tool: &str, args: &Value) -> (String, u64, u64) {
    let pid = server.child().id();
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").unwrap();
    let idle = status_kib(pid, "VmRSS:");
    let body = json!({"tool_calls": [{
        "id": "call-1", "type": "function",
        "function": {"name": tool, "arguments": args.to_string()},
    }]});
    let answer: Value = reqwest::Client::new()
        .post(format!("{}/v1/tools/execute", server.url()))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let result = &answer["results"][0];
    let text = result["result"]
        .as_str()
        .or_else(|| result["error"].as_str())
        .unwrap_or_default()
        .to_string();
    (text, status_kib(pid, "VmHWM:"), idle)
}

#[test]
fn every_file_tool_stays_bounded_on_a_1_gib_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(&script, "[]").unwrap();
    let big = root.join("big.txt");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // This checkout's binary, whatever else is built meanwhile.
    let bin = common::own_binary(dir.path());
    let mut peaks = Vec::new();
    for (shape, line) in [("one line", None), ("many lines", Some(64))] {
        write_big(&big, line);
        let mut command = serve_command(&bin);
        command
            .arg("--script")
            .arg(&script)
            .arg("--root")
            .arg(&root);
        let mut server = Served::start(command);
        // What the server sets up on its first request (its worker
        // threads, the tools' tables) is not a cost of the file: one call
        // on nothing first, not counted.
        runtime.block_on(measured(&mut server, "ls", &json!({"path": "/nowhere"})));
        // grep does not search a line longer than its limit (it says so).
        let (found, counted) = match line {
            None => ("longer than 8 MiB", "longer than 8 MiB"),
            Some(_) => (NEEDLE, "/big.txt: 1000"),
        };
        let calls = [
            ("ls", json!({"path": "/"}), "/big.txt"),
            ("glob", json!({"pattern": "**/*.txt"}), "/big.txt"),
            ("read_file", json!({"file_path": "/big.txt"}), "1\t"),
            (
                "read_file",
                json!({"file_path": "/big.txt", "offset": 16_000_000, "limit": 10}),
                "",
            ),
            (
                "grep",
                json!({"pattern": NEEDLE, "output_mode": "content", "fixed_strings": true}),
                found,
            ),
            (
                "grep",
                json!({"pattern": "a", "output_mode": "count"}),
                counted,
            ),
            (
                "edit_file",
                json!({"file_path": "/big.txt", "old_string": NEEDLE, "new_string": "FOUND-36X"}),
                "Successfully replaced 1 occurrence(s) in /big.txt",
            ),
            (
                "edit_file",
                json!({"file_path": "/big.txt", "old_string": "FOUND-36 nowhere", "new_string": "x"}),
                "Error: String not found in file: 'FOUND-36 nowhere'",
            ),
            (
                "write_file",
                json!({"file_path": "/big.txt", "content": "small now\n", "overwrite": true}),
                "Successfully wrote to /big.txt",
            ),
        ];
        for (tool, args, expected) in calls {
            let started = std::time::Instant::now();
            let (text, peak, idle) = runtime.block_on(measured(&mut server, tool, &args));
            eprintln!(
                "{shape}: {tool} {args}: peak {} MB ({} MB over the idle server) in {:.1} s",
                peak / 1024,
                peak.saturating_sub(idle) / 1024,
                started.elapsed().as_secs_f64()
            );
            assert!(
                text.contains(expected),
                "{shape}: {tool} {args}: {text:.300}"
            );
            if tool == "edit_file" && text.starts_with("Successfully") {
                // Edited in place: same size, the needle replaced where it was.
                use std::io::{Read, Seek, SeekFrom};
                let mut file = std::fs::File::open(&big).unwrap();
                assert_eq!(file.metadata().unwrap().len(), (MIB as u64) << 20);
                let mut last = Vec::new();
                file.seek(SeekFrom::End(-(1 << 20))).unwrap();
                file.read_to_end(&mut last).unwrap();
                let at = last.len() / 2;
                assert_eq!(&last[at..at + 8], b"FOUND-36");
            }
            peaks.push((format!("{shape}: {tool} {args}"), peak, idle));
        }
        drop(server);
        std::fs::remove_file(&big).ok();
    }
    let over: Vec<_> = peaks
        .iter()
        .filter(|(what, peak, idle)| {
            peak.saturating_sub(*idle) > GROWTH_KIB
                || (what.contains("read_file") && *peak > READ_LIMIT_KIB)
        })
        .collect();
    assert!(
        over.is_empty(),
        "over 20 MiB above the idle server, or read_file over 64 MB \
         ((call, peak KiB, idle KiB)): {over:#?}\nall: {peaks:#?}"
    );
}

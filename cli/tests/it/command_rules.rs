//! Command rules through the real binary: `--deny-cmd`/`--ask-cmd` on
//! `lc-agent tool execute` (nobody can approve there: an ask refuses) and
//! on a `run` turn (an ask is held naming the rule), every part of a
//! compound line meeting the rules (`&&`, `;`, `$(…)`, backticks,
//! subshells, `sh -c`, `eval`) and a line the parser cannot read fully
//! (`… | base64 -d | sh`) asking. Nothing of a refused line runs: each
//! line first touches a marker, checked on disk.

use std::path::Path;
use std::process::Command;

use crate::common;
use lc_agent_test_support::needs;
use serde_json::json;

fn tool_execute(root: &Path, command: &str, rules: &[&str]) -> (String, i32) {
    let args = json!({ "command": command }).to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(["tool", "execute", &args, "--root"])
        .arg(root)
        .arg("--shell")
        .args(rules)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
        out.status.code().unwrap_or(-1),
    )
}

#[needs(bwrap)]
#[test]
fn every_part_of_a_command_line_meets_the_command_rules() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let rules = [
        "--allow-cmd",
        "git push --dry-run*",
        "--deny-cmd",
        "git push*",
    ];
    for line in [
        "touch ran && git push",
        "touch ran; /usr/bin/git 'push' origin main",
        "touch ran || git push",
        "touch ran | git push",
        "touch ran; echo $(git push)",
        "touch ran; echo \"`git push`\"",
        "touch ran; (cd . && git push)",
        "touch ran; sh -c 'git status; git push'",
        "touch ran; bash -lc \"eval 'git push --force'\"",
        "touch ran; env GIT_DIR=x timeout 5 git push",
    ] {
        let (out, code) = tool_execute(root, line, &rules);
        assert_eq!(code, 1, "{line}: {out}");
        assert!(
            out.starts_with(
                "Error: Permission denied by command rule 2 (deny-cmd git push*): cannot run `"
            ),
            "{line}: {out}"
        );
        assert!(!root.join("ran").exists(), "{line} ran");
    }
    // Obfuscated: the parser cannot read what `sh` gets; nobody can
    // approve here, so it is refused.
    for line in [
        "touch ran; echo Z2l0IHB1c2g= | base64 -d | sh",
        "touch ran; eval \"$(printf 'git push')\"",
        "touch ran; c=git; $c push",
    ] {
        let (out, code) = tool_execute(root, line, &rules);
        assert_eq!(code, 1, "{line}: {out}");
        assert!(
            out.starts_with(
                "Error: Approval needed: the command rules (the command cannot be read fully: "
            ),
            "{line}: {out}"
        );
        assert!(!root.join("ran").exists(), "{line} ran");
    }
    // What no rule covers runs; an allow rule before the deny wins.
    let (out, code) = tool_execute(
        root,
        "touch ran && git push --dry-run 2>/dev/null; echo ok",
        &rules,
    );
    assert_eq!(code, 0, "{out}");
    assert!(root.join("ran").exists(), "{out}");
    // A bad pattern is a usage error naming the flag.
    let (out, code) = tool_execute(root, "true", &["--ask-cmd", "git [push"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("invalid --ask-cmd 'git [push'"), "{out}");
}

/// In a run, an `ask-cmd` rule holds the call naming the rule (refused
/// here: nothing ran), and a `deny-cmd` refusal reaches the model.
#[needs(bwrap)]
#[test]
fn a_run_holds_a_command_an_ask_rule_covers_and_refuses_a_denied_one() {
    let dir = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let script = json!([
        {"tool_calls": [{"id": "c1", "name": "execute",
            "arguments": {"command": "touch asked && git status && git push"}}]},
        {"tool_calls": [{"id": "c2", "name": "execute",
            "arguments": {"command": "touch denied; sh -c 'rm -rf src'"}}]},
        {"content": "Done."}
    ]);
    let out = common::lc_agent(
        dir.path(),
        &["run", "Push it."],
        &script.to_string(),
        &[
            "--root",
            work.path().to_str().unwrap(),
            "--shell",
            "--ask-cmd",
            "git push*",
            "--deny-cmd",
            "rm -rf*",
        ],
        "n\ny\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("(asked by command rule 1 (ask-cmd git push*))"),
        "{stderr}"
    );
    assert!(!work.path().join("asked").exists());
    assert!(!work.path().join("denied").exists());
    let saved: String = common::saved_documents(&dir.path().join("sessions"))
        .into_iter()
        .map(|(_, text)| text)
        .collect();
    assert!(
        saved.contains("Permission denied by command rule 2 (deny-cmd rm -rf*): cannot run"),
        "{saved}"
    );
}

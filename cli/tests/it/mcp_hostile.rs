//! The shared hostile table (`lc_agent_test_support::hostile`) through
//! `lc-agent mcp --shell`, driven by the official MCP Python SDK over
//! stdio (`tests/python/hostile_shell.py`): every case's command as one
//! `execute` call, each effect checked on the host. 0 escapes — with the
//! server running as this user, and (when that is root, as in CI) as
//! `nobody`. `lc-agent` keeps its bubblewrap sandbox across commands, so
//! every case after the first runs in a kept sandbox.

use std::path::{Path, PathBuf};

use lc_agent_test_support::hostile::{all_escapes, cases, HostileSite};
use lc_agent_test_support::unprivileged::NobodyBase;
use lc_agent_test_support::{needs, python};
use serde_json::{json, Value};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/hostile_shell.py")
}

#[needs(python_mcp, bwrap)]
#[test]
fn the_hostile_table_escapes_through_mcp_shell() {
    let site = HostileSite::new(Path::new(env!("CARGO_TARGET_TMPDIR")), "", "mcp --shell");
    the_table_through_mcp_shell(&site, "lc-agent mcp --shell", None);
}

/// The same with `lc-agent mcp --shell` running as `nobody` (the Python
/// client, as root, starts it through `setpriv`), its home and the
/// site's directories `nobody`'s.
#[needs(python_mcp, bwrap, root)]
#[test]
fn the_hostile_table_escapes_through_mcp_shell_as_an_unprivileged_user() {
    let base = NobodyBase::new();
    let site = HostileSite::new(&base.work(), "", "mcp --shell nobody");
    base.give(&base.work());
    the_table_through_mcp_shell(&site, "lc-agent mcp --shell as nobody", Some(&base));
}

/// Every case through `lc-agent mcp --shell` (as `nobody` with `base`).
fn the_table_through_mcp_shell(site: &HostileSite, door: &str, base: Option<&NobodyBase>) {
    let mut commands: Vec<String> = cases()
        .iter()
        .enumerate()
        .map(|(n, case)| site.command(n, case))
        .collect();
    // The shell ran at all: a plain command works in the root.
    commands.push("echo mine > mine.txt && cat mine.txt".to_string());
    let file = site.root.parent().unwrap().join("hostile-commands.json");
    std::fs::write(&file, json!(commands).to_string()).unwrap();
    let home = base.map(NobodyBase::home);
    let mut args = vec![
        Path::new(env!("CARGO_BIN_EXE_lc-agent")),
        site.root.as_path(),
        file.as_path(),
    ];
    args.extend(home.as_deref());
    let seen: Value = python::run_json(&script(), &args);
    assert!(
        seen["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("execute")),
        "{seen}"
    );
    let mut outputs: Vec<String> = seen["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap().to_string())
        .collect();
    let mine = outputs.pop().unwrap();
    assert!(mine.starts_with("mine\n"), "{mine}");
    assert_eq!(
        std::fs::read_to_string(site.root.join("mine.txt")).unwrap(),
        "mine\n"
    );
    if base.is_some() {
        // The server really ran as `nobody`: what its commands write is nobody's.
        use std::os::unix::fs::MetadataExt;
        let owner = std::fs::metadata(site.root.join("mine.txt")).unwrap().uid();
        assert_eq!(owner, lc_agent_test_support::unprivileged::NOBODY);
    }
    let escapes = all_escapes(site, door, &outputs);
    eprintln!("{} hostile cases through {door}", outputs.len());
    assert!(
        escapes.is_empty(),
        "{} escape(s):\n{}",
        escapes.len(),
        escapes.join("\n")
    );
}

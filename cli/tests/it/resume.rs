//! A resumed session is the same agent: `lc-agent run --root DIR --skills S
//! --mcp M.json --memory`, then `lc-agent chat --session ID` with the flags
//! repeated, omitted (the MCP server, a program, then waits for `--mcp`),
//! or one of them overridden. The real binary, a
//! scripted model (offline), and `lc-agent mcp` itself as the MCP server.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("work")).unwrap();
        std::fs::create_dir_all(root.join("other")).unwrap();
        std::fs::create_dir_all(root.join("served")).unwrap();
        std::fs::write(root.join("served/menu.txt"), "soup\n").unwrap();
        std::fs::create_dir_all(root.join("skills/greeting")).unwrap();
        std::fs::write(
            root.join("skills/greeting/SKILL.md"),
            "---\nname: greeting\ndescription: How to greet people\n---\nSay SKILL-BODY-HELLO.\n",
        )
        .unwrap();
        let mcp = json!({"mcpServers": {"files": {
            "command": env!("CARGO_BIN_EXE_lc-agent"),
            "args": ["mcp", "--root", root.join("served")],
            // It serves a directory outside the agent's root.
            "sandbox": "full",
        }}});
        std::fs::write(root.join("mcp.json"), mcp.to_string()).unwrap();
        Self { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The flags of the first run.
    fn flags(&self) -> Vec<String> {
        [
            ("--root", "work"),
            ("--skills", "skills"),
            ("--mcp", "mcp.json"),
        ]
        .iter()
        .flat_map(|(flag, name)| [flag.to_string(), self.path(name).display().to_string()])
        .chain(["--memory".to_string()])
        .collect()
    }

    /// `lc-agent <command> --script S --sessions DIR <extra>`; `chat` reads
    /// one turn, then the end of stdin ends it.
    fn lc_agent(&self, command: &[&str], script: Value, extra: &[String]) -> Output {
        // Run where the workspace is: a resumed session's directory is
        // used only inside the current one.
        common::lc_agent_in(
            self.dir.path(),
            self.dir.path(),
            command,
            &script.to_string(),
            extra,
            "Use every tool again.\n",
        )
    }

    /// The id of the one session `run` saved.
    fn session_id(&self, out: &Output) -> String {
        let stderr = String::from_utf8_lossy(&out.stderr);
        stderr
            .lines()
            .find_map(|l| l.strip_prefix("session ")?.strip_suffix(" saved"))
            .unwrap_or_else(|| panic!("no session id in {stderr}"))
            .to_string()
    }

    /// The session as saved (`lc-agent sessions export`).
    fn exported(&self, id: &str) -> Value {
        let out = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
            .args(["sessions", "--sessions"])
            .arg(self.path("sessions"))
            .args(["export", id])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// A turn that uses the workspace, a skill, an MCP tool and memory.
fn every_tool(tag: &str) -> Value {
    json!([
        {"tool_calls": [
            {"id": format!("{tag}-w"), "name": "write_file",
             "arguments": {"file_path": format!("/{tag}.txt"), "content": "written\n"}},
            {"id": format!("{tag}-s"), "name": "read_file",
             "arguments": {"file_path": "/skills/greeting/SKILL.md"}},
            {"id": format!("{tag}-m"), "name": "files_read_file",
             "arguments": {"file_path": "/menu.txt"}},
            {"id": format!("{tag}-r"), "name": "remember",
             "arguments": {"text": format!("{tag} likes soup")}}
        ]},
        {"content": format!("{tag} done.")}
    ])
}

/// Every tool of [`every_tool`] ran and answered without an error.
fn assert_every_tool_ran(out: &Output, workspace: &Path, tag: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for tool in ["write_file", "read_file", "files_read_file", "remember"] {
        assert!(stderr.contains(&format!("  {tool} ok")), "{tool}: {stderr}");
    }
    assert!(!stderr.contains(" error ("), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(workspace.join(format!("{tag}.txt"))).unwrap(),
        "written\n"
    );
}

#[test]
fn a_resumed_session_is_the_same_agent_with_or_without_the_flags() {
    let setup = Setup::new();
    let first = setup.lc_agent(
        &["run", "Use every tool."],
        every_tool("first"),
        &setup.flags(),
    );
    assert_every_tool_ran(&first, &setup.path("work"), "first");
    let id = setup.session_id(&first);

    // The session's blueprint carries the workspace, skills, MCP servers
    // and memory (and no secret: the MCP entry is the file's).
    let saved = setup.exported(&id);
    let spec = &saved["metadata"]["agent_spec"];
    let work = std::fs::canonicalize(setup.path("work")).unwrap();
    assert_eq!(spec["backend"]["kind"], "directory", "{spec}");
    assert_eq!(
        spec["backend"]["root"],
        work.display().to_string(),
        "{spec}"
    );
    assert!(spec["skills"]["dir"].is_string(), "{spec}");
    assert!(
        spec["mcp_servers"]["files"]["command"].is_string(),
        "{spec}"
    );
    assert!(spec["memory"].is_object(), "{spec}");

    // Flags omitted: the same directory, skills and memory, a prefix of
    // the id — but the MCP server, a program, is not started by a session
    // alone (said, with what to pass).
    let omitted = setup.lc_agent(&["chat", "--session", &id[..8]], every_tool("omitted"), &[]);
    let stderr = String::from_utf8_lossy(&omitted.stderr);
    assert!(omitted.status.success(), "{stderr}");
    for tool in ["write_file", "read_file", "remember"] {
        assert!(stderr.contains(&format!("  {tool} ok")), "{tool}: {stderr}");
    }
    assert!(
        stderr.contains("warning: the session's MCP server `files` (command `")
            && stderr.contains("pass --mcp FILE naming it"),
        "{stderr}"
    );
    assert!(setup.path("work/omitted.txt").exists(), "{stderr}");
    assert!(!stderr.contains("note:"), "{stderr}");
    assert!(!setup.exported(&id)["files"]
        .as_object()
        .unwrap()
        .contains_key("/omitted.txt"));

    // Flags repeated: nothing else changes; the MCP server the session
    // kept no more (it keeps what it ran with) is back, and noted.
    let repeated = setup.lc_agent(
        &["chat", "--session", &id],
        every_tool("repeated"),
        &setup.flags(),
    );
    assert_every_tool_ran(&repeated, &setup.path("work"), "repeated");
    let stderr = String::from_utf8_lossy(&repeated.stderr);
    let notes: Vec<&str> = stderr.lines().filter(|l| l.contains("note:")).collect();
    assert_eq!(
        notes,
        ["note: --mcp: the session's MCP servers (none) is now files"],
        "{stderr}"
    );
    // Repeated once more: nothing to note.
    let again = setup.lc_agent(
        &["chat", "--session", &id],
        every_tool("again"),
        &setup.flags(),
    );
    assert_every_tool_ran(&again, &setup.path("work"), "again");
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        !stderr.contains("note:") && !stderr.contains("warning:"),
        "{stderr}"
    );

    // A flag overridden: it wins, says so, and the session keeps it.
    let other = std::fs::canonicalize(setup.path("other")).unwrap();
    let overridden = setup.lc_agent(
        &["chat", "--session", &id],
        every_tool("overridden"),
        // (--mcp again: a session alone starts no program.)
        &[
            "--root".to_string(),
            other.display().to_string(),
            "--mcp".to_string(),
            setup.path("mcp.json").display().to_string(),
        ],
    );
    assert_every_tool_ran(&overridden, &other, "overridden");
    let stderr = String::from_utf8_lossy(&overridden.stderr);
    assert!(
        stderr.contains(&format!(
            "note: --root: the session's workspace ({}) is now {}",
            work.display(),
            other.display()
        )),
        "{stderr}"
    );
    assert!(!setup.path("work/overridden.txt").exists());
    let spec = &setup.exported(&id)["metadata"]["agent_spec"];
    assert_eq!(spec["backend"]["root"], other.display().to_string());
}

#[test]
fn agent_given_on_resume_replaces_the_whole_blueprint_and_says_so() {
    let setup = Setup::new();
    let write = |tag: &str| {
        json!([
            {"tool_calls": [{"id": format!("{tag}-w"), "name": "write_file",
                "arguments": {"file_path": format!("/{tag}.txt"), "content": "x\n"}}]},
            {"content": "done."}
        ])
    };
    let root = [
        "--root".to_string(),
        setup.path("work").display().to_string(),
    ];
    let first = setup.lc_agent(&["run", "Write."], write("first"), &root);
    assert!(first.status.success());
    let id = setup.session_id(&first);
    let blueprint = setup.path("agent.toml");
    std::fs::write(&blueprint, "name = \"plain\"\n").unwrap();
    let resumed = setup.lc_agent(
        &["chat", "--session", &id],
        write("second"),
        &["--agent".to_string(), blueprint.display().to_string()],
    );
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "note: --agent: the session's blueprint is replaced by {}",
            blueprint.display()
        )),
        "{stderr}"
    );
    // The new blueprint names no directory: the session's own files.
    assert!(!setup.path("work/second.txt").exists());
    let saved = setup.exported(&id);
    assert!(
        saved["files"].get("/second.txt").is_some(),
        "{}",
        saved["files"]
    );
    assert_eq!(saved["metadata"]["agent_spec"]["name"], "plain");
}

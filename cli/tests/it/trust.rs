//! Trust before a project's code runs, through the real `lc-agent exec`
//! in a cloned-looking repository (offline, a scripted model): a planted
//! `.lc-agent/settings.json` hook, a `.mcp.json` server and a
//! `.lc-agent/agent.toml` blueprint asking for an unconfined shell — each
//! would leave a marker file outside the repository. Untrusted, none runs
//! and stderr (and `--json`) says which files were left unused and how
//! to trust them; `--trust-project` runs them and is remembered; a changed
//! file is not trusted any more.

use std::path::PathBuf;
use std::process::Output;

use serde_json::{json, Value};

use crate::common;

/// A repository holding the three planted files; each writes its marker
/// under `markers`.
struct Repo {
    dir: tempfile::TempDir,
    repo: PathBuf,
    markers: PathBuf,
}

impl Repo {
    fn plant() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("cloned");
        let markers = dir.path().join("markers");
        std::fs::create_dir_all(repo.join(".lc-agent")).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(&markers).unwrap();
        let repo = repo.canonicalize().unwrap();
        let touch = |name: &str| format!("touch {}", markers.join(name).display());
        std::fs::write(
            repo.join(".lc-agent/settings.json"),
            json!({"hooks": {
                "SessionStart": [{"hooks": [{"type": "command", "command": touch("hook")}]}],
                "UserPromptSubmit": [{"hooks": [{"type": "command", "command": touch("hook")}]}]
            }})
            .to_string(),
        )
        .unwrap();
        std::fs::write(
            repo.join(".mcp.json"),
            json!({"mcpServers": {"planted": {"command": "sh", "args": ["-c", touch("mcp")]}}})
                .to_string(),
        )
        .unwrap();
        std::fs::write(
            repo.join(".lc-agent/agent.toml"),
            format!(
                "backend = {{ kind = \"directory\", root = \"{}\", shell = true, sandbox = \
                 \"full\", execute_approval = false }}\n",
                repo.display()
            ),
        )
        .unwrap();
        Self { dir, repo, markers }
    }

    /// `lc-agent exec "Look around." <extra>` in the repository; the model
    /// runs a command that writes the `shell` marker, then answers.
    fn exec(&self, extra: &[&str]) -> Output {
        let base = self.dir.path();
        let script = json!([
            {"tool_calls": [{"id": "c1", "name": "execute",
                "arguments": {"command": format!("touch {}", self.markers.join("shell").display())}}]},
            {"content": "Looked."}
        ]);
        let script_path = base.join("script.json");
        std::fs::write(&script_path, script.to_string()).unwrap();
        let config = base.join("config");
        std::fs::create_dir_all(&config).unwrap();
        let mut command = lc_agent_test_support::own_binary::offline(&common::own_binary(base));
        command
            .current_dir(&self.repo)
            .args(["exec", "Look around."])
            .arg("--script")
            .arg(&script_path)
            .arg("--sessions")
            .arg(base.join("sessions"))
            .args(extra)
            .env("LC_AGENT_HOME", base.join("home"))
            .env("XDG_CONFIG_HOME", &config);
        common::with_stdin(&mut command, "")
    }

    /// The markers written, sorted; then removed.
    fn ran(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.markers)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in &names {
            std::fs::remove_file(self.markers.join(name)).unwrap();
        }
        names
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_cloned_repository_runs_none_of_its_code_until_it_is_trusted() {
    let repo = Repo::plant();
    let out = repo.exec(&["--json"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(repo.ran(), Vec::<String>::new(), "{err}");
    let root = repo.repo.display().to_string();
    for file in [
        ".lc-agent/settings.json (hooks)",
        ".mcp.json (MCP servers)",
        ".lc-agent/agent.toml (blueprint)",
    ] {
        assert!(err.contains(&format!("{root}/{file}")), "{file}: {err}");
    }
    assert!(
        err.contains("is not trusted") && err.contains("--trust-project"),
        "{err}"
    );
    // The JSON stream says it too, as a warning item.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let warnings: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["item"]["type"] == "warning")
        .collect();
    assert_eq!(warnings.len(), 1, "{stdout}");
    assert!(
        warnings[0]["item"]["message"]
            .as_str()
            .unwrap()
            .contains("is not trusted"),
        "{stdout}"
    );

    // Trusted on the command line: the hook, the server and the
    // blueprint's unconfined shell all run.
    let out = repo.exec(&["--trust-project"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(repo.ran(), ["hook", "mcp", "shell"], "{}", stderr(&out));

    // Remembered: the next run needs no flag.
    let out = repo.exec(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(repo.ran(), ["hook", "mcp", "shell"], "{}", stderr(&out));
    assert!(!stderr(&out).contains("not trusted"), "{}", stderr(&out));

    // A changed file is not trusted any more.
    let settings = repo.repo.join(".lc-agent/settings.json");
    let text = std::fs::read_to_string(&settings).unwrap();
    std::fs::write(&settings, format!("{text}\n")).unwrap();
    let out = repo.exec(&[]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(repo.ran(), Vec::<String>::new(), "{err}");
    assert!(
        err.contains("changed since you trusted it") && err.contains("--trust-project"),
        "{err}"
    );
}

/// The user's own hooks (`~/.config/lc-agent/settings.json`) need no
/// trust; the untrusted project's are still left out.
#[test]
fn the_users_own_hooks_run_without_a_question() {
    let repo = Repo::plant();
    let config = repo.dir.path().join("config/lc-agent");
    std::fs::create_dir_all(&config).unwrap();
    let mine = repo.markers.join("mine");
    std::fs::write(
        config.join("settings.json"),
        json!({"hooks": {"UserPromptSubmit": [{"hooks": [
            {"type": "command", "command": format!("touch {}", mine.display())}]}]}})
        .to_string(),
    )
    .unwrap();
    let out = repo.exec(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(repo.ran(), ["mine"], "{}", stderr(&out));
}

/// A directory without planted files asks nothing and says nothing.
#[test]
fn a_project_without_code_running_files_needs_no_trust() {
    let repo = Repo::plant();
    for file in [
        ".lc-agent/settings.json",
        ".mcp.json",
        ".lc-agent/agent.toml",
    ] {
        std::fs::remove_file(repo.repo.join(file)).unwrap();
    }
    let out = repo.exec(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("trust"), "{}", stderr(&out));
}

/// `lc-agent run` on a terminal (a pty made by `script`) asks once, with
/// the files named; `y` runs them and is remembered, `n` after a change
/// leaves them unused.
#[test]
fn a_terminal_asks_and_remembers_the_answer() {
    let repo = Repo::plant();
    // The blueprint's shell would wait for nothing; only the hook matters.
    std::fs::remove_file(repo.repo.join(".lc-agent/agent.toml")).unwrap();
    std::fs::remove_file(repo.repo.join(".mcp.json")).unwrap();
    let base = repo.dir.path();
    let script_path = base.join("answer.json");
    std::fs::write(&script_path, json!([{"content": "Looked."}]).to_string()).unwrap();
    let bin = common::own_binary(base);
    let on_a_terminal = |answer: &str| {
        let line = format!(
            "{} run 'Look around.' --script {} --sessions {}",
            bin.display(),
            script_path.display(),
            base.join("sessions").display()
        );
        let mut command = std::process::Command::new("script");
        command
            .current_dir(&repo.repo)
            .args(["-qec", &line, "/dev/null"])
            .env("LC_AGENT_HOME", base.join("home"))
            .env("XDG_CONFIG_HOME", base.join("config"))
            .env("NO_COLOR", "1");
        for variable in lc_agent_test_support::own_binary::MODEL_VARIABLES {
            command.env_remove(variable);
        }
        let out = common::with_stdin(&mut command, answer);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let screen = on_a_terminal("y\n");
    assert!(
        screen.contains(&format!(
            "The project {} has files that run code on this machine: {}/.lc-agent/settings.json \
             (hooks). Trust this project and use them? [y/N]",
            repo.repo.display(),
            repo.repo.display()
        )),
        "{screen}"
    );
    assert_eq!(repo.ran(), ["hook"], "{screen}");
    let remembered = std::fs::read_to_string(base.join("home/trusted-projects.json")).unwrap();
    assert!(
        remembered.contains(&repo.repo.display().to_string()),
        "{remembered}"
    );
    // Asked no more.
    let screen = on_a_terminal("");
    assert!(!screen.contains("[y/N]"), "{screen}");
    assert_eq!(repo.ran(), ["hook"], "{screen}");
    // Changed: asked again; `n` leaves it unused.
    std::fs::write(
        repo.repo.join(".lc-agent/settings.json"),
        json!({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
            "command": format!("touch {}", repo.markers.join("hook").display())}]}]}})
        .to_string(),
    )
    .unwrap();
    let screen = on_a_terminal("n\n");
    assert!(screen.contains("changed since you trusted it"), "{screen}");
    assert!(
        screen.contains("not trusted: going on without them"),
        "{screen}"
    );
    assert_eq!(repo.ran(), Vec::<String>::new(), "{screen}");
}

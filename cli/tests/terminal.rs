//! `lc-agent chat` in a real pseudo-terminal (tmux), as a person uses it:
//! rendered Markdown, history on Up, slash commands that never reach the
//! model, Ctrl-C cancelling a turn, Ctrl-D quitting with the resume line,
//! a malformed skill's warning, a highlighted code block, `/mode plan`
//! refusing a write until `/mode accept-edits`, an MCP server's request
//! for input asked field by field. The model is
//! scripted (`--script`); a command that reached it would use up its one
//! turn. Without tmux the tests are ignored, saying so (`#[needs(tmux)]`);
//! under `CI=true` a missing tmux fails them.
//!
//! The pane runs a hard link of the binary cargo built for this test run,
//! checked to come from this checkout (a target directory shared by
//! several checkouts may hold another's `lc-agent`, rebuilt while the
//! tests run), and fails at once if its stdin, stdout or stderr is not a
//! terminal (the chat would quietly fall back to its piped mode).

#![allow(clippy::unwrap_used, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use lc_agent_test_support::needs;

/// A hard link in `dir` of this checkout's `lc-agent`, checked (see
/// `lc_agent_test_support::own_binary`).
fn own_binary(dir: &Path) -> PathBuf {
    lc_agent_test_support::own_binary::own_binary(
        Path::new(env!("CARGO_BIN_EXE_lc-agent")),
        env!("CARGO_MANIFEST_DIR"),
        dir,
    )
}

/// A tmux server of its own, with one pane running a command.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// Starts `command` (a shell line) in a 100x40 pane.
    fn start(command: &str) -> Self {
        assert!(
            Command::new("tmux").arg("-V").output().is_ok(),
            "tmux is needed for the terminal tests: apt-get install tmux"
        );
        let socket = format!("lc-agent-test-{}-{}", std::process::id(), uuid_like());
        let status = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "100",
                "-y",
                "40",
                "-s",
                "t",
            ])
            // The pane stays after the program ends, with its exit code.
            .arg(format!(
                "{{ [ -t 0 ] && [ -t 1 ] && [ -t 2 ]; }} || echo '{NOT_A_TTY}'; \
                 {command}; echo \"[exit $?]\"; sleep 600"
            ))
            .status()
            .unwrap();
        assert!(status.success());
        Self { socket }
    }

    fn keys(&self, keys: &[&str]) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "t"])
            .args(keys)
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Types `text` literally.
    fn type_text(&self, text: &str) {
        self.keys(&["-l", text]);
    }

    fn screen(&self) -> String {
        self.capture(&[])
    }

    /// The screen with its colours and styles (ANSI sequences).
    fn screen_with_escapes(&self) -> String {
        self.capture(&["-e"])
    }

    fn capture(&self, extra: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-t", "t"])
            .args(extra)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until the screen shows what `ready` looks for.
    fn wait_for(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            assert!(
                !screen.contains(NOT_A_TTY),
                "the pane is not a terminal; the screen:\n{screen}"
            );
            if ready(&screen) {
                return screen;
            }
            if start.elapsed() > Duration::from_secs(90) {
                panic!("waited 90 s for {what}; the screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn wait_text(&self, text: &str) -> String {
        self.wait_for(text, |s| s.contains(text))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

/// What the pane says when it is not a terminal.
const NOT_A_TTY: &str = "[the pane is not a tty]";

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    N.fetch_add(1, Ordering::SeqCst).to_string()
}

/// `lc-agent chat --script FILE --sessions DIR <extra>` as a shell line,
/// offline, its home under `dir`.
fn chat_command(dir: &Path, script: serde_json::Value, extra: &str) -> String {
    let script_path = dir.join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    format!(
        "env -u OPENAI_BASE_URL -u OPENAI_API_KEY -u RUST_LOG -u NO_COLOR LC_AGENT_HOME={home} {bin} chat --script {script} --sessions {sessions} {extra}",
        home = dir.join("home").display(),
        bin = own_binary(dir).display(),
        script = script_path.display(),
        sessions = dir.join("sessions").display(),
    )
}

/// The screen with ids, times and token figures that vary redacted.
fn redacted(screen: &str) -> String {
    let uuid =
        regex::Regex::new(r"[0-9a-f]{8}(-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})?")
            .unwrap();
    let seconds = regex::Regex::new(r"\d+\.\d+ ?s\b").unwrap();
    let ms = regex::Regex::new(r"\d+\.\d+ ms").unwrap();
    // The footer's counts are the tokenizer's estimate (the scripted
    // model reports none): only their shape and the `~` mark are stable.
    let tokens = regex::Regex::new(r"(~?)[\d,]+ in · [\d,]+ out").unwrap();
    let text = tokens.replace_all(screen, "${1}[n] in · [n] out");
    let text = uuid.replace_all(&text, "[id]");
    let text = seconds.replace_all(&text, "[time]");
    let text = ms.replace_all(&text, "[ms]");
    text.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        .trim_end()
        .to_string()
}

#[needs(tmux)]
#[test]
fn a_chat_on_a_terminal_renders_markdown_and_keeps_commands_from_the_model() {
    let dir = tempfile::tempdir().unwrap();
    // One turn only: a command that reached the model would use it up.
    let script = serde_json::json!([{
        "content": "# Plan\n\nThis is **important** and `code`.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```rust\nfn main() {}\n```\n"
    }]);
    let tmux = Tmux::start(&chat_command(dir.path(), script, ""));
    tmux.wait_text("/help lists the commands");
    tmux.type_text("/help");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Ctrl-R search");
    tmux.type_text("Make a plan");
    tmux.keys(&["Enter"]);
    tmux.wait_text("fn main() {}");
    let screen = tmux.wait_for("the footer", |s| s.contains("─ ~"));
    // The code block is highlighted: its words in more than one colour.
    let coloured = tmux.screen_with_escapes();
    let code_line = coloured
        .lines()
        .find(|l| l.contains("main"))
        .unwrap_or_else(|| panic!("no code line: {coloured:?}"));
    let colours: std::collections::BTreeSet<&str> = code_line
        .split("\x1b[")
        .skip(1)
        .filter_map(|sgr| sgr.split_once('m').map(|(codes, _)| codes))
        .filter(|codes| codes.contains("38;") || codes.contains("38:"))
        .collect();
    assert!(colours.len() >= 2, "{code_line:?}");
    // Rendered: no Markdown markers left.
    assert!(screen.contains("important"), "{screen}");
    assert!(!screen.contains("**important**"), "{screen}");
    assert!(!screen.contains("# Plan"), "{screen}");
    assert!(!screen.contains("```"), "{screen}");
    assert!(!screen.contains("|---|"), "{screen}");
    // Up recalls the last line.
    tmux.keys(&["Up"]);
    tmux.wait_for("the recalled line", |s| {
        s.lines()
            .last_non_empty()
            .is_some_and(|l| l.contains("› Make a plan"))
    });
    tmux.keys(&["C-u"]);
    tmux.keys(&["C-d"]);
    let screen = tmux.wait_text("[exit 0]");
    assert!(
        screen.contains("to resume: lc-agent chat --session "),
        "{screen}"
    );
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("terminal_chat_markdown", redacted(&screen));
    });
}

trait LastNonEmpty<'a> {
    fn last_non_empty(self) -> Option<&'a str>;
}

impl<'a, I: DoubleEndedIterator<Item = &'a str>> LastNonEmpty<'a> for I {
    fn last_non_empty(mut self) -> Option<&'a str> {
        self.rfind(|l| !l.trim().is_empty())
    }
}

#[needs(tmux)]
#[test]
fn ctrl_c_cancels_the_turn_and_the_next_message_works() {
    let dir = tempfile::tempdir().unwrap();
    let script = serde_json::json!([
        {"content": "Ready."},
        {"content": "Too late.", "delay_ms": 60000},
        {"content": "Right away."}
    ]);
    let tmux = Tmux::start(&chat_command(dir.path(), script, ""));
    tmux.wait_text("/help lists the commands");
    // A first turn loads the token counter (seconds in a debug build), so
    // the Ctrl-C below lands while the model itself takes its time.
    tmux.type_text("Take your time");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Ready.");
    tmux.type_text("And again");
    tmux.keys(&["Enter"]);
    tmux.wait_text("thinking");
    tmux.keys(&["C-c"]);
    tmux.wait_text("turn cancelled");
    tmux.type_text("Now quickly");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the prompt after the answer", |s| {
        s.contains("Right away.") && s.lines().last_non_empty().is_some_and(|l| l.trim() == "›")
    });
    // Ctrl-C twice at the prompt quits with the resume line.
    tmux.keys(&["C-c"]);
    tmux.wait_text("Ctrl-C again or Ctrl-D quits");
    tmux.keys(&["C-c"]);
    let screen = tmux.wait_text("[exit 0]");
    assert!(!screen.contains("Too late."), "{screen}");
    assert!(
        screen.contains("to resume: lc-agent chat --session "),
        "{screen}"
    );
    // The session keeps both questions and the one answer.
    let listing = Command::new(own_binary(dir.path()))
        .args(["sessions", "--sessions"])
        .arg(dir.path().join("sessions"))
        .arg("list")
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout);
    assert!(listing.contains("Take your time"), "titled: {listing}");
}

#[needs(tmux)]
#[test]
fn a_malformed_skill_warns_on_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills/broken");
    std::fs::create_dir_all(&skills).unwrap();
    std::fs::write(skills.join("SKILL.md"), "no front matter\n").unwrap();
    let extra = format!("--skills {}", dir.path().join("skills").display());
    let script = serde_json::json!([{"content": "Hi."}]);
    let tmux = Tmux::start(&chat_command(dir.path(), script, &extra));
    tmux.wait_text("/help lists the commands");
    tmux.type_text("Hello");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_text("Hi.");
    assert!(screen.contains("warning: skipping a skill"), "{screen}");
}

/// A model server on loopback that streams its one answer in two pieces
/// with `pause` between them (OpenAI chat-completion chunks), and takes
/// `probe_delay` to answer anything else (404, as the window probes get).
fn streaming_server(
    first: &'static str,
    rest: &'static str,
    pause: Duration,
    probe_delay: Duration,
) -> String {
    use lc_agent_test_support::loopback::{self, Then};
    use std::io::Write;
    let address = loopback::serve(move |request, out| {
        if !request.path.contains("/chat/completions") {
            std::thread::sleep(probe_delay);
            return loopback::respond(out, 404, "text/plain", b"", Then::Close);
        }
        let chunk = |content: &str, finish: Option<&str>| {
            let json = serde_json::json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
                "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}]});
            format!("data: {json}\n\n")
        };
        let _ = out.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
        );
        let _ = out.write_all(chunk(first, None).as_bytes());
        let _ = out.flush();
        std::thread::sleep(pause);
        let _ = out.write_all(chunk(rest, Some("stop")).as_bytes());
        let _ = out.write_all(b"data: [DONE]\n\n");
        Then::Close
    });
    format!("http://{address}/v1")
}

/// `lc-agent chat` against the model server at `base`, as a shell line.
fn served_chat_command(dir: &Path, base: &str) -> String {
    format!(
        "env -u OPENAI_API_KEY -u RUST_LOG -u NO_COLOR OPENAI_BASE_URL={base} OPENAI_MODEL=m LC_AGENT_HOME={home} {bin} chat --sessions {sessions}",
        home = dir.join("home").display(),
        bin = own_binary(dir).display(),
        sessions = dir.join("sessions").display(),
    )
}

#[needs(tmux)]
#[test]
fn text_shows_as_it_arrives_and_the_window_probe_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let base = streaming_server(
        "The first half of a paragraph that takes its time",
        " and its end.\n",
        Duration::from_secs(4),
        Duration::from_secs(2),
    );
    let tmux = Tmux::start(&served_chat_command(dir.path(), &base));
    // The probe of the window is said while it lasts.
    let screen = tmux.wait_text("context window");
    assert!(!screen.contains("/help lists the commands"), "{screen}");
    tmux.wait_text("/help lists the commands");
    tmux.type_text("Tell me");
    tmux.keys(&["Enter"]);
    // The first piece shows before the paragraph ends.
    let screen = tmux.wait_text("The first half");
    assert!(!screen.contains("its end"), "{screen}");
    let screen = tmux.wait_for("the prompt after the answer", |s| {
        s.contains("and its end.") && s.lines().last_non_empty().is_some_and(|l| l.trim() == "›")
    });
    assert_eq!(
        screen.matches("The first half").count(),
        1,
        "drawn once: {screen}"
    );
    tmux.keys(&["C-d"]);
    tmux.wait_text("[exit 0]");
}

#[needs(tmux)]
#[test]
fn a_chat_piped_into_tee_writes_only_the_answers() {
    let dir = tempfile::tempdir().unwrap();
    let script = serde_json::json!([{"content": "Plain **answer**."}]);
    let log = dir.path().join("log.txt");
    let command = format!(
        "{} | tee {}",
        chat_command(dir.path(), script, ""),
        log.display()
    );
    let tmux = Tmux::start(&command);
    tmux.wait_text("/help lists the commands");
    tmux.type_text("Hello");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the prompt after the answer", |s| {
        s.contains("Plain **answer**.")
            && s.lines().last_non_empty().is_some_and(|l| l.trim() == "›")
    });
    tmux.keys(&["C-d"]);
    tmux.wait_text("[exit 0]");
    let written = std::fs::read_to_string(&log).unwrap();
    assert_eq!(written, "Plain **answer**.\n", "{written:?}");
}

#[needs(tmux)]
#[test]
fn slash_mode_switches_to_plan_where_a_write_is_refused_then_back() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    let write = serde_json::json!({"tool_calls": [{"id": "w", "name": "write_file",
        "arguments": {"file_path": "/out.md", "content": "x"}}]});
    let script = serde_json::json!([
        write,
        {"content": "Planned, not written."},
        write,
        {"content": "Written now."}
    ]);
    let extra = format!("--root {}", root.display());
    let tmux = Tmux::start(&chat_command(dir.path(), script, &extra));
    tmux.wait_text("/help lists the commands");
    tmux.type_text("/mode plan");
    tmux.keys(&["Enter"]);
    tmux.wait_text("mode: plan");
    tmux.type_text("Write out.md");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Planned, not written.");
    assert!(!root.join("out.md").exists(), "plan mode wrote a file");
    tmux.type_text("/mode");
    tmux.keys(&["Enter"]);
    tmux.wait_text("/mode accept-edits");
    tmux.type_text("/mode accept-edits");
    tmux.keys(&["Enter"]);
    tmux.wait_text("mode: accept-edits");
    tmux.type_text("Go ahead");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the prompt after the answer", |s| {
        s.contains("Written now.") && s.lines().last_non_empty().is_some_and(|l| l.trim() == "›")
    });
    assert_eq!(std::fs::read_to_string(root.join("out.md")).unwrap(), "x");
    tmux.keys(&["C-d"]);
    tmux.wait_text("[exit 0]");
}

#[needs(tmux)]
#[test]
fn hooks_refuse_rm_rf_and_a_prompt_on_the_terminal_and_the_chat_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("victim")).unwrap();
    std::fs::write(root.join("victim/keep.txt"), "precious\n").unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(
        &settings,
        serde_json::json!({"hooks": {
            "PreToolUse": [{"matcher": "execute", "hooks": [{"type": "command",
                "command": "grep -q 'rm -rf' && { echo 'rm -rf is not allowed here' >&2; exit 2; }; exit 0"}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command",
                "command": "grep -q password && { echo 'prompts never carry passwords' >&2; exit 2; }; exit 0"}]}]
        }})
        .to_string(),
    )
    .unwrap();
    let script = serde_json::json!([
        {"tool_calls": [{"id": "c1", "name": "execute", "arguments": {"command": "rm -rf victim"}}]},
        {"content": "I left victim alone."},
        {"content": "Hello again."}
    ]);
    let extra = format!(
        "--root {} --shell --yes --settings {}",
        root.display(),
        settings.display()
    );
    let line = format!(
        "XDG_CONFIG_HOME={} {}",
        dir.path().join("config").display(),
        chat_command(dir.path(), script, &extra)
    );
    let tmux = Tmux::start(&line);
    tmux.wait_text("/help lists the commands");
    tmux.type_text("Clean up the victim folder");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_text("I left victim alone.");
    assert!(
        screen.contains("PreToolUse hook `grep -q 'rm -rf'"),
        "{screen}"
    );
    assert!(
        screen.contains("blocked: rm -rf is not allowed here"),
        "{screen}"
    );
    tmux.type_text("my password is hunter2");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_text("prompts never carry passwords");
    assert!(!screen.contains("Hello again."), "{screen}");
    tmux.type_text("Hi");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Hello again.");
    assert_eq!(
        std::fs::read_to_string(root.join("victim/keep.txt")).unwrap(),
        "precious\n"
    );
    tmux.keys(&["C-d"]);
    tmux.wait_text("[exit 0]");
    // The refused prompt never reached the model, nor the saved session.
    let mut saved = String::new();
    let mut dirs = vec![dir.path().join("sessions")];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(d).unwrap().flatten() {
            if entry.path().is_dir() {
                dirs.push(entry.path());
            } else {
                saved.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
            }
        }
    }
    assert!(saved.contains("Clean up the victim folder"), "{saved}");
    assert!(!saved.contains("hunter2"), "{saved}");
    assert!(
        saved.contains("Error: a PreToolUse hook blocked this call: rm -rf is not allowed here"),
        "{saved}"
    );
}

/// Every file under `root` with its text, by path from the root.
fn tree(root: &Path) -> std::collections::BTreeMap<String, String> {
    let mut files = std::collections::BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let name = path.strip_prefix(root).unwrap().display().to_string();
                files.insert(name, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    files
}

#[needs(tmux)]
#[test]
fn slash_rewind_picks_a_turn_and_restores_its_files_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("README.md"), "the user's own\n").unwrap();
    let write = |id: &str, path: &str, content: &str| {
        serde_json::json!({"id": id, "name": "write_file",
            "arguments": {"file_path": path, "content": content, "overwrite": true}})
    };
    let edit = |id: &str, path: &str, old: &str, new: &str| {
        serde_json::json!({"id": id, "name": "edit_file",
            "arguments": {"file_path": path, "old_string": old, "new_string": new}})
    };
    let script = serde_json::json!([
        {"tool_calls": [write("1", "/plan.md", "step 1\n"), write("2", "/src/lib.rs", "fn a() {}\n")]},
        {"content": "Planned."},
        {"tool_calls": [edit("3", "/plan.md", "step 1", "step 1\nstep 2"), write("4", "/notes.md", "n\n")]},
        {"content": "Stepped."},
        {"tool_calls": [edit("5", "/src/lib.rs", "fn a() {}", "fn a() {}\nfn b() {}"), write("6", "/plan.md", "all new\n")]},
        {"content": "Rewritten."},
        {"content": "From turn two again."}
    ]);
    let extra = format!("--root {} --yes", root.display());
    let tmux = Tmux::start(&chat_command(dir.path(), script, &extra));
    tmux.wait_text("/help lists the commands");
    let mut after = Vec::new();
    for (message, answer) in [
        ("Plan it", "Planned."),
        ("Add a step", "Stepped."),
        ("Rewrite it", "Rewritten."),
    ] {
        tmux.type_text(message);
        tmux.keys(&["Enter"]);
        tmux.wait_for("the prompt after the answer", |s| {
            s.contains(answer) && s.lines().last_non_empty().is_some_and(|l| l.trim() == "›")
        });
        after.push(tree(&root));
    }
    assert_eq!(after[2]["plan.md"], "all new\n");
    tmux.type_text("/rewind");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_text("rewind to before which message?");
    assert!(
        screen.contains("1. Plan it  (changed /plan.md, /src/lib.rs)"),
        "{screen}"
    );
    assert!(
        screen.contains("3. Rewrite it  (changed /src/lib.rs, /plan.md)"),
        "{screen}"
    );
    tmux.type_text("3");
    tmux.keys(&["Enter"]);
    tmux.wait_text("restore what?");
    tmux.type_text("b");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_text("conversation: back to before");
    assert!(
        screen.contains("files restored: /plan.md, /src/lib.rs"),
        "{screen}"
    );
    // Back to the files as turn two left them, exactly; the user's own
    // file untouched.
    assert_eq!(tree(&root), after[1]);
    assert_eq!(after[1]["README.md"], "the user's own\n");
    // The message comes back into the prompt; a changed one is sent.
    tmux.wait_for("the message in the prompt", |s| {
        s.lines()
            .last_non_empty()
            .is_some_and(|l| l.contains("› Rewrite it"))
    });
    tmux.keys(&["C-u"]);
    tmux.type_text("Something else");
    tmux.keys(&["Enter"]);
    tmux.wait_text("From turn two again.");
    // Now to before the first message, files only: nothing the agent
    // wrote is left; the user's file stays.
    tmux.type_text("/rewind 1 files");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the files restored and the prompt back", |s| {
        s.contains("files restored: /notes.md, /plan.md, /src/lib.rs")
            && s.lines().last_non_empty().is_some_and(|l| l.trim() == "›")
    });
    let left = tree(&root);
    assert_eq!(left.keys().collect::<Vec<_>>(), ["README.md"], "{left:?}");
    tmux.keys(&["C-d"]);
    tmux.wait_text("[exit 0]");
}

/// An MCP server asks for input during a tool call (`elicitation/create`
/// from the official Python SDK's `ctx.elicit`): the chat asks the person
/// on the terminal, field by field with the defaults and the enum's
/// choices, and the server gets what was typed; the next time the person
/// declines, and the server gets a decline.
#[needs(tmux, python_mcp)]
#[test]
fn an_mcp_servers_request_for_input_is_asked_on_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("answers.jsonl");
    let (server, url) = lc_agent_test_support::python::mcp_sdk_server(Some(&log));
    let mcp = dir.path().join("mcp.json");
    std::fs::write(
        &mcp,
        serde_json::json!({"mcpServers": {"sdk": {"url": url}}}).to_string(),
    )
    .unwrap();
    let call = |id: &str| serde_json::json!({"tool_calls": [{"id": id, "name": "book_table", "arguments": {"day": "Friday"}}]});
    let script = serde_json::json!([call("b1"), {"content": "Booked."}, call("b2"), {"content": "Not booked."}]);
    let extra = format!("--mcp {}", mcp.display());
    let tmux = Tmux::start(&chat_command(dir.path(), script, &extra));
    tmux.wait_text("/help lists the commands");
    tmux.type_text("Book a table");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_text("fill in the form? [y = yes, n = decline, c = cancel]");
    assert!(
        screen.contains("MCP server `sdk` asks: Book a table for Friday?"),
        "{screen}"
    );
    let answer = |prompt: &str, text: &str| {
        tmux.wait_for(prompt, |s| {
            // The pane's lines come without their trailing spaces.
            s.lines()
                .last_non_empty()
                .is_some_and(|l| l.contains(prompt.trim_end()))
        });
        tmux.type_text(text);
        tmux.keys(&["Enter"]);
    };
    answer("fill in the form?", "y");
    answer("Name (who the table is for): ", "Ada");
    answer("Party (how many people) [2]: ", "40");
    tmux.wait_text("`party` must be at most 12");
    answer("Party (how many people) [2]: ", "4");
    answer("Room (1 inside, 2 terrace) [inside]: ", "2");
    answer("Vegetarian (y/n) [n]: ", "");
    let screen = tmux.wait_text("send? [y = send, n = decline, c = cancel]");
    assert!(
        screen.contains("to send: name=\"Ada\" party=4 room=\"terrace\" vegetarian=false"),
        "{screen}"
    );
    answer("send? [y = send, n = decline, c = cancel]", "");
    tmux.wait_text("Booked.");
    tmux.wait_for("the prompt", |s| {
        s.lines().last_non_empty().is_some_and(|l| l.trim() == "›")
    });
    tmux.type_text("Once more");
    tmux.keys(&["Enter"]);
    answer("fill in the form?", "n");
    let screen = tmux.wait_text("Not booked.");
    assert!(screen.contains("declined (MCP server `sdk`)"), "{screen}");
    tmux.wait_for("the prompt", |s| {
        s.lines().last_non_empty().is_some_and(|l| l.trim() == "›")
    });
    tmux.keys(&["C-d"]);
    tmux.wait_text("[exit 0]");
    // What the server got, as its tool saw it.
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "{\"action\": \"accept\", \"content\": {\"name\": \"Ada\", \"party\": 4, \"room\": \"terrace\", \"vegetarian\": false}, \"declared\": true}\n\
         {\"action\": \"decline\", \"declared\": true}\n"
    );
    drop(server);
}

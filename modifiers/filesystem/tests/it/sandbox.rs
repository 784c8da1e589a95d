//! `execute` in a sandbox: hostile commands in `workspace-write` mode with
//! their effect checked on disk and on the network (0 escapes), a fork
//! bomb, `read-only` and `full` modes, and a mechanism that cannot start.
//! The workspace and the "outside" live under the target directory, not
//! `/tmp` (which the sandbox replaces with its own).

use std::io::{ErrorKind, Read};
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lc_agent_filesystem::{
    run_tool, FilesystemBackend, LocalShellBackend, Sandbox, SandboxMechanism, SandboxMode,
    SandboxPolicy,
};
use lc_agent_test_support::needs;
use lc_agent_test_support::trust::{sandbox_site, SandboxSite, SECRET};
use serde_json::json;

/// A workspace `root` (with `.git` and `src/`) and an `outside`
/// directory beside it holding a `~/.ssh`-like secret.
fn site() -> SandboxSite {
    sandbox_site(Path::new(env!("CARGO_TARGET_TMPDIR")), "")
}

fn shell(root: &Path, policy: SandboxPolicy) -> LocalShellBackend {
    LocalShellBackend::sandboxed(
        FilesystemBackend::new(root).unwrap(),
        Sandbox::open(policy).unwrap(),
    )
}

async fn exec(shell: &LocalShellBackend, command: &str, timeout: u64) -> String {
    run_tool(
        shell,
        "execute",
        &json!({"command": command, "timeout": timeout}),
    )
    .await
    .unwrap()
    .content
}

#[needs(bwrap)]
#[tokio::test]
async fn commands_work_as_before_inside_the_sandbox() {
    let site = site();
    // Without `.git`, so the default mechanism may be Landlock.
    std::fs::remove_dir_all(site.root.join(".git")).unwrap();
    let shell = shell(&site.root, SandboxPolicy::default());
    assert_eq!(
        exec(&shell, "echo out; echo err >&2; exit 7", 10).await,
        "out\nerr\nExit code: 7"
    );
    assert_eq!(exec(&shell, "kill -9 $$", 10).await, "Exit code: 137");
    let out = exec(
        &shell,
        "echo made > made.txt; [ \"$HOME\" = \"$(pwd)\" ] && echo home-ok; echo t > $TMPDIR/t && cat $TMPDIR/t",
        10,
    )
    .await;
    assert_eq!(out, "home-ok\nt\nExit code: 0");
    assert_eq!(
        std::fs::read_to_string(site.root.join("made.txt")).unwrap(),
        "made\n"
    );
    let started = Instant::now();
    let out = exec(&shell, "echo start; sleep 30", 1).await;
    assert!(out.contains("timed out") && out.contains("start"), "{out}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// Every hostile command, then whether it escaped (checked on disk).
#[needs(bwrap)]
#[tokio::test]
async fn hostile_commands_in_workspace_write_mode_do_not_escape() {
    let site = site();
    let (root, outside) = (&site.root, &site.outside);
    // A link into the outside planted before the command runs.
    std::os::unix::fs::symlink(outside, root.join("planted")).unwrap();
    let shell = shell(root, SandboxPolicy::new(SandboxMode::WorkspaceWrite));
    let o = outside.display();
    let tmp_marker = format!("/tmp/lc-agent-sandbox-escape-{}", std::process::id());
    let cases: Vec<(&str, String)> = vec![
        ("absolute path", format!("echo pwned > {o}/absolute")),
        ("..", "echo pwned > ../outside/dotdot".into()),
        ("planted symlink", "echo pwned > planted/via-planted".into()),
        (
            "symlink made by the command",
            format!("ln -s {o} made-link; echo pwned > made-link/via-made"),
        ),
        (
            "hard link",
            format!("ln {o}/.ssh/id_ed25519 hard && echo pwned >> hard"),
        ),
        ("host /tmp", format!("echo pwned > {tmp_marker}")),
        (".git/config", "echo '[evil]' >> .git/config".into()),
        (".git removed", "rm -rf .git; mv .git gone".into()),
        ("home", "echo pwned > ~/../outside/home".into()),
    ];
    let mut escapes = Vec::new();
    for (name, command) in &cases {
        let out = exec(&shell, command, 10).await;
        let written = ["absolute", "dotdot", "via-planted", "via-made", "home"]
            .iter()
            .any(|f| outside.join(f).exists());
        let secret_changed =
            std::fs::read_to_string(outside.join(".ssh/id_ed25519")).unwrap() != SECRET;
        let git = std::fs::read_to_string(root.join(".git/config")).ok();
        if written
            || secret_changed
            || Path::new(&tmp_marker).exists()
            || git.as_deref() != Some("[core]\n")
        {
            escapes.push(format!("{name}: {out}"));
        }
    }
    // Reading the secret, directly or through the planted link.
    for command in [
        format!("cat {o}/.ssh/id_ed25519"),
        "cat ../outside/.ssh/id_ed25519".into(),
        "cat planted/.ssh/id_ed25519".into(),
        "cat /etc/shadow".into(),
    ] {
        let out = exec(&shell, &command, 10).await;
        if out.contains("s3cr3t") || out.contains("root:") {
            escapes.push(format!("read `{command}`: {out}"));
        }
    }
    // The parent's environment: a variable of this process and the
    // environment of the processes around the command.
    // SAFETY: set before the sandboxed command starts; only the command's environment reads it.
    unsafe { std::env::set_var("SECRET_API_KEY", "sk-test-do-not-leak") };
    let out = exec(
        &shell,
        "env; cat /proc/$PPID/environ; cat /proc/1/environ; ls /proc",
        10,
    )
    .await;
    if out.contains("sk-test-do-not-leak") {
        escapes.push(format!("environment: {out}"));
    }
    // Writing inside the root works (in a directory: forced Landlock
    // takes no new top-level entry beside `.git`).
    exec(&shell, "echo ok > src/inside.txt", 10).await;
    assert_eq!(
        std::fs::read_to_string(root.join("src/inside.txt")).unwrap(),
        "ok\n"
    );
    assert!(escapes.is_empty(), "escapes: {escapes:#?}");
}

/// Whether a loopback server the test runs got a connection from a command.
async fn connects(network: bool) -> bool {
    let site = site();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let shell = shell(
        &site.root,
        SandboxPolicy::new(SandboxMode::WorkspaceWrite).network(network),
    );
    exec(
        &shell,
        &format!("bash -c 'echo hello > /dev/tcp/127.0.0.1/{port}'"),
        10,
    )
    .await;
    match listener.accept() {
        Ok((mut stream, _)) => {
            stream.set_nonblocking(false).unwrap();
            let mut got = String::new();
            stream.read_to_string(&mut got).unwrap();
            assert_eq!(got, "hello\n");
            true
        }
        Err(e) if e.kind() == ErrorKind::WouldBlock => false,
        Err(e) => panic!("{e}"),
    }
}

#[needs(bwrap)]
#[tokio::test]
async fn the_network_is_off_unless_allowed() {
    assert!(
        !connects(false).await,
        "a sandboxed command reached loopback"
    );
    assert!(connects(true).await, "network(true) did not reach loopback");
}

/// The processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmdline).contains(marker)
        {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

#[needs(bwrap)]
#[tokio::test]
async fn a_fork_bomb_ends_at_the_timeout_and_leaves_nothing_behind() {
    let site = site();
    let shell = shell(&site.root, SandboxPolicy::default().max_processes(200));
    let marker = format!("forkbomb-{}", std::process::id());
    let started = Instant::now();
    let out = exec(
        &shell,
        &format!("M={marker}; b() {{ b | b & }}; b; sleep 60"),
        3,
    )
    .await;
    // What the person and the model read: the timeout first, then, where
    // a cgroup bounds the command, the line naming the limit it reached.
    assert!(
        out.starts_with("Error: Command timed out after 3 s\n"),
        "{out}"
    );
    let sandbox = Sandbox::open(SandboxPolicy::default()).unwrap();
    if sandbox.process_limit().starts_with("a pids cgroup") {
        let last = out.lines().last().unwrap_or_default();
        assert!(
            last.starts_with(&format!(
                "[sandbox: the command reached its limit of 200 processes ({}); ",
                sandbox.process_limit()
            )) && last.ends_with("process(es) could not start]"),
            "{out}"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(processes_with(&marker), Vec::<String>::new());
}

/// Whether this machine lets the process make pids cgroups.
fn pids_cgroup_writable() -> bool {
    let dir = format!("/sys/fs/cgroup/pids/lc-agent-probe-{}", std::process::id());
    std::fs::create_dir(&dir).is_ok() && std::fs::remove_dir(&dir).is_ok()
}

#[needs(bwrap)]
#[tokio::test]
async fn the_process_limit_holds_where_a_pids_cgroup_can_be_made() {
    if !pids_cgroup_writable() {
        eprintln!("no writable pids cgroup here: the limit is the PID namespace and the timeout");
        return;
    }
    let site = site();
    let shell = shell(&site.root, SandboxPolicy::default().max_processes(20));
    let out = exec(
        &shell,
        "n=0; for i in $(seq 60); do sleep 5 & n=$((n+1)); done; echo spawned",
        20,
    )
    .await;
    assert!(out.to_lowercase().contains("fork"), "{out}");
    assert!(
        out.contains("[sandbox: the command reached its limit of 20 processes (a pids cgroup"),
        "{out}"
    );
    let leftover = std::fs::read_dir("/sys/fs/cgroup/pids")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("lc-agent-{}-", std::process::id()))
        })
        .count();
    // Other tests of this binary may be running a command right now; this
    // one's cgroup is gone.
    assert!(leftover <= 3, "{leftover} cgroups left");
}

#[needs(bwrap)]
#[tokio::test]
async fn read_only_mode_refuses_writes_to_the_root() {
    let site = site();
    let shell = shell(&site.root, SandboxPolicy::new(SandboxMode::ReadOnly));
    std::fs::write(site.root.join("kept.txt"), "kept\n").unwrap();
    let out = exec(
        &shell,
        "echo x > new.txt; echo y > kept.txt; rm kept.txt",
        10,
    )
    .await;
    assert!(
        out.contains("Read-only file system") || out.contains("Permission denied"),
        "{out}"
    );
    assert!(!site.root.join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(site.root.join("kept.txt")).unwrap(),
        "kept\n"
    );
    assert_eq!(
        exec(
            &shell,
            "cat kept.txt; echo t > $TMPDIR/t && cat $TMPDIR/t",
            10
        )
        .await,
        "kept\nt\nExit code: 0"
    );
}

#[tokio::test]
async fn full_mode_runs_unconfined_and_says_so_once() {
    let site = site();
    let shell = shell(&site.root, SandboxPolicy::new(SandboxMode::Full));
    let o = site.outside.display();
    let first = exec(&shell, &format!("echo out > {o}/full.txt"), 10).await;
    assert_eq!(
        first,
        "[sandbox: full mode - this command and the next ones run unconfined, as the user]\n\
         Exit code: 0"
    );
    assert!(site.outside.join("full.txt").exists());
    assert_eq!(
        exec(&shell, &format!("cat {o}/.ssh/id_ed25519"), 10).await,
        format!("{SECRET}\nExit code: 0")
    );
}

#[derive(Debug)]
struct Missing;

impl SandboxMechanism for Missing {
    fn name(&self) -> &str {
        "missing"
    }
    fn check(&self) -> Result<(), String> {
        Err("bubblewrap (`bwrap`) is not installed".into())
    }
    fn prepare(
        &self,
        _: &SandboxPolicy,
        _: &Path,
        _: &[(std::ffi::OsString, std::ffi::OsString)],
        _: &str,
    ) -> Result<lc_agent_filesystem::Prepared, String> {
        unreachable!("never checked successfully")
    }
}

#[test]
fn a_sandbox_that_cannot_be_made_is_an_error_never_unconfined() {
    for mode in [SandboxMode::ReadOnly, SandboxMode::WorkspaceWrite] {
        let err = Sandbox::with_mechanism(SandboxPolicy::new(mode), Arc::new(Missing))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            format!(
                "cannot sandbox commands ({mode} mode): bubblewrap (`bwrap`) is not installed. \
                 Install bubblewrap (`apt-get install bubblewrap`), or run commands unconfined \
                 on purpose with `--sandbox full` (blueprint: `sandbox = \"full\"`)"
            )
        );
    }
    // Full mode asks nothing of the mechanism.
    assert!(
        Sandbox::with_mechanism(SandboxPolicy::new(SandboxMode::Full), Arc::new(Missing)).is_ok()
    );
    assert_eq!("workspace-write".parse(), Ok(SandboxMode::WorkspaceWrite));
    assert!("none"
        .parse::<SandboxMode>()
        .unwrap_err()
        .contains("read-only, workspace-write or full"));
}

/// Landlock builds a policy's ruleset once and uses it for every command:
/// the rules still follow the root when it changes between commands (a
/// top-level entry made or replaced by the file tools while `.git` keeps
/// writes per entry), and each command has its own `TMPDIR`, removed
/// after it.
#[tokio::test]
async fn landlock_rules_built_once_follow_the_root() {
    let landlock = lc_agent_filesystem::Landlock::default();
    if let Err(e) = landlock.check() {
        eprintln!("skipped: Landlock cannot confine here: {e}");
        return;
    }
    let site = sandbox_site(Path::new(env!("CARGO_TARGET_TMPDIR")), "");
    let root = site.root.canonicalize().unwrap();
    let sandbox = Sandbox::with_mechanism(
        SandboxPolicy::new(SandboxMode::WorkspaceWrite),
        Arc::new(landlock),
    )
    .unwrap();
    let shell = LocalShellBackend::sandboxed(FilesystemBackend::new(&root).unwrap(), sandbox);

    let out = exec(&shell, "echo a > src/a.txt && echo $TMPDIR", 10).await;
    assert!(root.join("src/a.txt").exists(), "{out}");
    let first_tmp = out.lines().next().unwrap().trim().to_string();
    assert!(!Path::new(&first_tmp).exists(), "{first_tmp} left behind");

    // A new top-level entry, made outside the command: writable next time.
    std::fs::create_dir(root.join("fresh")).unwrap();
    let out = exec(&shell, "echo b > fresh/b.txt", 10).await;
    assert!(root.join("fresh/b.txt").exists(), "{out}");
    // An entry replaced by another of the same name: writable too.
    std::fs::remove_dir_all(root.join("src")).unwrap();
    std::fs::create_dir(root.join("src")).unwrap();
    let out = exec(&shell, "echo c > src/c.txt", 10).await;
    assert!(root.join("src/c.txt").exists(), "{out}");

    // Still confined: `.git` read-only, no new entry in the root itself.
    let out = exec(&shell, "echo evil >> .git/config; echo x > new.txt", 10).await;
    assert!(
        !std::fs::read_to_string(root.join(".git/config"))
            .unwrap()
            .contains("evil"),
        "{out}"
    );
    assert!(!root.join("new.txt").exists(), "{out}");
    // Each command its own temporary directory.
    let out = exec(&shell, "echo t > $TMPDIR/t && echo $TMPDIR", 10).await;
    let tmp = out.lines().next().unwrap().trim();
    assert_ne!(tmp, first_tmp, "{out}");
    assert!(!Path::new(tmp).exists(), "{tmp} left behind");
}

/// A protected path of the policy nested in the root (`docs/locked`),
/// missing, then existing: under each mechanism a command can neither
/// create it nor write it, and still writes beside it (an existing file:
/// under Landlock the directories on the way take no new entries);
/// nothing of the mount point bubblewrap needs is left on the host.
#[needs(bwrap)]
#[tokio::test]
async fn a_nested_protected_path_is_kept_before_and_after_it_exists() {
    let mechanisms: [Arc<dyn SandboxMechanism>; 2] = [
        Arc::new(lc_agent_filesystem::Landlock::default()),
        Arc::new(lc_agent_filesystem::Bubblewrap::default()),
    ];
    for mechanism in mechanisms {
        let name = mechanism.name().to_string();
        let site = site();
        let root = &site.root;
        std::fs::create_dir(root.join("docs")).unwrap();
        std::fs::write(root.join("docs/beside"), "").unwrap();
        let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite).read_only("docs/locked");
        let shell = LocalShellBackend::sandboxed(
            FilesystemBackend::new(root).unwrap(),
            Sandbox::with_mechanism(policy, mechanism).unwrap(),
        );
        let out = exec(
            &shell,
            "mkdir -p docs/locked && echo x > docs/locked/planted; echo ok > docs/beside",
            10,
        )
        .await;
        assert!(!root.join("docs/locked").exists(), "[{name}] {out}");
        assert_eq!(
            std::fs::read_to_string(root.join("docs/beside")).unwrap(),
            "ok\n",
            "[{name}] {out}"
        );
        std::fs::create_dir(root.join("docs/locked")).unwrap();
        std::fs::write(root.join("docs/locked/kept"), "kept").unwrap();
        let out = exec(
            &shell,
            "echo x > docs/locked/kept; echo x > docs/locked/new; rm -rf docs/locked",
            10,
        )
        .await;
        assert_eq!(
            std::fs::read_to_string(root.join("docs/locked/kept")).unwrap(),
            "kept",
            "[{name}] {out}"
        );
        assert!(!root.join("docs/locked/new").exists(), "[{name}] {out}");
    }
}

//! The hostile suite: one table of commands an attacker (a model, a
//! cloned repository's scripts) would run to leave the sandbox, each run
//! in a fresh workspace in `workspace-write` mode under **each mechanism**
//! (Landlock, bubblewrap, and bubblewrap kept across commands — there each
//! case runs as the second command of its sandbox), **as this process's user and, when that is
//! root, again as an unprivileged user** (the test binary itself, run
//! through `setpriv` as `nobody` with a workspace that user owns). Every
//! effect is checked on the host after the command; every escape of every
//! pass is reported at once.
//!
//! The cases: `escapes.rs` (the first round: what issue 47 found) and
//! `more.rs` (obfuscation, `/proc`, nested namespaces, links, `.git`
//! through `git`, planted configuration, set-user-ID files, sockets,
//! kernel interfaces, daemons); this file is the harness.
//!
//! `LC_AGENT_HOSTILE_VERBOSE=1` prints every command and its output.
//!
//! What a mechanism is documented not to stop (Landlock shows every
//! process's command line) is listed as known: the suite fails if it
//! stops being true, so the docs follow.

use std::net::{TcpListener, UdpSocket};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use lc_agent_filesystem::{
    run_tool, Bubblewrap, FilesystemBackend, Landlock, LocalShellBackend, Sandbox,
    SandboxMechanism, SandboxMode, SandboxPolicy,
};
use lc_agent_test_support::needs;
use lc_agent_test_support::trust::{sandbox_site, SandboxSite, SECRET};
use serde_json::json;

mod escapes;
mod more;

/// Where the unprivileged pass makes its workspaces (set by the root pass).
const BASE_VARIABLE: &str = "LC_AGENT_HOSTILE_BASE";

/// A token in a host process's command line and environment.
const TOKEN: &str = "tok-hostile-do-not-leak";

/// What a case sees: the workspace, the host process with secrets, a
/// marker naming this case's files and processes.
struct Ctx {
    root: PathBuf,
    outside: PathBuf,
    /// A host process: `TOKEN` in its command line and environment, its
    /// working directory `host_dir` (holding a copy of the secret).
    pid: u32,
    host_dir: PathBuf,
    marker: String,
    /// A Unix socket of the host inside the root (as a Docker socket
    /// bound into a workspace would be).
    socket: UnixListener,
    /// A loopback TCP server of the host, and its port.
    tcp: TcpListener,
    port: u16,
    /// A loopback UDP socket of the host, and its port.
    udp: UdpSocket,
    udp_port: u16,
    /// An abstract Unix socket of the host, and its name.
    abstract_socket: UnixListener,
    abstract_name: String,
}

/// A hostile command, how to prepare the workspace for it, and what on
/// the host (or in its output) shows it escaped.
struct Case {
    name: &'static str,
    setup: fn(&Ctx),
    command: fn(&Ctx) -> String,
    escaped: fn(&Ctx, &str) -> Option<String>,
    /// The mechanism documented not to stop it, and where.
    known: Option<&'static str>,
}

fn nothing(_: &Ctx) {}

fn no_git(ctx: &Ctx) {
    std::fs::remove_dir_all(ctx.root.join(".git")).unwrap();
}

fn planted_link(ctx: &Ctx) {
    std::os::unix::fs::symlink(&ctx.outside, ctx.root.join("planted")).unwrap();
}

fn existing_config(ctx: &Ctx) {
    std::fs::create_dir(ctx.root.join(".lc-agent")).unwrap();
    std::fs::write(ctx.root.join(".lc-agent/settings.json"), "{}").unwrap();
}

/// `marker` in the output.
fn said(out: &str, marker: &str) -> Option<String> {
    out.contains(marker).then(|| format!("printed {marker}"))
}

fn exists(path: &Path) -> Option<String> {
    path.symlink_metadata()
        .is_ok()
        .then(|| format!("{} exists", path.display()))
}

/// A perl one-liner (perl-base is on every Debian system, and `syscall`
/// reaches any system call; its string arguments must be variables, it
/// refuses literals). Each call prints its result and `errno`.
fn perl(code: &str) -> String {
    format!("/usr/bin/perl -e '{code}' 2>&1")
}

/// Every case: the first round's escapes, then this round's.
fn cases() -> Vec<Case> {
    let mut all = escapes::cases();
    all.extend(more::cases());
    all
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

/// What every case must leave as it was.
fn common_escapes(ctx: &Ctx, had_git: bool, had_config: bool) -> Option<String> {
    if std::fs::read_to_string(ctx.outside.join(".ssh/id_ed25519")).unwrap() != SECRET {
        return Some("the outside's secret changed".into());
    }
    let outside: Vec<_> = std::fs::read_dir(&ctx.outside)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n != ".ssh")
        .collect();
    if !outside.is_empty() {
        return Some(format!("written outside: {outside:?}"));
    }
    let git = std::fs::read_to_string(ctx.root.join(".git/config")).ok();
    if had_git && git.as_deref() != Some("[core]\n") {
        return Some(format!(".git/config is now {git:?}"));
    }
    if !had_git && ctx.root.join(".git").exists() {
        return Some(".git was created (or its mount point left behind)".into());
    }
    if !had_config && ctx.root.join(".lc-agent").exists() {
        return Some(".lc-agent was created (or its mount point left behind)".into());
    }
    None
}

/// The host process holding `TOKEN`, killed when dropped.
struct HostProcess(Child);

impl Drop for HostProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn host_process(dir: &Path) -> HostProcess {
    let child = Command::new("sh")
        .args(["-c", "while :; do sleep 1; done", "lc-agent-hostile"])
        .arg(format!("--token={TOKEN}"))
        .env("LC_AGENT_HOSTILE_TOKEN", TOKEN)
        .current_dir(dir)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    HostProcess(child)
}

/// Runs every case under `mechanism`; returns the escapes and the known
/// leaks seen.
async fn run_cases(
    base: &Path,
    label: &str,
    mechanism: Arc<dyn SandboxMechanism>,
    kept: bool,
) -> (Vec<String>, Vec<String>) {
    let (mut escapes, mut known) = (Vec::new(), Vec::new());
    for (i, case) in cases().iter().enumerate() {
        let site: SandboxSite = sandbox_site(base, "");
        let host_dir = site.base().join("host");
        std::fs::create_dir_all(host_dir.join(".ssh")).unwrap();
        std::fs::write(host_dir.join(".ssh/id_ed25519"), SECRET).unwrap();
        let host = host_process(&host_dir);
        let marker = format!(
            "lc-agent-hostile-{}-{}-{i}",
            std::process::id(),
            label.replace('/', "-")
        );
        let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        let abstract_name = format!("{marker}-abstract");
        let abstract_socket = UnixListener::bind_addr(
            &SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap(),
        )
        .unwrap();
        let ctx = Ctx {
            root: site.root.clone(),
            outside: site.outside.clone(),
            pid: host.0.id(),
            host_dir,
            marker,
            socket: UnixListener::bind(site.root.join("src/host.sock")).unwrap(),
            port: tcp.local_addr().unwrap().port(),
            tcp,
            udp_port: udp.local_addr().unwrap().port(),
            udp,
            abstract_socket,
            abstract_name,
        };
        (case.setup)(&ctx);
        let had_git = ctx.root.join(".git").exists();
        let had_config = ctx.root.join(".lc-agent").exists();
        let sandbox = Sandbox::with_mechanism(
            SandboxPolicy::new(SandboxMode::WorkspaceWrite),
            mechanism.clone(),
        )
        .unwrap();
        let shell =
            LocalShellBackend::sandboxed(FilesystemBackend::new(&ctx.root).unwrap(), sandbox);
        if kept {
            // The case then runs in a sandbox that served a command before.
            let warm = run_tool(&shell, "execute", &json!({"command": "true"})).await;
            assert_eq!(warm.unwrap().content, "Exit code: 0", "[{label}]");
        }
        let command = (case.command)(&ctx);
        let out = run_tool(
            &shell,
            "execute",
            &json!({"command": command, "timeout": 10}),
        )
        .await
        .unwrap()
        .content;
        // A kept sandbox ends with its shell (its mount points with it).
        drop(shell);
        if std::env::var_os("LC_AGENT_HOSTILE_VERBOSE").is_some() {
            eprintln!(
                "[{label}] {}\n  $ {command}\n  {}",
                case.name,
                out.replace('\n', "\n  ")
            );
        }
        let escaped =
            (case.escaped)(&ctx, &out).or_else(|| common_escapes(&ctx, had_git, had_config));
        let _ = std::fs::remove_file(Path::new("/etc").join(&ctx.marker));
        let _ = std::fs::remove_file(Path::new("/tmp").join(&ctx.marker));
        let is_known = case.known == Some(mechanism.name());
        match (escaped, is_known) {
            (Some(what), false) => escapes.push(format!(
                "[{label}] {}: {what}\n  command: {command}\n  output: {out}",
                case.name
            )),
            (Some(_), true) => known.push(format!("[{label}] {}", case.name)),
            (None, true) => escapes.push(format!(
                "[{label}] {}: documented as not stopped under {}, but stopped: update the docs",
                case.name,
                mechanism.name()
            )),
            (None, false) => {}
        }
    }
    (escapes, known)
}

/// This process's user, effectively.
fn euid() -> u32 {
    // SAFETY: geteuid has no memory effects.
    unsafe { libc::geteuid() }
}

/// Every case under each mechanism as this process's user (root in CI;
/// `nobody` when the root pass runs it again).
#[needs(bwrap)]
#[tokio::test]
async fn hostile_commands_escape_no_mechanism_as_this_user() {
    let base = std::env::var_os(BASE_VARIABLE)
        .map_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")), PathBuf::from);
    let user = if euid() == 0 { "root" } else { "user" };
    let mechanisms: [(Arc<dyn SandboxMechanism>, bool); 3] = [
        (Arc::new(Landlock::default()), false),
        (Arc::new(Bubblewrap::default()), false),
        (Arc::new(Bubblewrap::keeping(super::kept::spawner())), true),
    ];
    let (mut escapes, mut known) = (Vec::new(), Vec::new());
    for (mechanism, kept) in mechanisms {
        let kind = if kept {
            "bubblewrap-kept"
        } else {
            mechanism.name()
        };
        let label = format!("{kind}/{user}");
        if let Err(e) = mechanism.check() {
            escapes.push(format!("[{label}] cannot make a sandbox: {e}"));
            continue;
        }
        let (e, k) = run_cases(&base, &label, mechanism, kept).await;
        escapes.extend(e);
        known.extend(k);
    }
    eprintln!(
        "{} cases x 3 (Landlock, bubblewrap, bubblewrap kept) as {user}; known (documented) \
         leaks: {known:#?}",
        cases().len()
    );
    assert!(
        escapes.is_empty(),
        "{} escape(s):\n{}",
        escapes.len(),
        escapes.join("\n")
    );
}

/// The same cases as an unprivileged user, when this process is root:
/// this test binary again, through `setpriv`, as `nobody` (65534), with a
/// base directory that user owns (the binary copied there, so any
/// checkout works).
#[needs(bwrap)]
#[test]
fn hostile_commands_escape_no_mechanism_as_an_unprivileged_user() {
    if euid() != 0 {
        eprintln!("not root: the other test is already the unprivileged pass");
        return;
    }
    use std::os::unix::fs::{chown, PermissionsExt};
    let base = tempfile::Builder::new()
        .prefix("lc-agent-hostile-")
        .tempdir_in(std::env::temp_dir())
        .unwrap();
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let binary = base.path().join("it");
    std::fs::copy(std::env::current_exe().unwrap(), &binary).unwrap();
    let spawner = base.path().join("lc-agent-sandbox-helper");
    std::fs::copy(super::kept::spawner(), &spawner).unwrap();
    let work = base.path().join("work");
    std::fs::create_dir(&work).unwrap();
    for path in [&work, &binary, &spawner] {
        chown(path, Some(65534), Some(65534)).unwrap();
    }
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&binary)
        .args([
            "--exact",
            "hostile::hostile_commands_escape_no_mechanism_as_this_user",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(BASE_VARIABLE, &work)
        .env("LC_AGENT_TEST_SPAWNER", &spawner)
        .env("HOME", &work)
        .env_remove("CARGO_TARGET_TMPDIR")
        .current_dir(&work)
        .stdin(Stdio::null())
        .output()
        .expect("setpriv (util-linux) runs the unprivileged pass");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("the unprivileged pass: {}", stderr.trim());
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "the unprivileged pass failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
}

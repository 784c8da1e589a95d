//! The hostile suite: one table of commands an attacker (a model, a
//! cloned repository's scripts) would run to leave the sandbox, each run
//! in a fresh workspace in `workspace-write` mode under **each mechanism**
//! (Landlock, bubblewrap), **as this process's user and, when that is
//! root, again as an unprivileged user** (the test binary itself, run
//! through `setpriv` as `nobody` with a workspace that user owns). Every
//! effect is checked on the host after the command; every escape of every
//! pass is reported at once.
//!
//! `LC_AGENT_HOSTILE_VERBOSE=1` prints every command and its output.
//!
//! What a mechanism is documented not to stop (Landlock shows every
//! process's command line) is listed as known: the suite fails if it
//! stops being true, so the docs follow.

use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use lc_agent_filesystem::{
    run_tool, Bubblewrap, FilesystemBackend, Landlock, LocalShellBackend, Sandbox,
    SandboxMechanism, SandboxMode, SandboxPolicy,
};
use lc_agent_test_support::needs;
use lc_agent_test_support::trust::{sandbox_site, SandboxSite, SECRET};
use serde_json::json;

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

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "remount /etc writable and write the host's /etc",
            setup: nothing,
            command: |c| {
                format!(
                    "mount -o remount,rw,bind /etc 2>&1; mount -o remount,rw / 2>&1; \
                     echo pwned > /etc/{m}",
                    m = c.marker
                )
            },
            escaped: |c, _| exists(&Path::new("/etc").join(&c.marker)),
            known: None,
        },
        Case {
            name: "umount /etc/shadow",
            setup: nothing,
            command: |_| {
                "umount /etc/shadow 2>&1; umount -l /etc/shadow 2>&1; cat /etc/shadow".into()
            },
            escaped: |_, out| said(out, "root:"),
            known: None,
        },
        Case {
            name: "umount .git and write a hook",
            setup: nothing,
            command: |_| {
                "umount .git 2>&1; umount -l .git 2>&1; mkdir -p .git/hooks; \
                 printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit"
                    .into()
            },
            escaped: |c, _| exists(&c.root.join(".git/hooks/pre-commit")),
            known: None,
        },
        Case {
            name: "write .git/hooks/pre-commit",
            setup: nothing,
            command: |_| "mkdir -p .git/hooks && echo 'echo pwned' > .git/hooks/pre-commit".into(),
            escaped: |c, _| exists(&c.root.join(".git/hooks/pre-commit")),
            known: None,
        },
        Case {
            name: "core.fsmonitor in .git/config",
            setup: nothing,
            command: |_| {
                "printf '[core]\\n\\tfsmonitor = touch pwned\\n' >> .git/config; \
                 git config core.hooksPath /tmp 2>&1"
                    .into()
            },
            escaped: |_, _| None, // the common check reads .git/config
            known: None,
        },
        Case {
            name: ".git moved away and made again",
            setup: nothing,
            command: |_| {
                "mv .git gone 2>&1; rm -rf .git 2>&1; mkdir -p .git && echo '[evil]' > .git/config"
                    .into()
            },
            escaped: |_, _| None,
            known: None,
        },
        Case {
            name: "a hard link to .git/config",
            setup: nothing,
            command: |_| "ln .git/config src/config 2>&1 && echo '[evil]' >> src/config".into(),
            escaped: |_, _| None,
            known: None,
        },
        Case {
            name: "a missing .git created",
            setup: no_git,
            command: |_| {
                "git init -q . 2>&1; mkdir -p .git/hooks 2>&1; \
                 echo 'echo pwned' > .git/hooks/pre-commit; echo '[evil]' > .git/config"
                    .into()
            },
            escaped: |c, _| {
                exists(&c.root.join(".git/hooks/pre-commit"))
                    .or_else(|| exists(&c.root.join(".git/config")))
            },
            known: None,
        },
        Case {
            name: "a missing .lc-agent/settings.json planted",
            setup: nothing,
            command: |_| {
                "mkdir .lc-agent 2>&1; \
                 printf '{\"hooks\":{\"SessionStart\":[]}}' > .lc-agent/settings.json"
                    .into()
            },
            escaped: |c, _| exists(&c.root.join(".lc-agent/settings.json")),
            known: None,
        },
        Case {
            name: "an existing .lc-agent/settings.json rewritten",
            setup: existing_config,
            command: |_| "echo '{\"hooks\":1}' > .lc-agent/settings.json; rm -rf .lc-agent".into(),
            escaped: |c, _| {
                let kept = std::fs::read_to_string(c.root.join(".lc-agent/settings.json"));
                (kept.ok().as_deref() != Some("{}")).then(|| "settings.json changed".into())
            },
            known: None,
        },
        Case {
            name: "chroot",
            setup: nothing,
            command: |_| {
                format!(
                    "chroot / true 2>&1 && echo CHROOTED; {}",
                    perl("chroot(\"/\") and print \"CHROOTED\"; print \"chroot: $!\"")
                )
            },
            escaped: |_, out| said(out, "CHROOTED"),
            known: None,
        },
        Case {
            name: "unshare -Ur",
            setup: nothing,
            command: |_| {
                "unshare -Ur id 2>&1 && echo UNSHARED; unshare -m true 2>&1 && echo UNSHARED".into()
            },
            escaped: |_, out| said(out, "UNSHARED"),
            known: None,
        },
        Case {
            name: "unshare(CLONE_NEWUSER) and clone(CLONE_NEWUSER|CLONE_NEWNS) from perl",
            setup: nothing,
            command: move |_| {
                let code = format!(
                    "my $r = syscall({u}, 0x10000000); print \"unshare: $r $!\\n\"; \
                     print \"UNSHARED\\n\" if $r == 0; \
                     $r = syscall({c}, 0x10020000 | 17, 0, 0, 0, 0); \
                     if ($r == 0) {{ syscall({e}, 0) }} print \"clone: $r $!\\n\"; \
                     print \"CLONED\\n\" if $r > 0; \
                     my $args = pack(\"Q8\", 0x10000000, 0, 0, 0, 17, 0, 0, 0); \
                     $r = syscall({c3}, $args, 64); \
                     if ($r == 0) {{ syscall({e}, 0) }} print \"clone3: $r $!\\n\"; \
                     print \"CLONED3\\n\" if $r > 0",
                    u = libc::SYS_unshare,
                    c = libc::SYS_clone,
                    c3 = libc::SYS_clone3,
                    e = libc::SYS_exit,
                );
                perl(&code)
            },
            escaped: |_, out| said(out, "UNSHARED").or_else(|| said(out, "CLONED")),
            known: None,
        },
        Case {
            name: "setns into pid 1's namespaces",
            setup: nothing,
            command: move |_| {
                let code = format!(
                    "for my $ns (\"mnt\", \"user\", \"net\", \"pid\") {{ \
                     open(my $f, \"<\", \"/proc/1/ns/$ns\") or next; \
                     my $r = syscall({s}, fileno($f), 0); print \"setns $ns: $r $!\\n\"; \
                     print \"ENTERED $ns\\n\" if $r == 0 }}",
                    s = libc::SYS_setns
                );
                format!("nsenter -t 1 -m true 2>&1 && echo ENTERED; {}", perl(&code))
            },
            escaped: |_, out| said(out, "ENTERED"),
            known: None,
        },
        Case {
            name: "mount a tmpfs, fsopen, umount2 from perl",
            setup: nothing,
            command: move |_| {
                let code = format!(
                    "my ($none, $tmp, $fs, $usr) = (\"none\", \"/tmp\", \"tmpfs\", \"/usr\"); \
                     my $r = syscall({m}, $none, $tmp, $fs, 0, 0); print \"mount: $r $!\\n\"; \
                     print \"MOUNTED\\n\" if $r == 0; \
                     $r = syscall({f}, $fs, 0); print \"fsopen: $r $!\\n\"; \
                     print \"MOUNTED fsopen\\n\" if $r >= 0; \
                     $r = syscall({u}, $usr, 2); print \"umount2: $r $!\\n\"; \
                     print \"MOUNTED umount\\n\" if $r == 0",
                    m = libc::SYS_mount,
                    f = libc::SYS_fsopen,
                    u = libc::SYS_umount2,
                );
                perl(&code)
            },
            escaped: |_, out| said(out, "MOUNTED"),
            known: None,
        },
        Case {
            name: "mknod a block device",
            setup: nothing,
            command: |_| "mknod src/disk b 8 0 2>&1; mknod src/mem c 1 1 2>&1; ls -l src".into(),
            escaped: |c, _| {
                exists(&c.root.join("src/disk")).or_else(|| exists(&c.root.join("src/mem")))
            },
            known: None,
        },
        Case {
            name: "/proc/1/root and /proc/PID/root, /proc/PID/cwd of a host process",
            setup: nothing,
            command: |c| {
                format!(
                    "ls /proc/1/root/ 2>&1; cat /proc/1/root{h}/.ssh/id_ed25519 2>&1; \
                     cat /proc/{p}/root{h}/.ssh/id_ed25519 2>&1; cat /proc/{p}/cwd/.ssh/id_ed25519 2>&1; \
                     echo pwned > /proc/{p}/cwd/via-cwd 2>&1",
                    h = c.host_dir.display(),
                    p = c.pid
                )
            },
            escaped: |c, out| said(out, "s3cr3t").or_else(|| exists(&c.host_dir.join("via-cwd"))),
            known: None,
        },
        Case {
            name: "a host process's environment",
            setup: nothing,
            command: |c| {
                format!(
                    "cat /proc/{}/environ 2>&1; cat /proc/[0-9]*/environ 2>/dev/null",
                    c.pid
                )
            },
            escaped: |_, out| said(out, TOKEN),
            known: None,
        },
        Case {
            name: "a host process's command line",
            setup: nothing,
            command: |c| {
                format!(
                    "cat /proc/{}/cmdline 2>&1; cat /proc/[0-9]*/cmdline 2>/dev/null",
                    c.pid
                )
            },
            escaped: |_, out| said(out, TOKEN),
            known: Some("landlock"),
        },
        Case {
            name: "ptrace and kill a host process",
            setup: nothing,
            command: |c| {
                let code = format!(
                    "my $r = syscall({t}, 16, {p}, 0, 0); print \"ptrace: $r $!\\n\"; \
                     print \"TRACED\\n\" if $r == 0",
                    t = libc::SYS_ptrace,
                    p = c.pid
                );
                format!("{}; kill -9 {} 2>&1", perl(&code), c.pid)
            },
            escaped: |c, out| {
                said(out, "TRACED").or_else(|| {
                    (!Path::new(&format!("/proc/{}", c.pid)).exists())
                        .then(|| "the host process was killed".into())
                })
            },
            known: None,
        },
        Case {
            name: "capabilities, no_new_privs and seccomp",
            setup: nothing,
            command: |_| {
                "grep -E '^(CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status"
                    .into()
            },
            escaped: |_, out| {
                let field = |name: &str| {
                    out.lines()
                        .find_map(|l| l.strip_prefix(name))
                        .map(str::trim)
                        .unwrap_or("missing")
                        .to_string()
                };
                let caps = ["CapPrm:", "CapEff:", "CapAmb:"]
                    .iter()
                    .any(|f| field(f) != "0000000000000000");
                (caps || field("NoNewPrivs:") != "1" || field("Seccomp:") != "2")
                    .then(|| format!("status: {out}"))
            },
            known: None,
        },
        Case {
            name: "a symbolic link made to the outside",
            setup: nothing,
            command: |c| {
                format!(
                    "ln -s {} src/out; echo pwned > src/out/via-made; cat src/out/.ssh/id_ed25519",
                    c.outside.display()
                )
            },
            escaped: |c, out| said(out, "s3cr3t").or_else(|| exists(&c.outside.join("via-made"))),
            known: None,
        },
        Case {
            name: "a planted symbolic link to the outside",
            setup: planted_link,
            command: |_| "echo pwned > planted/via-planted; cat planted/.ssh/id_ed25519".into(),
            escaped: |c, out| {
                said(out, "s3cr3t").or_else(|| exists(&c.outside.join("via-planted")))
            },
            known: None,
        },
        Case {
            name: "a hard link to the outside's secret",
            setup: nothing,
            command: |c| {
                format!(
                    "ln {}/.ssh/id_ed25519 src/hard 2>&1 && echo pwned >> src/hard",
                    c.outside.display()
                )
            },
            escaped: |_, _| None, // the common check reads the secret
            known: None,
        },
        Case {
            name: "absolute paths and .. to the outside, the host's /tmp",
            setup: nothing,
            command: |c| {
                format!(
                    "echo pwned > {o}/absolute; echo pwned > ../outside/dotdot; \
                     echo pwned > /tmp/{m}; cat {o}/.ssh/id_ed25519",
                    o = c.outside.display(),
                    m = c.marker
                )
            },
            escaped: |c, out| {
                said(out, "s3cr3t")
                    .or_else(|| exists(&Path::new("/tmp").join(&c.marker)))
                    .or_else(|| exists(&c.outside.join("absolute")))
                    .or_else(|| exists(&c.outside.join("dotdot")))
            },
            known: None,
        },
        Case {
            name: "a Unix socket of the host in the root",
            setup: nothing,
            command: |_| {
                perl(
                    "use Socket; socket(my $s, AF_UNIX, SOCK_STREAM, 0) or die \"socket: $!\"; \
                     connect($s, pack_sockaddr_un(\"src/host.sock\")) or die \"connect: $!\"; \
                     print \"CONNECTED\"",
                )
            },
            escaped: |c, out| {
                c.socket.set_nonblocking(true).unwrap();
                said(out, "CONNECTED").or_else(|| {
                    c.socket
                        .accept()
                        .is_ok()
                        .then(|| "the host's socket accepted".into())
                })
            },
            known: None,
        },
        Case {
            name: "background processes outliving the command",
            setup: nothing,
            command: |c| {
                format!(
                    "nohup sh -c 'sleep 20; : {m}' >/dev/null 2>&1 & \
                     (setsid sh -c 'sleep 20; : {m}' &) 2>&1; \
                     ( ( sh -c 'sleep 20; : {m}' & ) & ); echo started",
                    m = c.marker
                )
            },
            escaped: |c, _| {
                std::thread::sleep(Duration::from_millis(300));
                let left = processes_with(&c.marker);
                (!left.is_empty()).then(|| format!("still running: {left:?}"))
            },
            known: None,
        },
    ]
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
) -> (Vec<String>, Vec<String>) {
    let (mut escapes, mut known) = (Vec::new(), Vec::new());
    for (i, case) in cases().iter().enumerate() {
        let site: SandboxSite = sandbox_site(base, "");
        let host_dir = site.base().join("host");
        std::fs::create_dir_all(host_dir.join(".ssh")).unwrap();
        std::fs::write(host_dir.join(".ssh/id_ed25519"), SECRET).unwrap();
        let host = host_process(&host_dir);
        let ctx = Ctx {
            root: site.root.clone(),
            outside: site.outside.clone(),
            pid: host.0.id(),
            host_dir,
            marker: format!(
                "lc-agent-hostile-{}-{}-{i}",
                std::process::id(),
                label.replace('/', "-")
            ),
            socket: UnixListener::bind(site.root.join("src/host.sock")).unwrap(),
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
        let command = (case.command)(&ctx);
        let out = run_tool(
            &shell,
            "execute",
            &json!({"command": command, "timeout": 10}),
        )
        .await
        .unwrap()
        .content;
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
    let mechanisms: [Arc<dyn SandboxMechanism>; 2] = [
        Arc::new(Landlock::default()),
        Arc::new(Bubblewrap::default()),
    ];
    let (mut escapes, mut known) = (Vec::new(), Vec::new());
    for mechanism in mechanisms {
        let label = format!("{}/{user}", mechanism.name());
        if let Err(e) = mechanism.check() {
            escapes.push(format!("[{label}] cannot make a sandbox: {e}"));
            continue;
        }
        let (e, k) = run_cases(&base, &label, mechanism).await;
        escapes.extend(e);
        known.extend(k);
    }
    eprintln!(
        "{} cases x 2 mechanisms as {user}; known (documented) leaks: {known:#?}",
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
    let work = base.path().join("work");
    std::fs::create_dir(&work).unwrap();
    for path in [&work, &binary] {
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

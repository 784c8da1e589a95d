//! Kept bubblewrap sandboxes (`Bubblewrap::keeping`): one sandbox serves
//! command after command, and nothing of one command reaches the next —
//! background processes, `/tmp` and `/dev/shm`, System V IPC, the working
//! directory and variables, descriptors; a command that kills the spawner
//! only ends its own sandbox; parallel commands get sandboxes of their own.
//! (The hostile suite runs every case in a kept sandbox too: `hostile`.)

use std::path::Path;
use std::time::{Duration, Instant};

use lc_agent_filesystem::{
    run_tool, Bubblewrap, FilesystemBackend, LocalShellBackend, Sandbox, SandboxMode, SandboxPolicy,
};
use lc_agent_test_support::needs;
use lc_agent_test_support::trust::{sandbox_site, SandboxSite};
use serde_json::json;

/// The spawner program of this crate.
pub fn spawner() -> String {
    std::env::var("LC_AGENT_TEST_SPAWNER")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_lc-agent-sandbox-helper").to_string())
}

fn site() -> SandboxSite {
    sandbox_site(Path::new(env!("CARGO_TARGET_TMPDIR")), "")
}

fn kept_shell(root: &Path) -> LocalShellBackend {
    let sandbox = Sandbox::with_mechanism(
        SandboxPolicy::new(SandboxMode::WorkspaceWrite),
        std::sync::Arc::new(Bubblewrap::keeping(spawner())),
    )
    .unwrap();
    LocalShellBackend::sandboxed(FilesystemBackend::new(root).unwrap(), sandbox)
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

/// The PID namespace a command runs in: the same one means the same sandbox.
const NAMESPACE: &str = "readlink /proc/self/ns/pid";

#[needs(bwrap)]
#[tokio::test]
async fn one_kept_sandbox_serves_command_after_command_confined() {
    let site = site();
    let shell = kept_shell(&site.root);
    let first = exec(&shell, NAMESPACE, 10).await;
    assert!(first.starts_with("pid:["), "{first}");
    assert_eq!(exec(&shell, NAMESPACE, 10).await, first, "not kept");
    assert_eq!(
        exec(&shell, "echo out; echo err >&2; exit 7", 10).await,
        "out\nerr\nExit code: 7"
    );
    let out = exec(
        &shell,
        "touch /etc/lc-agent-kept 2>&1; touch .git/x 2>&1; id -u",
        10,
    )
    .await;
    assert!(out.contains("Read-only file system"), "{out}");
    assert!(!site.root.join(".git/x").exists());
    // SAFETY: geteuid has no memory effects.
    if unsafe { libc::geteuid() } == 0 {
        assert!(out.contains("65534"), "root runs as nobody: {out}");
    }
    // The command's own filter: no namespaces, no mounts, and `setpgid`
    // refused again (the spawner's filter allows it, the command's not).
    let out = exec(
        &shell,
        "unshare -U true 2>&1; echo u=$?; perl -e 'print setpgrp(0,0) ? \"pg-ok\" : \"pg-refused\"'",
        10,
    )
    .await;
    assert!(out.contains("u=1") && out.contains("pg-refused"), "{out}");
    // A timeout ends that sandbox; the next command gets another.
    let started = Instant::now();
    let out = exec(&shell, "echo start; sleep 30", 1).await;
    assert!(out.contains("timed out") && out.contains("start"), "{out}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let after = exec(&shell, NAMESPACE, 10).await;
    assert!(after.starts_with("pid:[") && after != first, "{after}");
}

#[needs(bwrap)]
#[tokio::test]
async fn nothing_of_one_command_reaches_the_next() {
    let site = site();
    let shell = kept_shell(&site.root);
    let ns = exec(&shell, NAMESPACE, 10).await;
    // A background job that writes a log in the root and tries every
    // process's stdout: it must be gone when the next command runs.
    let out = exec(
        &shell,
        "(while :; do date +%s%N >> bg.log; for f in /proc/[0-9]*/fd/1; do echo LEAK > $f; done 2>/dev/null; sleep 0.02; done) >/dev/null 2>&1 &
         perl -e 'if (fork) { exit 0 } setpgrp(0,0); sleep 100' &
         echo $! started",
        10,
    )
    .await;
    assert!(out.contains("started"), "{out}");
    let logged = std::fs::metadata(site.root.join("bg.log")).map_or(0, |m| m.len());
    let out = exec(
        &shell,
        "sleep 0.5; ls /proc | grep -c '^[0-9]'; echo second",
        10,
    )
    .await;
    assert!(!out.contains("LEAK"), "{out}");
    // init, the spawner, sh, ls, grep: nothing else.
    assert!(out.starts_with("5\nsecond"), "{out}");
    assert_eq!(
        std::fs::metadata(site.root.join("bg.log")).map_or(0, |m| m.len()),
        logged,
        "the background job still ran"
    );
    // Files in /tmp and /dev/shm, System V IPC, the working directory and
    // variables: gone.
    exec(
        &shell,
        "echo s > /tmp/secret; mkdir -p /tmp/d/e; echo s > /tmp/d/e/f; chmod 000 /tmp/d/e /tmp/d;
         echo s > /dev/shm/secret; perl -e 'use IPC::SysV qw(IPC_PRIVATE IPC_CREAT); shmget(IPC_PRIVATE, 4096, IPC_CREAT|0600)';
         cd /tmp; export LEFT=1; umask 077",
        10,
    )
    .await;
    let out = exec(
        &shell,
        "ls -A /tmp /dev/shm; tail -n +2 /proc/sysvipc/shm | wc -l; pwd; echo \"left=$LEFT\"; ls /proc/self/fd | tr '\\n' ' '",
        10,
    )
    .await;
    let root = site.root.canonicalize().unwrap();
    assert_eq!(
        out,
        format!(
            "/dev/shm:\n\n/tmp:\n0\n{}\nleft=\n0 1 2 3 \nExit code: 0",
            root.display()
        )
    );
    assert_eq!(
        exec(&shell, NAMESPACE, 10).await,
        ns,
        "the sandbox was not kept"
    );
}

#[needs(bwrap)]
#[tokio::test]
async fn a_command_that_kills_the_spawner_ends_only_its_own_sandbox() {
    let site = site();
    let shell = kept_shell(&site.root);
    let ns = exec(&shell, NAMESPACE, 10).await;
    let started = Instant::now();
    let out = exec(
        &shell,
        "echo before; kill -9 $PPID; sleep 20; echo after",
        30,
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(10), "{out}");
    assert!(out.contains("before") && !out.contains("after"), "{out}");
    assert!(out.contains("Exit code: 137"), "{out}");
    assert!(out.contains("the next command starts a new one"), "{out}");
    // `kill -9 1` is ignored by the namespace's init; the sandbox stays.
    exec(&shell, "kill -9 1", 10).await;
    // The next command runs, in a new sandbox, as confined as before.
    let out = exec(
        &shell,
        &format!("{NAMESPACE}; touch /etc/x 2>&1; echo ok > ok.txt"),
        10,
    )
    .await;
    assert!(out.starts_with("pid:[") && !out.starts_with(&ns), "{out}");
    assert!(out.contains("Read-only file system"), "{out}");
    assert_eq!(
        std::fs::read_to_string(site.root.join("ok.txt")).unwrap(),
        "ok\n"
    );
}

#[needs(bwrap)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_commands_get_sandboxes_of_their_own() {
    let site = site();
    let shell = kept_shell(&site.root);
    exec(&shell, "true", 10).await;
    let one = "echo one-$(readlink /proc/self/ns/pid); read x; echo read=$x; sleep 0.3; ls /proc/self/fd | tr '\\n' ' '";
    let two = "echo two-$(readlink /proc/self/ns/pid); read x; echo read=$x; sleep 0.3; ls /proc/self/fd | tr '\\n' ' '";
    let (a, b) = tokio::join!(exec(&shell, one, 10), exec(&shell, two, 10));
    assert!(a.contains("one-pid:[") && !a.contains("two-"), "{a}");
    assert!(b.contains("two-pid:[") && !b.contains("one-"), "{b}");
    assert!(
        a.contains("read=\n0 1 2 3 ") && b.contains("read=\n0 1 2 3 "),
        "{a}\n{b}"
    );
    let ns = |s: &str| {
        s.lines()
            .next()
            .unwrap()
            .split('-')
            .nth(1)
            .unwrap()
            .to_string()
    };
    assert_ne!(ns(&a), ns(&b), "two commands in one sandbox at once");
}

/// A spawner that never serves (here `/bin/false`, which exits at once)
/// only costs the kept sandbox: commands then get a `bwrap` each, as
/// confined as ever, never run any other way.
#[needs(bwrap)]
#[tokio::test]
async fn a_spawner_that_does_not_serve_leaves_commands_confined() {
    let site = site();
    let sandbox = Sandbox::with_mechanism(
        SandboxPolicy::new(SandboxMode::WorkspaceWrite),
        std::sync::Arc::new(Bubblewrap::keeping("/bin/false")),
    )
    .unwrap();
    let shell = LocalShellBackend::sandboxed(FilesystemBackend::new(&site.root).unwrap(), sandbox);
    let started = Instant::now();
    for _ in 0..2 {
        let out = exec(
            &shell,
            &format!("{NAMESPACE}; touch /etc/x 2>&1; touch .git/y 2>&1; echo ran > ran.txt"),
            10,
        )
        .await;
        assert!(out.starts_with("pid:["), "{out}");
        assert!(out.matches("Read-only file system").count() == 2, "{out}");
    }
    assert_eq!(
        std::fs::read_to_string(site.root.join("ran.txt")).unwrap(),
        "ran\n"
    );
    // Seen at once, not at the start's timeout.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

/// With a domain allow-list the spawner is also the network helper: in a
/// kept sandbox the proxy answers on the sandbox's loopback, command after
/// command, and refuses a name not on the list.
#[needs(bwrap)]
#[tokio::test]
async fn a_kept_sandbox_with_an_allow_list_reaches_only_the_proxy() {
    let site = site();
    let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite)
        .allow_domain("allowed.test".parse().unwrap());
    let sandbox =
        Sandbox::with_mechanism(policy, std::sync::Arc::new(Bubblewrap::keeping(spawner())))
            .unwrap();
    let shell = LocalShellBackend::sandboxed(FilesystemBackend::new(&site.root).unwrap(), sandbox);
    let ns = exec(&shell, NAMESPACE, 10).await;
    let curl = "echo proxy=$HTTP_PROXY; curl -sS --max-time 5 -o /dev/null -w 'status=%{http_code}' \
                http://other.test/ 2>&1; echo; curl -sS --max-time 5 --noproxy '*' http://1.1.1.1/ 2>&1 | head -c 60";
    for _ in 0..2 {
        let out = exec(&shell, curl, 20).await;
        assert!(out.contains("proxy=http://127.0.0.1:3128"), "{out}");
        assert!(out.contains("status=403"), "{out}");
        assert!(!out.contains("<html"), "a raw address answered: {out}");
    }
    assert_eq!(
        exec(&shell, NAMESPACE, 10).await,
        ns,
        "the sandbox was not kept"
    );
}

//! The hostile commands every door of the shell must hold against: a
//! representative table of the filesystem crate's hostile suite
//! (`modifiers/filesystem/tests/it/hostile`, which runs its 69 cases
//! under each mechanism as root and as `nobody`), shared so the other
//! doors (`/v1/tools/execute` with and without a session, `lc-agent mcp
//! --shell`) send the same attacks and check the same effects **on the
//! host**: files written outside the root, into `.git` or `.lc-agent`,
//! in the host's `/etc` and `/tmp`; a set-user-ID or device file left
//! behind; a host process's secrets read through `/proc`; a host loopback
//! server reached; a process that outlives its command.
//!
//! A door's test makes one [`HostileSite`], sends every [`HostileCase`]'s
//! command through the door (each case's own marker names what it
//! leaves), then asks [`HostileSite::escapes`] for each case and once
//! more for what every case must leave as it was.

use std::io::{ErrorKind, Read};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::trust::{sandbox_site, SandboxSite, SECRET};

/// A token in the host process's command line and environment.
pub const TOKEN: &str = "tok-hostile-door-do-not-leak";

/// The workspace, the outside, and the host's bait: a process holding
/// [`TOKEN`] whose working directory holds a copy of the secret, a
/// loopback TCP server.
#[derive(Debug)]
pub struct HostileSite {
    /// Holds the directories (removed when the site is dropped).
    _site: SandboxSite,
    /// The workspace root a door confines its commands to.
    pub root: PathBuf,
    /// A directory beside the root holding the secret.
    pub outside: PathBuf,
    host: HostProcess,
    host_dir: PathBuf,
    tcp: TcpListener,
    port: u16,
    /// Names this site's files and processes (unique per site).
    pub marker: String,
}

/// The host process holding [`TOKEN`], killed when dropped.
#[derive(Debug)]
struct HostProcess(Child);

impl Drop for HostProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl HostileSite {
    /// A site under `parent` (not `/tmp`, which a sandbox replaces: a
    /// crate's `CARGO_TARGET_TMPDIR`), its root `workspace` inside the
    /// site's root (`""`: the root itself), holding `.git/config` and
    /// `src/`; `label` goes into the marker.
    pub fn new(parent: &Path, workspace: &str, label: &str) -> Self {
        let site = sandbox_site(parent, workspace);
        let root = site.root.join(workspace);
        let host_dir = site.base().join("host");
        std::fs::create_dir_all(host_dir.join(".ssh")).expect("the host's directory");
        std::fs::write(host_dir.join(".ssh/id_ed25519"), SECRET).expect("the host's secret");
        let host = Command::new("sh")
            .args(["-c", "while :; do sleep 1; done", "lc-agent-hostile-door"])
            .arg(format!("--token={TOKEN}"))
            .env("LC_AGENT_HOSTILE_TOKEN", TOKEN)
            .current_dir(&host_dir)
            .stdin(Stdio::null())
            .spawn()
            .expect("the host process");
        let tcp = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        tcp.set_nonblocking(true).expect("a non-blocking listener");
        let port = tcp.local_addr().expect("its address").port();
        let marker = format!(
            "lc-agent-door-{}-{}-{port}",
            label.replace(|c: char| !c.is_ascii_alphanumeric(), "-"),
            std::process::id()
        );
        Self {
            outside: site.outside.clone(),
            root,
            _site: site,
            host: HostProcess(host),
            host_dir,
            tcp,
            port,
            marker,
        }
    }

    /// The host process's id.
    pub fn host_pid(&self) -> u32 {
        self.host.0.id()
    }

    /// `case`'s marker: the site's, with the case's number.
    fn case_marker(&self, case: usize) -> String {
        format!("{}-{case}", self.marker)
    }

    /// What `case` (number `n` of [`cases`]) left on the host, given what
    /// its command printed: `None` when it escaped nowhere.
    pub fn escaped(&self, n: usize, case: &HostileCase, output: &str) -> Option<String> {
        let probe = Probe {
            site: self,
            marker: self.case_marker(n),
        };
        (case.escaped)(&probe, output)
    }

    /// `case`'s command (number `n` of [`cases`]).
    pub fn command(&self, n: usize, case: &HostileCase) -> String {
        let probe = Probe {
            site: self,
            marker: self.case_marker(n),
        };
        (case.command)(&probe)
    }

    /// What every case must leave as it was: the outside (its secret,
    /// no new entry), `.git/config`, no `.lc-agent` made, nothing in the
    /// host's `/etc` or `/tmp` under the marker, no process with the
    /// marker alive, no connection to the host's loopback server.
    pub fn common_escapes(&self) -> Vec<String> {
        let mut found = Vec::new();
        let secret = std::fs::read_to_string(self.outside.join(".ssh/id_ed25519"));
        if secret.as_deref().ok() != Some(SECRET) {
            found.push("the outside's secret changed".to_string());
        }
        let outside: Vec<_> = std::fs::read_dir(&self.outside)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name())
                    .filter(|n| n != ".ssh")
                    .collect()
            })
            .unwrap_or_default();
        if !outside.is_empty() {
            found.push(format!("written outside the root: {outside:?}"));
        }
        let git = std::fs::read_to_string(self.root.join(".git/config")).ok();
        if git.as_deref() != Some("[core]\n") {
            found.push(format!(".git/config is now {git:?}"));
        }
        if self.root.join(".git/hooks").exists() {
            found.push(".git/hooks was made".to_string());
        }
        if self.root.join(".lc-agent").exists() {
            found.push(".lc-agent was made (or its mount point left behind)".to_string());
        }
        for dir in ["/etc", "/tmp"] {
            let left: Vec<_> = std::fs::read_dir(dir)
                .map(|d| {
                    d.flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .filter(|n| n.contains(&self.marker))
                        .collect()
                })
                .unwrap_or_default();
            for name in left {
                let _ = std::fs::remove_file(Path::new(dir).join(&name));
                found.push(format!("written in the host's {dir}: {name}"));
            }
        }
        let alive = processes_with(&self.marker);
        if !alive.is_empty() {
            found.push(format!("processes outlived their command: {alive:?}"));
        }
        let reached = connections(&self.tcp);
        if !reached.is_empty() {
            found.push(format!(
                "the host's loopback server was reached: {reached:?}"
            ));
        }
        found
    }
}

/// What a case's functions see: the site and the case's own marker.
#[derive(Debug)]
pub struct Probe<'a> {
    site: &'a HostileSite,
    /// This case's marker (unique per site and case).
    pub marker: String,
}

impl Probe<'_> {
    /// The site.
    pub fn site(&self) -> &HostileSite {
        self.site
    }
}

/// A hostile command and what on the host (or in its output) shows it
/// escaped.
#[derive(Debug)]
pub struct HostileCase {
    /// What the case tries.
    pub name: &'static str,
    /// The shell command.
    pub command: fn(&Probe<'_>) -> String,
    /// `Some(what)` when it escaped.
    pub escaped: fn(&Probe<'_>, &str) -> Option<String>,
}

/// The processes whose command line holds `marker`.
pub fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmdline).contains(marker)
        {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

/// What connected to `listener` (non-blocking) since the last look.
fn connections(listener: &TcpListener) -> Vec<String> {
    let mut got = Vec::new();
    loop {
        match listener.accept() {
            Ok((mut stream, from)) => {
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
                let mut text = String::new();
                let _ = stream.read_to_string(&mut text);
                got.push(format!("{from}: {text}"));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return got,
            Err(e) => {
                got.push(format!("accept failed: {e}"));
                return got;
            }
        }
    }
}

fn exists(path: &Path) -> Option<String> {
    path.symlink_metadata()
        .is_ok()
        .then(|| format!("{} exists on the host", path.display()))
}

fn said(out: &str, text: &str) -> Option<String> {
    out.contains(text).then(|| format!("printed {text:?}"))
}

/// The table: at least one case per kind of escape the full suite has.
pub fn cases() -> Vec<HostileCase> {
    vec![
        HostileCase {
            name: "remount /etc writable and write the host's /etc",
            command: |p| {
                format!(
                    "mount -o remount,rw,bind /etc 2>&1; mount -o remount,rw / 2>&1; \
                     echo pwned > /etc/{m}",
                    m = p.marker
                )
            },
            escaped: |p, _| exists(&Path::new("/etc").join(&p.marker)),
        },
        HostileCase {
            name: "umount /etc/shadow and read it",
            command: |_| {
                "umount /etc/shadow 2>&1; umount -l /etc/shadow 2>&1; cat /etc/shadow".into()
            },
            escaped: |_, out| said(out, "root:"),
        },
        HostileCase {
            name: "umount .git and write a hook",
            command: |_| {
                "umount .git 2>&1; umount -l .git 2>&1; mkdir -p .git/hooks; \
                 printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit"
                    .into()
            },
            escaped: |p, _| exists(&p.site().root.join(".git/hooks/pre-commit")),
        },
        HostileCase {
            name: "core.fsmonitor in .git/config, directly and through a hard link",
            command: |_| {
                "printf '[core]\\n\\tfsmonitor = touch pwned\\n' >> .git/config; \
                 ln .git/config src/config 2>&1 && echo '[evil]' >> src/config; \
                 git config core.hooksPath /tmp 2>&1"
                    .into()
            },
            // The common check reads .git/config.
            escaped: |_, _| None,
        },
        HostileCase {
            name: "plant .lc-agent/settings.json with a hook",
            command: |p| {
                format!(
                    "mkdir -p .lc-agent 2>&1; printf '{{\"hooks\":{{\"SessionStart\":[{{\"hooks\":\
                     [{{\"type\":\"command\",\"command\":\"touch /tmp/{m}\"}}]}}]}}}}' \
                     > .lc-agent/settings.json",
                    m = p.marker
                )
            },
            escaped: |p, _| exists(&p.site().root.join(".lc-agent/settings.json")),
        },
        HostileCase {
            name: "write outside the root: absolute path, `..`, a planted link",
            command: |p| {
                let o = p.site().outside.display();
                format!(
                    "echo pwned > {o}/{m}-abs; echo pwned > ../outside/{m}-dots; \
                     ln -s {o} link-out; echo pwned > link-out/{m}-link; \
                     echo pwned > $HOME/../outside/{m}-home",
                    m = p.marker
                )
            },
            // The common check lists the outside.
            escaped: |_, _| None,
        },
        HostileCase {
            name: "read the outside's secret (path, link, /proc/PID/cwd and root)",
            command: |p| {
                let (o, pid) = (p.site().outside.display(), p.site().host_pid());
                format!(
                    "cat {o}/.ssh/id_ed25519; cat ../outside/.ssh/id_ed25519; \
                     ln -s {o} l2; cat l2/.ssh/id_ed25519; cat /proc/{pid}/cwd/.ssh/id_ed25519; \
                     cat /proc/{pid}/root{h}/.ssh/id_ed25519",
                    h = p.site().host_dir.display()
                )
            },
            escaped: |_, out| said(out, "s3cr3t"),
        },
        HostileCase {
            name: "a host process's environment and memory through /proc",
            command: |p| {
                let pid = p.site().host_pid();
                format!(
                    "cat /proc/{pid}/environ; for f in /proc/[0-9]*/environ; do cat $f; done; \
                     head -c 4096 /proc/{pid}/mem | od -c | head -2; cat /proc/{pid}/maps"
                )
            },
            escaped: |_, out| said(out, TOKEN).or_else(|| said(out, "r-xp")),
        },
        HostileCase {
            name: "nested namespaces and chroot",
            command: |p| {
                format!(
                    "unshare -Ur sh -c 'echo {m}-userns' 2>&1; unshare -m true && echo {m}-mntns; \
                     chroot / true 2>&1 && echo {m}-chroot; nsenter -t 1 -m true && echo {m}-setns",
                    m = p.marker
                )
            },
            escaped: |p, out| said(out, &format!("{}-", p.marker)),
        },
        HostileCase {
            name: "a block device node and a set-user-ID shell",
            command: |p| {
                format!(
                    "mknod {m}-disk b 8 0 2>&1; cp /bin/sh {m}-suid && chmod u+s {m}-suid 2>&1; \
                     chmod 4755 {m}-suid 2>&1",
                    m = p.marker
                )
            },
            escaped: |p, _| {
                let root = &p.site().root;
                let disk = root.join(format!("{}-disk", p.marker));
                let suid = root.join(format!("{}-suid", p.marker));
                exists(&disk).or_else(|| {
                    let mode = suid.metadata().ok()?.permissions().mode();
                    (mode & 0o6000 != 0)
                        .then(|| format!("{} is set-user-ID ({mode:o})", suid.display()))
                })
            },
        },
        HostileCase {
            name: "write the host's /tmp",
            command: |p| format!("echo pwned > /tmp/{m}; ls -la /tmp | head -5", m = p.marker),
            // The common check lists the host's /tmp.
            escaped: |_, _| None,
        },
        HostileCase {
            name: "a background process that outlives its command",
            command: |p| {
                format!(
                    "nohup sh -c 'sleep 30; echo {m}' >/dev/null 2>&1 & \
                     setsid sh -c 'sleep 30; echo {m}' >/dev/null 2>&1 & echo started",
                    m = p.marker
                )
            },
            escaped: |p, _| {
                std::thread::sleep(Duration::from_millis(300));
                let alive = processes_with(&p.marker);
                (!alive.is_empty()).then(|| format!("still running: {alive:?}"))
            },
        },
        HostileCase {
            name: "the host's loopback server (curl, python, bash /dev/tcp)",
            command: |p| {
                let port = p.site().port;
                format!(
                    "curl -s -m 2 http://127.0.0.1:{port}/{m} 2>&1; \
                     /usr/bin/python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', \
                     {port}), 2); s.sendall(b'{m}')\" 2>&1 | tail -1; \
                     bash -c 'echo {m} > /dev/tcp/127.0.0.1/{port}' 2>&1",
                    m = p.marker
                )
            },
            // The common check looks at the listener.
            escaped: |_, _| None,
        },
        HostileCase {
            name: "obfuscated: base64 to sh writing a hook",
            command: |_| {
                // `mkdir -p .git/hooks && echo pwned > .git/hooks/post-checkout`
                "echo bWtkaXIgLXAgLmdpdC9ob29rcyAmJiBlY2hvIHB3bmVkID4gLmdpdC9ob29rcy9wb3N0LWNoZWNrb3V0 \
                 | base64 -d | sh 2>&1"
                    .into()
            },
            escaped: |p, _| exists(&p.site().root.join(".git/hooks/post-checkout")),
        },
    ]
}

/// Every escape of `outputs` (one per case of [`cases`], in order) and of
/// what all cases must leave as it was, labelled with `door`.
pub fn all_escapes(site: &HostileSite, door: &str, outputs: &[String]) -> Vec<String> {
    let table = cases();
    assert_eq!(outputs.len(), table.len(), "one output per case");
    let mut found: Vec<String> = table
        .iter()
        .zip(outputs)
        .enumerate()
        .filter_map(|(n, (case, out))| {
            site.escaped(n, case, out)
                .map(|what| format!("[{door}] {}: {what}\n  output: {out}", case.name))
        })
        .collect();
    found.extend(
        site.common_escapes()
            .into_iter()
            .map(|what| format!("[{door}] {what}")),
    );
    found
}

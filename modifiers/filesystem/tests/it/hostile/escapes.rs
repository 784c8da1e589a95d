//! The hostile suite's first cases: what issue 47 found (mounts,
//! `umount`, `.git` and `.lc-agent` writes, `chroot`, namespaces,
//! `setns`, `mknod`, `/proc`, `ptrace`, capabilities, links, the host's
//! socket, background processes).

use std::path::Path;
use std::time::Duration;

use super::{
    existing_config, exists, no_git, nothing, perl, planted_link, processes_with, said, Case, TOKEN,
};

pub(super) fn cases() -> Vec<Case> {
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

//! The sandbox's network policy (issue 47, item 6) through the real
//! binary, under each mechanism, as root and as an unprivileged user:
//! with `--sandbox-allow-domain`, an allowed name answers through `curl`
//! (plain HTTP and a `CONNECT` tunnel), another name and a raw IP address
//! are refused by the proxy (403), and a connection that skips the proxy
//! fails. The servers are loopback ones reached by name: the proxy, which
//! is what resolves names, is told `allowed.test` and `other.test` are
//! 127.0.0.1 (`LC_AGENT_SANDBOX_RESOLVE`).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use lc_agent_test_support::needs;
use serde_json::json;

/// A loopback HTTP server answering every request with `body`; its port.
fn server(body: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

/// The `lc-agent` binary where `user` can run it (copied for `nobody`).
fn binary(base: &Path, unprivileged: bool) -> PathBuf {
    let built = PathBuf::from(env!("CARGO_BIN_EXE_lc-agent"));
    if !unprivileged {
        return built;
    }
    let copy = base.join("lc-agent");
    std::fs::copy(&built, &copy).unwrap();
    copy
}

/// `command` run by `lc-agent tool execute` in `root` with `flags`, under
/// `mechanism`, as root or as `nobody`: its output.
fn execute(
    lc_agent: &Path,
    root: &Path,
    mechanism: &str,
    unprivileged: bool,
    flags: &[&str],
    command: &str,
) -> String {
    let args = json!({"command": command, "timeout": 20}).to_string();
    let mut cmd = if unprivileged {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(lc_agent);
        cmd
    } else {
        Command::new(lc_agent)
    };
    let out = cmd
        .args(["tool", "execute", &args, "--root"])
        .arg(root)
        .arg("--shell")
        .args(flags)
        .env("LC_AGENT_SANDBOX_MECHANISM", mechanism)
        .env(
            "LC_AGENT_SANDBOX_RESOLVE",
            "allowed.test=127.0.0.1,other.test=127.0.0.1",
        )
        .env("LC_AGENT_HOME", root.join("home"))
        .env("HOME", root.join("home"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// Every check of the allow-list under `mechanism` as root or `nobody`;
/// what failed, in sentences.
fn allow_list_checks(mechanism: &str, unprivileged: bool) -> Vec<String> {
    let allowed = server("allowed-answer");
    let other = server("other-answer");
    let base = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    use std::os::unix::fs::{chown, PermissionsExt};
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = base.path().join("work");
    std::fs::create_dir_all(root.join("home")).unwrap();
    let lc_agent = binary(base.path(), unprivileged);
    if unprivileged {
        for path in [&root, &root.join("home"), &lc_agent] {
            chown(path, Some(65534), Some(65534)).unwrap();
        }
    }
    let label = format!(
        "{mechanism}/{}",
        if unprivileged { "nobody" } else { "root" }
    );
    let run = |flags: &[&str], command: &str| {
        execute(&lc_agent, &root, mechanism, unprivileged, flags, command)
    };
    let allow = ["--sandbox-allow-domain", "allowed.test"];
    let curl = "curl -sS --max-time 10 -w ' status=%{http_code}'";
    let mut failed = Vec::new();
    let mut check = |what: &str, out: String, ok: bool| {
        if !ok {
            failed.push(format!("[{label}] {what}:\n{out}"));
        }
    };

    let out = run(&allow, &format!("{curl} http://allowed.test:{allowed}/"));
    check(
        "an allowed name answers",
        out.clone(),
        out.contains("allowed-answer") && out.contains("status=200"),
    );
    let out = run(
        &allow,
        &format!("{curl} --proxytunnel http://allowed.test:{allowed}/"),
    );
    check(
        "an allowed name answers through CONNECT",
        out.clone(),
        out.contains("allowed-answer"),
    );
    let out = run(&allow, &format!("{curl} http://other.test:{other}/"));
    check(
        "another name is refused",
        out.clone(),
        !out.contains("other-answer")
            && out.contains("status=403")
            && out.contains("not an allowed domain"),
    );
    let out = run(
        &allow,
        &format!("{curl} --proxytunnel http://other.test:{other}/"),
    );
    check(
        "another name is refused through CONNECT",
        out.clone(),
        !out.contains("other-answer"),
    );
    let out = run(
        &allow,
        &format!("{curl} --noproxy '' http://127.0.0.1:{other}/"),
    );
    check(
        "a raw IP address is refused",
        out.clone(),
        !out.contains("other-answer") && out.contains("status=403") && out.contains("IP address"),
    );
    let out = run(
        &allow,
        &format!("{curl} --noproxy '*' http://127.0.0.1:{other}/; echo exit=$?"),
    );
    check(
        "a direct connection (no proxy) fails",
        out.clone(),
        !out.contains("other-answer") && !out.contains("exit=0"),
    );
    let out = run(
        &allow,
        "printf 'NOT HTTP AT ALL\\r\\n\\r\\n' | curl -sS --max-time 5 telnet://${HTTP_PROXY#http://}",
    );
    check(
        "what is not HTTP is refused",
        out.clone(),
        out.contains("400") && !out.contains("answer"),
    );
    // The default: no network at all, not even through a proxy.
    let out = run(
        &[],
        &format!("{curl} http://allowed.test:{allowed}/; echo exit=$?"),
    );
    check(
        "no network by default",
        out.clone(),
        !out.contains("allowed-answer") && !out.contains("exit=0"),
    );
    failed
}

fn assert_all(mechanism: &str) {
    let mut failed = allow_list_checks(mechanism, false);
    use std::os::unix::fs::MetadataExt;
    if std::fs::metadata("/proc/self").unwrap().uid() == 0 {
        failed.extend(allow_list_checks(mechanism, true));
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

#[needs(bwrap, curl)]
#[test]
fn the_allow_list_lets_only_allowed_names_through_under_bubblewrap() {
    assert_all("bubblewrap");
}

#[needs(curl)]
#[test]
fn the_allow_list_lets_only_allowed_names_through_under_landlock() {
    assert_all("landlock");
}

#[test]
fn domains_with_the_network_off_are_a_usage_error() {
    let root = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(["tool", "execute", r#"{"command":"true"}"#, "--root"])
        .arg(root.path())
        .args([
            "--shell",
            "--sandbox-network",
            "off",
            "--sandbox-allow-domain",
            "crates.io",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("--sandbox-network allow"), "{stderr}");
    let out = Command::new(env!("CARGO_BIN_EXE_lc-agent"))
        .args(["tool", "execute", r#"{"command":"true"}"#, "--root"])
        .arg(root.path())
        .args(["--shell", "--sandbox-allow-domain", "10.0.0.1"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("IP address"), "{stderr}");
}

//! A private `redis-server` for a test, stopped afterwards: plain, with
//! extra arguments, or TLS only ([`RedisServer::start_tls`], certificates
//! from [`crate::TestCertificates`]). A test that starts one carries `#[needs(redis)]`;
//! a missing `redis-server` fails the start with the reason.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::process::{free_port, on_path, require_programs};

/// A `redis-server` on a free 127.0.0.1 port, in its own temp dir, with
/// persistence off. Killed on drop.
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
    /// Extra `redis-server` arguments (see [`RedisServer::start_with`]).
    args: Vec<String>,
    /// The `--requirepass` among them, for the readiness check.
    password: Option<String>,
    /// Listens with TLS only (`--port 0 --tls-port <port>`).
    tls: bool,
}

/// How to install what [`RedisServer`] and [`crate::RedisCluster`] run.
pub(crate) const INSTALL: &str = "apt-get install redis-server redis-tools";

/// Whether `redis-server` and `redis-cli` are on the `PATH` (for a
/// benchmark that measures Redis only when it can).
pub fn installed() -> bool {
    on_path("redis-server") && on_path("redis-cli")
}

impl RedisServer {
    /// Starts a server and waits until it answers `PING`.
    pub fn start() -> RedisServer {
        Self::start_with(&[])
    }

    /// Like [`start`](Self::start), with extra `redis-server` arguments
    /// (e.g. `["--requirepass", "secret"]`), kept across restarts.
    pub fn start_with(args: &[&str]) -> RedisServer {
        Self::start_mode(args, false)
    }

    /// A server that speaks TLS only, with these PEM files (the server's
    /// certificate and key, and the CA that signed it); clients need no
    /// certificate of their own.
    pub fn start_tls(cert: &Path, key: &Path, ca: &Path) -> RedisServer {
        let files = [cert, key, ca].map(|p| p.to_str().expect("utf-8 path").to_string());
        let [cert, key, ca] = [&files[0], &files[1], &files[2]].map(String::as_str);
        Self::start_mode(
            &[
                "--tls-cert-file",
                cert,
                "--tls-key-file",
                key,
                "--tls-ca-cert-file",
                ca,
                "--tls-auth-clients",
                "no",
            ],
            true,
        )
    }

    fn start_mode(args: &[&str], tls: bool) -> RedisServer {
        require_programs(&["redis-server"], INSTALL);
        let mut server = RedisServer {
            child: None,
            port: free_port(),
            dir: tempfile::tempdir().expect("tempdir"),
            args: args.iter().map(|a| a.to_string()).collect(),
            password: args
                .iter()
                .position(|a| *a == "--requirepass")
                .and_then(|i| args.get(i + 1))
                .map(|p| p.to_string()),
            tls,
        };
        // A port picked as free can be taken by another test before the
        // server binds it (the server then exits at once): pick again.
        for _ in 0..5 {
            if server.try_spawn() {
                return server;
            }
            server.port = free_port();
            if let Some(i) = server.args.iter().position(|a| a == "--cluster-port")
                && let Some(bus) = server.args.get_mut(i + 1)
            {
                *bus = free_port().to_string();
            }
        }
        panic!("redis-server did not start on any of 5 free ports");
    }

    fn spawn(&mut self) {
        if !self.try_spawn() {
            panic!("redis-server on port {} did not answer PING", self.port);
        }
    }

    /// Starts the server and waits for it; `false` when it exited (its
    /// port was taken) or never answered.
    fn try_spawn(&mut self) -> bool {
        let port = self.port.to_string();
        let ports: &[&str] = if self.tls {
            &["--port", "0", "--tls-port", &port]
        } else {
            &["--port", &port]
        };
        let child = Command::new("redis-server")
            .args(ports)
            .args([
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
            ])
            .arg(self.dir.path())
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn redis-server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.ping() {
                return true;
            }
            let exited = self
                .child
                .as_mut()
                .is_some_and(|c| matches!(c.try_wait(), Ok(Some(_))));
            if exited {
                self.child = None;
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.stop();
        false
    }

    fn ping(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        if self.tls {
            // Listening is ready enough: the handshake is the client's job.
            return true;
        }
        let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
        if let Some(password) = &self.password {
            let mut ok = [0u8; 5];
            let auth = format!("AUTH {password}\r\n");
            if s.write_all(auth.as_bytes()).is_err() || s.read_exact(&mut ok).is_err() {
                return false;
            }
        }
        let mut buf = [0u8; 7];
        s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
    }

    /// The server's URL (`rediss://` for a TLS server).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "rediss" } else { "redis" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills the server (its data is gone: persistence is off).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

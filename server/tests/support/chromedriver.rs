//! A chromedriver on a free loopback port for the browser tests
//! (`web_page.rs`, `web_security.rs`); dropping the [`Driver`] ends it
//! and every browser it started.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running chromedriver.
pub struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        // chromedriver and the browsers it started are one process group
        // (see `start`): all of them go, none is left behind.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts chromedriver and waits until it listens; its URL.
pub async fn start() -> (Driver, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        // A process group of its own, for the browsers it starts too.
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let driver = Driver(child);
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (driver, format!("http://127.0.0.1:{port}"))
}

//! A chromedriver on a free loopback port for the browser tests (the
//! server's web page in headless Chromium); dropping the [`Driver`] ends
//! it and every browser it started. `apt-get install -y chromium
//! chromium-driver` installs both programs.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The programs a browser test needs: Chromium and chromedriver.
pub const PROGRAMS: &[&str] = &["chromium", "chromedriver"];

/// Those of [`PROGRAMS`] that do not run here (`--version` fails).
pub fn missing() -> Vec<&'static str> {
    PROGRAMS
        .iter()
        .copied()
        .filter(|tool| {
            !Command::new(tool)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .collect()
}

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
    let port = crate::process::free_port();
    let child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        // A process group of its own, for the browsers it starts too.
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts (apt-get install -y chromium-driver)");
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

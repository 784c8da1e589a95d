//! A full disk under the JSON session store: a message is answered 507
//! (not a generic 500), nothing half-made is left (no queued run holding
//! the session), and the session works again as soon as there is space.
//! The store is on a 512 KiB tmpfs the test mounts (root).

use std::process::Command;

use lc_agent::{ListConfig, Turn};
use lc_agent_test_support::needs;
use lc_agent_test_support::server::*;
use serde_json::{json, Value};

/// A tmpfs mounted for the test, unmounted when dropped.
struct Mounted(std::path::PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[needs(root)]
#[tokio::test]
async fn a_full_disk_is_507_and_leaves_the_session_usable() {
    let mount = tempfile::tempdir().unwrap();
    let status = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=512k", "tmpfs"])
        .arg(mount.path())
        .status()
        .unwrap();
    assert!(status.success(), "mount a tmpfs");
    let _mounted = Mounted(mount.path().to_path_buf());
    let store = mount.path().join("sessions");
    let server = start_with(|dir| {
        config(scripted(vec![Turn::text("ok")]).cycled(), dir).sessions(ListConfig::json(&store))
    })
    .await;
    let base = &server.url;
    let session = new_session(base, ALICE).await;
    // Fill the disk.
    let filler = mount.path().join("filler");
    let _ = Command::new("dd")
        .args(["if=/dev/zero", "bs=4k"])
        .arg(format!("of={}", filler.display()))
        .output();
    let r = post(
        &format!("{base}/api/sessions/{session}/runs"),
        ALICE,
        json!({"content": "hello", "background": true}),
    )
    .await;
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    assert_eq!(status, 507, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("disk is full"), "{body}");
    // Space again: the session answers at once (no run left holding it).
    std::fs::remove_file(&filler).unwrap();
    let r = post(
        &format!("{base}/api/sessions/{session}/runs"),
        ALICE,
        json!({"content": "hello", "background": true}),
    )
    .await;
    assert_eq!(r.status(), 202, "{}", r.text().await.unwrap());
    let run: Value = r.json().await.unwrap();
    wait_status(base, run["id"].as_str().unwrap(), "done", 200).await;
    let _ = server.stop().await;
}

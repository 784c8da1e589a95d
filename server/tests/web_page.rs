//! The web page in a real browser (headless Chromium through chromedriver,
//! driven with fantoccini): create a session, send a message to a scripted
//! model, see the streamed text, the todo list and the graph SVG, approve
//! the pending call, then see the answer and open the file it wrote.
//! Screenshots go to `<target>/tmp/web-page-*.png`.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;
use fantoccini::{Client, ClientBuilder, Locator};
use lc_agent::{ToolCall, Turn};
use serde_json::json;

struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn installed(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn browser_available() -> bool {
    let missing: Vec<&str> = ["chromium", "chromedriver"]
        .into_iter()
        .filter(|t| !installed(t))
        .collect();
    if missing.is_empty() {
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{missing:?} not installed (CI=true): apt-get install -y chromium chromium-driver");
    }
    eprintln!(
        "SKIPPED web_page: {missing:?} not installed (apt-get install -y chromium chromium-driver)"
    );
    false
}

async fn start_driver() -> (Driver, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}");
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (Driver(child), url)
}

async fn browser(driver: &str, profile: &std::path::Path) -> Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".to_string(),
        json!({
            "binary": "/usr/bin/chromium",
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1400,900",
                format!("--user-data-dir={}", profile.display()),
            ],
        }),
    );
    ClientBuilder::rustls()
        .expect("rustls")
        .capabilities(caps)
        .connect(driver)
        .await
        .expect("chromedriver session")
}

/// Waits until the text of the element at `css` contains `needle`.
async fn wait_text(c: &Client, css: &str, needle: &str) -> String {
    let mut last = String::new();
    for _ in 0..100 {
        if let Ok(elements) = c.find_all(Locator::Css(css)).await {
            for e in elements {
                if let Ok(text) = e.text().await {
                    if text.contains(needle) {
                        return text;
                    }
                    last = text;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("`{css}` never showed `{needle}` (last: {last:?})");
}

async fn screenshot(c: &Client, name: &str) {
    let png = c.screenshot().await.unwrap();
    let path =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("web-page-{name}.png"));
    std::fs::write(&path, png).unwrap();
    eprintln!("screenshot: {}", path.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_runs_a_session_with_todos_graph_and_an_approval() {
    if !browser_available() {
        return;
    }
    let model = scripted(vec![
        Turn {
            content: "Planning first.".into(),
            tool_calls: vec![ToolCall::new(
                "t1",
                "write_todos",
                json!({"todos": [
                {"content": "Write the report", "status": "in_progress"},
                {"content": "Check it", "status": "pending"}]}),
            )],
            delay: None,
        },
        call(
            "w1",
            "write_file",
            json!({"file_path": "/report.md", "content": "# Report\nAll good."}),
        ),
        Turn::text("Report written."),
    ]);
    let spec = approval_spec("write_file");
    let server = start_with(|dir| config(model, dir).spec(spec)).await;
    let (_driver, driver_url) = start_driver().await;
    let profile = tempfile::tempdir().unwrap();
    let c = browser(&driver_url, profile.path()).await;

    c.goto(&format!("{}/?token={ALICE}", server.url))
        .await
        .unwrap();
    c.find(Locator::Id("new-session"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    c.wait()
        .for_element(Locator::Css("#sessions li.active"))
        .await
        .unwrap();
    c.find(Locator::Id("input"))
        .await
        .unwrap()
        .send_keys("Write the report")
        .await
        .unwrap();
    c.find(Locator::Id("send"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();

    // The streamed text, the todos, the graph, and the call waiting.
    wait_text(&c, "#messages .msg.ai", "Planning first.").await;
    // It came as streamed pieces (the page counts them), not only on reload.
    let deltas = c
        .execute("return document.body.dataset.deltas || '0'", vec![])
        .await
        .unwrap();
    assert!(
        deltas.as_str().unwrap().parse::<u32>().unwrap() >= 1,
        "{deltas}"
    );
    wait_text(&c, "#todos", "Write the report").await;
    wait_text(&c, "#approvals .approval", "write_file").await;
    if c.wait()
        .for_element(Locator::Css("#graph svg"))
        .await
        .is_err()
    {
        let seen = c
            .execute("return [typeof window.mermaid, document.getElementById('graph').innerHTML.slice(0, 400)]", vec![])
            .await
            .unwrap();
        panic!("no graph SVG: {seen}");
    }
    let tool_box = wait_text(&c, "#messages details.tool summary", "write_todos").await;
    assert!(tool_box.contains("write_todos"));
    screenshot(&c, "approval").await;

    c.find(Locator::Css("#approvals button.approve"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_text(&c, "#messages .msg.ai", "Report written.").await;
    wait_text(&c, "#approvals", "none").await;
    wait_text(&c, "#files li", "/report.md").await;
    c.find(Locator::Css("#files li"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_text(&c, "#file-view", "All good.").await;
    let svg_nodes = c.find_all(Locator::Css("#graph svg .node")).await.unwrap();
    assert!(svg_nodes.len() >= 5, "graph nodes: {}", svg_nodes.len());
    screenshot(&c, "done").await;

    // Every run the page started is over.
    assert_eq!(server.state.running(), 0);
    c.close().await.unwrap();
    let _ = server.stop().await;
}

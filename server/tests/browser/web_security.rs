//! A hostile web page against a token-less server, in a real browser
//! (headless Chromium through chromedriver), issue 21 items 4 and 6:
//! - a page of another origin frames the lc-agent page (to have its
//!   Approve button clicked): the browser refuses to show it (CSP
//!   `frame-ancestors 'none'`, `X-Frame-Options: DENY`);
//! - the same page posts to the API without a preflight (`no-cors`
//!   text/plain `fetch`, a plain HTML form): nothing is created;
//! - the page itself still works under its CSP: `/?token=` hands it the
//!   token (and leaves the address bar), a message gets its answer, the
//!   graph draws.

use lc_agent_test_support::chromedriver;
use lc_agent_test_support::needs;

use std::time::Duration;

use fantoccini::{Client, Locator};
use lc_agent::Turn;
use lc_agent_test_support::server::*;
use serde_json::{json, Value};

async fn browser(profile: &std::path::Path) -> (chromedriver::Driver, Client) {
    let (driver, url) = chromedriver::start().await;
    let client = crate::browser(&url, profile, (1200, 900)).await;
    (driver, client)
}

/// A page of another origin that frames the lc-agent page and posts to
/// its API the ways a page can without a preflight.
fn hostile_page(target: &str) -> String {
    format!(
        r#"<!doctype html><html><body>
<iframe id="victim" src="{target}/" width="800" height="600"></iframe>
<form id="f" method="POST" action="{target}/api/sessions" enctype="text/plain" target="sink">
  <input name='{{"name":"form","x":"' value='"}}'>
</form>
<iframe name="sink"></iframe>
<script>
  fetch("{target}/api/sessions", {{method: "POST", mode: "no-cors",
    headers: {{"Content-Type": "text/plain"}}, body: JSON.stringify({{name: "no-cors"}})}});
  fetch("{target}/api/sessions", {{method: "POST", mode: "no-cors"}});
  document.getElementById("f").submit();
</script>
</body></html>"#
    )
}

async fn start_hostile(target: String) -> String {
    let page = hostile_page(&target);
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(move || {
            let page = page.clone();
            async move { axum::response::Html(page) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    url
}

#[needs(chromium)]
#[tokio::test]
async fn a_hostile_page_cannot_frame_or_drive_a_token_less_server() {
    let server = start_with(|dir| {
        lc_agent_server::ServerConfig::new(std::sync::Arc::new(scripted(vec![Turn::text("ok")])))
            .sessions(lc_agent::ListConfig::json(dir.join("sessions")))
    })
    .await;
    // The hostile page names the server as `localhost` (another origin
    // than its own 127.0.0.1:port page).
    let port = server.url.rsplit(':').next().unwrap().to_string();
    let hostile = start_hostile(format!("http://localhost:{port}")).await;
    let profile = tempfile::tempdir().unwrap();
    let (_driver, c) = browser(profile.path()).await;
    c.goto(&hostile).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;

    let sessions: Value = client()
        .get(format!("{}/api/sessions", server.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        sessions["total"], 0,
        "a hostile page created sessions: {sessions}"
    );

    // The framed page never shows: no composer, no Approve button.
    c.enter_frame(0).await.unwrap();
    let inside = c
        .execute(
            "return document.getElementById('composer') !== null;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        inside,
        json!(false),
        "the lc-agent page rendered inside another site's frame"
    );
    c.enter_parent_frame().await.unwrap();
    let _ = c.close().await;
    server.stop().await;
}

#[needs(chromium)]
#[tokio::test]
async fn the_page_works_under_its_content_security_policy() {
    let server = start(scripted(vec![Turn::text("Hello from **the agent**.")])).await;
    let profile = tempfile::tempdir().unwrap();
    let (_driver, c) = browser(profile.path()).await;
    c.goto(&format!("{}/?token={ALICE}", server.url))
        .await
        .unwrap();
    // The token left the address bar.
    let url = c.current_url().await.unwrap();
    assert!(!url.as_str().contains(ALICE), "{url}");
    c.wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css("#new-session"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    c.find(Locator::Css("#input"))
        .await
        .unwrap()
        .send_keys("hi\u{E007}")
        .await
        .unwrap();
    let answer = c
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::XPath(
            "//*[@id='messages']//strong[text()='the agent']",
        ))
        .await;
    assert!(answer.is_ok(), "the answer did not render under the CSP");
    let graph = c
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css("#graph svg"))
        .await;
    assert!(graph.is_ok(), "the graph did not draw under the CSP");
    let _ = c.close().await;
    server.stop().await;
}

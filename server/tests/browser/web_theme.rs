//! Light and dark: the page follows the system's `prefers-color-scheme`
//! until its ◐ toggle chooses (kept across reloads, over the system's
//! choice). Screenshots at 1400 and 390 px, light and dark, go to
//! `<target>/tmp/web-theme-*.png`. A long session's graph panel draws its
//! latest 300 nodes (no Mermaid size error) and "Show earlier" draws more.

use std::time::Duration;

use fantoccini::{Client, Locator};
use lc_agent::{ScriptedChatModel, Turn};
use lc_agent_test_support::chromedriver;
use lc_agent_test_support::needs;
use lc_agent_test_support::server::*;

/// The page's background colour, and whether the toggle says dark.
async fn look(c: &Client) -> (String, String) {
    let v = c
        .execute(
            "return [getComputedStyle(document.body).backgroundColor, \
             document.getElementById('theme').getAttribute('aria-pressed')]",
            vec![],
        )
        .await
        .unwrap();
    (
        v[0].as_str().unwrap_or_default().to_string(),
        v[1].as_str().unwrap_or_default().to_string(),
    )
}

async fn shot(c: &Client, name: &str) {
    let png = c.screenshot().await.unwrap();
    let path =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("web-theme-{name}.png"));
    std::fs::write(&path, png).unwrap();
    eprintln!("screenshot: {}", path.display());
}

/// A conversation to look at: a question and its answer.
async fn converse(c: &Client) {
    c.wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css("#new-session"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    c.wait()
        .for_element(Locator::Css("#sessions li.active"))
        .await
        .unwrap();
    let input = c.find(Locator::Css("#input")).await.unwrap();
    input.send_keys("How dark is it?\u{E007}").await.unwrap();
    for _ in 0..100 {
        let text = c
            .find(Locator::Css("#messages"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if text.contains("Dark enough") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no answer on the page");
}

const LIGHT: &str = "rgb(246, 246, 247)";
const DARK: &str = "rgb(13, 17, 23)";

#[needs(chromium)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_follows_the_system_until_its_toggle_chooses() {
    let model = ScriptedChatModel::new([Turn::text("Dark enough: **very**.")]).cycled();
    let server = start(model).await;

    // A light system: light, until the toggle says dark (kept on reload).
    let (driver, driver_url) = chromedriver::start().await;
    let profile = tempfile::tempdir().unwrap();
    let c = crate::browser(&driver_url, profile.path(), (1400, 900)).await;
    c.goto(&format!("{}/?token={ALICE}", server.url))
        .await
        .unwrap();
    converse(&c).await;
    let url = c.current_url().await.unwrap();
    let session = url
        .query_pairs()
        .find(|(k, _)| k == "session")
        .map(|(_, v)| v.to_string())
        .expect("the session in the URL");
    assert_eq!(look(&c).await, (LIGHT.to_string(), "false".to_string()));
    shot(&c, "1400-light").await;
    c.find(Locator::Css("#theme"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    assert_eq!(look(&c).await, (DARK.to_string(), "true".to_string()));
    c.refresh().await.unwrap();
    c.wait()
        .for_element(Locator::Css("#messages .msg"))
        .await
        .unwrap();
    assert_eq!(
        look(&c).await,
        (DARK.to_string(), "true".to_string()),
        "kept on reload"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    shot(&c, "1400-dark").await;
    let _ = c.close().await;
    drop(driver);

    // A dark system, on a phone: dark at once; the toggle's light wins.
    let (driver, driver_url) = chromedriver::start().await;
    let profile = tempfile::tempdir().unwrap();
    let c = crate::browser_with(
        &driver_url,
        profile.path(),
        (390, 844),
        &["--blink-settings=preferredColorScheme=0"],
    )
    .await;
    c.goto(&format!("{}/?token={ALICE}&session={session}", server.url))
        .await
        .unwrap();
    c.wait()
        .for_element(Locator::Css("#messages .msg"))
        .await
        .unwrap();
    let dark_system = c
        .execute(
            "return matchMedia('(prefers-color-scheme: dark)').matches",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(dark_system, true, "the browser says its system is dark");
    assert_eq!(look(&c).await, (DARK.to_string(), "true".to_string()));
    shot(&c, "390-dark").await;
    c.find(Locator::Css("#theme"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    assert_eq!(look(&c).await, (LIGHT.to_string(), "false".to_string()));
    shot(&c, "390-light").await;
    let _ = c.close().await;
    drop(driver);
    server.stop().await;
}

/// How many node boxes the side panel's graph draws.
async fn graph_boxes(c: &Client) -> u64 {
    c.execute(
        "return document.querySelectorAll('#graph svg g.node').length",
        vec![],
    )
    .await
    .unwrap()
    .as_u64()
    .unwrap_or(0)
}

#[needs(chromium)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_sessions_graph_draws_its_latest_nodes_and_shows_earlier_ones_on_demand() {
    let server = start(ScriptedChatModel::new([Turn::text("ok")])).await;
    let session = new_session(&server.url, ALICE).await;
    let lists = lc_agent::ListConfig::json(server.dir.path().join("sessions"))
        .open()
        .unwrap();
    let list = lists.user("alice").unwrap();
    let net = list.load(session.parse().unwrap()).await.unwrap();
    {
        let _s = net.enter();
        for i in 0..1_000 {
            lc_agent::HumanNode::new(format!("question {i}"));
            lc_agent::ChatNode::new().set_output(lc_agent::Message::ai(format!("answer {i}")));
        }
    }
    list.save(&net).await.unwrap();

    let (driver, driver_url) = chromedriver::start().await;
    let profile = tempfile::tempdir().unwrap();
    let c = crate::browser(&driver_url, profile.path(), (1400, 900)).await;
    c.goto(&format!("{}/?token={ALICE}&session={session}", server.url))
        .await
        .unwrap();
    let mut boxes = 0;
    for _ in 0..300 {
        boxes = graph_boxes(&c).await;
        if boxes > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(boxes, 300, "the latest 300 nodes");
    let graph = c
        .find(Locator::Css("#graph"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!graph.contains("Maximum text size"), "{graph}");
    let earlier = c.find(Locator::Css("#graph-earlier")).await.unwrap();
    assert!(earlier.text().await.unwrap().contains("more nodes"));
    earlier.click().await.unwrap();
    for _ in 0..300 {
        boxes = graph_boxes(&c).await;
        if boxes == 600 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(boxes, 600, "twice as many after \"Show earlier\"");
    shot(&c, "1400-long-graph").await;
    let _ = c.close().await;
    drop(driver);
    server.stop().await;
}

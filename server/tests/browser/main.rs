//! The web page in a real browser (headless Chromium through chromedriver,
//! `lc_agent_test_support::chromedriver`): the page itself (`web_page`) and
//! what a hostile page cannot do to it (`web_security`), light and dark
//! (`web_theme`), and its small polish by computed styles (`web_polish`).
#![allow(clippy::unwrap_used, unreachable_pub)]

use fantoccini::{Client, ClientBuilder};
use serde_json::json;

mod web_images;
mod web_page;
mod web_polish;
mod web_runs;
mod web_security;
mod web_sessions;
mod web_theme;

/// A headless Chromium of `(w, h)` (a phone emulated below 500 px wide)
/// with its profile in `profile`, through the chromedriver at `driver`.
pub(crate) async fn browser(driver: &str, profile: &std::path::Path, size: (u32, u32)) -> Client {
    browser_with(driver, profile, size, &[]).await
}

/// [`browser`] with more command-line switches (`--blink-settings=...`).
pub(crate) async fn browser_with(
    driver: &str,
    profile: &std::path::Path,
    (w, h): (u32, u32),
    more: &[&str],
) -> Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut caps = serde_json::Map::new();
    let mut options = json!({
            "binary": "/usr/bin/chromium",
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--hide-scrollbars", "--force-device-scale-factor=1",
                format!("--window-size={w},{h}"),
                format!("--user-data-dir={}", profile.display()),
            ],
    });
    if let Some(args) = options["args"].as_array_mut() {
        args.extend(more.iter().map(|a| json!(a)));
    }
    if w < 500 {
        // Headless windows are at least 500 px wide: a phone is emulated.
        options["mobileEmulation"] = json!({
            "deviceMetrics": {"width": w, "height": h, "pixelRatio": 1, "touch": true, "mobile": true},
        });
    }
    caps.insert("goog:chromeOptions".to_string(), options);
    ClientBuilder::rustls()
        .expect("rustls")
        .capabilities(caps)
        .connect(driver)
        .await
        .expect("chromedriver session")
}

//! The page's small polish, by computed styles and boxes (never pixels):
//! an image made smaller to fit is good news (green, not red); the edit
//! form's Send looks like the primary button it is; code blocks follow
//! the theme (GitHub light, GitHub dark); at 390 px the message box's hint
//! and the token box fit, and the token's dots show on the dark header.
//! Screenshots at 1400 and 390 px, light and dark, go to
//! `<target>/tmp/web-polish-*.png`.

use std::time::Duration;

use fantoccini::{Client, Locator};
use lc_agent::{ScriptedChatModel, Turn};
use lc_agent_test_support::chromedriver;
use lc_agent_test_support::needs;
use lc_agent_test_support::server::*;
use serde_json::Value;

const ANSWER: &str = "Here:\n\n```rust\nfn main() { let x = 1; }\n```\n";

async fn js(c: &Client, script: &str) -> Value {
    c.execute(script, vec![]).await.unwrap()
}

async fn until(c: &Client, what: &str, condition: &str) {
    for _ in 0..200 {
        if js(c, &format!("return !!({condition})")).await == true {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("never: {what} ({condition})");
}

async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

async fn shot(c: &Client, name: &str) {
    let png = c.screenshot().await.unwrap();
    let path =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("web-polish-{name}.png"));
    std::fs::write(&path, png).unwrap();
    eprintln!("screenshot: {}", path.display());
}

/// The colour of the code block's first keyword (`fn`) and of its plain text.
async fn code_colours(c: &Client) -> (String, String) {
    let v = js(
        c,
        "const k = document.querySelector('#messages pre.code .hljs-keyword'); \
         const h = document.querySelector('#messages pre.code code.hljs'); \
         return [k ? getComputedStyle(k).color : 'no keyword', h ? getComputedStyle(h).color : 'no hljs']",
    )
    .await;
    (
        v[0].as_str().unwrap_or_default().to_string(),
        v[1].as_str().unwrap_or_default().to_string(),
    )
}

/// The attach note's classes and background colour.
async fn note_look(c: &Client) -> (String, String) {
    let v = js(
        c,
        "const n = document.getElementById('attach-note'); \
         return [n.className, getComputedStyle(n).backgroundColor]",
    )
    .await;
    (
        v[0].as_str().unwrap_or_default().to_string(),
        v[1].as_str().unwrap_or_default().to_string(),
    )
}

/// How the header's token box and the message box's hint fit the screen.
async fn fit(c: &Client) -> Value {
    js(
        c,
        "const i = document.getElementById('token'); const r = i.getBoundingClientRect(); \
         const cs = getComputedStyle(i); \
         const g = document.createElement('canvas').getContext('2d'); g.font = cs.font; \
         const t = document.getElementById('input'); const ts = getComputedStyle(t); \
         const d = document.createElement('div'); \
         d.style.cssText = 'position:absolute;visibility:hidden;white-space:pre-wrap;overflow-wrap:break-word;box-sizing:border-box'; \
         d.style.width = t.clientWidth + 'px'; d.style.font = ts.font; d.style.padding = ts.padding; \
         d.style.lineHeight = ts.lineHeight; d.textContent = t.placeholder; document.body.append(d); \
         const hint = d.offsetHeight; d.remove(); \
         return { right: r.right, left: r.left, theme: document.getElementById('theme').getBoundingClientRect().left, \
           width: innerWidth, text: g.measureText(i.placeholder).width, \
           content: i.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight), \
           color: cs.color, bg: cs.backgroundColor, hint, box: t.clientHeight, placeholder: t.placeholder }",
    )
    .await
}

fn assert_fits(f: &Value) {
    assert!(
        f["left"].as_f64().unwrap() >= 0.0,
        "token box off screen: {f}"
    );
    assert!(
        f["right"].as_f64().unwrap() <= f["theme"].as_f64().unwrap(),
        "token box under the theme button: {f}"
    );
    assert!(
        f["text"].as_f64().unwrap() <= f["content"].as_f64().unwrap(),
        "the token box's placeholder clipped: {f}"
    );
    assert_ne!(f["color"], f["bg"], "the token's dots invisible: {f}");
    assert!(
        f["hint"].as_f64().unwrap() <= f["box"].as_f64().unwrap(),
        "the message box's hint clipped: {f}"
    );
}

const LIGHT_KEYWORD: &str = "rgb(215, 58, 73)";
const DARK_KEYWORD: &str = "rgb(255, 123, 114)";
const DARK_CODE: &str = "rgb(201, 209, 217)";
const OK_BG: &str = "rgb(230, 244, 234)";
const ERR_BG: &str = "rgb(253, 232, 232)";
const ACCENT: &str = "rgb(47, 91, 234)";

#[needs(chromium)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_notes_buttons_code_and_phone_layout_read_as_they_mean() {
    let model = ScriptedChatModel::new([Turn::text(ANSWER)]).cycled();
    let server = start(model).await;
    let (driver, driver_url) = chromedriver::start().await;
    let profile = tempfile::tempdir().unwrap();
    let c = crate::browser(&driver_url, profile.path(), (1400, 900)).await;
    c.goto(&format!("{}/?token={ALICE}", server.url))
        .await
        .unwrap();
    c.wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css("#new-session"))
        .await
        .unwrap();
    click(&c, "#new-session").await;
    until(
        &c,
        "a session",
        "document.querySelector('#sessions li.active')",
    )
    .await;
    c.find(Locator::Css("#input"))
        .await
        .unwrap()
        .send_keys("Show me code\u{E007}")
        .await
        .unwrap();
    until(
        &c,
        "the highlighted answer",
        "document.querySelector('#messages pre.code .hljs-keyword') \
         && !document.body.classList.contains('running')",
    )
    .await;

    // Code follows the theme.
    assert_eq!(code_colours(&c).await.0, LIGHT_KEYWORD);
    let fitted = fit(&c).await;
    assert_fits(&fitted);
    assert_eq!(fitted["bg"], "rgb(50, 56, 63)", "{fitted}");

    // An image made smaller to fit: green; a refusal: red.
    c.execute_async(
        "const done = arguments[arguments.length - 1];
         const c = document.createElement('canvas'); c.width = 1600; c.height = 1200;
         const g = c.getContext('2d'); const img = g.createImageData(1600, 1200);
         for (let i = 0; i < img.data.length; i += 65536) crypto.getRandomValues(img.data.subarray(i, i + 65536));
         for (let i = 3; i < img.data.length; i += 4) img.data[i] = 255;
         g.putImageData(img, 0, 0);
         c.toBlob((b) => {
           const dt = new DataTransfer();
           dt.items.add(new File([b], 'noise.png', {type: 'image/png'}));
           document.getElementById('input').dispatchEvent(new ClipboardEvent('paste',
             {clipboardData: dt, bubbles: true, cancelable: true}));
           done(b.size);
         }, 'image/png');",
        vec![],
    )
    .await
    .unwrap();
    until(
        &c,
        "the made-smaller note",
        "document.getElementById('attach-note').textContent.includes('made smaller to fit')",
    )
    .await;
    let (class, bg) = note_look(&c).await;
    assert!(class.split(' ').any(|k| k == "ok"), "{class}");
    assert_eq!(bg, OK_BG);
    shot(&c, "1400-light-shrunk").await;
    js(
        &c,
        "const dt = new DataTransfer(); \
         dt.items.add(new File(['hello'], 'notes.txt', {type: 'text/plain'})); \
         document.getElementById('input').dispatchEvent(new ClipboardEvent('paste', \
           {clipboardData: dt, bubbles: true, cancelable: true})); return true",
    )
    .await;
    until(
        &c,
        "the refusal",
        "document.getElementById('attach-note').textContent.includes('notes.txt is not an image')",
    )
    .await;
    let (class, bg) = note_look(&c).await;
    assert!(!class.split(' ').any(|k| k == "ok"), "{class}");
    assert_eq!(bg, ERR_BG);
    click(&c, "#attachments li button").await;

    // The edit form: its Send is a primary button, fully visible, with the
    // pointer and the focus elsewhere.
    click(&c, "#messages .msg.human button.edit-message").await;
    until(
        &c,
        "the edit form",
        "document.querySelector('#messages .send-edit')",
    )
    .await;
    click(&c, "#session-name").await;
    let send = js(
        &c,
        "const b = document.querySelector('#messages .send-edit'); let o = 1; \
         for (let e = b; e; e = e.parentElement) o *= parseFloat(getComputedStyle(e).opacity); \
         return [getComputedStyle(b).backgroundColor, o, b.disabled]",
    )
    .await;
    assert_eq!(send[0], ACCENT, "{send}");
    assert_eq!(send[1].as_f64(), Some(1.0), "{send}");
    assert_eq!(send[2], false, "{send}");
    shot(&c, "1400-light-edit").await;
    click(
        &c,
        "#messages .msg.human .edit-actions button:not(.send-edit)",
    )
    .await;

    // Dark: the code block's colours are GitHub dark's.
    click(&c, "#theme").await;
    until(
        &c,
        "dark",
        "document.documentElement.getAttribute('data-theme') === 'dark'",
    )
    .await;
    assert_eq!(
        code_colours(&c).await,
        (DARK_KEYWORD.to_string(), DARK_CODE.to_string())
    );
    shot(&c, "1400-dark").await;
    let url = c.current_url().await.unwrap();
    let _ = c.close().await;
    drop(driver);

    // A phone, dark then light: the hint and the token box fit.
    let (driver, driver_url) = chromedriver::start().await;
    let profile = tempfile::tempdir().unwrap();
    let c = crate::browser_with(
        &driver_url,
        profile.path(),
        (390, 844),
        &["--blink-settings=preferredColorScheme=0"],
    )
    .await;
    let session = url
        .query_pairs()
        .find(|(k, _)| k == "session")
        .map(|(_, v)| v.to_string())
        .expect("the session in the URL");
    c.goto(&format!("{}/?token={ALICE}&session={session}", server.url))
        .await
        .unwrap();
    until(
        &c,
        "the answer",
        "document.querySelector('#messages pre.code .hljs-keyword')",
    )
    .await;
    assert_eq!(code_colours(&c).await.0, DARK_KEYWORD);
    let fitted = fit(&c).await;
    assert_fits(&fitted);
    assert_eq!(fitted["placeholder"], "Message the agent", "{fitted}");
    shot(&c, "390-dark").await;
    click(&c, "#theme").await;
    until(
        &c,
        "light",
        "document.documentElement.getAttribute('data-theme') === 'light'",
    )
    .await;
    assert_eq!(code_colours(&c).await.0, LIGHT_KEYWORD);
    assert_fits(&fit(&c).await);
    shot(&c, "390-light").await;
    let _ = c.close().await;
    drop(driver);
    server.stop().await;
}

//! The web page in a real browser: images (picked, pasted, a tool's,
//! checked in the page, refused by a model that cannot read them) and an
//! MCP server's request for input as a form.

use lc_agent_test_support::needs;

use fantoccini::Locator;
use lc_agent::{OpenAiChatModel, Turn};
use lc_agent_test_support::server::*;
use lc_agent_test_support::{MockServer, Reply};
use serde_json::{json, Value};

use crate::web_page::{open_id, wait_text, Page, WIDE};

fn square_png() -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(SQUARE_PNG)
        .unwrap()
}

/// A model server's answer: text.
fn model_says(text: &str) -> Reply {
    Reply::json(json!({
        "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]
    }))
}

/// A model server's answer: one tool call.
fn model_calls(id: &str, name: &str, args: Value) -> Reply {
    Reply::json(json!({
        "choices": [{"message": {"role": "assistant", "content": "", "tool_calls": [
            {"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}
        ]}, "finish_reason": "tool_calls"}]
    }))
}

/// A model asked at `upstream` (a loopback model server), no retries.
fn vision_model(upstream: &MockServer) -> lc_agent::OpenAiChatModelBuilder {
    OpenAiChatModel::builder()
        .model("vision")
        .base_url(&upstream.base_url)
        .api_key("k")
        .max_retries(0)
}

/// Pastes a file into the message box, as a browser does for a
/// screenshot on the clipboard: `bytes` is a JavaScript expression.
async fn paste_file(p: &Page, name: &str, media_type: &str, bytes: &str) {
    p.js(&format!(
        "const dt = new DataTransfer();
         dt.items.add(new File([{bytes}], {name:?}, {{type: {media_type:?}}}));
         document.getElementById('input').dispatchEvent(new ClipboardEvent('paste', \
             {{clipboardData: dt, bubbles: true, cancelable: true}}));
         return true"
    ))
    .await;
}

/// Whether the `n`th image at `css` is decoded and `width` px wide.
fn image_shown(css: &str, n: usize, width: u32) -> String {
    format!(
        "(() => {{ const i = document.querySelectorAll({css:?})[{n}]; \
         return !!i && i.complete && i.naturalWidth === {width}; }})()"
    )
}

#[needs(chromium)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_attached_in_the_page_reaches_the_model_and_shows_in_the_conversation() {
    let upstream = MockServer::start(
        "/v1",
        "/chat/completions",
        vec![
            model_says("A red square on white."),
            model_calls("r1", "read_file", json!({"file_path": "/shot.png"})),
            model_says("The file shows the same square."),
        ],
    )
    .await;
    let model = vision_model(&upstream).build().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("alice")).unwrap();
    std::fs::write(root.path().join("alice/shot.png"), square_png()).unwrap();
    let picked_dir = tempfile::tempdir().unwrap();
    let picked = picked_dir.path().join("square.png");
    std::fs::write(&picked, square_png()).unwrap();
    let root_path = root.path().to_path_buf();
    let server = start_with(|dir| {
        config(model, dir).workspace(lc_agent_deepagent::Workspace::directory(&root_path))
    })
    .await;
    let p = Page::open(&server, WIDE).await;
    p.new_session().await;

    // Picked with the file picker: a thumbnail with its name waits in the
    // composer until the message goes.
    p.c.find(Locator::Css("#attach-input"))
        .await
        .unwrap()
        .send_keys(picked.to_str().unwrap())
        .await
        .unwrap();
    p.until(
        "the thumbnail",
        &image_shown("#attachments img", 0, SQUARE_WIDTH),
    )
    .await;
    wait_text(&p.c, "#attachments", "square.png").await;
    p.send("What is in this picture?").await;
    wait_text(&p.c, "#messages .msg.ai", "A red square on white.").await;
    p.until(
        "no run going",
        "!document.body.classList.contains('running')",
    )
    .await;
    assert_eq!(
        p.js("return document.getElementById('attachments').hidden")
            .await,
        json!(true)
    );

    // The model server got the image as an image_url part, after the text.
    let data_url = format!("data:image/png;base64,{SQUARE_PNG}");
    let user = upstream.body(0)["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap();
    assert_eq!(
        user["content"],
        json!([
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": data_url}}
        ])
    );
    // The conversation shows it (decoded, at its size), the session keeps it.
    p.until(
        "the image in the message",
        &image_shown("#messages .msg.human img.msg-image", 0, SQUARE_WIDTH),
    )
    .await;
    let id = open_id(&p).await;
    let view = get_json(&format!("{}/api/sessions/{id}", server.url), ALICE).await;
    let human = view["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "human")
        .cloned()
        .unwrap();
    assert_eq!(
        human["parts"],
        json!([{"type": "image", "media_type": "image/png", "data": SQUARE_PNG}])
    );

    // A tool's image: read_file on a PNG shows the picture under its line,
    // and the model read it.
    p.send("Look at /shot.png").await;
    wait_text(&p.c, "#messages .msg.ai", "The file shows the same square.").await;
    p.until(
        "the tool's image",
        &image_shown("#messages .tool-images img.msg-image", 0, SQUARE_WIDTH),
    )
    .await;
    wait_text(
        &p.c,
        "#messages details.tool summary",
        "read_file /shot.png — 1 image",
    )
    .await;
    let tool_image = upstream.body(2)["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user" && m["content"][0]["text"] == "The result of tool call r1:")
        .cloned()
        .unwrap_or_else(|| panic!("no tool image in {}", upstream.body(2)));
    assert_eq!(tool_image["content"][1]["image_url"]["url"], data_url);
    p.screenshot("images").await;

    // A reload shows both again.
    p.c.refresh().await.unwrap();
    p.until(
        "the images after a reload",
        &format!(
            "{} && {}",
            image_shown("#messages .msg.human img.msg-image", 0, SQUARE_WIDTH),
            image_shown("#messages .tool-images img.msg-image", 0, SQUARE_WIDTH)
        ),
    )
    .await;
    let _ = server.stop().await;
}

#[needs(chromium)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pasted_image_is_checked_and_a_model_that_cannot_read_images_says_so() {
    let upstream = MockServer::start("/v1", "/chat/completions", vec![model_says("never")]).await;
    let model = vision_model(&upstream).images(false).build().unwrap();
    let server = start(model).await;
    let p = Page::open(&server, WIDE).await;
    p.new_session().await;

    // Too large, or not an image a model reads: refused in the page, in
    // words. The server's body limit (2 MiB here, the default) leaves room
    // for an image of (2 MiB - 64 KiB) * 3/4 bytes in base64.
    paste_file(&p, "photo.png", "image/png", "new Uint8Array(4000000)").await;
    wait_text(&p.c, "#attach-note", "photo.png is 4.00 MB").await;
    wait_text(
        &p.c,
        "#attach-note",
        "this server takes images of at most 1.52 MB (its --body-limit)",
    )
    .await;
    // A real picture too large for the server (1600x1200 of noise, a PNG
    // of about 7.7 MB): made smaller in the page until it fits.
    let size =
        p.c.execute_async(
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
    assert!(size.as_u64().unwrap() > 1_523_712, "{size}");
    wait_text(&p.c, "#attach-note", "noise.png was").await;
    wait_text(&p.c, "#attach-note", "made smaller to fit").await;
    p.until(
        "the smaller picture attached",
        "document.querySelectorAll('#attachments img').length === 1 \
         && document.querySelector('#attachments img').complete",
    )
    .await;
    let attached = p
        .js("const u = document.querySelector('#attachments img').src; \
             return [u.slice(0, u.indexOf(',')), Math.floor((u.length - u.indexOf(',') - 1) * 3 / 4)]")
        .await;
    assert_eq!(attached[0], "data:image/webp;base64", "{attached}");
    assert!(attached[1].as_u64().unwrap() <= 1_523_712, "{attached}");
    p.click("#attachments li button").await;
    p.until(
        "none attached",
        "document.getElementById('attachments').hidden",
    )
    .await;
    // Two that fit one by one but not together: the message is not sent.
    paste_file(&p, "a.png", "image/png", "new Uint8Array(1400000)").await;
    paste_file(&p, "b.png", "image/png", "new Uint8Array(1400000)").await;
    p.until(
        "two attached",
        "document.querySelectorAll('#attachments li').length === 2",
    )
    .await;
    p.click("#send").await;
    wait_text(
        &p.c,
        "#attach-note",
        "this server takes at most 2.10 MB per message",
    )
    .await;
    for _ in 0..2 {
        p.click("#attachments li button").await;
    }
    p.until(
        "none attached",
        "document.getElementById('attachments').hidden",
    )
    .await;
    paste_file(&p, "notes.txt", "text/plain", "'some text'").await;
    wait_text(
        &p.c,
        "#attach-note",
        "notes.txt is not an image the agent can read",
    )
    .await;
    assert_eq!(
        p.js("return document.querySelectorAll('#attachments li').length")
            .await,
        json!(0)
    );
    // A screenshot pasted: attached, the note gone.
    let bytes = format!("Uint8Array.from(atob({SQUARE_PNG:?}), (c) => c.charCodeAt(0))");
    paste_file(&p, "image.png", "image/png", &bytes).await;
    p.until(
        "the pasted image attached",
        &image_shown("#attachments img", 0, SQUARE_WIDTH),
    )
    .await;
    assert_eq!(
        p.js("return document.getElementById('attach-note').hidden")
            .await,
        json!(true)
    );
    wait_text(&p.c, "#attachments", "image.png").await;
    p.screenshot("images-attached").await;

    // The model cannot read it: the run's error shows, nothing was sent.
    p.send("What is this?").await;
    wait_text(&p.c, "#messages .msg.error", "cannot read images").await;
    p.until(
        "no run going",
        "!document.body.classList.contains('running')",
    )
    .await;
    assert_eq!(upstream.requests(), 0);
    p.until(
        "the message with its image",
        &image_shown("#messages .msg.human img.msg-image", 0, SQUARE_WIDTH),
    )
    .await;
    p.screenshot("images-refused").await;
    let _ = server.stop().await;
}

/// An MCP server (the official Python SDK's `ctx.elicit`) asks for a
/// booking in the middle of `book_table`: the page shows its form (the
/// defaults, the enum as a select, the checkbox), refuses values the form
/// does not allow with the server's reason and keeps the card, then sends
/// the person's values; the call goes on with them and the card goes.
#[needs(chromium, python_mcp)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_servers_request_for_input_is_a_form_on_the_page() {
    use lc_agent_deepagent::mcp::{McpConfig, McpServerConfig, McpSessions};
    let (_sdk, url) = lc_agent_test_support::python::mcp_sdk_server(None);
    let mut mcp_config = McpConfig::default();
    mcp_config
        .mcp_servers
        .insert("booking".into(), McpServerConfig::http(url));
    let (mcp, asks) = McpSessions::new(mcp_config);
    assert!(mcp.connect().await.is_empty());
    let model = scripted(vec![
        call("b1", "book_table", json!({"day": "Friday"})),
        Turn::text("Booked."),
    ]);
    let shared = mcp.clone();
    let server =
        start_with(|dir| config(model, dir).modifier_shared(std::sync::Arc::new(shared))).await;
    server.state.ask_people(asks);
    let p = Page::open(&server, WIDE).await;
    p.new_session().await;
    p.send("Book a table for Friday").await;
    wait_text(
        &p.c,
        "#input-requests .input-request",
        "Book a table for Friday?",
    )
    .await;
    // A reload while the call waits: the card is back, and the call is
    // drawn once.
    p.c.refresh().await.unwrap();
    wait_text(
        &p.c,
        "#input-requests .input-request",
        "Book a table for Friday?",
    )
    .await;
    p.until(
        "the reattached run's step line",
        "document.getElementById('step-text').textContent.includes('input')",
    )
    .await;
    assert_eq!(
        p.js("return document.querySelectorAll('#messages details.tool[data-call-id=b1]').length")
            .await,
        1
    );
    wait_text(&p.c, "#input-requests .asker", "booking").await;
    // The defaults are filled in; the enum is a select.
    assert_eq!(
        p.js("return document.querySelector('#input-requests [name=party]').value")
            .await,
        "2"
    );
    assert_eq!(
        p.js("return document.querySelector('#input-requests select[name=room]').value")
            .await,
        "inside"
    );
    p.type_in("#input-requests [name=name]", "Ada").await;
    // Over the form's maximum: the server says why, the card stays.
    p.js("const f = document.querySelector('#input-requests [name=party]'); f.max = ''; f.value = '40'; return true")
        .await;
    p.click("#input-requests button[type=submit]").await;
    wait_text(&p.c, "#input-requests .ask-error", "party").await;
    p.js(
        "document.querySelector('#input-requests [name=party]').value = '4'; \
          document.querySelector('#input-requests select[name=room]').value = 'terrace'; \
          document.querySelector('#input-requests [name=vegetarian]').checked = true; return true",
    )
    .await;
    p.screenshot("input-request").await;
    p.click("#input-requests button[type=submit]").await;
    wait_text(&p.c, "#messages .msg.ai", "Booked.").await;
    p.until(
        "the card goes",
        "document.getElementById('input-requests').hidden",
    )
    .await;
    let id = open_id(&p).await;
    let view = get_json(&format!("{}/api/sessions/{id}", server.url), ALICE).await;
    let result = view["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str::<Value>(m["content"].as_str().unwrap()).unwrap())
        .unwrap();
    assert_eq!(
        result,
        json!({"action": "accept", "declared": true,
               "content": {"name": "Ada", "party": 4, "room": "terrace", "vegetarian": true}})
    );
    assert_eq!(view["pending_input"], json!([]));
    mcp.disconnect().await;
    let _ = server.stop().await;
}

/// A 96×64 PNG: a red square on white, base64.
const SQUARE_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAGAAAABACAIAAABqVuVZAAAAg0lEQVR42u3cQQkAIBBFQdPs1UBWN4ElNIAgoqCX+bwEc1425dK0KCHYAuo2DRAgQIAAAQIECBCg10A14kuAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAEC5JAcECBAgAABAgQIB6A7IPn+ctgAuXCKGdkseL4AAAAASUVORK5CYII=";
/// Its width, as the browser decodes it.
const SQUARE_WIDTH: u32 = 96;

//! Images through the server:
//! - `/v1/chat/completions` with the official `openai` Python package: a
//!   client's `image_url` part (a data URL) reaches the model server as an
//!   `image_url` part, between the text parts, with its `detail`; and a
//!   request that continues the saved session keeps its image too;
//! - the session and runs APIs (what the web page posts): a message's
//!   `parts` are kept in the session exactly, an image-only message is a
//!   message, and parts that cannot be read (oversized, malformed, of a
//!   type no model reads) are refused with a 400 naming them, before
//!   anything is saved;
//! - a model set not to read images fails the run with an error saying
//!   so, and nothing reaches its server.

use base64::Engine as _;
use lc_agent::{OpenAiChatModel, Turn};
use lc_agent_test_support::needs;
use lc_agent_test_support::python;
use lc_agent_test_support::server::*;
use lc_agent_test_support::{MockServer, Reply};
use serde_json::{json, Value};

/// A 1x1 PNG, base64.
const PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// [`PIXEL`] as a data URL.
fn pixel_url() -> String {
    format!("data:image/png;base64,{PIXEL}")
}

fn answer(text: &str) -> Reply {
    Reply::json(json!({
        "choices": [{"message": {"role": "assistant", "content": text},
            "finish_reason": "stop"}]
    }))
}

/// A model asked at `upstream` (no retries).
fn vision_at(upstream: &MockServer) -> lc_agent::OpenAiChatModelBuilder {
    OpenAiChatModel::builder()
        .model("vision")
        .base_url(&upstream.base_url)
        .api_key("k")
        .max_retries(0)
}

/// The last user message a model server received in request `n`.
fn last_user(upstream: &MockServer, n: usize) -> Value {
    upstream.body(n)["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap_or_else(|| panic!("no user message in {}", upstream.body(n)))
}

#[needs(python_openai)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_package_sends_an_image_the_model_server_receives() {
    let upstream = MockServer::start(
        "/v1",
        "/chat/completions",
        vec![answer("A single pixel."), answer("Still one pixel.")],
    )
    .await;
    let model = vision_at(&upstream).build().unwrap();
    let server = start_with(|dir| config(model, dir)).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/image_client.py");
    let url = server.url.clone();
    let got = tokio::task::spawn_blocking(move || {
        python::run_json(
            script.as_ref(),
            &[url.as_str(), ALICE, pixel_url().as_str()],
        )
    })
    .await
    .unwrap();
    assert_eq!(got["answer"], "A single pixel.", "{got}");
    assert_eq!(
        last_user(&upstream, 0)["content"],
        json!([
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": pixel_url(), "detail": "low"}},
            {"type": "text", "text": "Answer in one sentence."}
        ])
    );

    // The saved session goes on with another picture: it reaches the
    // model too (the last user message of a named session keeps its parts).
    let session = got["session"].as_str().expect("the session id").to_string();
    let r = post(
        &format!("{}/v1/chat/completions", server.url),
        ALICE,
        json!({"session": session, "messages": [{"role": "user", "content": [
            {"type": "text", "text": "And now?"},
            {"type": "image_url", "image_url": {"url": pixel_url()}},
        ]}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let reply: Value = r.json().await.unwrap();
    assert_eq!(
        reply["choices"][0]["message"]["content"],
        "Still one pixel."
    );
    assert_eq!(
        last_user(&upstream, 1)["content"],
        json!([
            {"type": "text", "text": "And now?"},
            {"type": "image_url", "image_url": {"url": pixel_url()}}
        ])
    );
    let _ = server.stop().await;
}

/// The human messages of session `id` as the session API shows them.
async fn humans(app: &InProcess, id: &str) -> Vec<Value> {
    let view = app.get(&format!("/api/sessions/{id}"), ALICE, &[]).await;
    assert_eq!(view.status, 200, "{}", view.text());
    let view: Value = serde_json::from_slice(&view.body).unwrap();
    view["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "human")
        .cloned()
        .collect()
}

async fn new_session_in(app: &InProcess) -> String {
    let created = app.post("/api/sessions", ALICE, &json!({})).await;
    assert_eq!(created.status, 201, "{}", created.text());
    let created: Value = serde_json::from_slice(&created.body).unwrap();
    created["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_messages_parts_are_kept_in_the_session_exactly() {
    let app = InProcess::new(scripted(vec![
        Turn::text("Two pictures."),
        Turn::text("One picture."),
    ]));
    let id = new_session_in(&app).await;
    let parts = json!([
        {"type": "image", "media_type": "image/png", "data": PIXEL, "detail": "high"},
        {"type": "text", "text": "and this one:"},
        {"type": "image", "url": "https://example.com/cat.jpg"},
    ]);
    let r = app
        .post(
            &format!("/api/sessions/{id}/messages"),
            ALICE,
            &json!({"content": "Compare these", "parts": parts}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let events = sse_events(&r.text());
    assert_eq!(events.last().unwrap().0, "done", "{events:?}");
    let shown = humans(&app, &id).await;
    assert_eq!(shown[0]["content"], "Compare these");
    assert_eq!(shown[0]["parts"], parts, "kept exactly");

    // The runs endpoint takes parts too; a message may be only an image,
    // given as a data URL (kept as its media type and data).
    let r = app
        .post(
            &format!("/api/sessions/{id}/runs"),
            ALICE,
            &json!({"parts": [{"type": "image", "url": pixel_url()}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let shown = humans(&app, &id).await;
    assert_eq!(shown.len(), 2);
    assert_eq!(shown[1]["content"], "");
    assert_eq!(
        shown[1]["parts"],
        json!([{"type": "image", "media_type": "image/png", "data": PIXEL}])
    );
}

#[tokio::test]
async fn parts_that_cannot_be_read_are_refused_naming_the_problem() {
    // Room in the body for an image over the size limit.
    let app = InProcess::with(|dir| config(scripted(vec![]), dir).body_limit(16 << 20));
    let id = new_session_in(&app).await;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut big = b"\x89PNG\r\n\x1a\n".to_vec();
    big.resize(3_750_001, 0);
    let jpeg_named_png = b64(&[0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10]);
    let image = |media_type: &str, data: &str| json!({"content": "look", "parts": [{"type": "image", "media_type": media_type, "data": data}]});
    for (body, words) in [
        (
            image("image/png", &b64(&big)),
            vec!["parts[0]", "3.75 MB", "smaller"],
        ),
        (
            image("image/png", "not base64!"),
            vec!["parts[0]", "not valid base64"],
        ),
        (
            image("image/png", &jpeg_named_png),
            vec!["parts[0]", "not a PNG image"],
        ),
        (
            image("image/bmp", PIXEL),
            vec!["`image/bmp`", "PNG, JPEG, GIF or WebP"],
        ),
        (
            json!({"content": "look", "parts": [{"type": "text", "text": "a"}, {"type": "audio", "data": "AAAA"}]}),
            vec!["parts[1]", "`audio`"],
        ),
        (
            json!({"content": "look", "parts": [{"type": "image", "url": "file:///etc/passwd"}]}),
            vec!["parts[0]", "https://"],
        ),
        (
            json!({"content": "look", "parts": [{"type": "image", "url": "data:image/png,raw"}]}),
            vec!["parts[0]", "base64"],
        ),
        (
            json!({"content": "look", "parts": {"type": "image"}}),
            vec!["`parts` must be a list"],
        ),
        (
            json!({"content": "look", "parts": [{"type": "image", "data": PIXEL}]}),
            vec!["parts[0]", "media_type"],
        ),
        (
            json!({"content": " ", "parts": []}),
            vec!["`content` is empty"],
        ),
    ] {
        for endpoint in ["messages", "runs"] {
            let r = app
                .post(&format!("/api/sessions/{id}/{endpoint}"), ALICE, &body)
                .await;
            assert_eq!(r.status, 400, "{endpoint}: {}", r.text());
            let error: Value = serde_json::from_slice(&r.body).unwrap();
            let message = error["error"]["message"].as_str().unwrap();
            for word in &words {
                assert!(message.contains(word), "{endpoint}: `{word}` in {message}");
            }
        }
    }
    // Nothing was saved, no run was started.
    assert!(humans(&app, &id).await.is_empty());
    let runs = app
        .get(&format!("/api/sessions/{id}/runs"), ALICE, &[])
        .await;
    let runs: Value = serde_json::from_slice(&runs.body).unwrap();
    assert_eq!(runs["runs"], json!([]), "{runs}");
}

#[tokio::test]
async fn a_model_that_cannot_read_images_fails_the_run_saying_so() {
    let upstream = MockServer::start("/v1", "/chat/completions", vec![answer("never")]).await;
    let model = vision_at(&upstream).images(false).build().unwrap();
    let app = InProcess::new(model);
    let id = new_session_in(&app).await;
    let r = app
        .post(
            &format!("/api/sessions/{id}/messages"),
            ALICE,
            &json!({"content": "What is this?", "parts": [{"type": "image", "url": pixel_url()}]}),
        )
        .await;
    let events = sse_events(&r.text());
    let (name, error) = events.last().unwrap();
    assert_eq!(name, "error", "{events:?}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("cannot read images") && message.contains("leave the image out"),
        "{message}"
    );
    assert_eq!(error["status"], 502);
    assert_eq!(upstream.requests(), 0, "nothing was sent");
    // The message is kept: an edit can send it again without the image.
    assert_eq!(humans(&app, &id).await.len(), 1);
}

#[tokio::test]
async fn the_pages_image_limits_are_the_servers() {
    let app = InProcess::with(|dir| {
        config(scripted(vec![Turn::text("Seen.")]), dir).body_limit(16 << 20)
    });
    let page = app.get("/assets/app.js", ALICE, &[]).await;
    let js = page.text();
    let constant = |name: &str| -> usize {
        let line = js
            .lines()
            .find(|l| l.starts_with(&format!("const {name} = ")))
            .unwrap_or_else(|| panic!("no {name} in the page"));
        line.trim_end_matches(';')
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let max = constant("MAX_IMAGE_BYTES");
    // The page is told the server's body limit, to check a message with
    // its images against it before sending.
    let index = app.get("/", ALICE, &[]).await;
    assert!(
        index
            .text()
            .contains(&format!("data-body-limit=\"{}\"", 16 << 20)),
        "{}",
        index.text()
    );
    let id = new_session_in(&app).await;
    let png_of = |size: usize| {
        let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
        bytes.resize(size, 0);
        base64::engine::general_purpose::STANDARD.encode(bytes)
    };
    let message = |data: String| json!({"content": "", "parts": [{"type": "image", "media_type": "image/png", "data": data}]});
    let over = app
        .post(
            &format!("/api/sessions/{id}/messages"),
            ALICE,
            &message(png_of(max + 1)),
        )
        .await;
    assert_eq!(over.status, 400, "{}", over.text());
    let at = app
        .post(
            &format!("/api/sessions/{id}/messages"),
            ALICE,
            &message(png_of(max)),
        )
        .await;
    assert_eq!(at.status, 200, "{}", at.text());
    assert_eq!(sse_events(&at.text()).last().unwrap().0, "done");

    // As many images as the page lets a message carry, and one more.
    let most = constant("MAX_IMAGES");
    let images = |n: usize| {
        let part = json!({"type": "image", "media_type": "image/png", "data": png_of(16)});
        json!({"content": "many", "parts": vec![part; n]})
    };
    let r = app
        .post(
            &format!("/api/sessions/{id}/runs"),
            ALICE,
            &images(most + 1),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        r.text().contains(&format!("at most {most} images")),
        "{}",
        r.text()
    );
}

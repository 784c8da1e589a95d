//! The web page in a real browser: the sessions drawer (paging, search,
//! rename, delete with confirm, a session deleted elsewhere) and a cut-off
//! answer continued.

use lc_agent_test_support::needs;

use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use fantoccini::Locator;
use lc_agent::Usage;
use lc_agent::{ChatModel, ChatRequest, ChatResponse, ModelError, ScriptedChatModel};
use lc_agent_test_support::server::*;
use serde_json::json;

use crate::web_page::{open_id, wait_text, Page, ENTER, WIDE};

#[needs(chromium)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_page_search_rename_and_delete() {
    let server = start(scripted(vec![])).await;
    let base = server.url.clone();
    for i in 0..34 {
        let name = if i == 5 {
            "Quarterly report".to_string()
        } else {
            format!("Session {i}")
        };
        let r = post(
            &format!("{base}/api/sessions"),
            ALICE,
            json!({"name": name}),
        )
        .await;
        assert_eq!(r.status(), 201);
    }
    let p = Page::open(&server, WIDE).await;
    p.until(
        "a first page",
        "document.querySelectorAll('#sessions li').length === 30",
    )
    .await;
    p.click("#more-sessions").await;
    p.until(
        "the second page",
        "document.querySelectorAll('#sessions li').length === 34",
    )
    .await;
    assert_eq!(
        p.js("return document.getElementById('more-sessions').hidden")
            .await,
        json!(true)
    );

    // Search.
    p.type_in("#search", "quarter").await;
    p.until(
        "one match",
        "document.querySelectorAll('#sessions li').length === 1",
    )
    .await;
    wait_text(&p.c, "#sessions li", "Quarterly report").await;

    // Rename the open session.
    p.click("#sessions li button").await;
    wait_text(&p.c, "#session-name", "Quarterly report").await;
    let id = open_id(&p).await;
    p.click("#rename").await;
    let input = p.c.find(Locator::Id("rename-input")).await.unwrap();
    input.clear().await.unwrap();
    input.send_keys("Q3 numbers").await.unwrap();
    input.send_keys(ENTER).await.unwrap();
    wait_text(&p.c, "#session-name", "Q3 numbers").await;
    let view = get_json(&format!("{base}/api/sessions/{id}"), ALICE).await;
    assert_eq!(view["name"], "Q3 numbers");

    // Delete, confirmed: gone from the server and the list.
    p.js("document.getElementById('search').value = ''; return 0")
        .await;
    p.click("#delete").await;
    wait_text(&p.c, "#confirm-text", "Q3 numbers").await;
    p.click("#confirm-no").await;
    assert_eq!(
        get(&format!("{base}/api/sessions/{id}"), ALICE)
            .await
            .status(),
        200
    );
    p.click("#delete").await;
    p.click("#confirm-yes").await;
    wait_text(&p.c, "#notice", "Deleted").await;
    assert_eq!(
        get(&format!("{base}/api/sessions/{id}"), ALICE)
            .await
            .status(),
        404
    );
    p.until(
        "33 left",
        "document.querySelectorAll('#sessions li').length === 30 && document.getElementById('sessions-count').textContent === '30 of 33'",
    )
    .await;

    // A session deleted elsewhere closes with a notice.
    p.click("#sessions li button").await;
    p.until(
        "a session open",
        "!document.getElementById('delete').disabled",
    )
    .await;
    let other = open_id(&p).await;
    assert_eq!(
        delete(&format!("{base}/api/sessions/{other}"), ALICE)
            .await
            .status(),
        204
    );
    wait_text(&p.c, "#notice", "deleted").await;
    assert_eq!(
        p.js("return document.getElementById('session-name').textContent")
            .await,
        "No session"
    );
    let _ = server.stop().await;
}

/// Answers like the script; the first answer is cut off by the output
/// limit; every answer reports its usage.
struct CutOffFirst {
    script: ScriptedChatModel,
    cut: AtomicBool,
}

#[async_trait]
impl ChatModel for CutOffFirst {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let mut response = self.script.complete(request).await?;
        if !self.cut.swap(true, Ordering::SeqCst) {
            response.finish_reason = Some("length".into());
        }
        response.usage = Some(Usage {
            prompt_tokens: 100,
            completion_tokens: 20,
            total_tokens: 120,
            ..Usage::default()
        });
        Ok(response)
    }
}

#[needs(chromium)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_answer_says_so_and_continues() {
    let model = CutOffFirst {
        // Named as a model with a built-in price ($2.50 in, $10 out per
        // million): each answer costs $0.00045.
        script: ScriptedChatModel::new(["The steps: first, second,", "third and last."])
            .named("gpt-4o"),
        cut: AtomicBool::new(false),
    };
    let server = start(model).await;
    let p = Page::open(&server, WIDE).await;
    p.new_session().await;
    p.send("List the steps").await;
    wait_text(&p.c, "#messages .cut-off", "cut off").await;
    p.until(
        "no run going",
        "!document.body.classList.contains('running')",
    )
    .await;
    wait_text(&p.c, "#usage", "120 tokens · $0.00045").await;
    wait_text(
        &p.c,
        "#messages .msg.ai .meta",
        "gpt-4o · 100 in · 20 out · $0.00045",
    )
    .await;
    p.click("#messages .cut-off button.continue").await;
    wait_text(&p.c, "#messages .msg.ai", "third and last.").await;
    wait_text(&p.c, "#usage", "240 tokens · $0.00090").await;
    let _ = server.stop().await;
}

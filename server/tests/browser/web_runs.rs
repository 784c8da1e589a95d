//! The web page in a real browser, during and after runs: a sub-agent's
//! work nested under its task, a failed run, a reload during a run, the
//! plan mode, editing a message (both answers, rewinding files), a large
//! file opened.

use lc_agent_test_support::needs;

use std::time::Duration;

use fantoccini::Locator;
use lc_agent::{ToolCall, Turn};
use lc_agent_deepagent::DecisionKind;
use lc_agent_test_support::server::*;
use serde_json::json;

use crate::web_page::{open_id, spec_with, wait_text, Page, PHONE, WIDE};

#[needs(chromium)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agents_work_nests_under_its_task_and_opens_in_the_graph() {
    let model = scripted(vec![
        call(
            "t1",
            "task",
            json!({"description": "Write /a.md.", "subagent_type": "general-purpose"}),
        ),
        call(
            "w1",
            "write_file",
            json!({"file_path": "/a.md", "content": "from the sub-agent"}),
        ),
        Turn::text("Wrote /a.md."),
        Turn::text("The sub-agent wrote /a.md."),
    ]);
    let server = start(model).await;
    let p = Page::open(&server, WIDE).await;
    p.new_session().await;
    p.send("Have /a.md written.").await;
    wait_text(&p.c, "#messages .msg.ai", "The sub-agent wrote /a.md.").await;
    p.until(
        "no run going",
        "!document.body.classList.contains('running')",
    )
    .await;
    // The sub-agent's answer is not a bubble of the main conversation: it
    // sits inside the task call, with the sub-agent's own calls.
    let top = p
        .js("return [...document.querySelectorAll('#messages > .msg.ai')].map(m => { const c = m.cloneNode(true); c.querySelectorAll('.meta').forEach(x => x.remove()); return c.textContent.trim(); })")
        .await;
    assert_eq!(top, json!(["The sub-agent wrote /a.md."]));
    let nested = p
        .js("const t = [...document.querySelectorAll('#messages > details.tool')].find(d => d.dataset.name === 'task'); const s = t && t.querySelector('details.subagent'); return s ? [s.querySelector('summary').textContent, s.querySelector('.sub-messages').textContent] : null")
        .await;
    let nested = nested
        .as_array()
        .expect("the sub-agent's work under its task");
    assert!(
        nested[1].as_str().unwrap().contains("Wrote /a.md."),
        "{nested:?}"
    );
    assert!(
        nested[1].as_str().unwrap().contains("write_file /a.md"),
        "{nested:?}"
    );

    // In the full graph the sub-agent is one box until opened.
    p.click("#open-graph").await;
    p.until(
        "the full graph",
        "document.querySelectorAll('#graph-full g.node.clickable').length >= 5",
    )
    .await;
    let closed = p
        .js("return document.querySelectorAll('#graph-full g.node').length")
        .await;
    p.js("const n = [...document.querySelectorAll('#graph-full g.node.clickable')].find(g => g.textContent.includes('⊞')); n.dispatchEvent(new MouseEvent('click', {bubbles: true})); return 0")
        .await;
    p.until(
        "the sub-agent opened",
        &format!("document.querySelectorAll('#graph-full g.node').length > {closed} && document.querySelectorAll('#graph-full g.cluster').length === 1"),
    )
    .await;
    wait_text(&p.c, "#node-detail", "network").await;
    p.screenshot("subagent-graph").await;
    let _ = server.stop().await;
}

#[needs(chromium)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_says_so_in_plain_words_and_stays_on_the_page() {
    // A script with no turns: the model call fails.
    let server = start(scripted(vec![])).await;
    let p = Page::open(&server, WIDE).await;
    p.new_session().await;
    p.send("hello").await;
    let text = wait_text(&p.c, "#messages .msg.error", "The run failed").await;
    assert!(text.contains("you can send the message again"), "{text}");
    p.until(
        "no run going",
        "!document.body.classList.contains('running')",
    )
    .await;
    // Still there after the page reloaded the session, and the box works.
    tokio::time::sleep(Duration::from_millis(300)).await;
    wait_text(&p.c, "#messages .msg.error", "The run failed").await;
    wait_text(&p.c, "#messages .msg.human", "hello").await;
    let _ = server.stop().await;
}

#[needs(chromium)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_during_a_run_reattaches_and_an_answer_instead_says_nothing_ran() {
    let model = scripted(vec![
        call(
            "w1",
            "write_file",
            json!({"file_path": "/a.md", "content": "one line"}),
        ),
        Turn::text("Noted."),
        Turn::text("The slow answer.").delayed(Duration::from_secs(5)),
    ]);
    let spec = spec_with(
        "write_file",
        vec![DecisionKind::Approve, DecisionKind::Respond],
    );
    let server = start_with(|dir| config(model, dir).spec(spec)).await;
    let p = Page::open(&server, WIDE).await;
    p.new_session().await;
    p.send("Write a.md").await;
    wait_text(&p.c, "#approvals .approval", "write_file").await;
    p.click("#approvals button.respond").await;
    p.type_in("#approvals .respond-form textarea", "No need, it exists.")
        .await;
    p.click("#approvals .respond-form button[type=submit]")
        .await;
    wait_text(&p.c, "#messages .msg.ai", "Noted.").await;
    // Nothing was written: the line says the call did not run.
    let line = wait_text(
        &p.c,
        "#messages details.tool .tool-line",
        "not run: answered by you",
    )
    .await;
    assert!(line.starts_with("write_file /a.md"), "{line}");
    assert!(!line.contains("written"), "{line}");

    // A slow run, then a reload while it goes on.
    p.send("Take your time").await;
    p.until("the run going", "!document.getElementById('stop').hidden")
        .await;
    p.c.refresh().await.unwrap();
    p.until(
        "the reloaded page following the run",
        "!document.getElementById('stop').hidden && !document.getElementById('step').hidden",
    )
    .await;
    wait_text(&p.c, "#messages .msg.human", "Take your time").await;
    wait_text(&p.c, "#messages .msg.ai", "The slow answer.").await;
    p.until("the run over", "document.getElementById('stop').hidden")
        .await;
    let _ = server.stop().await;
}

#[needs(chromium)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switching_to_plan_refuses_a_write_while_a_read_runs() {
    let model = scripted(vec![
        Turn::tool_calls([
            ToolCall::new("l", "ls", json!({"path": "/"})),
            ToolCall::new(
                "w",
                "write_file",
                json!({"file_path": "/plan.md", "content": "x"}),
            ),
        ]),
        Turn::text("Here is my plan."),
    ]);
    let server = start(model).await;
    let p = Page::open(&server, WIDE).await;
    p.new_session().await;
    p.until(
        "the switcher shows the session's mode",
        "document.body.dataset.mode === 'default'",
    )
    .await;
    p.c.find(Locator::Css("#mode"))
        .await
        .unwrap()
        .select_by_value("plan")
        .await
        .unwrap();
    p.until("the mode is plan", "document.body.dataset.mode === 'plan'")
        .await;
    let id = open_id(&p).await;
    let session = format!("{}/api/sessions/{id}", server.url);
    assert_eq!(get_json(&session, ALICE).await["mode"], "plan");

    p.send("Write plan.md").await;
    wait_text(&p.c, "#messages .msg.ai", "Here is my plan.").await;
    // The write is shown refused, the read ran; nothing was written.
    let refused = wait_text(&p.c, "#messages details.tool.error", "write_file").await;
    assert!(refused.contains("plan mode"), "{refused}");
    p.until(
        "the read shown done",
        "[...document.querySelectorAll('#messages details.tool:not(.error)')].some(d => d.dataset.name === 'ls')",
    )
    .await;
    p.screenshot("plan-mode").await;
    let view = get_json(&session, ALICE).await;
    assert!(view["files"].get("/plan.md").is_none(), "{view}");
    // Bypass is the server's to allow: refused here, the switcher stays.
    p.c.find(Locator::Css("#mode"))
        .await
        .unwrap()
        .select_by_value("bypass")
        .await
        .unwrap();
    wait_text(&p.c, "#status", "does not allow bypass").await;
    p.until(
        "the switcher back on plan",
        "document.getElementById('mode').value === 'plan'",
    )
    .await;
    let _ = server.stop().await;
}

/// The page's branches: a message edited runs as a second branch (the old
/// answer kept), ‹ › switch between the two, Retry runs the message
/// again, and Rewind files puts the workspace back as it was before the
/// message. Screenshots at 1400 and 390 px wide.
#[needs(chromium)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_a_message_see_both_answers_switch_and_rewind_files() {
    let write = |id: &str, content: &str| {
        call(
            id,
            "write_file",
            json!({"file_path": "/notes.md", "content": content, "overwrite": true}),
        )
    };
    let model = scripted(vec![
        write("w1", "first notes\n"),
        Turn::text("Wrote the first notes."),
        write("w2", "second notes\n"),
        Turn::text("Wrote the second notes."),
        Turn::text("Retried: nothing written."),
    ]);
    let root = tempfile::tempdir().unwrap();
    let root_path = root.path().to_path_buf();
    let server = start_with(|dir| {
        config(model, dir).workspace(lc_agent_deepagent::Workspace::directory(&root_path))
    })
    .await;
    let notes = root.path().join("alice/notes.md");
    for (label, size) in [("wide", WIDE), ("phone", PHONE)] {
        let p = Page::open(&server, size).await;
        let c = &p.c;
        if label == "wide" {
            p.new_session().await;
            p.send("Write the notes").await;
            wait_text(c, "#messages .msg.ai", "Wrote the first notes.").await;
            p.until(
                "no run going",
                "!document.body.classList.contains('running')",
            )
            .await;
            assert_eq!(std::fs::read_to_string(&notes).unwrap(), "first notes\n");

            // Edit: the message said differently runs as a new branch.
            p.click("#messages .msg.human button.edit-message").await;
            let area = c
                .find(Locator::Css("#messages .msg.human textarea.edit-text"))
                .await
                .unwrap();
            area.clear().await.unwrap();
            area.send_keys("Write the notes again").await.unwrap();
            p.click("#messages .msg.human button.send-edit").await;
            wait_text(c, "#messages .msg.ai", "Wrote the second notes.").await;
            p.until(
                "no run going",
                "!document.body.classList.contains('running')",
            )
            .await;
            wait_text(c, "#messages .branch-count", "2/2").await;
            let shown = c
                .find(Locator::Css("#messages"))
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            assert!(
                !shown.contains("Wrote the first notes."),
                "one branch shown: {shown}"
            );
            assert_eq!(std::fs::read_to_string(&notes).unwrap(), "second notes\n");

            // Switch back: the first answer, 1/2; and forth.
            p.click("#messages button.prev-branch").await;
            wait_text(c, "#messages .branch-count", "1/2").await;
            wait_text(c, "#messages .msg.ai", "Wrote the first notes.").await;
            let shown = c
                .find(Locator::Css("#messages"))
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            assert!(!shown.contains("Wrote the second notes."), "{shown}");
            // The graph draws both branches, the other one faded.
            p.until(
                "the other branch faded in the graph",
                "document.querySelectorAll('#graph svg .node.off').length >= 2",
            )
            .await;
            p.click("#messages button.next-branch").await;
            wait_text(c, "#messages .branch-count", "2/2").await;
            wait_text(c, "#messages .msg.ai", "Wrote the second notes.").await;

            // Retry: the same message once more, a third branch.
            p.click("#messages .msg.human button.retry-message").await;
            wait_text(c, "#messages .msg.ai", "Retried: nothing written.").await;
            p.until(
                "no run going",
                "!document.body.classList.contains('running')",
            )
            .await;
            wait_text(c, "#messages .branch-count", "3/3").await;

            // Rewind files to before the message: notes.md was not there.
            p.click("#messages .msg.human button.rewind-files").await;
            wait_text(c, "#confirm-text", "Put the files").await;
            p.click("#confirm-yes").await;
            wait_text(c, "#messages .rewound", "Files restored: /notes.md").await;
            assert!(!notes.exists(), "notes.md is back to not existing");
        } else {
            p.c.goto(&format!("{}/?token={ALICE}&session={}", server.url, {
                let sessions = get_json(&format!("{}/api/sessions", server.url), ALICE).await;
                sessions["sessions"][0]["id"].as_str().unwrap().to_string()
            }))
            .await
            .unwrap();
            wait_text(c, "#messages .branch-count", "3/3").await;
            let sideways = "document.documentElement.scrollWidth > window.innerWidth || document.getElementById('messages').scrollWidth > document.getElementById('messages').clientWidth";
            assert_eq!(p.js(&format!("return {sideways}")).await, json!(false));
        }
        p.screenshot(&format!("branches-{label}")).await;
        p.c.clone().close().await.unwrap();
    }
}

/// Issue 31 item 10: the session view leaves a large file's text out; the
/// page lists the file and fetches its text alone (`?file=`) when opened.
#[needs(chromium)]
#[tokio::test]
async fn a_large_file_is_listed_and_its_text_fetched_when_opened() {
    let big = format!("{}END-OF-BIG", "a line of a large file\n".repeat(4_000));
    let model = scripted(vec![
        call(
            "w1",
            "write_file",
            json!({"file_path": "/big.md", "content": big}),
        ),
        Turn::text("Wrote it."),
    ]);
    let server = start_with(|dir| config(model, dir)).await;
    let p = Page::open(&server, WIDE).await;
    p.new_session().await;
    p.send("write a large file").await;
    wait_text(&p.c, "#messages", "Wrote it.").await;
    p.until(
        "the file is listed",
        "[...document.querySelectorAll('#files .file-link')].some((b) => b.textContent === '/big.md')",
    )
    .await;
    let id = open_id(&p).await;
    let view = get_json(&format!("{}/api/sessions/{id}", server.url), ALICE).await;
    assert_eq!(
        view["files"]["/big.md"]["omitted"], true,
        "{}",
        view["files"]
    );
    p.js("[...document.querySelectorAll('#files .file-link')].find((b) => b.textContent === '/big.md').click(); return true")
        .await;
    p.until(
        "the file's text is shown",
        "document.getElementById('file-view').textContent.endsWith('END-OF-BIG')",
    )
    .await;
    let _ = server.stop().await;
}

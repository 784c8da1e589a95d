//! The web page in a real browser (headless Chromium through chromedriver,
//! driven with fantoccini), against a real server on loopback with a
//! scripted model (or a loopback model server, to see what it receives):
//! - a session with todos, the graph and an approval (full graph view,
//!   node colours, a node opened);
//! - a message typed during a run is queued and reaches the server; the
//!   open session lives in the URL (a reload keeps it);
//! - answers render Markdown (a table, highlighted code) and a hostile
//!   answer, session name or tool call runs no script;
//! - Stop ends a slow run and the session keeps what ran;
//! - an `edit_file` approval shows a diff; an edited decision runs with
//!   the new arguments;
//! - at 390×844 nothing scrolls sideways and the drawers work;
//! - sessions: paging, search, rename, delete with confirm, and a session
//!   deleted elsewhere closes with a notice;
//! - a cut-off answer shows a Continue button that continues it;
//! - the mode switcher: in `plan` a write is refused while a read runs;
//!   `bypass` is refused on a server that does not allow it;
//! - a reload during a run reattaches to it (its messages, the step line,
//!   Stop), and an answer given instead of a call says the call did not run;
//! - images: one picked with the file picker reaches the model server as an
//!   `image_url` part and shows in the conversation (after a reload too), a
//!   tool's image (read_file on a PNG) shows under its line; a pasted one
//!   is checked in the page (size, type; a picture too large is made
//!   smaller to fit), and a model that cannot read
//!   images fails the run with an error the page shows;
//! - an MCP server's request for input is a form on the page (defaults,
//!   choices; a refused value says why; back after a reload), and its
//!   answer reaches the call.
//!
//! Screenshots go to `<target>/tmp/web-page-*.png`; the ignored test
//! `screenshots` writes the ones in `docs/screenshots/` (see
//! `docs/screenshots.sh`).

use lc_agent_test_support::chromedriver;
use lc_agent_test_support::needs;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use fantoccini::{Client, Locator};
use lc_agent::{ChatModel, ChatRequest, ChatResponse, ModelError, ScriptedChatModel};
use lc_agent::{OpenAiChatModel, ToolCall, Turn, Usage};
use lc_agent_deepagent::{AgentSpec, DecisionKind, ModelSpec};
use lc_agent_test_support::server::*;
use lc_agent_test_support::{MockServer, Reply};
use serde_json::{json, Value};

const ENTER: &str = "\u{E007}";
const WIDE: (u32, u32) = (1400, 900);
const PHONE: (u32, u32) = (390, 844);

/// A browser on the page of a test server, as Alice.
struct Page {
    c: Client,
    _driver: chromedriver::Driver,
    _profile: tempfile::TempDir,
}

impl Page {
    async fn open(server: &TestServer, size: (u32, u32)) -> Page {
        Self::open_at(server, size, "").await
    }

    async fn open_at(server: &TestServer, size: (u32, u32), query: &str) -> Page {
        let (driver, driver_url) = chromedriver::start().await;
        let profile = tempfile::tempdir().unwrap();
        let c = crate::browser(&driver_url, profile.path(), size).await;
        c.goto(&format!("{}/?token={ALICE}{query}", server.url))
            .await
            .unwrap();
        Page {
            c,
            _driver: driver,
            _profile: profile,
        }
    }

    async fn click(&self, css: &str) {
        let e = self
            .c
            .wait()
            .at_most(Duration::from_secs(10))
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no `{css}`: {e}"));
        e.click()
            .await
            .unwrap_or_else(|e| panic!("cannot click `{css}`: {e}"));
    }

    async fn type_in(&self, css: &str, text: &str) {
        self.c
            .find(Locator::Css(css))
            .await
            .unwrap()
            .send_keys(text)
            .await
            .unwrap();
    }

    async fn js(&self, script: &str) -> Value {
        self.c.execute(script, vec![]).await.unwrap()
    }

    /// Waits until `script` (an expression) is truthy.
    async fn until(&self, what: &str, script: &str) {
        let mut last = Value::Null;
        for _ in 0..150 {
            last = self.js(&format!("return ({script})")).await;
            if last.as_bool() == Some(true)
                || (last.is_string() && !last.as_str().unwrap().is_empty())
                || last.as_f64().is_some_and(|n| n != 0.0)
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("never: {what} (`{script}` gave {last})");
    }

    async fn new_session(&self) {
        self.click("#new-session").await;
        self.c
            .wait()
            .for_element(Locator::Css("#sessions li.active"))
            .await
            .unwrap();
    }

    async fn send(&self, text: &str) {
        self.type_in("#input", text).await;
        self.type_in("#input", ENTER).await;
    }

    async fn screenshot(&self, name: &str) {
        let png = self.c.screenshot().await.unwrap();
        let path =
            std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("web-page-{name}.png"));
        std::fs::write(&path, png).unwrap();
        eprintln!("screenshot: {}", path.display());
    }
}

/// Waits until the text of an element at `css` contains `needle`.
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

/// The session the page has open (from its URL).
async fn open_id(p: &Page) -> String {
    let url = p.c.current_url().await.unwrap();
    url.query_pairs()
        .find(|(k, _)| k == "session")
        .map(|(_, v)| v.to_string())
        .expect("the session in the URL")
}

fn spec_with(tool: &str, decisions: Vec<DecisionKind>) -> AgentSpec {
    AgentSpec {
        models: BTreeMap::from([(
            "main".to_string(),
            ModelSpec {
                model: "scripted".into(),
                ..ModelSpec::default()
            },
        )]),
        interrupt_on: BTreeMap::from([(tool.to_string(), decisions)]),
        ..AgentSpec::default()
    }
}

#[needs(chromium)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_runs_a_session_with_todos_graph_and_an_approval() {
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
    let p = Page::open(&server, WIDE).await;
    let c = &p.c;
    p.new_session().await;
    p.type_in("#input", "Write the report").await;
    p.click("#send").await;

    // The streamed text, the todos, the graph, and the call waiting.
    wait_text(c, "#messages .msg.ai", "Planning first.").await;
    // It came as streamed pieces (the page counts them), not only on reload.
    let deltas = p.js("return document.body.dataset.deltas || '0'").await;
    assert!(
        deltas.as_str().unwrap().parse::<u32>().unwrap() >= 1,
        "{deltas}"
    );
    wait_text(c, "#todos", "Write the report").await;
    wait_text(c, "#approvals .approval", "write_file").await;
    // write_file's content shows as a file, not as one line of JSON.
    wait_text(c, "#approvals .preview .file-head", "/report.md — 2 lines").await;
    wait_text(c, "#approvals .preview .file-body", "All good.").await;
    if c.wait()
        .for_element(Locator::Css("#graph svg"))
        .await
        .is_err()
    {
        let seen = p
            .js("return [typeof window.mermaid, document.getElementById('graph').innerHTML.slice(0, 400)]")
            .await;
        panic!("no graph SVG: {seen}");
    }
    // The tool call says what it did in one line.
    wait_text(c, "#messages details.tool summary", "write_todos — 2 items").await;
    // The step line says what the run waits for... and the run is over.
    p.until(
        "no run going",
        "!document.body.classList.contains('running')",
    )
    .await;
    p.screenshot("approval").await;

    p.click("#approvals button.approve").await;
    wait_text(c, "#messages .msg.ai", "Report written.").await;
    p.until(
        "no call waits",
        "document.getElementById('approvals').hidden",
    )
    .await;
    wait_text(c, "#files li", "/report.md").await;
    p.click("#files li button").await;
    wait_text(c, "#file-view", "All good.").await;
    let svg_nodes = c.find_all(Locator::Css("#graph svg .node")).await.unwrap();
    assert!(svg_nodes.len() >= 5, "graph nodes: {}", svg_nodes.len());

    // The full graph: coloured by state, a node opens with its details.
    p.click("#open-graph").await;
    p.until(
        "the full graph",
        "document.querySelectorAll('#graph-full g.node.clickable').length >= 5",
    )
    .await;
    p.until(
        "nodes coloured by state",
        "document.querySelectorAll('#graph-full g.node.ran').length >= 5",
    )
    .await;
    let scale = "Number(/scale\\(([\\d.]+)\\)/.exec(document.getElementById('graph-full').style.transform)[1])";
    let before = p.js(&format!("return {scale}")).await.as_f64().unwrap();
    p.click("#zoom-in").await;
    let after = p.js(&format!("return {scale}")).await.as_f64().unwrap();
    assert!((after / before - 1.25).abs() < 0.01, "{before} -> {after}");
    p.click("#graph-full g.node.clickable").await;
    wait_text(c, "#node-detail", "metadata").await;
    wait_text(c, "#node-detail", "output").await;
    p.screenshot("graph").await;
    p.click("#graph-close").await;

    // Every run the page started is over.
    assert_eq!(server.state.running(), 0);
    p.c.clone().close().await.unwrap();
    let _ = server.stop().await;
}

#[needs(chromium)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_typed_during_a_run_is_queued_and_reaches_the_server() {
    let model = scripted(vec![
        Turn::text("First answer.").delayed(Duration::from_millis(2500)),
        Turn::text("Second answer."),
    ]);
    let server = start(model).await;
    let p = Page::open(&server, WIDE).await;
    p.new_session().await;
    p.send("one").await;
    p.until("a run going", "document.body.classList.contains('running')")
        .await;
    // Enter during the run: queued visibly, not dropped.
    p.send("two").await;
    wait_text(&p.c, "#queue li", "two").await;
    assert_eq!(
        p.js("return document.getElementById('input').value").await,
        ""
    );
    wait_text(&p.c, "#messages .msg.ai", "Second answer.").await;
    p.until(
        "the queue emptied",
        "document.querySelectorAll('#queue li').length === 0",
    )
    .await;

    // The server got both, in order; the first message named the session.
    let id = open_id(&p).await;
    let view = get_json(&format!("{}/api/sessions/{id}", server.url), ALICE).await;
    let humans: Vec<&str> = view["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "human")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(humans, ["one", "two"]);
    assert_eq!(view["name"], "one");

    // A reload keeps the open session (it is in the URL).
    p.c.refresh().await.unwrap();
    wait_text(&p.c, "#messages .msg.ai", "Second answer.").await;
    wait_text(&p.c, "#session-name", "one").await;
    wait_text(&p.c, "#sessions li.active", "one").await;
    assert_eq!(open_id(&p).await, id);
    let _ = server.stop().await;
}

const HOSTILE: &str = r#"Here is the **plan**.

| file | lines |
| --- | --- |
| src/main.rs | 120 |
| src/lib.rs | 80 |

```rust
fn main() {
    let answer = 42;
    println!("{answer}");
}
```

See [the docs](https://example.com/docs) and [this](javascript:window.__xss=4).

<script>window.__xss = 1</script>
<img src="x" onerror="window.__xss = 2">
<a href="javascript:window.__xss=3" id="evil">click me</a>
<iframe src="javascript:window.__xss=5"></iframe>
<div onmouseover="window.__xss=6" style="position:fixed;inset:0">cover</div>
<svg><script>window.__xss=7</script></svg>
![pic](https://example.com/track.png)
"#;

#[needs(chromium)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_render_markdown_and_a_hostile_answer_runs_no_script() {
    let model = scripted(vec![
        call(
            "x1",
            "<img src=x onerror=window.__xss=8>",
            json!({"path": "<img src=x onerror=window.__xss=9>"}),
        ),
        Turn::text(HOSTILE),
    ]);
    let server = start(model).await;
    let p = Page::open(&server, WIDE).await;
    p.new_session().await;
    p.send("<img src=x onerror=window.__xss=10> hello").await;
    wait_text(&p.c, "#messages .msg.ai", "Here is the plan.").await;
    p.until(
        "no run going",
        "!document.body.classList.contains('running')",
    )
    .await;

    // Markdown: bold, a table, a highlighted code block with a copy
    // button, a link that opens in a new tab.
    p.until(
        "bold",
        "!!document.querySelector('#messages .msg.ai strong')",
    )
    .await;
    let cells = p
        .js("return [...document.querySelectorAll('#messages .msg.ai table td')].map(t => t.textContent)")
        .await;
    assert_eq!(cells, json!(["src/main.rs", "120", "src/lib.rs", "80"]));
    p.until(
        "highlighted code",
        "!!document.querySelector('#messages pre code.hljs .hljs-keyword')",
    )
    .await;
    p.until(
        "a copy button",
        "!!document.querySelector('#messages pre button.copy')",
    )
    .await;
    let link = p
        .js("const a = [...document.querySelectorAll('#messages .msg.ai a')].find(a => a.textContent === 'the docs'); return [a.href, a.target, a.rel]")
        .await;
    assert_eq!(
        link,
        json!([
            "https://example.com/docs",
            "_blank",
            "noopener noreferrer nofollow"
        ])
    );

    // Hostile: no element that could run script or cover the page, no
    // javascript: link, no image fetched; clicking every link runs nothing.
    let bad = p
        .js("return [...document.querySelectorAll('#messages script, #messages iframe, #messages img, #messages svg, #messages [onerror], #messages [onmouseover], #messages [style], #sessions img, #session-name img')].length")
        .await;
    assert_eq!(bad, json!(0));
    let js_links = p
        .js("return [...document.querySelectorAll('#messages a')].filter(a => (a.getAttribute('href') || '').toLowerCase().startsWith('javascript')).length")
        .await;
    assert_eq!(js_links, json!(0));
    p.js(
        "document.querySelectorAll('#messages a:not([target])').forEach(a => a.click()); return 0",
    )
    .await;
    // The hostile tool name and argument show as text.
    wait_text(
        &p.c,
        "#messages details.tool summary",
        "<img src=x onerror=window.__xss=8>",
    )
    .await;
    wait_text(
        &p.c,
        "#sessions li.active",
        "<img src=x onerror=window.__xss=10> hello",
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(p.js("return String(window.__xss)").await, "undefined");
    p.screenshot("markdown").await;
    let _ = server.stop().await;
}

#[needs(chromium)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_ends_a_slow_run_and_the_session_keeps_what_ran() {
    let model = scripted(vec![
        call(
            "t1",
            "write_todos",
            json!({"todos": [{"content": "Search the code", "status": "in_progress"}]}),
        ),
        Turn::text("never said").delayed(Duration::from_secs(60)),
        Turn::text("Going on."),
    ]);
    let server = start(model).await;
    let p = Page::open(&server, WIDE).await;
    p.new_session().await;
    p.send("Look around").await;
    wait_text(&p.c, "#messages details.tool summary", "write_todos").await;
    // The step line says the model is thinking; Stop is there.
    wait_text(&p.c, "#step", "Thinking").await;
    p.click("#stop").await;
    wait_text(&p.c, "#messages .msg.notice.stopped", "Stopped").await;
    p.until(
        "no run going",
        "!document.body.classList.contains('running')",
    )
    .await;
    assert_eq!(server.state.running(), 0);

    // Saved with what ran.
    let id = open_id(&p).await;
    let view = get_json(&format!("{}/api/sessions/{id}", server.url), ALICE).await;
    let roles: Vec<&str> = view["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["human", "ai", "tool"]);
    assert_eq!(view["todos"][0]["content"], "Search the code");
    wait_text(&p.c, "#todos", "Search the code").await;

    // The session goes on.
    p.send("Go on").await;
    wait_text(&p.c, "#messages .msg.ai", "Going on.").await;
    let _ = server.stop().await;
}

#[needs(chromium)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_file_approval_shows_a_diff_and_runs_the_edited_arguments() {
    let model = scripted(vec![
        call(
            "w1",
            "write_file",
            json!({"file_path": "/notes.md", "content": "hello world\nsecond line"}),
        ),
        call(
            "e1",
            "edit_file",
            json!({"file_path": "/notes.md", "old_string": "hello world", "new_string": "hello there"}),
        ),
        Turn::text("Edited."),
    ]);
    let spec = spec_with(
        "edit_file",
        vec![
            DecisionKind::Approve,
            DecisionKind::Edit,
            DecisionKind::Reject,
            DecisionKind::Respond,
        ],
    );
    let server = start_with(|dir| config(model, dir).spec(spec)).await;
    let p = Page::open(&server, WIDE).await;
    p.new_session().await;
    p.send("Fix the greeting").await;
    wait_text(&p.c, "#approvals .approval", "edit_file").await;
    wait_text(&p.c, "#approvals pre.diff .del", "- hello world").await;
    wait_text(&p.c, "#approvals pre.diff .add", "+ hello there").await;
    // The four decisions the tool allows.
    for b in ["approve", "edit", "reject", "respond"] {
        p.c.find(Locator::Css(&format!("#approvals button.{b}")))
            .await
            .unwrap_or_else(|_| panic!("no {b} button"));
    }
    p.screenshot("edit-approval").await;
    p.click("#approvals button.edit").await;
    let field =
        p.c.find(Locator::Css("#approvals .edit-form [name=new_string]"))
            .await
            .unwrap();
    field.clear().await.unwrap();
    field.send_keys("hello friend").await.unwrap();
    p.click("#approvals .edit-form button[type=submit]").await;
    wait_text(&p.c, "#messages .msg.ai", "Edited.").await;

    let id = open_id(&p).await;
    let view = get_json(&format!("{}/api/sessions/{id}", server.url), ALICE).await;
    assert_eq!(
        view["files"]["/notes.md"]["content"],
        "hello friend\nsecond line"
    );
    assert_eq!(view["pending_approvals"], json!([]));
    let _ = server.stop().await;
}

const WIDE_ANSWER: &str = "A long path: /very/long/unbroken/path/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/file.rs

| column one | column two | column three | column four | column five | column six |
| --- | --- | --- | --- | --- | --- |
| a fairly long cell | another long cell | and another one | still more | and more | the end |

```
let a_very_long_line_of_code = call_something(with, many, arguments, that, go, on, and, on, past, the, edge);
```
";

#[needs(chromium)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_phone_width_nothing_scrolls_sideways_and_the_drawers_work() {
    let model = scripted(vec![
        Turn::text(WIDE_ANSWER),
        call(
            "w1",
            "write_file",
            json!({"file_path": "/x.md", "content": "a line that is rather long and would not fit on a phone screen at all"}),
        ),
    ]);
    let spec = approval_spec("write_file");
    let server = start_with(|dir| config(model, dir).spec(spec)).await;
    let p = Page::open(&server, PHONE).await;
    let width = p.js("return window.innerWidth").await;
    assert_eq!(width, json!(390));
    // Both drawers start closed: the chat has the screen.
    let sidebar_right = p
        .js("return document.getElementById('sidebar').getBoundingClientRect().right")
        .await;
    assert!(sidebar_right.as_f64().unwrap() <= 0.0, "{sidebar_right}");
    p.click("#toggle-sessions").await;
    p.until(
        "the session drawer open",
        "document.getElementById('sidebar').getBoundingClientRect().left >= 0",
    )
    .await;
    p.new_session().await;
    // Opening a session closed the drawer.
    p.until(
        "the drawer closed",
        "document.getElementById('sidebar').getBoundingClientRect().right <= 0",
    )
    .await;
    p.send("Show me something wide").await;
    wait_text(&p.c, "#messages .msg.ai", "A long path").await;
    p.until(
        "no run going",
        "!document.body.classList.contains('running')",
    )
    .await;
    let sideways = "document.documentElement.scrollWidth > window.innerWidth || document.body.scrollWidth > window.innerWidth || document.getElementById('messages').scrollWidth > document.getElementById('messages').clientWidth";
    assert_eq!(p.js(&format!("return {sideways}")).await, json!(false));
    p.screenshot("phone-chat").await;

    // An approval at phone width shows in the chat, inside the screen.
    p.send("Write it").await;
    wait_text(&p.c, "#approvals .approval", "write_file").await;
    let right = p
        .js("return document.querySelector('#approvals').getBoundingClientRect().right")
        .await;
    assert!(right.as_f64().unwrap() <= 390.0, "{right}");
    assert_eq!(p.js(&format!("return {sideways}")).await, json!(false));

    // The side panel opens as a drawer too.
    p.click("#toggle-panel").await;
    p.until(
        "the panel open",
        "document.getElementById('panel').getBoundingClientRect().right <= window.innerWidth + 1 && document.getElementById('panel').getBoundingClientRect().left > 0",
    )
    .await;
    assert_eq!(p.js(&format!("return {sideways}")).await, json!(false));
    let _ = server.stop().await;
}

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

/// Writes the page's screenshots in `docs/screenshots/` (1400×900 and
/// 390×844). Run by `docs/screenshots.sh`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/screenshots; run docs/screenshots.sh"]
async fn screenshots() {
    let missing = chromedriver::missing();
    assert!(
        missing.is_empty(),
        "{missing:?} not installed: apt-get install -y chromium chromium-driver"
    );
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/screenshots");
    std::fs::create_dir_all(&out).unwrap();
    let answer = "I looked through the project. Here is where the **TODOs** are:\n\n| file | TODOs |\n| --- | --- |\n| `src/main.rs` | 3 |\n| `src/parse.rs` | 1 |\n\nThe one in `parse.rs` is the real problem:\n\n```rust\nfn parse(line: &str) -> Option<Entry> {\n    // TODO: handle quoted fields\n    let mut parts = line.split(',');\n    Some(Entry { name: parts.next()?.trim().to_string() })\n}\n```\n\nShall I fix it?";
    for (label, size) in [("wide", WIDE), ("phone", PHONE)] {
        let model = scripted(vec![
            call(
                "t1",
                "write_todos",
                json!({"todos": [
                    {"content": "Find the TODOs", "status": "completed"},
                    {"content": "Fix quoted fields", "status": "in_progress"},
                    {"content": "Add a test", "status": "pending"}]}),
            ),
            call(
                "w0",
                "write_file",
                json!({"file_path": "/src/parse.rs", "content": "fn parse(line: &str) -> Option<Entry> {\n    // TODO: handle quoted fields\n    let mut parts = line.split(',');\n    Some(Entry { name: parts.next()?.trim().to_string() })\n}\n"}),
            ),
            call("g1", "grep", json!({"pattern": "TODO", "path": "/"})),
            Turn::text(answer),
            call(
                "e1",
                "edit_file",
                json!({"file_path": "/src/parse.rs", "old_string": "    // TODO: handle quoted fields\n    let mut parts = line.split(',');", "new_string": "    let mut parts = split_quoted(line);"}),
            ),
        ]);
        let spec = spec_with(
            "edit_file",
            vec![
                DecisionKind::Approve,
                DecisionKind::Edit,
                DecisionKind::Reject,
                DecisionKind::Respond,
            ],
        );
        let server = start_with(|dir| config(model, dir).spec(spec)).await;
        for name in [
            "Release notes draft",
            "Why is the build slow?",
            "Rename the config keys",
        ] {
            post(
                &format!("{}/api/sessions", server.url),
                ALICE,
                json!({"name": name}),
            )
            .await;
        }
        let p = Page::open(&server, size).await;
        if label == "phone" {
            p.click("#toggle-sessions").await;
            p.until(
                "the session drawer open",
                "document.getElementById('sidebar').getBoundingClientRect().left >= 0",
            )
            .await;
        }
        p.new_session().await;
        p.send("Find the TODOs in the project and tell me which matters")
            .await;
        wait_text(&p.c, "#messages .msg.ai", "Shall I fix it?").await;
        p.until(
            "no run going",
            "!document.body.classList.contains('running')",
        )
        .await;
        p.send("Yes, fix it").await;
        wait_text(&p.c, "#approvals .approval", "edit_file").await;
        p.until(
            "no run going",
            "!document.body.classList.contains('running')",
        )
        .await;
        // Open the grep call so its summary and result show.
        p.js("document.querySelectorAll('#messages details.tool')[2].open = true; document.getElementById('messages').scrollTop = 1e6; return 0").await;
        tokio::time::sleep(Duration::from_millis(400)).await;
        std::fs::write(
            out.join(format!("chat-{label}.png")),
            p.c.screenshot().await.unwrap(),
        )
        .unwrap();
        if label == "phone" {
            p.click("#toggle-sessions").await;
            p.until(
                "the session drawer open",
                "document.getElementById('sidebar').getBoundingClientRect().left >= 0",
            )
            .await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            std::fs::write(
                out.join("sessions-phone.png"),
                p.c.screenshot().await.unwrap(),
            )
            .unwrap();
            p.click("#toggle-sessions").await;
            p.click("#toggle-panel").await;
            p.until(
                "the panel open",
                "document.getElementById('panel').getBoundingClientRect().right <= window.innerWidth + 1",
            )
            .await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            std::fs::write(out.join("panel-phone.png"), p.c.screenshot().await.unwrap()).unwrap();
        }
        p.click("#open-graph").await;
        p.until(
            "the full graph",
            "document.querySelectorAll('#graph-full g.node.clickable').length >= 5",
        )
        .await;
        p.js("const n = [...document.querySelectorAll('#graph-full g.node.clickable')]; n[Math.min(3, n.length - 1)].dispatchEvent(new MouseEvent('click', {bubbles: true})); return 0").await;
        wait_text(&p.c, "#node-detail", "metadata").await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        std::fs::write(
            out.join(format!("graph-{label}.png")),
            p.c.screenshot().await.unwrap(),
        )
        .unwrap();
        let _ = server.stop().await;
    }
}

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

/// A 96×64 PNG: a red square on white, base64.
const SQUARE_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAGAAAABACAIAAABqVuVZAAAAg0lEQVR42u3cQQkAIBBFQdPs1UBWN4ElNIAgoqCX+bwEc1425dK0KCHYAuo2DRAgQIAAAQIECBCg10A14kuAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAEC5JAcECBAgAABAgQIB6A7IPn+ctgAuXCKGdkseL4AAAAASUVORK5CYII=";
/// Its width, as the browser decodes it.
const SQUARE_WIDTH: u32 = 96;

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

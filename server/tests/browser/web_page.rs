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
//! (images and MCP input forms: `web_images.rs`; during and after runs:
//! `web_runs.rs`; sessions and a cut-off answer: `web_sessions.rs`.)
//!
//! Screenshots go to `<target>/tmp/web-page-*.png`; the ignored test
//! `screenshots` writes the ones in `docs/screenshots/` (see
//! `docs/screenshots.sh`).

use lc_agent_test_support::chromedriver;
use lc_agent_test_support::needs;

use std::collections::BTreeMap;
use std::time::Duration;

use fantoccini::{Client, Locator};
use lc_agent::{ToolCall, Turn};
use lc_agent_deepagent::{AgentSpec, DecisionKind, ModelSpec};
use lc_agent_test_support::server::*;
use serde_json::{json, Value};

pub(crate) const ENTER: &str = "\u{E007}";
pub(crate) const WIDE: (u32, u32) = (1400, 900);
pub(crate) const PHONE: (u32, u32) = (390, 844);

/// A browser on the page of a test server, as Alice.
pub(crate) struct Page {
    pub(crate) c: Client,
    _driver: chromedriver::Driver,
    _profile: tempfile::TempDir,
}

impl Page {
    pub(crate) async fn open(server: &TestServer, size: (u32, u32)) -> Page {
        Self::open_at(server, size, "").await
    }

    pub(crate) async fn open_at(server: &TestServer, size: (u32, u32), query: &str) -> Page {
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

    pub(crate) async fn click(&self, css: &str) {
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

    pub(crate) async fn type_in(&self, css: &str, text: &str) {
        self.c
            .find(Locator::Css(css))
            .await
            .unwrap()
            .send_keys(text)
            .await
            .unwrap();
    }

    pub(crate) async fn js(&self, script: &str) -> Value {
        self.c.execute(script, vec![]).await.unwrap()
    }

    /// Waits until `script` (an expression) is truthy.
    pub(crate) async fn until(&self, what: &str, script: &str) {
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

    pub(crate) async fn new_session(&self) {
        self.click("#new-session").await;
        self.c
            .wait()
            .for_element(Locator::Css("#sessions li.active"))
            .await
            .unwrap();
    }

    pub(crate) async fn send(&self, text: &str) {
        self.type_in("#input", text).await;
        self.type_in("#input", ENTER).await;
    }

    pub(crate) async fn screenshot(&self, name: &str) {
        let png = self.c.screenshot().await.unwrap();
        let path =
            std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("web-page-{name}.png"));
        std::fs::write(&path, png).unwrap();
        eprintln!("screenshot: {}", path.display());
    }
}

/// Waits until the text of an element at `css` contains `needle`.
pub(crate) async fn wait_text(c: &Client, css: &str, needle: &str) -> String {
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
pub(crate) async fn open_id(p: &Page) -> String {
    let url = p.c.current_url().await.unwrap();
    url.query_pairs()
        .find(|(k, _)| k == "session")
        .map(|(_, v)| v.to_string())
        .expect("the session in the URL")
}

pub(crate) fn spec_with(tool: &str, decisions: Vec<DecisionKind>) -> AgentSpec {
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

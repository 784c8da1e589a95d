//! `fetch_url` against a loopback server the test starts (allowed by
//! name, as a private address must be): a page converted to Markdown, a
//! redirect followed, a redirect to a host off the list refused, a huge
//! page cut at the cap and evicted from the conversation, a slow page
//! stopped at the time cap, a binary body refused; and the tool is off
//! unless the blueprint turns it on.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lc_agent::{
    Attachments, ChatModel, HumanNode, RunnableNetwork, ScriptedChatModel, ToolStatus, Turn,
};
use lc_agent_deepagent::{AgentSpec, ModelSpec, SpecError};
use serde_json::json;

use crate::common::tool_results;

/// The bytes of the huge page: more than the 1 MiB cap the tests set.
const HUGE: usize = 3 * 1024 * 1024;

/// A loopback HTTP/1.1 server; its port.
fn serve() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            std::thread::spawn(move || answer(stream, port));
        }
    });
    port
}

fn answer(stream: TcpStream, port: u16) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() {
        return;
    }
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
            break;
        }
    }
    let path = first.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut out = stream;
    let reply = |out: &mut TcpStream, status: &str, headers: &str, body: &[u8]| {
        let head = format!(
            "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let _ = out.write_all(head.as_bytes());
        let _ = out.write_all(body);
    };
    match path.as_str() {
        "/page" => reply(
            &mut out,
            "200 OK",
            "Content-Type: text/html; charset=utf-8\r\n",
            b"<html><head><title>T</title><script>steal()</script></head><body>\
              <h1>Tide tables</h1><p>High water at <b>noon</b>, see <a href=\"/more\">more</a>.</p>\
              </body></html>",
        ),
        "/moved" => reply(&mut out, "302 Found", "Location: /page\r\n", b""),
        "/away" => reply(
            &mut out,
            "302 Found",
            &format!("Location: http://localhost:{port}/page\r\n"),
            b"",
        ),
        "/huge" => {
            let paragraph = b"<p>The sea is wide and the sea is deep and the tide comes in.</p>\n";
            let body: Vec<u8> = paragraph.iter().copied().cycle().take(HUGE).collect();
            reply(&mut out, "200 OK", "Content-Type: text/html\r\n", &body);
        }
        "/slow" => {
            std::thread::sleep(Duration::from_secs(5));
            reply(&mut out, "200 OK", "Content-Type: text/plain\r\n", b"late");
        }
        "/image" => reply(
            &mut out,
            "200 OK",
            "Content-Type: image/png\r\n",
            b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR",
        ),
        "/mislabelled" => reply(
            &mut out,
            "200 OK",
            "Content-Type: text/plain\r\n",
            b"GIF89a\0\0\x01\0binary",
        ),
        _ => reply(
            &mut out,
            "404 Not Found",
            "Content-Type: text/plain\r\n",
            b"no such page",
        ),
    }
}

/// An agent from a blueprint (`extra` appended), whose scripted model
/// fetches each of `urls` in turn, then answers.
fn agent(extra: &str, urls: &[String]) -> RunnableNetwork {
    let spec = AgentSpec::from_toml(&format!("[models.main]\nmodel = \"m\"\n{extra}")).unwrap();
    // All the fetches in one turn, as a model reading a list would ask
    // (one refused fetch per turn, three in a row, is what the stuck
    // detector stops).
    let calls = urls
        .iter()
        .enumerate()
        .map(|(i, url)| lc_agent::ToolCall::new(format!("f{i}"), "fetch_url", json!({"url": url})));
    let turns = vec![Turn::tool_calls(calls), Turn::text("Read them.")];
    let model = ScriptedChatModel::new(turns);
    let resolve = move |_: &str, _: &ModelSpec| -> Result<Arc<dyn ChatModel>, SpecError> {
        Ok(Arc::new(model.clone()))
    };
    let net = spec.builder(resolve).unwrap().build().unwrap();
    {
        let _s = net.enter();
        HumanNode::new("Read these pages.");
    }
    net
}

fn allowed(port: u16) -> String {
    let _ = port;
    "[fetch_url]\nallow = [\"127.0.0.1\"]\nmax_bytes = 1048576\ntimeout_secs = 2\n".to_string()
}

#[tokio::test]
async fn pages_redirects_and_refusals() {
    let port = serve();
    let url = |path: &str| format!("http://127.0.0.1:{port}{path}");
    let net = agent(
        &allowed(port),
        &[
            url("/page"),
            url("/moved"),
            url("/away"),
            url("/image"),
            url("/mislabelled"),
            url("/gone"),
            format!("http://127.0.0.2:{port}/page"),
            "file:///etc/passwd".to_string(),
        ],
    );
    assert_eq!(net.invoke().await.unwrap().text(), "Read them.");
    let results = tool_results(&net);
    assert_eq!(results.len(), 8);

    // The page, as Markdown, without its script.
    let (status, page) = &results[0];
    assert_eq!(*status, ToolStatus::Ok, "{page}");
    assert!(page.contains("# Tide tables"), "{page}");
    assert!(page.contains("**noon**"), "{page}");
    assert!(page.contains("[more](/more)"), "{page}");
    assert!(!page.contains("steal"), "{page}");
    // A redirect on the same host is followed.
    assert_eq!(results[1], results[0]);
    // A redirect to a host the list does not name is refused.
    assert_eq!(results[2].0, ToolStatus::Error);
    assert!(
        results[2]
            .1
            .contains("localhost is not on the fetch_url allow-list (127.0.0.1)"),
        "{}",
        results[2].1
    );
    // Binary bodies, labelled or not, are refused with what they are.
    for (status, text) in &results[3..5] {
        assert_eq!(*status, ToolStatus::Error);
        assert!(text.contains("is not a text page"), "{text}");
    }
    assert!(results[3].1.contains("image/png"), "{}", results[3].1);
    // An error page says its status.
    assert_eq!(results[5].0, ToolStatus::Error);
    assert!(
        results[5].1.contains("HTTP 404 Not Found") && results[5].1.contains("no such page"),
        "{}",
        results[5].1
    );
    // Another loopback address is not named: refused before connecting.
    assert!(
        results[6]
            .1
            .contains("127.0.0.2 is not on the fetch_url allow-list"),
        "{}",
        results[6].1
    );
    assert!(
        results[7].1.contains("only http and https"),
        "{}",
        results[7].1
    );
}

#[tokio::test]
async fn a_huge_page_is_cut_at_the_cap_and_evicted_from_the_conversation() {
    let port = serve();
    let net = agent(&allowed(port), &[format!("http://127.0.0.1:{port}/huge")]);
    net.invoke().await.unwrap();
    let results = tool_results(&net);
    let (status, preview) = &results[0];
    assert_eq!(*status, ToolStatus::Ok);
    // The conversation holds a preview; the page went to a file.
    assert!(
        preview.starts_with("Tool result too large"),
        "{}",
        &preview[..200.min(preview.len())]
    );
    assert!(preview.len() < 10_000, "{}", preview.len());
    let files = net.files();
    let (path, saved) = files
        .iter()
        .find(|(path, _)| path.starts_with("/large_tool_results/"))
        .expect("the page was evicted to a file");
    let text = saved.content.join("\n");
    assert!(text.contains("The sea is wide"), "{path}");
    assert!(
        text.contains(&format!(
            "[fetch_url: the page was cut at 1048576 bytes of {HUGE}]"
        )),
        "{}",
        &text[text.len().saturating_sub(300)..]
    );
    assert!(text.len() < HUGE, "{}", text.len());
}

#[tokio::test]
async fn a_slow_page_is_stopped_at_the_time_cap() {
    let port = serve();
    let net = agent(&allowed(port), &[format!("http://127.0.0.1:{port}/slow")]);
    let clock = Instant::now();
    net.invoke().await.unwrap();
    assert!(
        clock.elapsed() < Duration::from_secs(4),
        "{:?}",
        clock.elapsed()
    );
    let results = tool_results(&net);
    assert_eq!(results[0].0, ToolStatus::Error);
    assert!(
        results[0].1.contains("no whole answer within 2 s"),
        "{}",
        results[0].1
    );
}

#[tokio::test]
async fn off_unless_asked_and_a_wildcard_never_opens_loopback() {
    let port = serve();
    let url = format!("http://127.0.0.1:{port}/page");
    // No [fetch_url]: no such tool.
    let net = agent("", std::slice::from_ref(&url));
    assert!(!net.tools().iter().any(|t| t.name() == "fetch_url"));
    net.invoke().await.unwrap();
    assert!(tool_results(&net)[0].1.contains("Unknown tool `fetch_url`"));
    // `*` allows public hosts only.
    let net = agent("[fetch_url]\nallow = [\"*\"]\n", &[url]);
    net.invoke().await.unwrap();
    let results = tool_results(&net);
    assert!(
        results[0]
            .1
            .contains("private or loopback address (127.0.0.1)"),
        "{}",
        results[0].1
    );
}

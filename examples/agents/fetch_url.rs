//! # Fetching a page
//!
//! Shows: the `fetch_url` tool, turned on by a blueprint's `[fetch_url]`
//! with an allow-list: a page of a loopback server the example starts
//! (allowed by name, as a loopback address must be) comes back as
//! Markdown; a redirect to a host the list does not name is refused.
//!
//! Needs: nothing; the model is a `ScriptedChatModel` that replays fixed
//! turns. With a real model, `lc-agent run --fetch-url docs.rs "..."`
//! does the same from the command line.
//!
//! Run: `cargo run --example fetch_url`

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::Arc;

use lc_agent::{ChatModel, HumanNode, Message, ScriptedChatModel, Turn};
use lc_agent_deepagent::AgentSpec;
use serde_json::json;

/// A loopback server: `/` is a page, `/elsewhere` redirects to a host
/// the allow-list does not name.
fn serve() -> std::io::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut first = String::new();
            let _ = reader.read_line(&mut first);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let page = "<h1>Harbour notes</h1><p>High water at <b>noon</b>.</p>";
            let reply = if first.contains("/elsewhere") {
                format!("HTTP/1.1 302 Found\r\nLocation: http://localhost:{port}/\r\nContent-Length: 0\r\n\r\n")
            } else {
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{page}",
                    page.len()
                )
            };
            let _ = (&stream).write_all(reply.as_bytes());
        }
    });
    Ok(port)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = serve()?;
    let spec = AgentSpec::from_toml(
        "[models.main]\nmodel = \"scripted\"\n\
         [fetch_url]\nallow = [\"127.0.0.1\"]\nmax_bytes = 100000\ntimeout_secs = 5\n",
    )?;
    let model = ScriptedChatModel::new([
        Turn::call(
            "f1",
            "fetch_url",
            json!({"url": format!("http://127.0.0.1:{port}/")}),
        ),
        Turn::call(
            "f2",
            "fetch_url",
            json!({"url": format!("http://127.0.0.1:{port}/elsewhere")}),
        ),
        Turn::text("High water is at noon."),
    ]);
    let net = spec
        .builder(|_, _| Ok(Arc::new(model.clone()) as Arc<dyn ChatModel>))?
        .build()?;
    {
        let _s = net.enter();
        HumanNode::new("When is high water?");
    }
    let answer = net.invoke().await?;
    for node in net.nodes() {
        if let Some(Message::Tool { content, .. }) = node.output().as_deref() {
            println!("fetch_url:\n{content}\n");
        }
    }
    println!("answer: {}", answer.text());
    Ok(())
}

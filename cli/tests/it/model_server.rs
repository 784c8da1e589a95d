//! A tiny OpenAI-compatible chat server on loopback for the CLI tests: it
//! answers `POST .../chat/completions` with the next of its scripted
//! replies (in one JSON piece, as servers that ignore `stream: true` do),
//! logs every request it gets, and answers anything else with 404.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// One scripted reply.
#[derive(Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    /// A 200 answer with this text, finish reason and usage.
    pub fn answer(content: &str, finish_reason: &str) -> Self {
        let body = serde_json::json!({
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": "test-model",
            "choices": [{"index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 1200, "completion_tokens": 34, "total_tokens": 1234}
        });
        Self {
            status: 200,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: body.to_string(),
        }
    }

    /// A 200 answer that calls one tool with these arguments.
    pub fn call(id: &str, name: &str, arguments: serde_json::Value) -> Self {
        let body = serde_json::json!({
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": "test-model",
            "choices": [{"index": 0,
                "message": {"role": "assistant", "content": null, "tool_calls": [{
                    "id": id, "type": "function",
                    "function": {"name": name, "arguments": arguments.to_string()}}]},
                "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 1200, "completion_tokens": 34, "total_tokens": 1234}
        });
        Self {
            status: 200,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: body.to_string(),
        }
    }

    /// An error status (with `Retry-After: 0`, so a retry comes at once).
    pub fn error(status: u16) -> Self {
        Self {
            status,
            headers: vec![
                ("Content-Type".into(), "application/json".into()),
                ("Retry-After".into(), "0".into()),
            ],
            body: r#"{"error": {"message": "slow down"}}"#.into(),
        }
    }
}

/// The server: its base URL and the requests it got.
pub struct ModelServer {
    pub base_url: String,
    /// `(method and path, body)` of every request, in order.
    pub requests: Arc<Mutex<Vec<(String, String)>>>,
}

impl ModelServer {
    /// Serves `replies` in order (then 500s), on a thread, until the
    /// test process ends.
    pub fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = requests.clone();
        std::thread::spawn(move || {
            let mut replies = replies.into_iter();
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut first = String::new();
                if reader.read_line(&mut first).is_err() {
                    continue;
                }
                let mut length = 0;
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 {
                        break;
                    }
                    let header = header.trim();
                    if header.is_empty() {
                        break;
                    }
                    if let Some((name, value)) = header.split_once(':')
                        && name.eq_ignore_ascii_case("content-length")
                    {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let request_line: Vec<&str> = first.split_whitespace().collect();
                let what = format!("{} {}", request_line[0], request_line[1]);
                let is_chat = what.starts_with("POST") && what.ends_with("/chat/completions");
                log.lock()
                    .unwrap()
                    .push((what, String::from_utf8_lossy(&body).into_owned()));
                let reply = if is_chat {
                    replies.next().unwrap_or(Reply {
                        status: 500,
                        headers: vec![],
                        body: "no more replies".into(),
                    })
                } else {
                    Reply {
                        status: 404,
                        headers: vec![],
                        body: "not found".into(),
                    }
                };
                let mut response = format!("HTTP/1.1 {} X\r\n", reply.status);
                for (name, value) in &reply.headers {
                    response.push_str(&format!("{name}: {value}\r\n"));
                }
                response.push_str(&format!(
                    "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
                    reply.body.len(),
                    reply.body
                ));
                let _ = stream.write_all(response.as_bytes());
                let _ = stream.flush();
            }
        });
        Self { base_url, requests }
    }

    /// The chat requests so far (their bodies).
    pub fn chat_requests(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|(what, _)| what.ends_with("/chat/completions"))
            .map(|(_, body)| body.clone())
            .collect()
    }
}

//! A tiny OpenAI-compatible chat server on loopback for the CLI tests: it
//! answers `POST .../chat/completions` with the next of its scripted
//! replies (in one JSON piece, as servers that ignore `stream: true` do),
//! logs every request it gets, and answers anything else with 404.
#![allow(dead_code)]

use std::io::Write;
use std::sync::{Arc, Mutex};

use lc_agent_test_support::loopback::{self, Then};

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
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = requests.clone();
        let replies = Mutex::new(replies.into_iter());
        let address = loopback::serve(move |request, out| {
            let what = request.line();
            let is_chat = request.method == "POST" && request.path.ends_with("/chat/completions");
            log.lock().unwrap().push((what, request.text()));
            let reply = if is_chat {
                replies.lock().unwrap().next().unwrap_or(Reply {
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
            let _ = out.write_all(response.as_bytes());
            Then::Close
        });
        Self {
            base_url: format!("http://{address}/v1"),
            requests,
        }
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

//! A bare HTTP/1.1 server on 127.0.0.1 for tests that must answer at the
//! byte level (a stream cut short, bytes that are not UTF-8, a connection
//! closed without an answer): it reads each request (line, headers, body
//! by `Content-Length`) and hands it to the test's handler, which writes
//! whatever it likes to the connection. Keep-alive connections are served
//! until the handler or the client closes them. One thread per connection.
//!
//! [`crate::MockServer`] is the higher-level twin (canned replies on
//! axum); use this one where the reply is not well-formed HTTP or JSON.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

use serde_json::Value;

/// One request as the server read it.
#[derive(Debug, Clone)]
pub struct Request {
    /// The method (`GET`, `POST`).
    pub method: String,
    /// The path with its query (`/v1/chat/completions`).
    pub path: String,
    /// Headers in order, names as sent.
    pub headers: Vec<(String, String)>,
    /// The body (`Content-Length` bytes).
    pub body: Vec<u8>,
}

impl Request {
    /// `METHOD path`, as tests log it.
    pub fn line(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    /// The first header of this name (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (`Value::Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// What happens to the connection after the handler answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Then {
    /// Read the next request on it (keep-alive).
    KeepAlive,
    /// Close it.
    Close,
}

/// A handler: answers one request by writing to the connection.
pub type Handler = dyn Fn(&Request, &mut TcpStream) -> Then + Send + Sync;

/// Serves `handler` on a free loopback port until the test process ends;
/// returns the address (`127.0.0.1:PORT`).
pub fn serve(handler: impl Fn(&Request, &mut TcpStream) -> Then + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let address = listener
        .local_addr()
        .expect("the bound address")
        .to_string();
    let handler: Arc<Handler> = Arc::new(handler);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let handler = handler.clone();
            std::thread::spawn(move || connection(stream, handler.as_ref()));
        }
    });
    address
}

/// Serves one connection's requests until it closes.
fn connection(stream: TcpStream, handler: &Handler) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut out = stream;
    while let Some(request) = read_request(&mut reader) {
        if handler(&request, &mut out) == Then::Close {
            let _ = out.flush();
            return;
        }
    }
}

/// Reads one request; `None` at the end of the connection or on a
/// request that is not HTTP.
pub fn read_request(reader: &mut impl BufRead) -> Option<Request> {
    let mut first = String::new();
    if reader.read_line(&mut first).ok()? == 0 {
        return None;
    }
    let mut parts = first.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            let value = value.trim().to_string();
            if name.eq_ignore_ascii_case("content-length") {
                length = value.parse().unwrap_or(0);
            }
            headers.push((name.to_string(), value));
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        path,
        headers,
        body,
    })
}

/// Writes a whole response: status, `Content-Type`, `Content-Length`, the
/// body; with `Connection: close` when `then` closes. Errors (a client
/// gone) are ignored: the test sees them from its side.
pub fn respond(
    out: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &[u8],
    then: Then,
) -> Then {
    let close = if then == Then::Close {
        "Connection: close\r\n"
    } else {
        ""
    };
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{close}\r\n",
        body.len()
    );
    let _ = out.write_all(head.as_bytes());
    let _ = out.write_all(body);
    let _ = out.flush();
    then
}

/// [`respond`] with a JSON body.
pub fn respond_json(out: &mut TcpStream, status: u16, body: &Value, then: Then) -> Then {
    respond(
        out,
        status,
        "application/json",
        body.to_string().as_bytes(),
        then,
    )
}

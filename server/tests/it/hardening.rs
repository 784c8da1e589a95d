//! What hostile pages, slow clients and odd requests get (issue 21, items
//! 4, 5, 6, 7 and 9), against a real server on loopback: raw HTTP where a
//! client library would not send what a hostile one does.
//! - a token-less server answers only its own Host; a body must be JSON
//!   (415), malformed JSON is 400 and the wrong shape 422; a browser page
//!   of another origin cannot change anything (403);
//! - slow clients: headers must arrive in time, an idle kept-alive
//!   connection is closed, a stalled body is cut, connections are capped;
//!   a silent connection is closed and one client address gets at most
//!   its share (issue 31 item 7: 1,200 silent sockets, chat turns go on);
//! - `?token=` works only for event streams; the page sends CSP and
//!   X-Frame-Options;
//! - errors do not show the Redis address, file paths or the model URL;
//! - every error has the OpenAI shape (405, 404, 413, 414, 415, 422, 431,
//!   503 included); a model that cannot be reached is 502 with code 502.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lc_agent::{ListConfig, OpenAiChatModel, ScriptedChatModel, Turn};
use lc_agent_server::{ServerConfig, Tokens};
use lc_agent_test_support::needs;
use lc_agent_test_support::server::*;
use lc_agent_test_support::RedisServer;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A server with no tokens (the loopback default), scripted "ok".
async fn open_server() -> TestServer {
    start_with(|dir| {
        ServerConfig::new(Arc::new(
            ScriptedChatModel::new([Turn::text("ok")]).cycled(),
        ))
        .sessions(ListConfig::json(dir.join("sessions")))
    })
    .await
}

fn addr(url: &str) -> String {
    url.trim_start_matches("http://").to_string()
}

/// Sends `request` as it is and reads the answer until the server closes
/// (or 10 s pass): (status, head, body).
async fn raw(url: &str, request: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr(url)).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out)).await;
    let text = String::from_utf8_lossy(&out).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_lowercase(), body.to_string())
}

fn post_raw(host: &str, path: &str, headers: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The error body's (type, code, message); panics unless it has the
/// shape. `code` is the status, or OpenAI's string for a request field's
/// problem (then `param` names the field): that reads as the status 400.
fn error_of(body: &str) -> (String, u64, String) {
    let v: Value = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("not a JSON error body ({e}): {body:?}"));
    let e = &v["error"];
    assert!(e.get("param").is_some(), "no param: {body}");
    let code = match &e["code"] {
        Value::String(_) if e["param"].is_string() => 400,
        other => other.as_u64().expect("code"),
    };
    (
        e["type"].as_str().expect("type").to_string(),
        code,
        e["message"].as_str().expect("message").to_string(),
    )
}

async fn session_count(url: &str) -> u64 {
    let v: Value = client()
        .get(format!("{url}/api/sessions"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v["total"].as_u64().unwrap()
}

#[tokio::test]
async fn a_token_less_server_answers_only_its_own_host() {
    let server = open_server().await;
    let own = addr(&server.url);
    let port = own.rsplit(':').next().unwrap().to_string();
    let json = "Content-Type: application/json\r\n";
    // DNS rebinding: the browser sends the attacker's name as Host.
    let (status, _, body) = raw(
        &server.url,
        &post_raw(&format!("evil.example:{port}"), "/api/sessions", json, "{}"),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    let (kind, code, message) = error_of(&body);
    assert_eq!((kind.as_str(), code), ("permission_error", 403));
    assert!(message.contains("--allow-host"), "{message}");
    for host in [own.clone(), format!("localhost:{port}")] {
        let (status, _, body) =
            raw(&server.url, &post_raw(&host, "/api/sessions", json, "{}")).await;
        assert_eq!(status, 201, "{host}: {body}");
    }
    assert_eq!(session_count(&server.url).await, 2);
    server.stop().await;
}

#[tokio::test]
async fn an_allowed_host_is_answered() {
    let server = start_with(|dir| {
        ServerConfig::new(Arc::new(ScriptedChatModel::new([Turn::text("ok")])))
            .sessions(ListConfig::json(dir.join("sessions")))
            .allow_host("agent.lan")
    })
    .await;
    let (status, _, body) = raw(
        &server.url,
        "GET /api/sessions HTTP/1.1\r\nHost: agent.lan\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    server.stop().await;
}

#[tokio::test]
async fn a_request_names_its_host_as_http_says() {
    let server = open_server().await;
    let host = addr(&server.url);
    // HTTP/1.1 without a Host: 400.
    let (status, _, body) = raw(
        &server.url,
        "GET /v1/models HTTP/1.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 400, "{body}");
    // An absolute-form target is judged by its own host, not the Host header.
    let (status, _, body) = raw(
        &server.url,
        &format!(
            "GET http://evil.example/v1/models HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        ),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    let (status, _, body) = raw(
        &server.url,
        &format!(
            "GET http://{host}/v1/models HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        ),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    server.stop().await;
}

#[tokio::test]
async fn bodies_must_be_json_of_the_right_shape() {
    let server = open_server().await;
    let host = addr(&server.url);
    let json = "Content-Type: application/json\r\n";
    let cases = [
        // A cross-origin page can send text/plain without a preflight.
        ("Content-Type: text/plain\r\n", "{}", 415),
        ("", "{\"name\": \"x\"}", 415),
        (
            "Content-Type: application/x-www-form-urlencoded\r\n",
            "name=x",
            415,
        ),
        (json, "{not json", 400),
        (json, "{\"nmae\": \"x\"}", 422),
        (json, "{\"name\": 5}", 422),
    ];
    for (headers, body, want) in cases {
        let (status, _, answer) = raw(
            &server.url,
            &post_raw(&host, "/api/sessions", headers, body),
        )
        .await;
        assert_eq!(status, want, "{headers:?} {body:?}: {answer}");
        let (_, code, _) = error_of(&answer);
        assert_eq!(code, want as u64);
    }
    assert_eq!(session_count(&server.url).await, 0, "nothing was created");
    // No body at all is still a new session.
    let (status, _, body) = raw(&server.url, &post_raw(&host, "/api/sessions", "", "")).await;
    assert_eq!(status, 201, "{body}");
    // The same rule on the other JSON routes.
    let (status, _, body) = raw(
        &server.url,
        &post_raw(
            &host,
            "/v1/chat/completions",
            "Content-Type: text/plain\r\n",
            r#"{"messages":[{"role":"user","content":"hi"}]}"#,
        ),
    )
    .await;
    assert_eq!(status, 415, "{body}");
    server.stop().await;
}

#[tokio::test]
async fn a_page_of_another_origin_cannot_change_anything() {
    let server = open_server().await;
    let host = addr(&server.url);
    let json = "Content-Type: application/json\r\n";
    for origin in ["http://evil.example", "null", "http://localhost:1"] {
        let headers = format!("Origin: {origin}\r\n{json}");
        let (status, _, body) = raw(
            &server.url,
            &post_raw(&host, "/api/sessions", &headers, "{}"),
        )
        .await;
        assert_eq!(status, 403, "{origin}: {body}");
        assert!(error_of(&body).2.contains("--cors"), "{body}");
        // No body at all: still refused.
        let headers = format!("Origin: {origin}\r\n");
        let (status, _, _) =
            raw(&server.url, &post_raw(&host, "/api/sessions", &headers, "")).await;
        assert_eq!(status, 403, "{origin}");
    }
    assert_eq!(session_count(&server.url).await, 0);
    // The page itself (same origin) may.
    let headers = format!("Origin: {}\r\n{json}", server.url);
    let (status, _, body) = raw(
        &server.url,
        &post_raw(&host, "/api/sessions", &headers, "{}"),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    server.stop().await;
}

#[tokio::test]
async fn slow_headers_and_idle_connections_are_closed() {
    let server = start_with(|dir| {
        ServerConfig::new(Arc::new(ScriptedChatModel::new([Turn::text("ok")])))
            .sessions(ListConfig::json(dir.join("sessions")))
            .header_timeout(Duration::from_secs(1))
    })
    .await;
    // 50 clients sending one header line every 300 ms, forever.
    let started = Instant::now();
    let mut clients = Vec::new();
    for _ in 0..50 {
        let a = addr(&server.url);
        clients.push(tokio::spawn(async move {
            let mut s = TcpStream::connect(&a).await.unwrap();
            s.write_all(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n")
                .await
                .unwrap();
            let t = Instant::now();
            for i in 0..40 {
                tokio::time::sleep(Duration::from_millis(300)).await;
                let line = format!("X-Slow-{i}: a\r\n");
                if s.write_all(line.as_bytes()).await.is_err() {
                    return t.elapsed();
                }
                let mut buf = [0u8; 64];
                // A closed connection reads 0 (or an error).
                if let Ok(Ok(0) | Err(_)) =
                    tokio::time::timeout(Duration::from_millis(1), s.read(&mut buf)).await
                {
                    return t.elapsed();
                }
            }
            t.elapsed()
        }));
    }
    for c in clients {
        let held = c.await.unwrap();
        assert!(
            held < Duration::from_secs(4),
            "a slow client was held {held:?}"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(8));
    // An idle kept-alive connection is closed too.
    let mut s = TcpStream::connect(addr(&server.url)).await.unwrap();
    let request = format!(
        "GET /v1/models HTTP/1.1\r\nHost: {}\r\n\r\n",
        addr(&server.url)
    );
    s.write_all(request.as_bytes()).await.unwrap();
    let t = Instant::now();
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
    assert!(read.is_ok(), "an idle connection stayed open");
    assert!(t.elapsed() < Duration::from_secs(3));
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    server.stop().await;
}

#[tokio::test]
async fn a_stalled_body_is_cut() {
    let server = start_with(|dir| {
        ServerConfig::new(Arc::new(ScriptedChatModel::new([Turn::text("ok")])))
            .sessions(ListConfig::json(dir.join("sessions")))
            .body_timeout(Duration::from_secs(1))
    })
    .await;
    let mut s = TcpStream::connect(addr(&server.url)).await.unwrap();
    let head = format!(
        "POST /api/sessions HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"name\":",
        addr(&server.url)
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let t = Instant::now();
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(6), s.read_to_end(&mut out)).await;
    assert!(read.is_ok(), "a stalled body held its connection");
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    let text = String::from_utf8_lossy(&out);
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 4"), "{head}");
    error_of(body);
    assert_eq!(session_count(&server.url).await, 0);
    server.stop().await;
}

#[tokio::test]
async fn a_full_server_closes_an_idle_connection_for_a_new_one_and_429s_when_all_are_busy() {
    let server = start_with(|dir| {
        ServerConfig::new(Arc::new(ScriptedChatModel::new([Turn::text("ok")])))
            .sessions(ListConfig::json(dir.join("sessions")))
            .max_connections(8)
    })
    .await;
    // Eight connections that sent half their headers: idle, no request yet.
    let mut held = Vec::new();
    for _ in 0..8 {
        let mut s = TcpStream::connect(addr(&server.url)).await.unwrap();
        s.write_all(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        held.push(s);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // A new client is served: the oldest idle connection made room.
    let r = client()
        .get(format!("{}/v1/models", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let mut buf = [0u8; 64];
    let closed = tokio::time::timeout(Duration::from_secs(2), held[0].read(&mut buf)).await;
    assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "{closed:?}");
    drop(held);
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Eight connections busy with a request (a body still coming): a new
    // one gets 429 with Retry-After.
    let mut busy = Vec::new();
    for _ in 0..8 {
        let mut s = TcpStream::connect(addr(&server.url)).await.unwrap();
        let head = format!(
            "POST /api/sessions HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{",
            addr(&server.url)
        );
        s.write_all(head.as_bytes()).await.unwrap();
        busy.push(s);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, head, body) = raw(
        &server.url,
        "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 429, "{head}");
    assert!(
        head.to_ascii_lowercase().contains("retry-after: 1"),
        "{head}"
    );
    assert_eq!(error_of(&body).1, 429);
    drop(busy);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = client()
        .get(format!("{}/v1/models", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "a freed place serves again");
    server.stop().await;
}

/// A connection from `ip` (a loopback address of its own) to `url`.
async fn connect_from(ip: [u8; 4], url: &str) -> std::io::Result<TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind((std::net::Ipv4Addr::from(ip), 0).into())?;
    socket.connect(addr(url).parse().unwrap()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_from_one_client_cannot_lock_others_out() {
    let server = start_with(|dir| {
        ServerConfig::new(Arc::new(
            ScriptedChatModel::new([Turn::text("ok")]).cycled(),
        ))
        .sessions(ListConfig::json(dir.join("sessions")))
        .silent_timeout(Duration::from_secs(2))
    })
    .await;
    let url = server.url.clone();
    // One turn before: the first turn of a process pays for what loads
    // once (the agent, the tokenizer); the flood's turns are timed apart.
    let warm = Instant::now();
    let r = client()
        .post(format!("{url}/v1/chat/completions"))
        .json(&json!({"messages": [{"role": "user", "content": "first"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    eprintln!("the first turn, before the flood: {:?}", warm.elapsed());
    // 1,200 connections from 127.0.0.2 that never send a byte, held open
    // (idle connections hold no request slot).
    let flood = tokio::spawn({
        let url = url.clone();
        async move {
            let mut held = Vec::new();
            for _ in 0..1200 {
                if let Ok(s) = connect_from([127, 0, 0, 2], &url).await {
                    held.push(s);
                }
            }
            held
        }
    });
    // Meanwhile another client (127.0.0.1) completes chat turns.
    let turn = |i: usize| {
        let url = url.clone();
        async move {
            let t = Instant::now();
            let r = client()
                .post(format!("{url}/v1/chat/completions"))
                .json(&json!({"messages": [{"role": "user", "content": format!("hi {i}")}]}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200, "turn {i}: {}", r.text().await.unwrap());
            t.elapsed()
        }
    };
    let mut took = Vec::new();
    for i in 0..5 {
        took.push(turn(i).await);
    }
    let mut held = flood.await.unwrap();
    assert_eq!(held.len(), 1200, "every silent connection was accepted");
    for i in 5..10 {
        took.push(turn(i).await);
    }
    eprintln!("chat turns beside 1,200 silent connections: {took:?}");
    let slowest = took.iter().max().copied().unwrap_or_default();
    assert!(slowest < Duration::from_secs(2), "chat turns took {took:?}");
    // The silent ones are all closed by the server within its silent
    // timeout.
    let t = Instant::now();
    for s in &mut held {
        let mut buf = [0u8; 512];
        let closed = tokio::time::timeout(Duration::from_secs(4), async {
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        })
        .await;
        assert!(closed.is_ok(), "a silent connection stayed open");
    }
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    server.stop().await;
}

#[tokio::test]
async fn a_query_token_works_only_for_event_streams() {
    let server = start(scripted(vec![Turn::text("ok")])).await;
    let url = format!("{}/api/sessions?token={ALICE}", server.url);
    let r = client().get(&url).send().await.unwrap();
    assert_eq!(r.status(), 401, "?token= on a plain API call");
    let r = client()
        .post(format!("{}/api/sessions?token={ALICE}", server.url))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // Asking for an event stream is not enough: only the event-stream
    // routes read it (not /metrics, not the session list).
    for path in ["/api/sessions", "/metrics"] {
        let r = client()
            .get(format!("{}{path}?token={ALICE}", server.url))
            .header("accept", "text/event-stream")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401, "?token= on {path}");
    }
    let session = new_session(&server.url, ALICE).await;
    let run: Value = post(
        &format!("{}/api/sessions/{session}/runs", server.url),
        ALICE,
        json!({"content": "hi", "background": true}),
    )
    .await
    .json()
    .await
    .unwrap();
    let r = client()
        .get(format!(
            "{}/api/runs/{}/events?token={ALICE}",
            server.url,
            run["id"].as_str().unwrap()
        ))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "an EventSource cannot send a header");
    // The page needs no token to load, and cannot be framed.
    let r = client()
        .get(format!("{}/", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let csp = r.headers()["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(csp.contains("script-src 'self'"), "{csp}");
    assert_eq!(r.headers()["x-frame-options"], "DENY");
    assert_eq!(r.headers()["referrer-policy"], "no-referrer");
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    server.stop().await;
}

#[tokio::test]
async fn every_error_has_the_openai_shape() {
    let server = start(scripted(vec![Turn::text("ok")])).await;
    let base = &server.url;
    let host = addr(base);
    let auth = format!("Authorization: Bearer {ALICE}\r\n");
    let long = "a".repeat(9000);
    let many: String = (0..150).map(|i| format!("X-H{i}: v\r\n")).collect();
    let big = "x".repeat(3 * 1024 * 1024);
    let cases: Vec<(String, u16)> = vec![
        // Method not allowed.
        (format!("PUT /v1/models HTTP/1.1\r\nHost: {host}\r\n{auth}Content-Length: 0\r\nConnection: close\r\n\r\n"), 405),
        // No such endpoint.
        (format!("GET /nope HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"), 404),
        // A path that is not a session id.
        (format!("GET /api/sessions/not-a-uuid HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n"), 400),
        // Too long a URL, too many headers.
        (format!("GET /api/sessions?q={long} HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n"), 414),
        (format!("GET /api/sessions HTTP/1.1\r\nHost: {host}\r\n{auth}{many}Connection: close\r\n\r\n"), 431),
        // Too large a body.
        (post_raw(&host, "/api/sessions", &format!("{auth}Content-Type: application/json\r\n"), &big), 413),
        // A JSON body missing a field.
        (post_raw(&host, "/v1/chat/completions", &format!("{auth}Content-Type: application/json\r\n"), "{}"), 400),
        // No token.
        (format!("GET /api/sessions HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"), 401),
    ];
    for (request, want) in cases {
        let (status, head, body) = raw(base, &request).await;
        let first = request
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(60)
            .collect::<String>();
        assert_eq!(status, want, "{first}: {head}");
        assert!(
            head.contains("content-type: application/json"),
            "{first}: {head}"
        );
        let (_, code, message) = error_of(&body);
        assert_eq!(code, want as u64, "{first}");
        assert!(!message.is_empty());
        assert!(head.contains("x-request-id: "), "{head}");
    }
    server.stop().await;
}

#[tokio::test]
async fn an_unreachable_model_is_502_without_its_address() {
    // Nobody listens on this port: the model cannot be reached.
    let port = lc_agent_test_support::free_port();
    let model_url = format!("http://127.0.0.1:{port}/v1");
    let model = OpenAiChatModel::builder()
        .base_url(&model_url)
        .model("m")
        .max_retries(0)
        .build()
        .unwrap();
    let server = start_with(|dir| config(model, dir)).await;
    let r = post(
        &format!("{}/v1/chat/completions", server.url),
        ALICE,
        json!({"messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(r.status(), 502);
    let body = r.text().await.unwrap();
    let (kind, code, message) = error_of(&body);
    assert_eq!((kind.as_str(), code), ("model_error", 502), "{body}");
    assert!(message.contains("could not be reached"), "{message}");
    assert!(
        !body.contains(&port.to_string()),
        "the model's address leaked: {body}"
    );
    server.stop().await;
}

#[needs(redis)]
#[tokio::test]
async fn a_broken_store_does_not_show_its_address_or_paths() {
    let mut redis = RedisServer::start();
    let url = redis.url();
    let port = redis.port().to_string();
    let slow = ScriptedChatModel::new([Turn::text("slow").delayed(Duration::from_millis(1500))]);
    let server = start_with(|_| {
        ServerConfig::new(Arc::new(slow))
            .sessions(ListConfig::redis(url.clone()))
            .tokens(Tokens::parse(&format!("alice:{ALICE}")).unwrap())
    })
    .await;
    // The final save of a run fails because Redis went away meanwhile.
    let base = server.url.clone();
    let run = tokio::spawn(async move {
        post(
            &format!("{base}/v1/chat/completions"),
            ALICE,
            json!({"messages": [{"role": "user", "content": "hi"}]}),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(700)).await;
    redis.stop();
    let r = run.await.unwrap();
    assert_eq!(r.status(), 503, "a store that is down is 503");
    let body = r.text().await.unwrap();
    let (kind, _, message) = error_of(&body);
    assert_eq!(kind, "unavailable_error", "{body}");
    assert!(!body.contains(&port), "the store's address leaked: {body}");
    assert!(message.contains("try again"), "{message}");
    // Listing while it is down.
    let r = get(&format!("{}/api/sessions", server.url), ALICE).await;
    assert_eq!(r.status(), 503);
    let body = r.text().await.unwrap();
    assert!(!body.contains(&port), "{body}");
    assert!(!body.to_lowercase().contains("redis"), "{body}");
    server.stop().await;
}

#[tokio::test]
async fn a_corrupt_session_does_not_show_its_path() {
    let server = start(scripted(vec![Turn::text("ok")])).await;
    let id = new_session(&server.url, ALICE).await;
    let file = server
        .dir
        .path()
        .join("sessions/alice")
        .join(format!("{id}.json"));
    assert!(file.exists(), "{}", file.display());
    std::fs::write(&file, "{ not a session").unwrap();
    let r = get(&format!("{}/api/sessions/{id}", server.url), ALICE).await;
    assert_eq!(r.status(), 500);
    let body = r.text().await.unwrap();
    let dir = server.dir.path().display().to_string();
    assert!(!body.contains(&dir), "a server path leaked: {body}");
    assert!(error_of(&body).2.contains(&id), "{body}");
    server.stop().await;
}

#[tokio::test]
async fn a_conflict_does_not_give_library_hints() {
    let server = start(scripted(vec![Turn::text("ok")])).await;
    let id: uuid::Uuid = new_session(&server.url, ALICE).await.parse().unwrap();
    // Another process saves the session meanwhile.
    let lists = ListConfig::json(server.dir.path().join("sessions"))
        .open()
        .unwrap();
    let list = lists.user("alice").unwrap();
    let net = list.load(id).await.unwrap();
    let stale = list.load(id).await.unwrap();
    list.save(&net).await.unwrap();
    let err = list.save(&stale).await.unwrap_err();
    let api: lc_agent_server::ApiError = err.into();
    assert_eq!(api.status(), 409);
    let message = api.public_message();
    assert!(!message.contains("save_force"), "{message}");
    assert!(message.contains("load it again"), "{message}");
    server.stop().await;
}

/// Log lines written to a shared buffer.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[tokio::test]
async fn the_access_log_keeps_a_request_the_client_aborted() {
    // This test's thread (the server runs on it: a current-thread
    // runtime) logs to a buffer.
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(captured.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    // The model answers long after the client gave up.
    let model = ScriptedChatModel::new([Turn::text("late").delayed(Duration::from_secs(8))]);
    let server = start_with(|dir| {
        ServerConfig::new(Arc::new(model))
            .sessions(ListConfig::json(dir.join("sessions")))
            .shutdown_grace(Duration::from_millis(200))
    })
    .await;
    let aborted = client()
        .post(format!("{}/v1/chat/completions", server.url))
        .timeout(Duration::from_millis(300))
        .json(&json!({"messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await;
    assert!(aborted.is_err(), "the client gave up first");
    let mut line = None;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let text = String::from_utf8_lossy(&captured.0.lock().unwrap()).into_owned();
        line = text
            .lines()
            .find(|l| l.contains("lc_agent_server::access") && l.contains("/v1/chat/completions"))
            .map(str::to_string);
        if line.is_some() {
            break;
        }
    }
    let line = line.unwrap_or_else(|| {
        panic!(
            "no access line for the aborted request in:\n{}",
            String::from_utf8_lossy(&captured.0.lock().unwrap())
        )
    });
    assert!(
        line.contains("status=499") && line.contains("aborted=true"),
        "{line}"
    );
    server.stop().await;
}

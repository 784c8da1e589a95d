//! Fair under many clients: silent sockets from many loopback addresses
//! (reopened as soon as the server closes them) hold no request slot and
//! make room for clients that send a request; a burst of concurrent calls
//! from the `openai` SDK all succeed (queued, or after the 429 the SDK
//! retries); another user is answered at once meanwhile (the reserve); a
//! body sent a byte at a time gets 408 within the body timeout; users
//! behind a trusted proxy are told apart by `X-Forwarded-For`.
//!
//! `FAIR_FULL=1` runs the acceptance test at the scale (1,600
//! silent sockets from 16 addresses, 200 SDK calls) with the server's
//! default limits, and prints the figures.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lc_agent::{ListConfig, Turn};
use lc_agent_server::ServerConfig;
use lc_agent_test_support::needs;
use lc_agent_test_support::python;
use lc_agent_test_support::server::*;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn addr(url: &str) -> std::net::SocketAddr {
    url.trim_start_matches("http://").parse().unwrap()
}

/// A connection from loopback address `ip` to `url`.
async fn connect_from(ip: [u8; 4], url: &str) -> std::io::Result<TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind((std::net::Ipv4Addr::from(ip), 0).into())?;
    socket.connect(addr(url)).await
}

/// Keeps `per_address` silent sockets open from each of `addresses`
/// loopback addresses (127.0.0.2, ...), reopening each as soon as the
/// server closes it, until `stop`; counts the connections made.
fn flood(
    url: &str,
    addresses: u8,
    per_address: usize,
    stop: Arc<AtomicBool>,
) -> (Arc<AtomicUsize>, Vec<tokio::task::JoinHandle<()>>) {
    let made = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for a in 0..addresses {
        for _ in 0..per_address {
            let (url, stop, made) = (url.to_string(), stop.clone(), made.clone());
            tasks.push(tokio::spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    let Ok(mut s) = connect_from([127, 0, 0, 2 + a], &url).await else {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    };
                    made.fetch_add(1, Ordering::SeqCst);
                    let mut buf = [0u8; 256];
                    // Silent until the server closes it (or the test ends).
                    loop {
                        tokio::select! {
                            read = s.read(&mut buf) => match read {
                                Ok(0) | Err(_) => break,
                                Ok(_) => {}
                            },
                            () = tokio::time::sleep(Duration::from_millis(200)) => {
                                if stop.load(Ordering::SeqCst) {
                                    return;
                                }
                            }
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }));
        }
    }
    (made, tasks)
}

#[needs(python_openai)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_sockets_and_a_burst_lock_nobody_out() {
    let full = std::env::var("FAIR_FULL").is_ok_and(|v| v == "1");
    let (addresses, per_address, calls) = if full { (16, 100, 200) } else { (8, 50, 50) };
    let model = scripted(vec![Turn::text("ok").delayed(Duration::from_millis(200))]).cycled();
    let server = start_with(|dir| {
        let c = config(model, dir);
        if full {
            // The server's defaults.
            c
        } else {
            // Scaled down: fewer connections than the flood, a small pool.
            c.max_connections(256)
                .max_requests(16)
                .max_client_requests(16)
                .request_reserve(4)
                .queue_wait(Duration::from_secs(2))
        }
    })
    .await;
    let url = server.url.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let (made, tasks) = flood(&url, addresses, per_address, stop.clone());
    let sockets = addresses as usize * per_address;
    for _ in 0..400 {
        if made.load(Ordering::SeqCst) >= sockets {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(made.load(Ordering::SeqCst) >= sockets, "the flood is open");

    // Alice's burst, through the SDK.
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/burst_client.py");
    let burst = tokio::task::spawn_blocking({
        let url = url.clone();
        move || python::run_json(script.as_ref(), &[url.as_str(), ALICE, &calls.to_string()])
    });
    // Bob, meanwhile: answered at once.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let t = Instant::now();
    let r = client()
        .post(format!("{url}/v1/chat/completions"))
        .bearer_auth(BOB)
        .json(&json!({"messages": [{"role": "user", "content": "bob here"}]}))
        .send()
        .await
        .unwrap();
    let bob = t.elapsed();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let got: Value = burst.await.unwrap();
    stop.store(true, Ordering::SeqCst);
    eprintln!(
        "{sockets} silent sockets from {addresses} addresses ({} opened in all), {calls} SDK calls: \
         {got}; bob answered in {bob:?}",
        made.load(Ordering::SeqCst)
    );
    assert_eq!(got["ok"], calls, "every SDK call succeeds: {got}");
    assert!(bob < Duration::from_secs(2), "bob waited {bob:?}");
    for t in tasks {
        t.abort();
    }
    server.stop().await;
}

#[tokio::test]
async fn a_body_sent_a_byte_at_a_time_gets_408_within_the_body_timeout() {
    let server = start_with(|dir| {
        config(scripted(vec![Turn::text("ok")]), dir).body_timeout(Duration::from_secs(1))
    })
    .await;
    let mut s = TcpStream::connect(addr(&server.url)).await.unwrap();
    let head = format!(
        "POST /api/sessions HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {ALICE}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n",
        addr(&server.url)
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let t = Instant::now();
    // A byte every 200 ms: never a pause long enough for a per-piece timeout.
    let trickle = async {
        for _ in 0..50 {
            if s.write_all(b" ").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    let _ = tokio::time::timeout(Duration::from_millis(2_500), trickle).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(2), s.read_to_end(&mut out)).await;
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.starts_with("HTTP/1.1 408"),
        "after {:?}: {text}",
        t.elapsed()
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_over_its_share_gets_429_with_retry_after_and_a_trusted_proxy_tells_users_apart() {
    // A model slow enough to hold a slot.
    let model = scripted(vec![Turn::text("ok").delayed(Duration::from_millis(1_500))]).cycled();
    let server = start_with(|dir| {
        ServerConfig::new(Arc::new(model))
            .sessions(ListConfig::json(dir.join("sessions")))
            .max_client_requests(1)
            .queue_wait(Duration::from_millis(300))
            .trusted_proxy("127.0.0.0/8".parse().unwrap())
    })
    .await;
    let url = server.url.clone();
    let completion = |forwarded_for: &'static str| {
        let url = url.clone();
        async move {
            client()
                .post(format!("{url}/v1/chat/completions"))
                .header("x-forwarded-for", forwarded_for)
                .json(&json!({"messages": [{"role": "user", "content": "hi"}]}))
                .send()
                .await
                .unwrap()
        }
    };
    let first = tokio::spawn(completion("198.51.100.1"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The first user again, over its share: 429, Retry-After.
    let second = completion("198.51.100.1").await;
    assert_eq!(second.status(), 429);
    assert_eq!(second.headers()["retry-after"], "1");
    let body: Value = second.json().await.unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error", "{body}");
    // Another user behind the same proxy, while the first call still
    // holds its slot: a slot of its own.
    assert!(!first.is_finished());
    let other = completion("198.51.100.2").await;
    assert_eq!(other.status(), 200);
    assert_eq!(first.await.unwrap().status(), 200);
    server.stop().await;
}

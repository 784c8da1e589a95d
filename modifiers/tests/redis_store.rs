//! `StoreBackend` over a real `redis-server` started on a free port.
//! Without redis-server the test fails under CI=true and prints a skip
//! note elsewhere.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lc_agent_modifiers::filesystem::{run_tool, StoreBackend};
use serde_json::json;

struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_redis() -> Option<Server> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = match Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("redis-server is required under CI: {e}");
            }
            eprintln!("SKIP: redis-server not installed ({e}); install it with `apt-get install -y redis-server`");
            return None;
        }
    };
    let server = Server {
        child,
        url: format!("redis://127.0.0.1:{port}/0"),
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "redis-server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(server)
}

async fn command_calls(url: &str, command: &str) -> u64 {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut conn)
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("cmdstat_{command}:calls=")))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

#[tokio::test]
async fn redis_store_backend() {
    let Some(server) = start_redis() else { return };
    let backend = StoreBackend::redis(&server.url, ["user-42", "filesystem"]);
    let failures = common::run_table(&backend, "").await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));

    // grep and glob read the namespace in one round trip, never file by file.
    let (hget, hgetall) = (
        command_calls(&server.url, "hget").await,
        command_calls(&server.url, "hgetall").await,
    );
    let out = run_tool(&backend, "grep", &json!({"pattern": "file 100[0-4]"}))
        .await
        .unwrap();
    assert_eq!(out.content.lines().count(), 5);
    let out = run_tool(
        &backend,
        "glob",
        &json!({"pattern": "*.txt", "path": "/many"}),
    )
    .await
    .unwrap();
    assert!(out
        .content
        .ends_with("... (5 more matches; narrow the pattern)"));
    assert_eq!(command_calls(&server.url, "hget").await, hget);
    assert_eq!(command_calls(&server.url, "hgetall").await, hgetall + 1);

    // Another session (a new backend) sees the same files; other namespaces do not.
    let again = StoreBackend::redis(&server.url, ["user-42", "filesystem"]);
    let out = run_tool(
        &again,
        "read_file",
        &json!({"file_path": "/src/main.rs", "limit": 1}),
    )
    .await
    .unwrap();
    assert_eq!(
        out.content,
        "     1\tfn main() {\n[Showing lines 1-1 of 3. Use offset=1 to read more.]"
    );
    let other = StoreBackend::redis(&server.url, ["user-43", "filesystem"]);
    let out = run_tool(&other, "ls", &json!({"path": "/"})).await.unwrap();
    assert_eq!(out.content, "(empty directory)");

    // A server that is gone is an error result, not a panic.
    let gone = StoreBackend::redis("redis://127.0.0.1:1/0", ["x"]);
    let out = run_tool(&gone, "ls", &json!({})).await.unwrap();
    assert!(
        out.content.starts_with("Error: Storage error: redis:"),
        "{}",
        out.content
    );
}

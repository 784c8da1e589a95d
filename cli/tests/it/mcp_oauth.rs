//! OAuth to a remote MCP server, end to end, against independent ones: the
//! MCP TypeScript SDK's example server (`simpleStreamableHttp.js
//! --oauth-strict`, `@modelcontextprotocol/sdk` under `.ci/node_modules`)
//! and its demo authorization server on loopback. The server answers 401
//! with a `WWW-Authenticate` challenge naming its protected-resource
//! metadata; the authorization server offers dynamic client registration
//! and PKCE (S256), approves every request without a person, and (strict)
//! issues a code only for the `resource` of this MCP server. The test
//! follows the printed authorization URL as a browser would, which lands
//! on `lc-agent mcp login`'s loopback listener.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common;
use lc_agent_test_support::needs;
use lc_agent_test_support::process::KillOnDrop;
use serde_json::{json, Value};

fn example_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../.ci/node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js")
}

/// The SDK's example MCP server with its demo authorization server.
struct DemoServer {
    _child: KillOnDrop,
    url: String,
}

impl DemoServer {
    fn start() -> Self {
        // Two listeners at once: two different free ports.
        let (a, b) = (
            std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
            std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
        );
        let (mcp_port, auth_port) = (
            a.local_addr().unwrap().port(),
            b.local_addr().unwrap().port(),
        );
        drop((a, b));
        let mut child = Command::new("node")
            .arg(example_server())
            .args(["--oauth", "--oauth-strict"])
            .env("MCP_PORT", mcp_port.to_string())
            .env("MCP_AUTH_PORT", auth_port.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("node starts");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = Vec::new();
        for line in lines.by_ref() {
            let line = line.unwrap();
            let ready = line.contains("MCP Streamable HTTP Server listening");
            seen.push(line);
            if ready {
                break;
            }
        }
        assert!(
            seen.iter()
                .any(|l| l.contains("OAuth Authorization Server listening")),
            "the example server did not start: {seen:?}"
        );
        // Keep reading its stdout so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        // The demo names itself `localhost` in its resource metadata.
        Self {
            _child: KillOnDrop(child),
            url: format!("http://localhost:{mcp_port}/mcp"),
        }
    }
}

/// A run whose scripted model greets through the server's `greet` tool.
fn greet(dir: &Path, mcp: &Path) -> Output {
    let script = json!([
        {"tool_calls": [{"id": "g1", "name": "greet", "arguments": {"name": "Ada"}}]},
        {"content": "Greeted."}
    ]);
    common::lc_agent(
        dir,
        &["run", "Greet Ada."],
        &script.to_string(),
        &[
            "--mcp".to_string(),
            mcp.display().to_string(),
            "--root".to_string(),
            dir.display().to_string(),
        ],
        "",
    )
}

// The MCP TypeScript SDK comes with server-everything (and is pinned in
// .ci/package.json itself), so `server_everything` is what this needs.
#[needs(server_everything)]
#[tokio::test(flavor = "multi_thread")]
async fn login_by_the_browser_flow_then_the_tools_answer_and_no_token_reaches_the_session() {
    let server = DemoServer::start();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let mcp = dir.path().join("mcp.json");
    std::fs::write(
        &mcp,
        json!({"mcpServers": {"demo": {"url": server.url}}}).to_string(),
    )
    .unwrap();

    // Before the login: the run goes on, and the tool's result says what to do.
    let before = greet(dir.path(), &mcp);
    let stderr = String::from_utf8_lossy(&before.stderr);
    assert!(
        stderr.contains("MCP server `demo` needs authorization: run `lc-agent mcp login demo`"),
        "{stderr}"
    );

    // The login prints the URL (no browser here) and waits for the redirect.
    let mut login = Command::new(common::own_binary(dir.path()))
        .args(["mcp", "login", "demo", "--no-browser", "--mcp"])
        .arg(&mcp)
        .env("LC_AGENT_HOME", &home)
        .env_remove("BROWSER")
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut printed = Vec::new();
    let mut lines = BufReader::new(login.stderr.take().unwrap()).lines();
    let url = loop {
        let Some(line) = lines.next() else {
            panic!("no authorization URL in {printed:?}")
        };
        let line = line.unwrap();
        printed.push(line.clone());
        if let Some(url) = line.trim().strip_prefix("http://") {
            break format!("http://{url}");
        }
    };
    assert!(printed[0].starts_with("Open this URL"), "{printed:?}");
    let query: Vec<(String, String)> = reqwest::Url::parse(&url)
        .unwrap()
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let param = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("no `{name}` in {url}"))
    };
    assert_eq!(param("response_type"), "code");
    assert_eq!(param("code_challenge_method"), "S256");
    assert_eq!(param("resource"), server.url);
    assert_eq!(param("scope"), "mcp:tools");
    assert!(
        param("redirect_uri").starts_with("http://127.0.0.1:"),
        "{url}"
    );

    // The browser: the demo approves at once and redirects to the listener.
    let page = reqwest::get(&url).await.unwrap();
    assert!(page.status().is_success(), "{}", page.status());
    assert!(page.url().as_str().starts_with("http://127.0.0.1:"));
    assert!(page
        .text()
        .await
        .unwrap()
        .contains("lc-agent received the authorization"));
    let out = tokio::task::spawn_blocking(move || login.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(out.status.success(), "{printed:?} {rest:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Logged in to MCP server `demo` (scopes: mcp:tools)\n"
    );

    // The tokens: one entry for the server, readable by its owner only.
    let file = home.join("mcp-tokens.json");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let tokens: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let entry = &tokens["servers"][&server.url];
    assert_eq!(entry["name"], "demo");
    let access = entry["token_response"]["access_token"]
        .as_str()
        .unwrap_or_else(|| panic!("no access token in {tokens}"))
        .to_string();

    // After the login: the tool answers, with the stored token.
    let after = greet(dir.path(), &mcp);
    let stderr = String::from_utf8_lossy(&after.stderr);
    assert!(after.status.success(), "{stderr}");
    assert!(stderr.contains("  greet ok"), "{stderr}");
    assert!(!stderr.contains(&access));

    // Nothing of the token in the saved sessions (nor on the screen).
    for entry in walk(&dir.path().join("sessions")) {
        let text = String::from_utf8_lossy(&std::fs::read(&entry).unwrap()).into_owned();
        assert!(
            !text.contains(&access),
            "{} holds the token",
            entry.display()
        );
    }
    assert!(!walk(&dir.path().join("sessions")).is_empty());
    drop(server);
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

//! An MCP server's requests for input through the server: a server on the
//! official Python SDK asks for a booking in the middle of `book_table`
//! (`ctx.elicit`); the session whose run made the call gets
//! `input_requested` and answers with `POST /api/sessions/{id}/input/{id}`.
//! Two sessions asking at once each get their own request (their own
//! connections, `McpSessions`); another user cannot see or answer them; a
//! form's values are checked; a run cancelled while it waits cancels the
//! server's call. On Redis, a request held by one server is listed and
//! answered through another.

use std::path::Path;
use std::time::Duration;

use lc_agent::Turn;
use lc_agent_deepagent::mcp::{McpConfig, McpServerConfig, McpSessions};
use lc_agent_test_support::needs;
use lc_agent_test_support::poll::{tries_in, until};
use lc_agent_test_support::python::mcp_sdk_server;
use lc_agent_test_support::server::*;
use lc_agent_test_support::sse;
use serde_json::{json, Value};

/// A server whose sessions get the SDK server at `url`, each with
/// connections of its own, and the model's `turns`.
async fn server_with(url: &str, turns: Vec<Turn>) -> (TestServer, McpSessions) {
    server_on(url, turns, None).await
}

/// [`server_with`], its sessions and runs on the Redis at `redis`.
async fn server_on(url: &str, turns: Vec<Turn>, redis: Option<&str>) -> (TestServer, McpSessions) {
    let mut config = McpConfig::default();
    config
        .mcp_servers
        .insert("sdk".into(), McpServerConfig::http(url.to_string()));
    let (mcp, asks) = McpSessions::new(config);
    let failures = mcp.connect().await;
    assert!(failures.is_empty(), "{failures:?}");
    let shared = mcp.clone();
    let redis = redis.map(str::to_string);
    let server = start_with(move |dir| {
        let config = lc_agent_test_support::server::config(scripted(turns), dir)
            .modifier_shared(std::sync::Arc::new(shared));
        match redis {
            Some(url) => config.sessions(lc_agent::ListConfig::redis(url)),
            None => config,
        }
    })
    .await;
    server.state.ask_people(asks);
    (server, mcp)
}

fn book(id: &str) -> Turn {
    call(id, "book_table", json!({"day": "Friday"}))
}

async fn start_run(base: &str, session: &str) -> String {
    let r = post(
        &format!("{base}/api/sessions/{session}/runs"),
        ALICE,
        json!({"content": "Book a table.", "background": true}),
    )
    .await;
    assert_eq!(r.status(), 202);
    r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The session's open requests for input, once there is one.
async fn asked(base: &str, session: &str) -> Value {
    until(
        "a request for input",
        tries_in(Duration::from_secs(30)),
        || async {
            let s = get_json(&format!("{base}/api/sessions/{session}"), ALICE).await;
            match s["pending_input"].as_array() {
                Some(open) if !open.is_empty() => Ok(open[0].clone()),
                _ => Err(s["pending_input"].to_string()),
            }
        },
    )
    .await
}

async fn answer(base: &str, token: &str, session: &str, id: &str, body: Value) -> (u16, Value) {
    let r = post(
        &format!("{base}/api/sessions/{session}/input/{id}"),
        token,
        body,
    )
    .await;
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// The tool results of the session, in order.
async fn tool_results(base: &str, session: &str) -> Vec<Value> {
    let s = get_json(&format!("{base}/api/sessions/{session}"), ALICE).await;
    s["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
        .collect()
}

/// A finished run's events, by name.
async fn events(base: &str, run: &str) -> Vec<(String, Value)> {
    let body = get(&format!("{base}/api/runs/{run}/events?after=0"), ALICE)
        .await
        .text()
        .await
        .unwrap();
    sse::events(&body)
        .into_iter()
        .map(|e| (e.name, e.data))
        .collect()
}

#[needs(python_mcp)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_asked_at_once_each_answer_their_own_request() {
    let (_sdk, url) = mcp_sdk_server(None);
    let turns = vec![
        book("b1"),
        book("b2"),
        Turn::text("Done."),
        Turn::text("Done."),
    ];
    let (server, mcp) = server_with(&url, turns).await;
    let base = server.url.clone();
    let (ada, bo) = (
        new_session(&base, ALICE).await,
        new_session(&base, ALICE).await,
    );
    let (run_ada, run_bo) = (start_run(&base, &ada).await, start_run(&base, &bo).await);
    let (asked_ada, asked_bo) = (asked(&base, &ada).await, asked(&base, &bo).await);
    assert_ne!(asked_ada["id"], asked_bo["id"]);
    assert_eq!(asked_ada["server"], "sdk");
    assert_eq!(asked_ada["message"], "Book a table for Friday?");
    assert_eq!(asked_ada["run"], run_ada.as_str());
    assert_eq!(asked_bo["run"], run_bo.as_str());
    let schema = &asked_ada["requested_schema"];
    assert_eq!(schema["properties"]["party"]["default"], 2);
    assert_eq!(schema["required"], json!(["name"]));
    assert_eq!(mcp.open_sessions(), 2, "a connection set per session");
    let ada_id = asked_ada["id"].as_str().unwrap();
    let bo_id = asked_bo["id"].as_str().unwrap();

    // Another user neither sees nor answers them.
    let (status, _) = answer(&base, BOB, &ada, ada_id, json!({"action": "decline"})).await;
    assert_eq!(status, 404);
    // Values that do not fit the form: 400, the request stays open.
    let (status, error) = answer(
        &base,
        ALICE,
        &ada,
        ada_id,
        json!({"action": "accept", "content": {"name": "Ada", "party": 40}}),
    )
    .await;
    assert_eq!(status, 400, "{error}");
    assert!(error.to_string().contains("party"), "{error}");
    let (status, error) = answer(&base, ALICE, &ada, ada_id, json!({"action": "maybe"})).await;
    assert_eq!(status, 400, "{error}");
    // A request of one session is not answered through the other.
    let (status, _) = answer(&base, ALICE, &bo, ada_id, json!({"action": "decline"})).await;
    assert_eq!(status, 404);

    let (status, body) = answer(
        &base,
        ALICE,
        &ada,
        ada_id,
        json!({"action": "accept", "content": {"name": "Ada", "party": 4, "room": "terrace"}}),
    )
    .await;
    assert_eq!((status, &body["action"]), (200, &json!("accept")), "{body}");
    let (status, _) = answer(&base, ALICE, &bo, bo_id, json!({"action": "decline"})).await;
    assert_eq!(status, 200);
    // Answered once: a second answer finds nothing.
    let (status, _) = answer(&base, ALICE, &bo, bo_id, json!({"action": "cancel"})).await;
    assert_eq!(status, 404);

    wait_status(&base, &run_ada, "done", tries_in(Duration::from_secs(30))).await;
    wait_status(&base, &run_bo, "done", tries_in(Duration::from_secs(30))).await;
    assert_eq!(
        tool_results(&base, &ada).await,
        [json!({"action": "accept", "declared": true,
                "content": {"name": "Ada", "party": 4, "room": "terrace", "vegetarian": false}})]
    );
    assert_eq!(
        tool_results(&base, &bo).await,
        [json!({"action": "decline", "declared": true})]
    );
    let seen = events(&base, &run_ada).await;
    let names: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
    let requested = names.iter().position(|n| *n == "input_requested").unwrap();
    let answered = names.iter().position(|n| *n == "input_answered").unwrap();
    let finished = names
        .iter()
        .position(|n| *n == "tool_call_finished")
        .unwrap();
    assert!(requested < answered && answered < finished, "{names:?}");
    assert_eq!(seen[requested].1["id"], ada_id);
    assert_eq!(seen[requested].1["requested_schema"], *schema);
    assert_eq!(seen[answered].1, json!({"id": ada_id, "action": "accept"}));
    let s = get_json(&format!("{base}/api/sessions/{ada}"), ALICE).await;
    assert_eq!(s["pending_input"], json!([]));
    mcp.disconnect().await;
    server.stop().await;
}

#[needs(python_mcp)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cancelled_while_it_waits_for_input_cancels_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("answers.jsonl");
    let (_sdk, url) = mcp_sdk_server(Some(&log));
    let (server, mcp) = server_with(&url, vec![book("b1"), Turn::text("Done.")]).await;
    let base = server.url.clone();
    let session = new_session(&base, ALICE).await;
    let run = start_run(&base, &session).await;
    let open = asked(&base, &session).await;
    let r = post(&format!("{base}/api/runs/{run}/cancel"), ALICE, json!({})).await;
    assert_eq!(r.status(), 202);
    wait_status(&base, &run, "cancelled", tries_in(Duration::from_secs(30))).await;
    let line = until(
        "the server's answer",
        tries_in(Duration::from_secs(30)),
        || {
            let log = log.clone();
            async move { read_log(&log) }
        },
    )
    .await;
    // The call itself is cancelled (`notifications/cancelled`), the
    // request for input with it.
    assert_eq!(line, json!({"cancelled": true, "declared": true}));
    let (status, _) = answer(
        &base,
        ALICE,
        &session,
        open["id"].as_str().unwrap(),
        json!({"action": "decline"}),
    )
    .await;
    assert_eq!(status, 404);
    mcp.disconnect().await;
    server.stop().await;
}

fn read_log(log: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(log).map_err(|e| e.to_string())?;
    let line = text.lines().next().ok_or("no answer yet")?;
    serde_json::from_str(line).map_err(|e| e.to_string())
}

/// Two servers on one Redis: the request is held by the server that runs
/// the call, listed by both, and answered through the other one (values
/// checked there against the listed form); the holder takes the answer
/// and the call goes on.
#[needs(redis, python_mcp)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_a_request_held_by_one_server_is_answered_through_another() {
    let redis = lc_agent_test_support::RedisServer::start();
    let (_sdk, url) = mcp_sdk_server(None);
    let turns = || vec![book("b1"), Turn::text("Done.")];
    let (a, mcp_a) = server_on(&url, turns(), Some(&redis.url())).await;
    let (b, mcp_b) = server_on(&url, turns(), Some(&redis.url())).await;
    let session = new_session(&a.url, ALICE).await;
    let run = start_run(&a.url, &session).await;
    let on_a = asked(&a.url, &session).await;
    let on_b = asked(&b.url, &session).await;
    assert_eq!(on_a["id"], on_b["id"]);
    assert_eq!(on_b["requested_schema"], on_a["requested_schema"]);
    assert_eq!(on_b["run"], run.as_str());
    let (holder, other) = if a.state.runs.executing() == 1 {
        (&a, &b)
    } else {
        (&b, &a)
    };
    assert_eq!(holder.state.runs.executing(), 1);
    let id = on_a["id"].as_str().unwrap();
    // Another user sees nothing of it on either server.
    let r = post(
        &format!("{}/api/sessions/{session}/input/{id}", other.url),
        BOB,
        json!({"action": "decline"}),
    )
    .await;
    assert_eq!(r.status(), 404);
    let (status, error) = answer(
        &other.url,
        ALICE,
        &session,
        id,
        json!({"action": "accept", "content": {"party": 3}}),
    )
    .await;
    assert_eq!(status, 400, "{error}");
    assert!(error.to_string().contains("name"), "{error}");
    let (status, body) = answer(
        &other.url,
        ALICE,
        &session,
        id,
        json!({"action": "accept", "content": {"name": "Cy", "party": 3}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    wait_status(&a.url, &run, "done", tries_in(Duration::from_secs(30))).await;
    assert_eq!(
        tool_results(&a.url, &session).await,
        [json!({"action": "accept", "declared": true,
                "content": {"name": "Cy", "party": 3, "room": "inside", "vegetarian": false}})]
    );
    let seen = events(&b.url, &run).await;
    assert!(
        seen.iter()
            .any(|(n, d)| n == "input_answered" && d["id"] == id && d["action"] == "accept"),
        "{seen:?}"
    );
    for server in [&a, &b] {
        let s = get_json(&format!("{}/api/sessions/{session}", server.url), ALICE).await;
        assert_eq!(s["pending_input"], json!([]));
    }
    mcp_a.disconnect().await;
    mcp_b.disconnect().await;
    a.stop().await;
    b.stop().await;
}

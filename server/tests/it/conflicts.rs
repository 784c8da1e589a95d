//! Runs that would overwrite each other get 409 instead: a second run of a
//! session while one goes on in the same server, and a run whose session
//! another server (same store) saved meanwhile. Nothing is lost.

use std::time::Duration;

use lc_agent::{ChatModel, ChatRequest, ChatResponse, ListConfig, ModelError};
use lc_agent_server::AppState;
use lc_agent_test_support::needs;
use lc_agent_test_support::server::*;
use lc_agent_test_support::RedisServer;
use serde_json::{json, Value};

/// Answers "slow" after `delay` (a stand-in for a model at work).
struct SlowModel(Duration);

#[async_trait::async_trait]
impl ChatModel for SlowModel {
    async fn complete(&self, _request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        tokio::time::sleep(self.0).await;
        Ok(ChatResponse {
            content: "slow".into(),
            tool_calls: vec![],
            usage: None,
            finish_reason: Some("stop".into()),
            model: None,
        })
    }
}

#[tokio::test]
async fn a_second_message_to_a_running_session_joins_its_run_and_a_second_run_gets_409() {
    let server = start(SlowModel(Duration::from_millis(800))).await;
    let base = server.url.clone();
    let created: Value = post(&format!("{base}/api/sessions"), ALICE, json!({}))
        .await
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap().to_string();
    let url = format!("{base}/api/sessions/{id}/messages");
    let first = post(&url, ALICE, json!({"content": "one"})).await;
    assert_eq!(first.status(), 200);
    // A message joins the run going on (steering: 202 with its id)...
    let second = post(&url, ALICE, json!({"content": "two"})).await;
    assert_eq!(second.status(), 202);
    let steered: Value = second.json().await.unwrap();
    assert_eq!(steered["mode"], "inject", "{steered}");
    // ... a second run of it is refused, naming the first.
    let third = post(
        &format!("{base}/api/sessions/{id}/runs"),
        ALICE,
        json!({"content": "three", "background": true}),
    )
    .await;
    assert_eq!(third.status(), 409);
    assert!(third.text().await.unwrap().contains("in progress"));
    let events = sse_events(&first.text().await.unwrap());
    assert_eq!(events.last().unwrap().1["answer"], "slow");
    assert!(
        events
            .iter()
            .any(|(name, data)| name == "steered" && data["id"] == steered["id"]),
        "{events:?}"
    );
    let _ = server.stop().await;
}

#[tokio::test]
async fn a_run_over_a_copy_another_server_saved_meanwhile_gets_409_and_overwrites_nothing() {
    // Two servers (two states) on one session store.
    let a = start(SlowModel(Duration::from_millis(800))).await;
    let store = a.dir.path().to_path_buf();
    let b_state = AppState::new(config(SlowModel(Duration::from_millis(1)), &store)).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let b = format!("http://{}", listener.local_addr().unwrap());
    let b_task = tokio::spawn(lc_agent_server::serve(
        listener,
        b_state,
        std::future::pending(),
    ));

    let created: Value = post(&format!("{}/api/sessions", a.url), ALICE, json!({}))
        .await
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap().to_string();
    let slow = post(
        &format!("{}/api/sessions/{id}/messages", a.url),
        ALICE,
        json!({"content": "on a"}),
    )
    .await;
    assert_eq!(slow.status(), 200);
    // While A's model works (once A's checkpoints before the model call
    // are saved), B runs a turn on the same session and saves.
    tokio::time::sleep(Duration::from_millis(250)).await;
    let fast = post(
        &format!("{b}/api/sessions/{id}/messages"),
        ALICE,
        json!({"content": "on b"}),
    )
    .await;
    let fast_events = sse_events(&fast.text().await.unwrap());
    assert_eq!(fast_events.last().unwrap().0, "done", "{fast_events:?}");
    // A's save is refused: its stream ends with a 409 error.
    let slow_events = sse_events(&slow.text().await.unwrap());
    let (name, data) = slow_events.last().unwrap();
    assert_eq!(name, "error");
    assert_eq!(data["status"], 409, "{data}");
    // B's turn is intact.
    let session: Value = get_json(&format!("{b}/api/sessions/{id}"), ALICE).await;
    let humans: Vec<&str> = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "human")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(humans, ["on a", "on b"]);
    let answers = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "ai")
        .count();
    // B's run answered the conversation as it stood ("on a", "on b"): A's
    // checkpoint already held the chat node A was running, and B ran it
    // too (two processes on one JSON directory do not share their runs:
    // Redis keeps one run per session across servers).
    assert!((1..=2).contains(&answers), "{session}");
    assert_eq!(
        session["messages"].as_array().unwrap().last().unwrap()["role"],
        "ai"
    );
    b_task.abort();
    let _ = a.stop().await;
}

#[tokio::test]
async fn a_request_over_the_timeout_gets_408_and_its_run_still_finishes_and_saves() {
    let server = start_with(|dir| {
        config(SlowModel(Duration::from_millis(700)), dir)
            .request_timeout(Duration::from_millis(200))
    })
    .await;
    let base = server.url.clone();
    let r = post(
        &format!("{base}/v1/chat/completions"),
        ALICE,
        json!({"messages": [{"role": "user", "content": "take your time"}]}),
    )
    .await;
    assert_eq!(r.status(), 408);
    // The run goes on in its own task and saves its answer.
    let list: Value = get_json(&format!("{base}/api/sessions"), ALICE).await;
    let id = list["sessions"][0]["id"].as_str().unwrap().to_string();
    let mut answered = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let session: Value = get_json(&format!("{base}/api/sessions/{id}"), ALICE).await;
        if session["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "ai" && m["content"] == "slow")
        {
            answered = true;
            break;
        }
    }
    assert!(answered, "the cut request's run did not save its answer");
    let _ = server.stop().await;
}

/// Server A runs a turn of a session; server B (same store) deletes the
/// session meanwhile. The delete is final: A's save is refused (its run
/// ends with a 404 error naming the delete) and the session stays gone.
async fn a_delete_on_one_server_is_final_for_the_other(
    store: impl Fn(&std::path::Path) -> ListConfig,
) {
    let a =
        start_with(|dir| config(SlowModel(Duration::from_millis(800)), dir).sessions(store(dir)))
            .await;
    // On Redis either server may take the run from the queue: both are slow.
    let b = start_with(|_| {
        config(SlowModel(Duration::from_millis(800)), a.dir.path()).sessions(store(a.dir.path()))
    })
    .await;

    let id = new_session(&a.url, ALICE).await;
    let slow = post(
        &format!("{}/api/sessions/{id}/messages", a.url),
        ALICE,
        json!({"content": "on a"}),
    )
    .await;
    assert_eq!(slow.status(), 200);
    // Once the run is at work (its model call began):
    tokio::time::sleep(Duration::from_millis(250)).await;
    let deleted = delete(&format!("{}/api/sessions/{id}", b.url), ALICE).await;
    assert_eq!(deleted.status(), 204);

    let events = sse_events(&slow.text().await.unwrap());
    let (name, data) = events.last().unwrap();
    assert_eq!(name, "error", "{events:?}");
    assert_eq!(data["status"], 404, "{data}");
    assert!(
        data["message"].as_str().unwrap().contains("was deleted"),
        "{data}"
    );
    for server in [&a.url, &b.url] {
        let gone = get(&format!("{server}/api/sessions/{id}"), ALICE).await;
        assert_eq!(gone.status(), 404);
        let listed: Value = get_json(&format!("{server}/api/sessions"), ALICE).await;
        assert!(!listed.to_string().contains(&id), "{listed}");
    }
    let _ = b.stop().await;
    let _ = a.stop().await;
}

#[tokio::test]
async fn a_delete_is_final_on_the_json_list() {
    a_delete_on_one_server_is_final_for_the_other(|dir| ListConfig::json(dir.join("shared"))).await;
}

#[needs(redis)]
#[tokio::test]
async fn a_delete_is_final_on_redis() {
    let redis = RedisServer::start();
    let url = redis.url();
    a_delete_on_one_server_is_final_for_the_other(move |_| ListConfig::redis(url.clone())).await;
}

/// On Redis, a message posted to one server while the run goes on at
/// either joins that run: kept in the session's inbox in Redis, read by
/// the server running it (through its lease's poll when it is the other
/// one), in the run's events, in the session once, and out of the inbox.
#[needs(redis)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_a_message_posted_to_another_server_joins_the_run() {
    let redis = RedisServer::start();
    let url = redis.url();
    let on_redis = |dir: &std::path::Path| {
        config(SlowModel(Duration::from_millis(1500)), dir).sessions(ListConfig::redis(&url))
    };
    let a = start_with(on_redis).await;
    let b = start_with(|_| on_redis(a.dir.path())).await;
    let id = new_session(&a.url, ALICE).await;
    let first = post(
        &format!("{}/api/sessions/{id}/messages", a.url),
        ALICE,
        json!({"content": "one"}),
    )
    .await;
    assert_eq!(first.status(), 200);

    let second = post(
        &format!("{}/api/sessions/{id}/messages", b.url),
        ALICE,
        json!({"content": "two", "mode": "queue"}),
    )
    .await;

    assert_eq!(second.status(), 202);
    let steered: Value = second.json().await.unwrap();
    let events = sse_events(&first.text().await.unwrap());
    assert!(
        events
            .iter()
            .any(|(name, data)| name == "steered" && data["id"] == steered["id"]),
        "{events:?}"
    );
    assert_eq!(events.last().unwrap().0, "done", "{events:?}");
    let shown: Value = get(&format!("{}/api/sessions/{id}", b.url), ALICE)
        .await
        .json()
        .await
        .unwrap();
    let said = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["content"] == "two")
        .count();
    assert_eq!(said, 1, "{shown}");
    assert_eq!(shown["inbox"], json!([]), "{shown}");
    let _ = a.stop().await;
    let _ = b.stop().await;
}

//! What the server keeps (issue 21 items 10, 11): `store: false` keeps
//! no session; `retention` removes sessions not saved for that long; two
//! servers with session caches on one store see each other's turns and
//! deletes. A `store: false` run's record and events keep no message,
//! no answer and no tool arguments (issue 31 item 9).

use std::sync::Arc;
use std::time::Duration;

use lc_agent::{ListConfig, ScriptedChatModel, Turn};
use lc_agent_server::{ServerConfig, Tokens};
use lc_agent_test_support::server::*;
use serde_json::{json, Value};

fn cycled() -> ScriptedChatModel {
    ScriptedChatModel::new([Turn::text("ok")]).cycled()
}

async fn total(url: &str) -> u64 {
    get_json(&format!("{url}/api/sessions"), ALICE).await["total"]
        .as_u64()
        .unwrap()
}

#[tokio::test]
async fn store_false_keeps_no_session() {
    let server = start(cycled()).await;
    let url = format!("{}/v1/chat/completions", server.url);
    let ask = json!({"messages": [{"role": "user", "content": "hi"}], "store": false});
    let r = post(&url, ALICE, ask.clone()).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("x-lc-agent-session").is_none());
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "ok");
    assert!(body["session"].is_null(), "{body}");
    // Streamed too.
    let mut streamed = ask.clone();
    streamed["stream"] = json!(true);
    let text = post(&url, ALICE, streamed).await.text().await.unwrap();
    let chunks = sse_events(&text);
    assert!(chunks
        .iter()
        .any(|(_, c)| c["choices"][0]["delta"]["content"] == "ok"));
    assert!(chunks
        .iter()
        .filter(|(_, c)| c.is_object())
        .all(|(_, c)| c["session"].is_null()));
    assert_eq!(total(&server.url).await, 0, "nothing was kept");
    // A stored session run with store: false is read, not changed.
    let r = post(
        &url,
        ALICE,
        json!({"messages": [{"role": "user", "content": "keep"}]}),
    )
    .await;
    let id = r.json::<Value>().await.unwrap()["session"]
        .as_str()
        .unwrap()
        .to_string();
    let before = get_json(&format!("{}/api/sessions/{id}", server.url), ALICE).await;
    let r = post(
        &url,
        ALICE,
        json!({"session": id, "messages": [{"role": "user", "content": "forget"}], "store": false}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let after = get_json(&format!("{}/api/sessions/{id}", server.url), ALICE).await;
    assert_eq!(before["revision"], after["revision"]);
    assert_eq!(before["messages"], after["messages"]);
    assert_eq!(total(&server.url).await, 1);
    server.stop().await;
}

/// Every file under `dir`, as text.
fn files_under(dir: &std::path::Path) -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.push((path, String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
    }
    out
}

#[tokio::test]
async fn store_false_keeps_no_message_answer_or_arguments_in_the_run() {
    let model = scripted(vec![
        call(
            "w1",
            "write_file",
            json!({"file_path": "/s.md", "content": "secret-argument"}),
        ),
        Turn::text("secret-answer"),
    ]);
    let server = start(model).await;
    let r = post(
        &format!("{}/v1/chat/completions", server.url),
        ALICE,
        json!({"messages": [{"role": "user", "content": "secret-message"}], "store": false}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let run = r.headers()["x-lc-agent-run"].to_str().unwrap().to_string();
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "secret-answer");
    let record = get_json(&format!("{}/api/runs/{run}", server.url), ALICE).await;
    assert!(record["answer"].is_null(), "{record}");
    assert!(!record.to_string().contains("secret-"), "{record}");
    let events = get(&format!("{}/api/runs/{run}/events", server.url), ALICE)
        .await
        .text()
        .await
        .unwrap();
    assert!(events.contains("event: done"), "{events}");
    for secret in ["secret-message", "secret-argument"] {
        assert!(!events.contains(secret), "{secret} in {events}");
        for (path, text) in files_under(server.dir.path()) {
            assert!(!text.contains(secret), "{secret} in {}", path.display());
        }
    }
    server.stop().await;
}

#[tokio::test]
async fn sessions_past_the_retention_are_removed() {
    let server = start_with(|dir| config(cycled(), dir).retention(Duration::from_secs(1))).await;
    let old = new_session(&server.url, ALICE).await;
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let fresh = new_session(&server.url, ALICE).await;
    let list = get_json(&format!("{}/api/sessions", server.url), ALICE).await;
    let ids: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [fresh.as_str()]);
    let r = get(&format!("{}/api/sessions/{old}", server.url), ALICE).await;
    assert_eq!(r.status(), 404);
    server.stop().await;
}

/// Two servers, each with its cache, on one JSON store.
#[tokio::test]
async fn cached_servers_see_each_others_turns_and_deletes() {
    let a = start_with(|dir| config(cycled(), dir).session_cache(16)).await;
    let store = a.dir.path().join("sessions");
    let b = start_with(move |_| {
        ServerConfig::new(Arc::new(cycled()))
            .sessions(ListConfig::json(store))
            .tokens(Tokens::parse(&format!("alice:{ALICE},bob:{BOB}")).unwrap())
            .session_cache(16)
    })
    .await;
    let turn = |base: String, id: String, text: &'static str| async move {
        let r = post(
            &format!("{base}/v1/chat/completions"),
            ALICE,
            json!({"session": id, "messages": [{"role": "user", "content": text}]}),
        )
        .await;
        assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    };
    let id = new_session(&a.url, ALICE).await;
    turn(a.url.clone(), id.clone(), "one on a").await;
    turn(a.url.clone(), id.clone(), "two on a").await;
    turn(b.url.clone(), id.clone(), "three on b").await;
    turn(a.url.clone(), id.clone(), "four on a").await;
    let view = get_json(&format!("{}/api/sessions/{id}", b.url), ALICE).await;
    let humans: Vec<&str> = view["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "human" || m["type"] == "human")
        .filter_map(|m| m["content"].as_str().or(m["text"].as_str()))
        .collect();
    assert_eq!(
        humans,
        ["one on a", "two on a", "three on b", "four on a"],
        "{view}"
    );
    // b deletes; a (which kept the session) does not serve or save it.
    let r = delete(&format!("{}/api/sessions/{id}", b.url), ALICE).await;
    assert_eq!(r.status(), 204);
    let r = post(
        &format!("{}/v1/chat/completions", a.url),
        ALICE,
        json!({"session": id, "messages": [{"role": "user", "content": "five"}]}),
    )
    .await;
    assert_eq!(r.status(), 404);
    let r = get(&format!("{}/api/sessions/{id}", a.url), ALICE).await;
    assert_eq!(r.status(), 404);
    b.stop().await;
    a.stop().await;
}

#[tokio::test]
async fn a_sessions_files_are_capped_per_file_and_in_total() {
    let model = scripted(vec![
        call(
            "w1",
            "write_file",
            json!({"file_path": "/big.md", "content": "x".repeat(2_000)}),
        ),
        call(
            "w2",
            "write_file",
            json!({"file_path": "/a.md", "content": "a".repeat(900)}),
        ),
        call(
            "w3",
            "write_file",
            json!({"file_path": "/b.md", "content": "b".repeat(900)}),
        ),
        Turn::text("Tried."),
    ]);
    let server = start_with(|dir| {
        config(model, dir)
            .max_file_bytes(1_000)
            .max_session_files_bytes(1_500)
    })
    .await;
    let r = post(
        &format!("{}/v1/chat/completions", server.url),
        ALICE,
        json!({"messages": [{"role": "user", "content": "write"}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let id = r.headers()["x-lc-agent-session"]
        .to_str()
        .unwrap()
        .to_string();
    let view = get_json(&format!("{}/api/sessions/{id}", server.url), ALICE).await;
    // The file over the per-file cap, and the one over the total, were undone.
    assert!(view["files"].get("/big.md").is_none(), "{}", view["files"]);
    assert_eq!(view["files"]["/a.md"]["content"], "a".repeat(900));
    assert!(view["files"].get("/b.md").is_none(), "{}", view["files"]);
    let results: Vec<String> = view["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    // The per-file cap is the write limit the file tools keep to (the
    // same at every door), so nothing was written in the first place.
    assert!(
        results[0].contains("over the write limit of 1000 bytes")
            && results[0].contains("Nothing was written"),
        "{results:?}"
    );
    assert!(
        results[2].contains("--max-session-files-bytes"),
        "{results:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn the_session_view_answers_unchanged_without_reading_the_session() {
    let server = start(cycled()).await;
    let id = new_session(&server.url, ALICE).await;
    let url = format!("{}/api/sessions/{id}", server.url);
    let view = get_json(&url, ALICE).await;
    let revision = view["revision"].as_u64().unwrap();
    let same = get_json(&format!("{url}?since={revision}"), ALICE).await;
    assert_eq!(
        same,
        json!({"id": id, "revision": revision, "unchanged": true})
    );
    // Another user learns nothing from it.
    let r = get(&format!("{url}?since={revision}"), BOB).await;
    assert_eq!(r.status(), 404);
    // After a turn: the whole view again.
    let r = post(
        &format!("{url}/messages"),
        ALICE,
        json!({"content": "hello"}),
    )
    .await;
    assert!(r.text().await.unwrap().contains("event: done"));
    let changed = get_json(&format!("{url}?since={revision}"), ALICE).await;
    assert!(changed.get("unchanged").is_none(), "{changed}");
    assert!(changed["revision"].as_u64().unwrap() > revision);
    assert!(changed["messages"].as_array().unwrap().len() >= 2);
    server.stop().await;
}

/// Issue 31 item 10: the session view is bounded. A page of messages
/// (`messages_total`, `offset`/`limit`), a long tool call clipped (the
/// node whole at `/nodes/{id}`), a large file listed with its size and
/// fetched alone with `?file=`.
#[tokio::test]
async fn the_session_view_is_paged_and_large_texts_are_left_out_unless_asked() {
    let big = "line of the big file\n"
        .repeat(15_000)
        .trim_end()
        .to_string();
    let model = scripted(vec![
        call(
            "w1",
            "write_file",
            json!({"file_path": "/big.md", "content": big}),
        ),
        call(
            "w2",
            "write_file",
            json!({"file_path": "/small.md", "content": "small"}),
        ),
        Turn::text("Written."),
    ]);
    let server = start_with(|dir| config(model, dir)).await;
    let r = post(
        &format!("{}/v1/chat/completions", server.url),
        ALICE,
        json!({"messages": [{"role": "user", "content": "write"}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let id = r.headers()["x-lc-agent-session"]
        .to_str()
        .unwrap()
        .to_string();
    let url = format!("{}/api/sessions/{id}", server.url);
    let whole = get(&url, ALICE).await.text().await.unwrap();
    assert!(whole.len() < 100_000, "the view is {} bytes", whole.len());
    let view: Value = serde_json::from_str(&whole).unwrap();
    let total = view["messages_total"].as_u64().unwrap();
    assert_eq!(total, view["messages"].as_array().unwrap().len() as u64);
    assert!(total >= 6, "{view}");
    assert_eq!(view["files"]["/small.md"]["content"], "small");
    assert_eq!(view["files"]["/big.md"]["content"], Value::Null);
    assert_eq!(view["files"]["/big.md"]["omitted"], true);
    assert_eq!(view["files"]["/big.md"]["bytes"], big.len());
    // The write's call is clipped; its node holds it whole.
    let clipped = view["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["clipped"] == true)
        .unwrap_or_else(|| panic!("no clipped message: {view}"));
    let node = get_json(
        &format!("{url}/nodes/{}", clipped["node_id"].as_str().unwrap()),
        ALICE,
    )
    .await;
    assert!(node.to_string().len() > big.len(), "the node is whole");
    // One file, whole, when asked.
    let one = get_json(&format!("{url}?file=/big.md"), ALICE).await;
    assert_eq!(
        one["files"]["/big.md"]["content"],
        big.trim_end_matches('\n')
    );
    // A page: the first two messages, then the rest.
    let first = get_json(&format!("{url}?offset=0&limit=2"), ALICE).await;
    assert_eq!(first["messages"].as_array().unwrap().len(), 2);
    assert_eq!(first["messages_offset"], 0);
    assert_eq!(
        first["messages"][0]["node_id"],
        view["messages"][0]["node_id"]
    );
    let rest = get_json(&format!("{url}?offset=2"), ALICE).await;
    assert_eq!(rest["messages"].as_array().unwrap().len() as u64, total - 2);
    // Nothing changed: the revision alone.
    let same = get_json(&format!("{url}?since={}", view["revision"]), ALICE).await;
    assert_eq!(same["unchanged"], true, "{same}");
    let _ = server.stop().await;
}

#[tokio::test]
async fn store_false_leaves_nothing_behind_on_an_idle_server() {
    let server = start_with(|dir| {
        config(cycled(), dir).runs(lc_agent_server::RunSettings {
            keep: Duration::from_secs(1),
            ..lc_agent_server::RunSettings::default()
        })
    })
    .await;
    let url = format!("{}/v1/chat/completions", server.url);
    let secret = "the words of a store: false answer";
    let r = post(
        &url,
        ALICE,
        json!({"messages": [{"role": "user", "content": secret}], "store": false}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let runs = server.dir.path().join("sessions").join(".runs");
    let kept = || {
        std::fs::read_dir(&runs)
            .map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
            .unwrap_or_default()
    };
    // Nothing else happens on the server: the run's files still go.
    for _ in 0..100 {
        if kept().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(kept().is_empty(), "left behind: {:?}", kept());
    let _ = server.stop().await;
}

//! The session API the web page needs, over real HTTP on loopback: a
//! session named by its first message, rename, search and paging of the
//! list, one node in full, the graph's node states, stopping a run (it
//! ends at once and keeps what ran), continuing a cut-off answer, and the
//! favicon.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use lc_agent::{ChatModel, ChatRequest, ChatResponse, ModelError, ScriptedChatModel, Turn, Usage};
use lc_agent_test_support::server::*;
use serde_json::{json, Value};

async fn patch(url: &str, token: &str, body: Value) -> reqwest::Response {
    client()
        .patch(url)
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_first_message_names_the_session_and_a_rename_keeps_it() {
    let server = start(scripted(vec![Turn::text("one"), Turn::text("two")])).await;
    let base = &server.url;
    let r = post(&format!("{base}/api/sessions"), ALICE, json!({})).await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let session = format!("{base}/api/sessions/{id}");
    assert_eq!(get_json(&session, ALICE).await["name"], "New session");

    let long = format!(
        "  \n  Plan the trip to Lisbon {}\nsecond line",
        "x".repeat(80)
    );
    let body = post(
        &format!("{session}/messages"),
        ALICE,
        json!({"content": long}),
    )
    .await
    .text()
    .await
    .unwrap();
    assert!(sse_events(&body).iter().any(|(n, _)| n == "done"), "{body}");
    let name = get_json(&session, ALICE).await["name"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(name.starts_with("Plan the trip to Lisbon x"), "{name}");
    assert_eq!(name.chars().count(), 60, "{name}");
    assert!(name.ends_with('…'), "{name}");

    // Renamed, and a second message does not rename it again.
    let r = patch(&session, ALICE, json!({"name": "  Lisbon  "})).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["name"], "Lisbon");
    post(
        &format!("{session}/messages"),
        ALICE,
        json!({"content": "more"}),
    )
    .await
    .text()
    .await
    .unwrap();
    assert_eq!(get_json(&session, ALICE).await["name"], "Lisbon");

    // Refusals: empty, too long, unknown field, not found, another user's.
    assert_eq!(
        patch(&session, ALICE, json!({"name": " "})).await.status(),
        400
    );
    let too_long = "n".repeat(201);
    assert_eq!(
        patch(&session, ALICE, json!({"name": too_long}))
            .await
            .status(),
        400
    );
    assert_eq!(
        patch(&session, ALICE, json!({"title": "x"})).await.status(),
        422
    );
    let nobody = format!("{base}/api/sessions/{}", uuid::Uuid::new_v4());
    assert_eq!(
        patch(&nobody, ALICE, json!({"name": "x"})).await.status(),
        404
    );
    assert_eq!(
        patch(&session, BOB, json!({"name": "x"})).await.status(),
        404
    );
    assert_eq!(get_json(&session, ALICE).await["name"], "Lisbon");
    let _ = server.stop().await;
}

#[tokio::test]
async fn the_list_pages_newest_first_and_searches_names() {
    let server = start(scripted(vec![])).await;
    let base = &server.url;
    for i in 0..7 {
        let name = if i % 2 == 0 {
            format!("alpha {i}")
        } else {
            format!("Beta {i}")
        };
        let r = post(
            &format!("{base}/api/sessions"),
            ALICE,
            json!({"name": name}),
        )
        .await;
        assert_eq!(r.status(), 201);
        // Distinct save times, so the order is known.
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    let page = get_json(&format!("{base}/api/sessions?limit=3"), ALICE).await;
    let names = |page: &Value| -> Vec<String> {
        page["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(page["total"], 7);
    assert_eq!(names(&page), ["alpha 6", "Beta 5", "alpha 4"]);
    let next = get_json(&format!("{base}/api/sessions?limit=3&offset=3"), ALICE).await;
    assert_eq!(names(&next), ["Beta 3", "alpha 2", "Beta 1"]);

    let found = get_json(&format!("{base}/api/sessions?q=beta"), ALICE).await;
    assert_eq!(found["total"], 3);
    assert_eq!(names(&found), ["Beta 5", "Beta 3", "Beta 1"]);
    let paged = get_json(
        &format!("{base}/api/sessions?q=BETA&limit=1&offset=1"),
        ALICE,
    )
    .await;
    assert_eq!(
        (paged["total"].clone(), names(&paged)),
        (json!(3), vec!["Beta 3".to_string()])
    );
    let none = get_json(&format!("{base}/api/sessions?q=gamma"), ALICE).await;
    assert_eq!(none["total"], 0);
    // Bob sees none of Alice's.
    assert_eq!(
        get_json(&format!("{base}/api/sessions?q=a"), BOB).await["total"],
        0
    );
    let _ = server.stop().await;
}

#[tokio::test]
async fn stop_ends_a_slow_run_at_once_and_the_session_keeps_what_ran() {
    let model = scripted(vec![
        call(
            "t1",
            "write_todos",
            json!({"todos": [{"content": "Look", "status": "in_progress"}]}),
        ),
        Turn::text("never said").delayed(Duration::from_secs(60)),
        Turn::text("after the stop"),
    ]);
    let server = start(model).await;
    let base = server.url.clone();
    let id = new_session(&base, ALICE).await;
    let session = format!("{base}/api/sessions/{id}");

    // Nothing runs yet: nothing to stop.
    let r = post(&format!("{session}/stop"), ALICE, json!({})).await;
    assert_eq!(r.status(), 409);

    let started = Instant::now();
    let run = tokio::spawn({
        let session = session.clone();
        async move {
            post(
                &format!("{session}/messages"),
                ALICE,
                json!({"content": "go"}),
            )
            .await
            .text()
            .await
            .unwrap()
        }
    });
    // Wait until the slow model turn is in flight (the todos ran).
    for _ in 0..100 {
        if server.state.running() == 1 {
            let r = post(&format!("{session}/stop"), BOB, json!({})).await;
            assert_eq!(r.status(), 404, "Bob cannot stop Alice's run");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        if started.elapsed() > Duration::from_millis(600) {
            break;
        }
    }
    let r = post(&format!("{session}/stop"), ALICE, json!({})).await;
    assert_eq!(r.status(), 202);
    let body = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("the stopped run ends at once")
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(15));
    let events = sse_events(&body);
    let stopped = events.iter().find(|(n, _)| n == "stopped").expect(&body);
    assert_eq!(stopped.1["removed"], 1, "the chat node in flight");
    let (last, done) = events.last().unwrap();
    assert_eq!(last, "done");
    assert_eq!(done["stopped"], true);
    assert_eq!(server.state.running(), 0);

    // Saved: the message, the call and its result, the todos; nothing
    // pending, no half answer.
    let view = get_json(&session, ALICE).await;
    let roles: Vec<&str> = view["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["human", "ai", "tool"]);
    assert_eq!(view["todos"][0]["content"], "Look");
    let states: Vec<&str> = view["graph"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["state"].as_str().unwrap())
        .collect();
    assert!(states.iter().all(|s| *s == "ran"), "{states:?}");

    // The session goes on from there.
    let body = post(
        &format!("{session}/messages"),
        ALICE,
        json!({"content": "again"}),
    )
    .await
    .text()
    .await
    .unwrap();
    let (last, done) = sse_events(&body).pop().unwrap();
    assert_eq!(
        (last.as_str(), done["answer"].as_str()),
        ("done", Some("after the stop"))
    );
    assert_eq!(done["stopped"], false);
    let _ = server.stop().await;
}

/// Answers like the script, but the first answer is cut off by the
/// output limit and every answer reports its usage.
struct CutOffFirst {
    script: ScriptedChatModel,
    cut: AtomicBool,
}

#[async_trait]
impl ChatModel for CutOffFirst {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let mut response = self.script.complete(request).await?;
        if !self.cut.swap(true, Ordering::SeqCst) {
            response.finish_reason = Some("length".into());
        }
        response.usage = Some(Usage {
            prompt_tokens: 10,
            completion_tokens: 5,
            total_tokens: 15,
            ..Usage::default()
        });
        Ok(response)
    }
}

#[tokio::test]
async fn a_cut_off_answer_continues_and_usage_adds_up() {
    let model = CutOffFirst {
        script: ScriptedChatModel::new(["The list: one, two,", " three."]),
        cut: AtomicBool::new(false),
    };
    let server = start(model).await;
    let base = server.url.clone();
    let id = new_session(&base, ALICE).await;
    let session = format!("{base}/api/sessions/{id}");

    // Nothing to continue yet.
    let r = post(&format!("{session}/continue"), ALICE, json!({})).await;
    assert_eq!(r.status(), 400);

    let body = post(
        &format!("{session}/messages"),
        ALICE,
        json!({"content": "list"}),
    )
    .await
    .text()
    .await
    .unwrap();
    let events = sse_events(&body);
    assert!(events.iter().any(|(n, _)| n == "answer_cut_off"), "{body}");
    let view = get_json(&session, ALICE).await;
    let last = view["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (last["role"].clone(), last["cut_off"].clone()),
        (json!("ai"), json!(true))
    );
    assert_eq!(last["token_usage"]["total_tokens"], 15);

    let body = post(&format!("{session}/continue"), ALICE, json!({}))
        .await
        .text()
        .await
        .unwrap();
    let (last, done) = sse_events(&body).pop().unwrap();
    assert_eq!(
        (last.as_str(), done["answer"].as_str()),
        ("done", Some(" three."))
    );
    let view = get_json(&session, ALICE).await;
    assert_eq!(view["usage"]["total_tokens"], 30);
    assert_eq!(view["usage"]["prompt_tokens"], 20);
    // Complete now: nothing more to continue.
    let r = post(&format!("{session}/continue"), ALICE, json!({})).await;
    assert_eq!(r.status(), 400);
    let _ = server.stop().await;
}

#[tokio::test]
async fn a_node_shows_in_full_and_the_graph_says_what_waits() {
    let model = scripted(vec![call(
        "w1",
        "write_file",
        json!({"file_path": "/a.md", "content": "hi"}),
    )]);
    let server = start_with(|dir| config(model, dir).spec(approval_spec("write_file"))).await;
    let base = server.url.clone();
    let id = new_session(&base, ALICE).await;
    let session = format!("{base}/api/sessions/{id}");
    post(
        &format!("{session}/messages"),
        ALICE,
        json!({"content": "write"}),
    )
    .await
    .text()
    .await
    .unwrap();
    let view = get_json(&session, ALICE).await;
    let nodes = view["graph"]["nodes"].as_array().unwrap();
    let tool = nodes.iter().find(|n| n["kind"] == "tool").unwrap();
    assert_eq!(tool["state"], "held");
    let chat = nodes
        .iter()
        .find(|n| n["kind"] == "chat" && n["state"] == "ran")
        .unwrap();
    assert_eq!(chat["excerpt"], "calls write_file");

    let detail = get_json(
        &format!("{session}/nodes/{}", chat["id"].as_str().unwrap()),
        ALICE,
    )
    .await;
    assert_eq!(detail["output"]["tool_calls"][0]["name"], "write_file");
    assert!(detail["input"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["role"] == "human" && m["content"] == "write"));
    assert!(detail["metadata"].is_object());
    let r = get(&format!("{session}/nodes/{}", uuid::Uuid::new_v4()), ALICE).await;
    assert_eq!(r.status(), 404);
    let r = get(
        &format!("{session}/nodes/{}", chat["id"].as_str().unwrap()),
        BOB,
    )
    .await;
    assert_eq!(r.status(), 404);
    let _ = server.stop().await;
}

#[tokio::test]
async fn the_page_has_a_favicon_and_its_libraries_with_licenses() {
    // No connection needed: the router in process.
    let server = InProcess::new(scripted(vec![]));
    let r = server.get("/favicon.ico", ALICE, &[]).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "image/svg+xml");
    assert!(r.text().starts_with("<svg"));
    let page = server.get("/", ALICE, &[]).await.text();
    for (script, license) in [
        ("marked-18.2.1.umd.js", "marked-LICENSE"),
        ("purify-3.4.18.min.js", "dompurify-LICENSE"),
        ("highlight-11.12.0.min.js", "highlight-LICENSE"),
        ("mermaid-11.12.1.min.js", "mermaid-LICENSE"),
    ] {
        assert!(page.contains(&format!("/assets/{script}")), "{script}");
        assert!(page.contains(&format!("/assets/{license}")), "{license}");
        for name in [script, license] {
            let r = server.get(&format!("/assets/{name}"), ALICE, &[]).await;
            assert_eq!(r.status, 200, "{name}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_question_being_answered_shows_in_the_view_while_its_run_goes_on() {
    // What a page reloaded mid-run reads: the question is there at once.
    let server = start(scripted(vec![
        Turn::text("the answer").delayed(Duration::from_millis(2_000))
    ]))
    .await;
    let session = new_session(&server.url, ALICE).await;
    let r = post(
        &format!("{}/api/sessions/{session}/runs", server.url),
        ALICE,
        json!({"content": "THE QUESTION", "background": true}),
    )
    .await;
    assert_eq!(r.status(), 202);
    let run = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    wait_status(&server.url, &run, "running", 300).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let view = get_json(&format!("{}/api/sessions/{session}", server.url), ALICE).await;
    let said: Vec<&str> = view["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "human")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(said, ["THE QUESTION"], "{view}");
    let done = wait_status(&server.url, &run, "done", 300).await;
    assert_eq!(done["answer"], "the answer");
    let view = get_json(&format!("{}/api/sessions/{session}", server.url), ALICE).await;
    let humans = view["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "human")
        .count();
    assert_eq!(humans, 1, "once, after the run too: {view}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_sessions_view_carries_its_latest_graph_nodes_and_more_on_demand() {
    let server = start(scripted(vec![Turn::text("ok")])).await;
    let session = new_session(&server.url, ALICE).await;
    // 1,200 turns written straight to the store (what a long session is).
    let lists = lc_agent::ListConfig::json(server.dir.path().join("sessions"))
        .open()
        .unwrap();
    let list = lists.user("alice").unwrap();
    let net = list.load(session.parse().unwrap()).await.unwrap();
    {
        let _s = net.enter();
        for i in 0..600 {
            lc_agent::HumanNode::new(format!("question {i}"));
            lc_agent::ChatNode::new().set_output(lc_agent::Message::ai(format!("answer {i}")));
        }
    }
    list.save(&net).await.unwrap();
    let total = net.nodes().len();
    let url = format!("{}/api/sessions/{session}", server.url);
    let view = get_json(&url, ALICE).await;
    assert_eq!(view["graph_total"], total);
    let nodes = view["graph"]["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 300, "the latest 300");
    assert_eq!(nodes.last().unwrap()["excerpt"], "answer 599");
    assert!(view["mermaid"].is_null(), "no unbounded text beside it");
    let bytes = serde_json::to_vec(&view).unwrap().len();
    assert!(bytes < 200_000, "the view is {bytes} bytes");
    // "Show earlier": twice as many.
    let more = get_json(&format!("{url}?graph=600"), ALICE).await;
    assert_eq!(more["graph"]["nodes"].as_array().unwrap().len(), 600);
    // A short session: all of it, and its mermaid text.
    let short = new_session(&server.url, ALICE).await;
    let view = get_json(&format!("{}/api/sessions/{short}", server.url), ALICE).await;
    assert_eq!(
        view["graph_total"],
        view["graph"]["nodes"].as_array().unwrap().len()
    );
    assert!(view["mermaid"].is_string());
    server.stop().await;
}

//! Time travel on the API: fork a session at a node, rewind it, diff the
//! two; another user's session is refused.

use lc_agent::Turn;
use lc_agent_test_support::server::*;
use serde_json::{json, Value};

#[tokio::test]
async fn fork_rewind_and_diff_a_session() {
    let server = start(scripted(vec![
        Turn::text("one"),
        Turn::text("two"),
        Turn::text("three"),
    ]))
    .await;
    let base = &server.url;
    let r = post(&format!("{base}/api/sessions"), ALICE, json!({})).await;
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let session = format!("{base}/api/sessions/{id}");
    for text in ["first", "second"] {
        let body = post(
            &format!("{session}/messages"),
            ALICE,
            json!({"content": text}),
        )
        .await
        .text()
        .await
        .unwrap();
        assert!(sse_events(&body).iter().any(|(n, _)| n == "done"), "{body}");
    }
    let shown = get_json(&session, ALICE).await;
    let one = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["content"] == "one")
        .unwrap_or_else(|| panic!("{shown}"))["node_id"]
        .as_str()
        .unwrap()
        .to_string();

    // Fork at the first answer.
    let r = post(&format!("{session}/fork"), ALICE, json!({"node": one})).await;
    assert_eq!(r.status(), 201);
    let fork = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let forked = get_json(&format!("{base}/api/sessions/{fork}"), ALICE).await;
    let texts: Vec<&str> = forked["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(
        texts.contains(&"one") && !texts.contains(&"two"),
        "{forked}"
    );

    // Diff: the origin has the second turn after the shared part.
    let diff = get_json(&format!("{session}/diff/{fork}"), ALICE).await;
    assert_eq!(diff["shared"]["last"], one.as_str(), "{diff}");
    assert_eq!(diff["b"]["nodes"], 0, "{diff}");
    let after: Vec<&str> = diff["a"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["text"].as_str())
        .collect();
    assert_eq!(after, ["second", "two"], "{diff}");

    // Rewind the conversation: the next message goes below the first answer.
    let r = post(
        &format!("{session}/rewind"),
        ALICE,
        json!({"node": one, "what": "conversation"}),
    )
    .await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let body = post(
        &format!("{session}/messages"),
        ALICE,
        json!({"content": "again"}),
    )
    .await
    .text()
    .await
    .unwrap();
    assert!(sse_events(&body).iter().any(|(n, _)| n == "done"), "{body}");
    let diff = get_json(&format!("{session}/diff/{fork}"), ALICE).await;
    let after: Vec<&str> = diff["a"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["text"].as_str())
        .collect();
    assert_eq!(after, ["again", "three"], "{diff}");

    // Another user's session: refused as every session endpoint does.
    for r in [
        post(&format!("{session}/fork"), BOB, json!({"node": one})).await,
        post(&format!("{session}/rewind"), BOB, json!({"node": one})).await,
    ] {
        assert!(matches!(r.status().as_u16(), 403 | 404), "{}", r.status());
    }
    let r = client()
        .get(format!("{session}/diff/{fork}"))
        .bearer_auth(BOB)
        .send()
        .await
        .unwrap();
    assert!(matches!(r.status().as_u16(), 403 | 404), "{}", r.status());
}

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
    // Usage belongs to nodes: the fork's own is none yet, the origin's
    // first call shown apart; the origin keeps its two.
    assert_eq!(forked["usage"]["calls"], 0, "{forked}");
    assert_eq!(forked["usage_inherited"]["calls"], 1, "{forked}");
    assert_eq!(get_json(&session, ALICE).await["usage"]["calls"], 2);
    let usage = get_json(&format!("{base}/api/usage"), ALICE).await;
    assert_eq!(
        usage["calls"], 2,
        "each call once over the sessions: {usage}"
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

/// The contents of `message` in a session view, in order.
fn contents(view: &Value) -> Vec<String> {
    view["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "human" || m["role"] == "ai")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .filter(|c| !c.is_empty())
        .collect()
}

#[tokio::test]
async fn a_message_said_again_makes_a_branch_the_view_switches_between() {
    let server = start(scripted(vec![
        Turn::text("one"),
        Turn::text("two"),
        Turn::text("two, again"),
    ]))
    .await;
    let base = &server.url;
    let id = new_session(base, ALICE).await;
    let session = format!("{base}/api/sessions/{id}");
    let say = |text: &'static str| {
        let url = format!("{session}/messages");
        async move {
            let body = post(&url, ALICE, json!({"content": text}))
                .await
                .text()
                .await
                .unwrap();
            assert!(sse_events(&body).iter().any(|(n, _)| n == "done"), "{body}");
        }
    };
    say("first").await;
    say("second").await;
    let view = get_json(&session, ALICE).await;
    let second = view["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["content"] == "second")
        .unwrap()
        .clone();
    assert!(second.get("branches").is_none(), "{second}");
    // Edit: back to the message's parent (the conversation only), then
    // the new text runs as a second branch.
    let r = post(
        &format!("{session}/rewind"),
        ALICE,
        json!({"node": second["parent"], "what": "conversation"}),
    )
    .await;
    assert_eq!(r.status(), 200);
    say("second, said again").await;
    let view = get_json(&session, ALICE).await;
    assert_eq!(
        contents(&view),
        ["first", "one", "second, said again", "two, again"],
        "only the current branch: {view}"
    );
    let edited = view["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["content"] == "second, said again")
        .unwrap();
    let branches = edited["branches"].as_array().unwrap();
    assert_eq!(branches.len(), 2, "{edited}");
    assert_eq!(branches[1]["node"], edited["node_id"]);
    assert_eq!(branches[0]["node"], second["node_id"]);
    // The graph keeps both, the old branch marked.
    let off: Vec<&Value> = view["graph"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["off_branch"] == true)
        .collect();
    assert_eq!(off.len(), 2, "the old message and its answer: {view}");
    assert!(off.iter().any(|n| n["id"] == second["node_id"]));
    // Switch: the old branch's leaf becomes the current one.
    let r = post(
        &format!("{session}/rewind"),
        ALICE,
        json!({"node": branches[0]["leaf"], "what": "conversation"}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let view = get_json(&session, ALICE).await;
    assert_eq!(contents(&view), ["first", "one", "second", "two"], "{view}");
}

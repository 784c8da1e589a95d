//! The SSE events of a run, through a real server: a summary and an empty
//! answer are sent as `summary_written` and `empty_answer`, and
//! `run_finished` names its outcome with a stable string. The model is a
//! scripted one (a stand-in for a real model).

use lc_agent::Turn;
use lc_agent_deepagent::SummarizationConfig;
use lc_agent_test_support::server::*;
use serde_json::{json, Value};

/// Sends `content` to the session and returns the run's events.
async fn say(base: &str, id: &str, content: &str) -> Vec<(String, Value)> {
    let r = post(
        &format!("{base}/api/sessions/{id}/messages"),
        ALICE,
        json!({"content": content}),
    )
    .await;
    assert_eq!(r.status(), 200);
    sse_events(&r.text().await.unwrap())
}

fn named<'a>(events: &'a [(String, Value)], name: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, v)| v)
        .collect()
}

#[tokio::test]
async fn summaries_and_empty_answers_are_streamed_and_the_outcome_is_a_stable_string() {
    // Turn 1: "a1". Turn 2: the summary (same model), then an empty answer.
    let model = scripted(vec![
        Turn::text("a1"),
        Turn::text("S: q1 was asked and answered."),
        Turn::text(""),
    ]);
    let mut spec = approval_spec("write_file");
    spec.summarization = Some(SummarizationConfig {
        approximate_tokens: true,
        trigger_fraction: None,
        every_human_turns: Some(2),
        keep_messages: 1,
        ..SummarizationConfig::default()
    });
    let server = start_with(|dir| config(model, dir).spec(spec)).await;
    let base = &server.url;
    let id = new_session(base, ALICE).await;

    let first = say(base, &id, "q1").await;
    assert!(named(&first, "summary_written").is_empty());
    assert!(named(&first, "empty_answer").is_empty());
    let finished = named(&first, "run_finished");
    assert_eq!(finished.len(), 1, "{first:?}");
    assert_eq!(finished[0]["outcome"], "completed");
    assert!(finished[0]["duration_ms"].as_f64().unwrap() >= 0.0);

    let second = say(base, &id, "q2").await;
    let summaries = named(&second, "summary_written");
    assert_eq!(summaries.len(), 1, "{second:?}");
    let summary = summaries[0];
    assert_eq!(summary["kind"], "summary");
    assert!(summary["summarized"].as_u64().unwrap() >= 2, "{summary}");
    assert!(summary["kept"].as_u64().unwrap() >= 1, "{summary}");
    let empty = named(&second, "empty_answer");
    assert_eq!(empty.len(), 1, "{second:?}");
    assert_eq!(empty[0]["kind"], "chat");
    // The empty answer came from the last chat node of the run.
    let chats: Vec<&Value> = named(&second, "node_finished")
        .into_iter()
        .filter(|v| v["kind"] == "chat")
        .collect();
    assert_eq!(empty[0]["node_id"], chats.last().unwrap()["node_id"]);
    // The summary node is in the saved session under the id the event named.
    let session: Value = get_json(&format!("{base}/api/sessions/{id}"), ALICE).await;
    let text = session.to_string();
    assert!(
        text.contains(summary["node_id"].as_str().unwrap()),
        "{text}"
    );
    assert_eq!(named(&second, "run_finished")[0]["outcome"], "completed");
    let _ = server.stop().await;
}

#[tokio::test]
async fn a_held_run_finishes_with_outcome_held_and_the_held_nodes() {
    let model = scripted(vec![
        call(
            "w1",
            "write_file",
            json!({"file_path": "/a.md", "content": "text"}),
        ),
        Turn::text("Written."),
    ]);
    let spec = approval_spec("write_file");
    let server = start_with(|dir| config(model, dir).spec(spec)).await;
    let base = &server.url;
    let id = new_session(base, ALICE).await;
    let events = say(base, &id, "write a.md").await;
    let finished = named(&events, "run_finished");
    assert_eq!(finished.len(), 1, "{events:?}");
    assert_eq!(finished[0]["outcome"], "held");
    let pending = named(&events, "approval_needed")[0]["pending"][0]["node_id"].clone();
    assert_eq!(finished[0]["held"], json!([pending]));
    let _ = server.stop().await;
}

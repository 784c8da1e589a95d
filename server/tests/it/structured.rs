//! Typed answers through `/v1/chat/completions` with the official `openai`
//! Python package: `response_format` applies to the agent's final answer
//! (an answer that does not fit is asked again with the errors), whole and
//! streamed; the session keeps the rejected answer and the value. A
//! fenced or surrounded answer that validates is delivered as the JSON
//! value itself (issue 49 item 3): `content` parses as JSON.

use lc_agent::{ScriptedChatModel, Turn};
use lc_agent_test_support::needs;
use lc_agent_test_support::python;
use lc_agent_test_support::server::*;
use serde_json::{json, Value};

#[needs(python_openai)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_format_applies_to_the_agents_final_answer() {
    let model = ScriptedChatModel::new([
        Turn::text("Lyon has about 520,000 people."),
        Turn::text("```json\n{\"city\": \"Lyon\", \"people\": 520000}\n```"),
        Turn::text("[\"Paris\"]"),
        Turn::text("Here it is: {\"city\": \"Paris\"} as asked."),
    ]);
    let server = start(model).await;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/python/structured_client.py"
    );
    let url = server.url.clone();
    let got =
        tokio::task::spawn_blocking(move || python::run_json(script.as_ref(), &[&url, ALICE]))
            .await
            .unwrap();
    assert_eq!(got["first"], json!({"city": "Lyon", "people": 520000}));
    let streamed: Value = serde_json::from_str(got["streamed"].as_str().unwrap()).unwrap();
    assert_eq!(streamed, json!({"city": "Paris"}));

    let session = got["session"].as_str().unwrap();
    // Through the session list: the snapshot file alone may be older than
    // the session (its journal holds the later saves).
    let list = lc_agent::JsonNetworkList::new(server.dir.path().join("sessions"))
        .with_user("alice")
        .unwrap();
    let text = lc_agent::NetworkList::load_json(&list, session.parse().unwrap())
        .await
        .unwrap();
    let saved: Value = serde_json::from_str(&text).unwrap();
    let chats: Vec<&Value> = saved["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["__node_type__"] == "chat")
        .collect();
    assert_eq!(chats.len(), 2);
    assert_eq!(
        chats[0]["metadata"]["schema_rejected"][0]["answer"],
        "Lyon has about 520,000 people."
    );
    assert_eq!(
        chats[1]["metadata"]["structured_output"],
        json!({"city": "Paris"})
    );
    // The model's own words are kept beside the value it delivered.
    assert_eq!(
        chats[1]["metadata"]["raw_answer"],
        "Here it is: {\"city\": \"Paris\"} as asked."
    );
}

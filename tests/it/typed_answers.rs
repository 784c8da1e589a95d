//! Typed answers: a chat node's output schema asked of the provider
//! (`response_format`, or a forced tool), the answer checked and asked
//! again with the errors, the value saved on the node.

use lc_agent::{AnthropicChatModel, NodeRef, OutputSchemaExt, MAX_ANSWERS};
use lc_agent::{
    ChatModel, ChatNode, ChatRequest, History, HumanNode, Message, NetworkError, OpenAiChatModel,
    OutputSchema, RunnableNetwork, ScriptedChatModel, StreamDelta, Turn,
};
use lc_agent_test_support::{MockServer, Reply};
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Debug, PartialEq, Deserialize, schemars::JsonSchema)]
struct City {
    name: String,
    people: u64,
}

fn agent(turns: Vec<Turn>) -> RunnableNetwork {
    RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("m")
        .model("m", ScriptedChatModel::new(turns))
        .build()
}

fn city_schema() -> OutputSchema {
    OutputSchema::new(json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "people": {"type": "integer", "minimum": 0}},
        "required": ["name", "people"]
    }))
    .unwrap()
}

#[tokio::test]
async fn invoke_typed_asks_again_with_the_errors_and_saves_the_value_on_the_node() {
    let net = agent(vec![
        Turn::text("Lyon has about 520,000 people."),
        Turn::text("```json\n{\"name\": \"Lyon\", \"people\": \"many\"}\n```"),
        Turn::text("{\"name\": \"Lyon\", \"people\": 520000}"),
    ]);
    {
        let _s = net.enter();
        HumanNode::new("How big is Lyon?");
    }
    let city: City = net.invoke_typed().await.unwrap();
    assert_eq!(
        city,
        City {
            name: "Lyon".into(),
            people: 520_000
        }
    );
    let leaf = net.current_leaf().unwrap();
    assert_eq!(
        leaf.metadata_value("structured_output"),
        Some(json!({"name": "Lyon", "people": 520000}))
    );
    let rejected = leaf.metadata_value("schema_rejected").unwrap();
    let rejected = rejected.as_array().unwrap();
    assert_eq!(rejected.len(), 2, "{rejected:?}");
    assert!(rejected[0]["errors"][0]
        .as_str()
        .unwrap()
        .contains("not JSON"));
    assert!(rejected[1]["errors"][0]
        .as_str()
        .unwrap()
        .contains("/people"));
    // The schema was for this run only; the value round-trips exactly.
    assert_eq!(net.output_schema_for_step("chat"), None);
    let saved = net.to_json().unwrap();
    let loaded = RunnableNetwork::from_json(&saved).unwrap();
    assert_eq!(loaded.to_json().unwrap(), saved);
    assert_eq!(
        loaded
            .node(leaf.id())
            .unwrap()
            .metadata_value("structured_output"),
        leaf.metadata_value("structured_output")
    );
}

#[tokio::test]
async fn an_answer_that_never_fits_fails_with_the_errors() {
    let net = agent(vec![Turn::text("{\"name\": \"Lyon\"}"); MAX_ANSWERS + 1]);
    let chat = {
        let _s = net.enter();
        HumanNode::new("How big is Lyon?");
        NodeRef::create(ChatNode {
            output_schema: Some(city_schema()),
            ..ChatNode::default()
        })
    };
    let error = net.invoke().await.unwrap_err();
    let NetworkError::NodeFailed { source, .. } = &error else {
        panic!("{error}");
    };
    match source.downcast_ref::<NetworkError>() {
        Some(NetworkError::SchemaMismatch { attempts, errors }) => {
            assert_eq!(*attempts, MAX_ANSWERS);
            assert!(errors.iter().any(|e| e.contains("people")), "{errors:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        chat.metadata_value("schema_rejected")
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        MAX_ANSWERS
    );
    // The node's own schema is saved with it.
    let loaded = RunnableNetwork::from_json(&net.to_json().unwrap()).unwrap();
    let node = loaded.node(chat.id()).unwrap();
    assert_eq!(
        node.downcast::<ChatNode>().unwrap().output_schema,
        Some(city_schema())
    );
}

#[tokio::test]
async fn a_turn_that_calls_tools_is_not_checked() {
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("m")
        .model(
            "m",
            ScriptedChatModel::new([
                Turn::call("c1", "clock", json!({})),
                Turn::text("{\"name\": \"Lyon\", \"people\": 1}"),
            ]),
        )
        .tool(lc_agent::FnTool::new(
            "clock",
            "The time.",
            json!({"type": "object"}),
            |_, _| async { Ok(lc_agent::ToolOutput::ok("noon")) },
        ))
        .build();
    net.set_output_schema("chat", Some(city_schema()));
    {
        let _s = net.enter();
        HumanNode::new("How big is Lyon?");
    }
    let answer = net.invoke().await.unwrap();
    assert_eq!(answer.text(), "{\"name\": \"Lyon\", \"people\": 1}");
    // A saved step schema is the blueprint's: it stays and loads back.
    let loaded = RunnableNetwork::from_json(&net.to_json().unwrap()).unwrap();
    assert_eq!(loaded.output_schema_for_step("chat"), Some(city_schema()));
}

fn completion(message: Value) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    })
}

/// An answer that calls the forced `city` tool with `name` and `people`.
fn city_call(id: &str, name: &str, people: u32) -> Reply {
    let arguments = format!(r#"{{"name": "{name}", "people": {people}}}"#);
    Reply::json(completion(
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "city", "arguments": arguments}}
        ]}),
    ))
}

fn with_schema(text: &str) -> ChatRequest {
    let mut request = ChatRequest::new(History::from_messages([Message::human(text)]));
    request.output_schema = Some(city_schema().named("city"));
    request
}

#[tokio::test]
async fn openai_sends_response_format_and_falls_back_to_a_forced_tool() {
    let server = MockServer::start(
        "/v1",
        "/chat/completions",
        vec![
            Reply::json(completion(json!({"role": "assistant", "content": "{\"name\": \"A\", \"people\": 1}"}))),
            Reply::raw(422, r#"{"detail": [{"loc": ["body", "response_format", "type"], "msg": "Input should be 'text' or 'json_object'"}]}"#),
            city_call("call_1", "B", 2),
            city_call("call_2", "C", 3),
        ],
    )
    .await;
    let model = OpenAiChatModel::builder()
        .model("m")
        .base_url(&server.base_url)
        .api_key("k")
        .build()
        .unwrap();
    let answer = model.complete(&with_schema("a")).await.unwrap();
    assert_eq!(answer.content, "{\"name\": \"A\", \"people\": 1}");
    let body = server.body(0);
    assert_eq!(
        body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "city", "schema": city_schema().schema(), "strict": false}})
    );
    // A server that refuses it: the same request with a forced tool.
    let answer = model.complete(&with_schema("b")).await.unwrap();
    assert_eq!(answer.content, "{\"name\": \"B\", \"people\": 2}");
    assert!(answer.tool_calls.is_empty());
    let body = server.body(2);
    assert!(body.get("response_format").is_none(), "{body}");
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "city"}})
    );
    assert_eq!(
        body["tools"][0]["function"]["parameters"],
        *city_schema().schema()
    );
    // Remembered: the next request (streamed) goes with the tool at once,
    // and its answer is reported as text.
    let mut deltas = Vec::new();
    let answer = model
        .stream(&with_schema("c"), &mut |d| deltas.push(d))
        .await
        .unwrap();
    assert_eq!(answer.content, "{\"name\": \"C\", \"people\": 3}");
    assert_eq!(server.requests(), 4);
    assert!(server.body(3).get("response_format").is_none());
    assert!(
        deltas.contains(&StreamDelta::Text(answer.content.clone())),
        "{deltas:?}"
    );
}

#[tokio::test]
async fn anthropic_forces_a_tool_whose_input_is_the_answer() {
    let server = MockServer::start(
        "",
        "/v1/messages",
        vec![Reply::json(json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "city", "input": {"name": "Lyon", "people": 520000}}],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 5}
        }))],
    )
    .await;
    let model = AnthropicChatModel::builder()
        .model("claude-test")
        .base_url(&server.base_url)
        .api_key("k")
        .build()
        .unwrap();
    let answer = model
        .complete(&with_schema("How big is Lyon?"))
        .await
        .unwrap();
    let value: Value = serde_json::from_str(&answer.content).unwrap();
    assert_eq!(value, json!({"name": "Lyon", "people": 520000}));
    assert!(answer.tool_calls.is_empty());
    let body = server.body(0);
    assert_eq!(body["tool_choice"], json!({"type": "tool", "name": "city"}));
    assert_eq!(body["tools"][0]["input_schema"], *city_schema().schema());
}

/// llama-cpp-python's function-calling format takes `tool_choice` `auto`,
/// `none` or a named tool, and fails `required` with a bare 500: an
/// output schema asked beside other tools then forces its own tool by
/// name, at once on the next requests.
#[tokio::test]
async fn a_server_that_fails_tool_choice_required_gets_the_schema_tool_by_name() {
    let bare_500 =
        r#"{"error":{"message":"","type":"internal_server_error","param":null,"code":null}}"#;
    let server = MockServer::start(
        "/v1",
        "/chat/completions",
        vec![
            Reply::raw(500, r#"{"error":{"message":"1 validation error: response_format.type: Input should be 'text' or 'json_object'"}}"#),
            Reply::raw(500, bare_500),
            city_call("call_1", "B", 2),
            city_call("call_2", "C", 3),
        ],
    )
    .await;
    let model = OpenAiChatModel::builder()
        .model("m")
        .base_url(&server.base_url)
        .api_key("k")
        .max_retries(0)
        .build()
        .unwrap();
    let with_a_tool = |text: &str| {
        let mut request = with_schema(text);
        request.tools.to_mut().push(lc_agent::ToolSpec {
            name: "lookup".into(),
            description: "Looks a city up.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        });
        request
    };
    let answer = model.complete(&with_a_tool("b")).await.unwrap();
    assert_eq!(answer.content, "{\"name\": \"B\", \"people\": 2}");
    assert!(answer.tool_calls.is_empty());
    assert_eq!(server.body(1)["tool_choice"], json!("required"));
    let named = json!({"type": "function", "function": {"name": "city"}});
    let body = server.body(2);
    assert_eq!(body["tool_choice"], named);
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["lookup", "city"]);
    // Remembered for the next request, streamed: by name at once.
    let answer = model.stream(&with_a_tool("c"), &mut |_| {}).await.unwrap();
    assert_eq!(answer.content, "{\"name\": \"C\", \"people\": 3}");
    assert_eq!(server.requests(), 4);
    assert_eq!(server.body(3)["tool_choice"], named);
}

//! Images in messages: parts saved exactly, sent in each provider's
//! format (OpenAI's `image_url` parts, Anthropic's `image` blocks, tool
//! results' images included), and a model that cannot read images gets a
//! clear error instead of a dropped image.

use std::time::Duration;

use lc_agent::{
    AnthropicChatModel, ChatModel, ChatRequest, ContentPart, History, HumanNode, Message,
    NetworkError, OpenAiChatModel, RunnableNetwork, ScriptedChatModel,
};
use lc_agent_test_support::{MockServer, Reply};
use serde_json::{json, Value};

/// A 1x1 PNG, base64.
const PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

fn tool_image_result() -> Message {
    let Message::Tool {
        content,
        tool_call_id,
        name,
        status,
        ..
    } = Message::tool("Image /shot.png (image/png, 1x1)", "call-1")
    else {
        unreachable!()
    };
    Message::Tool {
        content,
        tool_call_id,
        name,
        status,
        parts: vec![ContentPart::image_base64("image/png", PIXEL)],
    }
}

fn conversation() -> History {
    History::from_messages([
        Message::Human {
            content: "What is in these?".into(),
            parts: vec![
                ContentPart::image_base64("image/png", PIXEL),
                ContentPart::Text { text: "and".into() },
                ContentPart::image_url("https://example.com/cat.jpg"),
            ],
        },
        Message::ai_with_tools(
            "",
            vec![lc_agent::ToolCall::new(
                "call-1",
                "read_file",
                json!({"file_path": "/shot.png"}),
            )],
        ),
        tool_image_result(),
    ])
}

#[tokio::test]
async fn a_session_with_images_saves_loads_and_saves_the_same_bytes() {
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("scripted")
        .model("scripted", ScriptedChatModel::new(["A pixel and a cat."]))
        .build();
    {
        let _scope = net.enter();
        HumanNode::with_parts(
            "What is this?",
            vec![
                ContentPart::image_base64("image/png", PIXEL),
                ContentPart::image_url("https://example.com/cat.jpg"),
            ],
        );
    }
    net.invoke().await.unwrap();
    let saved = net.to_json().unwrap();
    let doc: Value = serde_json::from_str(&saved).unwrap();
    let human = &doc["nodes"][0];
    assert_eq!(
        human["parts"],
        json!([{"type": "image", "media_type": "image/png", "data": PIXEL},
               {"type": "image", "url": "https://example.com/cat.jpg"}])
    );
    assert_eq!(human["outputs"]["parts"], human["parts"]);
    let loaded = RunnableNetwork::from_json(&saved).unwrap();
    assert_eq!(loaded.to_json().unwrap(), saved);
    let first = loaded.nodes()[0].output().unwrap();
    assert!(first.has_images());
    // A text-only node has no `parts` key: old sessions save as before.
    assert!(doc["nodes"][1].get("parts").is_none());
}

#[tokio::test]
async fn openai_gets_image_url_parts_and_tool_images_follow_the_results() {
    let server = MockServer::start(
        "/v1",
        "/chat/completions",
        vec![Reply::json(json!({
            "choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]
        }))],
    )
    .await;
    let model = OpenAiChatModel::builder()
        .model("vision")
        .base_url(&server.base_url)
        .api_key("k")
        .build()
        .unwrap();
    model
        .complete(&ChatRequest::new(conversation()))
        .await
        .unwrap();
    let body = server.body(0);
    let data_url = format!("data:image/png;base64,{PIXEL}");
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "What is in these?"},
                {"type": "image_url", "image_url": {"url": data_url}},
                {"type": "text", "text": "and"},
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}}
            ]},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "call-1", "type": "function",
                "function": {"name": "read_file", "arguments": "{\"file_path\":\"/shot.png\"}"}}]},
            {"role": "tool", "content": "Image /shot.png (image/png, 1x1)", "tool_call_id": "call-1"},
            {"role": "user", "content": [
                {"type": "text", "text": "The result of tool call call-1:"},
                {"type": "image_url", "image_url": {"url": data_url}}
            ]}
        ])
    );
}

#[tokio::test]
async fn anthropic_gets_image_blocks_in_messages_and_tool_results() {
    let server = MockServer::start(
        "",
        "/v1/messages",
        vec![Reply::json(json!({
            "type": "message", "role": "assistant", "model": "claude-test",
            "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 1}
        }))],
    )
    .await;
    let model = AnthropicChatModel::builder()
        .model("claude-test")
        .base_url(&server.base_url)
        .api_key("k")
        .build()
        .unwrap();
    model
        .complete(&ChatRequest::new(conversation()))
        .await
        .unwrap();
    let body = server.body(0);
    let pixel = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}});
    assert_eq!(
        body["messages"][0]["content"],
        json!([
            {"type": "text", "text": "What is in these?"},
            pixel,
            {"type": "text", "text": "and"},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}}
        ])
    );
    assert_eq!(
        body["messages"][2]["content"],
        json!([{"type": "tool_result", "tool_use_id": "call-1", "content": [
            {"type": "text", "text": "Image /shot.png (image/png, 1x1)"}, pixel
        ]}])
    );
}

fn image_net(model: impl ChatModel + 'static) -> RunnableNetwork {
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("eyes")
        .model("eyes", model)
        .build();
    {
        let _scope = net.enter();
        HumanNode::with_parts(
            "Describe it.",
            vec![ContentPart::image_base64("image/png", PIXEL)],
        );
    }
    net
}

/// The error's whole text, checked to be the "cannot read images" one.
fn images_error(error: NetworkError) -> String {
    let text = lc_agent::error_chain(&error);
    assert!(
        text.contains("model `eyes` cannot read images ("),
        "expected ImagesNotSupported, got {text}"
    );
    text
}

#[tokio::test]
async fn a_model_set_without_images_refuses_before_sending() {
    let server = MockServer::start("/v1", "/chat/completions", vec![]).await;
    let model = OpenAiChatModel::builder()
        .model("text-only")
        .base_url(&server.base_url)
        .images(false)
        .build()
        .unwrap();
    let error = image_net(model).invoke().await.unwrap_err();
    let text = images_error(error);
    assert!(
        text.contains("its settings say so: `images = false`"),
        "{text}"
    );
    assert_eq!(server.requests(), 0, "nothing is sent");
}

#[tokio::test]
async fn a_server_that_refuses_images_gives_the_same_error() {
    let server = MockServer::start(
        "/v1",
        "/chat/completions",
        vec![Reply::raw(
            400,
            r#"{"error": {"message": "image input is not supported by this model"}}"#,
        )],
    )
    .await;
    let model = OpenAiChatModel::builder()
        .model("text-only")
        .base_url(&server.base_url)
        .retry_base_delay(Duration::from_millis(1))
        .build()
        .unwrap();
    let error = image_net(model).invoke().await.unwrap_err();
    let text = images_error(error);
    assert!(
        text.contains("its server refused them: HTTP 400: ")
            && text.contains("image input is not supported"),
        "{text}"
    );
}

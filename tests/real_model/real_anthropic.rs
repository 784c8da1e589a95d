//! `AnthropicChatModel` and the agent loop against an independent server
//! speaking the Messages API: LiteLLM's proxy on loopback (see
//! `lc_agent_test_support::LiteLlm`), backed by a real model,
//! llama-cpp-python serving SmolLM2-135M-Instruct (the process's shared
//! `LlamaServer`). A 135M model answers badly, so these tests assert on the
//! protocol and the agent's behaviour, never on wording.

use std::sync::{Arc, OnceLock};

use lc_agent::{
    AnthropicChatModel, ChatModel, ChatNode, ChatRequest, FnTool, History, HumanNode, Message,
    ModelRoutes, NodeRef, RunnableNetwork, StreamDelta, ToolChoice, ToolOutput,
};
use parking_lot::Mutex;
use serde_json::json;

use lc_agent_test_support::{needs, LiteLlm, LlamaServer};

/// The model name the proxy serves.
const MODEL: &str = "smollm2";

/// The proxy in front of the process's model server, shared by the tests
/// of this file (the model answers one request at a time; the tests queue).
fn proxy() -> &'static LiteLlm {
    static PROXY: OnceLock<LiteLlm> = OnceLock::new();
    PROXY.get_or_init(|| LiteLlm::start(MODEL, &LlamaServer::shared().base_url()))
}

/// The model at the proxy. No prompt-cache markers: LiteLLM passes a
/// marked system prompt on as a list, which llama-cpp-python refuses.
fn model(proxy: &LiteLlm) -> AnthropicChatModel {
    AnthropicChatModel::builder()
        .model(MODEL)
        .base_url(proxy.base_url())
        .api_key(proxy.key())
        .max_tokens(24)
        .temperature(0.0)
        .prompt_caching(false)
        .build()
        .unwrap()
}

fn ask(text: &str) -> ChatRequest {
    ChatRequest::new(History::from_messages([
        Message::system("You are a helpful assistant."),
        Message::human(text),
    ]))
}

#[needs(llama, litellm)]
#[tokio::test]
async fn a_plain_answer_not_streamed_and_streamed() {
    let proxy = proxy();
    let model = model(proxy);

    let answer = model
        .complete(&ask("Say hello."))
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", proxy.log()));
    assert!(!answer.content.trim().is_empty(), "{answer:?}");
    assert!(answer.tool_calls.is_empty(), "{answer:?}");
    assert!(
        matches!(answer.finish_reason.as_deref(), Some("stop" | "length")),
        "end_turn or max_tokens, in common words: {answer:?}"
    );
    let usage = answer.usage.expect("the proxy reports usage");
    assert!(
        usage.prompt_tokens > 0 && usage.completion_tokens > 0,
        "{usage:?}"
    );
    assert!(
        usage.completion_tokens <= 24,
        "max_tokens was sent: {usage:?}"
    );

    let mut text = String::new();
    let streamed = model
        .stream(&ask("Say hello."), &mut |delta| {
            if let StreamDelta::Text(piece) = delta {
                text.push_str(&piece);
            }
        })
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", proxy.log()));
    assert!(!streamed.content.trim().is_empty(), "{streamed:?}");
    assert_eq!(text, streamed.content, "the deltas make the answer");
    assert!(
        matches!(streamed.finish_reason.as_deref(), Some("stop" | "length")),
        "{streamed:?}"
    );
}

/// A tight `max_tokens` cuts the answer off, and it says so.
#[needs(llama, litellm)]
#[tokio::test]
async fn a_cut_off_answer_is_flagged() {
    let proxy = proxy();
    let model = AnthropicChatModel::builder()
        .model(MODEL)
        .base_url(proxy.base_url())
        .api_key(proxy.key())
        .max_tokens(2)
        .temperature(0.0)
        .prompt_caching(false)
        .build()
        .unwrap();

    let answer = model
        .complete(&ask("Write a long story about the sea."))
        .await
        .unwrap();

    assert!(answer.is_cut_off(), "{answer:?}");
}

/// The tool call the request forces is streamed (the proxy opens a block
/// per argument piece, each repeating the call's id), parsed once, run,
/// and the follow-up — the assistant turn with its `tool_use` block, the
/// result as a `tool_result` block in a user message — is answered.
#[needs(llama, litellm)]
#[tokio::test]
async fn a_forced_tool_call_is_run_and_answered_through_the_agent_loop() {
    let proxy = proxy();
    let calls = Arc::new(Mutex::new(Vec::<serde_json::Value>::new()));
    let seen = calls.clone();
    let lookup = FnTool::new(
        "lookup",
        "Looks up a word in the dictionary.",
        json!({"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}),
        move |args, _ctx| {
            seen.lock().push(args.clone());
            async { Ok(ToolOutput::ok("a greeting")) }
        },
    );
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model(MODEL)
        .model(MODEL, model(proxy))
        .tool(lookup)
        .streaming(true)
        .build();
    // After the forced call the model must answer in words.
    net.set_tool_choice_route("chat", Some(ToolChoice::None));
    {
        let _scope = net.enter();
        HumanNode::new("What does the word 'hello' mean? Look it up.");
        NodeRef::create(ChatNode {
            tool_choice: Some(ToolChoice::Tool("lookup".into())),
            ..ChatNode::default()
        });
    }

    let reply = match net.invoke().await {
        Ok(reply) => reply,
        Err(e) => panic!(
            "{e}\n{}\n{}",
            net.nodes()
                .iter()
                .map(|n| format!("{} {:?} {:?}", n.kind(), n.output(), n.metadata()))
                .collect::<Vec<_>>()
                .join("\n"),
            proxy.log()
        ),
    };

    crate::real_model::forced_lookup_was_answered(&net, &calls.lock());
    let last = net.current_leaf().unwrap();
    assert_eq!(last.kind(), "chat");
    assert!(last.metadata_value("error").is_none());
    assert!(reply.tool_calls().is_empty(), "{reply:?}");
}

//! `OpenAiChatModel` and the agent loop against a real model server:
//! llama-cpp-python serving SmolLM2-135M-Instruct on loopback (see
//! `lc_agent_test_support::LlamaServer`). A 135M model answers badly, so
//! these tests assert on the protocol and the agent's behaviour, never on
//! wording.

use std::sync::Arc;

use lc_agent::{
    ChatModel, ChatNode, ChatRequest, FnTool, History, HumanNode, Message, ModelError, ModelRoutes,
    NetworkError, NodeRef, OpenAiChatModel, RunnableNetwork, StreamDelta, ToolChoice, ToolOutput,
};
use parking_lot::Mutex;
use serde_json::json;

use lc_agent_test_support::{needs, LlamaServer};

fn model(server: &LlamaServer) -> OpenAiChatModel {
    OpenAiChatModel::builder()
        .model("smollm2")
        .base_url(server.base_url())
        .max_tokens(24)
        .temperature(0.0)
        .build()
        .unwrap()
}

fn ask(text: &str) -> ChatRequest {
    ChatRequest::new(History::from_messages([Message::human(text)]))
}

#[needs(llama)]
#[tokio::test]
async fn a_plain_answer_not_streamed_and_streamed() {
    let server = LlamaServer::shared();
    let model = model(server);

    let answer = model.complete(&ask("Say hello.")).await.unwrap();
    assert!(!answer.content.trim().is_empty(), "{answer:?}");
    assert!(
        matches!(answer.finish_reason.as_deref(), Some("stop" | "length")),
        "{answer:?}"
    );
    let usage = answer.usage.expect("llama-cpp-python reports usage");
    assert!(
        usage.prompt_tokens > 0 && usage.completion_tokens > 0,
        "{usage:?}"
    );

    let mut text = String::new();
    let streamed = model
        .stream(&ask("Say hello."), &mut |delta| {
            if let StreamDelta::Text(piece) = delta {
                text.push_str(&piece);
            }
        })
        .await
        .unwrap();
    assert!(!streamed.content.trim().is_empty(), "{streamed:?}");
    assert_eq!(text, streamed.content, "the deltas make the answer");
    assert!(streamed.finish_reason.is_some(), "{streamed:?}");
}

/// The tool call the request forces is streamed with its name repeated in
/// every chunk; it is parsed once, run, and the follow-up (an assistant
/// message with tool calls and `content: ""`, then `tool_choice: auto`,
/// which llama-cpp-python will not stream) is answered.
#[needs(llama)]
#[tokio::test]
async fn a_forced_tool_call_is_parsed_run_and_answered() {
    let server = LlamaServer::shared();
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
        .chat_model("smollm2")
        .model("smollm2", model(server))
        .tool(lookup)
        .streaming(true)
        .build();
    // After the forced call the model must answer in words (a 135M model
    // would otherwise call `lookup` until the window is full).
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
            "{e}\n{}",
            net.nodes()
                .iter()
                .map(|n| format!("{} {:?} {:?}", n.kind(), n.output(), n.metadata()))
                .collect::<Vec<_>>()
                .join("\n")
        ),
    };

    forced_lookup_was_answered(&net, &calls.lock());
    // The follow-up (the assistant turn with the call and `content: ""`,
    // the tool result) was accepted and answered in words.
    let last = net.current_leaf().unwrap();
    assert_eq!(last.kind(), "chat");
    assert!(last.metadata_value("error").is_none());
    assert!(reply.tool_calls().is_empty(), "{reply:?}");
}

/// llama-cpp-python will not stream `tool_choice: auto` (it answers 200
/// and sends nothing); the model asks unstreamed, and from then on at
/// once.
#[needs(llama)]
#[tokio::test]
async fn auto_tool_choice_is_answered_though_the_server_will_not_stream_it() {
    let server = LlamaServer::shared();
    let model = model(server);
    let mut request = ask("Look up the word 'hello'.");
    request.tools = vec![lc_agent::ToolSpec {
        name: "lookup".into(),
        description: "Looks up a word in the dictionary.".into(),
        parameters: json!({"type": "object", "properties": {"word": {"type": "string"}}}),
    }]
    .into();

    for _ in 0..2 {
        let mut deltas = 0;
        let answer = model.stream(&request, &mut |_| deltas += 1).await.unwrap();
        assert!(
            !answer.content.trim().is_empty() || !answer.tool_calls.is_empty(),
            "{answer:?}"
        );
        assert!(deltas > 0, "the answer is reported as deltas");
        for call in &answer.tool_calls {
            assert_eq!(call.name, "lookup");
        }
    }
}

/// A prompt that cannot fit the 2,048-token window is a clear
/// `ContextOverflow`, streamed or not, and the window is learned.
#[needs(llama)]
#[tokio::test]
async fn a_prompt_that_cannot_fit_is_a_clear_error() {
    let server = LlamaServer::shared();
    let model = model(server);
    let long = ask(&"word ".repeat(3000));

    let error = model.complete(&long).await.unwrap_err();
    let ModelError::ContextOverflow {
        tokens: Some(tokens),
        window: Some(2048),
    } = error
    else {
        panic!("expected ContextOverflow, got {error:?}");
    };
    assert!(tokens > 2048, "{tokens}");
    assert_eq!(model.context_window().await, Some(2048), "learned");

    let streamed = model.stream(&long, &mut |_| {}).await.unwrap_err();
    assert!(
        matches!(
            streamed,
            ModelError::ContextOverflow {
                window: Some(2048),
                ..
            }
        ),
        "{streamed:?}"
    );

    // In a network the failure is the chat node's, with the same error.
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("smollm2")
        .model("smollm2", model.clone())
        .build();
    {
        let _scope = net.enter();
        HumanNode::new("word ".repeat(3000));
    }
    let error = net.invoke().await.unwrap_err();
    let NetworkError::NodeFailed { source, .. } = &error else {
        panic!("expected NodeFailed, got {error:?}");
    };
    assert!(
        matches!(
            source.downcast_ref::<NetworkError>(),
            Some(NetworkError::Model(ModelError::ContextOverflow { .. }))
        ),
        "{error}"
    );
}

/// The forced call is parsed once, named `lookup` (not `lookuplookup`), and
/// answered by one tool node: the tool's result, or, when the model wrote
/// arguments that are not JSON (what a 135M model writes varies with the
/// machine), the error the model reads. `calls` are the arguments the tool
/// ran with.
pub(crate) fn forced_lookup_was_answered(net: &RunnableNetwork, calls: &[serde_json::Value]) {
    let forced = net
        .nodes()
        .into_iter()
        .find(|n| n.kind() == "chat")
        .and_then(|n| n.output())
        .expect("the forced turn answered");
    let names: Vec<_> = forced.tool_calls().iter().map(|c| c.name.clone()).collect();
    assert_eq!(names, ["lookup"], "{forced:?}");
    let tools: Vec<_> = net
        .nodes()
        .into_iter()
        .filter(|n| n.kind() == "tool")
        .collect();
    assert_eq!(tools.len(), 1);
    let result = tools[0].output().unwrap();
    match calls {
        [args] => {
            assert!(args.is_object(), "{calls:?}");
            assert_eq!(result.text(), "a greeting");
        }
        [] => assert!(
            result.text().contains("Invalid arguments for lookup"),
            "{result:?}"
        ),
        more => panic!("one call to `lookup`: {more:?}"),
    }
}

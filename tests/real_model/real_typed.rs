//! Typed answers against the real model: `invoke_typed` with a schema,
//! whole and streamed. llama-cpp-python refuses `response_format` with a
//! JSON Schema, so the model learns to send the schema as a forced tool,
//! which the server answers under a grammar built from the schema. The
//! tests assert the protocol and that the value fits, never the wording.

use lc_agent::{
    ChatNode, HumanNode, NodeRef, OpenAiChatModel, OutputSchema, OutputSchemaExt, RunnableNetwork,
};
use serde::Deserialize;
use serde_json::json;

use lc_agent_test_support::{needs, LlamaServer};

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct City {
    name: String,
    people: u64,
}

fn agent(server: &LlamaServer, streaming: bool) -> RunnableNetwork {
    let model = OpenAiChatModel::builder()
        .model("smollm2")
        .base_url(server.base_url())
        // Room for the whole object: a cut-off one would not fit.
        .max_tokens(128)
        .temperature(0.0)
        .build()
        .unwrap();
    RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("smollm2")
        .model("smollm2", model)
        .streaming(streaming)
        .build()
}

/// The schema is asked (refused as `response_format`, then sent as a
/// forced tool), the answer fits it, and the value saved on the answering
/// node is the one returned — whole and streamed.
#[needs(llama)]
#[tokio::test]
async fn invoke_typed_on_the_real_model_gives_a_value_that_fits() {
    let server = LlamaServer::shared();
    let _turn = server.conversation().await;
    for streaming in [false, true] {
        let net = agent(server, streaming);
        {
            let _scope = net.enter();
            HumanNode::new("Name a city in France and how many people live there.");
        }
        let city: City = net
            .invoke_typed()
            .await
            .unwrap_or_else(|e| panic!("streaming {streaming}: {e}"));
        let leaf = net.current_leaf().unwrap();
        assert_eq!(leaf.kind(), "chat");
        let saved = leaf.metadata_value("structured_output").unwrap();
        assert_eq!(saved["name"], json!(city.name), "streaming {streaming}");
        assert_eq!(saved["people"], json!(city.people), "streaming {streaming}");
        // Under the grammar the first answer fits: nothing was rejected.
        assert!(
            leaf.metadata_value("schema_rejected").is_none(),
            "streaming {streaming}: {:?}",
            leaf.metadata_value("schema_rejected")
        );
        // The answer is the JSON text of the value, not a tool call.
        let output = leaf.output().unwrap();
        assert!(output.tool_calls().is_empty(), "{output:?}");
        let text: serde_json::Value = serde_json::from_str(output.text().trim()).unwrap();
        assert_eq!(text, saved);
    }
}

/// A chat node's own schema (no Rust type): a value that fits it is on
/// the node, and the saved session loads back with it exactly.
#[needs(llama)]
#[tokio::test]
async fn a_chat_node_schema_on_the_real_model_is_met_and_saved() {
    let server = LlamaServer::shared();
    let _turn = server.conversation().await;
    let schema = OutputSchema::new(json!({
        "type": "object",
        "properties": {
            "answer": {"type": "string", "enum": ["yes", "no"]},
            "sure": {"type": "boolean"}
        },
        "required": ["answer", "sure"]
    }))
    .unwrap();
    let net = agent(server, false);
    let chat = {
        let _scope = net.enter();
        HumanNode::new("Is Paris in France?");
        NodeRef::create(ChatNode {
            output_schema: Some(schema),
            ..ChatNode::default()
        })
    };
    net.invoke().await.unwrap();
    let value = chat.metadata_value("structured_output").unwrap();
    assert!(
        matches!(value["answer"].as_str(), Some("yes" | "no")),
        "{value}"
    );
    assert!(value["sure"].is_boolean(), "{value}");
    let saved = net.to_json().unwrap();
    let loaded = RunnableNetwork::from_json(&saved).unwrap();
    assert_eq!(loaded.to_json().unwrap(), saved);
}

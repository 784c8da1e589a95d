//! The saved format: exact round trips, snapshots, unknown and custom kinds,
//! files, and the Mermaid drawing.

use async_trait::async_trait;
use lc_agent::{
    register_node_kind, Attachments, ChatNode, FileData, FnTool, GenericNode, HumanNode, Message,
    NetworkError, NetworkNode, NodeContext, NodeLogic, Result, RunnableNetwork, Saving,
    ScriptedChatModel, SystemNode, ToolCall, ToolOutput, Turn,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

fn snapshot_settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../../snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings
}

/// Replaces uuids and times (which change every run) with placeholders.
fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                match (key.as_str(), &v) {
                    ("id", Value::String(s)) if uuid::Uuid::parse_str(s).is_ok() => {
                        *v = json!("[uuid]")
                    }
                    ("started_at" | "created_at" | "modified_at", _) => *v = json!("[time]"),
                    ("elapsed_us", _) => *v = json!("[us]"),
                    _ => redact(v),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

/// Human, system, chat with two tool calls, tool results, the next chat,
/// a sub-network and files.
async fn representative() -> RunnableNetwork {
    let model = ScriptedChatModel::new([
        Turn::tool_calls([
            ToolCall::new("call-1", "word_count", json!({"text": "one two three"})),
            ToolCall::new("call-2", "word_count", json!({"text": "four"})),
        ]),
        Turn::text("The texts have 3 and 1 words."),
        Turn::text("Summary from the inner agent."),
    ]);
    let net = RunnableNetwork::builder()
        .name("representative")
        .metadata("user", json!("user-42"))
        .default_node("chat")
        .chat_model("scripted")
        .model("scripted", model)
        .tool(FnTool::new(
            "word_count",
            "Counts the words of `text`.",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            |args, _| async move {
                let n = args["text"].as_str().unwrap_or("").split_whitespace().count();
                Ok(ToolOutput::ok(n.to_string()))
            },
        ))
        .build();
    net.with_files_mut(|files| {
        files.insert("/notes.md".into(), FileData::new("# Notes\n\n- first\n"));
        files.insert("/src/main.rs".into(), FileData::new("fn main() {}"));
    });
    {
        let _s = net.enter();
        SystemNode::new("You count words.");
        HumanNode::new("Count the words of both texts.");
    }
    net.invoke().await.unwrap();
    let inner = RunnableNetwork::builder().name("summarizer").build();
    {
        let _s = inner.enter();
        ChatNode::new();
    }
    {
        let _s = net.enter();
        NetworkNode::new(inner);
    }
    net.invoke().await.unwrap();
    net
}

#[tokio::test]
async fn save_load_save_is_byte_identical() {
    let net = representative().await;
    let saved = net.to_json().unwrap();
    let loaded = RunnableNetwork::from_json(&saved).unwrap();
    assert_eq!(loaded.to_json().unwrap(), saved);
    assert_eq!(loaded.id(), net.id());
    assert_eq!(loaded.len(), net.len());
    assert_eq!(loaded.files(), net.files());
    assert!(loaded.pending().is_empty());
    // Pretty output round-trips the same way.
    let pretty = net.to_json_pretty().unwrap();
    assert_eq!(
        RunnableNetwork::from_json(&pretty)
            .unwrap()
            .to_json_pretty()
            .unwrap(),
        pretty
    );
}

#[tokio::test]
async fn the_saved_format_snapshot() {
    let net = representative().await;
    let mut value: Value = serde_json::from_str(&net.to_json().unwrap()).unwrap();
    assert_eq!(value["format"], "lc-agent/1");
    assert_eq!(
        value["files"]["/notes.md"]["content"],
        json!(["# Notes", "", "- first", ""])
    );
    redact(&mut value);
    snapshot_settings().bind(|| insta::assert_json_snapshot!("saved_network", value));
}

#[tokio::test]
async fn the_mermaid_snapshot() {
    let net = representative().await;
    snapshot_settings().bind(|| insta::assert_snapshot!("mermaid", net.to_mermaid()));
}

#[tokio::test]
async fn a_loaded_conversation_continues_where_it_stopped() {
    let net = representative().await;
    let loaded = RunnableNetwork::from_json(&net.to_json().unwrap()).unwrap();
    let model = ScriptedChatModel::new(["Continued."]);
    loaded.register_model("scripted", model.clone());
    {
        let _s = loaded.enter();
        HumanNode::new("Anything else?");
    }
    assert_eq!(loaded.invoke().await.unwrap().text(), "Continued.");
    assert_eq!(model.calls(), 1, "nothing saved as invoked ran again");
    // The new turn saw the whole saved conversation, in order.
    let roles: Vec<&str> = loaded.history().to_vec().iter().map(|m| m.role()).collect();
    assert_eq!(
        roles,
        ["system", "human", "ai", "tool", "tool", "ai", "ai", "human", "ai"]
    );
}

#[test]
fn unknown_kinds_keep_every_field_and_save_back_unchanged() {
    let net = RunnableNetwork::new();
    {
        let _s = net.enter();
        HumanNode::new("before");
    }
    let mut doc: Value = serde_json::from_str(&net.to_json().unwrap()).unwrap();
    // A node from a newer program: odd key order, fields we do not know,
    // an output that is not a message.
    let alien = json!({
        "zeta": [1, 2.5, {"deep": null}],
        "__node_type__": "retriever-v9",
        "id": "7d3c6f4e-8a1b-4c2d-9e0f-123456789abc",
        "invoked": true,
        "outputs": {"documents": ["a", "b"]},
        "name": "retriever",
        "metadata": {"score": 0.125},
        "alpha": "kept"
    });
    doc["nodes"].as_array_mut().unwrap().push(alien.clone());
    doc["__connections__"]["1"] = json!([0]);
    let text = serde_json::to_string(&doc).unwrap();
    let loaded = RunnableNetwork::from_json(&text).unwrap();
    assert_eq!(loaded.to_json().unwrap(), text);
    let node = &loaded.nodes()[1];
    assert_eq!(node.kind(), "retriever-v9");
    assert!(node.is_invoked());
    assert_eq!(node.name(), "retriever");
    let generic = node.downcast::<GenericNode>().unwrap();
    assert_eq!(Value::Object(generic.raw().clone()), alien);
    // A program may still rename it and add metadata: only those change.
    node.set_name("renamed");
    let resaved: Value = serde_json::from_str(&loaded.to_json().unwrap()).unwrap();
    assert_eq!(resaved["nodes"][1]["name"], "renamed");
    assert_eq!(resaved["nodes"][1]["zeta"], alien["zeta"]);
}

#[derive(Serialize, Deserialize)]
struct Translate {
    target_language: String,
    #[serde(default)]
    formal: bool,
}

#[async_trait]
impl NodeLogic for Translate {
    fn kind(&self) -> &str {
        "translate"
    }
    async fn invoke(&self, ctx: NodeContext) -> Result<Message> {
        let last = ctx
            .input
            .last()
            .map(|m| m.text().to_string())
            .unwrap_or_default();
        Ok(Message::ai(format!("[{}] {last}", self.target_language)))
    }
    fn save(&self) -> Result<serde_json::Map<String, Value>> {
        lc_agent::fields_of(self)
    }
}

#[tokio::test]
async fn registered_custom_kinds_round_trip_with_their_fields() {
    register_node_kind::<Translate>("translate");
    let net = RunnableNetwork::new();
    {
        let _s = net.enter();
        HumanNode::new("hello");
        lc_agent::NodeRef::create(Translate {
            target_language: "fr".into(),
            formal: true,
        });
    }
    assert_eq!(net.invoke().await.unwrap().text(), "[fr] hello");
    let saved = net.to_json().unwrap();
    assert!(
        saved.contains(r#""target_language":"fr","formal":true"#),
        "{saved}"
    );
    let loaded = RunnableNetwork::from_json(&saved).unwrap();
    let node = &loaded.nodes()[1];
    let t = node
        .downcast::<Translate>()
        .expect("loaded as the registered kind");
    assert_eq!(t.target_language, "fr");
    assert!(t.formal);
    assert_eq!(loaded.to_json().unwrap(), saved);
}

#[test]
fn bad_documents_are_clear_errors() {
    let bad = |text: &str| match RunnableNetwork::from_json(text) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted {text}"),
    };
    let id = uuid::Uuid::new_v4();
    assert!(bad("{").starts_with("json:"));
    assert_eq!(
        bad(&format!(r#"{{"format":"other/2","id":"{id}"}}"#)),
        "invalid saved network: unsupported format `other/2` (this program reads `lc-agent/1` and `lc-agent/2`)"
    );
    let node = |i: u8| json!({"__node_type__": "human", "id": uuid::Uuid::new_v4(), "text": format!("{i}")});
    let doc = json!({"format": "lc-agent/1", "id": id, "nodes": [node(0), node(1)],
                     "__connections__": {"0": [1], "1": [0]}});
    assert_eq!(
        bad(&doc.to_string()),
        "invalid saved network: the connections contain a cycle"
    );
    let doc = json!({"format": "lc-agent/1", "id": id, "nodes": [node(0)],
                     "__connections__": {"0": [7]}});
    assert_eq!(
        bad(&doc.to_string()),
        "invalid saved network: node 0 has an invalid parent index 7"
    );
    let doc = json!({"format": "lc-agent/1", "id": id, "nodes": [{"__node_type__": "human"}]});
    assert_eq!(
        bad(&doc.to_string()),
        "invalid saved network: node 0: missing or invalid `id`"
    );
    let doc = json!({"format": "lc-agent/1", "id": id,
                     "nodes": [{"__node_type__": "tool", "id": uuid::Uuid::new_v4()}]});
    assert!(bad(&doc.to_string()).contains("node 0: `tool` fields"));
}

#[tokio::test]
async fn files_save_to_disk_atomically_and_load_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.json");
    let net = representative().await;
    net.save_to_file(&path).unwrap();
    let loaded = RunnableNetwork::load_from_file(&path).unwrap();
    assert_eq!(loaded.to_json().unwrap(), net.to_json().unwrap());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "no temporary file left behind");
    let missing = RunnableNetwork::load_from_file(dir.path().join("nope.json")).unwrap_err();
    assert!(matches!(missing, NetworkError::Io(_)));
}

#[tokio::test]
async fn a_very_long_loaded_conversation_continues_without_deep_recursion() {
    // 30,000 nodes: rebuilding the conversation after a load must be
    // iterative (a recursive walk would overflow the test thread's stack).
    let model = ScriptedChatModel::new(["ok"]).cycled();
    let net = RunnableNetwork::builder()
        .chat_model("scripted")
        .model("scripted", model.clone())
        .unlimited_steps()
        .build();
    {
        let _s = net.enter();
        for i in 0..15_000 {
            HumanNode::new(format!("q{i}"));
            ChatNode::new();
        }
    }
    net.invoke().await.unwrap();
    let loaded = RunnableNetwork::from_json(&net.to_json().unwrap()).unwrap();
    loaded.register_model("scripted", model.clone());
    loaded.set_default_node(Some("chat".into()));
    {
        let _s = loaded.enter();
        HumanNode::new("last question");
    }
    loaded.invoke().await.unwrap();
    assert_eq!(model.calls(), 15_001);
    assert_eq!(loaded.history().len(), 30_002);
}

#[tokio::test]
async fn edits_after_a_save_show_in_the_next_save() {
    // Invoked nodes' saved JSON is cached; every edit must invalidate it.
    let net = representative().await;
    let first = net.to_json().unwrap();
    let node = net.nodes()[3].clone(); // an invoked tool node
    node.set_name("renamed tool");
    node.set_metadata("reviewed", json!(true));
    node.set_output(Message::tool("replaced", "call-1"));
    let second = net.to_json().unwrap();
    assert_ne!(first, second);
    let value: Value = serde_json::from_str(&second).unwrap();
    let saved = &value["nodes"][3];
    assert_eq!(saved["name"], "renamed tool");
    assert_eq!(saved["metadata"]["reviewed"], true);
    assert_eq!(saved["outputs"]["content"], "replaced");
    // Cached, pretty and value forms agree.
    let pretty: Value = serde_json::from_str(&net.to_json_pretty().unwrap()).unwrap();
    assert_eq!(pretty, value);
    assert_eq!(net.to_value().unwrap(), value);
    assert_eq!(net.to_json().unwrap(), second);
}

#[tokio::test]
async fn nodes_load_whatever_their_key_order_and_extra_fields() {
    // lc-agent writes `__node_type__` first; hand-edited or foreign files
    // may not. Every order loads the same node, and saving writes the
    // canonical order.
    let net = representative().await;
    let saved = net.to_json().unwrap();
    let mut doc: Value = serde_json::from_str(&saved).unwrap();
    for node in doc["nodes"].as_array_mut().unwrap() {
        let map = node.as_object_mut().unwrap();
        let kind = map.shift_remove("__node_type__").unwrap();
        map.insert("__node_type__".into(), kind); // now the last key
    }
    let reordered = RunnableNetwork::from_json(&doc.to_string()).unwrap();
    assert_eq!(reordered.to_json().unwrap(), saved);

    // A built-in node with a field its kind does not have still loads.
    let id = uuid::Uuid::new_v4();
    let doc = json!({"format": "lc-agent/1", "id": id, "nodes": [
        {"__node_type__": "human", "id": uuid::Uuid::new_v4(), "name": "human",
         "invoked": false, "outputs": null, "metadata": {}, "text": "hi", "colour": "blue"},
        {"__node_type__": "chat", "id": uuid::Uuid::new_v4(), "name": "chat",
         "invoked": false, "outputs": null, "metadata": {}, "chat_model_name": null}]});
    let loaded = RunnableNetwork::from_json(&doc.to_string()).unwrap();
    let nodes = loaded.nodes();
    assert_eq!(nodes[0].downcast::<HumanNode>().unwrap().text, "hi");
    assert_eq!(
        nodes[1].downcast::<ChatNode>().unwrap().chat_model_name,
        None
    );
}

#[test]
fn a_malformed_builtin_field_names_the_node_and_field() {
    let doc = json!({"format": "lc-agent/1", "id": uuid::Uuid::new_v4(), "nodes": [
        {"__node_type__": "human", "id": uuid::Uuid::new_v4(), "name": "human",
         "invoked": true, "metadata": {}, "text": "hi"},
        {"__node_type__": "human", "id": uuid::Uuid::new_v4(), "name": "human",
         "invoked": true, "outputs": {"role": "robot", "content": "x"}, "metadata": {},
         "text": "hi"}]});
    let err = RunnableNetwork::from_json(&doc.to_string())
        .unwrap_err()
        .to_string();
    assert!(err.contains("node 1: outputs:"), "{err}");
    assert!(err.contains("robot"), "{err}");
    let doc = json!({"format": "lc-agent/1", "id": uuid::Uuid::new_v4(), "nodes": [
        {"__node_type__": "system", "id": "not-a-uuid", "name": "system",
         "invoked": false, "metadata": {}, "text": "hi"}]});
    assert_eq!(
        RunnableNetwork::from_json(&doc.to_string())
            .unwrap_err()
            .to_string(),
        "invalid saved network: node 0: missing or invalid `id`"
    );
}

//! Properties of the saved format, checked on generated networks:
//! save -> load -> save gives the same bytes, whatever the graph, the
//! texts, the metadata, the files and the node kinds (unknown kinds
//! included).

use lc_agent::{
    ChatNode, FileData, HumanNode, Message, NodeRef, RunnableNetwork, Saving, SystemNode, ToolCall,
    ToolNode,
};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// Cases per property (`PROPTEST_CASES` overrides it).
const CASES: u32 = 256;

/// One generated node: its kind, a text, which earlier nodes are its
/// parents, its output (when it ran) and a metadata value.
#[derive(Debug, Clone)]
struct NodeSpec {
    kind: u8,
    text: String,
    parents: Vec<prop::sample::Index>,
    output: Option<(u8, String)>,
    meta: Option<(String, Value)>,
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-z_]{1,6}", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn node_spec() -> impl Strategy<Value = NodeSpec> {
    (
        0u8..6,
        ".{0,40}",
        prop::collection::vec(any::<prop::sample::Index>(), 0..3),
        prop::option::of((0u8..4, ".{0,40}")),
        prop::option::of(("[a-z]{1,8}", json_value())),
    )
        .prop_map(|(kind, text, parents, output, meta)| NodeSpec {
            kind,
            text,
            parents,
            output,
            meta,
        })
}

fn message(kind: u8, text: &str) -> Message {
    match kind {
        0 => Message::human(text),
        1 => Message::ai(text),
        2 => Message::ai_with_tools(
            text,
            vec![ToolCall::new("call_0", "ls", json!({"path": "/"}))],
        ),
        _ => Message::tool(text, "call_0"),
    }
}

/// Builds the network the specs describe; kind 5 is a kind this program
/// does not know, added through the saved document.
fn build(
    specs: &[NodeSpec],
    files: &[(String, String)],
    name: &str,
) -> Result<RunnableNetwork, TestCaseError> {
    let net = RunnableNetwork::builder()
        .name(name)
        .default_node("chat")
        .chat_model("m")
        .build();
    let mut ids = Vec::new();
    let mut unknown = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let mut parents: Vec<_> = if ids.is_empty() {
            Vec::new()
        } else {
            spec.parents
                .iter()
                .map(|p| ids[p.index(ids.len())])
                .collect()
        };
        parents.sort();
        parents.dedup();
        if spec.kind == 5 {
            unknown.push((i, spec.clone(), parents));
            ids.push(uuid::Uuid::new_v4());
            continue;
        }
        let node = match spec.kind {
            0 => NodeRef::detached(HumanNode {
                text: spec.text.clone(),
                parts: Vec::new(),
            }),
            1 => NodeRef::detached(SystemNode {
                text: spec.text.clone(),
            }),
            2 => NodeRef::detached(ChatNode::default()),
            3 => NodeRef::detached(ChatNode {
                chat_model_name: Some(spec.text.clone()),
                step: (spec.text.len() % 2 == 1).then(|| format!("step:{}", spec.text)),
                tool_choice: (spec.text.len() % 3 == 0).then_some(lc_agent::ToolChoice::Required),
                output_schema: (spec.text.len() % 5 == 0)
                    .then(|| lc_agent::OutputSchema::new(json!({"type": "string"})).unwrap()),
            }),
            _ => NodeRef::detached(ToolNode {
                tool_call: ToolCall::new("call_1", &spec.text, json!({"q": spec.text})),
            }),
        };
        // Parents that are unknown nodes are wired in the document below.
        let known: Vec<_> = parents
            .iter()
            .copied()
            .filter(|p| net.node(*p).is_some())
            .collect();
        net.add_node_with_parents(&node, &known)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        if let Some((kind, text)) = &spec.output {
            node.set_output(message(*kind, text));
        }
        if let Some((key, value)) = &spec.meta {
            node.set_metadata(key.clone(), value.clone());
        }
        ids.push(node.id());
    }
    net.with_files_mut(|f| {
        for (path, text) in files {
            f.insert(path.clone(), FileData::new(text));
        }
    });
    if unknown.is_empty() {
        return Ok(net);
    }
    // Unknown kinds: appended to the saved document as another program
    // would have written them, with their parents among the known nodes.
    let mut doc = net
        .to_value()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let nodes = doc["nodes"].as_array().map_or(0, Vec::len);
    for (offset, (i, spec, parents)) in unknown.into_iter().enumerate() {
        let mut node = json!({
            "__node_type__": "mystery",
            "id": ids[i].to_string(),
            "name": spec.text,
            "invoked": spec.output.is_some(),
            "outputs": spec.output.as_ref().map(|(k, t)| serde_json::to_value(message(*k, t)).unwrap()),
            "metadata": {},
            "custom": spec.meta.as_ref().map(|(_, v)| v.clone()),
        });
        if let Some((key, value)) = &spec.meta {
            node["metadata"][key] = value.clone();
        }
        doc["nodes"].as_array_mut().unwrap().push(node);
        let indices: Vec<usize> = parents
            .iter()
            .filter_map(|p| {
                doc["nodes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .position(|n| n["id"] == p.to_string())
            })
            .collect();
        if !indices.is_empty() {
            doc["__connections__"][(nodes + offset).to_string()] = json!(indices);
        }
    }
    RunnableNetwork::from_value(doc).map_err(|e| TestCaseError::fail(e.to_string()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn save_load_save_is_byte_identical(
        specs in prop::collection::vec(node_spec(), 0..24),
        files in prop::collection::vec(("/[a-z]{1,8}(/[a-z]{1,8}){0,2}\\.md", ".{0,60}"), 0..4),
        name in ".{0,20}",
    ) {
        let net = build(&specs, &files, &name)?;
        let saved = net.to_json().unwrap();
        let loaded = RunnableNetwork::from_json(&saved).unwrap();
        prop_assert_eq!(loaded.to_json().unwrap(), saved.clone());
        prop_assert_eq!(loaded.len(), net.len());
        // The value and pretty forms describe the same document.
        let pretty: Value = serde_json::from_str(&net.to_json_pretty().unwrap()).unwrap();
        let compact: Value = serde_json::from_str(&saved).unwrap();
        prop_assert_eq!(pretty, compact);
        // Loading the loaded copy's save again changes nothing either.
        let again = RunnableNetwork::from_json(&loaded.to_json().unwrap()).unwrap();
        prop_assert_eq!(again.to_json().unwrap(), saved);
    }
}

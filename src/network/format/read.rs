//! Reading the saved format in one pass over the text (compact text: each
//! node's text found first, then read, and kept as its saved form).
//!
//! ```text
//!  SavedDocument<Files, SavedNodes | TextNodes, connections, FileSnapshots>
//!    nodes: NodeSeed per node ─▶ built-in kind as its first key?
//!             yes ─▶ BuiltinFields, typed, no intermediate JSON
//!             no  ─▶ a JSON object ─▶ load_node ─▶ crate::kinds loader
//!                                                  | GenericNode (unknown kind)
//! ```

use std::sync::Arc;

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{SavedDocument, COMMON_KEYS, NODE_TYPE_KEY};
use crate::error::{NetworkError, Result};
use crate::files::Files;
use crate::message::Message;
use crate::network::snapshots::FileSnapshots;
use crate::network::{Graph, RunnableNetwork};
use crate::node::kinds::{self, TypedFields};
use crate::node::GenericNode;
use crate::node::{NodeId, NodeLogic, NodeRef};

/// A whole saved network, as the loader reads it.
type SavedNetwork = SavedDocument<Files, SavedNodes, IndexMap<String, Vec<usize>>, FileSnapshots>;

/// The saved nodes, each built while the document is read (one pass over
/// the text). A node that is well-formed JSON but not a valid node (a
/// missing id, fields its kind rejects) is kept as its error, reported
/// once the document has been read.
#[derive(Default)]
struct SavedNodes(Vec<Result<NodeRef>>);

impl<'de> Deserialize<'de> for SavedNodes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Nodes;
        impl<'de> serde::de::Visitor<'de> for Nodes {
            type Value = SavedNodes;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array of nodes")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<SavedNodes, A::Error> {
                let mut nodes = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(node) = seq.next_element_seed(NodeSeed {
                    index: nodes.len(),
                    direct: None,
                })? {
                    nodes.push(node);
                }
                Ok(SavedNodes(nodes))
            }
        }
        d.deserialize_seq(Nodes)
    }
}

/// Reads one saved node. A built-in kind named by the first key (as
/// `lc-agent` writes it) is read straight into its typed fields; anything
/// else (other kinds, other key orders) is read as a JSON object and goes
/// through the registry.
struct NodeSeed<'a> {
    index: usize,
    /// Set when the node was read straight into its typed fields (a
    /// built-in kind, every field known): its text is then all it holds.
    direct: Option<&'a std::cell::Cell<bool>>,
}

/// The fields of a built-in node, as they are read.
#[derive(Default)]
struct BuiltinFields {
    id: Option<String>,
    name: Option<String>,
    invoked: Option<bool>,
    outputs: Option<Option<Message>>,
    metadata: Option<crate::node::metadata::Metadata>,
    /// `text`, `tool_call`, `chat_model_name`.
    typed: TypedFields,
    /// Keys no built-in kind has (they send the node down the general path).
    other: Map<String, Value>,
}

/// A key of a built-in node, matched without allocating.
enum BuiltinKey {
    Id,
    Name,
    Invoked,
    Outputs,
    Metadata,
    Text,
    ToolCall,
    ChatModelName,
    Other(String),
}

impl<'de> Deserialize<'de> for BuiltinKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Key;
        impl serde::de::Visitor<'_> for Key {
            type Value = BuiltinKey;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: serde::de::Error>(
                self,
                key: &str,
            ) -> std::result::Result<BuiltinKey, E> {
                Ok(match key {
                    "id" => BuiltinKey::Id,
                    "name" => BuiltinKey::Name,
                    "invoked" => BuiltinKey::Invoked,
                    "outputs" => BuiltinKey::Outputs,
                    "metadata" => BuiltinKey::Metadata,
                    "text" => BuiltinKey::Text,
                    "tool_call" => BuiltinKey::ToolCall,
                    "chat_model_name" => BuiltinKey::ChatModelName,
                    other => BuiltinKey::Other(other.to_string()),
                })
            }
        }
        d.deserialize_str(Key)
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for NodeSeed<'_> {
    type Value = Result<NodeRef>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for NodeSeed<'_> {
    type Value = Result<NodeRef>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "node {} as a JSON object", self.index)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        use serde::de::Error;
        let index = self.index;
        let first: Option<String> = map.next_key()?;
        let builtin = match first.as_deref() {
            Some(NODE_TYPE_KEY) => {
                let kind: Value = map.next_value()?;
                match kind {
                    Value::String(k) if kinds::is_typed(&k) => Ok(k),
                    other => Err((NODE_TYPE_KEY.to_string(), other)),
                }
            }
            Some(key) => Err((key.to_string(), map.next_value()?)),
            None => return Ok(load_node(index, Map::new())),
        };
        let kind = match builtin {
            Ok(kind) => kind,
            Err((key, value)) => {
                // The general path: every field as JSON, in its order.
                let mut raw = Map::new();
                raw.insert(key, value);
                while let Some(key) = map.next_key::<String>()? {
                    let value = map.next_value()?;
                    raw.insert(key, value);
                }
                return Ok(load_node(index, raw));
            }
        };
        let mut f = BuiltinFields::default();
        // A field of the wrong type names the node and the field.
        let at = |what: &'static str| {
            move |e: A::Error| A::Error::custom(format!("node {index}: {what}: {e}"))
        };
        while let Some(key) = map.next_key::<BuiltinKey>()? {
            match key {
                BuiltinKey::Id => f.id = Some(map.next_value().map_err(at("id"))?),
                BuiltinKey::Name => f.name = Some(map.next_value().map_err(at("name"))?),
                BuiltinKey::Invoked => f.invoked = Some(map.next_value().map_err(at("invoked"))?),
                BuiltinKey::Outputs => f.outputs = Some(map.next_value().map_err(at("outputs"))?),
                BuiltinKey::Metadata => {
                    f.metadata = Some(map.next_value().map_err(at("metadata"))?);
                }
                BuiltinKey::Text => f.typed.text = Some(map.next_value().map_err(at("text"))?),
                BuiltinKey::ToolCall => {
                    f.typed.tool_call = Some(map.next_value().map_err(at("tool_call"))?);
                }
                BuiltinKey::ChatModelName => {
                    f.typed.chat_model_name =
                        Some(map.next_value().map_err(at("chat_model_name"))?);
                }
                BuiltinKey::Other(key) => {
                    let value = map.next_value()?;
                    f.other.insert(key, value);
                }
            }
        }
        let (node, direct) = match f.into_loaded(index, kind) {
            Ok((node, direct)) => (Ok(node), direct),
            Err(e) => (Err(e), false),
        };
        if let Some(cell) = self.direct {
            cell.set(direct);
        }
        Ok(node)
    }
}

impl BuiltinFields {
    /// Builds the node; a combination the built-in kinds do not have (or an
    /// unknown key) goes through the registry like any other node.
    /// With whether it was built from the typed fields (`false`: through
    /// the registry).
    fn into_loaded(mut self, index: usize, kind: String) -> Result<(NodeRef, bool)> {
        let id = self.id.as_deref().and_then(|s| s.parse::<NodeId>().ok());
        let complete = self.other.is_empty()
            && id.is_some()
            && self.name.is_some()
            && self.invoked.is_some()
            && self.metadata.is_some();
        let logic = if complete {
            kinds::typed(&kind, &mut self.typed)
        } else {
            None
        };
        match (logic, id) {
            (Some(logic), Some(id)) => Ok((
                NodeRef::from_parts(
                    logic,
                    id,
                    self.name,
                    self.invoked.unwrap_or(false),
                    self.outputs.flatten().map(Arc::new),
                    self.metadata.unwrap_or_default(),
                ),
                true,
            )),
            _ => Ok((load_node(index, self.into_raw(kind)?)?, false)),
        }
    }

    /// The node as a JSON object, for the general path.
    fn into_raw(self, kind: String) -> Result<Map<String, Value>> {
        let mut raw = Map::new();
        raw.insert(NODE_TYPE_KEY.into(), Value::String(kind));
        let mut put = |key: &str, value: Option<Value>| {
            if let Some(v) = value {
                raw.insert(key.into(), v);
            }
        };
        put("id", self.id.map(Value::String));
        put("name", self.name.map(Value::String));
        put("invoked", self.invoked.map(Value::Bool));
        put(
            "outputs",
            self.outputs.map(serde_json::to_value).transpose()?,
        );
        put("metadata", self.metadata.map(|m| Value::Object(m.to_map())));
        put("text", self.typed.text.map(Value::String));
        put(
            "tool_call",
            self.typed.tool_call.map(serde_json::to_value).transpose()?,
        );
        put(
            "chat_model_name",
            self.typed
                .chat_model_name
                .map(|n| n.map_or(Value::Null, Value::String)),
        );
        raw.extend(self.other);
        Ok(raw)
    }
}

fn load_node(index: usize, mut raw: Map<String, Value>) -> Result<NodeRef> {
    let bad = |what: &str| NetworkError::Format(format!("node {index}: {what}"));
    let kind = raw
        .get(NODE_TYPE_KEY)
        .and_then(Value::as_str)
        .ok_or_else(|| bad("missing `__node_type__`"))?
        .to_string();
    let id: NodeId = raw
        .get("id")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("missing or invalid `id`"))?;
    let name = raw.get("name").and_then(Value::as_str).map(str::to_string);
    let invoked = raw.get("invoked").and_then(Value::as_bool).unwrap_or(false);
    let metadata = match raw.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    let loader = kinds::loader(&kind);
    let (logic, outputs): (Arc<dyn NodeLogic>, Option<Message>) = match loader {
        Some(loader) => {
            let outputs = match raw.remove("outputs") {
                None | Some(Value::Null) => None,
                Some(v) => {
                    Some(serde_json::from_value(v).map_err(|e| bad(&format!("outputs: {e}")))?)
                }
            };
            for key in COMMON_KEYS {
                raw.remove(key);
            }
            let logic = loader(raw).map_err(|e| bad(&format!("`{kind}` fields: {e}")))?;
            (logic, outputs)
        }
        None => {
            let outputs = raw
                .get("outputs")
                .and_then(|v| Message::deserialize(v).ok());
            (Arc::new(GenericNode::new(kind, raw)), outputs)
        }
    };
    Ok(NodeRef::from_parts(
        logic,
        id,
        name,
        invoked,
        outputs.map(Arc::new),
        crate::node::metadata::Metadata::from(metadata),
    ))
}

/// Reads a network from saved JSON text.
pub(super) fn network_from_str(json: &str) -> Result<RunnableNetwork> {
    let net = if json.starts_with("{\"") {
        // Compact text (as `to_json` writes it): each node's text is read
        // once more into the node and kept as its saved form.
        let saved: TextNetwork<'_> = serde_json::from_str(json)?;
        RunnableNetwork::from_saved(saved.with_nodes(|nodes| SavedNodes(nodes.0)))?
    } else {
        RunnableNetwork::from_saved(serde_json::from_str(json)?)?
    };
    // The next save is about as long: its buffer's first size.
    net.0
        .saved_len
        .store(json.len(), std::sync::atomic::Ordering::Relaxed);
    Ok(net)
}

/// A whole saved network read from compact text.
type TextNetwork<'a> =
    SavedDocument<Files, TextNodes<'a>, IndexMap<String, Vec<usize>>, FileSnapshots>;

/// The saved nodes of compact text: each read from its own text, which an
/// invoked node read straight into its typed fields keeps as its saved
/// form (see [`node_from_text`]).
#[derive(Default)]
struct TextNodes<'a>(Vec<Result<NodeRef>>, std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Deserialize<'de> for TextNodes<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let texts: Vec<&'de serde_json::value::RawValue> = Deserialize::deserialize(d)?;
        Ok(TextNodes(
            texts
                .into_iter()
                .enumerate()
                .map(|(index, text)| node_from_text(index, text))
                .collect(),
            std::marker::PhantomData,
        ))
    }
}

/// Reads one node from its saved text. An invoked node of a built-in kind
/// whose every field was known, written compact (its first key and value
/// with no space, as `to_json` writes them), keeps the text as its saved
/// form: a save after a load copies it instead of writing the node again
/// (a file the writer wrote re-saves byte for byte; any change to a saved
/// field drops the copy, as it does after a save).
fn node_from_text(index: usize, text: &serde_json::value::RawValue) -> Result<NodeRef> {
    let direct = std::cell::Cell::new(false);
    let mut de = serde_json::Deserializer::from_str(text.get());
    let node = serde::de::DeserializeSeed::deserialize(
        NodeSeed {
            index,
            direct: Some(&direct),
        },
        &mut de,
    )??;
    if direct.get()
        && node.is_invoked()
        && text
            .get()
            .starts_with(concat!("{\"", "__node_type__", "\":\""))
    {
        node.keep_saved_json(text.to_owned());
    }
    Ok(node)
}

/// Reads a network from a saved JSON value.
pub(super) fn network_from_value(value: Value) -> Result<RunnableNetwork> {
    RunnableNetwork::from_saved(serde_json::from_value(value)?)
}

impl RunnableNetwork {
    /// Builds the network a document describes (its nodes are read
    /// already), checking the format and the connections.
    fn from_saved(saved: SavedNetwork) -> Result<RunnableNetwork> {
        saved.check_format()?;
        let count = saved.nodes.0.len();
        let loaded = saved.nodes.0.into_iter().collect::<Result<Vec<_>>>()?;
        let ids: Vec<NodeId> = loaded.iter().map(NodeRef::id).collect();
        let mut parents: Vec<Vec<NodeId>> = vec![Vec::new(); count];
        for (key, list) in saved.connections {
            let child: usize = key
                .parse()
                .ok()
                .filter(|c| *c < count)
                .ok_or_else(|| NetworkError::Format(format!("bad connection key `{key}`")))?;
            for p in list {
                if p >= count || p == child {
                    return Err(NetworkError::Format(format!(
                        "node {child} has an invalid parent index {p}"
                    )));
                }
                parents[child].push(ids[p]);
            }
        }
        let mut metadata = saved.metadata;
        let mut snapshots = saved.file_snapshots;
        // Written before the contents moved out of the metadata: they
        // move now, and the next save is a full one in the new layout.
        let upgraded = match metadata.get(super::FILE_SNAPSHOTS_KEY) {
            Some(Value::Object(_)) => {
                if let Some(Value::Object(old)) = metadata.shift_remove(super::FILE_SNAPSHOTS_KEY) {
                    for (hash, text) in old {
                        if let Value::String(text) = text {
                            snapshots.insert(hash, text);
                        }
                    }
                }
                true
            }
            _ => false,
        };
        let net = RunnableNetwork::with_graph(Graph::new(
            saved.id,
            saved.name,
            metadata,
            saved.default_node,
            saved.chat_model_name,
        ));
        *net.0.files.write() = saved.files;
        *net.0.file_snapshots.write() = snapshots;
        if upgraded {
            net.0
                .upgraded
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        net.add_default_modifiers();
        net.insert_loaded(loaded.into_iter().zip(parents).collect())?;
        Ok(net)
    }
}

//! The saved format (`lc-agent/1`) and the registry of node kinds.
//!
//! ```json
//! {"format": "lc-agent/1", "id": "...", "name": "...", "metadata": {},
//!  "default_node": "chat", "chat_model_name": "gpt-4o",
//!  "files": {"/notes.md": {"content": ["line"], "created_at": "...", "modified_at": "..."}},
//!  "nodes": [{"__node_type__": "human", "id": "...", "name": "human",
//!             "invoked": true, "outputs": {...}, "metadata": {}, "text": "hi"}],
//!  "__connections__": {"1": [0]}}
//! ```
//!
//! Nodes are written in insertion order with their common fields first and
//! their kind's own fields after; `__connections__` maps a node's index to
//! its parents' indices. Saving, loading and saving again gives the same
//! bytes. A kind this program does not know loads as a [`GenericNode`] that
//! keeps every field and saves back unchanged.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use indexmap::IndexMap;
use parking_lot::RwLock;
use serde::de::DeserializeOwned;
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::error::{NetworkError, Result};
use crate::files::Files;
use crate::message::Message;
use crate::network::{Graph, RunnableNetwork};
use crate::node::{NodeId, NodeLogic, NodeRef, NodeState};
use crate::nodes::{ChatNode, GenericNode, HumanNode, NetworkNode, SystemNode, ToolNode};

/// The format tag of saved networks.
pub const FORMAT: &str = "lc-agent/1";

/// The key naming a node's kind in the saved format.
pub const NODE_TYPE_KEY: &str = "__node_type__";

const COMMON_KEYS: [&str; 6] = [
    NODE_TYPE_KEY,
    "id",
    "name",
    "invoked",
    "outputs",
    "metadata",
];

type Loader = Arc<dyn Fn(Map<String, Value>) -> Result<Arc<dyn NodeLogic>> + Send + Sync>;

fn registry() -> &'static RwLock<HashMap<String, Loader>> {
    static REGISTRY: OnceLock<RwLock<HashMap<String, Loader>>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let mut map: HashMap<String, Loader> = HashMap::new();
        map.insert("human".into(), serde_loader::<HumanNode>());
        map.insert("system".into(), serde_loader::<SystemNode>());
        map.insert("chat".into(), serde_loader::<ChatNode>());
        map.insert("tool".into(), serde_loader::<ToolNode>());
        map.insert(
            "network".into(),
            Arc::new(|mut fields: Map<String, Value>| {
                let inner = fields.remove("network").ok_or_else(|| {
                    NetworkError::Format("a `network` node has no `network` field".into())
                })?;
                let inner = RunnableNetwork::from_value(inner)?;
                Ok(Arc::new(NetworkNode::logic(inner)) as Arc<dyn NodeLogic>)
            }),
        );
        RwLock::new(map)
    })
}

fn serde_loader<T: NodeLogic + DeserializeOwned>() -> Loader {
    Arc::new(|fields| {
        let logic: T = serde_json::from_value(Value::Object(fields))?;
        Ok(Arc::new(logic) as Arc<dyn NodeLogic>)
    })
}

/// Registers a node kind so saved networks load it back (process-wide).
/// The kind's fields are read with serde from the node's saved object.
///
/// ```
/// use lc_agent::{register_node_kind, Message, NodeContext, NodeLogic, Result};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Note { text: String }
///
/// #[async_trait::async_trait]
/// impl NodeLogic for Note {
///     fn kind(&self) -> &str { "note" }
///     async fn invoke(&self, _ctx: NodeContext) -> Result<Message> {
///         Ok(Message::system(self.text.clone()))
///     }
///     fn save(&self) -> Result<serde_json::Map<String, serde_json::Value>> {
///         lc_agent::node::fields_of(self)
///     }
/// }
///
/// register_node_kind::<Note>("note");
/// ```
///
/// The built-in kinds (`human`, `system`, `chat`, `tool`, `network`) cannot
/// be replaced; registering one of them is ignored with a warning.
pub fn register_node_kind<T: NodeLogic + DeserializeOwned>(kind: &str) {
    register_loader(kind, serde_loader::<T>());
}

fn register_loader(kind: &str, loader: Loader) {
    if BUILTIN_KINDS.contains(&kind) {
        tracing::warn!(kind, "built-in node kinds cannot be replaced");
        return;
    }
    registry().write().insert(kind.to_string(), loader);
}

/// Registers a node kind with a custom loader.
pub fn register_node_loader(
    kind: &str,
    loader: impl Fn(Map<String, Value>) -> Result<Arc<dyn NodeLogic>> + Send + Sync + 'static,
) {
    register_loader(kind, Arc::new(loader));
}

/// Whether a loader is registered for this kind.
pub fn is_registered(kind: &str) -> bool {
    registry().read().contains_key(kind)
}

/// A fresh, detached node of a registered kind built from no fields (what
/// the chat loop adds as the `default_node`).
pub(crate) fn create_node(kind: &str) -> Result<NodeRef> {
    let loader = registry()
        .read()
        .get(kind)
        .cloned()
        .ok_or_else(|| NetworkError::Format(format!("unknown node kind `{kind}`")))?;
    Ok(NodeRef::detached_shared(loader(Map::new())?))
}

// ----- saving -----

struct NetworkView<'a> {
    graph: &'a Graph,
    files: &'a Files,
    /// Use (and fill) the invoked nodes' cached compact JSON.
    cached: bool,
}

struct NodesView<'a> {
    graph: &'a Graph,
    cached: bool,
}

struct NodeView<'a> {
    node: &'a NodeRef,
    cached: bool,
}

/// A built-in node's saved object: common fields, then the kind's own.
struct NodeBody<'a> {
    node: &'a NodeRef,
    st: &'a NodeState,
    fields: Map<String, Value>,
}
struct ConnectionsView<'a>(&'a Graph);

impl Serialize for NetworkView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let g = self.graph;
        let mut map = s.serialize_map(Some(9))?;
        map.serialize_entry("format", FORMAT)?;
        map.serialize_entry("id", &g.id)?;
        map.serialize_entry("name", &g.name)?;
        map.serialize_entry("metadata", &g.metadata)?;
        map.serialize_entry("default_node", &g.default_node)?;
        map.serialize_entry("chat_model_name", &g.chat_model_name)?;
        map.serialize_entry("files", self.files)?;
        map.serialize_entry(
            "nodes",
            &NodesView {
                graph: g,
                cached: self.cached,
            },
        )?;
        map.serialize_entry("__connections__", &ConnectionsView(g))?;
        map.end()
    }
}

impl Serialize for NodesView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.graph.nodes.len()))?;
        for node in self.graph.nodes.values() {
            seq.serialize_element(&NodeView {
                node,
                cached: self.cached,
            })?;
        }
        seq.end()
    }
}

impl Serialize for NodeView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::Error;
        let node = self.node;
        let mut st = node.0.state.lock();
        if let Some(generic) = node.downcast::<GenericNode>() {
            // Unknown kind: every saved field as it was, with the fields a
            // program may change (name, metadata) brought up to date.
            let mut raw = generic.raw().clone();
            if raw.contains_key("name") {
                raw.insert("name".into(), Value::String(st.name.clone()));
            }
            if raw.contains_key("metadata") {
                raw.insert("metadata".into(), Value::Object(st.metadata.clone()));
            }
            return raw.serialize(s);
        }
        if self.cached && st.invoked {
            if st.saved.is_none() {
                let fields = node.logic().save().map_err(S::Error::custom)?;
                let body = NodeBody {
                    node,
                    st: &st,
                    fields,
                };
                let raw = serde_json::value::to_raw_value(&body).map_err(S::Error::custom)?;
                st.saved = Some(raw);
            }
            return st.saved.serialize(s);
        }
        let fields = node.logic().save().map_err(S::Error::custom)?;
        NodeBody {
            node,
            st: &st,
            fields,
        }
        .serialize(s)
    }
}

impl Serialize for NodeBody<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let (node, st) = (self.node, self.st);
        let mut map = s.serialize_map(Some(6 + self.fields.len()))?;
        map.serialize_entry(NODE_TYPE_KEY, node.kind())?;
        map.serialize_entry("id", &node.id())?;
        map.serialize_entry("name", &st.name)?;
        map.serialize_entry("invoked", &st.invoked)?;
        map.serialize_entry("outputs", &st.outputs)?;
        map.serialize_entry("metadata", &st.metadata)?;
        for (k, v) in &self.fields {
            if !COMMON_KEYS.contains(&k.as_str()) {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

impl Serialize for ConnectionsView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let g = self.0;
        let mut map = s.serialize_map(None)?;
        for (i, node) in g.nodes.values().enumerate() {
            let parents = node.0.state.lock().parents.clone();
            if parents.is_empty() {
                continue;
            }
            let indices: Vec<usize> = parents
                .iter()
                .filter_map(|p| g.nodes.get_index_of(p))
                .collect();
            map.serialize_entry(&i.to_string(), &indices)?;
        }
        map.end()
    }
}

// ----- loading -----

#[derive(Deserialize)]
struct SavedNetwork {
    format: String,
    id: uuid::Uuid,
    #[serde(default)]
    name: String,
    #[serde(default)]
    metadata: Map<String, Value>,
    #[serde(default)]
    default_node: Option<String>,
    #[serde(default)]
    chat_model_name: Option<String>,
    #[serde(default)]
    files: Files,
    #[serde(default)]
    nodes: SavedNodes,
    #[serde(default, rename = "__connections__")]
    connections: IndexMap<String, Vec<usize>>,
}

struct LoadedNode {
    node: NodeRef,
    invoked: bool,
}

const BUILTIN_KINDS: [&str; 5] = ["human", "system", "chat", "tool", "network"];

/// The saved nodes, each built while the document is read (one pass over
/// the text). A node that is well-formed JSON but not a valid node (a
/// missing id, fields its kind rejects) is kept as its error, reported
/// once the document has been read.
#[derive(Default)]
struct SavedNodes(Vec<Result<LoadedNode>>);

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
                while let Some(node) = seq.next_element_seed(NodeSeed { index: nodes.len() })? {
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
struct NodeSeed {
    index: usize,
}

/// The fields of a built-in node, as they are read.
#[derive(Default)]
struct BuiltinFields {
    id: Option<String>,
    name: Option<String>,
    invoked: Option<bool>,
    outputs: Option<Option<Message>>,
    metadata: Option<Map<String, Value>>,
    text: Option<String>,
    tool_call: Option<crate::message::ToolCall>,
    chat_model_name: Option<Option<String>>,
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

impl<'de> serde::de::DeserializeSeed<'de> for NodeSeed {
    type Value = Result<LoadedNode>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for NodeSeed {
    type Value = Result<LoadedNode>;

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
                    Value::String(k) if BUILTIN_KINDS.contains(&k.as_str()) && k != "network" => {
                        Ok(k)
                    }
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
                BuiltinKey::Text => f.text = Some(map.next_value().map_err(at("text"))?),
                BuiltinKey::ToolCall => {
                    f.tool_call = Some(map.next_value().map_err(at("tool_call"))?);
                }
                BuiltinKey::ChatModelName => {
                    f.chat_model_name = Some(map.next_value().map_err(at("chat_model_name"))?);
                }
                BuiltinKey::Other(key) => {
                    let value = map.next_value()?;
                    f.other.insert(key, value);
                }
            }
        }
        Ok(f.into_loaded(index, kind))
    }
}

impl BuiltinFields {
    /// Builds the node; a combination the built-in kinds do not have (or an
    /// unknown key) goes through the registry like any other node.
    fn into_loaded(mut self, index: usize, kind: String) -> Result<LoadedNode> {
        let id = self.id.as_deref().and_then(|s| s.parse::<NodeId>().ok());
        let complete = self.other.is_empty()
            && id.is_some()
            && self.name.is_some()
            && self.invoked.is_some()
            && self.metadata.is_some();
        let logic: Option<Arc<dyn NodeLogic>> = match (
            complete,
            kind.as_str(),
            self.text.is_some(),
            self.tool_call.is_some(),
            self.chat_model_name.is_some(),
        ) {
            (true, "human", true, false, false) => self
                .text
                .take()
                .map(|text| Arc::new(HumanNode { text }) as Arc<dyn NodeLogic>),
            (true, "system", true, false, false) => self
                .text
                .take()
                .map(|text| Arc::new(SystemNode { text }) as Arc<dyn NodeLogic>),
            (true, "tool", false, true, false) => self
                .tool_call
                .take()
                .map(|tool_call| Arc::new(ToolNode { tool_call }) as Arc<dyn NodeLogic>),
            (true, "chat", false, false, _) => Some(Arc::new(ChatNode {
                chat_model_name: self.chat_model_name.take().flatten(),
            })),
            _ => None,
        };
        match (logic, id) {
            (Some(logic), Some(id)) => {
                let invoked = self.invoked.unwrap_or(false);
                let node = NodeRef::loaded(
                    logic,
                    id,
                    self.name.unwrap_or_default(),
                    invoked,
                    self.outputs.flatten().map(Arc::new),
                    self.metadata.unwrap_or_default(),
                );
                Ok(LoadedNode { node, invoked })
            }
            _ => load_node(index, self.into_raw(kind)?),
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
        put("metadata", self.metadata.map(Value::Object));
        put("text", self.text.map(Value::String));
        put(
            "tool_call",
            self.tool_call.map(serde_json::to_value).transpose()?,
        );
        put(
            "chat_model_name",
            self.chat_model_name
                .map(|n| n.map_or(Value::Null, Value::String)),
        );
        raw.extend(self.other);
        Ok(raw)
    }
}

fn load_node(index: usize, mut raw: Map<String, Value>) -> Result<LoadedNode> {
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
    let name = raw
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or(&kind)
        .to_string();
    let invoked = raw.get("invoked").and_then(Value::as_bool).unwrap_or(false);
    let metadata = match raw.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    let loader = registry().read().get(&kind).cloned();
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
    let node = NodeRef::loaded(logic, id, name, invoked, outputs.map(Arc::new), metadata);
    Ok(LoadedNode { node, invoked })
}

impl RunnableNetwork {
    /// Serializes the network with `write`, holding its locks for the
    /// duration so the document is one consistent snapshot.
    fn write_saved<R>(
        &self,
        cached: bool,
        write: impl FnOnce(&NetworkView<'_>) -> serde_json::Result<R>,
    ) -> Result<R> {
        let graph = self.0.graph.lock();
        let files = self.0.files.read();
        Ok(write(&NetworkView {
            graph: &graph,
            files: &files,
            cached,
        })?)
    }

    /// The network as a JSON value in the saved format.
    pub fn to_value(&self) -> Result<Value> {
        self.write_saved(false, |view| serde_json::to_value(view))
    }

    /// The network as compact JSON in the saved format.
    pub fn to_json(&self) -> Result<String> {
        // Invoked nodes never change their saved form unless a field is
        // edited, so their compact JSON is cached: saving again after a
        // turn (a checkpoint) costs a copy plus the new nodes.
        self.write_saved(true, |view| serde_json::to_string(view))
    }

    /// The network as indented JSON in the saved format.
    pub fn to_json_pretty(&self) -> Result<String> {
        self.write_saved(false, |view| serde_json::to_string_pretty(view))
    }

    /// Loads a network saved with [`RunnableNetwork::to_json`]. The default
    /// modifiers are attached; models, tools and other modifiers must be
    /// attached again by the caller.
    pub fn from_json(json: &str) -> Result<RunnableNetwork> {
        Self::from_saved(serde_json::from_str(json)?)
    }

    /// Loads a network from a JSON value in the saved format.
    pub fn from_value(value: Value) -> Result<RunnableNetwork> {
        Self::from_saved(serde_json::from_value(value)?)
    }

    /// Saves to a file (written to a temporary file first, then renamed, so
    /// a crash never leaves a torn file).
    pub fn save_to_file(&self, path: impl AsRef<std::path::Path>) -> Result<()> {
        let path = path.as_ref();
        let json = self.to_json()?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        let tmp = dir.join(format!(
            ".{}.tmp-{}",
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::write(&tmp, json)?;
        std::fs::rename(&tmp, path).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })?;
        Ok(())
    }

    /// Loads a network saved with [`RunnableNetwork::save_to_file`].
    pub fn load_from_file(path: impl AsRef<std::path::Path>) -> Result<RunnableNetwork> {
        Self::from_json(&std::fs::read_to_string(path)?)
    }

    fn from_saved(saved: SavedNetwork) -> Result<RunnableNetwork> {
        if saved.format != FORMAT {
            return Err(NetworkError::Format(format!(
                "unsupported format `{}` (this program reads `{FORMAT}`)",
                saved.format
            )));
        }
        let count = saved.nodes.0.len();
        let loaded = saved.nodes.0.into_iter().collect::<Result<Vec<_>>>()?;
        let ids: Vec<NodeId> = loaded.iter().map(|l| l.node.id()).collect();
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
        let net = RunnableNetwork::with_graph(Graph::new(
            saved.id,
            saved.name,
            saved.metadata,
            saved.default_node,
            saved.chat_model_name,
        ));
        *net.0.files.write() = saved.files;
        net.add_default_modifiers();
        let nodes = loaded
            .into_iter()
            .zip(parents)
            .map(|(l, p)| (l.node, l.invoked, p))
            .collect();
        net.insert_loaded(nodes)?;
        Ok(net)
    }
}

//! Networks saved by NVIDIA's LC Agent (the Python `lc_agent` module of
//! kit-usd-agents), read into this crate's format.
//!
//! LC Agent saves a `RunnableNetwork` as the pydantic JSON of the network
//! (its `JsonNetworkList` writes one file per network, its
//! `RedisNetworkList` one hash field per network): `nodes` (each with
//! `__node_type__`, the Python class name, or the older `__type__`),
//! `__connections__` (a node's index -> its parents' indices), `metadata`
//! (the network's id is `metadata.uuid`, a node's too), `default_node`,
//! `chat_model_name`. A node's `outputs` is a langchain message as pydantic
//! dumps it (`{"type": "ai", "content", "tool_calls": [{"name", "args",
//! "id"}], "usage_metadata", ...}`), a list of them, or null.
//!
//! ```text
//!  LC Agent class                         lc-agent kind
//!  RunnableHumanNode, RunnableHumanImageNode  human  (image parts: see notes)
//!  RunnableAINode, RunnableAIImageNode        chat, invoked (its fixed answer)
//!  RunnableNode (a chat-model call)           chat  (uninvoked: runs on resume)
//!  RunnableRoutingNode, RunnableSupervisorNode,
//!  RunnableNodeAgent, FromRunnableNode        chat when answered, else generic
//!  RunnableToolNode                           tool  (its call found in the AI
//!                                                    message that asked for it)
//!  NetworkNode, MultiAgentNetworkNode         network (inner network converted)
//!  RunnableSystemAppend in a node's `inputs`  a system node, parent of that node
//!  any other class                            generic (every field kept; cannot run)
//!  ... not answered yet                       generic, marked run with no output and
//!                                             `metadata.skipped` (a later turn goes on
//!                                             without it); with a `human_message`
//!                                             field: human
//! ```
//!
//! Ids are kept (the network's and each node's `metadata.uuid`), so
//! importing the same network twice names the same session. Everything of
//! the original that has no place in this format is kept under
//! `metadata["lc_agent"]` of the network or node (the class name, the
//! original metadata, fields such as `images` or `route_nodes`), and each
//! loss is named in the notes the import returns. A system message
//! appended to one LC Agent node becomes a system node: in this crate it
//! also reaches the nodes after that node (the same text is added once).

use std::collections::{HashMap, HashSet};

/// A node's metadata: why an imported node is not run (a pending node of
/// a class only LC Agent can run, kept as data).
pub(crate) const SKIPPED_KEY: &str = "skipped";

/// How the notes and [`SKIPPED_KEY`] say a pending node is skipped.
const SKIPPED_REASON: &str =
    "not answered, so kept as data and skipped by the run (the conversation goes on without it)";

use serde_json::{json, Map, Value};

use crate::error::{NetworkError, Result};
use crate::message::{Message, ToolCall, ToolStatus};
use crate::network::format::Saving;
use crate::network::format::FORMAT;
use crate::network::RunnableNetwork;
use crate::nodes::{ChatNode, HumanNode, NetworkNode, SystemNode, ToolNode};
use crate::usage::TOKEN_USAGE_KEY;

/// The key under which the original's leftovers are kept.
const KEPT: &str = "lc_agent";

/// The node fields every LC Agent node has (read, not kept twice).
const COMMON: [&str; 9] = [
    "__node_type__",
    "__type__",
    "name",
    "outputs",
    "metadata",
    "invoked",
    "parents",
    "inputs",
    "verbose",
];

/// Classes that called a model; answered, they are chat nodes.
const MODEL_CLASSES: [&str; 5] = [
    "RunnableNode",
    "RunnableRoutingNode",
    "RunnableSupervisorNode",
    "RunnableNodeAgent",
    "FromRunnableNode",
];

/// Reading networks saved by NVIDIA's LC Agent (an extension of
/// [`RunnableNetwork`]; in [`crate::prelude`]).
pub trait LcAgentImport: Sized {
    /// Reads a network saved by NVIDIA's LC Agent (the pydantic JSON its
    /// `JsonNetworkList` and `RedisNetworkList` write) and returns it with
    /// notes naming what could not be carried over (one line each). Node
    /// classes map to this crate's kinds; classes it does not know become
    /// generic nodes that keep their fields; ids are kept. The input is
    /// only read.
    ///
    /// ```
    /// # use lc_agent::{LcAgentImport, RunnableNetwork};
    /// let saved = serde_json::json!({
    ///     "nodes": [{"__node_type__": "RunnableHumanNode", "human_message": "hi",
    ///                "outputs": {"type": "human", "content": "hi"}, "metadata": {}}],
    ///     "__connections__": {"0": []},
    ///     "metadata": {"uuid": "5b0fa4a5-4c1e-4d59-9d3e-5d6f1b4e0a11"}});
    /// let (net, notes) = RunnableNetwork::from_lc_agent(&saved)?;
    /// assert_eq!((net.id().to_string().as_str(), net.len()),
    ///            ("5b0fa4a5-4c1e-4d59-9d3e-5d6f1b4e0a11", 1));
    /// assert!(notes.is_empty());
    /// # Ok::<(), lc_agent::NetworkError>(())
    /// ```
    fn from_lc_agent(saved: &Value) -> Result<(Self, Vec<String>)>;
}

impl LcAgentImport for RunnableNetwork {
    fn from_lc_agent(saved: &Value) -> Result<(RunnableNetwork, Vec<String>)> {
        from_lc_agent(saved)
    }
}

fn from_lc_agent(saved: &Value) -> Result<(RunnableNetwork, Vec<String>)> {
    let Some(saved) = saved.as_object() else {
        return Err(NetworkError::Format(
            "an LC Agent network is a JSON object".into(),
        ));
    };
    if !saved.get("nodes").is_some_and(Value::is_array) {
        return Err(NetworkError::Format(
            "not an LC Agent network: no `nodes` list".into(),
        ));
    }
    let mut import = Import::default();
    let doc = import.network(saved, "")?;
    let net = RunnableNetwork::from_value(doc)?;
    Ok((net, import.notes))
}

#[derive(Default)]
struct Import {
    notes: Vec<String>,
    /// Ids given out so far (a node id is never used twice).
    ids: HashSet<uuid::Uuid>,
}

/// One network's nodes as they are converted.
#[derive(Default)]
struct Nodes {
    out: Vec<Value>,
    /// Parents by new index.
    parents: Vec<Vec<usize>>,
    /// Old index -> new index.
    index: Vec<usize>,
    /// System texts already added -> their node's new index.
    systems: HashMap<String, usize>,
    /// Tool calls of the AI messages so far, by call id.
    calls: HashMap<String, ToolCall>,
}

impl Import {
    fn note(&mut self, at: &str, what: impl std::fmt::Display) {
        self.notes.push(format!("{at}{what}"));
    }

    /// A fresh id, or `wanted` when it is a uuid not used yet.
    fn id(&mut self, wanted: Option<&Value>) -> uuid::Uuid {
        let parsed = wanted
            .and_then(Value::as_str)
            .and_then(|s| uuid::Uuid::parse_str(s).ok())
            .filter(|id| !self.ids.contains(id));
        let id = parsed.unwrap_or_else(uuid::Uuid::new_v4);
        self.ids.insert(id);
        id
    }

    /// The `lc-agent/1` document of an LC Agent network (also a
    /// `NetworkNode`'s own fields). `at` prefixes the notes (`node 3: `).
    fn network(&mut self, saved: &Map<String, Value>, at: &str) -> Result<Value> {
        let original_meta = object(saved.get("metadata"));
        let id = self.id(original_meta.get("uuid"));
        let name = text_of(saved.get("name"))
            .or_else(|| text_of(original_meta.get("name")))
            .unwrap_or_default();
        let mut kept = Map::new();
        kept.insert("metadata".into(), Value::Object(original_meta));
        let default_node = text_of(saved.get("default_node")).unwrap_or_default();
        if !matches!(default_node.as_str(), "" | "RunnableNode") {
            self.note(
                at,
                format_args!(
                    "the default node `{default_node}` is LC Agent's; a new turn gets lc-agent's chat node"
                ),
            );
        }
        for key in ["default_node", "profiling"] {
            if let Some(v) = saved.get(key).filter(|v| !v.is_null()) {
                kept.insert(key.into(), v.clone());
            }
        }
        let empty = Vec::new();
        let saved_nodes = saved
            .get("nodes")
            .and_then(Value::as_array)
            .unwrap_or(&empty);
        let connections = connections(saved.get("__connections__"), saved_nodes.len());
        let mut nodes = Nodes::default();
        for (i, node) in saved_nodes.iter().enumerate() {
            let parents: Vec<usize> = connections[i]
                .iter()
                .filter(|&&p| p < i)
                .filter_map(|&p| nodes.index.get(p).copied().filter(|&x| x != usize::MAX))
                .collect();
            if parents.len() < connections[i].len() {
                self.note(
                    &format!("{at}node {i}: "),
                    "a parent listed after the node was dropped",
                );
            }
            let Some(node) = node.as_object() else {
                self.note(&format!("{at}node {i}: "), "not a JSON object; skipped");
                nodes.index.push(usize::MAX);
                continue;
            };
            self.node(node, i, parents, &mut nodes, at)?;
        }
        let mut conn = Map::new();
        for (i, parents) in nodes.parents.iter().enumerate() {
            if !parents.is_empty() {
                conn.insert(i.to_string(), json!(parents));
            }
        }
        Ok(json!({
            "format": FORMAT,
            "id": id.to_string(),
            "name": name,
            "metadata": {KEPT: kept},
            "default_node": ChatNode::KIND,
            "chat_model_name": saved.get("chat_model_name").cloned().unwrap_or(Value::Null),
            "files": {},
            "nodes": nodes.out,
            "__connections__": conn,
        }))
    }

    fn node(
        &mut self,
        node: &Map<String, Value>,
        i: usize,
        mut parents: Vec<usize>,
        nodes: &mut Nodes,
        at: &str,
    ) -> Result<()> {
        let class = text_of(node.get("__node_type__"))
            .or_else(|| text_of(node.get("__type__")))
            .unwrap_or_else(|| "RunnableNode".to_string());
        let here = format!("{at}node {i} ({class}): ");
        let meta_in = object(node.get("metadata"));
        let mut kept = Map::new();
        kept.insert("node_type".into(), Value::String(class.clone()));
        kept.insert("metadata".into(), Value::Object(meta_in.clone()));
        let mut extra = Map::new();
        for (k, v) in node {
            if !COMMON.contains(&k.as_str()) {
                extra.insert(k.clone(), v.clone());
            }
        }

        // System messages appended to this node's input: system nodes.
        let steps = node
            .get("inputs")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut other_steps = Vec::new();
        for step in steps {
            match system_text(&step) {
                Some(system) => {
                    let index = match nodes.systems.get(&system) {
                        Some(&index) => index,
                        None => {
                            let id = self.id(None);
                            let index = nodes.out.len();
                            nodes.out.push(json!({
                                "__node_type__": SystemNode::KIND, "id": id.to_string(),
                                "name": SystemNode::KIND, "invoked": true,
                                "outputs": Message::system(system.clone()),
                                "metadata": {KEPT: {"from": "RunnableSystemAppend"}},
                                "text": system,
                            }));
                            nodes.parents.push(Vec::new());
                            nodes.systems.insert(system, index);
                            index
                        }
                    };
                    parents.push(index);
                }
                None => other_steps.push(step),
            }
        }
        if !other_steps.is_empty() {
            self.note(
                &here,
                format_args!(
                    "{} input step(s) other than a system message not carried over (kept in metadata.lc_agent.inputs)",
                    other_steps.len()
                ),
            );
            kept.insert("inputs".into(), Value::Array(other_steps));
        }

        let outputs = self.outputs(node.get("outputs"), &here, &mut kept);
        let id = self.id(meta_in.get("uuid"));
        let name = text_of(node.get("name"));
        let chat_model_name = text_of(node.get("chat_model_name"));
        let mut meta = Map::new();
        if let Some(usage) = usage(&meta_in, outputs.as_ref().and_then(|o| o.1.as_ref())) {
            meta.insert(TOKEN_USAGE_KEY.into(), usage);
            if let Some(model) = &chat_model_name {
                meta.insert("model".into(), Value::String(model.clone()));
            }
        }
        if let Some(error) = meta_in.get("error").and_then(Value::as_str) {
            meta.insert("error".into(), Value::String(error.into()));
        }
        let output = outputs.map(|o| o.0);
        if let Some(Message::Ai { tool_calls, .. }) = &output {
            for call in tool_calls {
                nodes.calls.insert(call.id.clone(), call.clone());
            }
        }

        let mut fields = Map::new();
        let (kind, output) = match class.as_str() {
            "RunnableHumanNode" | "RunnableHumanImageNode" => {
                let text = text_of(node.get("human_message"))
                    .or_else(|| output.as_ref().map(|m| m.text().to_string()))
                    .unwrap_or_default();
                extra.remove("human_message");
                fields.insert("text".into(), Value::String(text.clone()));
                (HumanNode::KIND, Some(Message::human(text)))
            }
            "RunnableAINode" | "RunnableAIImageNode" => {
                let answer = output.or_else(|| text_of(node.get("ai_message")).map(Message::ai));
                extra.remove("ai_message");
                (ChatNode::KIND, answer)
            }
            "RunnableToolNode" => {
                let call_id = text_of(node.get("tool_call_id"))
                    .or_else(|| match &output {
                        Some(Message::Tool { tool_call_id, .. }) => Some(tool_call_id.clone()),
                        _ => None,
                    })
                    .unwrap_or_default();
                let output = match output {
                    Some(m @ Message::Tool { .. }) => m,
                    _ => Message::Tool {
                        content: text_of(node.get("tool_message")).unwrap_or_default(),
                        tool_call_id: call_id.clone(),
                        name: None,
                        status: ToolStatus::Ok,
                        parts: Vec::new(),
                    },
                };
                let call = match nodes.calls.get(&call_id) {
                    Some(call) => call.clone(),
                    None => {
                        self.note(
                            &here,
                            format_args!(
                                "no AI message above asks for tool call `{call_id}`; its name and arguments are unknown"
                            ),
                        );
                        let name = match &output {
                            Message::Tool { name: Some(n), .. } => n.clone(),
                            _ => "unknown".into(),
                        };
                        ToolCall {
                            id: call_id.clone(),
                            name,
                            arguments: String::new(),
                        }
                    }
                };
                let output = match output {
                    Message::Tool {
                        content,
                        tool_call_id,
                        name,
                        status,
                        parts,
                    } => Message::Tool {
                        content,
                        tool_call_id,
                        name: name.or_else(|| Some(call.name.clone())),
                        status,
                        parts,
                    },
                    other => other,
                };
                extra.remove("tool_message");
                extra.remove("tool_call_id");
                fields.insert("tool_call".into(), serde_json::to_value(&call)?);
                (ToolNode::KIND, Some(output))
            }
            "NetworkNode" | "MultiAgentNetworkNode" => {
                let inner = self.network(node, &here)?;
                for key in [
                    "nodes",
                    "__connections__",
                    "default_node",
                    "chat_model_name",
                    "profiling",
                ] {
                    extra.remove(key);
                }
                fields.insert("network".into(), inner);
                (NetworkNode::KIND, output)
            }
            model
                if MODEL_CLASSES.contains(&model)
                    && (output.is_some() || model == "RunnableNode") =>
            {
                if let Some(model) = &chat_model_name {
                    fields.insert("chat_model_name".into(), Value::String(model.clone()));
                }
                extra.remove("chat_model_name");
                (ChatNode::KIND, output)
            }
            // An unknown class that carries a human message (a subclass
            // of RunnableHumanNode, say), not answered: the human message.
            _ if output.is_none() && text_of(node.get("human_message")).is_some() => {
                let text = text_of(node.get("human_message")).unwrap_or_default();
                self.note(
                    &here,
                    "a class lc-agent does not know, holding a human message: imported as that human message (the class in metadata.lc_agent)",
                );
                extra.remove("human_message");
                fields.insert("text".into(), Value::String(text.clone()));
                (HumanNode::KIND, Some(Message::human(text)))
            }
            _ => {
                let pending = output.is_none();
                let skipped = if pending {
                    format!("; {SKIPPED_REASON}")
                } else {
                    String::new()
                };
                if MODEL_CLASSES.contains(&class.as_str()) {
                    self.note(
                        &here,
                        format_args!("not answered yet, and only LC Agent can run it: kept as a generic node{skipped}"),
                    );
                } else if pending {
                    self.note(&here, format_args!("a class lc-agent does not know: kept as a generic node with its fields{skipped}"));
                } else {
                    self.note(&here, "a class lc-agent does not know: kept as a generic node with its fields (it cannot run)");
                }
                for (k, v) in std::mem::take(&mut extra) {
                    fields.insert(k, v);
                }
                if let Some(v) = node
                    .get("inputs")
                    .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
                {
                    fields.insert("inputs".into(), v.clone());
                }
                let kind: &str = &class;
                let kind = kind.to_string();
                if pending {
                    // Kept as data and never run: a pending node of a class
                    // nobody here can run would stop every later turn.
                    meta.insert(SKIPPED_KEY.into(), Value::String(SKIPPED_REASON.into()));
                }
                self.push(nodes, parents, kind, id, name, output, meta, kept, fields)?;
                if pending && let Some(Value::Object(last)) = nodes.out.last_mut() {
                    last.insert("invoked".into(), Value::Bool(true));
                }
                return Ok(());
            }
        };
        extra.remove("chat_model_name");
        if !extra.is_empty() {
            let names: Vec<&str> = extra.keys().map(String::as_str).collect();
            self.note(
                &here,
                format_args!(
                    "fields kept in metadata.lc_agent only: {}",
                    names.join(", ")
                ),
            );
            kept.insert("fields".into(), Value::Object(extra));
        }
        self.push(
            nodes,
            parents,
            kind.to_string(),
            id,
            name,
            output,
            meta,
            kept,
            fields,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        nodes: &mut Nodes,
        parents: Vec<usize>,
        kind: String,
        id: uuid::Uuid,
        name: Option<String>,
        output: Option<Message>,
        mut meta: Map<String, Value>,
        kept: Map<String, Value>,
        fields: Map<String, Value>,
    ) -> Result<()> {
        meta.insert(KEPT.into(), Value::Object(kept));
        let mut out = Map::new();
        out.insert("__node_type__".into(), Value::String(kind.clone()));
        out.insert("id".into(), Value::String(id.to_string()));
        out.insert("name".into(), Value::String(name.unwrap_or(kind)));
        out.insert("invoked".into(), Value::Bool(output.is_some()));
        out.insert("outputs".into(), serde_json::to_value(&output)?);
        out.insert("metadata".into(), Value::Object(meta));
        out.extend(fields);
        nodes.index.push(nodes.out.len());
        nodes.out.push(Value::Object(out));
        nodes.parents.push(parents);
        Ok(())
    }

    /// A node's `outputs` as a message (and the original message object,
    /// for its usage), noting what was lost.
    fn outputs(
        &mut self,
        outputs: Option<&Value>,
        here: &str,
        kept: &mut Map<String, Value>,
    ) -> Option<(Message, Option<Value>)> {
        match outputs? {
            Value::Null => None,
            Value::Array(list) => {
                let last = list.iter().rev().find_map(|m| self.message(m, here));
                if list.len() != 1 {
                    self.note(
                        here,
                        format_args!(
                            "{} output messages; lc-agent keeps the last as the node's output (all in metadata.lc_agent.outputs)",
                            list.len()
                        ),
                    );
                    kept.insert("outputs".into(), Value::Array(list.clone()));
                }
                let original = list.last().cloned();
                last.map(|m| (m, original))
            }
            one => match self.message(one, here) {
                Some(m) => Some((m, Some(one.clone()))),
                None => {
                    self.note(
                        here,
                        "an output that is not a message (kept in metadata.lc_agent.outputs)",
                    );
                    kept.insert("outputs".into(), one.clone());
                    None
                }
            },
        }
    }

    /// A langchain message dump (or a plain string: an answer) as a
    /// [`Message`].
    fn message(&mut self, m: &Value, here: &str) -> Option<Message> {
        if let Value::String(s) = m {
            return Some(Message::ai(s.clone()));
        }
        let m = m.as_object()?;
        let role = text_of(m.get("type")).or_else(|| text_of(m.get("role")))?;
        let content = self.content(m.get("content"), here);
        Some(match role.trim_end_matches("MessageChunk") {
            "human" | "user" | "Human" => Message::human(content),
            "system" | "System" => Message::system(content),
            "tool" | "Tool" => Message::Tool {
                content,
                tool_call_id: text_of(m.get("tool_call_id")).unwrap_or_default(),
                name: text_of(m.get("name")),
                status: if m.get("status").and_then(Value::as_str) == Some("error") {
                    ToolStatus::Error
                } else {
                    ToolStatus::Ok
                },
                parts: Vec::new(),
            },
            "ai" | "assistant" | "AI" => Message::ai_with_tools(content, tool_calls(m)),
            other => {
                self.note(
                    here,
                    format_args!("a `{other}` message is not one lc-agent knows"),
                );
                return None;
            }
        })
    }

    /// Message content: a string, or parts whose text parts are joined.
    fn content(&mut self, content: Option<&Value>, here: &str) -> String {
        match content {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => {
                let mut text = Vec::new();
                let mut other = 0;
                for part in parts {
                    match part {
                        Value::String(s) => text.push(s.clone()),
                        Value::Object(p)
                            if p.get("type").and_then(Value::as_str) == Some("text") =>
                        {
                            text.push(text_of(p.get("text")).unwrap_or_default())
                        }
                        _ => other += 1,
                    }
                }
                if other > 0 {
                    self.note(
                        here,
                        format_args!("{other} non-text content part(s) (images) dropped from the message; the original is in metadata.lc_agent"),
                    );
                }
                text.join("\n")
            }
            _ => String::new(),
        }
    }
}

/// An AI message's tool calls: langchain's `tool_calls`, then the invalid
/// ones (their arguments as written), else OpenAI's
/// `additional_kwargs.tool_calls`.
fn tool_calls(m: &Map<String, Value>) -> Vec<ToolCall> {
    let mut calls = Vec::new();
    for call in array(m.get("tool_calls")) {
        let args = call.get("args").cloned().unwrap_or_else(|| json!({}));
        calls.push(ToolCall {
            id: text_of(call.get("id")).unwrap_or_default(),
            name: text_of(call.get("name")).unwrap_or_default(),
            arguments: args.to_string(),
        });
    }
    for call in array(m.get("invalid_tool_calls")) {
        calls.push(ToolCall {
            id: text_of(call.get("id")).unwrap_or_default(),
            name: text_of(call.get("name")).unwrap_or_default(),
            arguments: text_of(call.get("args")).unwrap_or_default(),
        });
    }
    if calls.is_empty() {
        let openai = m.get("additional_kwargs").and_then(|k| k.get("tool_calls"));
        for call in array(openai) {
            let function = call.get("function");
            calls.push(ToolCall {
                id: text_of(call.get("id")).unwrap_or_default(),
                name: text_of(function.and_then(|f| f.get("name"))).unwrap_or_default(),
                arguments: text_of(function.and_then(|f| f.get("arguments"))).unwrap_or_default(),
            });
        }
    }
    calls
}

/// The usage of a node: LC Agent's `metadata.token_usage`, else the
/// message's `usage_metadata`, as this crate records it.
fn usage(meta: &Map<String, Value>, message: Option<&Value>) -> Option<Value> {
    let count = |v: Option<&Value>| v.and_then(Value::as_u64);
    if let Some(u) = meta.get("token_usage") {
        let (p, c) = (
            count(u.get("prompt_tokens")),
            count(u.get("completion_tokens")),
        );
        if p.is_some() || c.is_some() {
            let (p, c) = (p.unwrap_or(0), c.unwrap_or(0));
            let total = count(u.get("total_tokens")).unwrap_or(p + c);
            if total > 0 {
                return Some(
                    json!({"prompt_tokens": p, "completion_tokens": c, "total_tokens": total}),
                );
            }
        }
    }
    let u = message?.get("usage_metadata")?;
    let (p, c) = (
        count(u.get("input_tokens"))?,
        count(u.get("output_tokens"))?,
    );
    let total = count(u.get("total_tokens")).unwrap_or(p + c);
    Some(json!({"prompt_tokens": p, "completion_tokens": c, "total_tokens": total}))
}

/// The text of a `RunnableSystemAppend` step (or a `RunnableAppend` of a
/// system message), as pydantic dumps it in a node's `inputs`.
fn system_text(step: &Value) -> Option<String> {
    if let Some(text) = text_of(step.get("system_message")) {
        return Some(text);
    }
    let message = step.get("message")?;
    (message.get("type").and_then(Value::as_str) == Some("system"))
        .then(|| text_of(message.get("content")))
        .flatten()
}

/// `__connections__` as parent lists by node index (keys are strings in
/// JSON; indices out of range are dropped).
fn connections(saved: Option<&Value>, n: usize) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); n];
    if let Some(map) = saved.and_then(Value::as_object) {
        for (key, parents) in map {
            let Ok(i) = key.trim().parse::<usize>() else {
                continue;
            };
            if i < n {
                out[i] = array(Some(parents))
                    .iter()
                    .filter_map(Value::as_u64)
                    .filter_map(|p| usize::try_from(p).ok())
                    .filter(|&p| p < n)
                    .collect();
            }
        }
    }
    out
}

fn array(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn object(v: Option<&Value>) -> Map<String, Value> {
    v.and_then(Value::as_object).cloned().unwrap_or_default()
}

fn text_of(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

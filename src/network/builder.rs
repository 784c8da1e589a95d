//! [`NetworkBuilder`]: everything a network starts with.
//!
//! ```text
//!  RunnableNetwork::builder() ─▶ .name .metadata .default_node .chat_model
//!                                .model .tool .modifier .step_limit .streaming
//!                             ─▶ try_build() / build() ─▶ RunnableNetwork
//! ```

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::graph::Graph;
use super::{RunnableNetwork, DEFAULT_STEP_LIMIT};
use crate::error::Result;
use crate::model::{ChatModel, ChatModelRegistry};
use crate::network::runtime::Attachments;
use crate::run::NetworkModifier;
use crate::tool::Tool;

/// The network metadata key of the step → model-name map
/// ([`NetworkBuilder::route_model`] writes it; routing.rs reads it).
pub(crate) const MODEL_ROUTES_KEY: &str = "model_routes";

/// Configures a [`RunnableNetwork`].
///
/// The chat loop (a human leaf gets the `default_node`) and the tool loop
/// (tool calls become tool nodes, then the next chat node) are attached by
/// default; [`NetworkBuilder::without_default_modifiers`] leaves them out.
#[must_use]
pub struct NetworkBuilder {
    id: Option<uuid::Uuid>,
    name: String,
    metadata: Map<String, Value>,
    default_node: Option<String>,
    chat_model_name: Option<String>,
    models: ChatModelRegistry,
    tools: Vec<Arc<dyn Tool>>,
    modifiers: Vec<Arc<dyn NetworkModifier>>,
    step_limit: Option<usize>,
    streaming: bool,
    default_modifiers: bool,
}

impl NetworkBuilder {
    /// Sets the id (random by default).
    pub fn id(mut self, id: uuid::Uuid) -> Self {
        self.id = Some(id);
        self
    }

    /// Sets the human-readable name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets one metadata value.
    pub fn metadata(mut self, key: impl Into<String>, value: Value) -> Self {
        self.metadata.insert(key.into(), value);
        self
    }

    /// The node kind the chat loop adds after a human leaf (`"chat"`).
    pub fn default_node(mut self, kind: impl Into<String>) -> Self {
        self.default_node = Some(kind.into());
        self
    }

    /// Routes the chat nodes of `step` (`chat`, `summary`, `subagent:<name>`
    /// or your own) to the model registered as `model` (kept in the
    /// network metadata's `model_routes`).
    pub fn route_model(mut self, step: impl Into<String>, model: impl Into<String>) -> Self {
        let routes = self
            .metadata
            .entry(MODEL_ROUTES_KEY)
            .or_insert_with(|| Value::Object(Map::new()));
        if !routes.is_object() {
            *routes = Value::Object(Map::new());
        }
        if let Value::Object(routes) = routes {
            routes.insert(step.into(), Value::String(model.into()));
        }
        self
    }

    /// The model name chat nodes use unless they name their own.
    pub fn chat_model(mut self, name: impl Into<String>) -> Self {
        self.chat_model_name = Some(name.into());
        self
    }

    /// Registers a chat model under `name`.
    pub fn model(mut self, name: impl Into<String>, model: impl ChatModel + 'static) -> Self {
        self.models.register(name, model);
        self
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Adds a modifier (duplicates are reported by [`NetworkBuilder::try_build`]).
    pub fn modifier(mut self, modifier: impl NetworkModifier) -> Self {
        self.modifiers.push(Arc::new(modifier));
        self
    }

    /// Model turns allowed in one `invoke` (default 100).
    pub fn step_limit(mut self, limit: usize) -> Self {
        self.step_limit = Some(limit);
        self
    }

    /// No step limit at all.
    pub fn unlimited_steps(mut self) -> Self {
        self.step_limit = None;
        self
    }

    /// Chat nodes stream and emit [`NetworkEvent::Delta`](crate::NetworkEvent::Delta) events.
    pub fn streaming(mut self, on: bool) -> Self {
        self.streaming = on;
        self
    }

    /// Leaves out the chat loop and tool loop modifiers.
    pub fn without_default_modifiers(mut self) -> Self {
        self.default_modifiers = false;
        self
    }

    /// Builds the network; fails if two modifiers share an id.
    pub fn try_build(self) -> Result<RunnableNetwork> {
        let net = RunnableNetwork::with_graph(Graph::new(
            self.id.unwrap_or_else(uuid::Uuid::new_v4),
            self.name,
            self.metadata,
            self.default_node,
            self.chat_model_name,
        ));
        {
            let mut rt = net.0.runtime.write();
            rt.models = self.models;
            rt.tools = self.tools.into();
            rt.step_limit = self.step_limit;
            rt.streaming = self.streaming;
        }
        if self.default_modifiers {
            net.add_default_modifiers();
        }
        for m in self.modifiers {
            net.add_modifier_shared(m)?;
        }
        Ok(net)
    }

    /// Builds the network. A modifier whose id is already taken is left
    /// out with an error log; use [`NetworkBuilder::try_build`] to get the
    /// error instead.
    pub fn build(mut self) -> RunnableNetwork {
        let mut seen: HashSet<String> = HashSet::new();
        if self.default_modifiers {
            seen.extend(crate::run::default_modifier_ids().map(String::from));
        }
        self.modifiers.retain(|m| {
            let fresh = seen.insert(m.id().to_string());
            if !fresh {
                tracing::error!(id = m.id(), "duplicate modifier id left out");
            }
            fresh
        });
        match self.try_build() {
            Ok(net) => net,
            // Unreachable after de-duplication; stay panic-free regardless.
            Err(_) => RunnableNetwork::with_graph(Graph::new(
                uuid::Uuid::new_v4(),
                String::new(),
                Map::new(),
                None,
                None,
            )),
        }
    }
}

impl RunnableNetwork {
    /// Starts configuring a network.
    pub fn builder() -> NetworkBuilder {
        NetworkBuilder {
            id: None,
            name: String::new(),
            metadata: Map::new(),
            default_node: None,
            chat_model_name: None,
            models: ChatModelRegistry::new(),
            tools: Vec::new(),
            modifiers: Vec::new(),
            step_limit: Some(DEFAULT_STEP_LIMIT),
            streaming: false,
            default_modifiers: true,
        }
    }
}

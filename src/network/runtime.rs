//! Runtime attachments: modifiers, tools, models, settings and event
//! callbacks. None of them is saved; a program that loads a network
//! attaches them again.
//!
//! ```text
//!  Runtime { modifiers (sorted by priority), tools, models, callbacks,
//!            step_limit, streaming, parent (a sub-network's outer network) }
//!  tools() / model(name): own first, then the modifiers', then the parent's
//! ```

use std::collections::HashSet;
use std::sync::{Arc, Weak};

use super::{NetworkInner, RunnableNetwork, DEFAULT_STEP_LIMIT};
use crate::error::{NetworkError, Result};
use crate::event::{Callback, NetworkEvent};
use crate::model::{ChatModel, ChatModelRegistry};
use crate::node::NodeRef;
use crate::run::NetworkModifier;
use crate::tool::Tool;

#[derive(Clone)]
pub(crate) struct Runtime {
    pub(crate) modifiers: Arc<[Arc<dyn NetworkModifier>]>,
    pub(crate) tools: Arc<[Arc<dyn Tool>]>,
    pub(crate) models: ChatModelRegistry,
    pub(crate) callbacks: Arc<[Callback]>,
    pub(crate) step_limit: Option<usize>,
    pub(crate) streaming: bool,
    pub(crate) parent: Weak<NetworkInner>,
    /// What features attach by type (see [`Attachments::set_extension`]).
    pub(crate) extensions: http::Extensions,
    /// Who the session belongs to (traces' `user.id`).
    pub(crate) user_id: Option<String>,
    /// Spans of tool calls opened by the sub-network that answers them,
    /// until the call's own node runs (see `crate::telemetry`).
    #[cfg(feature = "otel")]
    pub(crate) open_spans:
        Arc<parking_lot::Mutex<std::collections::HashMap<crate::node::NodeId, tracing::Span>>>,
}

impl Runtime {
    /// Nothing attached, the default step limit, no streaming.
    pub(crate) fn new() -> Self {
        Runtime {
            modifiers: Arc::from(Vec::new()),
            tools: Arc::from(Vec::new()),
            models: ChatModelRegistry::new(),
            callbacks: Arc::from(Vec::new()),
            step_limit: Some(DEFAULT_STEP_LIMIT),
            streaming: false,
            parent: Weak::new(),
            extensions: http::Extensions::new(),
            user_id: None,
            #[cfg(feature = "otel")]
            open_spans: Arc::default(),
        }
    }
}

/// What a network runs with, none of it saved: modifiers, tools, models,
/// the step limit, streaming and whose session it is. A loaded network
/// gets them again from the program (or the builder).
pub trait Attachments {
    /// Says who this session belongs to: its runs' traces carry it as
    /// `user.id` (the server sets the signed-in user). Not saved; a
    /// sub-network takes its outer network's.
    fn set_user_id(&self, user: impl Into<String>);

    /// Attaches a modifier. Its id must be unique in this network.
    fn add_modifier(&self, modifier: impl NetworkModifier) -> Result<()>;

    /// Attaches a shared modifier. Its id must be unique in this network.
    fn add_modifier_shared(&self, modifier: Arc<dyn NetworkModifier>) -> Result<()>;

    /// A copy of the attached modifier with this id, when it is an `M`
    /// (its [`NetworkModifier::as_any`] says so); modifiers that share
    /// their state through `Arc`s share it with the copy.
    fn modifier_as<M: NetworkModifier + Clone>(&self, id: &str) -> Option<M>;

    /// Attached modifiers, in the order they run.
    fn modifiers(&self) -> Arc<[Arc<dyn NetworkModifier>]>;

    /// Attaches a tool to the network.
    fn add_tool(&self, tool: impl Tool + 'static);

    /// Attaches a shared tool (a tool with the same name is replaced).
    fn add_tool_shared(&self, tool: Arc<dyn Tool>);

    /// Every tool chat nodes may call: the network's own, its modifiers',
    /// then (for a sub-network) the outer network's. The first of a name
    /// wins.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;

    /// Registers a chat model under `name` for this network.
    fn register_model(&self, name: impl Into<String>, model: impl ChatModel + 'static);

    /// Registers a shared chat model under `name` for this network.
    fn register_model_shared(&self, name: impl Into<String>, model: Arc<dyn ChatModel>);

    /// The model called `name`: this network's, else the outer network's.
    fn model(&self, name: &str) -> Option<Arc<dyn ChatModel>>;

    /// Sets the step limit (`None`: unlimited).
    fn set_step_limit(&self, limit: Option<usize>);

    /// Attaches `value` by its type, replacing the one of that type
    /// attached before: how a feature keeps runtime state on a network
    /// without the network knowing the feature (not saved, not inherited
    /// by sub-networks; a feature that wants that walks
    /// [`outer`](RunnableNetwork::outer) itself).
    fn set_extension<T: Clone + Send + Sync + 'static>(&self, value: T);

    /// A copy of the value of type `T` attached with
    /// [`set_extension`](Attachments::set_extension), if any.
    fn extension<T: Clone + Send + Sync + 'static>(&self) -> Option<T>;

    /// Turns streaming on or off.
    fn set_streaming(&self, on: bool);
}

impl Attachments for RunnableNetwork {
    fn set_user_id(&self, user: impl Into<String>) {
        self.0.runtime.write().user_id = Some(user.into());
    }

    fn add_modifier(&self, modifier: impl NetworkModifier) -> Result<()> {
        self.add_modifier_shared(Arc::new(modifier))
    }

    fn add_modifier_shared(&self, modifier: Arc<dyn NetworkModifier>) -> Result<()> {
        let mut rt = self.0.runtime.write();
        if rt.modifiers.iter().any(|m| m.id() == modifier.id()) {
            return Err(NetworkError::DuplicateModifier(modifier.id().to_string()));
        }
        let mut list: Vec<_> = rt.modifiers.iter().cloned().collect();
        list.push(modifier);
        // Stable: equal priorities keep the order they were added in.
        list.sort_by_key(|m| m.priority());
        rt.modifiers = list.into();
        Ok(())
    }

    fn modifier_as<M: NetworkModifier + Clone>(&self, id: &str) -> Option<M> {
        let modifiers = self.modifiers();
        let found = modifiers.iter().find(|m| m.id() == id)?;
        found.as_any()?.downcast_ref::<M>().cloned()
    }

    fn modifiers(&self) -> Arc<[Arc<dyn NetworkModifier>]> {
        self.0.runtime.read().modifiers.clone()
    }

    fn add_tool(&self, tool: impl Tool + 'static) {
        self.add_tool_shared(Arc::new(tool));
    }

    fn add_tool_shared(&self, tool: Arc<dyn Tool>) {
        let mut rt = self.0.runtime.write();
        let mut list: Vec<_> = rt
            .tools
            .iter()
            .filter(|t| t.name() != tool.name())
            .cloned()
            .collect();
        list.push(tool);
        rt.tools = list.into();
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let (own, modifiers, parent) = {
            let rt = self.0.runtime.read();
            (rt.tools.clone(), rt.modifiers.clone(), rt.parent.clone())
        };
        let mut out: Vec<Arc<dyn Tool>> = own.iter().cloned().collect();
        for m in modifiers.iter() {
            out.extend(m.tools(self));
        }
        if let Some(parent) = parent.upgrade() {
            out.extend(RunnableNetwork(parent).tools());
        }
        if out.len() <= 16 {
            // A handful: names compared, not hashed and copied.
            let mut i = 0;
            while i < out.len() {
                if out[..i].iter().any(|t| t.name() == out[i].name()) {
                    out.remove(i);
                } else {
                    i += 1;
                }
            }
            return out;
        }
        let mut seen = HashSet::new();
        out.retain(|t| seen.insert(t.name().to_string()));
        out
    }

    fn register_model(&self, name: impl Into<String>, model: impl ChatModel + 'static) {
        self.0.runtime.write().models.register(name, model);
    }

    fn register_model_shared(&self, name: impl Into<String>, model: Arc<dyn ChatModel>) {
        self.0.runtime.write().models.register_shared(name, model);
    }

    fn model(&self, name: &str) -> Option<Arc<dyn ChatModel>> {
        let (found, parent) = {
            let rt = self.0.runtime.read();
            (rt.models.get(name), rt.parent.clone())
        };
        found.or_else(|| {
            parent
                .upgrade()
                .and_then(|p| RunnableNetwork(p).model(name))
        })
    }

    fn set_extension<T: Clone + Send + Sync + 'static>(&self, value: T) {
        self.0.runtime.write().extensions.insert(value);
    }

    fn extension<T: Clone + Send + Sync + 'static>(&self) -> Option<T> {
        self.0.runtime.read().extensions.get::<T>().cloned()
    }

    fn set_step_limit(&self, limit: Option<usize>) {
        self.0.runtime.write().step_limit = limit;
    }

    fn set_streaming(&self, on: bool) {
        self.0.runtime.write().streaming = on;
    }
}

/// A network's events: callbacks and channels that see every event
/// (node added, invoked, removed, streamed delta), and what a run added.
pub trait Events {
    /// How many nodes were ever added to the network (removed ones
    /// included): a mark to pass to
    /// [`nodes_added_since`](Events::nodes_added_since) later.
    fn additions(&self) -> u64;

    /// The nodes added since [`additions`](Events::additions) gave `mark`
    /// and still in the network, in insertion order. Costs O(nodes added
    /// since), however large the network.
    ///
    /// ```
    /// use lc_agent::{Events, HumanNode, RunnableNetwork};
    ///
    /// let net = RunnableNetwork::new();
    /// let _scope = net.enter();
    /// HumanNode::new("first");
    /// let mark = net.additions();
    /// let second = HumanNode::new("second");
    /// assert_eq!(net.nodes_added_since(mark), vec![second]);
    /// ```
    fn nodes_added_since(&self, mark: u64) -> Vec<NodeRef>;

    /// Calls `callback` for every event (node added, invoked, removed,
    /// streamed delta).
    fn on_event(&self, callback: impl Fn(&NetworkEvent) + Send + Sync + 'static);

    /// A channel that receives every event from now on.
    fn subscribe(&self) -> tokio::sync::mpsc::UnboundedReceiver<NetworkEvent>;

    /// Calls every event callback (modifiers report their own events,
    /// such as [`NetworkEvent::HookRan`], this way).
    fn emit(&self, event: &NetworkEvent);
}

impl Events for RunnableNetwork {
    fn additions(&self) -> u64 {
        self.additions_now()
    }

    fn nodes_added_since(&self, mark: u64) -> Vec<NodeRef> {
        self.nodes_added_after(mark)
    }

    fn on_event(&self, callback: impl Fn(&NetworkEvent) + Send + Sync + 'static) {
        let mut rt = self.0.runtime.write();
        let mut list: Vec<Callback> = rt.callbacks.iter().cloned().collect();
        list.push(Arc::new(callback));
        rt.callbacks = list.into();
    }

    fn subscribe(&self) -> tokio::sync::mpsc::UnboundedReceiver<NetworkEvent> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        self.on_event(move |e| {
            let _ = tx.send(e.clone());
        });
        rx
    }

    fn emit(&self, event: &NetworkEvent) {
        let callbacks = self.0.runtime.read().callbacks.clone();
        for cb in callbacks.iter() {
            cb(event);
        }
    }
}

impl RunnableNetwork {
    /// The specs of [`Attachments::tools`], shared with the last request
    /// while the tools stay the same (see `crate::tool_specs`).
    pub(crate) fn tool_specs(&self) -> crate::tool_specs::ToolSpecs {
        self.0.tool_specs.specs_of(self.tools())
    }

    /// Drops every runtime attachment (modifiers, tools, models, event
    /// callbacks, the step limit, the outer network) here and in every
    /// sub-network, and attaches the chat and tool loops again: the
    /// network is as a fresh load of its saved state would be.
    pub(crate) fn reset_runtime(&self) {
        *self.0.runtime.write() = Runtime::new();
        self.add_default_modifiers();
        let nested: Vec<NodeRef> = self.0.graph.lock().nested().cloned().collect();
        for node in nested {
            if let Some(inner) = node.logic().inner_network() {
                inner.reset_runtime();
            }
        }
    }

    /// Who this session belongs to: [`Attachments::set_user_id`]'s,
    /// this network's or else its outer network's, else the session's
    /// `metadata["user"]` (the CLI's `--user`).
    #[cfg(feature = "otel")]
    pub(crate) fn user_id(&self) -> Option<String> {
        let own = self.0.runtime.read().user_id.clone();
        own.or_else(|| match self.outer() {
            Some(outer) => outer.user_id(),
            None => self
                .metadata_value("user")
                .and_then(|v| v.as_str().map(str::to_string)),
        })
    }

    /// Whether this handle is the only one (nothing else holds the
    /// network).
    pub(crate) fn is_unshared(&self) -> bool {
        Arc::strong_count(&self.0) == 1
    }

    /// Attaches the chat loop and the tool loop.
    pub(crate) fn add_default_modifiers(&self) {
        for m in crate::run::default_modifiers() {
            // Fresh networks have no modifiers, so ids cannot clash.
            let _ = self.add_modifier_shared(m);
        }
    }

    /// Model turns allowed in one `invoke` (`None`: unlimited).
    pub(crate) fn step_limit(&self) -> Option<usize> {
        self.0.runtime.read().step_limit
    }

    /// Whether chat nodes stream.
    pub(crate) fn streaming(&self) -> bool {
        self.0.runtime.read().streaming
    }

    pub(crate) fn set_parent_network(&self, parent: &RunnableNetwork) {
        self.0.runtime.write().parent = Arc::downgrade(&parent.0);
    }

    /// Builds the event only when someone listens (events that copy
    /// strings cost nothing in a network nobody watches).
    pub(crate) fn emit_with(&self, event: impl FnOnce() -> NetworkEvent) {
        let callbacks = self.0.runtime.read().callbacks.clone();
        if callbacks.is_empty() {
            return;
        }
        let event = event();
        for cb in callbacks.iter() {
            cb(&event);
        }
    }
}

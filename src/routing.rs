//! Model routing: which model each step of an agent uses.
//!
//! ```text
//!  metadata["model_routes"] = {"chat": "big", "summary": "small", "subagent:researcher": "fast"}
//!  chat node (step "summary") ─▶ its own chat_model_name?
//!                              ─▶ the route for its step (this network, then the outer ones)
//!                              ─▶ the network's chat model (this, then the outer ones)
//! ```
//!
//! Routes live in the network's metadata, so they are saved with the
//! session and a loaded session routes the same way. A chat node without a
//! step is step [`CHAT_STEP`]. The model a node used is recorded in its
//! metadata as `chat_model_name`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::model::ToolChoice;
use crate::network::builder::MODEL_ROUTES_KEY;
use crate::network::RunnableNetwork;

/// The step of a chat node that names none.
pub const CHAT_STEP: &str = "chat";

/// Model and tool-choice routing on a network: which model (and which
/// tool choice) each step of an agent uses.
pub trait ModelRoutes {
    /// The model name chat nodes use unless they name their own or their
    /// step has a route (saved with the network).
    fn chat_model_name(&self) -> Option<String>;

    /// Sets the model name chat nodes use unless they name their own or
    /// their step has a route.
    fn set_chat_model_name(&self, name: Option<String>);

    /// Routes `step` to the model registered as `model`.
    fn set_model_route(&self, step: impl Into<String>, model: impl Into<String>);

    /// Removes the route of `step`; returns the model it named.
    fn remove_model_route(&self, step: &str) -> Option<String>;

    /// This network's own routes (not the outer networks').
    fn model_routes(&self) -> BTreeMap<String, String>;

    /// The model a chat node of `step` uses when it names none itself: the
    /// route for the step here or in an outer network, else the chat model
    /// name here or in an outer network.
    fn model_for_step(&self, step: &str) -> Option<String>;

    /// Chat nodes of `step` that name no tool choice of their own answer
    /// with `choice` (saved in the network's metadata under
    /// `tool_choice_routes`, like the model routes; `None` removes
    /// the route).
    ///
    /// ```
    /// use lc_agent::{ModelRoutes, RunnableNetwork, ToolChoice};
    ///
    /// let net = RunnableNetwork::builder().build();
    /// net.set_tool_choice_route("chat", Some(ToolChoice::Required));
    /// assert_eq!(net.tool_choice_for_step("chat"), Some(ToolChoice::Required));
    /// assert_eq!(net.tool_choice_for_step("summary"), None);
    /// ```
    fn set_tool_choice_route(&self, step: impl Into<String>, choice: Option<ToolChoice>);

    /// The tool choice of chat nodes of `step` that name none: the route
    /// here, else in an outer network (a route that does not parse is
    /// ignored with a warning).
    fn tool_choice_for_step(&self, step: &str) -> Option<ToolChoice>;
}

impl ModelRoutes for RunnableNetwork {
    fn chat_model_name(&self) -> Option<String> {
        self.own_chat_model_name()
    }

    fn set_chat_model_name(&self, name: Option<String>) {
        self.set_own_chat_model_name(name);
    }

    fn set_model_route(&self, step: impl Into<String>, model: impl Into<String>) {
        let mut routes = own_map(self, MODEL_ROUTES_KEY);
        routes.insert(step.into(), Value::String(model.into()));
        self.set_metadata(MODEL_ROUTES_KEY, Value::Object(routes));
    }

    fn remove_model_route(&self, step: &str) -> Option<String> {
        let mut routes = own_map(self, MODEL_ROUTES_KEY);
        let removed = routes.shift_remove(step)?;
        self.set_metadata(MODEL_ROUTES_KEY, Value::Object(routes));
        removed.as_str().map(str::to_string)
    }

    fn model_routes(&self) -> BTreeMap<String, String> {
        own_map(self, MODEL_ROUTES_KEY)
            .into_iter()
            .filter_map(|(step, model)| Some((step, model.as_str()?.to_string())))
            .collect()
    }

    fn model_for_step(&self, step: &str) -> Option<String> {
        routed(self, step).or_else(|| self.resolved_chat_model_name())
    }

    fn set_tool_choice_route(&self, step: impl Into<String>, choice: Option<ToolChoice>) {
        let mut routes = own_map(self, ToolChoice::ROUTES_KEY);
        let step = step.into();
        match choice {
            Some(choice) => {
                routes.insert(step, Value::String(choice.to_string()));
            }
            None => {
                routes.shift_remove(&step);
            }
        }
        self.set_metadata(ToolChoice::ROUTES_KEY, Value::Object(routes));
    }

    fn tool_choice_for_step(&self, step: &str) -> Option<ToolChoice> {
        let own = self
            .metadata_value(ToolChoice::ROUTES_KEY)
            .and_then(|routes| routes.get(step)?.as_str().map(str::to_string));
        match own {
            Some(text) => match text.parse() {
                Ok(choice) => Some(choice),
                Err(error) => {
                    tracing::warn!(step, %error, "ignoring the tool-choice route");
                    None
                }
            },
            None => self.outer()?.tool_choice_for_step(step),
        }
    }
}

/// The route of `step` in `net` or its outer networks.
fn routed(net: &RunnableNetwork, step: &str) -> Option<String> {
    let own = net
        .metadata_value(MODEL_ROUTES_KEY)
        .and_then(|routes| routes.get(step)?.as_str().map(str::to_string));
    own.or_else(|| routed(&net.outer()?, step))
}

/// `net`'s own map under `key` (empty when there is none).
fn own_map(net: &RunnableNetwork, key: &str) -> Map<String, Value> {
    match net.metadata_value(key) {
        Some(Value::Object(routes)) => routes,
        _ => Map::new(),
    }
}

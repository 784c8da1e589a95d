//! The chat node: one model turn.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::{ModelError, NetworkError, Result};
use crate::event::NetworkEvent;
use crate::fallback;
use crate::fallback::FallbackExt;
use crate::message::Message;
use crate::model::{ChatRequest, StreamDelta, ToolChoice};
use crate::network::runtime::Attachments;
use crate::network::runtime::Events;
use crate::node::kinds::{self, BuiltInKind, TypedFields, BUILT_IN_KINDS};
use crate::node::{fields_of, NodeContext, NodeLogic, NodeRef};
use crate::output_schema::OutputSchema;
use crate::routing::ModelRoutes;
use crate::typed_answers::{self, OutputSchemaExt};
use crate::usage::UsageExt;

/// Calls a chat model with the conversation so far (kind `chat`).
///
/// The model is the node's own `chat_model_name`, else the network's (for
/// a sub-network, else the outer network's). The
/// request carries every tool of the network and its modifiers, and each
/// modifier may adjust it ([`crate::NetworkModifier::on_chat_request`]).
/// The tool choice is the node's own, else the route of its step
/// ([`ModelRoutes::set_tool_choice_route`](crate::ModelRoutes::set_tool_choice_route)),
/// else the provider's default.
/// Token usage (the server's, else an estimate marked `estimated`), the
/// model name (`chat_model_name`, and `response_model` as the server
/// named it) and the finish reason go to the node's metadata, and the
/// usage counts in the network's totals ([`UsageExt::record_usage`](crate::UsageExt::record_usage)); an answer cut off by the output limit is flagged
/// (`metadata["cut_off"]`, [`NetworkEvent::AnswerCutOff`]), and so is an
/// empty one (`metadata["empty_answer"]`, [`NetworkEvent::EmptyAnswer`]).
///
/// [`ChatNode::new`] and [`ChatNode::for_step`] make the usual ones; any
/// other is its fields, attached with [`NodeRef::create`]:
///
/// ```
/// use lc_agent::{ChatNode, NodeRef, ToolChoice};
///
/// # let net = lc_agent::RunnableNetwork::builder().build();
/// # let _scope = net.enter();
/// let forced = NodeRef::create(ChatNode {
///     tool_choice: Some(ToolChoice::Tool("lookup".into())),
///     ..ChatNode::default()
/// });
/// # assert_eq!(forced.kind(), "chat");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatNode {
    /// The model to use; `None` means the route of the node's step, else
    /// the network's `chat_model_name` (see the metadata's `model_routes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_model_name: Option<String>,
    /// The step this turn belongs to (`summary`, `subagent:<name>`, ...);
    /// `None` is [`crate::routing::CHAT_STEP`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// Whether and which tool the model must call this turn; `None` is
    /// the route of the step, else the provider's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// The JSON Schema this turn's final answer must follow; `None` is
    /// the schema of the step
    /// ([`OutputSchemaExt::set_output_schema`](crate::OutputSchemaExt::set_output_schema)),
    /// else none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<OutputSchema>,
}

impl ChatNode {
    /// The kind name (`__node_type__`).
    pub const KIND: &'static str = kinds::CHAT;

    /// What the human turn added by
    /// [`RunnableNetwork::continue_cut_off`](crate::RunnableNetwork::continue_cut_off)
    /// says.
    pub(crate) const CONTINUE_PROMPT: &'static str =
        "Your previous answer was cut off at the output \
limit. Continue exactly where it stopped, without repeating what you already wrote.";

    /// A chat node using the network's model, attached to the active
    /// network.
    #[allow(clippy::new_ret_no_self)]
    pub fn new() -> NodeRef {
        NodeRef::create(ChatNode::default())
    }

    /// A chat node of this step (its model comes from the step's route),
    /// attached to the active network.
    pub fn for_step(step: impl Into<String>) -> NodeRef {
        NodeRef::create(ChatNode {
            step: Some(step.into()),
            ..ChatNode::default()
        })
    }
}

#[async_trait]
impl NodeLogic for ChatNode {
    fn kind(&self) -> &str {
        Self::KIND
    }

    fn is_model_turn(&self) -> bool {
        true
    }

    async fn invoke(&self, ctx: NodeContext) -> Result<Message> {
        let net = &ctx.network;
        let step = self.step.as_deref().unwrap_or(crate::routing::CHAT_STEP);
        let name = self
            .chat_model_name
            .clone()
            .or_else(|| net.model_for_step(step))
            .ok_or(NetworkError::NoChatModel)?;
        // The step's model, then its fallback chain (`fallback.rs`).
        let model_named = |name: String| match net.model(&name) {
            Some(model) => Ok((name, model)),
            None => Err(NetworkError::UnknownModel(name)),
        };
        let mut models: smallvec::SmallVec<[_; 1]> = smallvec::smallvec![model_named(name)?];
        for fallback in net.model_fallbacks_for_step(step) {
            if !models.iter().any(|(name, _)| *name == fallback) {
                models.push(model_named(fallback)?);
            }
        }
        let mut answering = 0;
        let mut failed: Vec<(String, String)> = Vec::new();
        let node_id = ctx.node.id();
        let output_schema = self
            .output_schema
            .clone()
            .or_else(|| net.output_schema_for_step(step));
        let mut request = ChatRequest {
            history: ctx.input,
            system: Vec::new(),
            tools: net.tool_specs(),
            node_id: Some(node_id),
            tool_choice: self
                .tool_choice
                .clone()
                .or_else(|| net.tool_choice_for_step(step)),
            output_schema: output_schema.clone(),
            sampling: crate::Sampling::default(),
        };
        if let Some(schema) = &output_schema {
            request.system.push(schema.instruction());
        }
        for m in net.modifiers().iter() {
            if crate::run::has_hook(m.as_ref(), crate::run::NodeHook::ChatRequest) {
                crate::run::hook(m, m.on_chat_request(net, &ctx.node, &mut request)).await?;
            }
        }
        let cleared = crate::clear_results::clear(net, &mut request);
        if cleared > 0 {
            ctx.node
                .set_metadata(crate::clear_results::CLEARED_KEY, json!(cleared));
        }
        // Whether the request carries images: asked only where it matters
        // (a model that says it reads none, a refusal to read), so a turn
        // does not walk the whole conversation for it.
        let has_images = |request: &ChatRequest| request.messages().iter().any(|m| m.has_images());
        let mut rejected = Vec::new();
        let mut response = loop {
            // With an output schema, answer text is reported once it is
            // checked (a client must not read a rejected answer's text
            // joined to the next one's); tool calls as they come.
            let held_text = output_schema.is_some();
            let mut response = loop {
                let (model_name, model) = &models[answering];
                // A tool's image (read_file on a picture) becomes a note
                // for a model that cannot read it; a person's image is an
                // error below.
                if model.reads_images() == Some(false) && has_images(&request) {
                    leave_out_tool_images(&mut request, model_name);
                }
                if model.reads_images() == Some(false) && has_images(&request) {
                    return Err(ModelError::ImagesNotSupported {
                        model: model_name.clone(),
                        reason: "its settings say so: `images = false`".into(),
                    }
                    .into());
                }
                if let Err(limit) = crate::call_limits::count_call(
                    net,
                    crate::call_limits::Counted::Model,
                    model_name,
                ) {
                    return Err(NetworkError::CallLimit {
                        model: model_name.clone(),
                        limit,
                    });
                }
                let asked = if net.streaming() {
                    let emitter = net.clone();
                    let mut sink = move |delta| {
                        if !(held_text && matches!(delta, StreamDelta::Text(_))) {
                            emitter.emit(&NetworkEvent::Delta { node_id, delta });
                        }
                    };
                    model.stream(&request, &mut sink).await
                } else {
                    model.complete(&request).await
                };
                let asked = asked.map_err(|e| {
                    if has_images(&request) {
                        crate::model::images_refused(e, model_name)
                    } else {
                        e
                    }
                });
                match asked {
                    Ok(response) => break response,
                    Err(error) => {
                        let next = models
                            .get(answering + 1)
                            .filter(|_| fallback::falls_back(&error));
                        if next.is_some() || !failed.is_empty() {
                            failed.push((model_name.clone(), error.to_string()));
                            ctx.node.set_metadata(
                                fallback::MODEL_FALLBACK_KEY,
                                fallback::record(None, &failed),
                            );
                        }
                        let Some((next_name, _)) = next else {
                            return Err(error.into());
                        };
                        tracing::warn!(
                            node = %node_id,
                            model = %model_name,
                            fallback = %next_name,
                            %error,
                            "the model failed in a way retrying cannot fix; asking the next \
                             model of the step's fallback chain"
                        );
                        answering += 1;
                    }
                }
            };
            let name = &models[answering].0;
            if !failed.is_empty() {
                ctx.node.set_metadata(
                    fallback::MODEL_FALLBACK_KEY,
                    fallback::record(Some(name), &failed),
                );
            }
            let release = |text: &str| {
                if held_text && net.streaming() && !text.is_empty() {
                    net.emit(&NetworkEvent::Delta {
                        node_id,
                        delta: StreamDelta::Text(text.to_string()),
                    });
                }
            };
            let Some(schema) = output_schema
                .as_ref()
                .filter(|_| response.tool_calls.is_empty())
            else {
                release(&response.content);
                break response;
            };
            match schema.check(&response.content) {
                Ok(value) => {
                    // Delivered as the JSON value: a fenced or surrounded
                    // answer is unwrapped (the model's own text is kept).
                    let is_json =
                        serde_json::from_str::<serde_json::Value>(response.content.trim()).is_ok();
                    if !is_json {
                        let json = value.to_string();
                        ctx.node
                            .set_metadata(typed_answers::RAW_ANSWER_KEY, json!(response.content));
                        response.content = json;
                    }
                    ctx.node
                        .set_metadata(typed_answers::STRUCTURED_OUTPUT_KEY, value);
                    release(&response.content);
                    break response;
                }
                Err(errors) => {
                    record(net, &ctx.node, name.clone(), &request, &mut response);
                    rejected.push(typed_answers::rejected(&response.content, &errors));
                    ctx.node
                        .set_metadata(typed_answers::REJECTED_KEY, json!(rejected));
                    if rejected.len() >= typed_answers::MAX_ANSWERS {
                        return Err(NetworkError::SchemaMismatch {
                            attempts: rejected.len(),
                            errors,
                        });
                    }
                    tracing::info!(node = %node_id, ?errors, "the answer does not fit the output schema; asking again");
                    request.history =
                        typed_answers::retry_history(&request, schema, &response.content, &errors);
                }
            }
        };
        let cut_off = response.is_cut_off();
        let empty = response.is_empty();
        let (name, _) = models.swap_remove(answering);
        // The name moves into the node's metadata; a copy only to warn.
        let warned_name = (cut_off || empty).then(|| name.clone());
        let name_for_warning = warned_name.as_deref().unwrap_or_default();
        record(net, &ctx.node, name, &request, &mut response);
        if cut_off {
            tracing::warn!(
                node = %node_id,
                model = %name_for_warning,
                "the answer was cut off: the model reached its output limit"
            );
            ctx.node.set_metadata("cut_off", json!(true));
            net.emit(&NetworkEvent::AnswerCutOff { node_id });
        }
        if empty {
            // Not an error (the network stays valid and the run goes on),
            // but never silent: some servers drop a streamed tool call
            // and answer with nothing.
            tracing::warn!(node = %node_id, model = %name_for_warning, "the model answered with no text and no tool calls");
            ctx.node.set_metadata("empty_answer", json!(true));
            net.emit(&NetworkEvent::EmptyAnswer { node_id });
        }
        Ok(response.into_message())
    }

    fn save(&self) -> Result<serde_json::Map<String, serde_json::Value>> {
        fields_of(self)
    }
}

impl crate::RunnableNetwork {
    /// When the newest leaf is a chat answer cut off by the output limit
    /// (`metadata["cut_off"]`), adds a human turn below it asking the
    /// model to go on from where it stopped and returns it; the next
    /// [`invoke`](crate::RunnableNetwork::invoke) answers it. `None` when
    /// the newest answer is complete.
    pub fn continue_cut_off(&self) -> Result<Option<NodeRef>> {
        let Some(leaf) = self.current_leaf() else {
            return Ok(None);
        };
        let cut_off = leaf.kind() == ChatNode::KIND
            && leaf.metadata_value("cut_off") == Some(serde_json::Value::Bool(true));
        if !cut_off {
            return Ok(None);
        }
        let human = self.add(
            crate::nodes::HumanNode {
                text: ChatNode::CONTINUE_PROMPT.to_string(),
                parts: Vec::new(),
            },
            &[leaf.id()],
        )?;
        Ok(Some(human))
    }
}

/// The model, the usage (reported, else estimated) and the finish reason
/// go to the node; the usage counts in the network's totals. The
/// response's model and finish reason move into the node's metadata
/// (read what you need of them first).
fn record(
    net: &crate::RunnableNetwork,
    node: &NodeRef,
    name: String,
    request: &ChatRequest,
    response: &mut crate::model::ChatResponse,
) {
    let usage = match response.usage {
        Some(usage) => usage,
        None => net.usage_estimator().estimate(request, response),
    };
    crate::telemetry::record_chat(&tracing::Span::current(), request, response, &usage);
    let response_model = response.model.take().filter(|m| !m.is_empty());
    // Before the node carries its usage: a network without totals yet
    // counts its nodes' usage first, this call's then.
    net.record_usage(response_model.as_deref().unwrap_or(&name), &usage);
    let finish_reason = response.finish_reason.take();
    // One edit of the node (one lock, one version) for what a call records.
    // Room for it was made when the node joined its network
    // (`NodeRef::bind`).
    node.edit_metadata(|m| {
        m.insert("chat_model_name", serde_json::Value::String(name));
        if let Some(model) = response_model {
            m.insert(
                crate::usage::RESPONSE_MODEL_KEY,
                serde_json::Value::String(model),
            );
        }
        m.insert(
            crate::usage::TOKEN_USAGE_KEY,
            crate::node::metadata::Entry::Usage(usage),
        );
        if let Some(reason) = finish_reason {
            m.insert("finish_reason", serde_json::Value::String(reason));
        }
    });
}

/// Replaces the images of the tool results in `request` by a note naming
/// `model`, which cannot read them (the tool's text, which describes the
/// image, stays); whether there were any. The graph keeps the images.
fn leave_out_tool_images(request: &mut crate::model::ChatRequest, model: &str) -> bool {
    let tool_image =
        |m: &crate::Message| matches!(m, crate::Message::Tool { .. }) && m.has_images();
    // What the request sends (system messages, the latest summary, what
    // follows it), as `clear_results.rs` rebuilds it.
    let sent = request.history.assemble(&[]);
    if !sent.iter().any(|m| tool_image(m)) {
        return false;
    }
    let messages = sent.into_iter().map(|m| {
        let mut m = m.into_owned();
        if let crate::Message::Tool { content, parts, .. } = &mut m {
            let before = parts.len();
            parts.retain(|p| !matches!(p, crate::content::ContentPart::Image(_)));
            let left_out = before - parts.len();
            if left_out > 0 {
                content.push_str(&format!(
                    "\n[{} not shown: model `{model}` cannot read images.]",
                    if left_out == 1 {
                        "The image is".to_string()
                    } else {
                        format!("{left_out} images are")
                    }
                ));
            }
        }
        m
    });
    request.history = crate::History::from_messages(messages.collect::<Vec<_>>());
    true
}

#[linkme::distributed_slice(BUILT_IN_KINDS)]
static CHAT_KIND: BuiltInKind = BuiltInKind {
    name: kinds::CHAT,
    load: kinds::serde_load::<ChatNode>,
    typed: Some(|f: &mut TypedFields| match f {
        TypedFields {
            text: None,
            tool_call: None,
            ..
        } => Some(std::sync::Arc::new(ChatNode {
            chat_model_name: f.chat_model_name.take().flatten(),
            // A chat node with a step, a tool choice or an output schema
            // has a key the typed reader does not know, so it loads
            // through `load`.
            step: None,
            tool_choice: None,
            output_schema: None,
        })),
        _ => None,
    }),
    immutable: true,
};

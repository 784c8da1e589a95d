//! Steering a live run: messages sent while a network runs wait in its
//! [`Inbox`] and join the run at its next node boundary.
//!
//! ```text
//!  inbox.send(msg)          any task, while the run goes on
//!     │
//!     ▼  at the next boundary (SteeringModifier's hooks)
//!  inject     before the next model call: human node(s) put between the
//!             chat node and its parents (answered at once), the model reads them
//!  queue      after the run's answer (a chat node that ends its turn): human
//!             node(s) below it and a new chat node: the run goes on with them
//!  interrupt  calls that have not started are answered "not run" (never run);
//!             at the next model call the message is injected; an interrupt
//!             with nothing to say holds that call, and the run ends there
//!             (the held call is taken out): everything that ran is kept
//!  any mode   a run that starts with messages waiting and nothing pending
//!             takes them as its turn
//! ```
//!
//! Each message joins as a human node recording `metadata["steer"]`
//! (`{id, mode, sent_at}`), and a [`NetworkEvent::Steered`] says so, so a
//! caller that kept the message elsewhere (a server's durable inbox)
//! knows it is in the graph once that is saved ([`steered_ids`]). A run
//! that ends with messages still waiting (sent after its last boundary)
//! leaves them in the inbox: its caller invokes again, or closes the
//! inbox when it is empty ([`Inbox::close_if_empty`]).
//!
//! The feature stands on the core: a modifier, and the rule that a node
//! held or answered by a pre-invoke hook does not run (run/invoke.rs).

mod inbox;

use async_trait::async_trait;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::error::Result;
use crate::event::NetworkEvent;
use crate::message::{Message, ToolStatus};
use crate::network::runtime::Events;
use crate::network::RunnableNetwork;
use crate::node::{NodeId, NodeRef};
use crate::nodes::{HumanNode, ToolNode};
use crate::run::{Hooks, InvokeOutcome, NetworkModifier};

pub use inbox::{Inbox, SteerMessage, SteerMode};

/// The human node metadata key recording the message it was.
pub(crate) const STEER_KEY: &str = "steer";

/// Why a model call waits after an interrupt with nothing to say (it is
/// taken out when the run ends).
const INTERRUPTED: &str = "interrupted";

/// The result of a call an interrupt kept from running.
const NOT_RUN: &str = "Error: not run: the user interrupted the run before this call started.";

/// Reads a session's [`Inbox`] at the run's node boundaries (see the
/// [module docs](self)).
///
/// ```
/// use lc_agent::{FnTool, HumanNode, Inbox, RunnableNetwork, ScriptedChatModel, SteerMessage, SteerMode};
/// use lc_agent::{SteeringModifier, ToolOutput, Turn};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let inbox = Inbox::default();
/// let sent = inbox.clone();
/// // A tool that takes a while: the person types meanwhile.
/// let build = FnTool::new("build", "Builds.", json!({"type": "object"}), move |_, _| {
///     let sent = sent.clone();
///     async move {
///         sent.send(SteerMessage::new("and run the tests", SteerMode::Inject)).unwrap();
///         Ok(ToolOutput::ok("built"))
///     }
/// });
/// let model = ScriptedChatModel::new([
///     Turn::call("c1", "build", json!({})),
///     Turn::text("Built, and the tests pass."),
/// ]);
/// let net = RunnableNetwork::builder().default_node("chat").chat_model("m")
///     .model("m", model.clone()).tool(build)
///     .modifier(SteeringModifier::new(inbox.clone()))
///     .build();
/// { let _s = net.enter(); HumanNode::new("build it"); }
/// net.invoke().await.unwrap();
/// // The second model call read the message after the tool's result.
/// let kinds: Vec<String> = net.topological_order().iter().map(|n| n.kind().to_string()).collect();
/// assert_eq!(kinds, ["human", "chat", "tool", "human", "chat"]);
/// assert_eq!(model.calls(), 2);
/// assert!(inbox.close_if_empty());
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct SteeringModifier {
    inbox: Inbox,
}

impl SteeringModifier {
    /// The modifier id.
    pub(crate) const ID: &'static str = "lc-agent/steering";

    /// Reads `inbox` (opened: a run is going on).
    pub fn new(inbox: Inbox) -> Self {
        inbox.open();
        Self { inbox }
    }

    /// Before a model call: the messages to inject (all but queued ones)
    /// join between it and its parents.
    fn before_model_call(&self, net: &RunnableNetwork, node: &NodeRef) -> Result<()> {
        let messages = self.inbox.take(|m| m.mode != SteerMode::Queue);
        if messages.is_empty() {
            return Ok(());
        }
        let mut parents = node.parents();
        let mut said = false;
        for message in messages {
            let Some(human) = join(net, &parents, &message, true)? else {
                continue;
            };
            parents = vec![human.id()];
            said = true;
        }
        if said {
            net.set_parents(node.id(), &parents)?;
        } else {
            // Only a stop: the call waits and is taken out at the end.
            node.hold(INTERRUPTED);
        }
        Ok(())
    }

    /// After a model call that ends its turn: every waiting message is
    /// the next turn of the same run.
    fn after_answer(&self, net: &RunnableNetwork, node: &NodeRef) -> Result<()> {
        let ends_turn = node.output().is_some_and(|out| out.tool_calls().is_empty())
            && net.children(node.id()).is_empty();
        if !ends_turn || self.inbox.is_empty() || !net.pending().is_empty() {
            return Ok(());
        }
        next_turn(net, Some(node.id()), self.inbox.take(|_| true))
    }
}

/// Adds `message` below `parents` as a human node (answered at once when
/// `now`, so a model call about to run reads it; else it runs next);
/// `None` for an interrupt with nothing to say.
fn join(
    net: &RunnableNetwork,
    parents: &[NodeId],
    message: &SteerMessage,
    now: bool,
) -> Result<Option<NodeRef>> {
    if message.is_empty() {
        net.emit(&NetworkEvent::Steered {
            id: message.id,
            mode: message.mode.as_str(),
            node_id: None,
        });
        return Ok(None);
    }
    let human = NodeRef::detached(HumanNode {
        text: message.text.clone(),
        parts: message.parts.clone(),
    });
    human.set_metadata(
        STEER_KEY,
        json!({"id": message.id, "mode": message.mode.as_str(), "sent_at": message.sent_at}),
    );
    net.add_node_with_parents(&human, parents)?;
    net.emit(&NetworkEvent::Steered {
        id: message.id,
        mode: message.mode.as_str(),
        node_id: Some(human.id()),
    });
    if now {
        human.set_output(Message::Human {
            content: message.text.clone(),
            parts: message.parts.clone(),
        });
        net.emit(&NetworkEvent::NodeInvoked {
            node_id: human.id(),
        });
    }
    Ok(Some(human))
}

/// `messages` as a new turn below `parent`: human nodes, then the
/// network's default node (the chat that answers them).
fn next_turn(
    net: &RunnableNetwork,
    parent: Option<NodeId>,
    messages: Vec<SteerMessage>,
) -> Result<()> {
    let mut parents: Vec<NodeId> = parent.into_iter().collect();
    let mut said = false;
    for message in messages {
        if let Some(human) = join(net, &parents, &message, false)? {
            parents = vec![human.id()];
            said = true;
        }
    }
    if !said {
        return Ok(());
    }
    if let Some(chat) = net.new_default_node() {
        net.add_node_with_parents(&chat?, &parents)?;
    }
    Ok(())
}

#[async_trait]
impl NetworkModifier for SteeringModifier {
    fn id(&self) -> &str {
        Self::ID
    }

    /// After the loops (-100) and approvals (10) grew the graph; before
    /// the checkpoint (last), which saves what it added.
    fn priority(&self) -> i32 {
        20
    }

    fn hooks(&self) -> Hooks {
        Hooks {
            chat_request: false,
            ..Hooks::ALL
        }
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    async fn on_begin_invoke(&self, network: &RunnableNetwork) -> Result<()> {
        self.inbox.open();
        // Pending work reads the messages at its boundaries; a run with
        // none takes them as its turn.
        if self.inbox.is_empty() || !network.pending().is_empty() {
            return Ok(());
        }
        let leaf = network.current_leaf().map(|n| n.id());
        next_turn(network, leaf, self.inbox.take(|_| true))
    }

    async fn on_pre_invoke(&self, network: &RunnableNetwork, node: &NodeRef) -> Result<()> {
        if node.logic().is_model_turn() {
            return self.before_model_call(network, node);
        }
        if !self.inbox.interrupts() {
            return Ok(());
        }
        // An interrupt waits: work that has not started never does.
        if let Some(tool) = node.downcast::<ToolNode>() {
            node.set_metadata(INTERRUPTED, Value::Bool(true));
            node.set_output(Message::Tool {
                content: NOT_RUN.to_string(),
                tool_call_id: tool.tool_call.id.clone(),
                name: Some(tool.tool_call.name.clone()),
                status: ToolStatus::Error,
                parts: Vec::new(),
            });
        } else if node.logic().inner_network().is_some() {
            node.set_metadata(INTERRUPTED, Value::Bool(true));
            node.set_output(Message::ai(
                "Not run: the user interrupted the run before it started.",
            ));
        }
        Ok(())
    }

    async fn on_post_invoke(&self, network: &RunnableNetwork, node: &NodeRef) -> Result<()> {
        if node.logic().is_model_turn() {
            return self.after_answer(network, node);
        }
        Ok(())
    }

    async fn on_end_invoke(&self, network: &RunnableNetwork, _: &InvokeOutcome) -> Result<()> {
        // The model calls an interrupt stopped before: taken out (newest
        // first, so each is a leaf).
        let stopped: Vec<NodeId> = network
            .held()
            .iter()
            .filter(|n| n.held().as_deref() == Some(INTERRUPTED))
            .map(NodeRef::id)
            .collect();
        for id in stopped.into_iter().rev() {
            network.remove_node(id)?;
        }
        Ok(())
    }
}

/// The ids of the messages that joined `network` (its human nodes'
/// `metadata["steer"]`), in graph order: a durable inbox drops these.
pub fn steered_ids(network: &RunnableNetwork) -> Vec<Uuid> {
    network
        .nodes()
        .iter()
        .filter(|n| n.kind() == HumanNode::KIND)
        .filter_map(|n| n.metadata_value(STEER_KEY))
        .filter_map(|v| v.get("id")?.as_str()?.parse().ok())
        .collect()
}

//! One editor session: a saved lc-agent session with its agent, the task
//! that turns its run events into `session/update`s, and its prompt turns.
//!
//! ```text
//!  session/prompt ─▶ the text joins the session ─▶ invoke ─┬─ answered ─▶ stopReason end_turn (max_tokens: cut off)
//!                                                          ├─ held calls ─▶ session/request_permission, one per call
//!                                                          │     allow_once / allow_always ─▶ approved (always: the tool,
//!                                                          │     for the rest of the session); reject_once ─▶ rejected
//!                                                          │     (the model reads "the user said no") ─▶ invoke again
//!                                                          └─ failed ─▶ a JSON-RPC error naming what failed
//!  session/cancel ─▶ the run stops where it is; what had not run (held calls too) is taken out
//!                    (their tool calls end `failed`), the session saved ─▶ stopReason cancelled
//! ```
//!
//! The session's permission mode is its ACP session mode (`plan`,
//! `default`, `accept-edits`, `bypass`; `session/set_mode` changes it and
//! the session keeps it). A call the session's permission mode or rules let
//! through is not asked; `--yes` approves every call. One prompt runs at a time in a
//! session (a second waits for the first).

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionId, SessionMode, SessionModeState, SessionNotification, StopReason,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use lc_agent::{Events, NetworkEvent, NodeId, RunnableNetwork};
use lc_agent_deepagent::{
    decide, pending_approvals, permission_mode, set_permission_mode, Decision, PendingApproval,
    PermissionMode,
};
use lc_agent_server::{NodeInfo, PendingCall, RunEvent};
use tokio::sync::{mpsc, oneshot, watch};

use super::updates::{self, Updates};
use crate::agent::Agent;
use crate::error::in_user_terms;

/// The permission options offered for a call.
const ALLOW_ONCE: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT_ONCE: &str = "reject_once";

/// An editor's session (see the [module docs](self)).
pub(crate) struct Session {
    pub(crate) id: SessionId,
    pub(crate) agent: Agent,
    cx: ConnectionTo<Client>,
    feed: Feed,
    /// Set by `session/cancel`, cleared when a prompt starts.
    cancel: watch::Sender<bool>,
    /// One prompt at a time.
    turn: tokio::sync::Mutex<()>,
}

/// How a turn ended, when it did not fail.
type TurnResult = Result<StopReason, agent_client_protocol::Error>;

impl Session {
    /// The session of `agent`, its updates sent to the editor on `cx`.
    pub(crate) fn new(agent: Agent, cx: ConnectionTo<Client>) -> Self {
        let id = SessionId::new(agent.net.id().to_string());
        let root = agent.backend_root.clone();
        let feed = Feed::start(&agent.net, cx.clone(), id.clone(), Updates::new(root));
        Self {
            id,
            agent,
            cx,
            feed,
            cancel: watch::Sender::new(false),
            turn: tokio::sync::Mutex::new(()),
        }
    }

    /// Sends the saved conversation as updates (a loaded session).
    pub(crate) fn replay(&self) {
        for update in updates::replay(&self.agent.net, self.agent.backend_root.as_deref()) {
            let _ = self
                .cx
                .send_notification(SessionNotification::new(self.id.clone(), update));
        }
    }

    /// The session's permission mode and the others, as ACP session modes.
    pub(crate) fn modes(&self) -> SessionModeState {
        let modes = PermissionMode::ALL
            .into_iter()
            .map(|mode| {
                let title = match mode {
                    PermissionMode::Plan => "Plan",
                    PermissionMode::Default => "Default",
                    PermissionMode::AcceptEdits => "Accept edits",
                    PermissionMode::Bypass => "Bypass",
                };
                SessionMode::new(mode.name(), title).description(mode.describe().to_string())
            })
            .collect();
        SessionModeState::new(permission_mode(&self.agent.net).name(), modes)
    }

    /// `session/set_mode`: the session's permission mode, saved with it.
    pub(crate) async fn set_mode(&self, mode: &str) -> Result<(), agent_client_protocol::Error> {
        let mode: PermissionMode = mode.parse().map_err(|e: lc_agent_deepagent::UnknownMode| {
            agent_client_protocol::Error::invalid_params()
                .data(serde_json::Value::String(e.to_string()))
        })?;
        set_permission_mode(&self.agent.net, mode);
        self.save().await;
        Ok(())
    }

    /// `session/cancel`: the running turn stops.
    pub(crate) fn cancel(&self) {
        self.cancel.send_replace(true);
    }

    /// Resolves once `session/cancel` came.
    async fn cancelled(&self) {
        let mut rx = self.cancel.subscribe();
        let _ = rx.wait_for(|c| *c).await;
    }

    /// One prompt turn (see the [module docs](self)).
    pub(crate) async fn prompt(&self, text: &str) -> TurnResult {
        let _turn = self.turn.lock().await;
        self.cancel.send_replace(false);
        let net = &self.agent.net;
        let first = self
            .agent
            .begin_turn(text, Vec::new())
            .map_err(|e| internal(&e.message))?;
        crate::mode::warn_if_bypass(net);
        loop {
            let invoked = tokio::select! {
                invoked = net.invoke() => invoked,
                () = self.cancelled() => return Ok(self.stop().await),
            };
            if let Err(e) = invoked {
                self.feed.flush().await;
                self.save().await;
                return Err(internal(&in_user_terms(&e)));
            }
            if net.held().is_empty() {
                break;
            }
            let pending = pending_approvals(net);
            self.feed.send(Fed::Run(RunEvent::ApprovalNeeded {
                pending: pending.iter().map(PendingCall::from).collect(),
            }));
            self.feed.flush().await;
            for call in &pending {
                let decision = tokio::select! {
                    decision = self.ask(call) => decision,
                    () = self.cancelled() => None,
                };
                let Some(decision) = decision else {
                    return Ok(self.stop().await);
                };
                decide(net, call.node_id, decision).map_err(|e| internal(&e.to_string()))?;
                // A rejected call has its answer now, and never runs.
                if let Some(answer) = net.node(call.node_id).and_then(|n| n.output()) {
                    self.feed.send(Fed::Run(RunEvent::NodeFinished {
                        node: NodeInfo::of(net, call.node_id),
                        message: Some((*answer).clone()),
                    }));
                }
            }
        }
        let cut_off = self.feed.flush().await;
        self.agent.answered(first);
        self.save().await;
        self.agent.write_title_if_due().await;
        Ok(if cut_off {
            StopReason::MaxTokens
        } else {
            StopReason::EndTurn
        })
    }

    /// The decision on a held call: the policy's, else the editor's
    /// (`None`: the editor cancelled the turn).
    async fn ask(&self, call: &PendingApproval) -> Option<Decision> {
        let tool = &call.tool_call.name;
        if self
            .agent
            .policy
            .lock()
            .map(|p| p.allows(tool))
            .unwrap_or(false)
        {
            return Some(Decision::Approve);
        }
        let options = vec![
            PermissionOption::new(ALLOW_ONCE, "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new(
                ALLOW_ALWAYS,
                format!("Always allow {tool} in this session"),
                PermissionOptionKind::AllowAlways,
            ),
            PermissionOption::new(REJECT_ONCE, "Reject", PermissionOptionKind::RejectOnce),
        ];
        let request = RequestPermissionRequest::new(
            self.id.clone(),
            Updates::describe(
                self.agent.backend_root.as_deref(),
                &self.agent.net,
                call.node_id,
            ),
            options,
        );
        let answer = self.cx.send_request(request).block_task().await;
        let outcome = match answer {
            Ok(answer) => answer.outcome,
            Err(e) => {
                tracing::warn!(
                    "the editor did not answer a permission request: {}",
                    e.message
                );
                return None;
            }
        };
        match outcome {
            RequestPermissionOutcome::Selected(selected) => match &*selected.option_id.0 {
                ALLOW_ONCE => Some(Decision::Approve),
                ALLOW_ALWAYS => {
                    if let Ok(mut policy) = self.agent.policy.lock() {
                        policy.tools.insert(tool.clone());
                    }
                    Some(Decision::Approve)
                }
                _ => Some(Decision::Reject("the user said no".to_string())),
            },
            _ => None,
        }
    }

    /// After a cancel: what had not run is taken out (held calls too: the
    /// model's unanswered calls read as not executed), the session saved.
    async fn stop(&self) -> StopReason {
        let mut removed = Vec::new();
        for node in self.agent.net.pending() {
            if self.agent.net.remove_node(node.id()).is_ok() {
                removed.push(node.id());
            }
        }
        self.feed.send(Fed::Stopped(removed));
        self.feed.flush().await;
        self.save().await;
        StopReason::Cancelled
    }

    async fn save(&self) {
        if let Err(e) = self.agent.save().await {
            tracing::warn!("{}", e.message);
        }
    }
}

/// A JSON-RPC error with this message.
pub(crate) fn internal(message: &str) -> agent_client_protocol::Error {
    agent_client_protocol::Error::internal_error()
        .data(serde_json::Value::String(message.to_string()))
}

/// What the update task gets, in order.
enum Fed {
    /// An event of the network.
    Network(NetworkEvent),
    /// A run event the turn made (approvals needed).
    Run(RunEvent),
    /// These nodes were taken out before they ran (a cancel).
    Stopped(Vec<NodeId>),
    /// Everything before was sent; answers whether an answer was cut off.
    Flush(oneshot::Sender<bool>),
}

/// The update task's inbox: the network's events and the turn's, in order.
struct Feed {
    tx: mpsc::UnboundedSender<Fed>,
}

impl Feed {
    /// Starts the task that sends `net`'s events to the editor.
    fn start(
        net: &RunnableNetwork,
        cx: ConnectionTo<Client>,
        id: SessionId,
        mut updates: Updates,
    ) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<Fed>();
        {
            // The callback only queues: it may run with the graph locked.
            let tx = tx.clone();
            net.on_event(move |event| {
                let _ = tx.send(Fed::Network(event.clone()));
            });
        }
        let net = net.clone();
        tokio::spawn(async move {
            while let Some(fed) = rx.recv().await {
                let event = match fed {
                    Fed::Network(event) => RunEvent::from_network(&net, &event),
                    Fed::Run(event) => Some(event),
                    Fed::Stopped(nodes) => {
                        for update in updates.stopped(&nodes) {
                            let _ =
                                cx.send_notification(SessionNotification::new(id.clone(), update));
                        }
                        continue;
                    }
                    Fed::Flush(done) => {
                        let _ = done.send(updates.take_cut_off());
                        continue;
                    }
                };
                let Some(event) = event else { continue };
                for update in updates.on_run_event(&net, &event) {
                    let _ = cx.send_notification(SessionNotification::new(id.clone(), update));
                }
            }
        });
        Self { tx }
    }

    fn send(&self, fed: Fed) {
        let _ = self.tx.send(fed);
    }

    /// Waits until what is queued was sent; whether an answer was cut off.
    async fn flush(&self) -> bool {
        let (done, sent) = oneshot::channel();
        self.send(Fed::Flush(done));
        sent.await.unwrap_or(false)
    }
}

/// The sessions of one connection, by id.
pub(crate) type Sessions = std::sync::Mutex<std::collections::HashMap<String, Arc<Session>>>;

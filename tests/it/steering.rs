//! Steering a live run: a message sent while the network runs joins it at
//! the next node boundary, in each mode (inject, queue, interrupt), and a
//! message sent after the last boundary waits for the next invoke.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use lc_agent::{
    steered_ids, ChatModel, ChatRequest, ChatResponse, Events, FnTool, HumanNode, Inbox,
    ModelError, NetworkEvent, RunnableNetwork, ScriptedChatModel, SteerMessage, SteerMode,
    SteeringModifier, ToolOutput, ToolStatus, Turn,
};
use serde_json::json;

/// A scripted model that records what each call was asked (role: text)
/// and may do something while it answers (the person types meanwhile).
#[derive(Clone)]
struct Asked {
    script: ScriptedChatModel,
    asked: Arc<Mutex<Vec<Vec<String>>>>,
    during: Arc<dyn Fn(usize) + Send + Sync>,
}

impl Asked {
    fn new(turns: Vec<Turn>, during: impl Fn(usize) + Send + Sync + 'static) -> Self {
        Self {
            script: ScriptedChatModel::new(turns),
            asked: Arc::default(),
            during: Arc::new(during),
        }
    }

    /// What call `n` (from 0) was asked.
    fn call(&self, n: usize) -> Vec<String> {
        self.asked.lock().unwrap()[n].clone()
    }

    fn calls(&self) -> usize {
        self.asked.lock().unwrap().len()
    }
}

#[async_trait]
impl ChatModel for Asked {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let n = {
            let mut asked = self.asked.lock().unwrap();
            asked.push(
                request
                    .messages()
                    .iter()
                    .map(|m| format!("{}: {}", m.role(), m.text()))
                    .collect(),
            );
            asked.len() - 1
        };
        (self.during)(n);
        self.script.complete(request).await
    }
}

/// A tool that counts its runs and, when it runs, sends `message` (if
/// any) to the inbox: the person types while it works.
fn tool(name: &str, runs: Arc<AtomicUsize>, inbox: Inbox, message: Option<SteerMessage>) -> FnTool {
    FnTool::new(name, "Works.", json!({"type": "object"}), move |_, _| {
        let (runs, inbox, message) = (runs.clone(), inbox.clone(), message.clone());
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            if let Some(message) = message {
                inbox.send(message).unwrap();
            }
            Ok(ToolOutput::ok("done"))
        }
    })
}

fn agent(model: Asked, tools: Vec<FnTool>, inbox: &Inbox) -> RunnableNetwork {
    let mut builder = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("m")
        .model("m", model)
        .modifier(SteeringModifier::new(inbox.clone()));
    for t in tools {
        builder = builder.tool(t);
    }
    let net = builder.build();
    {
        let _s = net.enter();
        HumanNode::new("build it");
    }
    net
}

fn steered(events: &mut tokio::sync::mpsc::UnboundedReceiver<NetworkEvent>) -> Vec<NetworkEvent> {
    std::iter::from_fn(|| events.try_recv().ok())
        .filter(|e| matches!(e, NetworkEvent::Steered { .. }))
        .collect()
}

#[tokio::test]
async fn an_injected_message_is_read_by_the_next_model_call() {
    let inbox = Inbox::default();
    let runs = Arc::new(AtomicUsize::new(0));
    let message = SteerMessage::new("and run the tests", SteerMode::Inject);
    let model = Asked::new(
        vec![
            Turn::call("c1", "build", json!({})),
            Turn::text("Built; the tests pass."),
        ],
        |_| {},
    );
    let build = tool("build", runs.clone(), inbox.clone(), Some(message.clone()));
    let net = agent(model.clone(), vec![build], &inbox);
    let mut events = net.subscribe();

    let reply = net.invoke().await.unwrap();

    assert_eq!(reply.text(), "Built; the tests pass.");
    assert_eq!(model.calls(), 2, "no model call more than the script");
    assert_eq!(
        model.call(1),
        [
            "human: build it",
            "ai: ",
            "tool: done",
            "human: and run the tests"
        ],
        "the message came right after the tool's result, before the next call"
    );
    let human = net
        .nodes()
        .into_iter()
        .find(|n| n.metadata_value("steer").is_some())
        .unwrap();
    assert_eq!(
        human.metadata_value("steer").unwrap()["mode"],
        json!("inject")
    );
    assert_eq!(steered_ids(&net), vec![message.id]);
    let said = steered(&mut events);
    assert_eq!(
        said,
        vec![NetworkEvent::Steered {
            id: message.id,
            mode: "inject",
            node_id: Some(human.id()),
        }]
    );
    assert!(inbox.close_if_empty(), "nothing waits");
    // Saved and loaded, the steered turn is the same conversation.
    let loaded = RunnableNetwork::from_json(&net.to_json().unwrap()).unwrap();
    assert_eq!(steered_ids(&loaded), vec![message.id]);
}

#[tokio::test]
async fn a_queued_message_waits_for_the_answer_then_is_the_next_turn_of_the_run() {
    let inbox = Inbox::default();
    let runs = Arc::new(AtomicUsize::new(0));
    let message = SteerMessage::new("now deploy", SteerMode::Queue);
    let model = Asked::new(
        vec![
            Turn::call("c1", "build", json!({})),
            Turn::text("Built."),
            Turn::text("Deployed."),
        ],
        |_| {},
    );
    let build = tool("build", runs.clone(), inbox.clone(), Some(message.clone()));
    let net = agent(model.clone(), vec![build], &inbox);

    let reply = net.invoke().await.unwrap();

    assert_eq!(reply.text(), "Deployed.");
    assert!(
        !model.call(1).iter().any(|m| m.contains("now deploy")),
        "the run's own answer came first: {:?}",
        model.call(1)
    );
    assert_eq!(
        model.call(2)[model.call(2).len() - 2..],
        ["ai: Built.", "human: now deploy"]
    );
    assert_eq!(steered_ids(&net), vec![message.id]);
    assert!(net.pending().is_empty());
}

#[tokio::test]
async fn an_interrupt_keeps_what_ran_runs_no_call_that_had_not_started_and_answers_the_message() {
    let inbox = Inbox::default();
    let runs = Arc::new(AtomicUsize::new(0));
    let message = SteerMessage::new("stop, use the other branch", SteerMode::Interrupt);
    let sent = (inbox.clone(), message.clone());
    // The interrupt arrives while the model writes its first answer, which
    // calls two tools.
    let model = Asked::new(
        vec![
            Turn::tool_calls([
                lc_agent::ToolCall::new("c1", "write", json!({})),
                lc_agent::ToolCall::new("c2", "write", json!({})),
            ]),
            Turn::text("Switched to the other branch."),
        ],
        move |n| {
            if n == 0 {
                sent.0.send(sent.1.clone()).unwrap();
            }
        },
    );
    let write = tool("write", runs.clone(), inbox.clone(), None);
    let net = agent(model.clone(), vec![write], &inbox);

    let reply = net.invoke().await.unwrap();

    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "no call that had not started ran"
    );
    assert_eq!(reply.text(), "Switched to the other branch.");
    let results: Vec<_> = net
        .nodes()
        .iter()
        .filter(|n| n.kind() == "tool")
        .map(|n| n.output().unwrap())
        .collect();
    assert_eq!(
        results.len(),
        2,
        "every call has its result: the conversation stays valid"
    );
    for r in &results {
        assert!(
            r.text().starts_with("Error: not run: the user interrupted"),
            "{}",
            r.text()
        );
        assert!(matches!(
            &**r,
            lc_agent::Message::Tool {
                status: ToolStatus::Error,
                ..
            }
        ));
    }
    let asked = model.call(1);
    assert_eq!(asked.last().unwrap(), "human: stop, use the other branch");
    assert_eq!(steered_ids(&net), vec![message.id]);
}

#[tokio::test]
async fn an_interrupt_with_nothing_to_say_stops_the_run_keeping_what_ran() {
    let inbox = Inbox::default();
    let runs = Arc::new(AtomicUsize::new(0));
    let stop = SteerMessage::new("", SteerMode::Interrupt);
    // The first call runs and, while it runs, the person stops the run.
    let build = tool("build", runs.clone(), inbox.clone(), Some(stop.clone()));
    let model = Asked::new(
        vec![
            Turn::call("c1", "build", json!({})),
            Turn::text("never asked"),
        ],
        |_| {},
    );
    let net = agent(model.clone(), vec![build], &inbox);
    let mut events = net.subscribe();

    net.invoke().await.unwrap();

    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the call in flight finished"
    );
    assert_eq!(model.calls(), 1, "no model call after the stop");
    let kinds: Vec<String> = net
        .topological_order()
        .iter()
        .map(|n| n.kind().to_string())
        .collect();
    assert_eq!(
        kinds,
        ["human", "chat", "tool"],
        "the stopped call is taken out"
    );
    assert!(net.pending().is_empty() && net.held().is_empty());
    assert_eq!(
        steered(&mut events),
        vec![NetworkEvent::Steered {
            id: stop.id,
            mode: "interrupt",
            node_id: None,
        }]
    );
    // The session goes on from there.
    assert!(inbox.close_if_empty());
}

#[tokio::test]
async fn a_message_sent_after_the_last_boundary_is_the_next_invoke_s_turn() {
    let inbox = Inbox::default();
    let model = Asked::new(vec![Turn::text("Hello."), Turn::text("Also done.")], |_| {});
    let net = agent(model.clone(), vec![], &inbox);
    net.invoke().await.unwrap();
    // Sent as the run ended: it waits, so the caller does not close.
    let late = SteerMessage::new("one more thing", SteerMode::Inject);
    inbox.send(late.clone()).unwrap();
    assert!(!inbox.close_if_empty());

    let reply = net.invoke().await.unwrap();

    assert_eq!(reply.text(), "Also done.");
    assert_eq!(model.call(1).last().unwrap(), "human: one more thing");
    assert_eq!(steered_ids(&net), vec![late.id]);
    assert!(inbox.close_if_empty());
    // Closed: a message now is refused, to be sent as a turn of its own.
    assert!(inbox
        .send(SteerMessage::new("later", SteerMode::Inject))
        .is_err());
}

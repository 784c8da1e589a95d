//! Running networks: passes, caching, modifiers, failures, limits, events
//! and sub-networks (with tools: `invoke_tools.rs`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{
    Attachments, ChatModel, ChatNode, ChatRequest, ChatResponse, Events, FnTool, HumanNode,
    InvokeOutcome, Message, ModelError, NetworkError, NetworkEvent, NetworkModifier, NetworkNode,
    NodeRef, Result, RunnableNetwork, ScriptedChatModel, StreamDelta, SystemNode, ToolError,
    ToolOutput, Turn,
};
use parking_lot::Mutex;
use serde_json::json;

pub(crate) fn chat_net(model: &ScriptedChatModel) -> RunnableNetwork {
    RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("scripted")
        .model("scripted", model.clone())
        .build()
}

pub(crate) fn say(net: &RunnableNetwork, text: &str) -> NodeRef {
    let _scope = net.enter();
    HumanNode::new(text)
}

pub(crate) fn echo_tool() -> FnTool {
    FnTool::new(
        "echo",
        "Returns `text`.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        |args, _ctx| async move {
            match args["text"].as_str() {
                Some(t) => Ok(ToolOutput::ok(t)),
                None => Err(ToolError::InvalidArguments {
                    tool: "echo".into(),
                    reason: "`text` must be a string".into(),
                }),
            }
        },
    )
}

/// Records every hook call as a line.
struct Recorder {
    id: String,
    priority: i32,
    log: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    fn new(id: &str, priority: i32, log: &Arc<Mutex<Vec<String>>>) -> Self {
        Self {
            id: id.into(),
            priority,
            log: log.clone(),
        }
    }
    fn push(&self, what: String) {
        self.log.lock().push(format!("{}:{what}", self.id));
    }
}

fn label(node: &NodeRef) -> String {
    match node.downcast::<HumanNode>() {
        Some(h) => format!("human({})", h.text),
        None => node.kind().to_string(),
    }
}

#[async_trait]
impl NetworkModifier for Recorder {
    fn id(&self) -> &str {
        &self.id
    }
    fn priority(&self) -> i32 {
        self.priority
    }
    async fn on_begin_invoke(&self, _net: &RunnableNetwork) -> Result<()> {
        self.push("begin".into());
        Ok(())
    }
    async fn on_pre_invoke(&self, _net: &RunnableNetwork, node: &NodeRef) -> Result<()> {
        self.push(format!("pre {}", label(node)));
        Ok(())
    }
    async fn on_post_invoke(&self, _net: &RunnableNetwork, node: &NodeRef) -> Result<()> {
        self.push(format!("post {}", label(node)));
        Ok(())
    }
    async fn on_end_invoke(&self, _net: &RunnableNetwork, outcome: &InvokeOutcome) -> Result<()> {
        self.push(match outcome {
            InvokeOutcome::Completed => "end ok".into(),
            InvokeOutcome::Failed(_) => "end failed".into(),
            _ => "end held".into(),
        });
        Ok(())
    }
}

#[tokio::test]
async fn a_question_gets_an_answer_from_the_default_node() {
    let model = ScriptedChatModel::new(["Hello!"]);
    let net = chat_net(&model);
    say(&net, "Hi");
    let reply = net.invoke().await.unwrap();
    assert_eq!(reply, Message::ai("Hello!"));
    let nodes = net.nodes();
    assert_eq!(nodes.len(), 2);
    assert_eq!(nodes[1].kind(), "chat");
    assert_eq!(nodes[1].parents(), [nodes[0].id()]);
    assert_eq!(
        nodes[1].metadata_value("added_by"),
        Some(json!("lc-agent/chat-loop"))
    );
    assert_eq!(
        nodes[1].metadata_value("chat_model_name"),
        Some(json!("scripted"))
    );
    assert!(nodes[1].metadata_value("timings").is_some());
}

#[tokio::test]
async fn multi_turn_runs_only_new_nodes() {
    let model = ScriptedChatModel::new(["one", "two", "three"]);
    let net = chat_net(&model);
    say(&net, "first");
    assert_eq!(net.invoke().await.unwrap().text(), "one");
    say(&net, "second");
    assert_eq!(net.invoke().await.unwrap().text(), "two");
    assert_eq!(
        model.calls(),
        2,
        "the first answer was reused, not recomputed"
    );
    // Nothing pending: invoke returns the cached leaf output, no model call.
    assert_eq!(net.invoke().await.unwrap().text(), "two");
    assert_eq!(model.calls(), 2);
    // The second turn saw the whole conversation.
    let texts: Vec<String> = net
        .history()
        .to_vec()
        .iter()
        .map(|m| m.text().to_string())
        .collect();
    assert_eq!(texts, ["first", "one", "second", "two"]);
}

/// A model that reports the conversation it received (`role=text`, joined
/// by `|`).
pub(super) struct Transcript;

#[async_trait]
impl ChatModel for Transcript {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let lines: Vec<String> = request
            .messages()
            .iter()
            .map(|m| format!("{}={}", m.role(), m.text()))
            .collect();
        Ok(ChatResponse::text(lines.join("|")))
    }
}

#[tokio::test]
async fn chat_input_puts_system_first_and_patches_dangling_tool_calls() {
    let net = RunnableNetwork::builder()
        .without_default_modifiers()
        .chat_model("t")
        .model("t", Transcript)
        .build();
    {
        let _s = net.enter();
        HumanNode::new("hi");
        // An AI message with a call nobody executed, then a system note.
        let ai = NodeRef::create(Scripted(Message::ai_with_tools(
            "",
            vec![lc_agent::ToolCall::new("c1", "ls", json!({}))],
        )));
        let _ = ai;
        SystemNode::new("be brief");
        ChatNode::new();
    }
    let reply = net.invoke().await.unwrap();
    assert_eq!(
        reply.text(),
        "system=be brief|human=hi|ai=|tool=Error: tool call was not executed"
    );
}

/// A node kind that outputs a fixed message.
struct Scripted(Message);

#[async_trait]
impl lc_agent::NodeLogic for Scripted {
    fn kind(&self) -> &str {
        "scripted-message"
    }
    async fn invoke(&self, _ctx: lc_agent::NodeContext) -> Result<Message> {
        Ok(self.0.clone())
    }
}

#[tokio::test]
async fn hooks_run_in_priority_order_around_each_node_in_topological_order() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let net = RunnableNetwork::builder()
        .without_default_modifiers()
        .modifier(Recorder::new("late", 10, &log))
        .modifier(Recorder::new("early", -5, &log))
        .build();
    {
        let _s = net.enter();
        let a = HumanNode::new("a");
        let b = HumanNode::new("b");
        let _ = None >> b.clone();
        let _ = b >> a; // a now runs after b although it was added first
    }
    net.invoke().await.unwrap();
    assert_eq!(
        *log.lock(),
        [
            "early:begin",
            "late:begin",
            "early:pre human(b)",
            "late:pre human(b)",
            "early:post human(b)",
            "late:post human(b)",
            "early:pre human(a)",
            "late:pre human(a)",
            "early:post human(a)",
            "late:post human(a)",
            "early:end ok",
            "late:end ok",
        ]
    );
}

/// Adds a human follow-up after the first human node it sees run.
struct FollowUp {
    done: AtomicUsize,
}

#[async_trait]
impl NetworkModifier for FollowUp {
    fn id(&self) -> &str {
        "follow-up"
    }
    async fn on_post_invoke(&self, net: &RunnableNetwork, node: &NodeRef) -> Result<()> {
        if node.downcast::<HumanNode>().is_some() && self.done.fetch_add(1, Ordering::SeqCst) == 0 {
            net.add(
                HumanNode {
                    text: "follow-up".into(),
                    parts: Vec::new(),
                },
                &[node.id()],
            )?;
        }
        Ok(())
    }
}

#[tokio::test]
async fn nodes_added_by_a_modifier_run_in_the_next_pass_with_added_by() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let net = RunnableNetwork::builder()
        .without_default_modifiers()
        .modifier(FollowUp {
            done: AtomicUsize::new(0),
        })
        .modifier(Recorder::new("rec", 100, &log))
        .build();
    say(&net, "start");
    net.invoke().await.unwrap();
    let nodes = net.nodes();
    assert_eq!(nodes.len(), 2);
    assert!(nodes[1].is_invoked());
    assert_eq!(
        nodes[1].metadata_value("added_by"),
        Some(json!("follow-up"))
    );
    assert_eq!(nodes[0].metadata_value("added_by"), None);
    assert_eq!(
        *log.lock(),
        [
            "rec:begin",
            "rec:pre human(start)",
            "rec:post human(start)",
            "rec:pre human(follow-up)",
            "rec:post human(follow-up)",
            "rec:end ok",
        ]
    );
}

#[test]
fn duplicate_modifier_ids_are_errors_never_replacements() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let net = RunnableNetwork::new();
    net.add_modifier(Recorder::new("x", 0, &log)).unwrap();
    let err = net.add_modifier(Recorder::new("x", 1, &log)).unwrap_err();
    assert!(matches!(err, NetworkError::DuplicateModifier(ref id) if id == "x"));
    assert_eq!(net.modifiers().iter().filter(|m| m.id() == "x").count(), 1);
    assert_eq!(
        net.modifiers()
            .iter()
            .find(|m| m.id() == "x")
            .unwrap()
            .priority(),
        0
    );
    let built = RunnableNetwork::builder()
        .modifier(Recorder::new("y", 0, &log))
        .modifier(Recorder::new("y", 0, &log))
        .try_build();
    assert!(matches!(built, Err(NetworkError::DuplicateModifier(_))));
    let err = net.add_modifier(lc_agent::ToolLoop).unwrap_err();
    assert!(matches!(err, NetworkError::DuplicateModifier(_)));
}

/// Fails until told otherwise.
struct Flaky {
    fail: Arc<std::sync::atomic::AtomicBool>,
    calls: Arc<AtomicUsize>,
}

#[async_trait]
impl ChatModel for Flaky {
    async fn complete(&self, _request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.fail.load(Ordering::SeqCst) {
            Err(ModelError::Other("model is down".into()))
        } else {
            Ok(ChatResponse::text("recovered"))
        }
    }
}

#[tokio::test]
async fn a_failing_node_records_the_error_stays_pending_and_end_hooks_run() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let fail = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let calls = Arc::new(AtomicUsize::new(0));
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("flaky")
        .model(
            "flaky",
            Flaky {
                fail: fail.clone(),
                calls: calls.clone(),
            },
        )
        .modifier(Recorder::new("rec", 0, &log))
        .build();
    let human = say(&net, "hello");
    let err = net.invoke().await.unwrap_err();
    let NetworkError::NodeFailed { kind, message, .. } = &err else {
        panic!("unexpected {err}");
    };
    assert_eq!(kind, "chat");
    assert!(message.contains("model is down"), "{message}");
    assert!(log.lock().contains(&"rec:end failed".to_string()));
    let chat = net.children(human.id()).remove(0);
    assert!(!chat.is_invoked());
    assert!(human.is_invoked(), "work done before the failure is kept");
    assert!(chat
        .metadata_value("error")
        .unwrap()
        .as_str()
        .unwrap()
        .contains("model is down"));
    // Still saveable, and a later invoke retries the failed node only.
    let saved = net.to_json().unwrap();
    assert!(saved.contains("model is down"));
    fail.store(false, Ordering::SeqCst);
    assert_eq!(net.invoke().await.unwrap().text(), "recovered");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(chat.metadata_value("error"), None);
    assert_eq!(net.len(), 2, "no second chat node was added");
}

#[tokio::test]
async fn the_step_limit_stops_a_runaway_loop_and_leaves_a_valid_graph() {
    let model =
        ScriptedChatModel::new([Turn::call("c", "echo", json!({"text": "again"}))]).cycled();
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("scripted")
        .model("scripted", model.clone())
        .step_limit(5)
        .build();
    net.add_tool(echo_tool());
    say(&net, "loop forever");
    let err = net.invoke().await.unwrap_err();
    assert!(matches!(err, NetworkError::StepLimit { limit: 5 }), "{err}");
    assert_eq!(model.calls(), 5);
    // Saveable and loadable; the pending sixth turn is still there.
    let saved = net.to_json().unwrap();
    let loaded = RunnableNetwork::from_json(&saved).unwrap();
    assert_eq!(loaded.len(), net.len());
    assert_eq!(loaded.pending().len(), 1);
    assert_eq!(loaded.pending()[0].kind(), "chat");
}

#[tokio::test]
async fn events_report_added_invoked_and_streamed_text_with_the_node_id() {
    let model = ScriptedChatModel::new(["streamed answer here"]);
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("scripted")
        .model("scripted", model)
        .streaming(true)
        .build();
    let mut events = net.subscribe();
    let human = say(&net, "hi");
    net.invoke().await.unwrap();
    let chat = net.children(human.id()).remove(0);
    let mut got: Vec<NetworkEvent> = std::iter::from_fn(|| events.try_recv().ok()).collect();
    // The run is framed by its start and finish.
    let finished = got.pop();
    assert!(
        matches!(
            finished,
            Some(NetworkEvent::InvokeFinished {
                outcome: InvokeOutcome::Completed,
                ..
            })
        ),
        "{finished:?}"
    );
    let started = got.iter().position(|e| *e == NetworkEvent::InvokeStarted);
    assert_eq!(started, Some(1), "after the human node was added");
    got.remove(1);
    let text = |t: &str| NetworkEvent::Delta {
        node_id: chat.id(),
        delta: StreamDelta::Text(t.into()),
    };
    assert_eq!(
        got,
        [
            NetworkEvent::NodeAdded {
                node_id: human.id()
            },
            NetworkEvent::NodeAdded { node_id: chat.id() },
            NetworkEvent::NodeInvoked {
                node_id: human.id()
            },
            text("streamed "),
            text("answer "),
            text("here"),
            NetworkEvent::NodeInvoked { node_id: chat.id() },
        ]
    );
}

#[tokio::test]
async fn a_sub_network_sees_the_outer_conversation_and_uses_outer_models() {
    let model = ScriptedChatModel::new(["outer answer"]);
    let net = chat_net(&model);
    let inner = RunnableNetwork::builder().name("inner").build();
    {
        let _s = inner.enter();
        SystemNode::new("You are the inner agent.");
        NodeRef::create(ChatNode {
            chat_model_name: Some("transcript".into()),
            ..ChatNode::default()
        });
    }
    net.register_model("transcript", Transcript);
    {
        let _s = net.enter();
        HumanNode::new("question");
        NetworkNode::new(inner.clone());
        HumanNode::new("and then?");
    }
    let reply = net.invoke().await.unwrap();
    assert_eq!(reply.text(), "outer answer");
    let nodes = net.nodes();
    assert_eq!(
        nodes[1].output().unwrap().text(),
        "system=You are the inner agent.|human=question"
    );
    assert_eq!(model.calls(), 1);
    // Inner nodes were invoked and cached; the network node is too.
    assert!(inner.nodes().iter().all(NodeRef::is_invoked));
    let saved = net.to_json().unwrap();
    let loaded = RunnableNetwork::from_json(&saved).unwrap();
    let node = &loaded.nodes()[1];
    let sub = node.downcast::<NetworkNode>().expect("a network node");
    assert_eq!(sub.network().name(), "inner");
    assert_eq!(sub.network().len(), 2);
    assert_eq!(loaded.to_json().unwrap(), saved);
}

#[tokio::test]
async fn an_unregistered_model_is_a_clear_error() {
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("missing")
        .build();
    say(&net, "hi");
    let err = net.invoke().await.unwrap_err().to_string();
    assert!(
        err.contains("no chat model named `missing` is registered"),
        "{err}"
    );
}

/// A node kind whose run fails with an I/O error.
pub(crate) struct ReadsAMissingFile;

#[async_trait]
impl lc_agent::NodeLogic for ReadsAMissingFile {
    fn kind(&self) -> &str {
        "reads-a-missing-file"
    }

    async fn invoke(&self, _ctx: lc_agent::NodeContext) -> Result<Message> {
        std::fs::read_to_string("/definitely/not/here.txt")?;
        Ok(Message::human("unreachable"))
    }
}

#[tokio::test]
async fn failures_keep_their_cause_for_callers_to_match() {
    use std::error::Error as _;

    let net = RunnableNetwork::new();
    net.add(ReadsAMissingFile, &[]).unwrap();
    let err = net.invoke().await.unwrap_err();
    let NetworkError::NodeFailed { source, .. } = &err else {
        panic!("unexpected {err}");
    };
    let Some(NetworkError::Io(io)) = source.downcast_ref::<NetworkError>() else {
        panic!("the cause is the node's own error, got {source:?}");
    };
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    // The same chain through `std::error::Error::source`, down to the
    // I/O error itself.
    let cause = err.source().and_then(|e| e.downcast_ref::<NetworkError>());
    assert!(matches!(cause, Some(NetworkError::Io(_))), "{cause:?}");
    let root = cause.and_then(|e| e.source());
    assert!(
        root.and_then(|e| e.downcast_ref::<std::io::Error>())
            .is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound),
        "{root:?}"
    );

    // A modifier's failure keeps its cause too.
    struct Refuses;
    #[async_trait]
    impl NetworkModifier for Refuses {
        fn id(&self) -> &str {
            "refuses"
        }
        async fn on_begin_invoke(&self, _network: &RunnableNetwork) -> Result<()> {
            Err(NetworkError::UnknownModel("nope".into()))
        }
    }
    let net = RunnableNetwork::builder().modifier(Refuses).build();
    let err = net.invoke().await.unwrap_err();
    let NetworkError::Modifier {
        modifier, source, ..
    } = &err
    else {
        panic!("unexpected {err}");
    };
    assert_eq!(modifier, "refuses");
    assert!(matches!(
        source.downcast_ref::<NetworkError>(),
        Some(NetworkError::UnknownModel(name)) if name == "nope"
    ));
}

#[tokio::test]
async fn held_nodes_wait_with_everything_below_them_and_run_once_released() {
    let model = ScriptedChatModel::new([
        Turn::tool_calls([
            lc_agent::ToolCall::new("c1", "shout", json!({"text": "held"})),
            lc_agent::ToolCall::new("c2", "shout", json!({"text": "free"})),
        ]),
        Turn::text("done"),
    ]);
    let net = chat_net(&model);
    net.add_tool(FnTool::new(
        "shout",
        "Upper-cases `text`.",
        json!({"type": "object"}),
        |args, _| async move {
            Ok(ToolOutput::ok(
                args["text"].as_str().unwrap_or("").to_uppercase(),
            ))
        },
    ));
    /// Holds every call of `shout` with `held` in it, once.
    struct HoldFirst;
    #[async_trait]
    impl NetworkModifier for HoldFirst {
        fn id(&self) -> &str {
            "hold-first"
        }
        async fn on_post_invoke(&self, net: &RunnableNetwork, node: &NodeRef) -> Result<()> {
            for child in net.children(node.id()) {
                if let Some(tool) = child.downcast::<lc_agent::ToolNode>()
                    && tool.tool_call.arguments.contains("held")
                {
                    child.hold("approval");
                }
            }
            Ok(())
        }
    }
    net.add_modifier(HoldFirst).unwrap();
    let mut events = net.subscribe();
    say(&net, "shout both");
    // The free call ran, the held one and the next chat turn wait; not an error.
    let reply = net.invoke().await.unwrap();
    assert_eq!(reply.text(), "FREE");
    let held = net.held();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].held().as_deref(), Some("approval"));
    assert_eq!(model.calls(), 1);
    let got: Vec<NetworkEvent> = std::iter::from_fn(|| events.try_recv().ok()).collect();
    assert!(matches!(
        got.last(),
        Some(NetworkEvent::InvokeFinished { outcome: InvokeOutcome::Held(ids), .. }) if *ids == [held[0].id()]
    ));

    // The hold is saved; a loaded copy still waits, and runs once released.
    let loaded = RunnableNetwork::from_json(&net.to_json().unwrap()).unwrap();
    loaded.register_model("scripted", model.clone());
    loaded.add_tool(FnTool::new(
        "shout",
        "Upper-cases `text`.",
        json!({"type": "object"}),
        |args, _| async move {
            Ok(ToolOutput::ok(
                args["text"].as_str().unwrap_or("").to_uppercase(),
            ))
        },
    ));
    assert_eq!(loaded.held().len(), 1);
    loaded.invoke().await.unwrap();
    assert_eq!(loaded.held().len(), 1, "nothing runs while it is held");
    assert_eq!(model.calls(), 1);
    loaded.held()[0].release();
    assert_eq!(loaded.invoke().await.unwrap().text(), "done");
    assert!(loaded.held().is_empty());
    assert_eq!(model.calls(), 2);

    // A held node answered by hand never runs.
    let net2 = RunnableNetwork::new();
    let node = net2.add(ReadsAMissingFile, &[]).unwrap();
    node.hold("approval");
    node.set_output(Message::human("answered by a human"));
    assert_eq!(net2.invoke().await.unwrap().text(), "answered by a human");
    assert!(net2.pending().is_empty());
}

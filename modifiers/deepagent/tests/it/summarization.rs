//! Summarization end to end, with scripted models that record what they
//! were sent: triggers by tokens, by turns and by the context-window
//! fraction; the requests before and after a summary (snapshots); the
//! graph keeps every node; save -> load -> continue; the history file; a
//! failing summary model loses nothing and is retried; a summary on
//! demand (`compact`, a chat's `/compact`).

use std::collections::VecDeque;
use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{
    Attachments, ChatModel, ChatRequest, ChatResponse, Events, FnTool, HumanNode, Message,
    ModelError, ModelRoutes, NetworkEvent, RunnableNetwork, SummaryNode, SystemNode, ToolCall,
    ToolOutput, Turn,
};
use lc_agent_deepagent::{
    compact, CompactError, ContextWindows, SummarizationConfig, SummarizationModifier, SUMMARY_STEP,
};
use lc_agent_filesystem::{run_tool, StateBackend};
use parking_lot::Mutex;
use serde_json::json;

/// A scripted model that records every request it gets, as lines.
#[derive(Clone, Default)]
struct Recorder {
    turns: Arc<Mutex<VecDeque<Result<Turn, String>>>>,
    requests: Arc<Mutex<Vec<Vec<String>>>>,
}

impl Recorder {
    fn new(turns: impl IntoIterator<Item = Result<Turn, String>>) -> Self {
        Self {
            turns: Arc::new(Mutex::new(turns.into_iter().collect())),
            requests: Arc::default(),
        }
    }

    fn texts<'a>(turns: impl IntoIterator<Item = &'a str>) -> Self {
        Self::new(turns.into_iter().map(|t| Ok(Turn::text(t))))
    }

    fn requests(&self) -> Vec<Vec<String>> {
        self.requests.lock().clone()
    }
}

fn line(m: &Message) -> String {
    match m {
        Message::Ai {
            content,
            tool_calls,
        } if !tool_calls.is_empty() => {
            let calls: Vec<String> = tool_calls
                .iter()
                .map(|c| format!("{}#{}", c.name, c.id))
                .collect();
            format!("ai: {content} [calls {}]", calls.join(", "))
        }
        Message::Tool {
            tool_call_id,
            content,
            ..
        } => {
            let short: String = content.chars().take(40).collect();
            format!("tool#{tool_call_id}: {short} ({} chars)", content.len())
        }
        other => format!("{}: {}", other.role(), other.text()),
    }
}

#[async_trait]
impl ChatModel for Recorder {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.requests
            .lock()
            .push(request.messages().iter().map(|m| line(m)).collect());
        match self.turns.lock().pop_front() {
            Some(Ok(turn)) => Ok(ChatResponse {
                content: turn.content,
                tool_calls: turn.tool_calls,
                ..ChatResponse::default()
            }),
            Some(Err(message)) => Err(ModelError::InvalidResponse {
                message,
                source: None,
            }),
            None => Err(ModelError::ScriptExhausted {
                name: "recorder".into(),
                played: 0,
            }),
        }
    }
}

fn agent(main: &Recorder, summarizer: &Recorder, config: SummarizationConfig) -> RunnableNetwork {
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("main")
        .model("main", main.clone())
        .model("summarizer", summarizer.clone())
        .tool(FnTool::new(
            "lookup",
            "Looks a topic up.",
            json!({"type": "object", "properties": {"topic": {"type": "string"}}}),
            |args, _| async move {
                let topic = args["topic"].as_str().unwrap_or("").to_string();
                Ok(ToolOutput::ok(format!("{topic}: {}", "fact ".repeat(400))))
            },
        ))
        .build();
    net.set_model_route(SUMMARY_STEP, "summarizer");
    attach(&net, summarizer, config);
    {
        let _scope = net.enter();
        SystemNode::new("You are a research assistant.");
    }
    net
}

fn attach(net: &RunnableNetwork, summarizer: &Recorder, config: SummarizationConfig) {
    net.register_model("summarizer", summarizer.clone());
    net.add_modifier(SummarizationModifier::new(config))
        .unwrap();
}

trait Approximate {
    fn approximate(self, on: bool) -> Self;
}

impl Approximate for SummarizationConfig {
    fn approximate(mut self, on: bool) -> Self {
        self.approximate_tokens = on;
        self
    }
}

async fn say(net: &RunnableNetwork, text: &str) -> String {
    {
        let _scope = net.enter();
        HumanNode::new(text);
    }
    net.invoke().await.unwrap().text().to_string()
}

fn kinds(net: &RunnableNetwork, kind: &str) -> usize {
    net.nodes().iter().filter(|n| n.kind() == kind).count()
}

fn snapshot(name: &str, value: &serde_json::Value) {
    insta::with_settings!({snapshot_path => "../../../../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_json_snapshot!(name, value);
    });
}

fn history_file(net: &RunnableNetwork) -> String {
    let path = format!("/conversation_history/{}.md", net.id());
    net.files()
        .get(&path)
        .unwrap_or_else(|| panic!("no {path}"))
        .text()
}

#[tokio::test]
async fn token_trigger_summarizes_without_splitting_tool_calls() {
    let main = Recorder::new([
        Ok(Turn::text("Paris.")),
        Ok(Turn::text("About 2.1 million.")),
        Ok(Turn::tool_calls([
            ToolCall::new("c1", "lookup", json!({"topic": "louvre"})),
            ToolCall::new("c2", "lookup", json!({"topic": "orsay"})),
        ])),
        Ok(Turn::text("Both museums are in Paris.")),
        Ok(Turn::text("You asked about Paris.")),
    ]);
    let summarizer = Recorder::texts([
        "The user asked for France's capital (Paris) and its population (2.1 million).",
        "The user asked about Paris, its population and two museums (looked up).",
    ]);
    let config = SummarizationConfig {
        trigger_fraction: None,
        every_human_turns: None,
        trigger_tokens: Some(400),
        keep_messages: 2,
        ..SummarizationConfig::default()
    }
    .approximate(true);
    let net = agent(&main, &summarizer, config);
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    net.on_event(move |e| {
        if let NetworkEvent::SummaryWritten {
            kept, summarized, ..
        } = e
        {
            seen.lock().push((*kept, *summarized));
        }
    });

    say(&net, "What is the capital of France?").await;
    say(&net, "How many people live there?").await;
    assert_eq!(kinds(&net, SummaryNode::KIND), 0, "under the limit so far");
    say(&net, "Look up the Louvre and the Orsay.").await;
    // The tool results pushed the request over 400 tokens: the chat node
    // after them got a summary; the AI message and both results are kept.
    assert_eq!(kinds(&net, SummaryNode::KIND), 1);
    assert_eq!(say(&net, "What did I ask?").await, "You asked about Paris.");
    // The kept tool results were still over the limit: a second summary
    // rolled the first one forward.
    assert_eq!(kinds(&net, SummaryNode::KIND), 2);
    assert_eq!(*events.lock(), [(3, 6), (2, 10)]);

    snapshot("summarization_requests_tokens", &json!(main.requests()));
    let asks = summarizer.requests();
    assert!(
        asks[1][1].contains("The summary so far:\n\nThe user asked for France's capital"),
        "{:?}",
        asks[1]
    );
    assert!(
        !asks[1][1].contains("Summary of the earlier conversation"),
        "the heading is not repeated"
    );

    // Nothing was deleted: every node and every message is still there.
    assert_eq!(kinds(&net, "human"), 4);
    assert_eq!(kinds(&net, "chat"), 5);
    assert_eq!(kinds(&net, "tool"), 2);
    let all: Vec<String> = net.history().to_vec().iter().map(|m| line(m)).collect();
    assert!(all.contains(&"human: What is the capital of France?".to_string()));
    assert_eq!(all.len(), 1 + 4 + 5 + 2 + 2);
    let summary = net
        .nodes()
        .into_iter()
        .find(|n| n.kind() == SummaryNode::KIND)
        .unwrap();
    assert_eq!(summary.metadata_value("trigger"), Some(json!("tokens")));
    assert_eq!(
        summary.metadata_value("chat_model_name"),
        Some(json!("summarizer"))
    );
    assert_eq!(
        summary.metadata_value("added_by"),
        Some(json!("summarization"))
    );

    // The older history went to the file, appended in order.
    let file = history_file(&net);
    let first = file.find("What is the capital of France?").unwrap();
    let louvre = file.find("louvre: fact").unwrap();
    assert!(first < louvre, "{file}");
    assert!(
        file.contains("## Messages 2 to 6") && file.contains("## Messages 7 to 9"),
        "{file}"
    );
    assert!(
        !file.contains("What did I ask?"),
        "recent turns stay out of it"
    );
}

#[tokio::test]
async fn turn_trigger_survives_save_load_and_continue() {
    let main = Recorder::texts(["a1", "a2", "a3", "a4"]);
    let summarizer = Recorder::texts(["S1: greetings and two questions."]);
    let config = SummarizationConfig {
        trigger_fraction: None,
        every_human_turns: Some(3),
        keep_messages: 2,
        ..SummarizationConfig::default()
    }
    .approximate(true);
    let net = agent(&main, &summarizer, config.clone());
    for text in ["q1", "q2", "q3", "q4"] {
        say(&net, text).await;
    }
    assert_eq!(kinds(&net, SummaryNode::KIND), 1);
    let before_save = main.requests().last().unwrap().clone();
    assert_eq!(
        before_save,
        [
            "system: You are a research assistant.",
            "system: Summary of the earlier conversation:\n\nS1: greetings and two questions.",
            "ai: a2",
            "human: q3",
            "ai: a3",
            "human: q4",
        ]
    );

    // Save, load in a "new process", re-attach, continue.
    let saved = net.to_json().unwrap();
    let loaded = RunnableNetwork::from_json(&saved).unwrap();
    assert_eq!(
        loaded.to_json().unwrap(),
        saved,
        "summary nodes round-trip exactly"
    );
    let main2 = Recorder::texts(["a5", "a6"]);
    let summarizer2 = Recorder::texts(["S2: everything up to q4."]);
    loaded.register_model("main", main2.clone());
    loaded.set_chat_model_name(Some("main".into()));
    attach(&loaded, &summarizer2, config);
    say(&loaded, "q5").await;
    assert_eq!(
        main2.requests()[0],
        [
            "system: You are a research assistant.",
            "system: Summary of the earlier conversation:\n\nS1: greetings and two questions.",
            "ai: a2",
            "human: q3",
            "ai: a3",
            "human: q4",
            "ai: a4",
            "human: q5",
        ],
        "the loaded session sends the same summary and recent turns"
    );
    say(&loaded, "q6").await; // q4, q5, q6: the next summary
    assert_eq!(kinds(&loaded, SummaryNode::KIND), 2);
    snapshot("summarization_requests_turns", &json!(main2.requests()));
    assert_eq!(
        summarizer2.requests()[0][1],
        format!(
            "human: The summary so far:\n\nS1: greetings and two questions.\n\nThe conversation that followed:\n\n\
             **ai**: a2\n\n**human**: q3\n\n**ai**: a3\n\n**human**: q4\n\n**ai**: a4\n\n**human**: q5\n\n"
        )
    );

    // The history file holds the old turns and the model reads it.
    let path = format!("/conversation_history/{}.md", loaded.id());
    let read = run_tool(
        &StateBackend::new(loaded.clone()),
        "read_file",
        &json!({"file_path": path}),
    )
    .await
    .unwrap();
    for old in [
        "**human**: q1",
        "**ai**: a1",
        "**human**: q2",
        "**human**: q5",
    ] {
        assert!(read.content.contains(old), "{old} in\n{}", read.content);
    }
    assert!(!read.content.contains("q6"));
    assert_eq!(
        read.content.matches("**human**: q3").count(),
        1,
        "each message is written once"
    );
}

#[tokio::test]
async fn a_failing_summary_loses_nothing_and_is_retried() {
    let main = Recorder::texts(["a1", "a2", "a3"]);
    let summarizer = Recorder::new([
        Err("the summary server is down".to_string()),
        Ok(Turn::text("S: q1 and q2 were asked.")),
    ]);
    let config = SummarizationConfig {
        trigger_fraction: None,
        every_human_turns: Some(2),
        keep_messages: 1,
        ..SummarizationConfig::default()
    }
    .approximate(true);
    let net = agent(&main, &summarizer, config);
    say(&net, "q1").await;
    let saved_before = net.nodes().len();
    assert_eq!(
        say(&net, "q2").await,
        "a2",
        "the turn goes on without a summary"
    );
    assert_eq!(kinds(&net, SummaryNode::KIND), 0);
    assert_eq!(
        net.nodes().len(),
        saved_before + 2,
        "only the turn's own nodes"
    );
    assert!(net.files().is_empty(), "no history file without a summary");
    assert_eq!(
        main.requests()[1],
        [
            "system: You are a research assistant.",
            "human: q1",
            "ai: a1",
            "human: q2"
        ],
        "the full conversation was sent"
    );

    assert_eq!(say(&net, "q3").await, "a3");
    assert_eq!(
        kinds(&net, SummaryNode::KIND),
        1,
        "retried at the next trigger"
    );
    assert_eq!(summarizer.requests().len(), 2);
    assert_eq!(
        main.requests()[2],
        [
            "system: You are a research assistant.",
            "system: Summary of the earlier conversation:\n\nS: q1 and q2 were asked.",
            "human: q3",
        ]
    );
    let file = history_file(&net);
    assert!(
        file.contains("**human**: q1") && file.contains("**ai**: a2"),
        "{file}"
    );
}

#[cfg(feature = "tokens")]
#[tokio::test]
async fn fraction_of_the_context_window_triggers_with_the_real_tokenizer() {
    let main = Recorder::texts(["short answer", "another short answer", "ok"]);
    let summarizer = Recorder::texts(["S: a long question was asked."]);
    // 0.85 x 200 = 170 tokens
    let config = SummarizationConfig {
        every_human_turns: None,
        keep_messages: 2,
        context_windows: ContextWindows::new().with("main", 200),
        ..SummarizationConfig::default()
    };
    let net = agent(&main, &summarizer, config);
    say(&net, "hello").await;
    say(&net, &"word ".repeat(80)).await;
    assert_eq!(kinds(&net, SummaryNode::KIND), 0, "still under 170 tokens");
    say(&net, &format!("and now? {}", "more ".repeat(60))).await;
    let summary = net
        .nodes()
        .into_iter()
        .find(|n| n.kind() == SummaryNode::KIND)
        .expect("over 85% of the window: summarized");
    assert_eq!(summary.metadata_value("trigger"), Some(json!("fraction")));
    let tokens = summary
        .metadata_value("tokens_before")
        .unwrap()
        .as_u64()
        .unwrap();
    assert!((170..300).contains(&tokens), "{tokens}");
}

#[tokio::test]
async fn a_deep_agent_on_a_directory_keeps_the_history_file_in_the_session() {
    use lc_agent_deepagent::DeepAgent;
    use lc_agent_filesystem::FilesystemBackend;

    let dir = tempfile::tempdir().unwrap();
    let main = Recorder::new([
        Ok(Turn::text("a1")),
        Ok(Turn::text("a2")),
        Ok(Turn::text("a3")),
    ]);
    let summarizer = Recorder::texts(["S: q1 and q2."]);
    let net = DeepAgent::builder()
        .model(main.clone())
        .model_named("small", summarizer.clone())
        .route_model(SUMMARY_STEP, "small")
        .backend(FilesystemBackend::new(dir.path()).unwrap())
        .summarization(
            SummarizationConfig {
                every_human_turns: Some(3),
                keep_messages: 1,
                ..SummarizationConfig::default()
            }
            .approximate(true),
        )
        .build()
        .unwrap();
    for text in ["q1", "q2", "q3"] {
        say(&net, text).await;
    }
    assert_eq!(kinds(&net, SummaryNode::KIND), 1);
    assert_eq!(summarizer.requests().len(), 1, "the `summary` step's model");
    // The user's directory holds nothing the user did not ask for.
    let on_disk: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(on_disk.is_empty(), "{on_disk:?}");
    let text = history_file(&net);
    assert!(
        text.contains("**human**: q1") && text.contains("**ai**: a2"),
        "{text}"
    );
    assert!(!text.contains("q3"), "{text}");
}

#[tokio::test]
async fn compact_summarizes_now_and_the_next_request_sends_the_summary() {
    let main = Recorder::texts(["a1 ".repeat(200).as_str(), "a2", "a3"]);
    let summarizer = Recorder::new([
        Ok(Turn::text("S: the user asked q1 and got a long answer.")),
        Ok(Turn::text("")),
    ]);
    // No automatic trigger: only the call writes a summary.
    let config = SummarizationConfig {
        every_human_turns: None,
        trigger_fraction: None,
        ..SummarizationConfig::default()
    }
    .approximate(true);
    let net = agent(&main, &summarizer, config);
    let seen = Arc::new(Mutex::new(Vec::new()));
    {
        let seen = seen.clone();
        net.on_event(move |e: &NetworkEvent| {
            if let NetworkEvent::SummaryWritten { kept, .. } = e {
                seen.lock().push(*kept);
            }
        });
    }
    say(&net, &"q1 ".repeat(100)).await;
    let leaf = net.current_leaf().unwrap();

    let done = compact(&net).await.unwrap();
    assert_eq!(*seen.lock(), [0], "one SummaryWritten, nothing kept");
    assert_eq!(
        summarizer.requests().len(),
        1,
        "exactly one summary request"
    );
    assert_eq!(main.requests().len(), 1, "the main model is not asked");
    assert_eq!((done.summarized, done.kept), (2, 0));
    assert_eq!(done.model, "summarizer");
    assert!(
        done.tokens_after * 4 < done.tokens_before,
        "{} -> {}",
        done.tokens_before,
        done.tokens_after
    );
    // A node of the summary kind after the leaf, nothing deleted.
    assert_eq!(done.node.kind(), SummaryNode::KIND);
    assert_eq!(done.node.parents(), [leaf.id()]);
    assert_eq!(done.node.metadata_value("trigger"), Some(json!("asked")));
    assert_eq!(net.nodes().len(), 4, "system, human, chat, summary");
    assert!(history_file(&net).contains("**human**: q1"));

    // The next request: system, summary, the new message — not q1/a1.
    say(&net, "q2").await;
    let next = main.requests()[1].clone();
    assert_eq!(
        next,
        [
            "system: You are a research assistant.".to_string(),
            "system: Summary of the earlier conversation:\n\nS: the user asked q1 and got a long answer.".to_string(),
            "human: q2".to_string(),
        ]
    );

    // The rolled-forward summary sees the previous one; a failing summary
    // changes nothing.
    let nodes = net.nodes().len();
    let err = compact(&net).await.unwrap_err();
    assert!(matches!(err, CompactError::Summary(_)), "{err}");
    assert_eq!(net.nodes().len(), nodes, "nothing added");
    assert!(summarizer.requests()[1][1].contains("The summary so far"));

    // Saved and loaded, the summary is still what requests send.
    let loaded = RunnableNetwork::from_json(&net.to_json().unwrap()).unwrap();
    assert_eq!(
        loaded.history().latest_summary().unwrap().message.text(),
        done.node.output().unwrap().text()
    );
}

#[tokio::test]
async fn compact_refuses_when_there_is_nothing_or_a_turn_is_pending() {
    let main = Recorder::texts(["a1"]);
    let summarizer = Recorder::texts(["S"]);
    let net = agent(&main, &summarizer, SummarizationConfig::default());
    assert!(matches!(
        compact(&net).await.unwrap_err(),
        CompactError::Nothing
    ));
    say(&net, "q1").await;
    {
        let _scope = net.enter();
        HumanNode::new("q2");
    }
    assert!(matches!(
        compact(&net).await.unwrap_err(),
        CompactError::Pending
    ));
    assert!(summarizer.requests().is_empty());
}

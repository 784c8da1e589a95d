//! Time travel in the graph: `fork_at`, `branch_at`, `edit_at`,
//! `rewind_to`; nothing above an edit runs again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{
    Attachments, ChatModel, ChatRequest, ChatResponse, FileData, FnTool, HumanNode, ModelError,
    NetworkError, NodeRef, RunnableNetwork, ScriptedChatModel, SnapshotsExt, TimeTravelExt,
    ToolOutput, Turn,
};
use serde_json::json;

/// A model that answers `answer <n>: <last message>` and counts its calls.
#[derive(Clone, Default)]
struct Counting(Arc<AtomicUsize>);

#[async_trait]
impl ChatModel for Counting {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
        let last = request
            .messages()
            .last()
            .map(|m| m.text().to_string())
            .unwrap_or_default();
        Ok(ChatResponse::text(format!("answer {n}: {last}")))
    }
}

fn counting_net(model: &Counting) -> RunnableNetwork {
    RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("m")
        .model("m", model.clone())
        .build()
}

async fn turn(net: &RunnableNetwork, text: &str) -> NodeRef {
    let human = {
        let _scope = net.enter();
        HumanNode::new(text)
    };
    net.invoke().await.unwrap();
    human
}

fn texts(net: &RunnableNetwork) -> Vec<String> {
    net.history()
        .to_vec()
        .iter()
        .map(|m| m.text().to_string())
        .collect()
}

#[tokio::test]
async fn a_fork_holds_the_ancestors_with_their_ids_outputs_and_metadata() {
    let model = Counting::default();
    let net = counting_net(&model);
    turn(&net, "one").await;
    let second = turn(&net, "two").await;
    turn(&net, "three").await;
    let answer = net.children(second.id())[0].clone();

    let fork = net.fork_at(answer.id()).unwrap();
    assert_ne!(fork.id(), net.id());
    assert_eq!(fork.len(), 4);
    assert_eq!(
        fork.metadata_value("forked_from"),
        Some(json!({"session": net.id().to_string(), "node": answer.id().to_string()}))
    );
    for node in fork.nodes() {
        let original = net.node(node.id()).unwrap();
        assert_eq!(node.output(), original.output());
        assert_eq!(node.metadata(), original.metadata());
        assert_eq!(node.parents(), original.parents());
    }
    assert_eq!(
        texts(&fork),
        ["one", "answer 1: one", "two", "answer 2: two"]
    );
    // The original is untouched, and the fork goes on on its own.
    assert_eq!(net.len(), 6);
    fork.register_model("m", model.clone());
    turn(&fork, "other").await;
    assert_eq!(model.0.load(Ordering::SeqCst), 4, "only the new turn ran");
    assert_eq!(net.len(), 6);
    // It saves and loads like any network.
    let back = RunnableNetwork::from_json(&fork.to_json().unwrap()).unwrap();
    assert_eq!(back.to_json().unwrap(), fork.to_json().unwrap());
}

#[tokio::test]
async fn a_fork_of_an_unknown_node_is_an_error() {
    let net = RunnableNetwork::new();
    let id = uuid::Uuid::new_v4();
    assert!(matches!(net.fork_at(id), Err(NetworkError::UnknownNode(n)) if n == id));
}

#[tokio::test]
async fn a_fork_has_the_in_graph_files_as_they_were_at_its_node() {
    // What the file tools record (lc-agent-filesystem's snapshots): the
    // change on the tool node, the content by hash in the session.
    let model = ScriptedChatModel::new([
        Turn::call("c1", "put", json!({"text": "v2"})),
        Turn::text("written"),
    ]);
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("m")
        .model("m", model)
        .build();
    net.with_files_mut(|f| {
        f.insert("/a.md".into(), FileData::new("v1"));
    });
    net.keep_file_snapshot("h1", "v1", usize::MAX);
    net.keep_file_snapshot("h2", "v2", usize::MAX);
    net.add_tool(FnTool::new(
        "put",
        "Writes /a.md and /new.md.",
        json!({"type": "object"}),
        |_args, ctx| async move {
            ctx.network.with_files_mut(|f| {
                f.insert("/a.md".into(), FileData::new("v2"));
                f.insert("/new.md".into(), FileData::new("v2"));
            });
            if let Some(node) = ctx.network.node(ctx.node_id) {
                node.set_metadata(
                    "file_changes",
                    json!([
                        {"path": "/a.md", "before": "h1", "after": "h2", "in_graph": true},
                        {"path": "/new.md", "before": null, "after": "h2", "in_graph": true},
                        {"path": "/disk.md", "before": null, "after": "h2", "in_graph": false}
                    ]),
                );
            }
            Ok(ToolOutput::ok("done"))
        },
    ));
    let human = turn(&net, "write").await;
    let before = net.fork_at(human.id()).unwrap();
    assert_eq!(before.files()["/a.md"].text(), "v1");
    assert!(!before.files().contains_key("/new.md"));
    assert!(!before.files().contains_key("/disk.md"));
    let leaf = net.current_leaf().unwrap();
    let after = net.fork_at(leaf.id()).unwrap();
    assert_eq!(after.files()["/a.md"].text(), "v2");
    assert_eq!(after.files()["/new.md"].text(), "v2");
}

#[tokio::test]
async fn a_branch_keeps_the_old_one_and_moves_the_leaf() {
    let model = Counting::default();
    let net = counting_net(&model);
    let first = turn(&net, "one").await;
    turn(&net, "two").await;
    let answer = net.children(first.id())[0].clone();
    let other = NodeRef::detached(HumanNode {
        text: "two, differently".into(),
        parts: Vec::new(),
    });
    net.branch_at(answer.id(), &other).unwrap();
    assert_eq!(net.current_leaf().unwrap().id(), other.id());
    net.invoke().await.unwrap();
    assert_eq!(net.children(answer.id()).len(), 2, "both branches stay");
    assert_eq!(
        texts(&net),
        [
            "one",
            "answer 1: one",
            "two, differently",
            "answer 3: two, differently"
        ]
    );
    assert_eq!(model.0.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn editing_a_message_at_any_depth_runs_nothing_above_it_again() {
    let model = Counting::default();
    let net = counting_net(&model);
    turn(&net, "one").await;
    let second = turn(&net, "two").await;
    turn(&net, "three").await;
    turn(&net, "four").await;
    let answers_before: Vec<_> = net.nodes().iter().map(|n| (n.id(), n.output())).collect();
    assert_eq!(model.0.load(Ordering::SeqCst), 4);

    let edited = net.edit_at(second.id(), "TWO").unwrap();
    assert_eq!(edited.parents(), second.parents());
    net.invoke().await.unwrap();
    assert_eq!(
        model.0.load(Ordering::SeqCst),
        5,
        "one model call: the new turn"
    );
    assert_eq!(
        texts(&net),
        ["one", "answer 1: one", "TWO", "answer 5: TWO"]
    );
    // Every node that was there keeps its output: the old answers stay.
    for (id, output) in answers_before {
        assert_eq!(net.node(id).unwrap().output(), output);
    }
}

#[tokio::test]
async fn editing_a_tool_result_reruns_the_next_turn_only() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let model = ScriptedChatModel::new([
        Turn::call("c1", "look", json!({})),
        Turn::text("first answer"),
        Turn::text("second answer"),
    ]);
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("m")
        .model("m", model.clone())
        .build();
    net.add_tool(FnTool::new(
        "look",
        "Looks.",
        json!({"type": "object"}),
        move |_args, _ctx| {
            counter.fetch_add(1, Ordering::SeqCst);
            async move { Ok(ToolOutput::ok("sunny")) }
        },
    ));
    turn(&net, "weather?").await;
    assert_eq!(model.calls(), 2);
    let tool = net
        .nodes()
        .into_iter()
        .find(|n| n.kind() == "tool")
        .unwrap();
    let edited = net.edit_at(tool.id(), "rainy").unwrap();
    assert!(edited.is_invoked());
    net.invoke().await.unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the tool did not run again"
    );
    assert_eq!(model.calls(), 3, "only the turn after the result ran");
    let history = texts(&net);
    let n = history.len();
    assert_eq!(history[n - 2], "rainy");
    assert_eq!(history[n - 1], "second answer");
    assert!(net
        .nodes()
        .iter()
        .any(|n| n.output().is_some_and(|m| m.text() == "first answer")));
}

#[tokio::test]
async fn only_messages_and_tool_results_can_be_edited() {
    let model = Counting::default();
    let net = counting_net(&model);
    let human = turn(&net, "one").await;
    let answer = net.children(human.id())[0].clone();
    let err = net.edit_at(answer.id(), "x").unwrap_err();
    assert!(
        err.to_string()
            .contains("only a human message or a tool result"),
        "{err}"
    );
}

#[tokio::test]
async fn a_rewind_moves_where_the_next_message_goes_and_is_saved() {
    let model = Counting::default();
    let net = counting_net(&model);
    let first = turn(&net, "one").await;
    turn(&net, "two").await;
    let answer = net.children(first.id())[0].clone();
    net.rewind_to(Some(answer.id())).unwrap();
    assert_eq!(texts(&net), ["one", "answer 1: one"]);
    // Saved and loaded elsewhere, the rewind holds.
    let loaded = RunnableNetwork::from_json(&net.to_json().unwrap()).unwrap();
    loaded.register_model("m", model.clone());
    let again = turn(&loaded, "two again").await;
    assert_eq!(again.parents(), [answer.id()]);
    assert_eq!(
        texts(&loaded),
        ["one", "answer 1: one", "two again", "answer 3: two again"]
    );
    assert_eq!(loaded.metadata_value("rewound_to"), None, "used once");
    assert_eq!(loaded.len(), 6, "the old branch stays");
    // Before everything: the next message is a new root.
    loaded.rewind_to(None).unwrap();
    let root = turn(&loaded, "fresh").await;
    assert!(root.parents().is_empty());
}

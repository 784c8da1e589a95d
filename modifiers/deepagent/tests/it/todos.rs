//! The todo list: planned, updated and finished by a scripted model (a
//! stand-in for a real one), saved with the session, shown to the model,
//! and malformed lists refused with a clear tool error.

use crate::common;

use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{
    ChatModel, ChatRequest, ChatResponse, HumanNode, ModelError, RunnableNetwork,
    ScriptedChatModel, ToolStatus, Turn,
};
use lc_agent_deepagent::{todos_of, Todo, TodoListModifier, TodoStatus, TODOS_PROMPT};
use parking_lot::Mutex;
use serde_json::json;

/// Replays a script and keeps every request it got.
#[derive(Clone)]
struct Recording {
    script: ScriptedChatModel,
    requests: Arc<Mutex<Vec<ChatRequest>>>,
}

#[async_trait]
impl ChatModel for Recording {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.requests.lock().push(request.clone());
        self.script.complete(request).await
    }
}

fn net_with(turns: Vec<Turn>) -> (RunnableNetwork, Recording) {
    let model = Recording {
        script: ScriptedChatModel::new(turns),
        requests: Arc::default(),
    };
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("m")
        .model("m", model.clone())
        .modifier(TodoListModifier::new())
        .build();
    (net, model)
}

#[tokio::test]
async fn a_plan_is_written_updated_saved_and_shown_to_the_model() {
    let (net, model) = net_with(vec![
        Turn::call(
            "c1",
            "write_todos",
            json!({"todos": [
                {"content": "Read the code", "status": "in_progress"},
                {"content": "Fix the bug", "status": "pending"}
            ]}),
        ),
        Turn::call(
            "c2",
            "write_todos",
            json!({"todos": [
                {"content": "Read the code", "status": "completed"},
                {"content": "Fix the bug", "status": "completed"}
            ]}),
        ),
        Turn::text("All done."),
    ]);
    {
        let _s = net.enter();
        HumanNode::new("Fix the bug in parse()");
    }
    assert_eq!(net.invoke().await.unwrap().text(), "All done.");

    let results = common::tool_results(&net);
    assert_eq!(
        results[0],
        (
            ToolStatus::Ok,
            r#"Updated todo list to [{"content":"Read the code","status":"in_progress"},{"content":"Fix the bug","status":"pending"}]"#
                .to_string()
        )
    );
    let done = |c: &str| Todo {
        content: c.into(),
        status: TodoStatus::Completed,
    };
    assert_eq!(todos_of(&net), [done("Read the code"), done("Fix the bug")]);

    // The first request explains planning; later ones show the current list.
    let requests = model.requests.lock();
    assert_eq!(requests[0].system, [TODOS_PROMPT]);
    assert!(requests[0].tools.iter().any(|t| t.name == "write_todos"));
    assert!(requests[1].system[0].contains(r#"{"content":"Fix the bug","status":"pending"}"#));
    drop(requests);

    // Saved with the session and loaded back.
    let loaded = RunnableNetwork::from_json(&net.to_json().unwrap()).unwrap();
    assert_eq!(todos_of(&loaded), todos_of(&net));
}

#[tokio::test]
async fn malformed_todo_lists_are_refused_and_change_nothing() {
    let bad = [
        json!({"todos": [{"content": "x", "status": "done"}]}),
        json!({"todos": [{"content": "x"}]}),
        json!({"todos": [{"content": "x", "status": "pending", "priority": 1}]}),
        json!({"todos": [{"content": "  ", "status": "pending"}]}),
        json!({"todos": "read the code"}),
        json!({"todo": []}),
    ];
    let mut turns = vec![Turn::call(
        "c0",
        "write_todos",
        json!({"todos": [{"content": "Keep me", "status": "pending"}]}),
    )];
    turns.extend(
        bad.iter()
            .enumerate()
            .map(|(i, args)| Turn::call(&format!("c{}", i + 1), "write_todos", args.clone())),
    );
    turns.push(Turn::text("Gave up."));
    let (net, _) = net_with(turns);
    {
        let _s = net.enter();
        HumanNode::new("plan");
    }
    net.invoke().await.unwrap();
    let results = common::tool_results(&net);
    assert_eq!(results[0].0, ToolStatus::Ok);
    // The core's wording (lc_agent::tool_args), the same for every tool.
    let expected = [
        "`todos[0].status` must be one of \"pending\", \"in_progress\", \"completed\", got \"done\"",
        "missing required argument `todos[0].status`",
        "unknown argument `todos[0].priority`, expected `content` or `status`",
        "`todos[0].content` must not be empty",
        "`todos` must be an array, got \"read the code\"",
        "missing required argument `todos`",
    ];
    for ((status, text), reason) in results[1..].iter().zip(expected) {
        assert_eq!(*status, ToolStatus::Error, "{text}");
        assert!(
            text.starts_with("Error: Invalid arguments for write_todos: ") && text.contains(reason),
            "{text} should say {reason}"
        );
    }
    assert_eq!(
        todos_of(&net),
        [Todo {
            content: "Keep me".into(),
            status: TodoStatus::Pending
        }]
    );
}

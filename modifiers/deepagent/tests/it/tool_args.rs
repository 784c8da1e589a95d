//! One wording for the argument errors of every built-in tool: the file
//! tools, `write_todos`, `task`, a supervisor's route tool, and (feature
//! `memory`) `remember` and `recall`. A scripted model (a stand-in for a
//! real one) calls each of them with a missing, a wrong-typed and an extra
//! argument, arguments that are not an object and arguments that are not
//! JSON, in one turn; every result must read exactly as the core's
//! `lc_agent::tool_args` words it, and nothing may change.

use std::collections::HashMap;

use lc_agent::{
    Attachments, HumanNode, RunnableNetwork, ScriptedChatModel, ToolCall, ToolNode, ToolStatus,
    Turn,
};
use lc_agent_deepagent::{todos_of, Route, SubAgentModifier, Supervisor, TodoListModifier};
use lc_agent_filesystem::{FilesystemModifier, StateBackend};
use serde_json::{json, Value};

/// One built-in tool and three wrong calls of it.
struct Row {
    tool: &'static str,
    /// Arguments without a required one, and the one left out (`None`: the
    /// tool has no required argument).
    missing: Option<(Value, &'static str)>,
    /// Arguments with one of the wrong JSON type: the key, what it must
    /// be, and the value as the model reads it.
    wrong: (Value, &'static str, &'static str, &'static str),
    /// Valid arguments plus `extra`, and the arguments the tool takes.
    extra: (Value, &'static str),
}

/// The wording, written once: every expectation below is built from it.
fn says(tool: &str, reason: &str) -> String {
    format!("Error: Invalid arguments for {tool}: {reason}")
}

fn rows() -> Vec<Row> {
    let mut rows = vec![
        Row {
            tool: "ls",
            missing: None,
            wrong: (json!({"path": 5}), "path", "a string", "5"),
            extra: (json!({"path": "/", "extra": 1}), "`path` or `recursive`"),
        },
        Row {
            tool: "read_file",
            missing: Some((json!({"limit": 3}), "file_path")),
            wrong: (
                json!({"file_path": "/a.txt", "limit": "ten"}),
                "limit",
                "an integer",
                "\"ten\"",
            ),
            extra: (
                json!({"file_path": "/a.txt", "extra": 1}),
                "`file_path`, `offset` or `limit`",
            ),
        },
        Row {
            tool: "write_file",
            missing: Some((json!({"file_path": "/a.txt"}), "content")),
            wrong: (
                json!({"file_path": "/a.txt", "content": "x", "overwrite": "yes"}),
                "overwrite",
                "a boolean",
                "\"yes\"",
            ),
            extra: (
                json!({"file_path": "/a.txt", "content": "x", "extra": 1}),
                "`file_path`, `content` or `overwrite`",
            ),
        },
        Row {
            tool: "edit_file",
            missing: Some((json!({"file_path": "/a.txt", "old_string": "a"}), "new_string")),
            wrong: (
                json!({"file_path": "/a.txt", "old_string": "a", "new_string": "b", "replace_all": "no"}),
                "replace_all",
                "a boolean",
                "\"no\"",
            ),
            extra: (
                json!({"file_path": "/a.txt", "old_string": "a", "new_string": "b", "extra": 1}),
                "`file_path`, `old_string`, `new_string` or `replace_all`",
            ),
        },
        Row {
            tool: "glob",
            missing: Some((json!({"path": "/"}), "pattern")),
            wrong: (json!({"pattern": ["*"]}), "pattern", "a string", "[\"*\"]"),
            extra: (json!({"pattern": "*", "extra": 1}), "`pattern` or `path`"),
        },
        Row {
            tool: "grep",
            missing: Some((json!({"path": "/"}), "pattern")),
            wrong: (
                json!({"pattern": "x", "context": "2"}),
                "context",
                "an integer",
                "\"2\"",
            ),
            extra: (
                json!({"pattern": "x", "extra": 1}),
                "`pattern`, `path`, `glob`, `output_mode`, `case_insensitive`, `fixed_strings`, `context` or `max_count`",
            ),
        },
        Row {
            tool: "execute",
            missing: Some((json!({"timeout": 5}), "command")),
            wrong: (json!({"command": 5}), "command", "a string", "5"),
            extra: (json!({"command": "true", "extra": 1}), "`command` or `timeout`"),
        },
        Row {
            tool: "write_todos",
            missing: Some((json!({}), "todos")),
            wrong: (
                json!({"todos": "read the code"}),
                "todos",
                "an array",
                "\"read the code\"",
            ),
            extra: (json!({"todos": [], "extra": 1}), "`todos`"),
        },
        Row {
            tool: "task",
            missing: Some((json!({"description": "look"}), "subagent_type")),
            wrong: (
                json!({"description": 5, "subagent_type": "general-purpose"}),
                "description",
                "a string",
                "5",
            ),
            extra: (
                json!({"description": "look", "subagent_type": "general-purpose", "extra": 1}),
                "`description` or `subagent_type`",
            ),
        },
        Row {
            tool: "weather",
            missing: Some((json!({}), "prompt")),
            wrong: (json!({"prompt": 5}), "prompt", "a string", "5"),
            extra: (json!({"prompt": "Lisbon?", "extra": 1}), "`prompt`"),
        },
    ];
    if cfg!(feature = "memory") {
        rows.extend([
            Row {
                tool: "remember",
                missing: Some((json!({"tags": ["x"]}), "text")),
                wrong: (
                    json!({"text": "likes tea", "tags": "drinks"}),
                    "tags",
                    "an array",
                    "\"drinks\"",
                ),
                extra: (json!({"text": "likes tea", "extra": 1}), "`text` or `tags`"),
            },
            Row {
                tool: "recall",
                missing: Some((json!({"limit": 2}), "query")),
                wrong: (
                    json!({"query": "tea", "limit": "2"}),
                    "limit",
                    "an integer",
                    "\"2\"",
                ),
                extra: (json!({"query": "tea", "extra": 1}), "`query` or `limit`"),
            },
        ]);
    }
    rows
}

/// A network with every built-in tool attached, over the session's files.
fn agent(turns: Vec<Turn>) -> RunnableNetwork {
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("m")
        .model("m", ScriptedChatModel::new(turns))
        .build();
    net.add_modifier(FilesystemModifier::new(StateBackend::factory()))
        .unwrap();
    net.add_modifier(TodoListModifier::new()).unwrap();
    net.add_modifier(SubAgentModifier::new()).unwrap();
    let route = Route::new("weather", "Knows the weather of a city.", || {
        RunnableNetwork::builder().default_node("chat").build()
    });
    let supervisor = Supervisor::new("Plan.").route(route).build();
    for tool in supervisor.tools() {
        net.add_tool_shared(tool);
    }
    #[cfg(feature = "memory")]
    {
        use lc_agent_deepagent::memory::{MemoryStore, Recall, Remember};
        let store = MemoryStore::in_memory().unwrap();
        net.add_tool(Remember::new(store.clone(), "alice"));
        net.add_tool(Recall::new(store, "alice"));
    }
    net
}

#[tokio::test]
async fn every_built_in_tool_words_argument_errors_the_same_way() {
    // (call id, the call, what the model must read).
    let mut cases: Vec<(ToolCall, Expected)> = Vec::new();
    let mut add = |tool: &str, arguments: String, expected: Expected| {
        let id = format!("c{}", cases.len());
        let call = ToolCall {
            id,
            name: tool.to_string(),
            arguments,
        };
        cases.push((call, expected));
    };
    let rows = rows();
    for row in &rows {
        let tool = row.tool;
        if let Some((args, key)) = &row.missing {
            let reason = format!("missing required argument `{key}`");
            add(tool, args.to_string(), Expected::Is(says(tool, &reason)));
        }
        let (args, key, what, got) = &row.wrong;
        let reason = format!("`{key}` must be {what}, got {got}");
        add(tool, args.to_string(), Expected::Is(says(tool, &reason)));
        let (args, takes) = &row.extra;
        let reason = format!("unknown argument `extra`, expected {takes}");
        add(tool, args.to_string(), Expected::Is(says(tool, &reason)));
        let reason = "expected a JSON object, got [1]";
        add(tool, "[1]".to_string(), Expected::Is(says(tool, reason)));
        let reason = "not valid JSON (";
        add(
            tool,
            "{oops".to_string(),
            Expected::Starts(says(tool, reason)),
        );
    }
    let expected: HashMap<String, (String, Expected)> = cases
        .iter()
        .map(|(call, e)| (call.id.clone(), (call.name.clone(), e.clone())))
        .collect();
    let calls = cases.into_iter().map(|(call, _)| call);
    let net = agent(vec![Turn::tool_calls(calls), Turn::text("Done.")]);
    {
        let _s = net.enter();
        HumanNode::new("Try every tool.");
    }
    net.invoke().await.unwrap();

    let mut seen = 0;
    let mut tools_seen = std::collections::BTreeSet::new();
    for node in net.nodes() {
        let Some(tool) = node.downcast::<ToolNode>() else {
            continue;
        };
        let (name, want) = &expected[&tool.tool_call.id];
        let output = node.output().unwrap();
        let lc_agent::Message::Tool {
            content, status, ..
        } = &*output
        else {
            panic!("{output:?}");
        };
        assert_eq!(*status, ToolStatus::Error, "{name}: {content}");
        match want {
            Expected::Is(text) => assert_eq!(content, text, "{name} {}", tool.tool_call.arguments),
            Expected::Starts(text) => {
                assert!(content.starts_with(text.as_str()), "{name}: {content}")
            }
        }
        tools_seen.insert(name.clone());
        seen += 1;
    }
    assert_eq!(seen, expected.len(), "every call got its result");
    let all: std::collections::BTreeSet<String> = rows.iter().map(|r| r.tool.to_string()).collect();
    assert_eq!(tools_seen, all);
    // Refused calls change nothing: no file written, no todo list, no
    // sub-agent or route run.
    assert!(net.files().is_empty(), "{:?}", net.files());
    assert!(todos_of(&net).is_empty());
    assert!(net.nodes().iter().all(|n| n.kind() != "network"));
}

/// What a result must read.
#[derive(Clone)]
enum Expected {
    Is(String),
    Starts(String),
}

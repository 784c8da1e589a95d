//! A sub-agent's own model, tools allow-list and approval rules, from a
//! blueprint (`[[subagents]]` with `model`, `tools`, `interrupt_on`), as
//! deepagents' sub-agent specs have them. Recording scripted models stand
//! in for the main model and the sub-agent's.

use crate::common;

use std::collections::VecDeque;
use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{
    ChatModel, ChatRequest, ChatResponse, HumanNode, ModelError, Provider, RunnableNetwork,
    ToolStatus, Turn,
};
use lc_agent_deepagent::{pending_approvals, AgentSpec, DecisionKind, ModelSpec, SpecError};
use parking_lot::Mutex;
use serde_json::json;

/// What one request offered (tool names, sorted) and said (its text).
type Seen = (Vec<String>, String);

/// A scripted model that records each request's tools and text.
#[derive(Clone, Default)]
struct Recorder {
    turns: Arc<Mutex<VecDeque<Turn>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Recorder {
    fn new(turns: impl IntoIterator<Item = Turn>) -> Self {
        Self {
            turns: Arc::new(Mutex::new(turns.into_iter().collect())),
            seen: Arc::default(),
        }
    }

    fn offered(&self) -> Vec<Vec<String>> {
        self.seen.lock().iter().map(|(t, _)| t.clone()).collect()
    }

    fn texts(&self) -> Vec<String> {
        self.seen.lock().iter().map(|(_, m)| m.clone()).collect()
    }
}

#[async_trait]
impl ChatModel for Recorder {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let mut tools: Vec<String> = request.tools.iter().map(|t| t.name.clone()).collect();
        tools.sort();
        let text = request
            .messages()
            .iter()
            .map(|m| m.text().to_string())
            .collect::<Vec<_>>()
            .join("\n");
        self.seen.lock().push((tools, text));
        let turn = self
            .turns
            .lock()
            .pop_front()
            .ok_or_else(|| ModelError::ScriptExhausted {
                name: "recorder".into(),
                played: 0,
            })?;
        Ok(ChatResponse {
            content: turn.content,
            tool_calls: turn.tool_calls,
            ..ChatResponse::default()
        })
    }
}

const TASK: &str = "Count the lines of /notes.md.";

fn task() -> Turn {
    Turn::call(
        "t1",
        "task",
        json!({"description": TASK, "subagent_type": "reader"}),
    )
}

fn write_call() -> Turn {
    Turn::call(
        "w1",
        "write_file",
        json!({"file_path": "/out.md", "content": "written"}),
    )
}

/// The agent of `toml` (with `[models.main]` and `[models.small]`), its
/// main model answering `main`, the small one `small`.
fn agent(toml: &str, main: &Recorder, small: &Recorder) -> Result<RunnableNetwork, SpecError> {
    let spec = AgentSpec::from_toml(&format!(
        "[models.main]\nmodel = \"main-model\"\n[models.small]\nmodel = \"small-model\"\n{toml}"
    ))?;
    let (main, small) = (main.clone(), small.clone());
    let net = spec
        .builder(move |name, _| {
            Ok(match name {
                "main" => Arc::new(main.clone()) as Arc<dyn ChatModel>,
                _ => Arc::new(small.clone()),
            })
        })?
        .build()?;
    {
        let _s = net.enter();
        HumanNode::new("Ask the reader.");
    }
    Ok(net)
}

const READER: &str = "[[subagents]]\nname = \"reader\"\ndescription = \"Reads\"\n\
    system_prompt = \"You only read.\"\nmodel = \"small\"\n";

#[tokio::test]
async fn a_sub_agent_is_offered_only_its_tools_and_may_call_no_other() {
    let main = Recorder::new([task(), Turn::text("The reader could not write.")]);
    let small = Recorder::new([write_call(), Turn::text("I may only read.")]);
    let net = agent(
        &format!("{READER}tools = [\"read_file\", \"grep\"]\n"),
        &main,
        &small,
    )
    .unwrap();
    let reply = net.invoke().await.unwrap();
    assert_eq!(reply.text(), "The reader could not write.");

    // Offered: exactly its two tools (no `task`, no `write_file`).
    assert_eq!(small.offered(), vec![vec!["grep", "read_file"]; 2]);
    assert!(small.texts()[0].contains("You only read."));
    // Its `write_file` call was refused with a clear message, and never ran.
    let inner = net
        .nodes()
        .iter()
        .find_map(|n| {
            n.downcast::<lc_agent::NetworkNode>()
                .map(|s| s.network().clone())
        })
        .unwrap();
    let results = common::tool_results(&inner);
    assert_eq!(
        results,
        [(
            ToolStatus::Error,
            "Error: the sub-agent `reader` may not call `write_file`; its tools are: grep, read_file"
                .to_string()
        )]
    );
    assert!(!net.files().contains_key("/out.md"));
    // The main agent keeps every tool.
    assert!(main.offered()[0].contains(&"write_file".to_string()));
}

#[tokio::test]
async fn the_sub_agents_model_gets_its_requests_and_the_main_model_does_not() {
    let main = Recorder::new([task(), Turn::text("Done.")]);
    let small = Recorder::new([Turn::text("Three lines.")]);
    let net = agent(READER, &main, &small).unwrap();
    net.invoke().await.unwrap();
    assert_eq!(small.texts().len(), 1);
    assert!(small.texts()[0].contains(TASK));
    assert_eq!(main.texts().len(), 2, "the two turns of the main agent");
    assert!(main.texts().iter().all(|t| !t.contains("You only read.")));
}

#[test]
fn an_unknown_tool_in_a_sub_agents_list_is_an_error_naming_it() {
    let (main, small) = (Recorder::default(), Recorder::default());
    let err = agent(
        &format!("{READER}tools = [\"read_file\", \"reed_file\"]\n"),
        &main,
        &small,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("sub-agent `reader`") && err.contains("no tool `reed_file`"),
        "{err}"
    );
    assert!(err.contains("read_file, "), "the tools it has: {err}");
}

#[test]
fn a_sub_agents_model_may_be_provider_and_model() {
    let spec = AgentSpec::from_toml(
        "[models.main]\nmodel = \"m\"\n[[subagents]]\nname = \"reader\"\ndescription = \"Reads\"\n\
         model = \"anthropic:claude-haiku-4-5\"\n",
    )
    .unwrap();
    let asked: Arc<Mutex<Vec<(String, ModelSpec)>>> = Arc::default();
    let seen = asked.clone();
    let _agent = spec
        .builder(move |name, model| {
            seen.lock().push((name.to_string(), model.clone()));
            Ok(Arc::new(Recorder::default()) as Arc<dyn ChatModel>)
        })
        .unwrap();
    let asked = asked.lock().clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[1].0, "subagent:reader");
    assert_eq!(asked[1].1.model, "claude-haiku-4-5");
    assert_eq!(asked[1].1.provider, Some(Provider::Anthropic));

    let bad = AgentSpec::from_toml(
        "[models.main]\nmodel = \"m\"\n[[subagents]]\nname = \"reader\"\ndescription = \"Reads\"\n\
         model = \"tiny\"\n",
    )
    .unwrap();
    let err = bad
        .builder(|_, _| Ok(Arc::new(Recorder::default()) as Arc<dyn ChatModel>))
        .unwrap_err()
        .to_string();
    assert!(err.contains("model `tiny` is neither"), "{err}");
}

#[tokio::test]
async fn a_sub_agents_approval_rules_add_to_the_agents() {
    let main = Recorder::new([task(), Turn::text("Done."), write_call(), Turn::text("Ok.")]);
    let small = Recorder::new([write_call(), Turn::text("Written.")]);
    let net = agent(
        &format!("{READER}interrupt_on = {{ write_file = [\"approve\", \"reject\"] }}\n"),
        &main,
        &small,
    )
    .unwrap();
    net.invoke().await.unwrap();
    let pending = pending_approvals(&net);
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0].tool_call.name, "write_file");
    assert_eq!(pending[0].within.len(), 1, "inside the sub-agent");
    assert_eq!(
        pending[0].allowed,
        [DecisionKind::Approve, DecisionKind::Reject]
    );
    // The main agent's own write needs no approval: the rule is the sub-agent's.
    lc_agent_deepagent::decide(
        &net,
        pending[0].node_id,
        lc_agent_deepagent::Decision::Approve,
    )
    .unwrap();
    assert_eq!(net.invoke().await.unwrap().text(), "Done.");
    {
        let _s = net.enter();
        HumanNode::new("Write it yourself.");
    }
    assert_eq!(net.invoke().await.unwrap().text(), "Ok.");
    assert!(pending_approvals(&net).is_empty());
}

#[tokio::test]
async fn a_sub_agent_cannot_loosen_an_inherited_approval() {
    let main = Recorder::new([task(), Turn::text("Done.")]);
    let small = Recorder::new([write_call(), Turn::text("Written.")]);
    let net = agent(
        &format!(
            "[interrupt_on]\nwrite_file = [\"approve\", \"reject\"]\n{READER}\
             interrupt_on = {{ write_file = [\"approve\", \"edit\", \"reject\", \"respond\"] }}\n"
        ),
        &main,
        &small,
    )
    .unwrap();
    net.invoke().await.unwrap();
    let pending = pending_approvals(&net);
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(
        pending[0].allowed,
        [DecisionKind::Approve, DecisionKind::Reject],
        "the agent's rule stands"
    );
}

#[tokio::test]
async fn a_sub_agents_task_result_follows_its_output_schema() {
    let main = Recorder::new([task(), Turn::text("{\"summary\": \"three lines\"}")]);
    let small = Recorder::new([
        Turn::text("It has three lines."),
        Turn::text("{\"lines\": 3}"),
    ]);
    let net = agent(
        &format!(
            "[output_schemas.chat]\ntype = \"object\"\nrequired = [\"summary\"]\n\
             {READER}output_schema = {{ type = \"object\", properties = {{ lines = {{ type = \"integer\" }} }}, required = [\"lines\"] }}\n"
        ),
        &main,
        &small,
    )
    .unwrap();
    let reply = net.invoke().await.unwrap();
    assert_eq!(reply.text(), "{\"summary\": \"three lines\"}");
    // The sub-agent was asked again with the errors; its task result is
    // the answer that fits.
    assert_eq!(small.texts().len(), 2);
    assert!(small.texts()[0].contains("valid against this JSON Schema"));
    assert!(small.texts()[1].contains("the answer is not JSON"));
    let results: Vec<String> = net
        .nodes()
        .iter()
        .filter_map(|n| n.output())
        .filter(|m| matches!(&**m, lc_agent::Message::Tool { .. }))
        .map(|m| m.text().to_string())
        .collect();
    assert_eq!(results, ["{\"lines\": 3}"]);
    // The agent's own answer was checked against `output_schemas.chat`.
    assert_eq!(
        net.current_leaf()
            .unwrap()
            .metadata_value("structured_output"),
        Some(json!({"summary": "three lines"}))
    );
}

#[test]
fn an_output_schema_that_is_no_schema_is_an_error_naming_it() {
    let (main, small) = (Recorder::default(), Recorder::default());
    let err = agent("[output_schemas.chat]\ntype = 12\n", &main, &small)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("output_schemas.chat") && err.contains("not a JSON Schema"),
        "{err}"
    );
}

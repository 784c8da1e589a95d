//! The GenAI spans of a run (feature `otel`), caught in-process by a
//! `tracing` layer: the tree (a summary's `summarize > chat` under the run,
//! tool calls, a failing model call's error status) and that without a
//! subscriber interested in them nothing is recorded. The real exporter
//! and a real receiver are tested in `cli/tests/otel.rs` (Arize Phoenix).
//! Only with the `otel` feature (see `main.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use lc_agent::{
    Attachments, FnTool, HumanNode, ModelRoutes, RunnableNetwork, ScriptedChatModel, SystemNode,
    ToolOutput, Turn,
};
use lc_agent_deepagent::{SummarizationConfig, SummarizationModifier, SUMMARY_STEP};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

#[derive(Debug, Clone, Default)]
struct Caught {
    name: String,
    parent: Option<usize>,
    fields: HashMap<String, String>,
}

/// Every span, in the order they start.
#[derive(Clone, Default)]
struct Catch(Arc<Mutex<Vec<Caught>>>);

struct Index(usize);

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(
            field.name().to_string(),
            format!("{value:?}").trim_matches('"').to_string(),
        );
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Catch {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let span = ctx.span(id).unwrap();
        let parent = span
            .parent()
            .and_then(|p| p.extensions().get::<Index>().map(|i| i.0));
        let mut caught = Caught {
            parent,
            ..Caught::default()
        };
        attrs.record(&mut Fields(&mut caught.fields));
        caught.name = caught
            .fields
            .get("otel.name")
            .cloned()
            .unwrap_or_else(|| span.name().to_string());
        let mut all = self.0.lock().unwrap();
        all.push(caught);
        span.extensions_mut().insert(Index(all.len() - 1));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let span = ctx.span(id).unwrap();
        let index = span.extensions().get::<Index>().map(|i| i.0);
        if let Some(i) = index {
            values.record(&mut Fields(&mut self.0.lock().unwrap()[i].fields));
        }
    }
}

impl Catch {
    fn outline(&self) -> String {
        let all = self.0.lock().unwrap();
        let depth = |mut i: usize| {
            let mut d = 0;
            while let Some(p) = all[i].parent {
                d += 1;
                i = p;
            }
            d
        };
        (0..all.len())
            .map(|i| format!("{}{}\n", "  ".repeat(depth(i)), all[i].name))
            .collect()
    }

    fn find(&self, name: &str) -> Vec<Caught> {
        let all = self.0.lock().unwrap();
        all.iter().filter(|c| c.name == name).cloned().collect()
    }
}

fn network(main: ScriptedChatModel) -> RunnableNetwork {
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("main")
        .model("main", main)
        .model(
            "summarizer",
            ScriptedChatModel::new(["S: two questions so far."]),
        )
        .tool(FnTool::new(
            "lookup",
            "Looks a topic up.",
            json!({"type": "object", "properties": {"topic": {"type": "string"}}}),
            |args, _| async move {
                match args["topic"].as_str() {
                    Some("nothing") => Ok(ToolOutput::error("no such topic")),
                    _ => Ok(ToolOutput::ok("a fact")),
                }
            },
        ))
        .build();
    net.set_model_route(SUMMARY_STEP, "summarizer");
    let config = SummarizationConfig {
        trigger_fraction: None,
        every_human_turns: Some(2),
        keep_messages: 1,
        approximate_tokens: true,
        ..SummarizationConfig::default()
    };
    net.add_modifier(SummarizationModifier::new(config))
        .unwrap();
    {
        let _scope = net.enter();
        SystemNode::new("You are a research assistant.");
    }
    net
}

async fn say(net: &RunnableNetwork, text: &str) -> lc_agent::Result<lc_agent::Message> {
    {
        let _scope = net.enter();
        HumanNode::new(text);
    }
    net.invoke().await
}

#[tokio::test]
async fn a_run_is_a_tree_of_genai_spans_with_a_summary_and_error_statuses() {
    let catch = Catch::default();
    let subscriber = tracing_subscriber::registry().with(catch.clone());
    let _default = tracing::subscriber::set_default(subscriber);
    // Other tests of this binary run chat nodes on other threads with no
    // subscriber: a callsite they registered while this one was being set
    // may keep the interest it had before ("never"). Ask every callsite
    // again now that this subscriber exists.
    tracing::callsite::rebuild_interest_cache();
    let main = ScriptedChatModel::new([
        Turn::call("c1", "lookup", json!({"topic": "owls"})),
        Turn::text("a1"),
        Turn::call("c2", "lookup", json!({"topic": "nothing"})),
        Turn::text("a2"),
    ]);
    let net = network(main);
    net.set_user_id("bob");
    say(&net, "q1").await.unwrap();
    say(&net, "q2").await.unwrap();
    // Out of turns: the model call fails, and its span says so.
    assert!(say(&net, "q3").await.is_err());
    assert_eq!(
        catch.outline(),
        "invoke_agent lc-agent
  chat main
  execute_tool lookup
  chat main
invoke_agent lc-agent
  summarize
    chat summarizer
  chat main
  execute_tool lookup
  chat main
invoke_agent lc-agent
  chat main
"
    );
    let runs = catch.find("invoke_agent lc-agent");
    assert_eq!(runs[0].fields["user.id"], "bob");
    assert_eq!(
        runs[0].fields["gen_ai.conversation.id"],
        net.id().to_string()
    );
    assert_eq!(runs[2].fields["otel.status_code"], "ERROR");
    let summary_chat = &catch.find("chat summarizer")[0];
    assert_eq!(summary_chat.fields["lc_agent.step"], SUMMARY_STEP);
    assert_eq!(
        summary_chat.fields["gen_ai.response.finish_reasons"],
        "[\"stop\"]"
    );
    assert!(summary_chat
        .fields
        .contains_key("gen_ai.usage.input_tokens"));
    let chats = catch.find("chat main");
    assert_eq!(chats[4].fields["otel.status_code"], "ERROR");
    assert_eq!(chats[4].fields["error.type"], "model_error");
    let tools = catch.find("execute_tool lookup");
    assert_eq!(tools[0].fields["lc_agent.tool.status"], "ok");
    assert_eq!(tools[1].fields["lc_agent.tool.status"], "error");
    assert_eq!(tools[1].fields["otel.status_code"], "ERROR");
    assert_eq!(tools[1].fields["gen_ai.tool.call.id"], "c2");
    // Content stays out by default.
    for span in catch.0.lock().unwrap().iter() {
        assert!(
            !span.fields.contains_key("gen_ai.input.messages"),
            "{span:?}"
        );
        assert!(
            !span.fields.contains_key("gen_ai.tool.call.arguments"),
            "{span:?}"
        );
    }
}

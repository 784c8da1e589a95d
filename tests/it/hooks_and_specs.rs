//! Which start and end hooks a run calls (`Hooks`), and the tool specs a
//! chat request gets: shared while the tools stay, read again for a tool
//! whose spec is not fixed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::prelude::*;
use lc_agent::{
    ChatRequest, FnTool, Hooks, InvokeOutcome, NetworkModifier, ScriptedChatModel, Tool,
    ToolContext, ToolOutput, ToolSpecs,
};
use parking_lot::Mutex;
use serde_json::{json, Value};

/// Counts its start and end hooks, with the flags it is given.
struct Counting {
    id: &'static str,
    hooks: Hooks,
    begin: AtomicUsize,
    begin_now: AtomicUsize,
    end: AtomicUsize,
}

impl Counting {
    fn new(id: &'static str, hooks: Hooks) -> Arc<Self> {
        Arc::new(Counting {
            id,
            hooks,
            begin: AtomicUsize::new(0),
            begin_now: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
        })
    }

    fn counts(&self) -> (usize, usize, usize) {
        (
            self.begin.load(Ordering::SeqCst),
            self.begin_now.load(Ordering::SeqCst),
            self.end.load(Ordering::SeqCst),
        )
    }
}

#[async_trait]
impl NetworkModifier for Counting {
    fn id(&self) -> &str {
        self.id
    }
    fn hooks(&self) -> Hooks {
        self.hooks
    }
    async fn on_begin_invoke(&self, _network: &RunnableNetwork) -> lc_agent::Result<()> {
        self.begin.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn on_begin_invoke_now(&self, _network: &RunnableNetwork) -> lc_agent::Result<()> {
        self.begin_now.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    async fn on_end_invoke(
        &self,
        _network: &RunnableNetwork,
        _outcome: &InvokeOutcome,
    ) -> lc_agent::Result<()> {
        self.end.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

fn chat_network() -> RunnableNetwork {
    RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("scripted")
        .model("scripted", ScriptedChatModel::new(["ok"]).cycled())
        .unlimited_steps()
        .build()
}

async fn turn(net: &RunnableNetwork, text: &str) {
    {
        let _scope = net.enter();
        HumanNode::new(text);
    }
    net.invoke().await.unwrap();
}

#[tokio::test]
async fn a_run_calls_the_start_and_end_hooks_the_flags_ask_for() {
    let net = chat_network();
    let none = Counting::new("none", Hooks::NONE);
    let all = Counting::new("all", Hooks::ALL);
    let now = Counting::new(
        "now",
        Hooks {
            begin_invoke: false,
            begin_invoke_now: true,
            ..Hooks::NONE
        },
    );
    let neither = Counting::new(
        "neither",
        Hooks {
            begin_invoke: false,
            end_invoke: false,
            ..Hooks::ALL
        },
    );
    for m in [&none, &all, &now, &neither] {
        net.add_modifier_shared(m.clone()).unwrap();
    }
    turn(&net, "one").await;
    turn(&net, "two").await;
    // (on_begin_invoke, on_begin_invoke_now, on_end_invoke) per modifier.
    assert_eq!(
        none.counts(),
        (2, 0, 2),
        "NONE keeps the start and end hooks"
    );
    assert_eq!(all.counts(), (2, 0, 2));
    assert_eq!(now.counts(), (0, 2, 2), "the direct start hook instead");
    assert_eq!(neither.counts(), (0, 0, 0));
}

/// Records the tools of every chat request.
#[derive(Default)]
struct Requests(Mutex<Vec<ToolSpecs>>);

#[async_trait]
impl NetworkModifier for Requests {
    fn id(&self) -> &str {
        "requests"
    }
    async fn on_chat_request(
        &self,
        _network: &RunnableNetwork,
        _node: &NodeRef,
        request: &mut ChatRequest,
    ) -> lc_agent::Result<()> {
        self.0.lock().push(request.tools.clone());
        Ok(())
    }
}

/// A tool whose description follows a counter: its spec is not fixed.
struct Changing(Arc<AtomicUsize>);

#[async_trait]
impl Tool for Changing {
    fn name(&self) -> &str {
        "changing"
    }
    fn description(&self) -> &str {
        if self.0.load(Ordering::SeqCst) == 0 {
            "first"
        } else {
            "second"
        }
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    async fn call(
        &self,
        _args: Value,
        _ctx: &ToolContext,
    ) -> Result<ToolOutput, lc_agent::ToolError> {
        Ok(ToolOutput::ok("done"))
    }
}

#[tokio::test]
async fn fixed_tool_specs_are_shared_across_turns_and_a_changing_one_is_read_again() {
    let net = chat_network();
    net.add_tool(FnTool::new(
        "lookup",
        "Looks a key up.",
        json!({"type": "object"}),
        |_, _| async { Ok(ToolOutput::ok("v")) },
    ));
    let requests = Arc::new(Requests::default());
    net.add_modifier_shared(requests.clone()).unwrap();
    turn(&net, "one").await;
    turn(&net, "two").await;
    let changes = Arc::new(AtomicUsize::new(0));
    net.add_tool(Changing(changes.clone()));
    turn(&net, "three").await;
    changes.store(1, Ordering::SeqCst);
    turn(&net, "four").await;

    let seen = requests.0.lock().clone();
    assert_eq!(seen.len(), 4);
    let names = |t: &ToolSpecs| t.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&seen[0]), ["lookup"]);
    // The same tools, every spec fixed: one shared list, not a copy.
    assert!(std::ptr::eq(seen[0].as_ptr(), seen[1].as_ptr()));
    // A tool joined: a new list, with it.
    assert_eq!(names(&seen[2]), ["lookup", "changing"]);
    // A spec that is not fixed is read again each turn.
    assert_eq!(seen[2][1].description, "first");
    assert_eq!(seen[3][1].description, "second");
    assert!(!std::ptr::eq(seen[2].as_ptr(), seen[3].as_ptr()));
}

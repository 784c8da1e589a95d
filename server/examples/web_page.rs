//! The web page with a scripted stand-in model, to try it offline: open the
//! printed address, send any message, and the "model" plans with todos,
//! greps, answers in Markdown (a table and a code block), then asks to edit
//! a file — an approval with a diff and the four decisions (approve, edit
//! the arguments, reject with a reason, answer instead). The fourth turn
//! is slow (8 s) so the Stop button can be tried; the script then starts
//! over.
//!
//! Needs nothing installed (sessions go to a temporary JSON list; the model
//! is a `ScriptedChatModel`, not a real one).
//!
//! Run: `cargo run -p lc-agent-server --example web_page [PORT]` and open
//! `http://127.0.0.1:PORT/` (default port 8080). Ctrl-C stops it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use lc_agent::ListConfig;
use lc_agent::{ScriptedChatModel, ToolCall, Turn};
use lc_agent_deepagent::{AgentSpec, DecisionKind, ModelSpec};
use lc_agent_server::{serve, AppState, ServerConfig};
use serde_json::json;

const ANSWER: &str = "Here is where the **TODOs** are:

| file | TODOs |
| --- | --- |
| `src/parse.rs` | 1 |

```rust
fn parse(line: &str) -> Option<String> {
    // TODO: handle quoted fields
    line.split(',').next().map(str::to_string)
}
```

Shall I fix it? (Send anything.)";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = std::env::args()
        .nth(1)
        .map(|p| p.parse())
        .transpose()?
        .unwrap_or(8080);
    let call = |id: &str, name: &str, args: serde_json::Value| {
        Turn::tool_calls([ToolCall::new(id, name, args)])
    };
    // Scripted: it says so. Each run of the agent plays the next turns.
    let model = ScriptedChatModel::new([
        call(
            "t1",
            "write_todos",
            json!({"todos": [{"content": "Find the TODOs", "status": "in_progress"},
                             {"content": "Fix them", "status": "pending"}]}),
        ),
        call(
            "w1",
            "write_file",
            json!({"file_path": "/src/parse.rs", "content": "fn parse(line: &str) -> Option<String> {\n    // TODO: handle quoted fields\n    line.split(',').next().map(str::to_string)\n}\n"}),
        ),
        call("g1", "grep", json!({"pattern": "TODO", "path": "/"})),
        Turn::text(ANSWER).delayed(Duration::from_secs(8)),
        call(
            "e1",
            "edit_file",
            json!({"file_path": "/src/parse.rs", "old_string": "    // TODO: handle quoted fields\n", "new_string": ""}),
        ),
        Turn::text("Done: the TODO is gone."),
    ])
    .cycled();
    let spec = AgentSpec {
        models: BTreeMap::from([(
            "main".to_string(),
            ModelSpec {
                model: "scripted".into(),
                ..ModelSpec::default()
            },
        )]),
        interrupt_on: BTreeMap::from([(
            "edit_file".to_string(),
            vec![
                DecisionKind::Approve,
                DecisionKind::Edit,
                DecisionKind::Reject,
                DecisionKind::Respond,
            ],
        )]),
        ..AgentSpec::default()
    };
    let dir = tempfile::tempdir()?;
    let config = ServerConfig::new(Arc::new(model))
        .sessions(ListConfig::json(dir.path().join("sessions")))
        .spec(spec);
    let state = AppState::new(config)?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    eprintln!(
        "the page (scripted model): http://{}/",
        listener.local_addr()?
    );
    serve(listener, state, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    Ok(())
}

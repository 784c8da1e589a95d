//! # MCP input through the server: a tool asks the session's person
//!
//! Shows: an MCP server whose tool asks the person for values in the
//! middle of a call (`elicitation/create`, form mode), reached by
//! `lc-agent-server` through [`McpSessions`] (each session's runs get MCP
//! connections of their own, so the request reaches the session that
//! asked). The run holds the request (`pending_input` in the session
//! view, an `input_requested` event in its stream); a person answers with
//! `POST /api/sessions/{id}/input/{input}`, and the tool goes on with the
//! values. Here the "person" is this program: it first sends a value the
//! form does not allow (the server says why, and the request stays open),
//! then a good one.
//!
//! Needs: nothing; the MCP server (rmcp) and `lc-agent-server` run in
//! this process on loopback ports, the model is a `ScriptedChatModel`.
//! `lc-agent serve --mcp FILE` does the same from the command line, with
//! the web page showing the form.
//!
//! Run: `cargo run --example mcp_input`

use std::sync::Arc;
use std::time::Duration;

use lc_agent::{ListConfig, ScriptedChatModel, ToolCall, Turn};
use lc_agent_deepagent::mcp::{McpConfig, McpServerConfig, McpSessions};
use lc_agent_server::{serve, AppState, ServerConfig};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams,
    ElicitationAction, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig as McpServerInfo,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, ServerHandler};
use serde_json::{json, Value};

/// An MCP server with one tool, `book_table`, that asks for the booking.
#[derive(Clone)]
struct Booking;

impl ServerHandler for Booking {
    fn get_info(&self) -> McpServerInfo {
        McpServerInfo::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, rmcp::ErrorData> {
        let schema = json!({"type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]});
        let Value::Object(schema) = schema else {
            return Err(rmcp::ErrorData::internal_error("schema", None));
        };
        Ok(ListToolsResult::with_all_items(vec![
            rmcp::model::Tool::new(
                "book_table",
                "Books a table on a day, asking the person for the details.",
                schema,
            ),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let day = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("day"))
            .and_then(Value::as_str)
            .unwrap_or("today")
            .to_string();
        let form = serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name"},
                "party": {"type": "integer", "title": "Party", "minimum": 1, "maximum": 12, "default": 2}
            },
            "required": ["name"]
        }))
        .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))?;
        let answer = context
            .peer
            .create_elicitation(ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: format!("Book a table for {day}?"),
                requested_schema: form,
            })
            .await
            .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))?;
        let text = match answer.action {
            ElicitationAction::Accept => format!(
                "Booked for {day}: {}",
                answer.content.unwrap_or(Value::Null)
            ),
            other => format!("Not booked ({other:?})."),
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The MCP server, over streamable HTTP on a loopback port.
    let mcp_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let mcp_url = format!("http://{}/mcp", mcp_listener.local_addr()?);
    let service: StreamableHttpService<Booking, LocalSessionManager> = StreamableHttpService::new(
        || Ok(Booking),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().route_service("/mcp", service);
    tokio::spawn(async move { axum::serve(mcp_listener, router).await });

    // The agent server: its sessions get the MCP server, each with
    // connections of its own; the requests for input go to their runs.
    let mut mcp = McpConfig::default();
    mcp.mcp_servers
        .insert("booking".into(), McpServerConfig::http(mcp_url));
    let (sessions_mcp, asks) = McpSessions::new(mcp);
    for failure in sessions_mcp.connect().await {
        eprintln!("warning: {failure}");
    }
    let model = ScriptedChatModel::new([
        Turn::tool_calls([ToolCall::new(
            "call-1",
            "book_table",
            json!({"day": "Friday"}),
        )]),
        Turn::text("Your table is booked."),
    ]);
    let dir = tempfile::tempdir()?;
    let config = ServerConfig::new(Arc::new(model))
        .sessions(ListConfig::json(dir.path()))
        .modifier_shared(Arc::new(sessions_mcp.clone()));
    let state = AppState::new(config)?;
    state.ask_people(asks);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, state, async {
        let _ = stopped.await;
    }));

    // A person's client: a message, then the request for input answered.
    let http = reqwest::Client::new();
    let session: Value = http
        .post(format!("{base}/api/sessions"))
        .json(&json!({}))
        .send()
        .await?
        .json()
        .await?;
    let id = session["id"].as_str().unwrap_or_default().to_string();
    let run: Value = http
        .post(format!("{base}/api/sessions/{id}/runs"))
        .json(&json!({"content": "Book me a table on Friday.", "background": true}))
        .send()
        .await?
        .json()
        .await?;
    let run = run["id"].as_str().unwrap_or_default().to_string();
    let mut asked = Value::Null;
    for _ in 0..100 {
        let view = get(&http, &format!("{base}/api/sessions/{id}")).await?;
        if let Some(first) = view["pending_input"].get(0) {
            asked = first.clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "the MCP server `{}` asks: {}\n  form: {}",
        asked["server"].as_str().unwrap_or("?"),
        asked["message"].as_str().unwrap_or("?"),
        asked["requested_schema"]
    );
    let input = asked["id"].as_str().unwrap_or_default();
    let answer_url = format!("{base}/api/sessions/{id}/input/{input}");
    let refused = http
        .post(&answer_url)
        .json(&json!({"action": "accept", "content": {"name": "Ada", "party": 40}}))
        .send()
        .await?;
    println!(
        "party 40: {} {}",
        refused.status().as_u16(),
        refused.json::<Value>().await?["error"]["message"]
    );
    let taken = http
        .post(&answer_url)
        .json(&json!({"action": "accept", "content": {"name": "Ada", "party": 4}}))
        .send()
        .await?;
    println!("party 4: {}", taken.status().as_u16());

    let mut record = Value::Null;
    for _ in 0..100 {
        record = get(&http, &format!("{base}/api/runs/{run}")).await?;
        if record["status"] == "done" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let view = get(&http, &format!("{base}/api/sessions/{id}")).await?;
    for message in view["messages"].as_array().into_iter().flatten() {
        if message["role"] == "tool" {
            println!("the tool's result: {}", message["content"]);
        }
    }
    println!(
        "the run: {}, answer: {}",
        record["status"], record["answer"]
    );

    let _ = stop.send(());
    let _ = server.await;
    sessions_mcp.disconnect().await;
    Ok(())
}

/// `GET url`'s JSON.
async fn get(http: &reqwest::Client, url: &str) -> Result<Value, reqwest::Error> {
    http.get(url).send().await?.json().await
}

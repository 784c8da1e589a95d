//! `lc-agent acp`: the agent side of the Agent Client Protocol (ACP,
//! protocol version 1): JSON-RPC over stdio, as Zed, JetBrains and Neovim
//! plugins start agents. Built on the protocol's Rust SDK
//! (`agent-client-protocol`); stdout carries the protocol and nothing
//! else, logs go to stderr.
//!
//! ```text
//!  initialize        ─▶ protocol version 1, loadSession, embedded context in prompts;
//!                       the editor's fs capabilities are kept
//!  session/new {cwd} ─▶ a new lc-agent session working in cwd (or --root), saved like `run`'s
//!  session/load {id} ─▶ a saved session (any lc-agent session of the store), its conversation
//!                       replayed as updates, then the answer
//!  session/prompt    ─▶ a turn (session.rs): streamed chunks, tool calls, plans, permission
//!                       requests; answers with the stop reason
//!  session/set_mode  ─▶ the session's permission mode (plan, default, accept-edits, bypass);
//!                       new and loaded sessions list the modes with the current one
//!  session/cancel    ─▶ the turn stops (stopReason cancelled)
//!  fs/read_text_file, fs/write_text_file ◀─ the file tools' reads and writes, when the editor
//!                       offers them and the workspace is a directory (client_fs.rs)
//! ```
//!
//! The agent is `run`'s: the same flags (model, `--script`, `--agent`,
//! `--mcp`, `--mode`, path rules, `--sessions`/`--redis`, `--yes`). A new
//! session's workspace is the editor's `cwd` unless `--root` names one; a
//! loaded session keeps its own (its stored blueprint). `--shell` offers
//! `execute` there, sandboxed, each call asking the editor (without
//! `--root`: in the editor's folder, a loaded session's too).
//!
//! # Layout
//!
//! ```text
//! mod.rs        the connection: handlers for initialize, session/new, session/load,
//!               session/prompt, session/cancel; the sessions of the connection
//! session.rs    one session: its prompt turns, permission requests, cancel
//! updates.rs    RunEvent -> session/update (chunks, tool calls, plans); history replay
//! client_fs.rs  the file backend whose reads and writes the editor serves
//! ```

mod client_fs;
mod session;
mod updates;

use std::sync::{Arc, Mutex, OnceLock};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ContentBlock, EmbeddedResourceResource, Implementation,
    InitializeRequest, InitializeResponse, LoadSessionRequest, LoadSessionResponse,
    NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse,
    SessionId, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Stdio};
use clap::Args;
use lc_agent_filesystem::{BackendFactory, BackendSource};

use crate::agent::{Agent, AgentArgs, FilesThrough};
use crate::console::Look;
use crate::error::{CliError, CliResult};
use client_fs::{ClientFs, EditorFiles};
use session::{internal, Session, Sessions};

/// `lc-agent acp` arguments.
#[derive(Debug, Args)]
pub(crate) struct AcpArgs {
    /// The agent, its model and where sessions go (as `run`).
    #[command(flatten)]
    agent: AgentArgs,
}

/// What the connection's handlers share.
struct Acp {
    args: AgentArgs,
    /// What the editor offers (from `initialize`).
    files: Mutex<EditorFiles>,
    sessions: Sessions,
}

impl Acp {
    fn session(&self, id: &SessionId) -> Result<Arc<Session>, agent_client_protocol::Error> {
        self.sessions
            .lock()
            .ok()
            .and_then(|s| s.get(&*id.0).cloned())
            .ok_or_else(|| {
                agent_client_protocol::Error::invalid_params().data(serde_json::Value::String(
                    format!(
                        "no session {} in this connection (session/new or session/load first)",
                        id.0
                    ),
                ))
            })
    }

    /// Opens a session (new, or the saved `resume`) with its files
    /// through the editor when it offers them.
    async fn open(
        &self,
        args: &AgentArgs,
        resume: Option<&str>,
        cx: &ConnectionTo<Client>,
    ) -> CliResult<Arc<Session>> {
        let offers = self.files.lock().map(|f| *f).unwrap_or_default();
        let id: Arc<OnceLock<SessionId>> = Arc::new(OnceLock::new());
        let through = {
            let (cx, id) = (cx.clone(), id.clone());
            move |own: BackendSource, root: &std::path::Path| -> BackendSource {
                let (cx, id, root) = (cx.clone(), id.clone(), root.to_path_buf());
                BackendFactory::new(move |net| {
                    let session = id
                        .get()
                        .cloned()
                        .unwrap_or_else(|| SessionId::new(net.id().to_string()));
                    Arc::new(ClientFs::new(
                        cx.clone(),
                        session,
                        offers,
                        &root,
                        own.resolve(net),
                    ))
                })
                .into()
            }
        };
        let files: Option<&FilesThrough> = offers.any().then_some(&through as &FilesThrough);
        let look = Look {
            headless: true,
            ..Look::default()
        };
        let agent = Agent::open_in(args, resume, Some(look), files).await?;
        let _ = id.set(SessionId::new(agent.net.id().to_string()));
        let session = Arc::new(Session::new(agent, cx.clone()));
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.insert(session.id.0.to_string(), session.clone());
        }
        Ok(session)
    }
}

/// Runs `lc-agent acp` until the editor closes stdin.
pub(crate) async fn run(args: AcpArgs) -> CliResult {
    // Its stdin is not a person's: an untrusted project is refused, not asked about.
    crate::trust::no_questions();
    let acp = Arc::new(Acp {
        args: args.agent,
        files: Mutex::new(EditorFiles::default()),
        sessions: Sessions::default(),
    });
    let (on_init, on_new, on_load, on_prompt, on_mode, on_cancel) = (
        acp.clone(),
        acp.clone(),
        acp.clone(),
        acp.clone(),
        acp.clone(),
        acp.clone(),
    );
    let served = agent_client_protocol::Agent
        .v1()
        .name("lc-agent")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                let fs = &request.client_capabilities.fs;
                if let Ok(mut files) = on_init.files.lock() {
                    *files = EditorFiles {
                        read: fs.read_text_file,
                        write: fs.write_text_file,
                    };
                }
                responder.respond(initialized())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                let acp = on_new.clone();
                tokio::spawn(async move {
                    let mut args = acp.args.clone();
                    if args.workspace.root.is_none() {
                        args.workspace.root = Some(request.cwd.clone());
                    }
                    match acp.open(&args, None, &cx).await {
                        Ok(session) => respond(
                            responder,
                            Ok(NewSessionResponse::new(session.id.clone()).modes(session.modes())),
                        ),
                        Err(e) => respond(responder, Err(internal(&e.message))),
                    }
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                let acp = on_load.clone();
                tokio::spawn(async move {
                    let mut args = acp.args.clone();
                    // A shell needs a folder: the editor's, unless --root names one.
                    if args.workspace.shell && args.workspace.root.is_none() {
                        args.workspace.root = Some(request.cwd.clone());
                    }
                    let answer = match acp.session(&request.session_id) {
                        Ok(open) => Ok(open),
                        Err(_) => acp
                            .open(&args, Some(&request.session_id.0), &cx)
                            .await
                            .map_err(|e| internal(&e.message)),
                    };
                    let answer = answer.map(|session| {
                        session.replay();
                        LoadSessionResponse::new().modes(session.modes())
                    });
                    respond(responder, answer);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, _cx| {
                let session = match on_prompt.session(&request.session_id) {
                    Ok(session) => session,
                    Err(e) => return responder.respond_with_error(e),
                };
                tokio::spawn(async move {
                    let text = prompt_text(&request.prompt);
                    let answer = session.prompt(&text).await.map(PromptResponse::new);
                    respond(responder, answer);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _cx| {
                let session = match on_mode.session(&request.session_id) {
                    Ok(session) => session,
                    Err(e) => return responder.respond_with_error(e),
                };
                tokio::spawn(async move {
                    let answer = session
                        .set_mode(&request.mode_id.0)
                        .await
                        .map(|()| SetSessionModeResponse::new());
                    respond(responder, answer);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |cancel: CancelNotification, _cx| {
                if let Ok(session) = on_cancel.session(&cancel.session_id) {
                    session.cancel();
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await;
    let sessions: Vec<Arc<Session>> = acp
        .sessions
        .lock()
        .map(|s| s.values().cloned().collect())
        .unwrap_or_default();
    for session in sessions {
        if let Err(e) = session.agent.save().await {
            eprintln!("error: {}", e.message);
        }
    }
    served.map_err(|e| CliError::failed(format!("the editor's connection failed: {}", e.message)))
}

/// The answer to `initialize`.
fn initialized() -> InitializeResponse {
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(PromptCapabilities::new().embedded_context(true)),
        )
        .agent_info(Implementation::new("lc-agent", env!("CARGO_PKG_VERSION")).title("lc-agent"))
}

/// Sends an answer (a closed connection has nobody to tell).
fn respond<T: agent_client_protocol::JsonRpcResponse>(
    responder: Responder<T>,
    answer: Result<T, agent_client_protocol::Error>,
) {
    let _ = match answer {
        Ok(answer) => responder.respond(answer),
        Err(e) => responder.respond_with_error(e),
    };
}

/// A prompt's content as the text the session gets: text as it is, a
/// mentioned resource as a link, an embedded one as a `<context>` block
/// (images and audio are not offered in `initialize`).
fn prompt_text(blocks: &[ContentBlock]) -> String {
    let mut text = String::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => text.push_str(&t.text),
            ContentBlock::ResourceLink(link) => {
                text.push_str(&format!("[@{}]({})", link.name, link.uri));
            }
            ContentBlock::Resource(embedded) => {
                if let EmbeddedResourceResource::TextResourceContents(resource) = &embedded.resource
                {
                    text.push_str(&format!(
                        "\n<context ref=\"{}\">\n{}\n</context>\n",
                        resource.uri, resource.text
                    ));
                }
            }
            _ => {}
        }
    }
    text
}

//! `lc-agent`: the command line of lc-agent.
//!
//! - `lc-agent run "TASK" [--root DIR [--shell]] [--model NAME | --script FILE.json]
//!   [--agent FILE] [--mcp FILE] [--skills DIR] [--memory] [--yes] [--sessions DIR | --redis URL]` runs one task
//!   with a deep agent (see `run.rs` for streaming, approvals, exit codes).
//! - `lc-agent exec [PROMPT | -] [--json] [--output-schema FILE]` and
//!   `lc-agent exec resume SESSION [PROMPT] [--fork]` run one prompt to
//!   completion with no terminal UI; nothing is asked (see `exec/`).
//! - `lc-agent chat [--session ID] ...` a conversation: interactive on a
//!   terminal (line editing, slash commands, Markdown, Ctrl-C cancels a
//!   turn), one line per turn when piped; resumes a saved session (see
//!   `chat.rs`).
//!
//! Global flags: `-v`/`-q` (how much the logs on stderr say; `RUST_LOG`
//! overrides; `logging.rs`), `--no-color` (as `NO_COLOR`).
//! - `lc-agent tool <name> '<json args>' (--root DIR [--shell] | --state FILE.json)`
//!   runs one file-tool call and prints what the model would see;
//!   `lc-agent tool --list [--root DIR [--shell]]` prints the deep agent's
//!   tools as OpenAI definitions (JSON).
//! - `lc-agent mcp --root DIR [--shell] [--http ADDR]` serves the file tools
//!   to MCP clients over stdio or streamable HTTP (see `mcp.rs`);
//!   `lc-agent mcp login NAME --mcp FILE` logs in to an OAuth-protected
//!   remote MCP server (see `mcp_login.rs`).
//! - `lc-agent sessions list | show <id> [--mermaid] | rm <id> | export <id>`
//!   `[--user NAME] [--sessions DIR | --redis URL]` inspects saved sessions.
//! - `lc-agent serve [--addr 127.0.0.1:8080] [--root DIR] [--redis URL] ...`
//!   serves the agent over HTTP and a web page (see `serve.rs`).
//! - `lc-agent acp [run's agent flags]` serves the agent to an editor over
//!   the Agent Client Protocol on stdio (see `acp/`).
//! - `lc-agent runs list | show <run> [--events] | cancel <run>`
//!   `[--user NAME] [--sessions DIR | --redis URL]` inspects the server's runs.
//!
//! `run` and `chat` save the session after every node; Ctrl-C stops a run
//! and keeps what ran (`interrupt.rs`, exit code 130).
//!
//! # Layout
//!
//! ```text
//! main.rs        the command tree; one tokio runtime; error::exit makes the exit code
//! args.rs        flag groups shared by subcommands: ModelArgs (--model | --script),
//!                WorkspaceArgs (--root [--shell [--sandbox MODE]]), StoreArgs (--sessions | --redis [--prefix])
//!                — a flag shared by run/chat/serve is added there, once
//! permissions.rs --allow/--deny/--ask OPS:GLOBS: path rules in command-line order
//! agent.rs       AgentArgs and Agent: flags -> Blueprint -> a session with its agent
//!                (checkpointed, MCP connected), the turn loop with approvals
//! hooks.rs       HookArgs (--settings FILE, --no-hooks): the user's, the project's and the
//!                flag's settings files -> the hooks run, serve's from its own flags only
//! trust.rs       trusting a project (--trust-project, a y/N question, $LC_AGENT_HOME/
//!                trusted-projects.json) before its hooks, .mcp.json and blueprint are used
//! logging.rs     the tracing subscriber: library warnings on stderr (-v, -q, RUST_LOG)
//! console.rs     what the terminal shows: streamed answer (Markdown on a terminal), progress
//!                lines, warnings for cut-off/empty answers, spinner, footer per turn
//!                — and `out`, the one writer of stdout (a closed pipe ends output quietly)
//! highlight.rs   fenced code of an answer in colour on a terminal (syntect)
//! attach.rs      `@path/to/image.png` in a message: the image attached as an image part
//! input.rs       where lines come from: piped stdin, or the line editor (rustyline)
//! commands.rs    the chat's slash commands (never sent to the model)
//! rewind.rs      /rewind and /undo: back to before a message (conversation, files, both)
//! mode.rs        the permission mode: --mode, /mode, the bypass warning on stderr
//! approve.rs     approval questions: the menu, the diff preview, the session's policy
//! elicit.rs      an MCP server's request for input (a form), asked where the approvals are
//! error.rs       CliError (kind = exit code) and exit; messages in the command line's terms
//! interrupt.rs   Ctrl-C: stop the run, keep the session
//! run.rs chat.rs tool.rs sessions.rs mcp.rs (mcp_login.rs) serve.rs runs.rs   one file per subcommand
//! exec/          `exec`: the headless run (mod.rs), its JSON-lines stream made from
//!                RunEvent (events.rs), --output-schema (output_schema.rs)
//! acp/           `acp`: the Agent Client Protocol (mod.rs the connection, session.rs the turns
//!                and permission requests, updates.rs RunEvent -> session/update, client_fs.rs
//!                the file backend the editor serves)
//! fork.rs        sessions fork / diff: branches of saved sessions
//! session_rewind.rs sessions rewind --to NODE | --redo: rewind without a chat
//! import.rs      sessions import: exported sessions and LC Agent's saved networks (files, Redis)
//! ```
//!
//! Which workspace, which sessions and which agent are decided in the
//! library (`Workspace`, `ListConfig`, `Blueprint::resolve`); this crate
//! only turns flags into them.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod acp;
mod agent;
mod approve;
mod args;
mod attach;
mod chat;
mod commands;
mod console;
mod elicit;
mod error;
mod exec;
mod fork;
mod highlight;
mod hooks;
mod import;
mod input;
mod interrupt;
mod logging;
mod mcp;
mod mcp_login;
mod mode;
mod permissions;
mod rewind;
mod run;
mod runs;
mod serve;
mod session_rewind;
mod sessions;
mod tool;
mod trust;

/// Set, the binary prints the source folder it was built from and exits
/// (the terminal tests check that they drive this checkout's build).
const BUILT_FROM_VAR: &str = "LC_AGENT_PRINT_BUILT_FROM";

/// The lc-agent command line.
#[derive(Debug, Parser)]
#[command(
    name = "lc-agent",
    version,
    about = "Run lc-agent tools and inspect sessions"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// How much stderr says, and in colour or not.
    #[command(flatten)]
    log: logging::LogArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one task with a deep agent (file tools, todos, sub-agents,
    /// approvals); the final answer is the last line on stdout.
    Run(run::RunArgs),
    /// Run one prompt to completion with no terminal UI (scripts, CI):
    /// `--json` prints one JSON event per line; `exec resume SESSION`
    /// continues a session.
    Exec(exec::ExecArgs),
    /// A conversation with the deep agent, one line per turn; resumes a
    /// saved session with --session.
    Chat(chat::ChatArgs),
    /// Run one tool call and print exactly what the model would see.
    Tool(tool::ToolArgs),
    /// List, show, remove or export saved sessions.
    Sessions(sessions::SessionsArgs),
    /// Serve the file tools to MCP clients (stdio, or streamable HTTP
    /// with --http).
    Mcp(mcp::McpArgs),
    /// Serve the agent over HTTP: OpenAI-compatible chat completions,
    /// tool endpoints, the session API and a web page.
    Serve(serve::ServeArgs),
    /// List, show or cancel the runs of `lc-agent serve` (its sessions store).
    Runs(runs::RunsArgs),
    /// Serve the agent to an editor over the Agent Client Protocol
    /// (JSON-RPC on stdin/stdout; Zed, JetBrains, Neovim).
    Acp(acp::AcpArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    // Started as a sandbox's network helper (a domain allow-list under
    // bubblewrap): serve as one and exit.
    lc_agent_filesystem::run_helper_if_asked();
    // For the tests: the checkout this binary was built from (a target
    // directory shared by several checkouts may hold another's binary).
    if std::env::var_os(BUILT_FROM_VAR).is_some() {
        console::out(concat!(env!("CARGO_MANIFEST_DIR"), "\n"));
        return ExitCode::SUCCESS;
    }
    let cli = Cli::parse();
    // `serve` installs its own subscriber (access lines, `--log-format`).
    if !matches!(cli.command, Command::Serve(_)) {
        logging::init(&cli.log);
    }
    console::set_color(cli.log.color());
    // What a model server cannot do is remembered across runs (under
    // $LC_AGENT_HOME/cache, else the user's cache directory).
    lc_agent::remember_servers_in(None);
    let result = match cli.command {
        Command::Run(args) => run::run(args).await,
        Command::Exec(args) => exec::run(args).await,
        Command::Chat(args) => chat::run(args).await,
        Command::Tool(args) => tool::run(args).await,
        Command::Sessions(args) => sessions::run(args).await,
        Command::Mcp(args) => mcp::run(args).await,
        Command::Serve(args) => serve::run(args).await,
        Command::Runs(args) => runs::run(args).await,
        Command::Acp(args) => acp::run(args).await,
    };
    error::exit(result)
}

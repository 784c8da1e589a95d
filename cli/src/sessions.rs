//! `lc-agent sessions`: list, show, remove and export saved sessions.
//!
//! ```text
//! lc-agent sessions [--user NAME] [--sessions DIR | --redis URL [--prefix P]] list [--offset N] [--limit N] [--memory]
//! lc-agent sessions show <ID> [--mermaid] [--ids]
//! lc-agent sessions rm <ID>
//! lc-agent sessions prune [--older-than AGE] [--keep N] [--dry-run]
//! lc-agent sessions export <ID> [--pretty]
//! lc-agent sessions fork <ID> --at <NODE> | diff <A> <B>   (fork.rs)
//! lc-agent sessions rewind <ID> --to <NODE> [--files|--conversation|--both] | --redo   (session_rewind.rs)
//! lc-agent sessions import <FILE|DIR>... | --from-redis URL [--keys PATTERN]   (import.rs)
//! lc-agent sessions --redis URL [--prefix P] migrate
//! ```
//!
//! Sessions come from the JSON list (`--sessions DIR`, as `run`, `chat` and
//! `serve` name it; default `$LC_AGENT_HOME/sessions`, else
//! `~/.lc-agent/sessions`) or, with `--redis`, from Redis. The old spelling
//! `--root DIR` still works and says it is now `--sessions`. `<ID>` may
//! be a unique prefix of a session id. `migrate` moves Redis sessions
//! saved before the per-user hash tag (`<prefix>:user:<user>:...`) into
//! the current layout (`<prefix>:user:{<user>}:...`), for every user.
//!
//! `prune` deletes the user's sessions not saved for `--older-than` (an
//! age: `30d`, `12h`, ...) and/or all but the `--keep` most recently saved
//! ones (both: a session goes when either rule says so); `--dry-run` lists
//! them and deletes nothing. Only the `--user`'s sessions are looked at,
//! on the JSON list and on Redis alike. With `--redis`, `list --memory`
//! adds the memory Redis uses for each session (`MEMORY USAGE` of its
//! keys, summed) and `show` prints it.
//!
//! `list` shows each session's tokens (`~` marks an estimate) and cost;
//! `show` a `usage` line with the totals (sub-agents included) and one per
//! model. Costs come from the one price table, [`lc_agent::Prices`]
//! (`$LC_AGENT_HOME/prices.toml` extends it).

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use lc_agent::{ListError, ListQuery, Prices, Saving, SessionInfo, UsageExt, UsageTotals};
use lc_agent::{Message, RunnableNetwork, ToolStatus};
use lc_agent_deepagent::{todos_of, TodoStatus};

use crate::args::{find_session, StoreArgs};
use crate::console::thousands;
use crate::error::{CliError, CliResult};

/// Options of `lc-agent sessions`.
#[derive(Debug, Args)]
pub(crate) struct SessionsArgs {
    /// Whose sessions (namespace).
    #[arg(long, global = true, default_value = "default")]
    pub(crate) user: String,
    /// Where sessions live.
    #[command(flatten)]
    pub(crate) store: StoreArgs,
    /// The old name of --sessions.
    #[arg(long, global = true, hide = true, value_name = "DIR", conflicts_with_all = ["sessions", "redis"])]
    pub(crate) root: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: SessionsCommand,
}

/// `lc-agent sessions` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum SessionsCommand {
    /// Lists sessions, most recently updated first.
    List {
        /// Sessions to skip.
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// Page size.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Add the memory Redis uses for each session (needs --redis).
        #[arg(long)]
        memory: bool,
    },
    /// Deletes the user's sessions not saved for a while and/or all but the
    /// most recently saved ones.
    Prune {
        /// Delete sessions not saved for this long (e.g. 30d, 12h, 90m).
        #[arg(long, value_name = "AGE", value_parser = crate::args::parse_age)]
        older_than: Option<std::time::Duration>,
        /// Keep only this many sessions, the most recently saved.
        #[arg(long, value_name = "N")]
        keep: Option<usize>,
        /// List what would be deleted; delete nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Prints a session's conversation.
    Show {
        /// Session id (or a unique prefix).
        id: String,
        /// Print the graph as a Mermaid flowchart too.
        #[arg(long)]
        mermaid: bool,
        /// List the current branch's nodes with the ids (and turn:N) that
        /// `sessions fork --at` and `sessions rewind --to` take.
        #[arg(long)]
        ids: bool,
    },
    /// Deletes a session.
    Rm {
        /// Session id (or a unique prefix).
        id: String,
    },
    /// Prints a session's saved JSON.
    Export {
        /// Session id (or a unique prefix).
        id: String,
        /// Indent the JSON.
        #[arg(long)]
        pretty: bool,
    },
    /// Makes a new session of a node and what is above it (ids kept).
    Fork {
        /// Session id (or a unique prefix).
        id: String,
        /// The node to fork at (an id or a unique prefix).
        #[arg(long, value_name = "NODE")]
        at: String,
    },
    /// Puts a session's files and/or conversation back as they were at a
    /// node (what the shell changed too, where the workspace was
    /// recorded); `--redo` takes the last rewind back.
    Rewind {
        /// Session id (or a unique prefix).
        id: String,
        /// Where to: a node id (or unique prefix), turn:N (the end of your
        /// N-th message's turn), or start.
        #[arg(
            long,
            value_name = "NODE",
            required_unless_present = "redo",
            conflicts_with = "redo"
        )]
        to: Option<String>,
        /// The files only.
        #[arg(long, conflicts_with_all = ["conversation", "both", "redo"])]
        files: bool,
        /// The conversation only.
        #[arg(long, conflicts_with_all = ["both", "redo"])]
        conversation: bool,
        /// Both (the default).
        #[arg(long, conflicts_with = "redo")]
        both: bool,
        /// Take the last rewind back (until the next turn).
        #[arg(long)]
        redo: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Compares two sessions from where their branches part.
    Diff {
        /// One session (id or unique prefix).
        a: String,
        /// The other.
        b: String,
    },
    /// Saves sessions exported by `sessions export`, or networks saved by
    /// NVIDIA LC Agent (its JsonNetworkList files or RedisNetworkList keys),
    /// never overwriting a session; the sources are only read.
    Import {
        /// JSON files, or directories (every `*.json` in them).
        #[arg(required_unless_present = "from_redis")]
        sources: Vec<PathBuf>,
        /// Read LC Agent networks from this Redis server (`redis://...`).
        #[arg(long, value_name = "URL")]
        from_redis: Option<String>,
        /// With --from-redis: the keys to read (a pattern); a hash gives one
        /// network per field (LC Agent's layout), a string one network.
        #[arg(
            long,
            value_name = "PATTERN",
            default_value = "lc_agent:user:*:entries"
        )]
        keys: String,
    },
    /// Moves Redis sessions of every user from the key layout before
    /// per-user hash tags into the current one (needs --redis; idempotent).
    Migrate,
}

/// Runs `lc-agent sessions`, printing to stdout.
pub(crate) async fn run(mut args: SessionsArgs) -> CliResult {
    if let Some(root) = args.root.take() {
        eprintln!(
            "warning: `lc-agent sessions --root` is now `--sessions` (as in run, chat and serve)"
        );
        args.store.sessions = Some(root);
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let done = print(args, &mut out).await.and_then(|()| Ok(out.flush()?));
    match &done {
        // `sessions list | head -1`: the reader has what it wanted.
        Err(e) if crate::error::is_broken_pipe(e.as_ref()) => return Ok(()),
        _ => {}
    }
    done.map_err(|e| match e.downcast::<CliError>() {
        Ok(e) => *e,
        Err(e) => CliError::failed(e.to_string()),
    })
}

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Does the subcommand, writing to `out`.
async fn print(args: SessionsArgs, out: &mut dyn Write) -> Result<(), Error> {
    let lists = args.store.lists()?;
    let list = lists.user(&args.user)?;
    let list = list.as_ref();
    let redis = match lists.redis() {
        Some(redis) => Some(redis.with_user(&args.user)?),
        None => None,
    };
    match args.command {
        SessionsCommand::List {
            offset,
            limit,
            memory,
        } => {
            let page = list
                .list(&ListQuery {
                    offset,
                    limit,
                    ..ListQuery::default()
                })
                .await?;
            let sizes = match (&redis, memory) {
                (_, false) => None,
                (Some(redis), true) => {
                    let mut sizes = Vec::with_capacity(page.sessions.len());
                    for s in &page.sessions {
                        sizes.push(redis.memory_usage(s.id).await?);
                    }
                    Some(sizes)
                }
                (None, true) => {
                    return Err(CliError::usage(
                        "--memory reports the memory Redis uses: give --redis URL (on the JSON list, BYTES is the session's size)",
                    )
                    .into())
                }
            };
            print_page(out, &page.sessions, sizes.as_deref(), page.total, offset)?;
            for e in &page.errors {
                writeln!(out, "unreadable: {e}")?;
            }
        }
        SessionsCommand::Prune {
            older_than,
            keep,
            dry_run,
        } => {
            if older_than.is_none() && keep.is_none() {
                return Err(
                    CliError::usage("say what to prune: --older-than AGE and/or --keep N").into(),
                );
            }
            prune(list, older_than, keep, dry_run, out).await?;
        }
        SessionsCommand::Show { id, mermaid, ids } => {
            let id = find_session(list, &id).await?;
            let net = list.load(id).await?;
            show(out, &net)?;
            if ids {
                writeln!(out)?;
                crate::fork::show_ids(out, &net)?;
            }
            if let Some(redis) = &redis
                && let Some(bytes) = redis.memory_usage(id).await?
            {
                writeln!(out, "memory   {} bytes in redis", thousands(bytes))?;
            }
            if mermaid {
                writeln!(out)?;
                writeln!(out, "{}", net.to_mermaid())?;
            }
        }
        SessionsCommand::Rm { id } => {
            let id = find_session(list, &id).await?;
            if list.delete(id).await? {
                crate::session_rewind::forget_workspace_records(id);
                writeln!(out, "deleted {id}")?;
            } else {
                return Err(ListError::NotFound { id }.into());
            }
        }
        SessionsCommand::Export { id, pretty } => {
            let id = find_session(list, &id).await?;
            if pretty {
                writeln!(out, "{}", list.load(id).await?.to_json_pretty()?)?;
            } else {
                writeln!(out, "{}", list.load_json(id).await?)?;
            }
        }
        SessionsCommand::Fork { id, at } => crate::fork::fork(list, &id, &at, out).await?,
        SessionsCommand::Rewind {
            id,
            to,
            files,
            conversation,
            both: _,
            redo,
            json,
        } => {
            let what = if files {
                lc_agent_filesystem::RewindWhat::Files
            } else if conversation {
                lc_agent_filesystem::RewindWhat::Conversation
            } else {
                lc_agent_filesystem::RewindWhat::Both
            };
            crate::session_rewind::rewind(list, &id, to.as_deref(), what, redo, json, out).await?
        }
        SessionsCommand::Diff { a, b } => crate::fork::diff(list, &a, &b, out).await?,
        SessionsCommand::Import {
            sources,
            from_redis,
            keys,
        } => {
            let redis = from_redis.as_deref().map(|url| (url, keys.as_str()));
            crate::import::import(list, &sources, redis, out).await?
        }
        SessionsCommand::Migrate => {
            let Some(redis) = lists.redis() else {
                return Err("migrate moves Redis keys: give --redis URL".into());
            };
            let done = redis.migrate_legacy_keys().await?;
            writeln!(
                out,
                "migrated {} session(s) of {} user(s); {} legacy copies dropped (already stored at the same or a newer revision)",
                done.moved, done.users, done.superseded
            )?;
        }
    }
    Ok(())
}

/// Deletes (or with `dry_run` lists) the list user's sessions older than
/// `older_than` and those past the `keep` most recently saved.
async fn prune(
    list: &dyn lc_agent::NetworkList,
    older_than: Option<std::time::Duration>,
    keep: Option<usize>,
    dry_run: bool,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let now = chrono::Utc::now();
    // Newest first, as listed.
    let sessions: Vec<SessionInfo> = list
        .list_everything()
        .await?
        .into_iter()
        .filter_map(Result::ok)
        .collect();
    let mut gone = 0;
    for (rank, s) in sessions.iter().enumerate() {
        let old = older_than.is_some_and(|age| {
            now.signed_duration_since(s.updated_at)
                .to_std()
                .is_ok_and(|a| a > age)
        });
        let extra = keep.is_some_and(|n| rank >= n);
        if !(old || extra) {
            continue;
        }
        let why = if old { "older" } else { "beyond --keep" };
        let updated = s.updated_at.format("%Y-%m-%d %H:%M:%S");
        if dry_run {
            writeln!(out, "would delete {} ({updated}, {why}) {}", s.id, s.name)?;
            gone += 1;
        } else if list.delete(s.id).await? {
            crate::session_rewind::forget_workspace_records(s.id);
            writeln!(out, "deleted {} ({updated}, {why}) {}", s.id, s.name)?;
            gone += 1;
        }
    }
    let verb = if dry_run { "would delete" } else { "deleted" };
    writeln!(
        out,
        "{verb} {gone} of {} session(s) of user `{}`",
        sessions.len(),
        list.user()
    )?;
    Ok(())
}

fn print_page(
    out: &mut dyn Write,
    sessions: &[SessionInfo],
    memory: Option<&[Option<u64>]>,
    total: usize,
    offset: usize,
) -> std::io::Result<()> {
    let memory_head = if memory.is_some() {
        "     MEMORY  "
    } else {
        ""
    };
    writeln!(
        out,
        "{:<36}  {:<19}  {:>5}  {:>9}  {:>4}  {:>9}  {:>9}  {memory_head}NAME",
        "ID", "UPDATED (UTC)", "NODES", "BYTES", "REV", "TOKENS", "COST"
    )?;
    for (i, s) in sessions.iter().enumerate() {
        let prices = lc_agent_deepagent::session_prices_in(&s.metadata);
        let (tokens, cost) = usage_columns(&s.metadata, &prices);
        let mem = match memory {
            None => String::new(),
            Some(sizes) => format!(
                "{:>11}  ",
                sizes
                    .get(i)
                    .copied()
                    .flatten()
                    .map_or_else(|| "-".to_string(), |b| b.to_string())
            ),
        };
        writeln!(
            out,
            "{:<36}  {:<19}  {:>5}  {:>9}  {:>4}  {:>9}  {:>9}  {mem}{}",
            s.id,
            s.updated_at.format("%Y-%m-%d %H:%M:%S"),
            s.node_count,
            s.bytes,
            s.revision,
            tokens,
            cost,
            s.name
        )?;
    }
    let shown = sessions.len();
    let first = if shown == 0 { offset } else { offset + 1 };
    writeln!(out, "{first}-{} of {total}", offset + shown)
}

/// A session's tokens (`~` before an estimate) and cost (`-` without a
/// price or usage), from the totals kept in its metadata.
fn usage_columns(
    meta: &serde_json::Map<String, serde_json::Value>,
    prices: &Prices,
) -> (String, String) {
    let Some(totals) = meta
        .get(lc_agent::USAGE_KEY)
        .and_then(|v| serde_json::from_value::<UsageTotals>(v.clone()).ok())
    else {
        return ("-".into(), "-".into());
    };
    let mark = if totals.all.is_estimated() { "~" } else { "" };
    let tokens = format!("{mark}{}", thousands(totals.all.total_tokens));
    let cost = prices.cost(&totals);
    let cost = match cost.usd {
        Some(usd) if cost.unpriced.is_empty() => format!("${usd:.4}"),
        Some(usd) => format!("${usd:.4}+"),
        None => "-".into(),
    };
    (tokens, cost)
}

/// The `usage` lines of `sessions show`: totals, then one line per model.
fn show_usage(out: &mut dyn Write, net: &RunnableNetwork) -> std::io::Result<()> {
    let totals = net.usage();
    let inherited = Some(net.inherited_usage()).filter(|t| !t.is_empty());
    if totals.is_empty() && inherited.is_none() {
        return Ok(());
    }
    let prices = lc_agent_deepagent::session_prices(net);
    let line = |counts: &lc_agent::TokenCounts, cost: Option<f64>| {
        let mut parts = vec![
            format!("{} in", thousands(counts.prompt_tokens)),
            format!("{} out", thousands(counts.completion_tokens)),
        ];
        if counts.cache_read_tokens > 0 {
            parts.push(format!("{} cached", thousands(counts.cache_read_tokens)));
        }
        if counts.reasoning_tokens > 0 {
            parts.push(format!("{} reasoning", thousands(counts.reasoning_tokens)));
        }
        parts.push(format!("{} call(s)", counts.calls));
        if counts.is_estimated() {
            parts.push(format!("{} estimated", counts.estimated_calls));
        }
        parts.push(cost.map_or_else(|| "no price".to_string(), |c| format!("${c:.4}")));
        parts.join(" · ")
    };
    let cost = prices.cost(&totals);
    let total_cost = cost.usd.filter(|_| cost.unpriced.is_empty());
    writeln!(out, "usage    {}", line(&totals.all, total_cost))?;
    for (model, counts) in &totals.by_model {
        let cost = prices.of(model).map(|p| p.cost(counts));
        writeln!(out, "  {model}: {}", line(counts, cost))?;
    }
    // A fork: what its copied nodes cost, counted in the session it came
    // from (not in the line above).
    if let Some(inherited) = inherited {
        let cost = prices.cost(&inherited);
        let from = net
            .metadata_value("forked_from")
            .and_then(|f| f.get("session")?.as_str().map(str::to_string))
            .unwrap_or_else(|| "-".into());
        writeln!(
            out,
            "inherited {} (from {from}, counted there)",
            line(
                &inherited.all,
                cost.usd.filter(|_| cost.unpriced.is_empty())
            )
        )?;
    }
    Ok(())
}

/// One line per image of a message: `[image image/png, 1234 bytes]` or
/// `[image <url>]`.
fn write_images(out: &mut dyn Write, parts: &[lc_agent::ContentPart]) -> std::io::Result<()> {
    for part in parts {
        match part {
            lc_agent::ContentPart::Image(image) => match (image.data(), image.url()) {
                (Some(data), _) => writeln!(
                    out,
                    "  [image {}, {} bytes]",
                    image.media_type().unwrap_or("?"),
                    data.len() / 4 * 3
                )?,
                (None, url) => writeln!(out, "  [image {}]", url.unwrap_or("?"))?,
            },
            lc_agent::ContentPart::Text { text } => writeln!(out, "  {text}")?,
            _ => {}
        }
    }
    Ok(())
}

fn show(out: &mut dyn Write, net: &RunnableNetwork) -> std::io::Result<()> {
    let meta = net.metadata();
    let get = |k: &str| {
        meta.get(k)
            .map(|v| v.as_str().map_or_else(|| v.to_string(), String::from))
            .unwrap_or_else(|| "-".into())
    };
    writeln!(out, "session  {}", net.id())?;
    writeln!(out, "name     {}", net.name())?;
    writeln!(
        out,
        "revision {}   created {}   updated {}   nodes {}",
        get(lc_agent::REVISION_KEY),
        get(lc_agent::CREATED_AT_KEY),
        get(lc_agent::UPDATED_AT_KEY),
        net.len()
    )?;
    show_usage(out, net)?;
    writeln!(out)?;
    let history = net.history();
    let messages: Vec<&Message> = {
        let mut m: Vec<&Message> = history.iter_rev().collect();
        m.reverse();
        m
    };
    for message in messages {
        match message {
            Message::System { content } => writeln!(out, "[system] {content}")?,
            Message::Human { content, parts } => {
                writeln!(out, "[human] {content}")?;
                write_images(out, parts)?;
            }
            Message::Ai {
                content,
                tool_calls,
            } => {
                if !content.is_empty() || tool_calls.is_empty() {
                    writeln!(out, "[ai] {content}")?;
                }
                for call in tool_calls {
                    writeln!(
                        out,
                        "[ai] -> {}({}) [{}]",
                        call.name, call.arguments, call.id
                    )?;
                }
            }
            Message::Tool {
                content,
                tool_call_id,
                name,
                status,
                ..
            } => writeln!(
                out,
                "[tool {} {}{}] {content}",
                name.as_deref().unwrap_or("?"),
                tool_call_id,
                if *status == ToolStatus::Ok {
                    ""
                } else {
                    " error"
                }
            )?,
        }
    }
    let pending = net.pending().len();
    if pending > 0 {
        writeln!(out, "({pending} node(s) not invoked yet)")?;
    }
    let todos = todos_of(net);
    if !todos.is_empty() {
        writeln!(out, "\ntodos")?;
        for todo in todos {
            let mark = match todo.status {
                TodoStatus::Pending => "[ ]",
                TodoStatus::InProgress => "[~]",
                TodoStatus::Completed => "[x]",
            };
            writeln!(out, "  {mark} {}", todo.content)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use lc_agent::NetworkList;
    use lc_agent::Saving;
    use lc_agent::{FnTool, HumanNode, ScriptedChatModel, ToolOutput, Turn};
    use serde_json::json;

    /// The shape `main.rs` gives it: `lc-agent sessions ...`.
    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        top: Top,
    }

    #[derive(Subcommand)]
    enum Top {
        Sessions(SessionsArgs),
    }

    /// A temporary directory (the CLI crate has no `tempfile`).
    struct TempDir(std::path::PathBuf);

    impl TempDir {
        fn new() -> Self {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let path = std::env::temp_dir()
                .join(format!("lc-agent-cli-test-{}-{nanos}", std::process::id()));
            std::fs::create_dir_all(&path).expect("temp dir");
            Self(path)
        }

        fn path(&self) -> &std::path::Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    async fn exec(root: &std::path::Path, argv: &[&str]) -> Result<String, Error> {
        let mut full = vec!["lc-agent", "sessions", "--sessions"];
        let root = root.display().to_string();
        full.push(&root);
        full.extend_from_slice(argv);
        let Top::Sessions(args) = Cli::try_parse_from(full)?.top;
        let mut out = Vec::new();
        print(args, &mut out).await?;
        Ok(String::from_utf8(out)?)
    }

    async fn saved_conversation(root: &std::path::Path) -> RunnableNetwork {
        let net = RunnableNetwork::builder()
            .name("weather chat")
            .default_node("chat")
            .chat_model("scripted")
            .model(
                "scripted",
                ScriptedChatModel::new([
                    Turn::call("c1", "weather", json!({"city": "Oslo"})),
                    Turn::text("It is sunny in Oslo."),
                ]),
            )
            .tool(FnTool::new(
                "weather",
                "Weather.",
                json!({"type": "object"}),
                |_, _| async { Ok(ToolOutput::ok("sunny")) },
            ))
            .build();
        {
            let _s = net.enter();
            HumanNode::new("Weather in Oslo?");
        }
        net.invoke().await.expect("invoke");
        lc_agent::JsonNetworkList::new(root)
            .save(&net)
            .await
            .expect("save");
        net
    }

    #[tokio::test]
    async fn list_show_export_rm() {
        let dir = TempDir::new();
        let net = saved_conversation(dir.path()).await;
        let id = net.id().to_string();

        let listed = exec(dir.path(), &["list"]).await.expect("list");
        assert!(
            listed.lines().nth(1).expect("row").starts_with(&id),
            "{listed}"
        );
        assert!(listed.contains("weather chat"));
        assert!(listed.trim_end().ends_with("1-1 of 1"), "{listed}");

        let shown = exec(dir.path(), &["show", &id[..8]]).await.expect("show");
        let convo: Vec<&str> = shown.lines().skip_while(|l| !l.starts_with('[')).collect();
        let usage = shown
            .lines()
            .find(|l| l.starts_with("usage"))
            .expect(&shown);
        assert!(usage.contains("2 call(s) · 2 estimated"), "{shown}");
        assert_eq!(
            convo,
            [
                "[human] Weather in Oslo?",
                r#"[ai] -> weather({"city":"Oslo"}) [c1]"#,
                "[tool weather c1] sunny",
                "[ai] It is sunny in Oslo.",
            ]
        );
        let with_graph = exec(dir.path(), &["show", &id, "--mermaid"])
            .await
            .expect("show");
        assert!(with_graph.contains(&net.to_mermaid()));

        let exported = exec(dir.path(), &["export", &id]).await.expect("export");
        assert_eq!(exported.trim_end(), net.to_json().expect("json"));
        let pretty = exec(dir.path(), &["export", &id, "--pretty"])
            .await
            .expect("export");
        assert_eq!(pretty.trim_end(), net.to_json_pretty().expect("json"));

        assert_eq!(
            exec(dir.path(), &["rm", &id]).await.expect("rm").trim(),
            format!("deleted {id}")
        );
        assert!(exec(dir.path(), &["rm", &id]).await.is_err());
        assert!(exec(dir.path(), &["list"])
            .await
            .expect("list")
            .contains("0-0 of 0"));
        assert!(exec(dir.path(), &["--user", "../x", "list"]).await.is_err());
    }

    #[test]
    fn show_lists_the_todos() {
        let net = RunnableNetwork::new();
        net.set_metadata(
            lc_agent_deepagent::TODOS_KEY,
            json!([
                {"content": "Read the code", "status": "completed"},
                {"content": "Fix the bug", "status": "in_progress"},
                {"content": "Test it", "status": "pending"}
            ]),
        );
        let mut out = Vec::new();
        show(&mut out, &net).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.ends_with("todos\n  [x] Read the code\n  [~] Fix the bug\n  [ ] Test it\n"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn migrate_needs_redis() {
        let dir = TempDir::new();
        let e = exec(dir.path(), &["migrate"])
            .await
            .expect_err("no --redis");
        assert!(e.to_string().contains("--redis"), "{e}");
    }
}

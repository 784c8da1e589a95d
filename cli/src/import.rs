//! `lc-agent sessions import`: sessions from outside the session list.
//!
//! ```text
//! sessions import <FILE|DIR>...        JSON files (a directory: its *.json, by name)
//! sessions import --from-redis URL [--keys PATTERN]
//!                                      every key matching PATTERN (SCAN): a hash holds
//!                                      one network per field, a string one network
//! ```
//!
//! A document in lc-agent's own format (`"format": "lc-agent/1"`, what
//! `sessions export` prints) is saved as it is. Anything else is read as
//! a network saved by NVIDIA LC Agent (`JsonNetworkList` writes one file
//! per network, `RedisNetworkList` a hash `lc_agent:user:<name>:entries`
//! of network id -> JSON) and converted by
//! [`LcAgentImport::from_lc_agent`]: its notes (what could not be carried
//! over) are printed under the `imported` line. A session whose id is in
//! the list already is refused, never overwritten; the sources are only
//! read. Every source is tried; the command fails when one was not
//! imported, naming each.

use std::io::Write;
use std::path::{Path, PathBuf};

use lc_agent::{LcAgentImport, ListError, NetworkList, RunnableNetwork, Saving};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// One document to import: where it came from, and its text.
struct Source {
    label: String,
    text: String,
}

/// `sessions import`: imports every source, prints one line per imported
/// session (and its notes), fails naming the sources not imported.
pub(crate) async fn import(
    list: &dyn NetworkList,
    paths: &[PathBuf],
    redis: Option<(&str, &str)>,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let mut failed = Vec::new();
    let mut sources = Vec::new();
    for path in paths {
        match read_path(path, &mut sources) {
            Ok(0) if path.is_dir() => {
                failed.push(format!("{}: no *.json file in it", path.display()))
            }
            Ok(_) => {}
            Err(e) => failed.push(e),
        }
    }
    if let Some((url, pattern)) = redis {
        let before = sources.len();
        read_redis(url, pattern, &mut sources).await?;
        if sources.len() == before {
            failed.push(format!("{url}: no key matches `{pattern}`"));
        }
    }
    for source in &sources {
        if let Err(e) = import_one(list, source, out).await {
            failed.push(format!("{}: {e}", source.label));
        }
    }
    match failed.len() {
        0 => Ok(()),
        1 => Err(failed.remove(0).into()),
        n => Err(format!("{n} sources not imported:\n{}", failed.join("\n")).into()),
    }
}

async fn import_one(
    list: &dyn NetworkList,
    source: &Source,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let value: serde_json::Value =
        serde_json::from_str(&source.text).map_err(|e| format!("not JSON ({e})"))?;
    let (net, notes, from) = if value.get("format").is_some() {
        let net = RunnableNetwork::from_value(value)
            .map_err(|e| format!("not an exported lc-agent session: {e}"))?;
        (net, Vec::new(), String::new())
    } else {
        let (net, notes) = RunnableNetwork::from_lc_agent(&value)
            .map_err(|e| format!("neither an lc-agent session nor an LC Agent network: {e}"))?;
        (net, notes, format!(" from LC Agent ({})", source.label))
    };
    match list.load(net.id()).await {
        Ok(_) => {
            return Err(format!(
                "session {} exists already; import does not overwrite it (delete it first with `sessions rm`)",
                net.id()
            )
            .into())
        }
        Err(ListError::NotFound { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    list.save(&net).await?;
    writeln!(out, "imported {} ({} nodes){from}", net.id(), net.len())?;
    for note in notes {
        writeln!(out, "  note: {note}")?;
    }
    Ok(())
}

/// A file, or a directory's `*.json` files in name order (LC Agent's
/// `0000_Name.json` order); returns how many were read.
fn read_path(path: &Path, sources: &mut Vec<Source>) -> Result<usize, String> {
    let read = |p: &Path| {
        std::fs::read_to_string(p)
            .map(|text| Source {
                label: p.display().to_string(),
                text,
            })
            .map_err(|e| format!("cannot read {}: {e}", p.display()))
    };
    if !path.is_dir() {
        sources.push(read(path)?);
        return Ok(1);
    }
    let entries =
        std::fs::read_dir(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    for file in &files {
        sources.push(read(file)?);
    }
    Ok(files.len())
}

/// Every key matching `pattern` (SCAN, so a busy server is not blocked):
/// a hash gives one source per field, a string one source; keys of other
/// types (LC Agent's `timeline` sorted sets) are skipped.
async fn read_redis(url: &str, pattern: &str, sources: &mut Vec<Source>) -> Result<(), Error> {
    use redis::AsyncCommands;
    let client = redis::Client::open(url).map_err(|e| format!("{url}: {e}"))?;
    let mut con = client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| format!("cannot reach Redis at {url}: {e}"))?;
    let mut keys: Vec<String> = {
        let mut iter = con.scan_match::<_, String>(pattern).await?;
        let mut keys = Vec::new();
        while let Some(key) = iter.next_item().await {
            keys.push(key?);
        }
        keys
    };
    keys.sort();
    for key in keys {
        let kind: String = redis::cmd("TYPE").arg(&key).query_async(&mut con).await?;
        match kind.as_str() {
            "hash" => {
                let fields: Vec<(String, String)> = con.hgetall(&key).await?;
                for (field, text) in fields {
                    sources.push(Source {
                        label: format!("{key} {field}"),
                        text,
                    });
                }
            }
            "string" => {
                let text: String = con.get(&key).await?;
                sources.push(Source { label: key, text });
            }
            _ => {}
        }
    }
    Ok(())
}

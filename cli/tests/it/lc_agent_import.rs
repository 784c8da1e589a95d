//! `lc-agent sessions import` of networks saved by NVIDIA LC Agent: its
//! `JsonNetworkList` directory and files (`tests/fixtures/lc_agent/`,
//! written by LC Agent's schema), its `RedisNetworkList` hash on a real
//! redis-server, refusals, and a resumed chat on an imported session.

use std::path::{Path, PathBuf};
use std::process::Output;

use lc_agent_test_support::{needs, RedisServer};

use crate::common;

const WEATHER: &str = "0b8f5a52-4d0e-4f7e-9a0f-3c1b2a9d7e01";
const PICTURES: &str = "2c1d0e11-5a6b-4c7d-8e9f-0a1b2c3d4e02";
const AGENTS: &str = "4d2e1f22-6b7c-4d8e-9fa0-1b2c3d4e5f03";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/lc_agent")
}

/// A copy of the fixtures' JSON files (LC Agent's directory layout).
fn saved_networks(dir: &Path) -> PathBuf {
    let to = dir.join("lc_agent_networks");
    std::fs::create_dir_all(&to).unwrap();
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            std::fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
        }
    }
    to
}

/// `lc-agent sessions --sessions <dir>/sessions <args>`.
fn sessions(dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new(common::own_binary(dir))
        .arg("sessions")
        .arg("--sessions")
        .arg(dir.join("sessions"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn a_json_network_list_directory_imports_and_runs_on() {
    let dir = tempfile::tempdir().unwrap();
    let networks = saved_networks(dir.path());
    let before = snapshot(&networks);

    let out = ok(sessions(
        dir.path(),
        &["import", networks.to_str().unwrap()],
    ));
    for id in [WEATHER, PICTURES, AGENTS] {
        assert!(out.contains(&format!("imported {id} (")), "{out}");
    }
    assert!(out.contains("from LC Agent ("), "{out}");
    // What could not be carried over is named, under its session.
    assert!(
        out.contains(
            "  note: node 0 (RunnableHumanImageNode): 1 non-text content part(s) (images) dropped"
        ),
        "{out}"
    );
    assert!(
        out.contains("  note: node 2 (USDAssistantNode): a class lc-agent does not know"),
        "{out}"
    );
    assert_eq!(snapshot(&networks), before, "the input was modified");

    let list = ok(sessions(dir.path(), &["list"]));
    for id in [WEATHER, PICTURES, AGENTS] {
        assert!(list.contains(&id[..8]), "{list}");
    }
    let shown = ok(sessions(dir.path(), &["show", WEATHER]));
    assert!(shown.contains("Paris: 18 C and sunny"), "{shown}");

    // Importing again would overwrite: refused, named, nothing changed.
    let file = networks.join("0000_Weather.json");
    let again = sessions(dir.path(), &["import", file.to_str().unwrap()]);
    assert!(!again.status.success());
    let stderr = text(&again.stderr);
    assert!(
        stderr.contains(&format!("session {WEATHER} exists already")),
        "{stderr}"
    );
    assert!(stderr.contains("0000_Weather.json"), "{stderr}");

    // The imported conversation goes on with a (scripted) model.
    let resumed = common::lc_agent(
        dir.path(),
        &["chat", "--session", WEATHER],
        r#"[{"content": "Lyon: 20 C."}]"#,
        &[] as &[&str],
        "And Lyon?\n",
    );
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert!(
        text(&resumed.stdout).contains("Lyon: 20 C."),
        "{}",
        text(&resumed.stdout)
    );
    let exported: serde_json::Value =
        serde_json::from_str(&ok(sessions(dir.path(), &["export", WEATHER]))).unwrap();
    let nodes = exported["nodes"].as_array().unwrap();
    assert_eq!(nodes[0]["id"], "1a6f1f38-2f3e-4d8b-9a57-0c7e8f1d2a01");
    assert_eq!(nodes.last().unwrap()["outputs"]["content"], "Lyon: 20 C.");
    assert!(nodes.iter().any(|n| n["outputs"]["content"] == "And Lyon?"));
}

#[test]
fn a_file_that_is_no_network_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("notes.json");
    std::fs::write(&bad, r#"{"title": "not a network"}"#).unwrap();
    let out = sessions(dir.path(), &["import", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("notes.json"), "{stderr}");
    assert!(stderr.contains("no `nodes` list"), "{stderr}");
}

#[test]
#[needs(redis)]
fn a_redis_network_list_imports_by_key_pattern() {
    let redis = RedisServer::start();
    let client = redis::Client::open(redis.url()).unwrap();
    let mut con = client.get_connection().unwrap();
    // LC Agent's RedisNetworkList: a hash of id -> JSON per user, and a
    // timeline sorted set (skipped).
    for (file, id) in [
        ("0000_Weather.json", WEATHER),
        ("0001_Pictures.json", PICTURES),
    ] {
        let json = std::fs::read_to_string(fixtures().join(file)).unwrap();
        let _: () = redis::cmd("HSET")
            .arg("lc_agent:user:alice:entries")
            .arg(id)
            .arg(json)
            .query(&mut con)
            .unwrap();
        let _: () = redis::cmd("ZADD")
            .arg("lc_agent:user:alice:timeline")
            .arg(1.0)
            .arg(id)
            .query(&mut con)
            .unwrap();
    }
    let agents = std::fs::read_to_string(fixtures().join("0002_Multi_agent.json")).unwrap();
    let _: () = redis::cmd("HSET")
        .arg("lc_agent:user:bob:entries")
        .arg(AGENTS)
        .arg(agents)
        .query(&mut con)
        .unwrap();
    let stored: Vec<String> = redis::cmd("HVALS")
        .arg("lc_agent:user:alice:entries")
        .query(&mut con)
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let out = ok(sessions(
        dir.path(),
        &[
            "import",
            "--from-redis",
            &redis.url(),
            "--keys",
            "lc_agent:user:alice:*",
        ],
    ));
    assert!(out.contains(&format!("imported {WEATHER} (")), "{out}");
    assert!(out.contains(&format!("imported {PICTURES} (")), "{out}");
    assert!(!out.contains(AGENTS), "{out}");
    assert!(
        out.contains(&format!("(lc_agent:user:alice:entries {WEATHER})")),
        "{out}"
    );
    // The default pattern is every user's hash; what exists is refused.
    let all = sessions(dir.path(), &["import", "--from-redis", &redis.url()]);
    assert!(!all.status.success());
    assert!(text(&all.stdout).contains(&format!("imported {AGENTS} (")));
    let stderr = text(&all.stderr);
    assert!(stderr.contains("2 sources not imported"), "{stderr}");
    assert!(stderr.contains("exists already"), "{stderr}");
    // Redis was only read.
    let after: Vec<String> = redis::cmd("HVALS")
        .arg("lc_agent:user:alice:entries")
        .query(&mut con)
        .unwrap();
    assert_eq!(after, stored);
    let shown = ok(sessions(dir.path(), &["show", AGENTS]));
    assert!(shown.contains("The stage has 3 prims."), "{shown}");
}

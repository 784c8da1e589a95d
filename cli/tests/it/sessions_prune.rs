//! `lc-agent sessions prune` (by age and/or count, `--dry-run`), on the
//! JSON list and on Redis, touching only the `--user`'s sessions; and
//! `sessions list --memory` / `show` on Redis.

use std::path::Path;
use std::process::Output;

use lc_agent::{ListConfig, RunnableNetwork};
use lc_agent_test_support::{needs, RedisServer};

use crate::common;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

/// `lc-agent sessions <store> <args>`.
fn sessions(dir: &Path, store: &[String], args: &[&str]) -> Output {
    std::process::Command::new(common::own_binary(dir))
        .arg("sessions")
        .args(store)
        .args(args)
        .output()
        .unwrap()
}

/// Saves sessions named `names` for `user`; their ids, in that order.
fn save(config: &ListConfig, user: &str, names: &[&str]) -> Vec<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let list = config.open().unwrap().user(user).unwrap();
        let mut ids = Vec::new();
        for name in names {
            let net = RunnableNetwork::builder().name(*name).build();
            list.save(&net).await.unwrap();
            ids.push(net.id().to_string());
        }
        ids
    })
}

/// Two old sessions and two new ones of alice, one old of bob: prune by
/// age, then by count, with a dry run first each time.
fn prunes_by_age_and_count(dir: &Path, config: &ListConfig, store: &[String]) {
    let old = save(config, "alice", &["old one", "old two"]);
    let bob = save(config, "bob", &["bob's old"]);
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    let new = save(config, "alice", &["new one", "new two"]);
    let alice = |args: &[&str]| {
        let mut all = vec!["--user", "alice"];
        all.extend_from_slice(args);
        ok(sessions(dir, store, &all))
    };
    let listed = |who: &str| ok(sessions(dir, store, &["--user", who, "list"]));

    let dry = alice(&["prune", "--older-than", "2s", "--dry-run"]);
    for id in &old {
        assert!(dry.contains(&format!("would delete {id}")), "{dry}");
    }
    assert!(
        dry.contains("would delete 2 of 4 session(s) of user `alice`"),
        "{dry}"
    );
    assert!(
        listed("alice").contains(&old[0]),
        "a dry run deletes nothing"
    );

    let done = alice(&["prune", "--older-than", "2s"]);
    assert!(done.contains("deleted 2 of 4"), "{done}");
    let left = listed("alice");
    assert!(!left.contains(&old[0]) && !left.contains(&old[1]), "{left}");
    assert!(left.contains(&new[0]) && left.contains(&new[1]), "{left}");
    assert!(
        listed("bob").contains(&bob[0]),
        "another user's session is kept"
    );

    let dry = alice(&["prune", "--keep", "1", "--dry-run"]);
    assert!(dry.contains(&format!("would delete {}", new[0])), "{dry}");
    assert!(!dry.contains(&new[1]), "the newest is kept: {dry}");
    alice(&["prune", "--keep", "1"]);
    let left = listed("alice");
    assert!(left.contains(&new[1]) && !left.contains(&new[0]), "{left}");
    assert!(listed("bob").contains(&bob[0]));

    let refused = sessions(dir, store, &["prune"]);
    assert!(!refused.status.success());
    assert!(text(&refused.stderr).contains("--older-than AGE and/or --keep N"));
}

#[test]
fn prune_on_the_json_list() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    let store = vec!["--sessions".to_string(), root.display().to_string()];
    prunes_by_age_and_count(dir.path(), &ListConfig::json(&root), &store);
    let memory = sessions(dir.path(), &store, &["list", "--memory"]);
    assert!(!memory.status.success());
    assert!(text(&memory.stderr).contains("give --redis URL"));
}

#[test]
#[needs(redis)]
fn prune_and_memory_on_redis() {
    let redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let store = vec!["--redis".to_string(), redis.url()];
    let config = ListConfig::redis(redis.url());
    prunes_by_age_and_count(dir.path(), &config, &store);
    let listed = ok(sessions(
        dir.path(),
        &store,
        &["--user", "alice", "list", "--memory"],
    ));
    assert!(
        listed.lines().next().unwrap().contains("MEMORY"),
        "{listed}"
    );
    let row = listed.lines().nth(1).unwrap();
    let bytes: u64 = row
        .split_whitespace()
        .rev()
        .nth(2)
        .and_then(|b| b.parse().ok())
        .unwrap_or_else(|| panic!("{row}"));
    assert!(bytes > 100, "{row}");
    let id = row.split_whitespace().next().unwrap();
    let shown = ok(sessions(
        dir.path(),
        &store,
        &["--user", "alice", "show", id],
    ));
    assert!(shown.contains("bytes in redis"), "{shown}");
}

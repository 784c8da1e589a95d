//! The run queue's consumer group lists live servers only: a server that
//! stops leaves it (XGROUP DELCONSUMER after giving back what it held),
//! and a server that died without leaving (a consumer that holds nothing
//! and stays silent past two leases) is removed by a survivor. Two servers
//! on one real redis-server, read with `XINFO CONSUMERS`.

use std::time::Duration;

use lc_agent::{ListConfig, Turn};
use lc_agent_server::RunSettings;
use lc_agent_test_support::needs;
use lc_agent_test_support::server::*;
use lc_agent_test_support::RedisServer;
use serde_json::json;

/// Runs `redis-cli` against `redis` and returns its output lines.
fn cli(redis: &RedisServer, args: &[&str]) -> Vec<String> {
    let out = std::process::Command::new("redis-cli")
        .arg("-p")
        .arg(redis.port().to_string())
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The queue's key and its group's name.
fn queue(redis: &RedisServer) -> (String, String) {
    let keys = cli(redis, &["--scan", "--pattern", "*runs:queue"]);
    assert_eq!(keys.len(), 1, "{keys:?}");
    let group = cli(redis, &["XINFO", "GROUPS", &keys[0]]);
    let at = group.iter().position(|l| l == "name").unwrap();
    (keys[0].clone(), group[at + 1].clone())
}

/// The names of the group's consumers, sorted.
fn consumers(redis: &RedisServer) -> Vec<String> {
    let (queue, group) = queue(redis);
    let lines = cli(redis, &["XINFO", "CONSUMERS", &queue, &group]);
    let mut names: Vec<String> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| *l == "name")
        .map(|(i, _)| lines[i + 1].clone())
        .collect();
    names.sort();
    names
}

#[needs(redis)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_and_dead_servers_leave_the_consumer_group() {
    let redis = RedisServer::start();
    let url = redis.url();
    let on_redis = |dir: &std::path::Path| {
        config(scripted(vec![Turn::text("answer")]).cycled(), dir)
            .sessions(ListConfig::redis(&url))
            .runs(RunSettings {
                lease: Duration::from_millis(900),
                ..RunSettings::default()
            })
    };
    let a = start_with(on_redis).await;
    let b = start_with(on_redis).await;
    // A run through each, so both have read the queue.
    for base in [&a.url, &b.url] {
        let session = new_session(base, ALICE).await;
        let r = post(
            &format!("{base}/api/sessions/{session}/messages"),
            ALICE,
            json!({"content": "hello"}),
        )
        .await;
        assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    }
    let (name_a, name_b) = (
        a.state.runs.consumer().to_string(),
        b.state.runs.consumer().to_string(),
    );
    let mut both = vec![name_a.clone(), name_b.clone()];
    both.sort();
    for _ in 0..100 {
        if consumers(&redis) == both {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(consumers(&redis), both);

    // A server that died without leaving: a consumer that holds nothing.
    let (key, group) = queue(&redis);
    cli(
        &redis,
        &["XGROUP", "CREATECONSUMER", &key, &group, "dead-server"],
    );

    // A graceful stop leaves the group at once.
    let _ = a.stop().await;
    let listed = consumers(&redis);
    assert!(!listed.contains(&name_a), "{listed:?}");

    // The survivor removes the dead one after two leases (1.8 s) of silence.
    for _ in 0..200 {
        if consumers(&redis) == vec![name_b.clone()] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(consumers(&redis), vec![name_b.clone()]);

    // The survivor still takes runs.
    let session = new_session(&b.url, ALICE).await;
    let r = post(
        &format!("{}/api/sessions/{session}/messages", b.url),
        ALICE,
        json!({"content": "still there?"}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let _ = b.stop().await;
    assert_eq!(consumers(&redis), Vec::<String>::new());
}

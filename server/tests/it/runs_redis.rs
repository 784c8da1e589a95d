//! Runs on Redis, two servers on one real redis-server: any server serves
//! a run's events and its cancel; a run whose server stopped renewing its
//! lease is taken over (XAUTOCLAIM) and resumed from its checkpoint; a run
//! that waits for a decision survives both servers going away.

use std::time::Duration;

use lc_agent::{ListConfig, Turn};
use lc_agent_server::RunSettings;
use lc_agent_server::{RedisRuns, Run, RunStatus, RunStore};
use lc_agent_test_support::needs;
use lc_agent_test_support::server::*;
use lc_agent_test_support::sse;
use lc_agent_test_support::RedisServer;
use serde_json::{json, Value};

fn on_redis(url: &str, turns: Vec<Turn>, dir: &std::path::Path) -> lc_agent_server::ServerConfig {
    config(scripted(turns).cycled(), dir)
        .sessions(ListConfig::redis(url))
        .runs(RunSettings {
            lease: Duration::from_millis(900),
            ..RunSettings::default()
        })
}

/// The SSE events of a body that have ids: (id, name).
fn ids(body: &str) -> Vec<(u64, String)> {
    sse::events(body)
        .into_iter()
        .filter_map(|e| Some((e.id?, e.name)))
        .collect()
}

#[needs(redis)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn either_server_serves_a_runs_events_and_cancels_it() {
    let redis = RedisServer::start();
    let url = redis.url();
    let turns = vec![Turn::text("a b c d e f").delayed(Duration::from_millis(700))];
    let a = start_with(|dir| on_redis(&url, turns.clone(), dir)).await;
    let b = start_with(|dir| on_redis(&url, turns.clone(), dir)).await;
    let session = new_session(&a.url, ALICE).await;
    let r = post(
        &format!("{}/api/sessions/{session}/runs", a.url),
        ALICE,
        json!({"content": "go", "background": true}),
    )
    .await;
    assert_eq!(r.status(), 202);
    let run = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    // Whichever server runs it, the other answers for it too.
    let on_b = get(&format!("{}/api/runs/{run}/events", b.url), ALICE).await;
    let all = ids(&on_b.text().await.unwrap());
    assert_eq!(all.last().unwrap().1, "done");
    let seqs: Vec<u64> = all.iter().map(|e| e.0).collect();
    assert_eq!(seqs, (1..=all.len() as u64).collect::<Vec<_>>());
    let half = all.len() as u64 / 2;
    let rest = client()
        .get(format!("{}/api/runs/{run}/events", a.url))
        .bearer_auth(ALICE)
        .header("Last-Event-ID", half.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(
        ids(&rest.text().await.unwrap()),
        all[half as usize..].to_vec()
    );
    let listed = get_json(&format!("{}/api/sessions/{session}/runs", b.url), ALICE).await;
    assert_eq!(listed["runs"][0]["status"], "done");

    // A second run, cancelled through the server that does not run it.
    let r = post(
        &format!("{}/api/sessions/{session}/runs", b.url),
        ALICE,
        json!({"content": "again", "background": true}),
    )
    .await;
    let run = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    wait_status(&a.url, &run, "running", 300).await;
    // Cancel it through the server that does not run it.
    let other = if a.state.runs.executing() == 1 {
        &b.url
    } else {
        &a.url
    };
    let c = post(&format!("{other}/api/runs/{run}/cancel"), ALICE, json!({})).await;
    assert_eq!(c.status(), 202);
    let cancelled = wait_status(&a.url, &run, "cancelled", 300).await;
    assert!(cancelled["finished_at"].is_string());
    let _ = a.stop().await;
    let _ = b.stop().await;
}

#[needs(redis)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_server_stopped_renewing_its_lease_is_taken_over_and_resumed() {
    let redis = RedisServer::start();
    let url = redis.url();
    // A server that "dies": it makes a session, queues a run and takes
    // it from the queue (status running), then never renews the lease.
    let first = start_with(|dir| on_redis(&url, vec![Turn::text("unused")], dir)).await;
    let session = new_session(&first.url, ALICE).await;
    let first_dir = first.stop().await;
    let store = RedisRuns::new(
        lc_agent::RedisConnector::new(url.clone()).unwrap(),
        &url,
        "lc_agent",
    )
    .unwrap();
    let lists = ListConfig::redis(url.clone()).open().unwrap();
    let list = lists.user("alice").unwrap();
    let net = list.load(session.parse().unwrap()).await.unwrap();
    {
        let _s = net.enter();
        lc_agent::HumanNode::new("pick me up");
    }
    list.save(&net).await.unwrap();
    let run = Run::new(net.id(), "alice", "message");
    store.create(&run, 10).await.unwrap();
    store.prepared(run.id).await.unwrap();
    let taken = store
        .claim("dead-server", Duration::from_millis(500))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(taken.run, run.id);
    store
        .transition(run.id, &[RunStatus::Queued], RunStatus::Running)
        .await
        .unwrap()
        .unwrap();

    // A live server takes it over once the lease (0.9 s) is over.
    let started = std::time::Instant::now();
    let live = start_with(|dir| on_redis(&url, vec![Turn::text("taken over")], dir)).await;
    let done = wait_status(&live.url, &run.id.to_string(), "done", 300).await;
    assert!(
        started.elapsed() >= Duration::from_millis(800),
        "not before the lease ran out"
    );
    assert_eq!(done["answer"], "taken over");
    assert_eq!(done["attempts"], 1);
    let s = get_json(&format!("{}/api/sessions/{session}", live.url), ALICE).await;
    let humans = s["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "human")
        .count();
    assert_eq!(humans, 1);
    // Acknowledged: nobody takes it again.
    assert!(store
        .reclaim("another", Duration::ZERO)
        .await
        .unwrap()
        .is_none());
    let _ = live.stop().await;
    drop(first_dir);
}

#[needs(redis)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waiting_for_a_decision_survives_both_servers_and_finishes_after_it() {
    let redis = RedisServer::start();
    let url = redis.url();
    let turns = vec![
        call(
            "w1",
            "write_file",
            json!({"file_path": "/a.txt", "content": "hi"}),
        ),
        Turn::text("written"),
    ];
    let spec = approval_spec("write_file");
    let a = start_with(|dir| on_redis(&url, turns.clone(), dir).spec(spec.clone())).await;
    let b = start_with(|dir| on_redis(&url, turns.clone(), dir).spec(spec.clone())).await;
    let session = new_session(&a.url, ALICE).await;
    let r = post(
        &format!("{}/api/sessions/{session}/runs", b.url),
        ALICE,
        json!({"content": "write", "background": true}),
    )
    .await;
    let run = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let waiting = wait_status(&a.url, &run, "waiting", 300).await;
    let node = waiting["pending"][0]["node_id"]
        .as_str()
        .unwrap()
        .to_string();
    let _ = a.stop().await;
    let _ = b.stop().await;

    // Both servers are gone; a new one gets the decision.
    let c =
        start_with(|dir| on_redis(&url, vec![Turn::text("written")], dir).spec(spec.clone())).await;
    assert_eq!(
        get_json(&format!("{}/api/runs/{run}", c.url), ALICE).await["status"],
        "waiting"
    );
    let d = post(
        &format!("{}/api/sessions/{session}/approvals", c.url),
        ALICE,
        json!({"decisions": [{"node_id": node, "decision": "approve"}]}),
    )
    .await;
    assert_eq!(d.status(), 200);
    let events = sse_events(&d.text().await.unwrap());
    assert_eq!(events.last().unwrap().1["answer"], "written");
    let done = wait_status(&c.url, &run, "done", 300).await;
    assert_eq!(done["answer"], "written");
    let s = get_json(&format!("{}/api/sessions/{session}", c.url), ALICE).await;
    assert_eq!(s["files"]["/a.txt"]["content"], "hi", "{s}");
    let _ = c.stop().await;
}

#[needs(redis)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_with_room_takes_the_run_it_queues_in_the_same_step() {
    let redis = RedisServer::start();
    let url = redis.url();
    let store = RedisRuns::new(
        lc_agent::RedisConnector::new(url.clone()).unwrap(),
        &url,
        "lc_agent",
    )
    .unwrap();
    // The consumer group exists once a server has looked at the queue.
    assert!(store
        .claim("srv-b", Duration::from_millis(5))
        .await
        .unwrap()
        .is_none());
    let session = || uuid::Uuid::new_v4();
    // Room and nothing older queued: this run, running already.
    let mine = Run::new(session(), "alice", "message");
    let taken = store
        .create_taking(&mine, 10, "srv-a")
        .await
        .unwrap()
        .expect("taken as it was queued");
    assert_eq!(taken.run, mine.id);
    assert_eq!(
        store.get(mine.id).await.unwrap().unwrap().status,
        RunStatus::Running
    );
    // Nobody else gets it from the queue.
    assert!(store
        .claim("srv-b", Duration::from_millis(5))
        .await
        .unwrap()
        .is_none());
    // An older queued run goes first: the new one stays queued for any
    // server.
    let older = Run::new(session(), "alice", "message");
    store.create(&older, 10).await.unwrap();
    let newer = Run::new(session(), "alice", "message");
    let taken = store
        .create_taking(&newer, 10, "srv-a")
        .await
        .unwrap()
        .expect("the older run");
    assert_eq!(taken.run, older.id);
    assert_eq!(
        store.get(older.id).await.unwrap().unwrap().status,
        RunStatus::Queued,
        "an older run is taken as the dispatcher takes it: queued until it is prepared"
    );
    assert_eq!(
        store.get(newer.id).await.unwrap().unwrap().status,
        RunStatus::Queued
    );
    let next = store
        .claim("srv-b", Duration::from_millis(5))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(next.run, newer.id);
    // A busy session still names its run.
    let again = Run::new(mine.session, "alice", "message");
    assert!(matches!(
        store.create_taking(&again, 10, "srv-a").await,
        Err(lc_agent_server::RunError::Busy { run, .. }) if run == mine.id
    ));
}

#[needs(redis)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_posted_to_a_server_with_room_run_there_without_waiting_on_the_queue() {
    let redis = RedisServer::start();
    let url = redis.url();
    let a = start_with(|dir| on_redis(&url, vec![Turn::text("ok")], dir)).await;
    let b = start_with(|dir| on_redis(&url, vec![Turn::text("ok")], dir)).await;
    // Both dispatchers wait on the queue.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut servers = Vec::new();
    for _ in 0..6 {
        let session = new_session(&a.url, ALICE).await;
        let r = post(
            &format!("{}/api/sessions/{session}/runs", a.url),
            ALICE,
            json!({"content": "go", "background": true}),
        )
        .await;
        assert_eq!(r.status(), 202);
        let run = r.json::<Value>().await.unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string();
        let done = wait_status(&a.url, &run, "done", 300).await;
        assert!(done["queue_ms"].as_f64().is_some(), "{done}");
        servers.push(done["server"].as_str().unwrap().to_string());
    }
    servers.dedup();
    assert_eq!(
        servers.len(),
        1,
        "every run ran on the server that took it: {servers:?}"
    );
    let _ = a.stop().await;
    let _ = b.stop().await;
}

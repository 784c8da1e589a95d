//! A run taken over is written by one server only. The server that lost
//! it (its lease not renewed in time: the store was out of its reach) can
//! neither renew the lease nor append events any more; and a run whose
//! server wrote its end event but not its record is settled from that
//! end by the server that takes it over, never run again, so its stream
//! keeps exactly one end. Real redis-server, the store API and a server.

use std::time::Duration;

use lc_agent::{ListConfig, Turn};
use lc_agent_server::{
    NumberedEvent, RedisRuns, Run, RunError, RunEvent, RunSettings, RunStatus, RunStore,
};
use lc_agent_test_support::needs;
use lc_agent_test_support::server::*;
use lc_agent_test_support::RedisServer;
use serde_json::json;

#[needs(redis)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_taken_over_is_written_by_one_server_and_an_ended_one_is_settled_not_rerun() {
    let redis = RedisServer::start();
    let url = redis.url();
    let on_redis = |turns: Vec<Turn>| {
        let url = url.clone();
        move |dir: &std::path::Path| {
            config(scripted(turns).cycled(), dir)
                .sessions(ListConfig::redis(&url))
                .runs(RunSettings {
                    lease: Duration::from_millis(900),
                    ..RunSettings::default()
                })
        }
    };
    let first = start_with(on_redis(vec![Turn::text("unused")])).await;
    let session = new_session(&first.url, ALICE).await;
    let _ = first.stop().await;
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
        lc_agent::HumanNode::new("the question");
        lc_agent::ChatNode::new().set_output(lc_agent::Message::ai("THE FIRST ANSWER"));
    }
    list.save(&net).await.unwrap();
    let run = Run::new(net.id(), "alice", "message");
    store.create(&run, 10).await.unwrap();
    store.prepared(run.id).await.unwrap();
    // A server takes it, runs it to its end event, and loses the store
    // before it writes the record.
    let held = store
        .claim("lost-server", Duration::from_millis(500))
        .await
        .unwrap()
        .unwrap();
    store
        .transition(run.id, &[RunStatus::Queued], RunStatus::Running)
        .await
        .unwrap()
        .unwrap();
    let event = |seq: u64, name: &str, data: serde_json::Value| NumberedEvent {
        seq,
        event: RunEvent::from_parts(name, data).unwrap(),
    };
    store
        .append_held(
            "lost-server",
            &held,
            &[
                event(
                    1,
                    "run_started",
                    json!({"run": run.id, "session": net.id()}),
                ),
                event(
                    2,
                    "done",
                    json!({"answer": "THE FIRST ANSWER", "revision": null, "stopped": false,
                           "pending_approvals": [], "run": run.id, "status": "done"}),
                ),
            ],
        )
        .await
        .unwrap();

    // A live server takes it over after the lease (0.9 s): settled from
    // its end, not run again.
    let live = start_with(on_redis(vec![Turn::text("RUN AGAIN")])).await;
    let done = wait_status(&live.url, &run.id.to_string(), "done", 300).await;
    assert_eq!(done["answer"], "THE FIRST ANSWER", "{done}");
    let events = get(&format!("{}/api/runs/{}/events", live.url, run.id), ALICE)
        .await
        .text()
        .await
        .unwrap();
    let names: Vec<String> = sse_events(&events).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["run_started", "done"], "{events}");

    // The server that lost it can write nothing more of it.
    match store.renew("lost-server", &held).await {
        Err(RunError::Lost(id)) => assert_eq!(id, run.id),
        other => panic!("renewed a lost lease: {other:?}"),
    }
    let late = store
        .append_held(
            "lost-server",
            &held,
            &[event(
                3,
                "done",
                json!({"answer": "late", "revision": null,
            "stopped": false, "pending_approvals": [], "run": run.id, "status": "done"}),
            )],
        )
        .await;
    assert!(matches!(late, Err(RunError::Lost(_))), "{late:?}");
    assert_eq!(store.last_seq(run.id).await.unwrap(), 2);
    let _ = live.stop().await;
}

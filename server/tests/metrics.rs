//! `GET /metrics` (issue 25): Prometheus text behind the bearer token; a
//! scrape after a run shows the requests, the run, its model calls (a
//! sub-agent's too), tokens by model and tool calls by tool and status; a
//! run that waits for an approval is counted once, its approved call
//! counts, and the queue's depth is a gauge (issue 31 item 13); a
//! blueprint's prices are the cost at every door, the metrics' included
//! (issue 49 item 4).
#![allow(clippy::unwrap_used, unreachable_pub)]

use lc_agent::{ScriptedChatModel, Turn, Usage};
use lc_agent_test_support::server::*;
use serde_json::json;

/// The value of the sample whose line starts with `prefix` (name and
/// labels as rendered), 0 when absent.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| {
            l.split(['{', ' ']).next() == Some(name)
                && labels
                    .iter()
                    .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_after_a_run_shows_requests_runs_calls_tokens_and_tools() {
    let model = ScriptedChatModel::new([
        Turn::call(
            "t1",
            "task",
            json!({"description": "Write it", "subagent_type": "general-purpose"}),
        ),
        Turn::call(
            "w1",
            "write_file",
            json!({"file_path": "/a.md", "content": "a"}),
        ),
        Turn::text("Written."),
        Turn::call("r1", "read_file", json!({"file_path": "/missing.md"})),
        Turn::text("Done."),
    ])
    .named("metrics-test-model")
    .with_usage(Usage {
        prompt_tokens: 7,
        completion_tokens: 3,
        total_tokens: 10,
        ..Usage::default()
    });
    let server = start(model).await;
    let base = server.url.clone();

    // Behind the token.
    let r = reqwest::get(format!("{base}/metrics")).await.unwrap();
    assert_eq!(r.status(), 401);
    let before = get(&format!("{base}/metrics"), ALICE)
        .await
        .text()
        .await
        .unwrap();

    let id = new_session(&base, ALICE).await;
    let body = post(
        &format!("{base}/api/sessions/{id}/messages"),
        ALICE,
        json!({"content": "Delegate, then read."}),
    )
    .await
    .text()
    .await
    .unwrap();
    assert!(body.contains("event: done"), "{body}");

    let r = get(&format!("{base}/metrics"), ALICE).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let after = r.text().await.unwrap();
    let moved = |name: &str, labels: &[(&str, &str)]| {
        sample(&after, name, labels) - sample(&before, name, labels)
    };
    assert_eq!(
        moved(
            "lc_agent_http_requests_total",
            &[
                ("route", "/api/sessions/:id/messages"),
                ("status", "200"),
                ("method", "POST")
            ]
        ),
        1.0,
        "{after}"
    );
    // The refused scrape before the run counted too.
    assert!(
        sample(
            &after,
            "lc_agent_http_requests_total",
            &[("route", "/metrics"), ("status", "401")]
        ) >= 1.0
    );
    assert_eq!(
        moved("lc_agent_runs_total", &[("status", "done")]),
        1.0,
        "{after}"
    );
    // Five model calls (two of them the sub-agent's), each 7 + 3 tokens.
    let model = [("model", "metrics-test-model")];
    assert_eq!(
        moved("lc_agent_model_call_duration_seconds_count", &model),
        5.0,
        "{after}"
    );
    assert_eq!(
        moved(
            "lc_agent_tokens_total",
            &[("model", "metrics-test-model"), ("kind", "prompt")]
        ),
        35.0
    );
    assert_eq!(
        moved(
            "lc_agent_tokens_total",
            &[("model", "metrics-test-model"), ("kind", "completion")]
        ),
        15.0
    );
    assert_eq!(
        moved(
            "lc_agent_tool_calls_total",
            &[("tool", "write_file"), ("status", "ok")]
        ),
        1.0
    );
    assert_eq!(
        moved(
            "lc_agent_tool_calls_total",
            &[("tool", "task"), ("status", "ok")]
        ),
        1.0
    );
    assert_eq!(
        moved(
            "lc_agent_tool_calls_total",
            &[("tool", "read_file"), ("status", "error")]
        ),
        1.0,
        "{after}"
    );
    assert!(
        after.contains("lc_agent_run_duration_seconds_bucket"),
        "{after}"
    );
    assert_eq!(sample(&after, "lc_agent_active_runs", &[]), 0.0);
    assert!(after.contains("lc_agent_active_sessions"));
    assert!(after.contains("lc_agent_queued_runs"), "{after}");
    let _ = server.stop().await;

    // A run that waits for an approval, then goes on: one run, one
    // pause, and the approved call counts.
    let model = ScriptedChatModel::new([
        Turn::call(
            "w2",
            "write_file",
            json!({"file_path": "/b.md", "content": "b"}),
        ),
        Turn::text("Approved and written."),
    ])
    .named("metrics-approval-model");
    let server = start_with(|dir| config(model, dir).spec(approval_spec("write_file"))).await;
    let base = server.url.clone();
    let before = get(&format!("{base}/metrics"), ALICE)
        .await
        .text()
        .await
        .unwrap();
    let id = new_session(&base, ALICE).await;
    let body = post(
        &format!("{base}/api/sessions/{id}/messages"),
        ALICE,
        json!({"content": "write b.md"}),
    )
    .await
    .text()
    .await
    .unwrap();
    let events = sse_events(&body);
    let needed = events
        .iter()
        .find(|(n, _)| n == "approval_needed")
        .unwrap_or_else(|| panic!("no approval_needed in {body}"));
    let node_id = needed.1["pending"][0]["node_id"].as_str().unwrap();
    let r = post(
        &format!("{base}/api/sessions/{id}/approvals"),
        ALICE,
        json!({"decisions": [{"node_id": node_id, "decision": "approve"}]}),
    )
    .await;
    assert!(r.text().await.unwrap().contains("Approved and written."));
    let after = get(&format!("{base}/metrics"), ALICE)
        .await
        .text()
        .await
        .unwrap();
    let moved = |name: &str, labels: &[(&str, &str)]| {
        sample(&after, name, labels) - sample(&before, name, labels)
    };
    assert_eq!(moved("lc_agent_runs_total", &[]), 1.0, "{after}");
    assert_eq!(moved("lc_agent_runs_total", &[("status", "done")]), 1.0);
    assert_eq!(moved("lc_agent_approval_pauses_total", &[]), 1.0, "{after}");
    assert_eq!(
        moved(
            "lc_agent_tool_calls_total",
            &[("tool", "write_file"), ("status", "ok")]
        ),
        1.0,
        "{after}"
    );
    let _ = server.stop().await;

    a_blueprints_prices_are_the_prices_at_every_server_door().await;
}

/// Issue 49 item 4: one price source at every door of the server. A
/// blueprint's `[prices]` for a model without a built-in price prices
/// its runs the same in the run's `done` event, the session (its total
/// and each turn, as the page shows them), the run record, `/api/usage`
/// and the metrics' `lc_agent_cost_usd`. (Run after the scrape test's
/// runs, in its test: the metrics are the process's.)
async fn a_blueprints_prices_are_the_prices_at_every_server_door() {
    let model = ScriptedChatModel::new([Turn::text("Priced.")])
        .cycled()
        .named("priced-by-blueprint")
        .with_usage(Usage {
            prompt_tokens: 1_000,
            completion_tokens: 500,
            total_tokens: 1_500,
            ..Usage::default()
        });
    let mut spec = approval_spec("nothing");
    spec.prices = Some(lc_agent::Prices {
        models: [(
            "priced-by-blueprint".to_string(),
            lc_agent::Price {
                input: 2.0,
                output: 4.0,
                cached_input: None,
                cache_write: None,
            },
        )]
        .into(),
    });
    // 1,000 in at $2 and 500 out at $4 per million tokens.
    let usd = (1_000.0 * 2.0 + 500.0 * 4.0) / 1e6;
    let close = |value: &serde_json::Value| value.as_f64().is_some_and(|v| (v - usd).abs() < 1e-12);
    let server = start_with(|dir| config(model, dir).spec(spec)).await;
    let base = server.url.clone();
    let before = get(&format!("{base}/metrics"), ALICE)
        .await
        .text()
        .await
        .unwrap();
    let id = new_session(&base, ALICE).await;
    let r = post(
        &format!("{base}/api/sessions/{id}/messages"),
        ALICE,
        json!({"content": "What does it cost?"}),
    )
    .await;
    let body = r.text().await.unwrap();
    let events = sse_events(&body);
    let done = &events
        .iter()
        .find(|(n, _)| n == "done")
        .unwrap_or_else(|| panic!("no done in {body}"))
        .1;
    assert!(close(&done["usage"]["cost_usd"]), "done: {done}");
    let run = done["run"].as_str().unwrap();

    let session = get_json(&format!("{base}/api/sessions/{id}"), ALICE).await;
    assert!(close(&session["usage"]["cost_usd"]), "session: {session}");
    let turn = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m.get("cost_usd").is_some())
        .unwrap_or_else(|| panic!("no turn with a cost: {session}"));
    assert!(close(&turn["cost_usd"]), "the turn: {turn}");

    let record = get_json(&format!("{base}/api/runs/{run}"), ALICE).await;
    assert!(close(&record["usage"]["cost_usd"]), "run: {record}");
    let usage = get_json(&format!("{base}/api/usage"), ALICE).await;
    assert!(close(&usage["cost_usd"]), "/api/usage: {usage}");

    let after = get(&format!("{base}/metrics"), ALICE)
        .await
        .text()
        .await
        .unwrap();
    let model = [("model", "priced-by-blueprint")];
    let moved =
        sample(&after, "lc_agent_cost_usd", &model) - sample(&before, "lc_agent_cost_usd", &model);
    assert!(
        (moved - usd).abs() < 1e-12,
        "metrics moved {moved}: {after}"
    );
    let _ = server.stop().await;
}

//! Usage and cost wherever a client looks (issue 25), and the OpenAI
//! compatibility of the endpoint (issue 21 item 12), through the official
//! `openai` Python package: real `usage` (sub-agents included), the usage
//! chunk of `stream_options.include_usage`, `models.retrieve`, the session
//! in every chunk's id, client tools and structured output refused; then the
//! same totals in the session, the SSE end events and `/api/usage`.

use lc_agent::{ScriptedChatModel, Turn, Usage};
use lc_agent_test_support::needs;
use lc_agent_test_support::python;
use lc_agent_test_support::server::*;
use serde_json::json;

/// Every call reports this: 100 prompt tokens (40 of them cached), 10 out.
fn reported() -> Usage {
    Usage {
        prompt_tokens: 100,
        completion_tokens: 10,
        total_tokens: 110,
        cache_read_tokens: 40,
        ..Usage::default()
    }
}

/// What one such call costs at gpt-4o-mini's built-in prices (USD per
/// million: 0.15 in, 0.075 cached, 0.60 out).
const CALL_USD: f64 = (60.0 * 0.15 + 40.0 * 0.075 + 10.0 * 0.60) / 1e6;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[needs(python_openai)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_reaches_the_openai_client_the_session_the_events_and_api_usage() {
    let model = ScriptedChatModel::new([
        // The first completion: the agent delegates, the sub-agent answers,
        // the agent answers.
        Turn::call(
            "t1",
            "task",
            json!({"description": "Research it", "subagent_type": "general-purpose"}),
        ),
        Turn::text("Research done."),
        Turn::text("The research is done."),
        // The streamed one.
        Turn::text("Nothing else."),
        // A message through the session API.
        Turn::text("Still here."),
    ])
    .named("gpt-4o-mini-2024-07-18")
    .with_usage(reported());
    let server = start(model).await;
    let base = server.url.clone();

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/usage_client.py");
    let url = base.clone();
    let got =
        tokio::task::spawn_blocking(move || python::run_json(script.as_ref(), &[&url, ALICE]))
            .await
            .unwrap();
    assert_eq!(got["model"], "lc-agent");
    assert_eq!(got["missing_model_status"], 404);

    // Three calls (one of them the sub-agent's), as OpenAI reports them.
    let usage = &got["first_usage"];
    assert_eq!(
        (
            &usage["prompt_tokens"],
            &usage["completion_tokens"],
            &usage["total_tokens"]
        ),
        (&json!(300), &json!(30), &json!(330)),
        "{usage}"
    );
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 120);
    let session = got["session"].as_str().unwrap().to_string();
    // The session rides in the ids, where proxies keep it.
    assert!(
        got["first_id"]
            .as_str()
            .unwrap()
            .starts_with(&format!("chatcmpl-{session}-")),
        "{got}"
    );
    let ids = got["chunk_ids"].as_array().unwrap();
    assert_eq!(ids.len(), 1, "one id for all the chunks: {got}");
    assert!(ids[0].as_str().unwrap().contains(&session));

    // include_usage: one last chunk with no choices and the run's usage.
    assert_eq!(got["streamed"], "Nothing else.");
    let chunks = got["usage_chunks"].as_array().unwrap();
    assert_eq!(chunks.len(), 1, "{got}");
    assert_eq!(chunks[0]["choices"], 0);
    assert_eq!(chunks[0]["usage"]["total_tokens"], 110);

    // Client tools and structured output are refused, naming the field.
    assert_eq!(got["tools_refused"]["status"], 400);
    assert!(
        got["tools_refused"]["message"]
            .as_str()
            .unwrap()
            .contains("`tools`"),
        "{got}"
    );
    assert_eq!(got["json_schema_refused"]["status"], 400);
    assert!(got["json_schema_refused"]["message"]
        .as_str()
        .unwrap()
        .contains("response_format"));

    // The session: four calls so far, priced, the sub-agent's nested.
    let view = get_json(&format!("{base}/api/sessions/{session}"), ALICE).await;
    let totals = &view["usage"];
    assert_eq!(
        (&totals["calls"], &totals["total_tokens"]),
        (&json!(4), &json!(440))
    );
    assert!(
        close(totals["cost_usd"].as_f64().unwrap(), 4.0 * CALL_USD),
        "{totals}"
    );
    let messages = view["messages"].as_array().unwrap();
    let sub = messages
        .iter()
        .find(|m| m["kind"] == "network")
        .expect("the sub-agent's node");
    assert_eq!(sub["usage"]["calls"], 1);
    let last = messages.last().unwrap();
    assert!(
        close(last["cost_usd"].as_f64().unwrap(), CALL_USD),
        "{last}"
    );

    // A message through the session API: its end events carry the run's usage.
    let body = post(
        &format!("{base}/api/sessions/{session}/messages"),
        ALICE,
        json!({"content": "Still there?"}),
    )
    .await
    .text()
    .await
    .unwrap();
    let events = sse_events(&body);
    let finished = events
        .iter()
        .find(|(n, _)| n == "run_finished")
        .expect("run_finished");
    assert_eq!(finished.1["usage"]["calls"], 1, "{body}");
    let (name, done) = events.last().unwrap();
    assert_eq!(name, "done");
    assert_eq!(done["usage"]["total_tokens"], 110);
    assert!(close(done["usage"]["cost_usd"].as_f64().unwrap(), CALL_USD));

    // The user's usage: everything, by range, and only their own.
    let all = get_json(&format!("{base}/api/usage"), ALICE).await;
    assert_eq!(
        (&all["calls"], &all["total_tokens"]),
        (&json!(5), &json!(550)),
        "{all}"
    );
    assert_eq!(all["sessions"][0]["id"], json!(session));
    let later = get_json(
        &format!("{base}/api/usage?from=2999-01-01T00:00:00Z"),
        ALICE,
    )
    .await;
    assert_eq!(later["calls"], 0, "{later}");
    let since = get_json(
        &format!("{base}/api/usage?from=2000-01-01T00:00:00Z&to=2999-01-01T00:00:00Z&user=alice"),
        ALICE,
    )
    .await;
    assert_eq!(since["total_tokens"], 550);
    let r = get(&format!("{base}/api/usage?user=alice"), BOB).await;
    assert_eq!(r.status(), 403);
    let r = get(&format!("{base}/api/usage?from=yesterday"), ALICE).await;
    assert_eq!(r.status(), 400);
    let bob = get_json(&format!("{base}/api/usage"), BOB).await;
    assert_eq!(bob["calls"], 0);

    // /v1/tools lists only what /v1/tools/execute can run: no `task`.
    let tools = get_json(&format!("{base}/v1/tools"), ALICE).await;
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"write_file") && !names.contains(&"task"),
        "{names:?}"
    );
}

#[tokio::test]
async fn cors_lets_the_browser_sdk_send_its_own_headers() {
    let server = start_with(|dir| {
        config(ScriptedChatModel::new(["hi"]), dir).cors_origin("http://app.example")
    })
    .await;
    let r = reqwest::Client::new()
        .request(
            reqwest::Method::OPTIONS,
            format!("{}/v1/chat/completions", server.url),
        )
        .header("Origin", "http://app.example")
        .header("Access-Control-Request-Method", "POST")
        .header(
            "Access-Control-Request-Headers",
            "authorization,content-type,x-stainless-os,x-stainless-lang,x-stainless-retry-count",
        )
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let allowed = r
        .headers()
        .get("access-control-allow-headers")
        .map(|v| v.to_str().unwrap().to_lowercase())
        .unwrap_or_default();
    assert!(
        allowed.contains("x-stainless-os") && allowed.contains("x-stainless-retry-count"),
        "{allowed}"
    );
    // Another origin still gets nothing.
    let r = reqwest::Client::new()
        .request(
            reqwest::Method::OPTIONS,
            format!("{}/v1/chat/completions", server.url),
        )
        .header("Origin", "http://evil.example")
        .header("Access-Control-Request-Method", "POST")
        .send()
        .await
        .unwrap();
    assert!(r.headers().get("access-control-allow-origin").is_none());
}

/// A completion as Alice; its run's id.
async fn one_completion(base: &str) -> String {
    let r = post(
        &format!("{base}/v1/chat/completions"),
        ALICE,
        json!({"messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    r.headers()["x-lc-agent-run"].to_str().unwrap().to_string()
}

#[tokio::test]
async fn prices_match_names_exactly_and_the_blueprints_prices_count_in_usage_and_runs() {
    let o3_mini = || {
        ScriptedChatModel::new([Turn::text("ok")])
            .cycled()
            .named("o3-mini")
            .with_usage(reported())
    };
    // `o3-mini` has no built-in price: it is not `o3`.
    let server = start(o3_mini()).await;
    let run = one_completion(&server.url).await;
    let all = get_json(&format!("{}/api/usage", server.url), ALICE).await;
    assert!(all.get("cost_usd").is_none(), "{all}");
    assert_eq!(all["unpriced_models"], json!(["o3-mini"]), "{all}");
    let record = get_json(&format!("{}/api/runs/{run}", server.url), ALICE).await;
    assert!(record["usage"].get("cost_usd").is_none(), "{record}");
    let _ = server.stop().await;

    // The blueprint's [prices] price it in /api/usage and the run records.
    let mut spec = approval_spec("nothing");
    spec.prices = Some(lc_agent::Prices {
        models: [(
            "o3-mini".to_string(),
            lc_agent::Price {
                input: 1.0,
                output: 4.0,
                cached_input: Some(0.5),
                cache_write: None,
            },
        )]
        .into(),
    });
    let server = start_with(|dir| config(o3_mini(), dir).spec(spec)).await;
    let run = one_completion(&server.url).await;
    let usd = (60.0 * 1.0 + 40.0 * 0.5 + 10.0 * 4.0) / 1e6;
    let all = get_json(&format!("{}/api/usage", server.url), ALICE).await;
    assert!(close(all["cost_usd"].as_f64().unwrap(), usd), "{all}");
    assert!(
        close(all["sessions"][0]["cost_usd"].as_f64().unwrap(), usd),
        "{all}"
    );
    let record = get_json(&format!("{}/api/runs/{run}", server.url), ALICE).await;
    assert!(
        close(record["usage"]["cost_usd"].as_f64().unwrap(), usd),
        "{record}"
    );
    assert!(record.get("prices").is_none(), "{record}");
    let _ = server.stop().await;
}

//! Token usage added up: per call (node metadata), per session (the
//! network's metadata, kept as it runs), per sub-network (counted in its
//! parents), per run (after minus before), per time range; estimates when
//! a model reports none; the price table.

use lc_agent::{
    HumanNode, NetworkNode, Prices, RunnableNetwork, ScriptedChatModel, TokenCounts, Turn, Usage,
    UsageExt, UsageTotals, USAGE_KEY,
};
use serde_json::json;

fn usage(prompt: u64, completion: u64) -> Usage {
    Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        ..Usage::default()
    }
}

fn human(net: &RunnableNetwork, text: &str) {
    let _scope = net.enter();
    HumanNode::new(text);
}

fn net_with(model: ScriptedChatModel) -> RunnableNetwork {
    RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("m")
        .model("m", model)
        .build()
}

#[tokio::test]
async fn a_session_adds_up_its_calls_in_its_metadata_and_a_run_is_the_difference() {
    let model = ScriptedChatModel::new(["one", "two"])
        .named("gpt-4o-mini-2024-07-18")
        .with_usage(Usage {
            cache_read_tokens: 40,
            reasoning_tokens: 3,
            ..usage(100, 10)
        });
    let net = net_with(model);
    {
        let _scope = net.enter();
        HumanNode::new("first");
    }
    net.invoke().await.unwrap();
    let before = net.usage();
    assert_eq!(before.all.calls, 1);
    assert_eq!(before.all.total_tokens, 110);

    human(&net, "second");
    net.invoke().await.unwrap();
    let after = net.usage();
    assert_eq!(
        after.all,
        TokenCounts {
            prompt_tokens: 200,
            completion_tokens: 20,
            total_tokens: 220,
            cache_read_tokens: 80,
            reasoning_tokens: 6,
            calls: 2,
            estimated_calls: 0,
            ..TokenCounts::default()
        }
    );
    // Counted under the model the server named, kept in the metadata.
    assert_eq!(
        after.by_model.keys().collect::<Vec<_>>(),
        ["gpt-4o-mini-2024-07-18"]
    );
    assert_eq!(
        net.metadata_value(USAGE_KEY).unwrap()["total_tokens"],
        json!(220)
    );
    // The run: after minus before.
    let run = after.since(&before);
    assert_eq!((run.all.calls, run.all.total_tokens), (1, 110));
    // The metadata agrees with the nodes, and survives a save.
    assert_eq!(UsageTotals::of_nodes(&net), after);
    let loaded = RunnableNetwork::from_json(&net.to_json().unwrap()).unwrap();
    assert_eq!(loaded.usage(), after);
    let last = net.current_leaf().unwrap();
    assert_eq!(
        last.metadata_value("token_usage").unwrap()["cache_read_tokens"],
        json!(40)
    );
    assert_eq!(
        last.metadata_value("response_model"),
        Some(json!("gpt-4o-mini-2024-07-18"))
    );
    // Priced: 60 uncached at 0.15, 40 cached at 0.075, 10 out at 0.60 per million, twice.
    let cost = Prices::built_in().cost(&after).usd.unwrap();
    assert!(
        (cost - 2.0 * (60.0 * 0.15 + 40.0 * 0.075 + 10.0 * 0.6) / 1e6).abs() < 1e-12,
        "{cost}"
    );
}

#[tokio::test]
async fn a_sub_networks_calls_count_in_its_parent() {
    let outer_model = ScriptedChatModel::new(["outer done"])
        .named("outer-model")
        .with_usage(usage(50, 5));
    let inner_model = ScriptedChatModel::new(["inner done"])
        .named("inner-model")
        .with_usage(usage(7, 3));
    let inner = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("inner")
        .model("inner", inner_model)
        .build();
    {
        let _scope = inner.enter();
        HumanNode::new("inner task");
    }
    let net = net_with(outer_model);
    human(&net, "go");
    net.invoke().await.unwrap();
    {
        let _scope = net.enter();
        NetworkNode::new(inner.clone());
    }
    net.invoke().await.unwrap();
    let outer = net.usage();
    assert_eq!(outer.all.calls, 2, "{outer:?}");
    assert_eq!(outer.all.total_tokens, 65);
    assert_eq!(outer.by_model["inner-model"].total_tokens, 10);
    assert_eq!(outer.by_model["outer-model"].total_tokens, 55);
    // The inner network keeps its own.
    assert_eq!(inner.usage().all.total_tokens, 10);
    assert_eq!(UsageTotals::of_nodes(&net), outer);
}

#[tokio::test]
async fn a_model_that_reports_nothing_gets_an_estimate_marked_as_such() {
    let net = net_with(ScriptedChatModel::new([Turn::text(
        "twelve chars and then some more",
    )]));
    human(&net, "A question of some forty characters here.");
    net.invoke().await.unwrap();
    let totals = net.usage();
    assert_eq!((totals.all.calls, totals.all.estimated_calls), (1, 1));
    assert!(totals.all.is_estimated());
    // 31 characters answered: 8 tokens at four characters a token.
    assert_eq!(totals.all.completion_tokens, 8);
    assert!(totals.all.prompt_tokens >= 10, "{totals:?}");
    let leaf = net.current_leaf().unwrap();
    assert_eq!(
        leaf.metadata_value("token_usage").unwrap()["estimated"],
        json!(true)
    );
}

#[tokio::test]
async fn a_session_saved_without_totals_starts_from_its_nodes() {
    let net = net_with(ScriptedChatModel::new(["a", "b"]).with_usage(usage(10, 1)));
    human(&net, "one");
    net.invoke().await.unwrap();
    // As a session saved before totals were kept.
    net.with_metadata_mut(|m| m.shift_remove(USAGE_KEY));
    human(&net, "two");
    net.invoke().await.unwrap();
    assert_eq!(net.usage().all.calls, 2);
    assert_eq!(net.usage().all.total_tokens, 22);
}

#[tokio::test]
async fn a_time_range_counts_the_calls_that_started_in_it() {
    let net = net_with(ScriptedChatModel::new(["a"]).with_usage(usage(10, 1)));
    human(&net, "one");
    net.invoke().await.unwrap();
    let all = UsageTotals::between(&net, None, None);
    assert_eq!(all.all.calls, 1);
    let from_past = UsageTotals::between(&net, Some("2000-01-01T00:00:00Z"), None);
    assert_eq!(from_past.all.calls, 1);
    let future = UsageTotals::between(&net, Some("2999-01-01T00:00:00Z"), None);
    assert!(future.is_empty());
    let before = UsageTotals::between(&net, None, Some("2000-01-01T00:00:00Z"));
    assert!(before.is_empty());
}

#[test]
fn prices_extend_from_toml_and_unknown_models_have_no_cost() {
    let mut prices = Prices::built_in();
    let mut totals = UsageTotals::default();
    totals.add("SmolLM2-135M-Instruct", &usage(1000, 100));
    let cost = prices.cost(&totals);
    assert_eq!(cost.usd, None);
    assert_eq!(cost.unpriced, ["SmolLM2-135M-Instruct"]);
    let priced = totals.priced(&prices);
    assert!(priced.get("cost_usd").is_none(), "{priced}");
    assert_eq!(priced["unpriced_models"], json!(["SmolLM2-135M-Instruct"]));

    prices
        .extend_toml("[models.\"SmolLM2\"]\ninput = 1.0\noutput = 2.0\n")
        .unwrap();
    let cost = prices.cost(&totals);
    assert!((cost.usd.unwrap() - 0.0012).abs() < 1e-12);
    let priced = totals.priced(&prices);
    assert!(priced["by_model"]["SmolLM2-135M-Instruct"]["cost_usd"].is_f64());

    // A bad file names itself.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prices.toml");
    std::fs::write(&path, "[models.x]\ninput = \"free\"\n").unwrap();
    let e = prices.extend_file(&path).unwrap_err().to_string();
    assert!(e.contains("prices.toml"), "{e}");
    // The longest prefix wins; a provider part is ignored.
    assert_eq!(prices.of("openai/gpt-4o-2024-08-06").unwrap().input, 2.5);
    assert_eq!(prices.of("gpt-4o-mini").unwrap().input, 0.15);
}

/// Usage belongs to nodes: a fork's own usage is its new nodes' calls;
/// the copied nodes' calls are shown apart as inherited; a sum over the
/// origin and the fork (kept totals or added up from the nodes, over any
/// time range) counts each call once.
#[tokio::test]
async fn a_fork_counts_its_own_calls_and_shows_the_inherited_apart() {
    use lc_agent::TimeTravelExt;
    let model = ScriptedChatModel::new(["one", "two", "three"]).with_usage(usage(100, 10));
    let net = net_with(model);
    for text in ["first", "second"] {
        human(&net, text);
        net.invoke().await.unwrap();
    }
    assert_eq!(net.usage().all.calls, 2);
    let first_answer = net
        .nodes()
        .into_iter()
        .find(|n| n.output().is_some_and(|m| m.text() == "one"))
        .unwrap();
    let fork = net.fork_at(first_answer.id()).unwrap();
    assert_eq!(fork.usage().all.calls, 0, "nothing ran in the fork yet");
    let inherited = fork.inherited_usage();
    assert_eq!(inherited.all.calls, 1, "the one call above the fork point");
    assert_eq!(inherited.all.total_tokens, 110);
    // Added up from the nodes, the copied ones count in the origin only.
    assert_eq!(UsageTotals::of_nodes(&fork).all.calls, 0);
    assert_eq!(UsageTotals::between(&fork, None, None).all.calls, 0);

    // A turn in the fork is the fork's own.
    let model = ScriptedChatModel::new(["fork answer"]).with_usage(usage(50, 5));
    lc_agent::Attachments::register_model(&fork, "m", model);
    human(&fork, "in the fork");
    fork.invoke().await.unwrap();
    assert_eq!(fork.usage().all.calls, 1);
    assert_eq!(fork.usage().all.total_tokens, 55);
    assert_eq!(UsageTotals::of_nodes(&fork).all.calls, 1);
    // Origin + fork: every call once (2 + 1), kept totals and node sums alike.
    let mut sum = net.usage();
    sum.merge(&fork.usage());
    assert_eq!(sum.all.calls, 3);
    let mut from_nodes = UsageTotals::of_nodes(&net);
    from_nodes.merge(&UsageTotals::of_nodes(&fork));
    assert_eq!(from_nodes.all.calls, 3);
    // Saved and loaded, the same.
    let loaded = RunnableNetwork::from_json(&fork.to_json().unwrap()).unwrap();
    assert_eq!(loaded.usage().all.calls, 1);
    assert_eq!(UsageTotals::of_nodes(&loaded).all.calls, 1);
    assert_eq!(loaded.inherited_usage().all.calls, 1);
    // A fork of the fork inherits the fork's copied and own calls above it.
    let leaf = fork.current_leaf().unwrap();
    let again = fork.fork_at(leaf.id()).unwrap();
    let inherited = again.inherited_usage();
    assert_eq!(inherited.all.calls, 2);
    assert_eq!(again.usage().all.calls, 0);
}

//! Usage and cost as the API shows them: OpenAI's `usage` object and the
//! priced totals of a run or a session (`GET /api/usage`, a user's usage
//! over a time range, is handlers/usage.rs).
//!
//! ```text
//!  core UsageTotals (lc_agent::usage) ─▶ openai_usage  {prompt_tokens, completion_tokens, total_tokens, *_details}
//!                                     └▶ priced        {..., calls, by_model, cost_usd?, unpriced_models?}
//!  prices: the built-in table + $LC_AGENT_HOME/prices.toml (read once) + the session blueprint's [prices]
//! ```

use std::sync::OnceLock;

use lc_agent::{Prices, RunnableNetwork, UsageTotals};
use lc_agent_deepagent::{AgentSpec, AGENT_SPEC_KEY};
use serde_json::{json, Value};

/// The built-in prices with the user's `prices.toml` on top, read once.
pub(crate) fn base_prices() -> &'static Prices {
    static PRICES: OnceLock<Prices> = OnceLock::new();
    PRICES.get_or_init(Prices::load)
}

/// The blueprint's own `[prices]` of a session.
pub(crate) fn own_prices(net: &RunnableNetwork) -> Option<Prices> {
    match AgentSpec::from_network(net) {
        Some(Ok(spec)) => spec.prices,
        _ => None,
    }
}

/// The blueprint's own `[prices]` in a session's metadata (as a session
/// list's entry has it), read without the rest of the blueprint.
pub(crate) fn own_prices_in(metadata: &serde_json::Map<String, Value>) -> Option<Prices> {
    let prices = metadata.get(AGENT_SPEC_KEY)?.get("prices")?;
    serde_json::from_value(prices.clone()).ok()
}

/// The base table with a blueprint's own prices on top.
pub(crate) fn with_own(own: Option<&Prices>) -> Prices {
    let mut prices = base_prices().clone();
    if let Some(own) = own {
        prices.extend(own);
    }
    prices
}

/// The prices for a session: the base table and its blueprint's own.
pub(crate) fn prices_for(net: &RunnableNetwork) -> Prices {
    with_own(own_prices(net).as_ref())
}

/// `totals` as JSON with their cost under the session's prices.
pub(crate) fn priced(net: &RunnableNetwork, totals: &UsageTotals) -> Value {
    totals.priced(&prices_for(net))
}

/// OpenAI's `usage` object for `totals` (cached and reasoning tokens in
/// the `*_details`, as OpenAI reports them); an estimate says so in
/// `estimated: true`.
pub(crate) fn openai_usage(totals: &UsageTotals) -> Value {
    let all = &totals.all;
    let mut usage = json!({
        "prompt_tokens": all.prompt_tokens,
        "completion_tokens": all.completion_tokens,
        "total_tokens": all.total_tokens,
        "prompt_tokens_details": {"cached_tokens": all.cache_read_tokens},
        "completion_tokens_details": {"reasoning_tokens": all.reasoning_tokens},
    });
    if all.is_estimated() {
        usage["estimated"] = json!(true);
    }
    usage
}

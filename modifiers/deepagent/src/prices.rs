//! One price source for every door (the chat footer, `/tokens`,
//! `sessions list` and `show`, exec, the server, its page and metrics):
//! the session blueprint's `[prices]` over the price file
//! (`$LC_AGENT_HOME/prices.toml`) over the built-in table.

use lc_agent::{Prices, RunnableNetwork};
use serde_json::{Map, Value};

use crate::spec::{AgentSpec, AGENT_SPEC_KEY};

/// The prices of `net`'s session: the blueprint's own over the price
/// file over the built-ins.
pub fn session_prices(net: &RunnableNetwork) -> Prices {
    let own = match AgentSpec::from_network(net) {
        Some(Ok(spec)) => spec.prices,
        _ => None,
    };
    with_base(own.as_ref())
}

/// The prices of a session from its metadata (a session list's entry),
/// without loading it: the blueprint's own over the file and built-ins.
pub fn session_prices_in(metadata: &Map<String, Value>) -> Prices {
    let own = metadata
        .get(AGENT_SPEC_KEY)
        .and_then(|spec| spec.get("prices"))
        .and_then(|prices| serde_json::from_value::<Prices>(prices.clone()).ok());
    with_base(own.as_ref())
}

/// The price file over the built-ins, with `own` on top.
fn with_base(own: Option<&Prices>) -> Prices {
    let mut prices = Prices::load();
    if let Some(own) = own {
        prices.extend(own);
    }
    prices
}

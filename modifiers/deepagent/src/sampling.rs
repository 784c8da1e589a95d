//! A session's requested sampling: what a client asked of a run
//! (`temperature`, `max_tokens`, `stop`, `seed`, … of an OpenAI chat
//! completion), kept in the network's metadata so any server running the
//! run honours it, and put on every main-conversation model call of the
//! run by [`SamplingModifier`]. Sub-agents keep their own settings.

use async_trait::async_trait;
use lc_agent::{ChatRequest, NetworkModifier, NodeRef, Result, RunnableNetwork, Sampling};

/// The network metadata key that holds the requested [`Sampling`].
pub const SAMPLING_KEY: &str = "sampling";

/// Sets the sampling the session's next model calls ask (`None`, or an
/// empty one, removes it).
pub fn set_sampling(network: &RunnableNetwork, sampling: Option<&Sampling>) {
    match sampling
        .filter(|s| !s.is_empty())
        .and_then(|s| serde_json::to_value(s).ok())
    {
        Some(value) => network.set_metadata(SAMPLING_KEY, value),
        None => {
            network.with_metadata_mut(|m| m.shift_remove(SAMPLING_KEY));
        }
    }
}

/// The sampling the session asks (empty when none; a saved value that
/// does not parse is ignored with a warning).
pub fn sampling_of(network: &RunnableNetwork) -> Sampling {
    let Some(value) = network.metadata_value(SAMPLING_KEY) else {
        return Sampling::default();
    };
    serde_json::from_value(value).unwrap_or_else(|error| {
        tracing::warn!(%error, "ignoring the session's sampling");
        Sampling::default()
    })
}

/// Puts the session's [`Sampling`] (see [`set_sampling`]) on its model
/// calls. A [`crate::DeepAgent`] always has it.
#[derive(Debug, Clone, Default)]
pub(crate) struct SamplingModifier;

#[async_trait]
impl NetworkModifier for SamplingModifier {
    fn id(&self) -> &str {
        "sampling"
    }

    async fn on_chat_request(
        &self,
        network: &RunnableNetwork,
        _node: &NodeRef,
        request: &mut ChatRequest,
    ) -> Result<()> {
        if network.outer().is_none() {
            let sampling = sampling_of(network);
            if !sampling.is_empty() {
                request.sampling = sampling;
            }
        }
        Ok(())
    }
}

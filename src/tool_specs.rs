//! The tools a chat request offers ([`ToolSpecs`]): one shared list,
//! copied only by the code that changes it, and the network's memory of
//! the last list it built (so a turn whose tools did not change copies no
//! spec).
//!
//! ```text
//!  net.tools()  ──▶  every tool says `fixed_spec`, same tools as last turn?
//!                      yes ─▶ the same ToolSpecs (a reference count)
//!                      no  ─▶ spec() of each, remembered when all are fixed
//! ```

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::tool::{Tool, ToolSpec};

/// The tools a chat request offers, in order: shared (a copy is a
/// reference count) and copied on the first change
/// ([`ToolSpecs::to_mut`], [`ToolSpecs::retain`]).
/// Reads as a slice of [`ToolSpec`].
///
/// ```
/// use lc_agent::{ToolSpec, ToolSpecs};
/// use serde_json::json;
///
/// let spec = |name: &str| ToolSpec {
///     name: name.into(),
///     description: String::new(),
///     parameters: json!({"type": "object"}),
/// };
/// let offered = ToolSpecs::from(vec![spec("ls"), spec("grep")]);
/// let mut narrowed = offered.clone();
/// narrowed.retain(|t| t.name != "grep");
/// assert_eq!(offered.len(), 2); // the original is untouched
/// assert_eq!(narrowed[0].name, "ls");
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolSpecs(Arc<Shared>);

/// The list, and what was counted of it once (a turn that offers the same
/// tools as the turn before counts nothing again).
#[derive(Debug, Clone, Default)]
struct Shared {
    specs: Vec<ToolSpec>,
    /// The estimate of the list's prompt tokens (`crate::usage`'s).
    approx_tokens: OnceLock<u64>,
}

impl PartialEq for ToolSpecs {
    fn eq(&self, other: &Self) -> bool {
        self.0.specs == other.0.specs
    }
}

impl ToolSpecs {
    /// The list to change in place (copied first when it is shared).
    pub fn to_mut(&mut self) -> &mut Vec<ToolSpec> {
        let shared = Arc::make_mut(&mut self.0);
        // What was counted of the list no longer holds.
        shared.approx_tokens = OnceLock::new();
        &mut shared.specs
    }

    /// The estimated prompt tokens of the list, counted by `count` the
    /// first time and kept with the shared list after.
    pub(crate) fn approx_tokens(&self, count: impl FnOnce(&[ToolSpec]) -> u64) -> u64 {
        *self.0.approx_tokens.get_or_init(|| count(&self.0.specs))
    }

    /// Keeps the tools `keep` accepts; the shared list is copied only when
    /// one is left out.
    pub fn retain(&mut self, mut keep: impl FnMut(&ToolSpec) -> bool) {
        if self.0.specs.iter().all(&mut keep) {
            return;
        }
        self.to_mut().retain(keep);
    }
}

impl Deref for ToolSpecs {
    type Target = [ToolSpec];

    fn deref(&self) -> &[ToolSpec] {
        &self.0.specs
    }
}

impl From<Vec<ToolSpec>> for ToolSpecs {
    fn from(specs: Vec<ToolSpec>) -> Self {
        ToolSpecs(Arc::new(Shared {
            specs,
            approx_tokens: OnceLock::new(),
        }))
    }
}

impl FromIterator<ToolSpec> for ToolSpecs {
    fn from_iter<I: IntoIterator<Item = ToolSpec>>(iter: I) -> Self {
        ToolSpecs::from(iter.into_iter().collect::<Vec<_>>())
    }
}

impl<'a> IntoIterator for &'a ToolSpecs {
    type Item = &'a ToolSpec;
    type IntoIter = std::slice::Iter<'a, ToolSpec>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.specs.iter()
    }
}

impl Serialize for ToolSpecs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.specs.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ToolSpecs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<ToolSpec>::deserialize(d).map(ToolSpecs::from)
    }
}

/// The last tool list a network built its specs from, with those specs:
/// kept only when every tool's spec is fixed ([`Tool::fixed_spec`]). The
/// tools are held, so none of them is dropped while its spec is kept.
#[derive(Default)]
pub(crate) struct SpecMemory(parking_lot::Mutex<Option<Remembered>>);

/// Tools and the specs read from them.
type Remembered = (Vec<Arc<dyn Tool>>, ToolSpecs);

impl SpecMemory {
    /// The specs of `tools`: the remembered ones when `tools` are the same
    /// tool objects as last time, else read from each tool (and
    /// remembered when every spec is fixed).
    pub(crate) fn specs_of(&self, tools: Vec<Arc<dyn Tool>>) -> ToolSpecs {
        let mut memory = self.0.lock();
        if let Some((known, specs)) = memory.as_ref()
            && known.len() == tools.len()
            && known.iter().zip(&tools).all(|(a, b)| Arc::ptr_eq(a, b))
        {
            return specs.clone();
        }
        let specs: ToolSpecs = tools.iter().map(|t| t.spec()).collect();
        *memory = tools
            .iter()
            .all(|t| t.fixed_spec())
            .then(|| (tools, specs.clone()));
        specs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }

    #[test]
    fn the_count_is_kept_with_the_list_and_dropped_when_it_changes() {
        let specs = ToolSpecs::from(vec![spec("ls"), spec("grep")]);
        let counted = std::cell::Cell::new(0);
        let count = |tools: &[ToolSpec]| {
            counted.set(counted.get() + 1);
            tools.len() as u64
        };
        assert_eq!(specs.approx_tokens(count), 2);
        // A copy shares the list, and what was counted of it.
        let copy = specs.clone();
        assert_eq!(copy.approx_tokens(count), 2);
        assert_eq!(counted.get(), 1);
        // A changed copy counts again; the original keeps its count.
        let mut narrowed = specs.clone();
        narrowed.retain(|t| t.name != "grep");
        assert_eq!(narrowed.approx_tokens(count), 1);
        assert_eq!(counted.get(), 2);
        assert_eq!(specs.approx_tokens(count), 2);
        assert_eq!(counted.get(), 2);
    }
}

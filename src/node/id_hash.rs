//! Hashing node ids for the maps a run builds per pass (topological
//! order, waves, held nodes): an id is a random (v4) UUID, so its own bits
//! are a good hash, and SipHash over 16 bytes per lookup showed in the
//! profile of a long chain.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use super::NodeId;

/// Folds the bytes of a node id into 64 bits (the ids are random; maps
/// keyed by anything else should not use it).
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word))
                .wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn write_usize(&mut self, n: usize) {
        // The length prefix of the id's bytes.
        self.0 ^= n as u64;
    }
}

/// A map keyed by node ids.
pub(crate) type IdMap<V> = HashMap<NodeId, V, BuildHasherDefault<IdHasher>>;

/// A set of node ids.
pub(crate) type IdSet = HashSet<NodeId, BuildHasherDefault<IdHasher>>;

/// How many ids a [`SmallIdMap`] keeps in a list before it hashes them.
const SMALL: usize = 16;

/// A map keyed by node ids for the few ids of one run pass (usually one
/// to three pending nodes): a list searched in order while it is small, a
/// hash map beyond that — no table to allocate on every turn.
pub(crate) enum SmallIdMap<V> {
    /// Up to `SMALL` entries.
    List(smallvec::SmallVec<[(NodeId, V); 4]>),
    /// More.
    Hashed(IdMap<V>),
}

impl<V> SmallIdMap<V> {
    /// Room for `n` entries.
    pub(crate) fn with_capacity(n: usize) -> Self {
        if n <= SMALL {
            SmallIdMap::List(smallvec::SmallVec::with_capacity(n))
        } else {
            SmallIdMap::Hashed(IdMap::with_capacity_and_hasher(n, Default::default()))
        }
    }

    /// The value of `id`.
    pub(crate) fn get(&self, id: &NodeId) -> Option<&V> {
        match self {
            SmallIdMap::List(list) => list.iter().find(|(k, _)| k == id).map(|(_, v)| v),
            SmallIdMap::Hashed(map) => map.get(id),
        }
    }

    /// Whether `id` has a value.
    pub(crate) fn contains_key(&self, id: &NodeId) -> bool {
        self.get(id).is_some()
    }

    /// Sets the value of `id`.
    pub(crate) fn insert(&mut self, id: NodeId, value: V) {
        match self {
            SmallIdMap::List(list) => {
                if let Some(slot) = list.iter_mut().find(|(k, _)| *k == id) {
                    slot.1 = value;
                } else if list.len() < SMALL {
                    list.push((id, value));
                } else {
                    let mut map: IdMap<V> =
                        IdMap::with_capacity_and_hasher(SMALL * 2, Default::default());
                    map.extend(list.drain(..));
                    map.insert(id, value);
                    *self = SmallIdMap::Hashed(map);
                }
            }
            SmallIdMap::Hashed(map) => {
                map.insert(id, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_spread_and_stay_apart() {
        let ids: Vec<NodeId> = (0..1000).map(|_| uuid::Uuid::new_v4()).collect();
        let mut map = IdMap::default();
        for (i, id) in ids.iter().enumerate() {
            map.insert(*id, i);
        }
        assert_eq!(map.len(), 1000);
        assert!(ids.iter().enumerate().all(|(i, id)| map[id] == i));
    }

    #[test]
    fn a_small_map_answers_as_a_hash_map_below_and_above_its_list() {
        let ids: Vec<NodeId> = (0..40).map(|_| uuid::Uuid::new_v4()).collect();
        for n in [0, 1, SMALL, SMALL + 1, 40] {
            let mut small = SmallIdMap::with_capacity(2);
            for (i, id) in ids[..n].iter().enumerate() {
                small.insert(*id, i);
            }
            small.insert(ids[0], 99);
            for (i, id) in ids.iter().enumerate() {
                let want = match i {
                    0 => Some(99),
                    i if i < n => Some(i),
                    _ => None,
                };
                assert_eq!(small.get(id).copied(), want, "n={n} i={i}");
            }
        }
    }
}

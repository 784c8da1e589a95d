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
}

//! [`VectorIndex`]: the entries' embeddings in RAM, per user, searched by
//! cosine similarity.
//!
//! ```text
//!  alice ─▶ rows: ids · kinds · tags           one row per entry with a vector of the model
//!           data:  [f32; dims] × rows          unit length, one contiguous buffer
//!           signs: [u64; dims/64] × rows       the sign bit of each component
//!
//!  search(alice, q, pool):
//!    rows ≤ 10,000  ─▶ q · row for every allowed row (exact)             ─▶ best `pool`
//!    more           ─▶ Hamming distance of the sign bits (popcount), the
//!                      best max(40 × pool, 2,000) ─▶ q · row, exact         ─▶ best `pool`
//! ```
//!
//! Vectors are normalized when added, so cosine similarity is a dot
//! product. Only the vectors of the store's embedding model are taken
//! (another model's are not comparable: those entries are found by words);
//! the first vector of a user sets the dimension, and a vector of another
//! length is left out with a warning.
//!
//! Why two stages: an exact scan reads every vector (`4 × dims` bytes
//! each, 230 MB for 100,000 entries of 576 dimensions), too slow for a
//! search in the prompt's path past some 10,000 entries. The sign bits
//! are 1/32 of that; the angle between two vectors is what their Hamming
//! distance estimates, and the exact similarity of a candidate pool many
//! times the size asked for ranks the result (`examples/agents` measures
//! how often it matches the exact answer). Users are apart: each has its
//! own rows, and a search reads only the user's.

use std::collections::HashMap;

use parking_lot::RwLock;

use super::entry::{MemoryEntry, MemoryKind, MemoryQuery};

/// Up to this many rows, every search is exact.
const EXACT_ROWS: usize = 10_000;
/// Candidates from the sign bits per result asked for.
const RESCORE_FACTOR: usize = 40;
/// The fewest candidates from the sign bits.
const MIN_RESCORE: usize = 2_000;

/// Vectors of one embedding model, per user (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct VectorIndex {
    model: String,
    users: RwLock<HashMap<String, UserVectors>>,
}

/// One user's rows.
#[derive(Debug, Default)]
struct UserVectors {
    /// The user's entries taken in (with a vector or not).
    seen: usize,
    dims: usize,
    ids: Vec<String>,
    kinds: Vec<MemoryKind>,
    tags: Vec<Box<[String]>>,
    /// Unit vectors, `dims` each.
    data: Vec<f32>,
    /// Sign bits, `words(dims)` each.
    signs: Vec<u64>,
}

fn words(dims: usize) -> usize {
    dims.div_ceil(64)
}

/// `v` scaled to unit length; `None` when it has none.
pub(crate) fn normalized(v: &[f32]) -> Option<Vec<f32>> {
    let norm = dot(v, v).sqrt();
    (norm.is_finite() && norm > 0.0).then(|| v.iter().map(|x| x / norm).collect())
}

/// The dot product, in 16 lanes (the compiler vectorizes it).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..16 {
            lanes[i] += x[i] * y[i];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

fn sign_bits(v: &[f32], out: &mut Vec<u64>) {
    for chunk in v.chunks(64) {
        let mut word = 0u64;
        for (i, x) in chunk.iter().enumerate() {
            if *x > 0.0 {
                word |= 1 << i;
            }
        }
        out.push(word);
    }
}

impl UserVectors {
    fn rows(&self) -> usize {
        self.ids.len()
    }

    fn allowed(&self, row: usize, query: &MemoryQuery) -> bool {
        (query.kinds.is_empty() || query.kinds.contains(&self.kinds[row]))
            && query
                .tag
                .as_ref()
                .is_none_or(|t| self.tags[row].iter().any(|x| x == t))
            && query
                .exclude_tag
                .as_ref()
                .is_none_or(|t| !self.tags[row].iter().any(|x| x == t))
    }

    fn row(&self, row: usize) -> &[f32] {
        &self.data[row * self.dims..(row + 1) * self.dims]
    }
}

/// The `n` best of `scored` (higher first; ties by row).
fn best(mut scored: Vec<(f32, usize)>, n: usize) -> Vec<(f32, usize)> {
    let order = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if scored.len() > n && n > 0 {
        scored.select_nth_unstable_by(n - 1, order);
        scored.truncate(n);
    }
    scored.sort_unstable_by(order);
    scored.truncate(n);
    scored
}

impl VectorIndex {
    /// An empty index for the vectors of `model`.
    pub(crate) fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            users: RwLock::new(HashMap::new()),
        }
    }

    /// How many of `user`'s entries it has taken in.
    pub(crate) fn seen(&self, user: &str) -> usize {
        self.users.read().get(user).map_or(0, |u| u.seen)
    }

    /// Forgets `user`'s rows (the entries are taken in again).
    pub(crate) fn remove_user(&self, user: &str) {
        self.users.write().remove(user);
    }

    /// Takes in `user`'s next entries (those with a vector of the model
    /// become rows).
    pub(crate) fn add(&self, user: &str, entries: &[MemoryEntry]) {
        let mut users = self.users.write();
        let rows = users.entry(user.to_string()).or_default();
        rows.seen += entries.len();
        for entry in entries {
            let Some(embedding) = entry.embedding.as_ref().filter(|e| e.model == self.model) else {
                continue;
            };
            if rows.dims == 0 {
                rows.dims = embedding.vector.len();
            }
            if embedding.vector.len() != rows.dims {
                tracing::warn!(
                    user, id = %entry.id, dims = embedding.vector.len(), expected = rows.dims,
                    "a memory's embedding has another length than the user's others; finding it by words only"
                );
                continue;
            }
            let Some(unit) = normalized(&embedding.vector) else {
                continue;
            };
            sign_bits(&unit, &mut rows.signs);
            rows.data.extend_from_slice(&unit);
            rows.ids.push(entry.id.clone());
            rows.kinds.push(entry.kind);
            rows.tags.push(entry.tags.clone().into_boxed_slice());
        }
    }

    /// `user`'s best `pool` entries for the unit vector `query`, with
    /// their cosine similarity, most similar first; only the rows the
    /// query's filters allow.
    pub(crate) fn search(
        &self,
        user: &str,
        vector: &[f32],
        query: &MemoryQuery,
        pool: usize,
    ) -> Vec<(String, f32)> {
        let users = self.users.read();
        let Some(rows) = users.get(user) else {
            return Vec::new();
        };
        if rows.rows() == 0 || pool == 0 {
            return Vec::new();
        }
        if vector.len() != rows.dims {
            tracing::warn!(
                user,
                dims = vector.len(),
                expected = rows.dims,
                "the question's embedding has another length than the stored ones; searching by words only"
            );
            return Vec::new();
        }
        let filtered =
            !query.kinds.is_empty() || query.tag.is_some() || query.exclude_tag.is_some();
        let allowed = |row: usize| !filtered || rows.allowed(row, query);
        let candidates: Vec<usize> = if rows.rows() <= EXACT_ROWS {
            (0..rows.rows()).filter(|r| allowed(*r)).collect()
        } else {
            let w = words(rows.dims);
            let mut code = Vec::with_capacity(w);
            sign_bits(vector, &mut code);
            let mut near: Vec<(f32, usize)> = rows
                .signs
                .chunks_exact(w)
                .enumerate()
                .filter(|(r, _)| allowed(*r))
                .map(|(r, bits)| {
                    let d: u32 = bits
                        .iter()
                        .zip(&code)
                        .map(|(a, b)| (a ^ b).count_ones())
                        .sum();
                    (-(d as f32), r)
                })
                .collect();
            near = best(near, (pool * RESCORE_FACTOR).max(MIN_RESCORE));
            near.into_iter().map(|(_, r)| r).collect()
        };
        let scored: Vec<(f32, usize)> = candidates
            .into_iter()
            .map(|r| (dot(vector, rows.row(r)), r))
            .collect();
        best(scored, pool)
            .into_iter()
            .map(|(score, r)| (rows.ids[r].clone(), score))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(user: &str, vector: Vec<f32>) -> MemoryEntry {
        MemoryEntry::new(user, MemoryKind::Fact, "x").with_embedding("m", vector)
    }

    #[test]
    fn the_nearest_rows_of_the_user_and_model_only() {
        let index = VectorIndex::new("m");
        let near = entry("alice", vec![1.0, 0.1, 0.0]);
        let far = entry("alice", vec![-1.0, 0.0, 0.0]);
        let other_model = MemoryEntry::new("alice", MemoryKind::Fact, "y")
            .with_embedding("other", vec![1.0, 0.0, 0.0]);
        let words_only = MemoryEntry::new("alice", MemoryKind::Fact, "z");
        index.add(
            "alice",
            &[far.clone(), near.clone(), other_model, words_only],
        );
        index.add("bob", &[entry("bob", vec![1.0, 0.0, 0.0])]);
        assert_eq!(index.seen("alice"), 4);
        let q = normalized(&[1.0, 0.0, 0.0]).expect("unit");
        let found = index.search("alice", &q, &MemoryQuery::new("q"), 10);
        let ids: Vec<&str> = found.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, [near.id.as_str(), far.id.as_str()]);
        assert!((found[1].1 + 1.0).abs() < 1e-6, "{found:?}");
        assert!(index
            .search("alice", &[1.0, 0.0], &MemoryQuery::new("q"), 10)
            .is_empty());
    }

    #[test]
    fn the_sign_bit_stage_finds_what_the_exact_scan_finds() {
        // Clustered vectors past the exact limit: the best of each query
        // is the same with both stages as with the exact scan.
        let dims = 96;
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % 2001) as f32 / 1000.0 - 1.0
        };
        let centers: Vec<Vec<f32>> = (0..50)
            .map(|_| (0..dims).map(|_| next()).collect())
            .collect();
        let rows = EXACT_ROWS + 5_000;
        let entries: Vec<MemoryEntry> = (0..rows)
            .map(|i| {
                let c = &centers[i % centers.len()];
                entry("alice", c.iter().map(|x| x + 0.6 * next()).collect())
            })
            .collect();
        let index = VectorIndex::new("m");
        index.add("alice", &entries);
        for c in centers.iter().take(10) {
            let q: Vec<f32> = c.iter().map(|x| x + 0.3 * next()).collect();
            let q = normalized(&q).expect("unit");
            let fast = index.search("alice", &q, &MemoryQuery::new("q"), 5);
            let mut exact: Vec<(f32, usize)> = entries
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    let v =
                        normalized(&e.embedding.as_ref().expect("vector").vector).expect("unit");
                    (dot(&q, &v), i)
                })
                .collect();
            exact = best(exact, 5);
            let exact: Vec<&str> = exact.iter().map(|(_, i)| entries[*i].id.as_str()).collect();
            let fast: Vec<&str> = fast.iter().map(|(id, _)| id.as_str()).collect();
            assert_eq!(fast, exact);
        }
    }
}

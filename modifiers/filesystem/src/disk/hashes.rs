//! The SHA-256 of contents the recorded changes hashed lately, kept with
//! the contents themselves: the same bytes come back often (the file a
//! change finds is what the agent's previous change left there; the agent
//! writes the same text again, here or to another file), and a compare of
//! the bytes costs far less than hashing them.
//!
//! ```text
//!  sha256(bytes) ── recent contents, newest first: same length and same bytes?
//!                     yes ─▶ its hash        (a compare; exact)
//!                     no  ─▶ SHA-256 of the bytes
//!  remember(bytes, sha256)   after a write or an edit: what the file holds now
//! ```
//!
//! A hit is decided by comparing the bytes themselves, never by a size or
//! a modification time (a same-size change within the filesystem's clock
//! tick keeps both): the file is always read, only the hashing is spared.
//! What is kept stays within `MAX_ENTRIES` contents and `MAX_BYTES`.

use std::collections::VecDeque;

use parking_lot::Mutex;

use crate::fingerprint::hash;

/// The most contents kept (a backend lives as long as its workspace: a
/// few recent files, not a cache of the tree).
const MAX_ENTRIES: usize = 16;

/// The most bytes kept in all.
const MAX_BYTES: usize = 1024 * 1024;

/// The largest content kept (a larger one is hashed whenever it is met:
/// reading and writing it costs more than the hash anyway).
const MAX_ONE: usize = 256 * 1024;

/// Contents hashed lately and their SHA-256, newest first.
#[derive(Default)]
pub(super) struct RecentHashes(Mutex<Recent>);

#[derive(Default)]
struct Recent {
    entries: VecDeque<Entry>,
    /// The bytes of all the entries.
    bytes: usize,
}

struct Entry {
    bytes: Vec<u8>,
    sha256: String,
}

impl Recent {
    fn position(&self, bytes: &[u8]) -> Option<usize> {
        self.entries
            .iter()
            .position(|e| e.bytes.len() == bytes.len() && e.bytes == bytes)
    }
}

impl RecentHashes {
    /// The SHA-256 (lowercase hex) of `bytes`: a recent content's when it
    /// is the very same bytes, else computed.
    pub(super) fn sha256(&self, bytes: &[u8]) -> String {
        {
            let recent = self.0.lock();
            if let Some(i) = recent.position(bytes) {
                return recent.entries[i].sha256.clone();
            }
        }
        hash(bytes)
    }

    /// Keeps `bytes` with their SHA-256 (`sha256`, which the caller got
    /// from [`RecentHashes::sha256`] of these very bytes) as the newest
    /// content; the oldest go once there are too many.
    pub(super) fn remember(&self, bytes: Vec<u8>, sha256: &str) {
        if bytes.len() > MAX_ONE {
            return;
        }
        let mut recent = self.0.lock();
        let entry = match recent.position(&bytes) {
            Some(i) => match recent.entries.remove(i) {
                Some(entry) => entry,
                None => return,
            },
            None => {
                recent.bytes += bytes.len();
                Entry {
                    bytes,
                    sha256: sha256.to_string(),
                }
            }
        };
        recent.entries.push_front(entry);
        while recent.entries.len() > MAX_ENTRIES || recent.bytes > MAX_BYTES {
            let Some(oldest) = recent.entries.pop_back() else {
                break;
            };
            recent.bytes -= oldest.bytes.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_hash_only_for_the_very_same_bytes() {
        let recent = RecentHashes::default();
        let one = hash(b"one");
        assert_eq!(recent.sha256(b"one"), one);
        recent.remember(b"one".to_vec(), &one);
        assert_eq!(recent.sha256(b"one"), one);
        // Same length, other bytes: hashed.
        assert_eq!(recent.sha256(b"two"), hash(b"two"));
        // A kept entry answers for its bytes only (shown with a marker
        // that is no real hash).
        recent.remember(b"three".to_vec(), "marker");
        assert_eq!(recent.sha256(b"three"), "marker");
        assert_eq!(recent.sha256(b"three!"), hash(b"three!"));
    }

    #[test]
    fn stays_within_its_limits() {
        let recent = RecentHashes::default();
        for i in 0..MAX_ENTRIES + 5 {
            let bytes = format!("content {i}").into_bytes();
            let h = hash(&bytes);
            recent.remember(bytes, &h);
        }
        assert_eq!(recent.0.lock().entries.len(), MAX_ENTRIES);
        // The oldest went, the newest stayed.
        let oldest = b"content 0";
        recent.remember(b"marker".to_vec(), "m");
        assert_eq!(recent.sha256(oldest), hash(oldest));
        assert_eq!(recent.sha256(b"marker"), "m");
        // Remembering the same bytes again keeps one copy.
        recent.remember(b"marker".to_vec(), "m");
        assert_eq!(
            recent
                .0
                .lock()
                .entries
                .iter()
                .filter(|e| e.bytes == b"marker")
                .count(),
            1
        );
        // Big contents: within the bytes, one over the largest kept not at all.
        for i in 0..(MAX_BYTES / MAX_ONE + 2) as u8 {
            recent.remember(vec![i; MAX_ONE], "big");
        }
        assert!(recent.0.lock().bytes <= MAX_BYTES);
        recent.remember(vec![9; MAX_ONE + 1], "too big");
        assert_eq!(
            recent.sha256(&vec![9; MAX_ONE + 1]),
            hash(&vec![9; MAX_ONE + 1])
        );
    }
}

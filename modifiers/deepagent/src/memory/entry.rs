//! What memory holds: [`MemoryEntry`] (`{id, user, kind, text, tags,
//! created_at, embedding?}`), its [`MemoryKind`], its [`MemoryEmbedding`],
//! and what a search asks ([`MemoryQuery`]) and gets ([`MemoryHit`]).
//!
//! An embedding is stored as `{"model": "<name>", "vector": "<base64>"}`:
//! the vector's little-endian `f32`s in standard base64 (a third of the
//! size of a JSON array of numbers, and exact). Entries written before
//! embeddings existed have none and load as before.

use chrono::{DateTime, SubsecRound, Utc};
use serde::{Deserialize, Serialize};

/// What an entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    /// One finished turn of a conversation: what the user said and the answer.
    Turn,
    /// A rolling summary of conversations.
    Summary,
    /// A lasting fact (the `remember` tool, or the application).
    Fact,
}

impl MemoryKind {
    /// The name stored and shown (`turn`, `summary`, `fact`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            MemoryKind::Turn => "turn",
            MemoryKind::Summary => "summary",
            MemoryKind::Fact => "fact",
        }
    }

    /// The kind named `name`.
    pub(crate) fn parse(name: &str) -> Option<Self> {
        match name {
            "turn" => Some(MemoryKind::Turn),
            "summary" => Some(MemoryKind::Summary),
            "fact" => Some(MemoryKind::Fact),
            _ => None,
        }
    }
}

impl std::fmt::Display for MemoryKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One memory of one user.
///
/// ```
/// use lc_agent_deepagent::memory::{MemoryEntry, MemoryKind};
/// let e = MemoryEntry::new("alice", MemoryKind::Fact, "Prefers tabs").with_tags(["style"]);
/// assert_eq!((e.user.as_str(), e.tags.len()), ("alice", 1));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryEntry {
    /// A unique id (uuid v4).
    pub id: String,
    /// Whose memory it is (the rules of session user names).
    pub user: String,
    /// What it records.
    pub kind: MemoryKind,
    /// The text searched and shown.
    pub text: String,
    /// Labels (`session:<id>` on turns and summaries; any on facts).
    #[serde(default)]
    pub tags: Vec<String>,
    /// When it was recorded (to the microsecond).
    pub created_at: DateTime<Utc>,
    /// Its vector for search by meaning, and the model that made it
    /// (absent: found by its words only). [`MemoryStore`](super::MemoryStore)
    /// fills it when it has an embedder; search hits carry none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<MemoryEmbedding>,
}

/// An entry's vector and the embedding model it came from (vectors of
/// different models are never compared).
#[derive(Debug, Clone)]
pub struct MemoryEmbedding {
    /// The embedding model's name.
    pub model: String,
    /// The vector, as the model gave it.
    pub vector: Vec<f32>,
}

impl PartialEq for MemoryEmbedding {
    fn eq(&self, other: &Self) -> bool {
        // Bit for bit, so equality is an equivalence (NaN never stored).
        self.model == other.model
            && self.vector.len() == other.vector.len()
            && self
                .vector
                .iter()
                .zip(&other.vector)
                .all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

impl Eq for MemoryEmbedding {}

/// The stored form: `{"model", "vector": base64 of little-endian f32s}`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredEmbedding {
    model: String,
    vector: String,
}

impl Serialize for MemoryEmbedding {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use base64::Engine as _;
        let bytes: Vec<u8> = self.vector.iter().flat_map(|x| x.to_le_bytes()).collect();
        StoredEmbedding {
            model: self.model.clone(),
            vector: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for MemoryEmbedding {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use base64::Engine as _;
        use serde::de::Error as _;
        let stored = StoredEmbedding::deserialize(deserializer)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(stored.vector.as_bytes())
            .map_err(|e| D::Error::custom(format!("embedding vector: {e}")))?;
        if bytes.len() % 4 != 0 {
            return Err(D::Error::custom(
                "embedding vector: not a whole number of f32s",
            ));
        }
        let vector: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if vector.iter().any(|x| !x.is_finite()) {
            return Err(D::Error::custom("embedding vector: not finite"));
        }
        Ok(Self {
            model: stored.model,
            vector,
        })
    }
}

impl MemoryEntry {
    /// A new entry with a fresh id, recorded now.
    pub fn new(user: impl Into<String>, kind: MemoryKind, text: impl Into<String>) -> Self {
        Self {
            id: uuid::Uuid::new_v4().to_string(),
            user: user.into(),
            kind,
            text: text.into(),
            tags: Vec::new(),
            created_at: Utc::now().trunc_subsecs(6),
            embedding: None,
        }
    }

    /// The same entry with this embedding (made elsewhere, or imported).
    #[must_use]
    pub fn with_embedding(mut self, model: impl Into<String>, vector: Vec<f32>) -> Self {
        self.embedding = Some(MemoryEmbedding {
            model: model.into(),
            vector,
        });
        self
    }

    /// The same entry with these tags.
    #[must_use]
    pub fn with_tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> Self {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// The same entry recorded at `at` (importing older memories; kept to
    /// the microsecond).
    #[must_use]
    pub fn created_at(mut self, at: DateTime<Utc>) -> Self {
        self.created_at = at.trunc_subsecs(6);
        self
    }
}

/// The tag of the turns and summaries of one session.
pub(super) fn session_tag(session: uuid::Uuid) -> String {
    format!("session:{session}")
}

/// What to search for (see [`MemoryStore::search`](super::MemoryStore::search)).
///
/// ```
/// use lc_agent_deepagent::memory::{MemoryKind, MemoryQuery};
/// let q = MemoryQuery::new("which database").limit(3).kind(MemoryKind::Fact);
/// assert_eq!(q.limit, 3);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryQuery {
    /// Words to match (natural language; no query syntax). Empty: the
    /// most recent entries.
    pub text: String,
    /// At most this many hits (default 5).
    pub limit: usize,
    /// Only these kinds (empty: every kind).
    pub kinds: Vec<MemoryKind>,
    /// Only entries with this tag.
    pub tag: Option<String>,
    /// No entries with this tag.
    pub exclude_tag: Option<String>,
}

impl MemoryQuery {
    /// The `limit` when none is given.
    pub const DEFAULT_LIMIT: usize = 5;

    /// A query for `text`.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            limit: Self::DEFAULT_LIMIT,
            kinds: Vec::new(),
            tag: None,
            exclude_tag: None,
        }
    }

    /// At most `limit` hits.
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Only entries of `kind` (call again to allow several).
    #[must_use]
    pub fn kind(mut self, kind: MemoryKind) -> Self {
        self.kinds.push(kind);
        self
    }

    /// Only entries tagged `tag`.
    #[must_use]
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tag = Some(tag.into());
        self
    }

    /// No entries tagged `tag`.
    #[must_use]
    pub fn exclude_tag(mut self, tag: impl Into<String>) -> Self {
        self.exclude_tag = Some(tag.into());
        self
    }
}

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryHit {
    /// The entry.
    pub entry: MemoryEntry,
    /// Relevance combined with recency (higher is better; comparable
    /// within one search only).
    pub score: f32,
}

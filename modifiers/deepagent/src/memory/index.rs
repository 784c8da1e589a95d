//! [`MemoryIndex`]: the tantivy index that finds memories by relevance,
//! weighted by recency; in RAM or in a directory.
//!
//! ```text
//!  fields: id, user, kind, tags (exact, stored) · text, tags_text (analyzed: words,
//!          lower case, English stop words out, stemmed) · created_at (fast, µs)
//!
//!  search("alice", "which database?")
//!    +user:alice  +(text:databas | tags_text:databas)  [+kind] [+tag] [-tag]
//!    the best max(10k, 50) by bm25, re-ranked by
//!    score = bm25 × (1 + weight × ½^(age / half_life))      top k by score
//! ```
//!
//! Every query carries `+user:<user>` and every hit's stored user is
//! checked again, so one user's memories never reach another. The query
//! text is analyzed into terms (no query syntax), so `user:bob` in a
//! question is two words, nothing more.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use tantivy::collector::{Count, TopDocs};
use tantivy::directory::MmapDirectory;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, FAST, INDEXED, STORED,
    STRING,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
};
use tantivy::{
    DocAddress, Index, IndexReader, IndexWriter, Order, ReloadPolicy, TantivyDocument, Term,
};

use super::entry::{MemoryEntry, MemoryHit, MemoryKind, MemoryQuery};
use super::error::{MemoryError, MemoryResult};

/// The analyzer of `text` and `tags_text`.
const ANALYZER: &str = "lc_memory";

/// Candidates by relevance per hit asked for, re-ranked by recency.
const POOL_FACTOR: usize = 10;
/// The smallest candidate pool.
const MIN_POOL: usize = 50;

/// The index writer's memory budget (tantivy's minimum is 15 MB).
const WRITER_BUDGET: usize = 20_000_000;

/// How recency weighs in: a hit's relevance is multiplied by
/// `1 + weight × ½^(age / half_life)`, so a new entry counts up to
/// `1 + weight` times an old one of the same relevance, and a clearly
/// more relevant old entry still wins.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Recency {
    /// The boost of a brand-new entry (default 0.5).
    pub weight: f32,
    /// The age at which the boost has halved (default 30 days).
    pub half_life: Duration,
}

impl Default for Recency {
    fn default() -> Self {
        Self {
            weight: 0.5,
            half_life: Duration::from_secs(30 * 24 * 3600),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Fields {
    id: Field,
    user: Field,
    kind: Field,
    text: Field,
    tags: Field,
    tags_text: Field,
    created_at: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let analyzed = TextFieldIndexing::default()
        .set_tokenizer(ANALYZER)
        .set_index_option(IndexRecordOption::WithFreqs);
    let fields = Fields {
        id: b.add_text_field("id", STRING | STORED),
        user: b.add_text_field("user", STRING | STORED),
        kind: b.add_text_field("kind", STRING | STORED),
        text: b.add_text_field(
            "text",
            TextOptions::default()
                .set_indexing_options(analyzed.clone())
                .set_stored(),
        ),
        tags: b.add_text_field("tags", STRING | STORED),
        tags_text: b.add_text_field(
            "tags_text",
            TextOptions::default().set_indexing_options(analyzed),
        ),
        created_at: b.add_i64_field("created_at", INDEXED | FAST | STORED),
    };
    (b.build(), fields)
}

fn analyzer() -> TextAnalyzer {
    let builder = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser);
    match StopWordFilter::new(Language::English) {
        Some(stop) => builder
            .filter(stop)
            .filter(Stemmer::new(Language::English))
            .build(),
        None => builder.filter(Stemmer::new(Language::English)).build(),
    }
}

/// The search index of memory entries (see the [module docs](super)).
pub(crate) struct MemoryIndex {
    index: Index,
    reader: IndexReader,
    writer: Mutex<IndexWriter>,
    fields: Fields,
    recency: Mutex<Recency>,
}

impl std::fmt::Debug for MemoryIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryIndex")
            .field("recency", &self.recency)
            .finish_non_exhaustive()
    }
}

impl MemoryIndex {
    /// An empty index in RAM.
    pub(crate) fn in_ram() -> MemoryResult<Self> {
        let (schema, fields) = schema();
        Self::with_index(Index::create_in_ram(schema), fields)
    }

    /// The index in `dir` (created when missing). An index that cannot be
    /// opened, or has another schema, is removed and created anew (the
    /// entries rebuild it). Fails with a `LockBusy` index error when
    /// another process writes it.
    pub(crate) fn open_dir(dir: &Path) -> MemoryResult<Self> {
        let io = |source| MemoryError::Io {
            path: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let (schema, fields) = schema();
        let open = || -> MemoryResult<Index> {
            let directory =
                MmapDirectory::open(dir).map_err(|e| MemoryError::Index { source: e.into() })?;
            Ok(Index::open_or_create(directory, schema.clone())?)
        };
        let index = match open() {
            Ok(index) => index,
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %e, "the memory index cannot be opened; rebuilding it from the entries");
                std::fs::remove_dir_all(dir).map_err(io)?;
                std::fs::create_dir_all(dir).map_err(io)?;
                open()?
            }
        };
        Self::with_index(index, fields)
    }

    fn with_index(index: Index, fields: Fields) -> MemoryResult<Self> {
        index.tokenizers().register(ANALYZER, analyzer());
        let writer = index.writer_with_num_threads(1, WRITER_BUDGET)?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        Ok(Self {
            index,
            reader,
            writer: Mutex::new(writer),
            fields,
            recency: Mutex::new(Recency::default()),
        })
    }

    fn term(&self, field: Field, text: &str) -> TermQuery {
        TermQuery::new(Term::from_field_text(field, text), IndexRecordOption::Basic)
    }

    /// How many entries of `user` the index holds.
    pub(crate) fn count(&self, user: &str) -> MemoryResult<usize> {
        let searcher = self.reader.searcher();
        Ok(searcher.search(&self.term(self.fields.user, user), &Count)?)
    }

    /// Whether the index holds the entry `id` of `user`.
    pub(crate) fn contains(&self, user: &str, id: &str) -> MemoryResult<bool> {
        let query = BooleanQuery::new(vec![
            (
                Occur::Must,
                Box::new(self.term(self.fields.user, user)) as Box<dyn Query>,
            ),
            (Occur::Must, Box::new(self.term(self.fields.id, id))),
        ]);
        Ok(self.reader.searcher().search(&query, &Count)? > 0)
    }

    /// The entry `id` of `user`, when the index holds it (without its
    /// embedding).
    pub(crate) fn get(&self, user: &str, id: &str) -> MemoryResult<Option<MemoryEntry>> {
        let query = BooleanQuery::new(vec![
            (
                Occur::Must,
                Box::new(self.term(self.fields.user, user)) as Box<dyn Query>,
            ),
            (Occur::Must, Box::new(self.term(self.fields.id, id))),
        ]);
        let searcher = self.reader.searcher();
        let Some((_, addr)) = searcher
            .search(&query, &TopDocs::with_limit(1).order_by_score())?
            .into_iter()
            .next()
        else {
            return Ok(None);
        };
        let doc: TantivyDocument = searcher.doc(addr)?;
        let entry = self.entry_of(&doc)?;
        Ok((entry.user == user).then_some(entry))
    }

    /// Adds entries and commits (searchable when it returns).
    pub(crate) fn add(&self, entries: &[MemoryEntry]) -> MemoryResult<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let f = self.fields;
        let mut writer = self.writer.lock();
        for e in entries {
            let mut doc = TantivyDocument::new();
            doc.add_text(f.id, &e.id);
            doc.add_text(f.user, &e.user);
            doc.add_text(f.kind, e.kind.as_str());
            doc.add_text(f.text, &e.text);
            for tag in &e.tags {
                doc.add_text(f.tags, tag);
                doc.add_text(f.tags_text, tag);
            }
            doc.add_i64(f.created_at, e.created_at.timestamp_micros());
            writer.add_document(doc)?;
        }
        writer.commit()?;
        drop(writer);
        self.reader.reload()?;
        Ok(())
    }

    /// Drops every entry of `user` (before re-adding them).
    pub(crate) fn remove_user(&self, user: &str) -> MemoryResult<()> {
        let mut writer = self.writer.lock();
        writer.delete_term(Term::from_field_text(self.fields.user, user));
        writer.commit()?;
        drop(writer);
        self.reader.reload()?;
        Ok(())
    }

    /// The analyzed terms of `text` (deduplicated, in order).
    fn terms(&self, text: &str) -> MemoryResult<Vec<String>> {
        let mut analyzer = self.index.tokenizer_for_field(self.fields.text)?;
        let mut stream = analyzer.token_stream(text);
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        while stream.advance() {
            let token = stream.token().text.clone();
            if seen.insert(token.clone()) {
                out.push(token);
            }
        }
        Ok(out)
    }

    /// The filters every search of `user` carries.
    fn filters(&self, user: &str, query: &MemoryQuery) -> Vec<(Occur, Box<dyn Query>)> {
        let f = self.fields;
        let mut clauses: Vec<(Occur, Box<dyn Query>)> =
            vec![(Occur::Must, Box::new(self.term(f.user, user)))];
        if !query.kinds.is_empty() {
            let kinds: Vec<(Occur, Box<dyn Query>)> = query
                .kinds
                .iter()
                .map(|k| (Occur::Should, Box::new(self.term(f.kind, k.as_str())) as _))
                .collect();
            clauses.push((Occur::Must, Box::new(BooleanQuery::new(kinds))));
        }
        if let Some(tag) = &query.tag {
            clauses.push((Occur::Must, Box::new(self.term(f.tags, tag))));
        }
        if let Some(tag) = &query.exclude_tag {
            clauses.push((Occur::MustNot, Box::new(self.term(f.tags, tag))));
        }
        clauses
    }

    /// The best entries of `user` for `query` (see the [module docs](super)).
    pub(crate) fn search(&self, user: &str, query: &MemoryQuery) -> MemoryResult<Vec<MemoryHit>> {
        if query.limit == 0 {
            return Ok(Vec::new());
        }
        let f = self.fields;
        let terms = self.terms(&query.text)?;
        let mut clauses = self.filters(user, query);
        let searcher = self.reader.searcher();
        let found: Vec<(f32, DocAddress)> = if terms.is_empty() {
            let filter = BooleanQuery::new(clauses);
            let by_time = TopDocs::with_limit(query.limit)
                .order_by_fast_field::<i64>("created_at", Order::Desc);
            searcher
                .search(&filter, &by_time)?
                .into_iter()
                .map(|(_, addr)| (0.0, addr))
                .collect()
        } else {
            let words: Vec<(Occur, Box<dyn Query>)> = terms
                .iter()
                .flat_map(|t| {
                    [f.text, f.tags_text].map(|field| {
                        let term = TermQuery::new(
                            Term::from_field_text(field, t),
                            IndexRecordOption::WithFreqs,
                        );
                        (Occur::Should, Box::new(term) as Box<dyn Query>)
                    })
                })
                .collect();
            clauses.push((Occur::Must, Box::new(BooleanQuery::new(words))));
            let bool_query = BooleanQuery::new(clauses);
            // Relevance first (tantivy prunes with block-max WAND), then
            // recency re-ranks a pool of the best candidates: the boost is
            // at most `1 + weight`, so a pool ten times the limit holds
            // the true top hits but for near-ties at its edge.
            let pool = (query.limit * POOL_FACTOR).max(MIN_POOL);
            let candidates =
                searcher.search(&bool_query, &TopDocs::with_limit(pool).order_by_score())?;
            let now = Utc::now().timestamp_micros();
            let Recency { weight, half_life } = *self.recency.lock();
            let half = half_life.as_micros().max(1) as f64;
            let mut columns = HashMap::new();
            let mut ranked = Vec::with_capacity(candidates.len());
            for (score, addr) in candidates {
                let column = match columns.entry(addr.segment_ord) {
                    std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                    std::collections::hash_map::Entry::Vacant(e) => e.insert(
                        searcher
                            .segment_reader(addr.segment_ord)
                            .fast_fields()
                            .i64("created_at")?,
                    ),
                };
                let created = column.first(addr.doc_id).unwrap_or(now);
                let age = now.saturating_sub(created).max(0);
                let fresh = 0.5f64.powf(age as f64 / half) as f32;
                ranked.push((score * (1.0 + weight * fresh), addr));
            }
            ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            ranked.truncate(query.limit);
            ranked
        };
        let mut hits = Vec::with_capacity(found.len());
        for (score, addr) in found {
            let doc: TantivyDocument = searcher.doc(addr)?;
            let entry = self.entry_of(&doc)?;
            if entry.user != user {
                tracing::error!("the memory index returned another user's entry; dropping it");
                continue;
            }
            hits.push(MemoryHit { entry, score });
        }
        Ok(hits)
    }

    fn entry_of(&self, doc: &TantivyDocument) -> MemoryResult<MemoryEntry> {
        let f = self.fields;
        let text = |field: Field| {
            doc.get_first(field)
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        };
        let id = text(f.id);
        let corrupt = |reason: &str| MemoryError::Corrupt {
            location: format!("index document {id}"),
            reason: reason.to_string(),
        };
        let kind = MemoryKind::parse(&text(f.kind)).ok_or_else(|| corrupt("unknown kind"))?;
        let micros = doc
            .get_first(f.created_at)
            .and_then(|v| v.as_i64())
            .ok_or_else(|| corrupt("no created_at"))?;
        let created_at =
            DateTime::from_timestamp_micros(micros).ok_or_else(|| corrupt("bad created_at"))?;
        Ok(MemoryEntry {
            user: text(f.user),
            kind,
            text: text(f.text),
            tags: doc
                .get_all(f.tags)
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            created_at,
            id,
            embedding: None,
        })
    }
}

//! [`QueryCache`]: the vectors of recent search queries, so a repeated query skips the model.
//!
//! Agents repeat queries: chat and a tool recall the same message, and retries resend the
//! same query. A [`CachingEmbedder`] in front of one model answers a query it has seen from
//! the cache, bit-identical to the model's answer (the vector is the model's own, kept).
//!
//! - **Key**: the model's id and the query's text with leading whitespace dropped and
//!   runs of whitespace made one space ([`normalise_query`]), which is how both local
//!   tokenizers read it anyway (tests check the vectors agree). Case and everything else
//!   are kept: the e5 tokenizer is cased.
//! - **Bound**: the bytes of the vectors and keys kept, plus a fixed overhead per entry,
//!   stay within the budget; the least recently used entries go first. A budget of zero
//!   keeps nothing.
//! - **Counters**: hits, misses, evictions, entries and bytes, for `/metrics`.
//!
//! Documents (`embed`) and layer means are never cached: they are embedded once, when
//! stored. One cache may serve several models (the automatic choice loads one per
//! language); the budget is shared.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::{EmbedError, Embedder};

/// Bytes counted per entry besides its vector and key: the two maps' nodes and the key's
/// copy in the recency order.
const ENTRY_OVERHEAD: usize = 96;

/// The counters of a [`QueryCache`] at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryCacheStats {
    /// The budget in bytes.
    pub budget_bytes: u64,
    /// Bytes kept now.
    pub bytes: u64,
    /// Queries kept now.
    pub entries: u64,
    /// Queries answered from the cache.
    pub hits: u64,
    /// Queries the model embedded.
    pub misses: u64,
    /// Queries dropped to stay within the budget.
    pub evictions: u64,
}

type Key = (String, String);

struct Entry {
    vector: Arc<[f32]>,
    /// When it was last used (the key of its place in `Lru::order`).
    tick: u64,
    bytes: usize,
}

#[derive(Default)]
struct Lru {
    map: HashMap<Key, Entry>,
    /// Least recently used first.
    order: BTreeMap<u64, Key>,
    tick: u64,
    bytes: usize,
}

/// Recent query vectors by model and normalised text, bounded in bytes (see the module
/// documentation). Shared by the [`CachingEmbedder`]s of one process.
pub struct QueryCache {
    budget: usize,
    lru: Mutex<Lru>,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
}

impl std::fmt::Debug for QueryCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryCache").field("stats", &self.stats()).finish()
    }
}

impl QueryCache {
    /// A cache of at most `budget_bytes`.
    pub fn new(budget_bytes: usize) -> Self {
        Self {
            budget: budget_bytes,
            lru: Mutex::new(Lru::default()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    /// A cache of at most `mb` MiB.
    pub fn with_mb(mb: u64) -> Self {
        Self::new(usize::try_from(mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX))
    }

    /// The counters now.
    pub fn stats(&self) -> QueryCacheStats {
        let lru = self.lru.lock().unwrap_or_else(PoisonError::into_inner);
        QueryCacheStats {
            budget_bytes: self.budget as u64,
            bytes: lru.bytes as u64,
            entries: lru.map.len() as u64,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
        }
    }

    fn get(&self, key: &Key) -> Option<Arc<[f32]>> {
        let mut lru = self.lru.lock().unwrap_or_else(PoisonError::into_inner);
        let lru = &mut *lru;
        let found = match lru.map.get_mut(key) {
            Some(entry) => {
                lru.tick += 1;
                let old = std::mem::replace(&mut entry.tick, lru.tick);
                if let Some(k) = lru.order.remove(&old) {
                    lru.order.insert(lru.tick, k);
                }
                Some(entry.vector.clone())
            }
            None => None,
        };
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    fn put(&self, key: Key, vector: &[f32]) {
        let bytes = std::mem::size_of_val(vector) + key.0.len() + key.1.len() + ENTRY_OVERHEAD;
        if bytes > self.budget {
            return;
        }
        let mut lru = self.lru.lock().unwrap_or_else(PoisonError::into_inner);
        let lru = &mut *lru;
        if lru.map.contains_key(&key) {
            return;
        }
        while lru.bytes + bytes > self.budget {
            let Some((_, oldest)) = lru.order.pop_first() else { break };
            if let Some(gone) = lru.map.remove(&oldest) {
                lru.bytes -= gone.bytes;
                self.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
        lru.tick += 1;
        lru.order.insert(lru.tick, key.clone());
        lru.map.insert(key, Entry { vector: vector.into(), tick: lru.tick, bytes });
        lru.bytes += bytes;
    }
}

/// The cache's form of a query: leading whitespace dropped, and every other run of
/// whitespace made one space. Both local tokenizers read the two forms the same (MiniLM's
/// ignores all whitespace; e5's ignores leading whitespace and the length of a run, but
/// reads a trailing space as a token of its own, so that one is kept).
pub fn normalise_query(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.trim_start().chars() {
        if c.is_whitespace() {
            space = true;
        } else {
            if space {
                out.push(' ');
                space = false;
            }
            out.push(c);
        }
    }
    if space {
        out.push(' ');
    }
    out
}

/// One model's embedder with its queries served from a [`QueryCache`] when seen before.
/// The model id must not change over the embedder's life (true of every model embedder;
/// wrap each model, not a router between models).
pub struct CachingEmbedder {
    inner: Arc<dyn Embedder>,
    cache: Arc<QueryCache>,
}

impl CachingEmbedder {
    /// `inner`'s queries through `cache`.
    pub fn new(inner: Arc<dyn Embedder>, cache: Arc<QueryCache>) -> Self {
        Self { inner, cache }
    }

    fn key(&self, text: &str) -> Key {
        (self.inner.model_id().to_owned(), normalise_query(text))
    }
}

impl Embedder for CachingEmbedder {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.inner.embed(texts)
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let key = self.key(text);
        if let Some(vector) = self.cache.get(&key) {
            return Ok(vector.to_vec());
        }
        let vector = self.inner.embed_query(text)?;
        self.cache.put(key, &vector);
        Ok(vector)
    }

    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let keys: Vec<Key> = texts.iter().map(|text| self.key(text)).collect();
        let mut out: Vec<Option<Vec<f32>>> = keys.iter().map(|key| self.cache.get(key).map(|v| v.to_vec())).collect();
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
        if !missing.is_empty() {
            let asked: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
            let vectors = self.inner.embed_queries(&asked)?;
            if vectors.len() != asked.len() {
                return Err(EmbedError::NoVector);
            }
            for (&i, vector) in missing.iter().zip(vectors) {
                self.cache.put(keys[i].clone(), &vector);
                out[i] = Some(vector);
            }
        }
        Ok(out.into_iter().map(|v| v.unwrap_or_default()).collect())
    }

    fn layer_means(&self, texts: &[&str], layer: usize) -> Result<Option<Vec<Vec<f32>>>, EmbedError> {
        self.inner.layer_means(texts, layer)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// A model that answers each query with its length and counts its calls.
    struct Counting {
        calls: AtomicUsize,
    }

    impl Embedder for Counting {
        fn model_id(&self) -> &str {
            "test/counting"
        }
        fn dim(&self) -> usize {
            2
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.calls.fetch_add(texts.len(), Ordering::Relaxed);
            Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
        }
    }

    fn counting(budget: usize) -> (Arc<Counting>, CachingEmbedder, Arc<QueryCache>) {
        let model = Arc::new(Counting { calls: AtomicUsize::new(0) });
        let cache = Arc::new(QueryCache::new(budget));
        (model.clone(), CachingEmbedder::new(model, cache.clone()), cache)
    }

    #[test]
    fn a_repeated_query_is_answered_from_the_cache_with_the_models_vector() {
        let (model, cached, cache) = counting(1 << 20);
        let first = cached.embed_query("what is my cat's name").unwrap();
        let again = cached.embed_query("  what is my   cat's\nname").unwrap();
        assert_eq!(first, again);
        assert_eq!(model.calls.load(Ordering::Relaxed), 1);
        // Case is part of the text: a cased model reads it.
        cached.embed_query("What is my cat's name").unwrap();
        assert_eq!(model.calls.load(Ordering::Relaxed), 2);
        let stats = cache.stats();
        assert_eq!((stats.hits, stats.misses, stats.entries, stats.evictions), (1, 2, 2, 0));
        assert!(stats.bytes > 0 && stats.bytes <= stats.budget_bytes);
        // Documents never touch it.
        cached.embed(&["what is my cat's name"]).unwrap();
        assert_eq!(cache.stats().misses, 2);
    }

    #[test]
    fn normalising_keeps_one_trailing_space_and_drops_leading_ones() {
        assert_eq!(normalise_query("  a \t b\n"), "a b ");
        assert_eq!(normalise_query("a b"), "a b");
        assert_eq!(normalise_query(" \u{3000} "), "");
        assert_eq!(normalise_query("猫\u{3000}\u{3000}名字"), "猫 名字");
    }

    #[test]
    fn a_batch_embeds_only_what_it_has_not_seen_and_keeps_the_order() {
        let (model, cached, cache) = counting(1 << 20);
        cached.embed_query("bb").unwrap();
        let vectors = cached.embed_queries(&["a", "bb", "ccc", "a"]).unwrap();
        assert_eq!(vectors.iter().map(|v| v[0]).collect::<Vec<_>>(), [1.0, 2.0, 3.0, 1.0]);
        // "bb" from the cache; "a" twice and "ccc" in one call to the model.
        assert_eq!(model.calls.load(Ordering::Relaxed), 1 + 3);
        assert_eq!(cache.stats().entries, 3);
        assert!(cached.embed_queries(&[]).unwrap().is_empty());
    }

    #[test]
    fn the_budget_holds_and_the_least_recently_used_go_first() {
        let entry = 2 * 4 + "test/counting".len() + 2 + ENTRY_OVERHEAD;
        let (model, cached, cache) = counting(3 * entry);
        for q in ["q1", "q2", "q3"] {
            cached.embed_query(q).unwrap();
        }
        cached.embed_query("q1").unwrap(); // q1 is now the most recent
        cached.embed_query("q4").unwrap(); // evicts q2
        let stats = cache.stats();
        assert_eq!((stats.entries, stats.evictions), (3, 1));
        assert!(stats.bytes <= stats.budget_bytes, "{stats:?}");
        let calls = model.calls.load(Ordering::Relaxed);
        cached.embed_query("q1").unwrap();
        cached.embed_query("q3").unwrap();
        assert_eq!(model.calls.load(Ordering::Relaxed), calls, "q1 and q3 stayed");
        cached.embed_query("q2").unwrap();
        assert_eq!(model.calls.load(Ordering::Relaxed), calls + 1, "q2 was evicted");
    }

    #[test]
    fn a_zero_budget_or_a_huge_query_keeps_nothing() {
        let (model, cached, cache) = counting(0);
        cached.embed_query("a").unwrap();
        cached.embed_query("a").unwrap();
        assert_eq!(model.calls.load(Ordering::Relaxed), 2);
        assert_eq!(cache.stats().entries, 0);
        let (_, cached, cache) = counting(200);
        cached.embed_query(&"x".repeat(500)).unwrap();
        assert_eq!((cache.stats().entries, cache.stats().bytes), (0, 0));
    }

    #[test]
    fn several_models_share_one_cache_without_mixing_their_vectors() {
        struct Other;
        impl Embedder for Other {
            fn model_id(&self) -> &str {
                "test/other"
            }
            fn dim(&self) -> usize {
                2
            }
            fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
                Ok(texts.iter().map(|_| vec![-1.0, -1.0]).collect())
            }
        }
        let (_, cached, cache) = counting(1 << 20);
        let other = CachingEmbedder::new(Arc::new(Other), cache.clone());
        assert_eq!(cached.embed_query("same").unwrap(), [4.0, 1.0]);
        assert_eq!(other.embed_query("same").unwrap(), [-1.0, -1.0]);
        assert_eq!(cache.stats().entries, 2);
    }

    #[test]
    fn concurrent_callers_see_consistent_counters() {
        let (_, cached, cache) = counting(1 << 20);
        let cached = Arc::new(cached);
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let cached = cached.clone();
                std::thread::spawn(move || {
                    for i in 0..200 {
                        cached.embed_query(&format!("q{}", (i + t) % 50)).unwrap();
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let stats = cache.stats();
        assert_eq!(stats.hits + stats.misses, 800);
        assert_eq!(stats.entries, 50);
    }
}

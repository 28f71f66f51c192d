//! How alike two memories are: the cosine of their vectors and the overlap of their words,
//! and the bound on how many comparisons one cycle makes.

use std::hash::{Hash as _, Hasher as _};

use membank_core::{MemoryId, Scope, text};
use membank_store::{Store, StoreError};

use super::cycle::Item;

/// At most this many vector comparisons per stage of one cycle (duplicates, fusion,
/// conflicts): about a second of work on one core, whatever the user's size and however
/// alike their memories are. What a stage could not compare is reported in `skipped`.
pub(super) const MAX_COMPARISONS: usize = 4_000_000;

/// Comparisons left to a stage.
pub(super) struct Budget {
    left: usize,
    /// Whether a comparison was refused.
    pub exhausted: bool,
}

impl Budget {
    pub(super) fn new() -> Self {
        Self { left: MAX_COMPARISONS, exhausted: false }
    }

    /// Takes one comparison; false once none are left.
    pub(super) fn take(&mut self) -> bool {
        if self.left == 0 {
            self.exhausted = true;
            return false;
        }
        self.left -= 1;
        true
    }
}

/// At most this many term hashes (8 bytes each: 8 MiB) are kept between comparisons. A
/// 10 KB memory has about 1,500 distinct terms, so this holds some 700 of them; past it,
/// the sets kept are dropped and read again when a pair needs them.
pub(super) const MAX_TERMS_HELD: usize = 1 << 20;

/// Each item's words as a sorted set of term hashes, computed the first time a pair that
/// is close in meaning needs them. The cycle's snapshot holds no texts (a user of many long
/// memories would otherwise have all of them in memory at once): the two texts of such a
/// pair are read then, and only their term sets are kept, at most [`MAX_TERMS_HELD`]
/// hashes of them whatever the user's size.
pub(super) struct Terms<'a> {
    store: &'a dyn Store,
    scope: &'a Scope,
    sets: Vec<Option<Vec<u64>>>,
    /// Whether an item's text was read (a memory erased since the snapshot has none, and
    /// is alike nothing).
    read: Vec<bool>,
    /// Term hashes held in `sets`, and the bound on them.
    held: usize,
    limit: usize,
    /// How many times the sets held were dropped to stay under the bound.
    pub dropped: usize,
    /// The first read that failed; its pairs count as not alike.
    pub error: Option<StoreError>,
}

impl<'a> Terms<'a> {
    pub(super) fn new(store: &'a dyn Store, scope: &'a Scope, items: &[Item]) -> Self {
        Self::with_limit(store, scope, items, MAX_TERMS_HELD)
    }

    fn with_limit(store: &'a dyn Store, scope: &'a Scope, items: &[Item], limit: usize) -> Self {
        Self {
            store,
            scope,
            sets: vec![None; items.len()],
            read: vec![false; items.len()],
            held: 0,
            limit,
            dropped: 0,
            error: None,
        }
    }

    /// Jaccard overlap of the words of items `i` and `j` (0 when their texts cannot be read).
    pub(super) fn jaccard(&mut self, items: &[Item], i: usize, j: usize) -> f64 {
        let missing: Vec<usize> = [i, j].into_iter().filter(|&k| !self.read[k]).collect();
        if !missing.is_empty() {
            if self.held > self.limit {
                self.drop_all_but(i, j);
            }
            self.read_texts(items, &missing);
        }
        match (&self.sets[i], &self.sets[j]) {
            (Some(a), Some(b)) => jaccard(a, b),
            _ => 0.0,
        }
    }

    /// Drops every set but those of `i` and `j` (the pair at hand); they are read again
    /// when a later pair needs them.
    fn drop_all_but(&mut self, i: usize, j: usize) {
        for k in 0..self.sets.len() {
            if k != i && k != j && self.read[k] {
                self.held -= self.sets[k].take().map_or(0, |set| set.len());
                self.read[k] = false;
            }
        }
        self.dropped += 1;
    }

    fn read_texts(&mut self, items: &[Item], which: &[usize]) {
        let ids: Vec<MemoryId> = which.iter().map(|&k| items[k].memory.id).collect();
        match self.store.get_many(self.scope, &ids) {
            Ok(memories) => {
                which.iter().for_each(|&k| self.read[k] = true);
                for memory in memories {
                    if let (Some(&k), Some(content)) =
                        (which.iter().find(|&&k| items[k].memory.id == memory.id), memory.content.as_deref())
                    {
                        let set = term_set(content);
                        self.held += set.len();
                        self.sets[k] = Some(set);
                    }
                }
            }
            Err(err) => {
                self.error.get_or_insert(err);
            }
        }
    }
}

/// The distinct terms of `text`, hashed, sorted.
fn term_set(text: &str) -> Vec<u64> {
    let mut set = Vec::new();
    let mut buffer = String::new();
    text::for_each_term(text, &mut buffer, |term| {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        term.hash(&mut hasher);
        set.push(hasher.finish());
    });
    set.sort_unstable();
    set.dedup();
    set.shrink_to_fit();
    set
}

/// Cosine of two vectors (stored vectors are L2-normalised, but a remote model's may not be).
pub(super) fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        dot += f64::from(*x) * f64::from(*y);
        na += f64::from(*x) * f64::from(*x);
        nb += f64::from(*y) * f64::from(*y);
    }
    if na == 0.0 || nb == 0.0 { 0.0 } else { dot / (na.sqrt() * nb.sqrt()) }
}

/// Jaccard overlap of two sorted, distinct term sets (1 for two empty texts).
pub(super) fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    common as f64 / (a.len() + b.len() - common) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jaccard_of_sorted_sets_counts_the_shared_terms() {
        let (a, b) = (term_set("the cat sat on the mat"), term_set("a cat sat on a hat"));
        // {the, cat, sat, on, mat} and {a, cat, sat, on, hat}: 3 shared of 7.
        assert!((jaccard(&a, &b) - 3.0 / 7.0).abs() < 1e-12);
        assert_eq!(jaccard(&[], &[]), 1.0);
        assert_eq!(jaccard(&a, &[]), 0.0);
        assert_eq!(jaccard(&a, &a), 1.0);
    }

    #[test]
    fn the_term_sets_held_stay_bounded_and_give_the_same_overlaps() {
        use membank_core::{Kind, Memory, TenantId, UserId};
        use membank_store::{EmbeddingModel, NewMemory, SqliteStore};

        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("m.db")).unwrap();
        let scope = Scope::user(TenantId::default_tenant(), UserId::new("ana").unwrap());
        let at = chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        store.ensure_user(&scope.tenant, &scope.user, at).unwrap();
        let model = EmbeddingModel { id: "test/model".into(), dim: 2 };
        // Twelve texts of 40 distinct words, each sharing half of them with the next.
        let items: Vec<Item> = (0..12)
            .map(|n| {
                let text: Vec<String> = (n * 20..n * 20 + 40).map(|w| format!("word{w}")).collect();
                let memory = Memory::fixture(&scope, Kind::Note, text.join(" "), at);
                let state = memory.forgetting;
                store
                    .insert(NewMemory { memory: memory.clone(), embedding: Some((model.clone(), vec![1.0, 0.0])) })
                    .unwrap();
                Item { memory: Memory { content: None, ..memory }, vector: None, state, new_rank: None }
            })
            .collect();
        let pairs: Vec<(usize, usize)> =
            (0..12).flat_map(|i| (0..12).map(move |j| (i, j))).filter(|(i, j)| i != j).collect();
        let mut unbounded = Terms::new(&store, &scope, &items);
        let expected: Vec<f64> = pairs.iter().map(|&(i, j)| unbounded.jaccard(&items, i, j)).collect();
        assert_eq!(unbounded.dropped, 0);
        assert!((expected[0] - 20.0 / 60.0).abs() < 1e-12, "{expected:?}");
        // Room for about three sets: the held terms never pass the bound by more than a
        // pair's, and every overlap is the same.
        let mut bounded = Terms::with_limit(&store, &scope, &items, 100);
        for (&(i, j), want) in pairs.iter().zip(&expected) {
            assert_eq!(bounded.jaccard(&items, i, j), *want, "{i} {j}");
            assert!(bounded.held <= 100 + 2 * 40, "{}", bounded.held);
        }
        assert!(bounded.dropped > 10, "{}", bounded.dropped);
        assert!(bounded.error.is_none());
    }

    #[test]
    fn a_budget_refuses_once_spent_and_says_so() {
        let mut budget = Budget { left: 2, exhausted: false };
        assert!(budget.take() && budget.take());
        assert!(!budget.exhausted);
        assert!(!budget.take());
        assert!(budget.exhausted);
    }
}

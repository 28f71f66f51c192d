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

/// Each item's words as a sorted set of term hashes, computed the first time a pair that
/// is close in meaning needs them. The cycle's snapshot holds no texts (a user of many long
/// memories would otherwise have all of them in memory at once): the two texts of such a
/// pair are read then, and only their term sets are kept.
pub(super) struct Terms<'a> {
    store: &'a dyn Store,
    scope: &'a Scope,
    sets: Vec<Option<Vec<u64>>>,
    /// Whether an item's text was read (a memory erased since the snapshot has none, and
    /// is alike nothing).
    read: Vec<bool>,
    /// The first read that failed; its pairs count as not alike.
    pub error: Option<StoreError>,
}

impl<'a> Terms<'a> {
    pub(super) fn new(store: &'a dyn Store, scope: &'a Scope, items: &[Item]) -> Self {
        Self { store, scope, sets: vec![None; items.len()], read: vec![false; items.len()], error: None }
    }

    /// Jaccard overlap of the words of items `i` and `j` (0 when their texts cannot be read).
    pub(super) fn jaccard(&mut self, items: &[Item], i: usize, j: usize) -> f64 {
        let missing: Vec<usize> = [i, j].into_iter().filter(|&k| !self.read[k]).collect();
        if !missing.is_empty() {
            self.read_texts(items, &missing);
        }
        match (&self.sets[i], &self.sets[j]) {
            (Some(a), Some(b)) => jaccard(a, b),
            _ => 0.0,
        }
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
                        self.sets[k] = Some(term_set(content));
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
    fn a_budget_refuses_once_spent_and_says_so() {
        let mut budget = Budget { left: 2, exhausted: false };
        assert!(budget.take() && budget.take());
        assert!(!budget.exhausted);
        assert!(!budget.take());
        assert!(budget.exhausted);
    }
}

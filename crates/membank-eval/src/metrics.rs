//! Scoring a ranked list against gold evidence, each benchmark's own way. Pure functions.
//!
//! - MemoryBank (this project's definition, SOURCE.md): hit@k = some gold item in the top
//!   k; all@k = every gold item in the top k; reciprocal rank of the first gold item.
//! - LoCoMo (the paper's `evaluation.py`): recall@k = the fraction of a question's gold
//!   items in the top k; a question without gold counts 1.
//! - LongMemEval (the official `eval_utils.py`): recall_any@k, recall_all@k, and
//!   ndcg_any@k with the official DCG (`rel[0] + Σ_{i≥1} rel[i] / log2(i + 1)`, so the
//!   first two positions weigh the same) against the ideal ranking of the gold items.

use std::collections::{BTreeMap, HashSet};
use std::hash::Hash;

/// Whether any gold item is among the first `k` ranked.
pub fn hit_at<T: Eq + Hash>(ranked: &[T], gold: &HashSet<T>, k: usize) -> bool {
    ranked.iter().take(k).any(|x| gold.contains(x))
}

/// Whether every gold item is among the first `k` ranked (false for empty gold).
pub fn all_at<T: Eq + Hash>(ranked: &[T], gold: &HashSet<T>, k: usize) -> bool {
    !gold.is_empty() && gold.iter().all(|g| ranked.iter().take(k).any(|x| x == g))
}

/// 1 / rank of the first gold item in the list, 0 if none is in it.
pub fn reciprocal_rank<T: Eq + Hash>(ranked: &[T], gold: &HashSet<T>) -> f64 {
    ranked.iter().position(|x| gold.contains(x)).map_or(0.0, |p| 1.0 / (p as f64 + 1.0))
}

/// The fraction of gold items among the first `k` ranked; 1 when there is no gold (LoCoMo).
pub fn recall_at<T: Eq + Hash>(ranked: &[T], gold: &HashSet<T>, k: usize) -> f64 {
    if gold.is_empty() {
        return 1.0;
    }
    let top: HashSet<&T> = ranked.iter().take(k).collect();
    gold.iter().filter(|g| top.contains(g)).count() as f64 / gold.len() as f64
}

fn dcg(relevances: &[f64]) -> f64 {
    relevances.iter().enumerate().map(|(i, r)| if i == 0 { *r } else { r / ((i + 1) as f64).log2() }).sum()
}

/// LongMemEval's binary-relevance NDCG at `k`.
pub fn ndcg_at<T: Eq + Hash>(ranked: &[T], gold: &HashSet<T>, k: usize) -> f64 {
    let actual: Vec<f64> = ranked.iter().take(k).map(|x| if gold.contains(x) { 1.0 } else { 0.0 }).collect();
    let ideal = vec![1.0; gold.len().min(k)];
    let ideal_dcg = dcg(&ideal);
    if ideal_dcg == 0.0 { 0.0 } else { dcg(&actual) / ideal_dcg }
}

/// The distinct items of a list in order of first appearance (turns collapsed to sessions).
pub fn collapse<T: Eq + Hash + Clone>(ranked: &[T]) -> Vec<T> {
    let mut seen = HashSet::new();
    ranked.iter().filter(|x| seen.insert((*x).clone())).cloned().collect()
}

/// The ROC AUC of `scores` against binary `labels`: the chance that a random positive
/// scores above a random negative, ties counted half. `None` without both classes.
pub fn roc_auc(scored: &[(f64, bool)]) -> Option<f64> {
    let positives = scored.iter().filter(|(_, l)| *l).count();
    let negatives = scored.len() - positives;
    if positives == 0 || negatives == 0 {
        return None;
    }
    // Mann–Whitney U with midranks for ties.
    let mut sorted: Vec<(f64, bool)> = scored.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut rank_sum = 0.0;
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j < sorted.len() && sorted[j].0 == sorted[i].0 {
            j += 1;
        }
        // Ranks i+1 ..= j share their mean.
        let mid = (i + 1 + j) as f64 / 2.0;
        rank_sum += mid * sorted[i..j].iter().filter(|(_, l)| *l).count() as f64;
        i = j;
    }
    let p = positives as f64;
    Some((rank_sum - p * (p + 1.0) / 2.0) / (p * negatives as f64))
}

/// Running means of named metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Means {
    sums: BTreeMap<String, f64>,
    /// How many questions were added.
    pub n: usize,
}

impl Means {
    /// Adds one question's values.
    pub fn add(&mut self, values: &BTreeMap<String, f64>) {
        for (name, value) in values {
            *self.sums.entry(name.clone()).or_insert(0.0) += value;
        }
        self.n += 1;
    }

    /// Each metric's mean (empty when nothing was added).
    pub fn means(&self) -> BTreeMap<String, f64> {
        if self.n == 0 {
            return BTreeMap::new();
        }
        self.sums.iter().map(|(name, sum)| (name.clone(), sum / self.n as f64)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(items: &[&'static str]) -> HashSet<&'static str> {
        items.iter().copied().collect()
    }

    #[test]
    fn hit_all_and_reciprocal_rank() {
        let ranked = ["a", "b", "c", "d"];
        let gold = set(&["b", "d"]);
        assert!(!hit_at(&ranked, &gold, 1));
        assert!(hit_at(&ranked, &gold, 2));
        assert!(!all_at(&ranked, &gold, 3));
        assert!(all_at(&ranked, &gold, 4));
        assert_eq!(reciprocal_rank(&ranked, &gold), 0.5);
        assert_eq!(reciprocal_rank(&ranked, &set(&["z"])), 0.0);
        assert!(!all_at(&ranked, &set(&[]), 4));
    }

    #[test]
    fn locomo_recall_is_the_fraction_found() {
        let ranked = ["a", "b", "c"];
        assert_eq!(recall_at(&ranked, &set(&["a", "x", "c", "y"]), 3), 0.5);
        assert_eq!(recall_at(&ranked, &set(&["c"]), 2), 0.0);
        assert_eq!(recall_at(&ranked, &set(&[]), 1), 1.0);
    }

    #[test]
    fn ndcg_follows_the_official_definition() {
        // One gold item at rank 1: perfect.
        assert_eq!(ndcg_at(&["a", "b"], &set(&["a"]), 5), 1.0);
        // One gold item at rank 2: the official DCG weighs ranks 1 and 2 alike.
        assert_eq!(ndcg_at(&["x", "a"], &set(&["a"]), 5), 1.0);
        // At rank 3: 1/log2(3).
        assert!((ndcg_at(&["x", "y", "a"], &set(&["a"]), 5) - 1.0 / 3f64.log2()).abs() < 1e-12);
        // Two gold, found at ranks 1 and 4: (1 + 1/log2 4) / (1 + 1).
        assert!((ndcg_at(&["a", "x", "y", "b"], &set(&["a", "b"]), 5) - 0.75).abs() < 1e-12);
        assert_eq!(ndcg_at(&["x"], &set(&["a"]), 5), 0.0);
    }

    #[test]
    fn collapsing_keeps_first_appearances() {
        assert_eq!(collapse(&["s1", "s2", "s1", "s3", "s2"]), ["s1", "s2", "s3"]);
    }

    #[test]
    fn roc_auc_counts_ties_half() {
        assert_eq!(roc_auc(&[(0.9, true), (0.1, false)]), Some(1.0));
        assert_eq!(roc_auc(&[(0.1, true), (0.9, false)]), Some(0.0));
        assert_eq!(roc_auc(&[(0.5, true), (0.5, false)]), Some(0.5));
        // Positives .8, .4; negatives .4, .2: pairs (.8>.4) (.8>.2) (.4=.4 half) (.4>.2) = 3.5 / 4.
        assert_eq!(roc_auc(&[(0.8, true), (0.4, true), (0.4, false), (0.2, false)]), Some(0.875));
        assert_eq!(roc_auc(&[(0.8, true)]), None);
        assert_eq!(roc_auc(&[]), None);
    }

    #[test]
    fn means_average_over_questions() {
        let mut means = Means::default();
        means.add(&BTreeMap::from([("hit@1".to_string(), 1.0)]));
        means.add(&BTreeMap::from([("hit@1".to_string(), 0.0)]));
        means.add(&BTreeMap::from([("hit@1".to_string(), 0.0)]));
        assert_eq!(means.n, 3);
        assert!((means.means()["hit@1"] - 1.0 / 3.0).abs() < 1e-15);
    }
}

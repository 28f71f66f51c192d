//! Combining ranked candidate lists into one ranking: reciprocal rank fusion (RRF),
//! weighted per list, with an optional retention factor applied by the caller.

use std::collections::HashMap;
use std::hash::Hash;

/// The RRF constant from Cormack et al. (2009); it damps the head of each list.
pub const RRF_K: f64 = 60.0;

/// What one list adds to the fused score of its item at `rank` (starting at 1):
/// `weight / (k + rank)`. First place in a list of weight 1 adds `1 / (k + 1)`, 1/61 ≈ 0.0164
/// with the default `k`; the tenth place 1/70 ≈ 0.0143, so fused scores are small numbers
/// whose differences, not sizes, carry the ranking.
pub fn rank_share(weight: f64, k: f64, rank: usize) -> f64 {
    weight / (k + rank as f64)
}

/// Reciprocal rank fusion: each item scores `Σ weight / (k + rank)` over the lists it is
/// in (rank starting at 1; [`rank_share`]). Ties keep the order of first appearance, so the
/// result is deterministic. Returns items with their fused score, best first.
pub fn reciprocal_rank_fusion<T: Copy + Eq + Hash>(lists: &[(&[T], f64)], k: f64) -> Vec<(T, f64)> {
    let mut scores: HashMap<T, (f64, usize)> = HashMap::new();
    let mut order = 0usize;
    for (list, weight) in lists {
        for (rank, item) in list.iter().enumerate() {
            let entry = scores.entry(*item).or_insert_with(|| {
                order += 1;
                (0.0, order)
            });
            entry.0 += rank_share(*weight, k, rank + 1);
        }
    }
    let mut fused: Vec<(T, f64, usize)> =
        scores.into_iter().map(|(item, (score, first))| (item, score, first)).collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    fused.into_iter().map(|(item, score, _)| (item, score)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_in_both_lists_win() {
        let dense = [1, 2, 3];
        let lexical = [3, 4];
        let fused = reciprocal_rank_fusion(&[(&dense, 1.0), (&lexical, 1.0)], RRF_K);
        assert_eq!(fused[0].0, 3);
        assert!((fused[0].1 - (1.0 / 63.0 + 1.0 / 61.0)).abs() < 1e-12);
        assert_eq!(fused.iter().map(|x| x.0).collect::<Vec<_>>(), vec![3, 1, 2, 4]);
        // 1 (rank 1 in dense) and 4 (rank 2 in lexical) would tie without the first-seen rule
        // only if ranks matched; here 1 beats 2 which beats 4.
    }

    #[test]
    fn empty_lists_give_nothing() {
        let empty: [u8; 0] = [];
        assert!(reciprocal_rank_fusion(&[(&empty, 1.0)], RRF_K).is_empty());
    }
}

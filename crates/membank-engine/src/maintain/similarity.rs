//! How alike two memories are: the cosine of their vectors and the overlap of their words.

use std::collections::HashSet;

use membank_core::text;

use super::cycle::Item;

/// Each item's content as a set of index terms.
pub(super) fn terms_of(items: &[Item]) -> Vec<HashSet<String>> {
    items.iter().map(|item| text::terms(item.memory.content.as_deref().unwrap_or("")).into_iter().collect()).collect()
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

/// Jaccard overlap of two term sets (1 for two empty texts).
pub(super) fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let common = a.intersection(b).count();
    common as f64 / (a.len() + b.len() - common) as f64
}

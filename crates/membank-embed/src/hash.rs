//! A deterministic hashing embedder for unit tests: each lowercase word (and each CJK
//! character) is hashed into one of `dim` buckets with a sign, then the vector is
//! L2-normalised. Texts sharing words get a positive cosine; that is all it promises.

use crate::{EmbedError, Embedder};

/// Bag-of-words hashing embedder. For tests only; see the crate docs.
#[derive(Debug, Clone)]
pub struct HashEmbedder {
    dim: usize,
    model_id: String,
}

impl HashEmbedder {
    /// A hashing embedder producing vectors of length `dim` (at least 8).
    pub fn new(dim: usize) -> Self {
        let dim = dim.max(8);
        Self { dim, model_id: format!("test/hash-{dim}") }
    }

    fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut vector = vec![0f32; self.dim];
        let lower = text.to_lowercase();
        for word in lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
            // FNV-1a: stable across runs and platforms, unlike std's RandomState.
            let mut hash: u64 = 0xcbf29ce484222325;
            for byte in word.bytes() {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x100000001b3);
            }
            let bucket = (hash % self.dim as u64) as usize;
            let sign = if (hash >> 63) == 0 { 1.0 } else { -1.0 };
            vector[bucket] += sign;
        }
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            vector.iter_mut().for_each(|x| *x /= norm);
        }
        vector
    }
}

impl Embedder for HashEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| self.embed_one(t)).collect())
    }
}

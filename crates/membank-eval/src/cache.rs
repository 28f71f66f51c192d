//! An embedder wrapper that remembers vectors by content hash within one run.
//!
//! LongMemEval's S file repeats the same sessions across many questions' haystacks (19k
//! distinct sessions in 24k), and each question is imported as its own user, so the same
//! message would be embedded again and again. This wrapper embeds each distinct text once.
//! It is exact (same text, same vector) and lives only as long as the run.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use membank_engine::Embedder;
use membank_engine::embed::EmbedError;
use sha2::{Digest, Sha256};

/// A layer and a text's digest.
type LayerKey = (usize, [u8; 32]);

/// Wraps an embedder with an in-memory cache keyed by the SHA-256 of each text.
pub struct CachingEmbedder {
    inner: Arc<dyn Embedder>,
    vectors: Mutex<HashMap<[u8; 32], Arc<[f32]>>>,
    /// [`Embedder::layer_means`]'s answers, by layer and text.
    layers: Mutex<HashMap<LayerKey, Arc<[f32]>>>,
}

impl std::fmt::Debug for CachingEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachingEmbedder").field("model", &self.inner.model_id()).finish_non_exhaustive()
    }
}

impl CachingEmbedder {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Embedder>) -> Self {
        Self { inner, vectors: Mutex::new(HashMap::new()), layers: Mutex::new(HashMap::new()) }
    }

    /// How many distinct texts are cached.
    pub fn len(&self) -> usize {
        self.vectors.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// True when nothing is cached yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn digest(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

/// One vector per text from `cache` by its key, computing only the keys it lacks (each
/// once) with `compute`; `None` when `compute` has none to give.
fn cached<K: Copy + Eq + std::hash::Hash>(
    cache: &Mutex<HashMap<K, Arc<[f32]>>>,
    keys: &[K],
    texts: &[&str],
    compute: impl FnOnce(&[&str]) -> Result<Option<Vec<Vec<f32>>>, EmbedError>,
) -> Result<Option<Vec<Vec<f32>>>, EmbedError> {
    let missing: Vec<usize> = {
        let held = cache.lock().unwrap_or_else(|e| e.into_inner());
        let mut seen = std::collections::HashSet::new();
        (0..texts.len()).filter(|&i| !held.contains_key(&keys[i]) && seen.insert(keys[i])).collect()
    };
    if !missing.is_empty() {
        let batch: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
        let Some(vectors) = compute(&batch)? else {
            return Ok(None);
        };
        let mut held = cache.lock().unwrap_or_else(|e| e.into_inner());
        for (&i, vector) in missing.iter().zip(vectors) {
            held.insert(keys[i], vector.into());
        }
    }
    let held = cache.lock().unwrap_or_else(|e| e.into_inner());
    keys.iter()
        .map(|k| held.get(k).map(|v| v.to_vec()))
        .collect::<Option<Vec<_>>>()
        .map(Some)
        .ok_or_else(|| EmbedError::Fetch("the embedder returned fewer vectors than texts".into()))
}

impl Embedder for CachingEmbedder {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let keys: Vec<[u8; 32]> = texts.iter().map(|t| digest(t)).collect();
        let vectors = cached(&self.vectors, &keys, texts, |batch| self.inner.embed(batch).map(Some))?;
        vectors.ok_or_else(|| EmbedError::Fetch("the embedder returned no vectors".into()))
    }
    /// Cached like documents, per layer; an embedder that has no layers to show says so
    /// for every text alike.
    fn layer_means(&self, texts: &[&str], layer: usize) -> Result<Option<Vec<Vec<f32>>>, EmbedError> {
        let keys: Vec<LayerKey> = texts.iter().map(|t| (layer, digest(t))).collect();
        cached(&self.layers, &keys, texts, |batch| self.inner.layer_means(batch, layer))
    }
    /// Queries are embedded as queries (e5's `query: ` prefix), not cached: each question is
    /// asked once, and a query's vector must never be served for the same text as a document.
    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        self.inner.embed_query(text)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Counts the texts it is asked to read; shows layers when `layers` is set.
    struct Counting {
        read: AtomicUsize,
        layers: bool,
    }

    impl Embedder for Counting {
        fn model_id(&self) -> &str {
            "counting"
        }
        fn dim(&self) -> usize {
            2
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.read.fetch_add(texts.len(), Ordering::Relaxed);
            Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
        }
        fn layer_means(&self, texts: &[&str], layer: usize) -> Result<Option<Vec<Vec<f32>>>, EmbedError> {
            if !self.layers {
                return Ok(None);
            }
            self.read.fetch_add(texts.len(), Ordering::Relaxed);
            Ok(Some(texts.iter().map(|t| vec![t.len() as f32, layer as f32]).collect()))
        }
    }

    #[test]
    fn each_distinct_text_is_read_once_per_layer_and_no_layers_stays_none() {
        let inner = Arc::new(Counting { read: AtomicUsize::new(0), layers: true });
        let cache = CachingEmbedder::new(inner.clone());
        let texts = ["a", "bb", "a", ""];
        assert_eq!(cache.embed(&texts).unwrap(), vec![vec![1.0, 1.0], vec![2.0, 1.0], vec![1.0, 1.0], vec![0.0, 1.0]]);
        assert_eq!(inner.read.load(Ordering::Relaxed), 3);
        let four = cache.layer_means(&texts, 4).unwrap().unwrap();
        assert_eq!(four, vec![vec![1.0, 4.0], vec![2.0, 4.0], vec![1.0, 4.0], vec![0.0, 4.0]]);
        assert_eq!(inner.read.load(Ordering::Relaxed), 6, "layer means are cached apart from vectors");
        assert_eq!(cache.layer_means(&texts, 4).unwrap().unwrap(), four);
        assert_eq!(cache.layer_means(&["bb"], 2).unwrap().unwrap(), vec![vec![2.0, 2.0]], "per layer");
        assert_eq!(inner.read.load(Ordering::Relaxed), 7);
        assert_eq!(cache.layer_means(&[], 4).unwrap(), Some(Vec::new()));

        let blind = CachingEmbedder::new(Arc::new(Counting { read: AtomicUsize::new(0), layers: false }));
        assert_eq!(blind.layer_means(&texts, 4).unwrap(), None);
        assert_eq!(blind.embed(&["x"]).unwrap(), vec![vec![1.0, 1.0]]);
    }
}

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

impl Embedder for CachingEmbedder {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let keys: Vec<[u8; 32]> = texts.iter().map(|t| digest(t)).collect();
        let missing: Vec<usize> = {
            let cache = self.vectors.lock().unwrap_or_else(|e| e.into_inner());
            let mut seen = std::collections::HashSet::new();
            (0..texts.len()).filter(|&i| !cache.contains_key(&keys[i]) && seen.insert(keys[i])).collect()
        };
        if !missing.is_empty() {
            let batch: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
            let vectors = self.inner.embed(&batch)?;
            let mut cache = self.vectors.lock().unwrap_or_else(|e| e.into_inner());
            for (&i, vector) in missing.iter().zip(vectors) {
                cache.insert(keys[i], vector.into());
            }
        }
        let cache = self.vectors.lock().unwrap_or_else(|e| e.into_inner());
        keys.iter()
            .map(|k| {
                cache
                    .get(k)
                    .map(|v| v.to_vec())
                    .ok_or_else(|| EmbedError::Fetch("the embedder returned fewer vectors than texts".into()))
            })
            .collect()
    }
    /// Cached like documents, per layer; an embedder that has no layers to show says so
    /// for every text alike.
    fn layer_means(&self, texts: &[&str], layer: usize) -> Result<Option<Vec<Vec<f32>>>, EmbedError> {
        let keys: Vec<LayerKey> = texts.iter().map(|t| (layer, digest(t))).collect();
        let missing: Vec<usize> = {
            let cache = self.layers.lock().unwrap_or_else(|e| e.into_inner());
            let mut seen = std::collections::HashSet::new();
            (0..texts.len()).filter(|&i| !cache.contains_key(&keys[i]) && seen.insert(keys[i])).collect()
        };
        if !missing.is_empty() {
            let batch: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
            let Some(means) = self.inner.layer_means(&batch, layer)? else {
                return Ok(None);
            };
            let mut cache = self.layers.lock().unwrap_or_else(|e| e.into_inner());
            for (&i, mean) in missing.iter().zip(means) {
                cache.insert(keys[i], mean.into());
            }
        }
        let cache = self.layers.lock().unwrap_or_else(|e| e.into_inner());
        keys.iter()
            .map(|k| cache.get(k).map(|v| v.to_vec()))
            .collect::<Option<Vec<_>>>()
            .map_or(Err(EmbedError::Fetch("the embedder returned fewer layer means than texts".into())), |v| {
                Ok(Some(v))
            })
    }
    /// Queries are embedded as queries (e5's `query: ` prefix), not cached: each question is
    /// asked once, and a query's vector must never be served for the same text as a document.
    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        self.inner.embed_query(text)
    }
}

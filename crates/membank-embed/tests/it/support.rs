//! Shared helpers of the integration tests: where the real model is, and a loaded embedder
//! shared by the tests of one run (loading takes a fraction of a second, but not zero).
//! It deliberately does not download anything; a missing model fails the test.

use std::path::PathBuf;
use std::sync::OnceLock;

use membank_embed::{LocalEmbedder, LocalOptions};

/// The model directory: `MEMBANK_MODEL_DIR` if set, else the default location. Panics with
/// instructions when the model is not there.
pub fn model_dir() -> PathBuf {
    let dir = std::env::var_os("MEMBANK_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(membank_embed::fetch::default_model_dir);
    let missing: Vec<&str> = membank_embed::local::MODEL_FILES.into_iter().filter(|f| !dir.join(f).is_file()).collect();
    assert!(
        missing.is_empty(),
        "the all-MiniLM-L6-v2 model is not in {} (missing {missing:?}); run `membank models fetch` \
         (or set MEMBANK_MODEL_DIR to a directory holding config.json, tokenizer.json, model.safetensors)",
        dir.display()
    );
    dir
}

/// The real model, loaded once per test run, with two threads.
pub fn embedder() -> &'static LocalEmbedder {
    static EMBEDDER: OnceLock<LocalEmbedder> = OnceLock::new();
    EMBEDDER.get_or_init(|| {
        match LocalEmbedder::open(&model_dir(), LocalOptions { threads: 2, ..Default::default() }) {
            Ok(embedder) => embedder,
            Err(e) => panic!("loading the model failed: {e}"),
        }
    })
}

/// The real model with f32 queries and documents (the reference path), loaded once.
pub fn f32_embedder() -> &'static LocalEmbedder {
    static EMBEDDER: OnceLock<LocalEmbedder> = OnceLock::new();
    EMBEDDER.get_or_init(|| {
        let f32 = membank_embed::QueryPrecision::F32;
        let options = LocalOptions { threads: 2, query_precision: f32, document_precision: f32 };
        match LocalEmbedder::open(&model_dir(), options) {
            Ok(embedder) => embedder,
            Err(e) => panic!("loading the model failed: {e}"),
        }
    })
}

/// Cosine similarity of two vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b))
}

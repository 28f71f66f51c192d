//! Sentence embeddings for membank: the [`Embedder`] trait and its implementations.
//!
//! This is the only crate that knows a model runtime. The engine sees vectors and a
//! model id, nothing else. Implementations:
//! - `local`: all-MiniLM-L6-v2 (BERT) run in-process on CPU from a model directory
//!   (config.json, tokenizer.json, model.safetensors);
//! - `openai`: any OpenAI-compatible `/v1/embeddings` endpoint;
//! - [`HashEmbedder`] (feature `hash`): a deterministic bag-of-words hashing embedder
//!   for unit tests only. It is never chosen silently: nothing in the product falls
//!   back to it when a model is missing.
//!
//! It deliberately does not cache, store or compare vectors; that is the store's job.

mod bert;
mod error;
pub mod fetch;
#[cfg(feature = "hash")]
mod hash;
mod kernels;
pub mod local;
pub mod openai;
mod tokenizer;

pub use error::EmbedError;
#[cfg(feature = "hash")]
pub use hash::HashEmbedder;
pub use fetch::{FetchOrigin, FetchReport, FetchSource, default_model_dir, fetch_model};
pub use local::{LocalEmbedder, LocalOptions};
pub use openai::{OpenAiConfig, OpenAiEmbedder};

/// Turns texts into fixed-length, L2-normalised vectors.
///
/// Implementations are shareable across threads; a call embeds a batch and returns one
/// vector per input text, in input order.
pub trait Embedder: Send + Sync {
    /// Stable identifier of the model, stored beside every vector so that a store never
    /// mixes vectors of different models (e.g. `sentence-transformers/all-MiniLM-L6-v2`).
    fn model_id(&self) -> &str;
    /// Length of every vector this embedder returns.
    fn dim(&self) -> usize;
    /// Embeds a batch of texts. Empty input gives an empty output.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

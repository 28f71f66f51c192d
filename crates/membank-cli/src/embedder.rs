//! Choosing and loading the embedder from configuration.
//!
//! Loading is lazy: commands that never embed (list, show, forget, events, sweep) work
//! without a model. There is no fallback: a missing model is an error that says how to
//! fetch it, never a silent switch to another embedder.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use membank_embed::{EmbedError, Embedder};

/// Which embedder to build, fully resolved from flags, env and file.
#[derive(Debug, Clone)]
pub enum EmbedderChoice {
    /// In-process all-MiniLM-L6-v2 or multilingual-e5-small.
    Local {
        /// Model directory.
        dir: PathBuf,
        /// The model the directory must hold, when one was named (`--local-model`).
        expect: Option<membank_embed::KnownModel>,
        /// Threads.
        threads: usize,
    },
    /// OpenAI-compatible endpoint.
    OpenAi(membank_embed::openai::OpenAiConfig),
}

impl EmbedderChoice {
    /// Builds the embedder now.
    pub fn load(&self) -> Result<Arc<dyn Embedder>, EmbedError> {
        match self {
            EmbedderChoice::Local { dir, expect, threads } => {
                let embedder = membank_embed::LocalEmbedder::open(dir, membank_embed::LocalOptions { threads: *threads })?;
                if let Some(expected) = expect
                    && embedder.known_model() != *expected
                {
                    return Err(EmbedError::InvalidModel {
                        dir: dir.clone(),
                        reason: format!("it holds {}, but the configured local model is {}", embedder.known_model().name(), expected.name()),
                    });
                }
                Ok(Arc::new(embedder))
            }
            EmbedderChoice::OpenAi(config) => Ok(Arc::new(membank_embed::openai::OpenAiEmbedder::new(config.clone())?)),
        }
    }
}

/// An embedder that loads on first use.
pub struct LazyEmbedder {
    choice: EmbedderChoice,
    loaded: OnceLock<Result<Arc<dyn Embedder>, String>>,
}

impl LazyEmbedder {
    /// Wraps a choice; nothing is loaded yet.
    pub fn new(choice: EmbedderChoice) -> Self {
        Self { choice, loaded: OnceLock::new() }
    }

    fn get(&self) -> Result<&Arc<dyn Embedder>, EmbedError> {
        match self.loaded.get_or_init(|| self.choice.load().map_err(|e| e.to_string())) {
            Ok(embedder) => Ok(embedder),
            // The first failure is returned as itself below; later calls repeat its text.
            Err(message) => Err(EmbedError::Fetch(message.clone())),
        }
    }
}

impl Embedder for LazyEmbedder {
    fn model_id(&self) -> &str {
        self.get().map(|e| e.model_id()).unwrap_or("unloaded")
    }
    fn dim(&self) -> usize {
        self.get().map(|e| e.dim()).unwrap_or(0)
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.load_once()?;
        self.get()?.embed(texts)
    }
    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        self.load_once()?;
        self.get()?.embed_query(text)
    }
}

impl LazyEmbedder {
    /// Loads the model on first use, keeping the first error's own variant.
    fn load_once(&self) -> Result<(), EmbedError> {
        if self.loaded.get().is_none() {
            // Load here so the first error keeps its own variant (ModelMissing → exit code 7).
            let result = self.choice.load();
            let embedder = match result {
                Ok(embedder) => embedder,
                Err(err) => {
                    let _ = self.loaded.set(Err(err.to_string()));
                    return Err(err);
                }
            };
            let _ = self.loaded.set(Ok(embedder));
        }
        Ok(())
    }
}

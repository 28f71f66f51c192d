//! `simulate`: replays a benchmark the way the product would live it, into throw-away
//! stores, and measures what forgetting costs and saves.
//!
//! Each user (a MemoryBank user, a LoCoMo conversation, a LongMemEval question's haystack)
//! is replayed on its own, in a fresh
//! SQLite file in a temporary directory, by one engine driven by a [`ManualClock`]. Every
//! calendar day from the user's first conversation day to the last is lived, quiet days
//! too: each turn of the day, in time order, is first used as a recall query (k = 5, the
//! policy's own strengthening, as a companion recalls for what the person just said) and
//! then stored; at the day's end (23:59:59 UTC) one maintenance cycle runs under the
//! policy. `gap_days` more days with their maintenance may follow. Then the benchmark's
//! questions are asked as `membank eval` asks them (inspection recalls that strengthen
//! nothing, at the day after the last conversation day plus the gap, over active memories
//! only; turns only for MemoryBank) and scored with the same metrics. LongMemEval: each
//! question is its own user (its haystack is its history, the person's messages its turns,
//! as `membank eval longmemeval` imports them), asked once at its `question_date` — or at
//! the start of the day after its last session, when that is later, so every replayed
//! day's maintenance has run — plus the gap; the protocol's abstention questions and
//! questions without a gold user turn are replayed but not asked.
//!
//! In the same run, at equal storage:
//! - `no_forgetting`: the same replay with no maintenance at all (everything stays active);
//! - `fifo` and `lru`: per user, N = the number of memories the policy run ends with
//!   active; from a copy of the no-forgetting store (`VACUUM INTO`), the N newest by
//!   `occurred_at` (fifo) or the N most recently recalled (`last_recalled_at`, ties by
//!   `occurred_at`; lru) stay active and the rest is archived in one maintenance
//!   transaction. Copying is exact and cheaper than a third replay.
//!
//! **Evidence through merges.** Maintenance merges near-duplicates (the older copy becomes
//! `superseded`, `superseded_by` the survivor) and, with an LLM, fuses clusters into a new
//! memory (`derived_from` its sources, each source superseded by it). A gold turn whose
//! memory was superseded counts as found when the memory that now holds it — following
//! `superseded_by` to an active memory — is retrieved. That is honest: a near-duplicate
//! survivor says the same thing, and a fused memory was written to carry its sources'
//! facts. Scoring is therefore on memory ids: each evidence key maps to its holding active
//! memory, or to nothing when the chain ends in an archived memory (the evidence is lost).
//! Simulations run without an LLM, so only merges happen here; fusion is handled the same.
//!
//! Embeddings: every replay embeds the same texts, so one [`CachingEmbedder`] serves all
//! replays (the documents are embedded once, in large batches, before the first replay),
//! and query vectors are kept too, so the second replay and the four question rounds
//! embed nothing new. It never touches any configured database and prints nothing.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono::{Duration, NaiveDate};
use membank_engine::core::forgetting::{DecisionMode, PolicyKind};
use membank_engine::core::limits::MAX_RECALL_K;
use membank_engine::core::memory::turn_content;
use membank_engine::core::{
    InvalidInput, Kind, ManualClock, Memory, MemoryId, Scope, Source, Status, TenantId, Timestamp, UserId,
};
use membank_engine::embed::EmbedError;
use membank_engine::import::IMPORT_KEY;
use membank_engine::import::locomo::parse_sample;
use membank_engine::import::longmemeval as longmemeval_import;
use membank_engine::import::memorybank::{self, turn_time};
use membank_engine::{
    Embedder, Engine, EngineConfig, EngineError, MaintainRequest, RecallRequest, RememberNote, RememberTurn, Reminisce,
    Store,
};
use membank_store::{ListQuery, MaintenancePlan, SqliteStore, StatusCounts};
use serde::Serialize;
use serde_json::json;

use crate::critical::CriticalLabels;
use crate::error::read;
use crate::locomo::normalise_evidence;
use crate::memorybank::{self as memorybank_eval, Lang};
use crate::metrics::{Means, all_at, hit_at, reciprocal_rank, roc_auc};
use crate::{CachingEmbedder, EVAL_TENANT, EvalError, Progress};

/// How many memories each replayed turn recalls (a companion's working set).
pub const REPLAY_K: usize = 5;
/// The longest gap allowed between the last conversation and the questions (ten years).
pub const MAX_GAP_DAYS: u32 = 3650;
/// Documents embedded per call while warming the cache (the local model is faster per
/// sentence on large batches).
const WARM_BATCH: usize = 256;
/// "Everything" as a page size for store listings.
const ALL: usize = i64::MAX as usize;

/// Which benchmark to replay, and its files.
#[derive(Debug, Clone)]
pub enum Benchmark {
    /// The MemoryBank paper's bank and probing questions.
    MemoryBank {
        /// `memory_bank_<lang>.json`.
        bank: PathBuf,
        /// `probing_questions_<lang>.jsonl`.
        questions: PathBuf,
        /// Gold evidence; without it nothing is asked or scored.
        gold: Option<PathBuf>,
        /// Language (qid scheme).
        lang: Lang,
        /// Which users (0-based positions in the bank file's key order, as the labelled
        /// halves are cut); `None`: all.
        users: Option<Vec<usize>>,
    },
    /// LoCoMo conversations.
    Locomo {
        /// `locomo10.json`.
        data: PathBuf,
        /// Which conversations (0-based positions in the file); `None`: all.
        samples: Option<Vec<usize>>,
    },
    /// LongMemEval questions, each with its own haystack.
    LongMemEval {
        /// `longmemeval_s_cleaned.json` or `longmemeval_oracle.json`.
        data: PathBuf,
        /// Which questions (0-based positions in the file); `None`: all.
        samples: Option<Vec<usize>>,
    },
}

/// How a benchmark's questions are scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scoring {
    /// hit@k, all@k, MRR over turns and fused memories.
    MemoryBank,
    /// recall@k per evidence item.
    Locomo,
    /// recall@k per evidence item, and the protocol's recall_any@k and recall_all@k.
    LongMemEval,
}

impl Benchmark {
    /// `memorybank`, `locomo` or `longmemeval`.
    pub fn name(&self) -> &'static str {
        match self {
            Benchmark::MemoryBank { .. } => "memorybank",
            Benchmark::Locomo { .. } => "locomo",
            Benchmark::LongMemEval { .. } => "longmemeval",
        }
    }

    fn scoring(&self) -> Scoring {
        match self {
            Benchmark::MemoryBank { .. } => Scoring::MemoryBank,
            Benchmark::Locomo { .. } => Scoring::Locomo,
            Benchmark::LongMemEval { .. } => Scoring::LongMemEval,
        }
    }

    /// The positions chosen with `--samples` (LoCoMo, LongMemEval).
    fn samples(&self) -> Option<Vec<usize>> {
        match self {
            Benchmark::Locomo { samples, .. } | Benchmark::LongMemEval { samples, .. } => samples.clone(),
            Benchmark::MemoryBank { .. } => None,
        }
    }

    /// The metric the summary and the plot lead with: hit@5 (MemoryBank), recall@10 (LoCoMo,
    /// LongMemEval), or the largest cut-off asked when that one is not.
    pub fn main_metric(&self, ks: &[usize]) -> String {
        let (name, k) = match self {
            Benchmark::MemoryBank { .. } => ("hit", 5),
            Benchmark::Locomo { .. } | Benchmark::LongMemEval { .. } => ("recall", 10),
        };
        let k = if ks.contains(&k) { k } else { ks.iter().copied().max().unwrap_or(k) };
        format!("{name}@{k}")
    }
}

/// The policy under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimPolicy {
    /// MemoryBank's curve `R = exp(-t/S)`, archiving below θ.
    MemoryBank,
    /// FadeMem: importance, two layers, archiving below ε.
    FadeMem,
    /// No maintenance at all (the run is its own no-forgetting baseline).
    None,
}

impl SimPolicy {
    /// `memorybank`, `fademem` or `none`.
    pub fn as_str(self) -> &'static str {
        match self {
            SimPolicy::MemoryBank => "memorybank",
            SimPolicy::FadeMem => "fademem",
            SimPolicy::None => "none",
        }
    }
}

impl std::str::FromStr for SimPolicy {
    type Err = InvalidInput;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "memorybank" => Ok(SimPolicy::MemoryBank),
            "fademem" => Ok(SimPolicy::FadeMem),
            "none" => Ok(SimPolicy::None),
            other => Err(InvalidInput::new("policy", format!("{other:?} is not one of: memorybank, fademem, none"))),
        }
    }
}

/// What to simulate.
#[derive(Debug, Clone)]
pub struct SimulateRun {
    /// The benchmark and its files.
    pub benchmark: Benchmark,
    /// The policy under test.
    pub policy: SimPolicy,
    /// The configured engine settings (forgetting parameters, recall settings); the run
    /// sets the policy kind, and the threshold when one is given.
    pub base: EngineConfig,
    /// θ under memorybank (threshold mode), ε under fademem; in (0, 1).
    pub threshold: Option<f64>,
    /// Days that pass, with daily maintenance, between the last conversation and the questions.
    pub gap_days: u32,
    /// Cut-offs for the metrics.
    pub ks: Vec<usize>,
}

impl SimulateRun {
    /// Checks the run's numbers and returns the engine settings of the policy run.
    pub fn policy_config(&self) -> Result<EngineConfig, EvalError> {
        let invalid = |field: &'static str, reason: String| {
            EvalError::Engine(EngineError::Invalid(InvalidInput::new(field, reason)))
        };
        if self.gap_days > MAX_GAP_DAYS {
            return Err(invalid(
                "gap_days",
                format!("{} is more than the {MAX_GAP_DAYS} days (ten years) a simulation may skip", self.gap_days),
            ));
        }
        if self.ks.is_empty() || self.ks.iter().any(|&k| k == 0 || k > MAX_RECALL_K) {
            return Err(invalid("k", format!("cut-offs must be between 1 and {MAX_RECALL_K}")));
        }
        let mut config = self.base.clone();
        match (self.policy, self.threshold) {
            (_, Some(t)) if !(t.is_finite() && t > 0.0 && t < 1.0) => {
                return Err(invalid("threshold", format!("{t} must lie strictly between 0 and 1")));
            }
            (SimPolicy::None, Some(_)) => {
                return Err(invalid(
                    "threshold",
                    "policy none archives nothing, so a threshold has no meaning; choose memorybank or fademem".into(),
                ));
            }
            (SimPolicy::MemoryBank, threshold) => {
                config.forgetting.kind = PolicyKind::MemoryBank;
                if let Some(theta) = threshold {
                    config.forgetting.mode = DecisionMode::Threshold { theta };
                }
            }
            (SimPolicy::FadeMem, threshold) => {
                config.forgetting.kind = PolicyKind::FadeMem;
                if let Some(epsilon) = threshold {
                    config.forgetting.fademem.epsilon = epsilon;
                    // The consolidation band [ε, upper) must stay a band; it only matters
                    // with an LLM, which simulations do not use.
                    let upper = &mut config.forgetting.fademem.consolidation_threshold;
                    *upper = upper.max(epsilon);
                }
            }
            (SimPolicy::None, None) => {}
        }
        config.forgetting.validate().map_err(|e| EvalError::Engine(e.into()))?;
        Ok(config)
    }
}

/// Memories stored and kept, summed over users, at the end.
#[derive(Debug, Clone, Serialize)]
pub struct Storage {
    /// Memories ever stored (turns, plus fused memories if any).
    pub stored: u64,
    /// Active at the end under the policy.
    pub active: u64,
    /// Archived at the end under the policy.
    pub archived: u64,
    /// Superseded (merged or fused) at the end under the policy.
    pub superseded: u64,
    /// `1 − active / stored`.
    pub reduction: f64,
}

/// The metrics of each way of keeping memories (empty maps when nothing was scored).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Quality {
    /// The policy under test.
    pub forgetting: BTreeMap<String, f64>,
    /// Everything kept.
    pub no_forgetting: BTreeMap<String, f64>,
    /// The newest N per user.
    pub fifo: BTreeMap<String, f64>,
    /// The N most recently recalled per user.
    pub lru: BTreeMap<String, f64>,
    /// The policy under test, its recalls consulting the archive when the active memories
    /// do not answer well (`reminisce: auto`); the other arms never consult it.
    pub forgetting_reminiscence: BTreeMap<String, f64>,
}

/// How the `forgetting_reminiscence` arm used the archive.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ReminiscenceCounts {
    /// Questions asked in that arm.
    pub questions: usize,
    /// Of those, recalls that consulted the archive.
    pub consulted_archive: usize,
    /// Of those, recalls where a memory brought back from the archive holds gold evidence
    /// within the main metric's depth.
    pub answered_from_archive: usize,
}

/// What was asked.
#[derive(Debug, Clone, Serialize)]
pub struct Questions {
    /// Questions asked (per way of keeping).
    pub asked: usize,
    /// Questions scored.
    pub scored: usize,
    /// The metric the summary and the plot lead with.
    pub main_metric: String,
    /// Why nothing was scored, when nothing was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One way of keeping memories in detail.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Breakdown {
    /// MemoryBank: the metrics per gold kind, each with its count `n`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_kind: Option<BTreeMap<String, BTreeMap<String, f64>>>,
    /// LoCoMo: the metrics per category code, each with its count `n`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_category: Option<BTreeMap<String, BTreeMap<String, f64>>>,
    /// LongMemEval: the metrics per `question_type`, each with its count `n`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_type: Option<BTreeMap<String, BTreeMap<String, f64>>>,
    /// Evidence items of the scored questions.
    pub evidence: usize,
    /// Of those, how many an active memory still holds (itself or its survivor).
    pub evidence_held: usize,
}

/// One user's (conversation's) numbers.
#[derive(Debug, Clone, Serialize)]
pub struct UserSummary {
    /// The user key (MemoryBank), sample id (LoCoMo) or question id (LongMemEval).
    pub user: String,
    /// Days lived, the gap included.
    pub days: usize,
    /// Turns stored.
    pub turns: usize,
    /// Memories ever stored under the policy (turns and fused).
    pub stored: u64,
    /// Active at the end under the policy: the N the fifo and lru baselines keep.
    pub active: u64,
    /// Archived at the end under the policy.
    pub archived: u64,
    /// Superseded at the end under the policy.
    pub superseded: u64,
    /// Active at the end without forgetting.
    pub no_forgetting_active: u64,
    /// Active in the fifo baseline (counted in its store: N when N ≤ stored).
    pub fifo_active: u64,
    /// Active in the lru baseline (counted in its store).
    pub lru_active: u64,
    /// Questions asked for this user.
    pub questions: usize,
    /// The main metric per way of keeping, over this user's scored questions.
    pub main: BTreeMap<String, f64>,
    /// With labels: the share of this user's critical turns still held by an active memory
    /// under the policy at the end (absent when none of its turns is labelled critical).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub critical_kept: Option<f64>,
}

/// One simulated day, summed over users (a user whose replay has ended counts with its
/// final numbers, so the curve is continuous).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct TimelineDay {
    /// Days since each user's first conversation day (0 = that day).
    pub day: usize,
    /// Active under the policy at the day's end.
    pub active: u64,
    /// Archived under the policy.
    pub archived: u64,
    /// Superseded under the policy.
    pub superseded: u64,
    /// Stored so far under the policy.
    pub stored: u64,
    /// Active without forgetting (everything stored so far).
    pub no_forgetting_active: u64,
    /// Users still in their conversation days (the others are in the gap or done).
    pub conversing: usize,
    /// With labels: the share of critical turns stored so far that an active memory still
    /// holds under the policy at the day's end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub critical_kept: Option<f64>,
}

/// The parameters the run used.
#[derive(Debug, Clone, Serialize)]
pub struct Parameters {
    /// The embedding model.
    pub model: String,
    /// Memories recalled per replayed turn.
    pub replay_k: usize,
    /// Days between the last conversation and the questions.
    pub gap_days: u32,
    /// Cut-offs of the metrics.
    pub ks: Vec<usize>,
    /// θ (memorybank, threshold mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theta: Option<f64>,
    /// ε (fademem).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epsilon: Option<f64>,
    /// The memorybank decision mode: threshold, stochastic or rank.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<&'static str>,
    /// LoCoMo conversations or LongMemEval questions replayed (0-based positions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples: Option<Vec<usize>>,
    /// MemoryBank language.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lang: Option<&'static str>,
    /// Users (conversations) replayed.
    pub users: usize,
}

/// What happened to the labelled critical turns (`--critical`).
#[derive(Debug, Clone, Serialize)]
pub struct CriticalReport {
    /// Labelled turns of the run (critical or not) that the replay stored.
    pub labelled: usize,
    /// Of those, labelled critical.
    pub critical: usize,
    /// Per way of keeping: the share of critical turns an active memory still holds at the
    /// end (itself or the survivor it was merged into); fifo and lru at the policy's storage.
    pub kept: BTreeMap<String, f64>,
    /// ROC AUC of the importance the engine rated each labelled turn with when it stored it
    /// (`base_importance`, read from the no-forgetting store) against the labels; absent
    /// without both classes.
    pub importance_auc: Option<f64>,
}

/// The outcome: `{"benchmark","policy","storage","quality","timeline",…}`.
#[derive(Debug, Clone, Serialize)]
pub struct SimulateReport {
    /// `memorybank`, `locomo` or `longmemeval`.
    pub benchmark: &'static str,
    /// `memorybank`, `fademem` or `none`.
    pub policy: &'static str,
    /// What was used.
    pub parameters: Parameters,
    /// Storage at the end under the policy.
    pub storage: Storage,
    /// Active at the end without forgetting.
    pub no_forgetting_active: u64,
    /// The metrics of each way of keeping.
    pub quality: Quality,
    /// How the `forgetting_reminiscence` arm used the archive.
    pub reminiscence: ReminiscenceCounts,
    /// What was asked.
    pub questions: Questions,
    /// Per way of keeping: groups and evidence still held.
    pub breakdown: BTreeMap<String, Breakdown>,
    /// Per user.
    pub users: Vec<UserSummary>,
    /// Per simulated day.
    pub timeline: Vec<TimelineDay>,
    /// The first day index of the gap for every user (the longest conversation's span);
    /// equal to the timeline's length when there is no gap.
    pub gap_from_day: usize,
    /// With `--critical`: what the policy and the baselines kept of the critical turns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub critical: Option<CriticalReport>,
}

/// What a replayed turn stores.
#[derive(Debug, Clone)]
enum Body {
    /// A MemoryBank exchange.
    Turn { user_text: String, assistant_text: Option<String> },
    /// A LoCoMo utterance (stored as a note, as the LoCoMo import stores it).
    Note { text: String },
}

impl Body {
    /// The text the engine embeds for it.
    fn content(&self) -> String {
        match self {
            Body::Turn { user_text, assistant_text } => turn_content(user_text, assistant_text.as_deref()),
            Body::Note { text } => text.clone(),
        }
    }
}

#[derive(Debug, Clone)]
struct SimTurn {
    at: Timestamp,
    /// What the person said: the recall query before storing.
    query: String,
    body: Body,
    metadata: BTreeMap<String, String>,
}

#[derive(Debug, Clone)]
struct SimQuestion {
    text: String,
    /// Gold kind (MemoryBank), category code (LoCoMo) or question type (LongMemEval).
    group: String,
    /// Import keys of the evidence, distinct.
    evidence: Vec<String>,
}

#[derive(Debug, Clone)]
struct UserPlan {
    user: UserId,
    label: String,
    turns: Vec<SimTurn>,
    questions: Vec<SimQuestion>,
    /// When the questions are asked without a gap.
    ask_at: Timestamp,
}

impl UserPlan {
    fn first_day(&self) -> NaiveDate {
        self.turns.first().map(|t| t.at.date_naive()).unwrap_or_default()
    }
    fn last_day(&self) -> NaiveDate {
        self.turns.last().map(|t| t.at.date_naive()).unwrap_or_default()
    }
    /// Conversation days, first to last, quiet days included.
    fn span(&self) -> usize {
        (self.last_day() - self.first_day()).num_days() as usize + 1
    }
}

/// The four ways of keeping, in report order.
const VARIANTS: [&str; 5] = ["forgetting", "no_forgetting", "fifo", "lru", "forgetting_reminiscence"];

/// An embedder that also keeps query vectors: every replayed turn is asked as a query in
/// each replay, and every question in each of the four rounds.
struct SimEmbedder {
    documents: CachingEmbedder,
    queries: Mutex<HashMap<String, Arc<[f32]>>>,
}

impl Embedder for SimEmbedder {
    fn model_id(&self) -> &str {
        self.documents.model_id()
    }
    fn dim(&self) -> usize {
        self.documents.dim()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.documents.embed(texts)
    }
    fn layer_means(&self, texts: &[&str], layer: usize) -> Result<Option<Vec<Vec<f32>>>, EmbedError> {
        self.documents.layer_means(texts, layer)
    }
    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        if let Some(vector) = self.queries.lock().unwrap_or_else(|e| e.into_inner()).get(text) {
            return Ok(vector.to_vec());
        }
        let vector = self.documents.embed_query(text)?;
        self.queries.lock().unwrap_or_else(|e| e.into_inner()).insert(text.to_string(), vector.clone().into());
        Ok(vector)
    }
}

/// Counts work done for the progress callback (single-threaded).
struct Meter<'a> {
    progress: Progress<'a>,
    done: Cell<usize>,
    total: usize,
}

impl Meter<'_> {
    fn tick(&self) {
        self.done.set(self.done.get() + 1);
        (self.progress)("simulating", self.done.get(), self.total);
    }
}

/// One question's values under one way of keeping.
struct Outcome {
    group: String,
    values: BTreeMap<String, f64>,
    evidence: usize,
    held: usize,
    /// The recall consulted the archive.
    consulted: bool,
    /// A memory it brought back from the archive holds gold evidence within `main_k`.
    from_archive: bool,
}

/// Runs the simulation: replays every user under the policy and without forgetting, builds
/// the fifo and lru baselines, asks the questions of each, and sums up.
pub fn run(
    embedder: Arc<dyn Embedder>,
    run: &SimulateRun,
    progress: Progress<'_>,
) -> Result<SimulateReport, EvalError> {
    run_with_labels(embedder, run, None, progress)
}

/// [`run`], and with `critical` labels also what each way of keeping kept of the critical
/// turns (per user, per day and overall) and how well the engine's importance ranks them.
/// Labels naming turns the run does not replay are ignored; labels matching none is an error.
pub fn run_with_labels(
    embedder: Arc<dyn Embedder>,
    run: &SimulateRun,
    critical: Option<&CriticalLabels>,
    progress: Progress<'_>,
) -> Result<SimulateReport, EvalError> {
    let policy_config = run.policy_config()?;
    let users = match &run.benchmark {
        Benchmark::MemoryBank { bank, questions, gold, lang, users } => {
            memorybank_plans(bank, questions, gold.as_deref(), *lang, users.as_deref())?
        }
        Benchmark::Locomo { data, samples } => locomo_plans(data, samples.as_deref())?,
        Benchmark::LongMemEval { data, samples } => longmemeval_plans(data, samples.as_deref())?,
    };
    let gap = Duration::days(i64::from(run.gap_days));
    let mut ks = run.ks.clone();
    ks.sort_unstable();
    ks.dedup();
    let depth = ks.last().copied().unwrap_or(10);
    let main_metric = run.benchmark.main_metric(&ks);
    let main_k: usize = main_metric.rsplit('@').next().and_then(|k| k.parse().ok()).unwrap_or(depth);
    let scoring = run.benchmark.scoring();
    let is_memorybank = scoring == Scoring::MemoryBank;
    let tenant = TenantId::new(EVAL_TENANT).map_err(|e| EvalError::data("tenant", e.reason))?;

    let embedder =
        Arc::new(SimEmbedder { documents: CachingEmbedder::new(embedder), queries: Mutex::new(HashMap::new()) });
    warm(&embedder, &users, progress)?;
    let dyn_embedder: Arc<dyn Embedder> = embedder.clone();

    let replays_per_user = if run.policy == SimPolicy::None { 1 } else { 2 };
    let turns: usize = users.iter().map(|u| u.turns.len()).sum();
    let questions: usize = users.iter().map(|u| u.questions.len()).sum();
    let meter = Meter { progress, done: Cell::new(0), total: turns * replays_per_user + questions * VARIANTS.len() };
    (meter.progress)("simulating", 0, meter.total);

    let scratch = tempfile::tempdir()
        .map_err(|source| EvalError::Read { path: std::env::temp_dir().display().to_string(), source })?;
    let mut outcomes: BTreeMap<&str, Vec<Outcome>> = BTreeMap::new();
    let mut summaries = Vec::new();
    let mut daily: Vec<(Vec<StatusCounts>, Vec<StatusCounts>, usize)> = Vec::new();
    // Per user: critical turns held each day under the policy, and the day each was stored.
    let mut daily_critical: Vec<(Vec<usize>, Vec<usize>)> = Vec::new();
    let mut labelled = 0;
    let mut critical_total = 0;
    let mut critical_kept: BTreeMap<&str, usize> = BTreeMap::new();
    let mut rated: Vec<(f64, bool)> = Vec::new();
    for (index, user) in users.iter().enumerate() {
        let dir = scratch.path().join(index.to_string());
        std::fs::create_dir_all(&dir).map_err(|source| EvalError::Read { path: dir.display().to_string(), source })?;
        let scope = Scope::user(tenant.clone(), user.user.clone());
        let ask_at = user.ask_at + gap;
        // This user's labels, restricted to the turns it replays.
        let labels: HashMap<&str, bool> = match critical.and_then(|c| c.user(&user.label)) {
            Some(map) => user
                .turns
                .iter()
                .filter_map(|t| t.metadata.get(IMPORT_KEY))
                .filter_map(|key| map.get(key).map(|c| (key.as_str(), *c)))
                .collect(),
            None => HashMap::new(),
        };
        let critical_keys: HashSet<&str> = labels.iter().filter(|(_, c)| **c).map(|(k, _)| *k).collect();
        let sim = Sim {
            embedder: &dyn_embedder,
            scope: &scope,
            gap_days: run.gap_days,
            meter: &meter,
            critical: &critical_keys,
        };

        let none = sim.replay(user, &run.base, false, &dir.join("none.db"))?;
        let policy = if run.policy == SimPolicy::None {
            None
        } else {
            Some(sim.replay(user, &policy_config, true, &dir.join("policy.db"))?)
        };
        let (policy_engine, policy_daily) = match &policy {
            Some((engine, _, counts, _)) => (engine, counts.clone()),
            None => (&none.0, none.2.clone()),
        };
        let policy_held = match &policy {
            Some((_, _, _, held)) => held.clone(),
            None => none.3.clone(),
        };
        let end = *policy_daily.last().unwrap_or(&StatusCounts::default());
        let keep = end.active as usize;
        let fifo = sim.baseline(&none.1, &dir.join("fifo.db"), keep, Baseline::Fifo, ask_at, &run.base)?;
        let lru = sim.baseline(&none.1, &dir.join("lru.db"), keep, Baseline::Lru, ask_at, &run.base)?;

        let kinds = if is_memorybank { vec![Kind::Turn, Kind::Fused] } else { Vec::new() };
        let mut main = BTreeMap::new();
        let mut user_kept = None;
        let never = |r: &mut RecallRequest| r.reminisce = Reminisce::Never;
        let auto = |r: &mut RecallRequest| r.reminisce = Reminisce::Auto;
        for (name, engine) in VARIANTS.into_iter().zip([policy_engine, &none.0, &fifo, &lru, policy_engine]) {
            let reminiscing = name == "forgetting_reminiscence";
            if !critical_keys.is_empty() && !reminiscing {
                let held = holders(engine.store().as_ref(), &scope, false)?;
                let kept = critical_keys.iter().filter(|k| held.contains_key(**k)).count();
                *critical_kept.entry(name).or_default() += kept;
                if name == "forgetting" {
                    user_kept = Some(kept as f64 / critical_keys.len() as f64);
                }
            }
            let customise: &dyn Fn(&mut RecallRequest) = if reminiscing { &auto } else { &never };
            let asked = sim.ask(engine, user, ask_at, &kinds, &ks, main_k, depth, scoring, customise)?;
            let mut means = Means::default();
            asked.iter().for_each(|o| means.add(&o.values));
            if let Some(value) = means.means().get(&main_metric) {
                main.insert(name.to_string(), *value);
            }
            outcomes.entry(name).or_default().extend(asked);
        }
        summaries.push(UserSummary {
            user: user.label.clone(),
            days: policy_daily.len(),
            turns: user.turns.len(),
            stored: stored(&end),
            active: end.active,
            archived: end.archived,
            superseded: end.superseded,
            no_forgetting_active: none.2.last().map_or(0, |c| c.active),
            fifo_active: active(&fifo, &scope)?,
            lru_active: active(&lru, &scope)?,
            questions: user.questions.len(),
            main,
            critical_kept: user_kept,
        });
        if !labels.is_empty() {
            labelled += labels.len();
            critical_total += critical_keys.len();
            // The importance each labelled turn was stored with (no maintenance touched it here).
            let all = none
                .1
                .list(&scope, &ListQuery { statuses: Vec::new(), limit: ALL, oldest_first: true, ..Default::default() })
                .map_err(|e| EvalError::Engine(e.into()))?;
            for memory in &all {
                if let Some(label) = memory.metadata.get(IMPORT_KEY).and_then(|k| labels.get(k.as_str())) {
                    rated.push((memory.forgetting.base_importance, *label));
                }
            }
            let stored_by_day: Vec<usize> = (0..policy_daily.len())
                .map(|day| {
                    let through = user.first_day() + Duration::days(day as i64);
                    user.turns
                        .iter()
                        .filter(|t| t.at.date_naive() <= through)
                        .filter(|t| t.metadata.get(IMPORT_KEY).is_some_and(|k| critical_keys.contains(k.as_str())))
                        .count()
                })
                .collect();
            daily_critical.push((policy_held, stored_by_day));
        }
        daily.push((policy_daily, none.2.clone(), user.span()));
        drop((policy, none, fifo, lru));
        // Each user's files go as soon as it is done: a long LoCoMo run keeps one user's
        // four small stores on disk at a time.
        let _ = std::fs::remove_dir_all(&dir);
    }

    if critical.is_some() && labelled == 0 {
        return Err(EvalError::data(
            "--critical",
            format!(
                "no label names a turn of the {} users replayed (is the label file for this benchmark and language?)",
                users.len()
            ),
        ));
    }
    let mut timeline = timeline(&daily);
    if critical.is_some() && critical_total > 0 {
        for day in &mut timeline {
            let at = |list: &Vec<usize>| list.get(day.day.min(list.len().saturating_sub(1))).copied().unwrap_or(0);
            let held: usize = daily_critical.iter().map(|(held, _)| at(held)).sum();
            let stored: usize = daily_critical.iter().map(|(_, stored)| at(stored)).sum();
            day.critical_kept = (stored > 0).then(|| held as f64 / stored as f64);
        }
    }
    let critical_report = critical.map(|_| CriticalReport {
        labelled,
        critical: critical_total,
        kept: VARIANTS
            .iter()
            .filter(|name| **name != "forgetting_reminiscence")
            .map(|name| {
                let kept = critical_kept.get(name).copied().unwrap_or(0);
                let share = if critical_total == 0 { 1.0 } else { kept as f64 / critical_total as f64 };
                (name.to_string(), share)
            })
            .collect(),
        importance_auc: roc_auc(&rated),
    });
    let end = timeline.last().copied();
    let storage = match end {
        Some(day) => Storage {
            stored: day.stored,
            active: day.active,
            archived: day.archived,
            superseded: day.superseded,
            reduction: if day.stored == 0 { 0.0 } else { 1.0 - day.active as f64 / day.stored as f64 },
        },
        None => Storage { stored: 0, active: 0, archived: 0, superseded: 0, reduction: 0.0 },
    };
    let mut quality = Quality::default();
    let mut reminiscence = ReminiscenceCounts::default();
    let mut breakdown = BTreeMap::new();
    for name in VARIANTS {
        let list = outcomes.remove(name).unwrap_or_default();
        let mut overall = Means::default();
        let mut groups: BTreeMap<String, Means> = BTreeMap::new();
        let (mut evidence, mut held) = (0, 0);
        for outcome in &list {
            overall.add(&outcome.values);
            groups.entry(outcome.group.clone()).or_default().add(&outcome.values);
            evidence += outcome.evidence;
            held += outcome.held;
        }
        let groups: BTreeMap<String, BTreeMap<String, f64>> = groups
            .into_iter()
            .map(|(group, means)| {
                let mut m = means.means();
                m.insert("n".into(), means.n as f64);
                (group, m)
            })
            .collect();
        let slot = match name {
            "forgetting" => &mut quality.forgetting,
            "no_forgetting" => &mut quality.no_forgetting,
            "fifo" => &mut quality.fifo,
            "lru" => &mut quality.lru,
            _ => {
                reminiscence.questions += list.len();
                reminiscence.consulted_archive += list.iter().filter(|o| o.consulted).count();
                reminiscence.answered_from_archive += list.iter().filter(|o| o.from_archive).count();
                &mut quality.forgetting_reminiscence
            }
        };
        *slot = overall.means();
        let (by_kind, by_category, by_type) = match scoring {
            Scoring::MemoryBank => (Some(groups), None, None),
            Scoring::Locomo => (None, Some(groups), None),
            Scoring::LongMemEval => (None, None, Some(groups)),
        };
        breakdown.insert(name.to_string(), Breakdown { by_kind, by_category, by_type, evidence, evidence_held: held });
    }
    let note = match &run.benchmark {
        Benchmark::MemoryBank { gold: None, .. } => {
            Some("no gold file given: no question was asked or scored (pass --gold)".to_string())
        }
        _ if questions == 0 => Some("the data holds no question for the users replayed".to_string()),
        _ => None,
    };
    let forgetting = &policy_config.forgetting;
    let (theta, epsilon, mode) = match run.policy {
        SimPolicy::MemoryBank => {
            let theta = match forgetting.mode {
                DecisionMode::Threshold { theta } => Some(theta),
                _ => None,
            };
            (theta, None, Some(forgetting.mode.as_str()))
        }
        SimPolicy::FadeMem => (None, Some(forgetting.fademem.epsilon), None),
        SimPolicy::None => (None, None, None),
    };
    let gap_from_day = daily.iter().map(|d| d.2).max().unwrap_or(0);
    Ok(SimulateReport {
        benchmark: run.benchmark.name(),
        policy: run.policy.as_str(),
        parameters: Parameters {
            model: embedder.model_id().to_string(),
            replay_k: REPLAY_K,
            gap_days: run.gap_days,
            ks,
            theta,
            epsilon,
            mode,
            samples: run.benchmark.samples(),
            lang: match &run.benchmark {
                Benchmark::MemoryBank { lang, .. } => Some(lang.as_str()),
                Benchmark::Locomo { .. } | Benchmark::LongMemEval { .. } => None,
            },
            users: users.len(),
        },
        storage,
        no_forgetting_active: end.map_or(0, |d| d.no_forgetting_active),
        quality,
        reminiscence,
        questions: Questions { asked: questions, scored: questions, main_metric, note },
        breakdown,
        users: summaries,
        timeline,
        gap_from_day,
        critical: critical_report,
    })
}

fn active(engine: &Engine, scope: &Scope) -> Result<u64, EvalError> {
    Ok(engine.store().counts(scope).map_err(|e| EvalError::Engine(e.into()))?.active)
}

fn stored(counts: &StatusCounts) -> u64 {
    counts.active + counts.archived + counts.superseded + counts.erased
}

/// Sums the users' daily counts by day index; an ended user keeps its last numbers.
fn timeline(daily: &[(Vec<StatusCounts>, Vec<StatusCounts>, usize)]) -> Vec<TimelineDay> {
    let days = daily.iter().map(|d| d.0.len()).max().unwrap_or(0);
    (0..days)
        .map(|day| {
            let mut out = TimelineDay {
                day,
                active: 0,
                archived: 0,
                superseded: 0,
                stored: 0,
                no_forgetting_active: 0,
                conversing: 0,
                critical_kept: None,
            };
            for (policy, none, span) in daily {
                let at = |list: &Vec<StatusCounts>| {
                    list.get(day.min(list.len().saturating_sub(1))).copied().unwrap_or_default()
                };
                let counts = at(policy);
                out.active += counts.active;
                out.archived += counts.archived;
                out.superseded += counts.superseded;
                out.stored += stored(&counts);
                out.no_forgetting_active += at(none).active;
                out.conversing += usize::from(day < *span);
            }
            out
        })
        .collect()
}

/// Embeds every document once, in large batches, before the replays ask for them one by one.
fn warm(embedder: &SimEmbedder, users: &[UserPlan], progress: Progress<'_>) -> Result<(), EvalError> {
    let texts: Vec<String> = users.iter().flat_map(|u| u.turns.iter().map(|t| t.body.content())).collect();
    progress("embedding", 0, texts.len());
    for (i, batch) in texts.chunks(WARM_BATCH).enumerate() {
        let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
        embedder.embed(&refs).map_err(|e| EvalError::Engine(e.into()))?;
        progress("embedding", (i * WARM_BATCH + batch.len()).min(texts.len()), texts.len());
    }
    Ok(())
}

#[derive(Debug, Clone, Copy)]
enum Baseline {
    Fifo,
    Lru,
}

/// What every replay of one user shares.
struct Sim<'a> {
    embedder: &'a Arc<dyn Embedder>,
    scope: &'a Scope,
    gap_days: u32,
    meter: &'a Meter<'a>,
    /// Import keys of the user's turns labelled critical (empty without labels).
    critical: &'a HashSet<&'a str>,
}

impl Sim<'_> {
    /// Lives the user's days into a fresh store: recall then store each turn; maintenance at
    /// each day's end when `maintain`. Returns the engine, its store, each day's counts and
    /// each day's number of critical turns an active memory holds (empty without labels).
    #[allow(clippy::type_complexity)]
    fn replay(
        &self,
        user: &UserPlan,
        config: &EngineConfig,
        maintain: bool,
        path: &Path,
    ) -> Result<(Engine, Arc<SqliteStore>, Vec<StatusCounts>, Vec<usize>), EvalError> {
        let store = Arc::new(SqliteStore::open(path).map_err(|e| EvalError::Engine(e.into()))?);
        let clock = Arc::new(ManualClock::new(user.turns.first().map(|t| t.at).unwrap_or_default()));
        let engine = Engine::new(store.clone(), self.embedder.clone(), clock.clone(), config.clone())?;
        let last = user.last_day() + Duration::days(i64::from(self.gap_days));
        let mut next = 0;
        let mut daily = Vec::with_capacity(user.span() + self.gap_days as usize);
        let mut held = Vec::new();
        let mut day = user.first_day();
        while day <= last {
            while let Some(turn) = user.turns.get(next).filter(|t| t.at.date_naive() <= day) {
                clock.set(turn.at);
                if next > 0 {
                    let mut recall = RecallRequest::new(self.scope.clone(), turn.query.clone(), REPLAY_K);
                    recall.now = Some(turn.at);
                    engine.recall(recall)?;
                }
                self.store_turn(&engine, turn)?;
                self.meter.tick();
                next += 1;
            }
            if maintain {
                let end = day.and_hms_opt(23, 59, 59).unwrap_or_default().and_utc();
                clock.set(end);
                engine.maintain(MaintainRequest { scope: self.scope.clone(), now: Some(end), dry_run: false })?;
            }
            daily.push(store.counts(self.scope).map_err(|e| EvalError::Engine(e.into()))?);
            if !self.critical.is_empty() {
                let holding = holders(store.as_ref(), self.scope, false)?;
                held.push(self.critical.iter().filter(|k| holding.contains_key(**k)).count());
            }
            day =
                day.succ_opt().ok_or_else(|| EvalError::data("simulation", "ran past the last representable date"))?;
        }
        Ok((engine, store, daily, held))
    }

    fn store_turn(&self, engine: &Engine, turn: &SimTurn) -> Result<(), EvalError> {
        match &turn.body {
            Body::Turn { user_text, assistant_text } => engine.remember_turn(RememberTurn {
                scope: self.scope.clone(),
                user_text: user_text.clone(),
                assistant_text: assistant_text.clone(),
                occurred_at: Some(turn.at),
                metadata: turn.metadata.clone(),
                importance: None,
                clock_from: membank_engine::core::ClockFrom::Event,
            })?,
            Body::Note { text } => engine.remember_note(RememberNote {
                scope: self.scope.clone(),
                text: text.clone(),
                source: Source::User,
                occurred_at: Some(turn.at),
                metadata: turn.metadata.clone(),
                importance: None,
                clock_from: membank_engine::core::ClockFrom::Event,
            })?,
        };
        Ok(())
    }

    /// A copy of the no-forgetting store that keeps `keep` memories active by the
    /// baseline's order and archives the rest in one transaction.
    fn baseline(
        &self,
        source: &SqliteStore,
        path: &Path,
        keep: usize,
        baseline: Baseline,
        at: Timestamp,
        config: &EngineConfig,
    ) -> Result<Engine, EvalError> {
        let storage = |e: membank_store::StoreError| EvalError::Engine(e.into());
        source.backup(path).map_err(storage)?;
        let store = Arc::new(SqliteStore::open(path).map_err(storage)?);
        let mut active = store
            .list(
                self.scope,
                &ListQuery { statuses: vec![Status::Active], limit: ALL, oldest_first: true, ..Default::default() },
            )
            .map_err(storage)?;
        match baseline {
            Baseline::Fifo => active.sort_by_key(|m| std::cmp::Reverse((m.occurred_at, m.recorded_at, m.id))),
            Baseline::Lru => {
                active.sort_by_key(|m| std::cmp::Reverse((m.forgetting.last_recalled_at, m.occurred_at, m.id)))
            }
        }
        let name = match baseline {
            Baseline::Fifo => "fifo",
            Baseline::Lru => "lru",
        };
        if active.len() > keep {
            let archive: Vec<(MemoryId, serde_json::Value)> = active[keep..]
                .iter()
                .map(|m| (m.id, json!({ "by": "simulate", "baseline": name, "keep": keep })))
                .collect();
            let summary = json!({ "baseline": name, "kept": keep, "archived": archive.len() });
            store
                .apply_maintenance(
                    self.scope,
                    MaintenancePlan {
                        now: at,
                        updates: Vec::new(),
                        archive,
                        insert: Vec::new(),
                        supersede: Vec::new(),
                        summary,
                        maintained_through: None,
                    },
                )
                .map_err(storage)?;
        }
        Ok(Engine::new(store, self.embedder.clone(), Arc::new(ManualClock::new(at)), config.clone())?)
    }

    /// Asks the user's questions over active memories, scoring on the memories that hold
    /// the evidence now (see the module docs). `customise` adjusts each inspection request
    /// before it is sent (the plain arms pass one that changes nothing).
    #[allow(clippy::too_many_arguments)]
    fn ask(
        &self,
        engine: &Engine,
        user: &UserPlan,
        at: Timestamp,
        kinds: &[Kind],
        ks: &[usize],
        main_k: usize,
        depth: usize,
        scoring: Scoring,
        customise: &dyn Fn(&mut RecallRequest),
    ) -> Result<Vec<Outcome>, EvalError> {
        if user.questions.is_empty() {
            return Ok(Vec::new());
        }
        // A recall that may reminisce can return archived memories: their evidence counts.
        let mut probe = RecallRequest::new(self.scope.clone(), String::new(), 1);
        customise(&mut probe);
        let archived_count = probe.reminisce != Reminisce::Never;
        let holders = holders(engine.store().as_ref(), self.scope, archived_count)?;
        let mut out = Vec::with_capacity(user.questions.len());
        for question in &user.questions {
            let mut request = RecallRequest::new(self.scope.clone(), question.text.clone(), depth);
            request.now = Some(at);
            request.kinds = kinds.to_vec();
            request.strengthen = Some(false);
            customise(&mut request);
            let response = engine.recall(request)?;
            let ranked: Vec<String> = response.results.iter().map(|hit| hit.memory.id.to_string()).collect();
            // Each evidence key stands for the memory holding it now; a lost key for
            // something no recall can return.
            let gold: Vec<String> = question
                .evidence
                .iter()
                .map(|key| holders.get(key).map_or_else(|| format!("lost:{key}"), ToString::to_string))
                .collect();
            let held = question.evidence.iter().filter(|key| holders.contains_key(*key)).count();
            let values = match scoring {
                Scoring::MemoryBank => memorybank_values(&ranked, &gold, ks),
                Scoring::Locomo => locomo_values(&ranked, &gold, ks),
                Scoring::LongMemEval => longmemeval_values(&ranked, &gold, ks),
            };
            let gold_ids: HashSet<&String> = gold.iter().collect();
            let from_archive = response
                .results
                .iter()
                .take(main_k)
                .zip(&ranked)
                .any(|(hit, id)| hit.reminisced && gold_ids.contains(id));
            out.push(Outcome {
                group: question.group.clone(),
                values,
                evidence: question.evidence.len(),
                held,
                consulted: response.reminiscence.consulted,
                from_archive,
            });
            self.meter.tick();
        }
        Ok(out)
    }
}

/// hit@k, all@k and the reciprocal rank, as `membank eval memorybank` scores them.
fn memorybank_values(ranked: &[String], gold: &[String], ks: &[usize]) -> BTreeMap<String, f64> {
    let gold: HashSet<String> = gold.iter().cloned().collect();
    let mut values = BTreeMap::new();
    for &k in ks {
        values.insert(format!("hit@{k}"), f64::from(u8::from(hit_at(ranked, &gold, k))));
        values.insert(format!("all@{k}"), f64::from(u8::from(all_at(ranked, &gold, k))));
    }
    values.insert("mrr".into(), reciprocal_rank(ranked, &gold));
    values
}

/// recall@k as `membank eval locomo` scores it, counted per evidence item: two items held
/// by one merged memory are two items found when it is retrieved (the set-based
/// `metrics::recall_at` would count them once).
fn locomo_values(ranked: &[String], gold: &[String], ks: &[usize]) -> BTreeMap<String, f64> {
    ks.iter()
        .map(|&k| {
            let value = if gold.is_empty() {
                1.0
            } else {
                let top: HashSet<&String> = ranked.iter().take(k).collect();
                gold.iter().filter(|g| top.contains(g)).count() as f64 / gold.len() as f64
            };
            (format!("recall@{k}"), value)
        })
        .collect()
}

/// LoCoMo's recall@k per evidence item, and LongMemEval's own recall_any@k (some gold turn in
/// the top k) and recall_all@k (every one), as `membank eval longmemeval` scores turns.
fn longmemeval_values(ranked: &[String], gold: &[String], ks: &[usize]) -> BTreeMap<String, f64> {
    let mut values = locomo_values(ranked, gold, ks);
    for &k in ks {
        let top: HashSet<&String> = ranked.iter().take(k).collect();
        let any = gold.iter().any(|g| top.contains(g));
        let all = gold.iter().all(|g| top.contains(g));
        values.insert(format!("recall_any@{k}"), f64::from(u8::from(any)));
        values.insert(format!("recall_all@{k}"), f64::from(u8::from(all)));
    }
    values
}

/// Import key → the active memory holding it now (itself, or the end of its
/// `superseded_by` chain); keys whose chain ends in an archived memory are absent.
fn holders(store: &dyn Store, scope: &Scope, archived_count: bool) -> Result<HashMap<String, MemoryId>, EvalError> {
    let all = store
        .list(scope, &ListQuery { statuses: Vec::new(), limit: ALL, oldest_first: true, ..Default::default() })
        .map_err(|e| EvalError::Engine(e.into()))?;
    let by_id: HashMap<MemoryId, &Memory> = all.iter().map(|m| (m.id, m)).collect();
    let mut out = HashMap::new();
    for memory in &all {
        let Some(key) = memory.metadata.get(IMPORT_KEY) else { continue };
        let mut current = memory;
        // A chain is at most as long as the user's memories; the bound guards against a cycle.
        for _ in 0..=all.len() {
            match (current.status, current.superseded_by.and_then(|id| by_id.get(&id))) {
                (Status::Active, _) => {
                    out.insert(key.clone(), current.id);
                    break;
                }
                (Status::Archived, _) if archived_count => {
                    out.insert(key.clone(), current.id);
                    break;
                }
                (Status::Superseded, Some(next)) => current = next,
                _ => break,
            }
        }
    }
    Ok(out)
}

/// MemoryBank users with their turns and, with gold, their scored questions.
fn memorybank_plans(
    bank: &Path,
    questions_path: &Path,
    gold: Option<&Path>,
    lang: Lang,
    chosen: Option<&[usize]>,
) -> Result<Vec<UserPlan>, EvalError> {
    let bytes = read(bank)?;
    let set = memorybank::parse(&bytes).map_err(|e| EvalError::data(bank.display(), e.reason))?;
    let chosen_keys: Option<HashSet<String>> = match chosen {
        None => None,
        Some(positions) => {
            let order = memorybank_eval::key_order(&bytes).map_err(|e| EvalError::data(bank.display(), e))?;
            if let Some(&bad) = positions.iter().find(|&&p| p >= order.len()) {
                let reason = format!("user {bad} is past the bank's last user ({} users, 0-based)", order.len());
                return Err(EvalError::Engine(EngineError::Invalid(InvalidInput::new("samples", reason))));
            }
            Some(positions.iter().map(|&p| order[p].clone()).collect())
        }
    };
    let mut plans = Vec::new();
    let mut raw_keys: HashMap<UserId, String> = HashMap::new();
    for user in set.users {
        let raw = user
            .records
            .first()
            .and_then(|r| r.metadata.get(memorybank::SOURCE_USER_KEY))
            .cloned()
            .unwrap_or_else(|| user.user.to_string());
        raw_keys.insert(user.user.clone(), raw.clone());
        if chosen_keys.as_ref().is_some_and(|keys| !keys.contains(&raw)) {
            continue;
        }
        // Only the conversation is lived; summaries and profile records of the file are not turns.
        let mut turns: Vec<SimTurn> = user
            .records
            .into_iter()
            .filter(|r| r.kind == Kind::Turn)
            .map(|r| {
                let mut metadata = r.metadata;
                metadata.insert(IMPORT_KEY.into(), r.key);
                let user_text = r.user_text.unwrap_or_default();
                SimTurn {
                    at: r.occurred_at,
                    query: user_text.clone(),
                    body: Body::Turn { user_text, assistant_text: r.assistant_text },
                    metadata,
                }
            })
            .collect();
        if turns.is_empty() {
            continue;
        }
        turns.sort_by_key(|t| t.at);
        let last = turns.last().map(|t| t.at.date_naive()).unwrap_or_default();
        plans.push(UserPlan {
            user: user.user,
            label: raw,
            turns,
            questions: Vec::new(),
            ask_at: turn_time(last + Duration::days(1), 0),
        });
    }
    let Some(gold) = gold else { return Ok(plans) };

    // Questions by qid and the gold lines, read exactly as `membank eval memorybank` reads them.
    let by_qid: HashMap<String, (UserId, String)> = memorybank_eval::questions(bank, questions_path, lang, &raw_keys)?
        .into_iter()
        .map(|q| (q.qid, (q.user, q.text)))
        .collect();
    let known: HashMap<&UserId, HashSet<&str>> = plans
        .iter()
        .map(|p| (&p.user, p.turns.iter().filter_map(|t| t.metadata.get(IMPORT_KEY).map(String::as_str)).collect()))
        .collect();
    let mut asked: BTreeMap<UserId, Vec<SimQuestion>> = BTreeMap::new();
    for (line, record) in memorybank_eval::read_gold(gold)? {
        let at = format!("{}:{line}", gold.display());
        let (user, question) = by_qid.get(record.qid.as_str()).ok_or_else(|| {
            EvalError::data(
                &at,
                format!(
                    "qid {:?} names no question in {} (is the gold file for this bank and language?)",
                    record.qid,
                    questions_path.display()
                ),
            )
        })?;
        if record.user.trim() != user.as_str() {
            return Err(EvalError::data(
                &at,
                format!(
                    "qid {:?} belongs to user {:?}, the gold line says {:?}",
                    record.qid,
                    user.as_str(),
                    record.user
                ),
            ));
        }
        if !known.contains_key(user) {
            // A user the run does not replay (`--samples`): their questions are not asked.
            continue;
        }
        let mut evidence: Vec<String> = Vec::new();
        for turn in &record.evidence {
            let key = format!("memorybank:{}:{}", turn.date.trim(), turn.turn);
            if !known.get(user).is_some_and(|keys| keys.contains(key.as_str())) {
                return Err(EvalError::data(
                    &at,
                    format!(
                        "evidence {}#{} names no turn of {:?} in {}",
                        turn.date.trim(),
                        turn.turn,
                        user.as_str(),
                        bank.display()
                    ),
                ));
            }
            if !evidence.contains(&key) {
                evidence.push(key);
            }
        }
        // As in `membank eval`: a question without evidence is not scored, so not asked.
        if evidence.is_empty() {
            continue;
        }
        asked.entry(user.clone()).or_default().push(SimQuestion {
            text: question.clone(),
            group: record.kind.unwrap_or_else(|| "unknown".into()),
            evidence,
        });
    }
    for plan in &mut plans {
        plan.questions = asked.remove(&plan.user).unwrap_or_default();
    }
    Ok(plans)
}

/// LoCoMo conversations (the selected ones) with their turns and questions.
fn locomo_plans(data: &Path, samples: Option<&[usize]>) -> Result<Vec<UserPlan>, EvalError> {
    let bytes = read(data)?;
    let root: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| EvalError::data(format!("{}:{}", data.display(), e.line()), format!("not valid JSON: {e}")))?;
    let all = root.as_array().ok_or_else(|| EvalError::data(data.display(), "expected a list of samples"))?;
    let chosen: Vec<usize> = match samples {
        Some(list) => {
            if let Some(bad) = list.iter().find(|&&i| i >= all.len()) {
                let reason = format!(
                    "there is no conversation {bad}: the file holds {} (0–{})",
                    all.len(),
                    all.len().saturating_sub(1)
                );
                return Err(EvalError::Engine(EngineError::Invalid(InvalidInput::new("samples", reason))));
            }
            list.to_vec()
        }
        None => (0..all.len()).collect(),
    };
    let mut plans = Vec::new();
    for i in chosen {
        let sample = &all[i];
        let parsed = parse_sample(sample, &format!("$[{i}]")).map_err(|e| EvalError::data(data.display(), e.reason))?;
        let label = parsed.user.to_string();
        let known: HashSet<String> = parsed.records.iter().filter_map(|r| r.metadata.get("dia_id").cloned()).collect();
        let mut turns: Vec<SimTurn> = parsed
            .records
            .into_iter()
            .map(|r| {
                let text = r.content();
                let mut metadata = r.metadata;
                metadata.insert(IMPORT_KEY.into(), r.key);
                SimTurn { at: r.occurred_at, query: text.clone(), body: Body::Note { text }, metadata }
            })
            .collect();
        if turns.is_empty() {
            continue;
        }
        turns.sort_by_key(|t| t.at);
        let ask_at = turns.iter().map(|t| t.at).max().unwrap_or_default() + Duration::days(1);
        let qa = sample.get("qa").and_then(|q| q.as_array()).map(Vec::as_slice).unwrap_or(&[]);
        let mut questions = Vec::with_capacity(qa.len());
        for (index, item) in qa.iter().enumerate() {
            let at = format!("{} sample {label} qa[{index}]", data.display());
            let text = item
                .get("question")
                .and_then(|q| q.as_str())
                .ok_or_else(|| EvalError::data(&at, "missing \"question\""))?;
            let category = item
                .get("category")
                .and_then(|c| c.as_u64())
                .filter(|c| (1..=5).contains(c))
                .ok_or_else(|| EvalError::data(&at, "\"category\" must be 1–5"))?;
            let raw: Vec<String> = item
                .get("evidence")
                .and_then(|e| e.as_array())
                .map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect())
                .unwrap_or_default();
            let mut evidence: Vec<String> = Vec::new();
            for id in normalise_evidence(&raw).into_iter().filter(|id| known.contains(id)) {
                let key = format!("locomo:{id}");
                if !evidence.contains(&key) {
                    evidence.push(key);
                }
            }
            questions.push(SimQuestion { text: text.to_string(), group: category.to_string(), evidence });
        }
        plans.push(UserPlan { user: parsed.user, label, turns, questions, ask_at });
    }
    Ok(plans)
}

/// LongMemEval questions (the selected ones), each its own user: the person's messages of
/// its haystack as turns and, unless the protocol skips it, the question itself.
fn longmemeval_plans(data: &Path, samples: Option<&[usize]>) -> Result<Vec<UserPlan>, EvalError> {
    let bytes = read(data)?;
    let root: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| EvalError::data(format!("{}:{}", data.display(), e.line()), format!("not valid JSON: {e}")))?;
    drop(bytes);
    let all = root.as_array().ok_or_else(|| EvalError::data(data.display(), "expected a list of questions"))?;
    let chosen: Vec<usize> = match samples {
        Some(list) => {
            if let Some(bad) = list.iter().find(|&&i| i >= all.len()) {
                let reason = format!(
                    "there is no question {bad}: the file holds {} (0–{})",
                    all.len(),
                    all.len().saturating_sub(1)
                );
                return Err(EvalError::Engine(EngineError::Invalid(InvalidInput::new("samples", reason))));
            }
            list.to_vec()
        }
        None => (0..all.len()).collect(),
    };
    let mut plans = Vec::with_capacity(chosen.len());
    for i in chosen {
        let record = &all[i];
        let at = format!("{} $[{i}]", data.display());
        let field = |name: &str| {
            record
                .get(name)
                .and_then(|v| v.as_str())
                .ok_or_else(|| EvalError::data(&at, format!("missing string field {name:?}")))
        };
        let question_id = field("question_id")?.to_string();
        let question_type = field("question_type")?.to_string();
        let question = field("question")?.to_string();
        let date = field("question_date")?;
        let asked_at = longmemeval_import::parse_time(date).ok_or_else(|| {
            EvalError::data(&at, format!("question_date {date:?} is not a time such as \"2023/05/30 (Tue) 23:40\""))
        })?;
        let user = longmemeval_import::parse_question(record, &format!("$[{i}]"))
            .map_err(|e| EvalError::data(data.display(), e.reason))?;
        // The protocol's gold: a message carrying `has_answer` in an evidence session.
        let gold: Vec<String> = user
            .records
            .iter()
            .filter(|r| {
                r.metadata.get("has_answer").is_some_and(|h| h == "true")
                    && r.metadata.get("session_id").is_some_and(|s| s.contains("answer"))
            })
            .map(|r| r.key.clone())
            .collect();
        let mut turns: Vec<SimTurn> = user
            .records
            .into_iter()
            .map(|r| {
                let mut metadata = r.metadata;
                metadata.insert(IMPORT_KEY.into(), r.key);
                let user_text = r.user_text.unwrap_or_default();
                SimTurn {
                    at: r.occurred_at,
                    query: user_text.clone(),
                    body: Body::Turn { user_text, assistant_text: r.assistant_text },
                    metadata,
                }
            })
            .collect();
        if turns.is_empty() {
            continue;
        }
        turns.sort_by_key(|t| t.at);
        let last = turns.last().map(|t| t.at.date_naive()).unwrap_or_default();
        let day_after = (last + Duration::days(1)).and_hms_opt(0, 0, 0).unwrap_or_default().and_utc();
        let questions = if question_id.ends_with("_abs") || gold.is_empty() {
            Vec::new()
        } else {
            vec![SimQuestion { text: question, group: question_type, evidence: gold }]
        };
        plans.push(UserPlan { user: user.user, label: question_id, turns, questions, ask_at: asked_at.max(day_after) });
    }
    Ok(plans)
}

/// Draws the report: active memories per day (policy run against no forgetting, the gap
/// shaded) on the left, the main metric of each way of keeping on the right; writes an SVG
/// file, creating its folder.
pub fn plot(report: &SimulateReport, path: &Path) -> Result<(), EvalError> {
    use plotters::prelude::*;
    use plotters::style::text_anchor::{HPos, Pos, VPos};

    let mut svg = String::new();
    let draw_error = |e: &dyn std::fmt::Display| EvalError::data(path.display(), format!("cannot draw the plot: {e}"));
    {
        let root = SVGBackend::with_string(&mut svg, (1200, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw_error(&e))?;
        let title = format!(
            "membank simulate {} · policy {} · gap {} days",
            report.benchmark, report.policy, report.parameters.gap_days
        );
        let root = root.titled(&title, ("sans-serif", 22)).map_err(|e| draw_error(&e))?;
        let (left, right) = root.split_horizontally(720);

        let days = report.timeline.len().max(1);
        let top = report.timeline.iter().map(|d| d.no_forgetting_active.max(d.active)).max().unwrap_or(1).max(1) as f64
            * 1.08;
        let mut chart = ChartBuilder::on(&left)
            .caption("active memories at each day's end", ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .right_y_label_area_size(60)
            .build_cartesian_2d(1f64..(days as f64).max(2.0), 0f64..top)
            .map_err(|e| draw_error(&e))?
            .set_secondary_coord(1f64..(days as f64).max(2.0), 0f64..1.08);
        chart
            .configure_mesh()
            .light_line_style(RGBColor(245, 245, 245))
            .x_desc("day (1 = first conversation day)")
            .y_desc("memories")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()
            .map_err(|e| draw_error(&e))?;
        if report.parameters.gap_days > 0 && report.gap_from_day < days {
            // Translucent, so the grid drawn before it still shows through.
            let shade = RGBColor(150, 150, 150).mix(0.25);
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(report.gap_from_day as f64, 0.0), (days as f64, top)],
                    shade.filled(),
                )))
                .map_err(|e| draw_error(&e))?
                .label(format!("gap ({} days)", report.parameters.gap_days))
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 18, y + 5)], shade.filled()));
        }
        let series = [
            (
                "no forgetting",
                RED,
                report.timeline.iter().map(|d| (d.day as f64 + 1.0, d.no_forgetting_active as f64)).collect::<Vec<_>>(),
            ),
            (
                report.policy,
                BLUE,
                report.timeline.iter().map(|d| (d.day as f64 + 1.0, d.active as f64)).collect::<Vec<_>>(),
            ),
        ];
        for (name, color, points) in series {
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(|e| draw_error(&e))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
        }
        // With labels: the share of critical turns still active, on the right-hand scale.
        let critical: Vec<(f64, f64)> =
            report.timeline.iter().filter_map(|d| d.critical_kept.map(|k| (d.day as f64 + 1.0, k))).collect();
        if !critical.is_empty() {
            let green = RGBColor(0, 140, 70);
            chart
                .configure_secondary_axes()
                .y_desc("critical turns still active")
                .y_label_formatter(&|y| format!("{:.0}%", y * 100.0))
                .draw()
                .map_err(|e| draw_error(&e))?;
            chart
                .draw_secondary_series(LineSeries::new(critical, green.stroke_width(2)))
                .map_err(|e| draw_error(&e))?
                .label(format!("critical kept ({}, right scale)", report.policy))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], green.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| draw_error(&e))?;

        let metric = &report.questions.main_metric;
        let names = [report.policy, "+ reminiscence", "no forgetting", "fifo", "lru"];
        let maps = [
            &report.quality.forgetting,
            &report.quality.forgetting_reminiscence,
            &report.quality.no_forgetting,
            &report.quality.fifo,
            &report.quality.lru,
        ];
        let values: Vec<Option<f64>> = maps.iter().map(|m| m.get(metric).copied()).collect();
        let caption = match &report.questions.note {
            Some(_) => format!("{metric}: nothing scored"),
            None => format!("{metric} at equal storage"),
        };
        let mut bars = ChartBuilder::on(&right)
            .caption(caption, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d((0..names.len() - 1).into_segmented(), 0f64..1.1)
            .map_err(|e| draw_error(&e))?;
        bars.configure_mesh()
            .disable_x_mesh()
            .light_line_style(RGBColor(245, 245, 245))
            .y_desc(metric.as_str())
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
                    names.get(*i).map_or_else(String::new, |n| n.to_string())
                }
                SegmentValue::Last => String::new(),
            })
            .draw()
            .map_err(|e| draw_error(&e))?;
        let colors = [BLUE, RGBColor(90, 60, 200), RED, RGBColor(120, 120, 120), RGBColor(0, 150, 80)];
        bars.draw_series(values.iter().enumerate().filter_map(|(i, v)| {
            v.map(|v| {
                let mut bar = Rectangle::new(
                    [(SegmentValue::Exact(i), 0.0), (SegmentValue::Exact(i + 1), v)],
                    colors[i].filled(),
                );
                bar.set_margin(0, 0, 12, 12);
                bar
            })
        }))
        .map_err(|e| draw_error(&e))?;
        bars.draw_series(values.iter().enumerate().map(|(i, v)| {
            let label = v.map_or_else(|| "-".to_string(), |v| format!("{v:.3}"));
            let style = TextStyle::from(("sans-serif", 14).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
            Text::new(label, (SegmentValue::CenterOf(i), v.unwrap_or(0.0) + 0.01), style)
        }))
        .map_err(|e| draw_error(&e))?;
        root.present().map_err(|e| draw_error(&e))?;
    }
    let write_error =
        |source: std::io::Error| EvalError::data(path.display(), format!("cannot write the plot: {source}"));
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(write_error)?;
    }
    std::fs::write(path, svg).map_err(write_error)
}

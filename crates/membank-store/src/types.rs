//! Plain data passed to and returned by [`crate::Store`].

use chrono::NaiveDate;
use membank_core::forgetting::Assessment;
use membank_core::{Kind, Memory, MemoryId, Status, Timestamp};

/// A registered user and its settings.
#[derive(Debug, Clone, PartialEq)]
pub struct UserRecord {
    /// The user id (trimmed).
    pub user: String,
    /// The IANA time zone its days are counted in.
    pub time_zone: String,
    /// When it was first written to.
    pub created_at: Timestamp,
}

/// The model that made a vector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingModel {
    /// Model id, e.g. `sentence-transformers/all-MiniLM-L6-v2`.
    pub id: String,
    /// Vector length.
    pub dim: usize,
}

/// The store's model and how its active memories are written ([`crate::Store::script_census`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScriptCensus {
    /// The store's embedding model, if it holds a vector.
    pub model: Option<EmbeddingModel>,
    /// Active memories.
    pub active: u64,
    /// Active memories written mostly in scripts other than Latin
    /// ([`membank_core::script::Writing::Other`]; a turn counts both sides).
    pub other_script: u64,
}

impl ScriptCensus {
    /// Counts one active memory by its texts (a turn's two sides, or the content).
    pub fn count<'a>(&mut self, texts: impl IntoIterator<Item = &'a str>) {
        self.active += 1;
        if membank_core::script::writing_of_all(texts) == membank_core::script::Writing::Other {
            self.other_script += 1;
        }
    }

    /// Counts one active memory from its stored columns: a turn by its two sides (without
    /// the `User:`/`Assistant:` labels of its content), anything else by its content.
    pub fn count_memory(&mut self, content: Option<&str>, user_text: Option<&str>, assistant_text: Option<&str>) {
        if user_text.is_some() || assistant_text.is_some() {
            self.count(user_text.into_iter().chain(assistant_text));
        } else {
            self.count(content);
        }
    }
}

/// A vector and the model that made it.
pub type ModelVector = (EmbeddingModel, Vec<f32>);

/// A memory to store, with its vector.
#[derive(Debug, Clone)]
pub struct NewMemory {
    /// The memory (its scope says whose it is; its status should be `active`).
    pub memory: Memory,
    /// Its vector and the model that made it; `None` stores it without dense search.
    pub embedding: Option<(EmbeddingModel, Vec<f32>)>,
}

/// Restricts a search.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchFilter {
    /// Only these kinds (empty: all).
    pub kinds: Vec<Kind>,
    /// Only memories whose day is on or after this.
    pub day_from: Option<NaiveDate>,
    /// Only memories whose day is on or before this.
    pub day_to: Option<NaiveDate>,
    /// Include archived and superseded memories (audits). Erased ones are never returned.
    pub include_archived: bool,
}

/// A memory's neighbours on its day (see [`crate::Store::adjacent`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Adjacent {
    /// The memory asked about.
    pub id: MemoryId,
    /// The one just before it on the same day, if any.
    pub before: Option<MemoryId>,
    /// The one just after it on the same day, if any.
    pub after: Option<MemoryId>,
}

/// A search result: a memory id and its score in that search.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The memory.
    pub id: MemoryId,
    /// Cosine similarity (dense) or BM25 score (lexical).
    pub score: f64,
    /// The memory's speaker (its [`membank_core::SPEAKER_KEY`] metadata), if it has one:
    /// shared with the search cache, so a hit costs no allocation for it.
    pub speaker: Option<std::sync::Arc<str>>,
}

/// Filters and paging of a list.
#[derive(Debug, Clone, PartialEq)]
pub struct ListQuery {
    /// Only these statuses (empty: all but erased).
    pub statuses: Vec<Status>,
    /// Only these kinds (empty: all).
    pub kinds: Vec<Kind>,
    /// Only memories whose day is on or after this.
    pub day_from: Option<NaiveDate>,
    /// Only memories whose day is on or before this.
    pub day_to: Option<NaiveDate>,
    /// Only pinned ones.
    pub pinned_only: bool,
    /// Page size.
    pub limit: usize,
    /// Memories to skip.
    pub offset: usize,
    /// Oldest first instead of newest first.
    pub oldest_first: bool,
    /// Leave the texts out (`content`, `user_text` and `assistant_text` come back `None`):
    /// for a scan that needs only the memories' state, such as a maintenance cycle over a
    /// user of many long memories, which would otherwise hold every text at once.
    pub without_text: bool,
}

/// The texts of a memory as one select list names them; what a list `without_text`
/// selects as text `NULL`s instead (the same SQL for both backends).
pub(crate) const TEXT_COLUMNS: &str = "m.content, m.user_text, m.assistant_text";

/// `columns` with the text columns selected as `NULL` when `without_text`.
pub(crate) fn select_columns(columns: &'static str, without_text: bool) -> std::borrow::Cow<'static, str> {
    if without_text {
        debug_assert!(columns.contains(TEXT_COLUMNS), "the select list names the texts as TEXT_COLUMNS");
        columns.replace(TEXT_COLUMNS, "CAST(NULL AS TEXT), CAST(NULL AS TEXT), CAST(NULL AS TEXT)").into()
    } else {
        columns.into()
    }
}

impl Default for ListQuery {
    fn default() -> Self {
        Self {
            statuses: Vec::new(),
            kinds: Vec::new(),
            day_from: None,
            day_to: None,
            pinned_only: false,
            limit: 100,
            offset: 0,
            oldest_first: false,
            without_text: false,
        }
    }
}

/// How many memories are in each status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatusCounts {
    /// Recallable.
    pub active: u64,
    /// Forgotten, restorable.
    pub archived: u64,
    /// Replaced by a fusion.
    pub superseded: u64,
    /// Content erased.
    pub erased: u64,
}

/// One recall to log: which memories were returned, in rank order, with their scores.
#[derive(Debug, Clone)]
pub struct RecallRecord {
    /// Identifies the recall in the log.
    pub query_id: String,
    /// When it happened.
    pub now: Timestamp,
    /// The returned memories, best first, with the fused score each had.
    pub results: Vec<(MemoryId, f64)>,
    /// The query's vector: kept among the user's recent queries (FadeMem's relevance is
    /// measured against them), at most `recent_queries` of the policy per user.
    pub query_vector: Option<Vec<f32>>,
    /// Whether archived and superseded memories may be among the results (an audit
    /// recall). Results that stopped being eligible since they were found (archived or
    /// erased while the recall ran) are dropped, never logged or strengthened.
    pub include_archived: bool,
    /// The results the recall found in the archive (reminiscence): eligible while still
    /// archived (never superseded or erased ones). A strengthening recall brings each back
    /// to active with Ebbinghaus's savings ([`ForgettingPolicy::reminisce`]) and logs it
    /// as `reminisced` instead of `strengthened`; one that does not strengthen only logs
    /// it as `recalled`. Ignored in an audit recall (`include_archived`), which never
    /// restores or strengthens anything archived.
    ///
    /// [`ForgettingPolicy::reminisce`]: membank_core::ForgettingPolicy::reminisce
    pub reminisced: Vec<MemoryId>,
}

/// Filters and paging of the event log.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventQuery {
    /// Only events about this memory.
    pub memory_id: Option<MemoryId>,
    /// Only events after this log position.
    pub after_seq: Option<i64>,
    /// Page size (0 means the default of 1,000).
    pub limit: usize,
}

/// What a sweep examined and did.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepReport {
    /// When it ran.
    pub now: Timestamp,
    /// True when nothing was changed.
    pub dry_run: bool,
    /// Active memories examined.
    pub examined: usize,
    /// Memories archived (or that would be, on a dry run), with the numbers.
    pub archived: Vec<Assessment>,
    /// Memories the policy would archive that the per-pass cap kept this time.
    pub deferred: usize,
    /// Examined minus archived.
    pub kept: usize,
}

/// Where a user stands in the maintenance schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaintenanceState {
    /// When the last cycle ran (its `now`), if ever.
    pub maintained_at: Option<Timestamp>,
    /// Turns stored since the last cycle.
    pub new_turns: u64,
    /// Summaries or portraits of this user were erased with a source they drew on and
    /// should be made again from what remains (cleared by a successful summarize run).
    pub resummarize_due: bool,
}

/// The memories a maintenance cycle has not compared yet ([`crate::Store::unmaintained`]).
/// Positions order a user's memories by when they were stored; they mean nothing across
/// users or stores.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unmaintained {
    /// The active memories stored after the last cycle's position, oldest first.
    pub memories: Vec<(MemoryId, i64)>,
    /// The position of the user's newest memory, of any status (0 when there is none).
    pub newest: i64,
}

/// A change of one memory's maintenance-owned numbers. Recall-owned numbers (strength, the
/// recall clock) are never written from a plan: a recall may have happened since it was made.
#[derive(Debug, Clone, PartialEq)]
pub struct StateUpdate {
    /// The memory.
    pub id: MemoryId,
    /// Its new importance.
    pub importance: f64,
    /// Its new layer.
    pub layer: membank_core::Layer,
    /// A new base importance and who set it (`llm`, …), if it changes.
    pub base_importance: Option<(f64, String)>,
    /// Recalls to add (a merge survivor carries its duplicates' recall counts).
    pub add_recalls: u32,
    /// Decayed frequency to add (likewise).
    pub add_frequency: f64,
    /// A new decay-rate factor (the loser of a conflict decays faster).
    pub decay_factor: Option<f64>,
    /// Events to log with it (layer moves, merges, conflict decisions).
    pub events: Vec<(membank_core::EventKind, serde_json::Value)>,
}

impl StateUpdate {
    /// An update that sets importance and layer and nothing else.
    pub fn new(id: MemoryId, importance: f64, layer: membank_core::Layer) -> Self {
        Self {
            id,
            importance,
            layer,
            base_importance: None,
            add_recalls: 0,
            add_frequency: 0.0,
            decay_factor: None,
            events: Vec::new(),
        }
    }
}

/// One memory replaced by another (a near-duplicate by the newest copy, a conflict's loser
/// by its winner, a fusion's sources by the fused memory).
#[derive(Debug, Clone, PartialEq)]
pub struct Supersession {
    /// The memory that stops being active.
    pub old: MemoryId,
    /// The memory that replaces it: an existing id, or the index of a memory in
    /// [`MaintenancePlan::insert`].
    pub by: Replacement,
    /// The numbers and the rule behind it, for its `superseded` event.
    pub data: serde_json::Value,
}

/// What a memory is superseded by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replacement {
    /// A memory that already exists.
    Existing(MemoryId),
    /// The n-th memory of the plan's inserts.
    Inserted(usize),
}

/// Everything one maintenance cycle does to one user, applied in one transaction.
#[derive(Debug, Clone)]
pub struct MaintenancePlan {
    /// The cycle's time.
    pub now: Timestamp,
    /// Importance, layer and merge-survivor updates.
    pub updates: Vec<StateUpdate>,
    /// Memories to archive, each with its `archived` event's data (policy and numbers).
    pub archive: Vec<(MemoryId, serde_json::Value)>,
    /// New memories (fusions, merged statements), each with the data of its event.
    pub insert: Vec<(NewMemory, membank_core::EventKind, serde_json::Value)>,
    /// Memories replaced.
    pub supersede: Vec<Supersession>,
    /// The data of the scope-level `maintained` event.
    pub summary: serde_json::Value,
    /// The position up to which the cycle compared the user's new memories (from
    /// [`Unmaintained`]): later ones stay unmaintained for the next cycle. `None`: all of
    /// them, up to the newest memory when the plan is applied. The recorded position never
    /// moves back.
    pub maintained_through: Option<i64>,
}

/// What applying a plan did. Items whose memory changed status since the plan was made
/// (forgotten, erased or superseded meanwhile) are skipped, never forced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MaintenanceApplied {
    /// Memories archived.
    pub archived: usize,
    /// Memories superseded.
    pub superseded: usize,
    /// Memories inserted.
    pub inserted: usize,
    /// Items skipped because their memory was no longer active.
    pub skipped: usize,
}

/// A caller's `Idempotency-Key` claimed by a write: stored with the memories it makes, in
/// the same transaction, so a retry can never store them twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyClaim {
    /// The key, as the caller sent it.
    pub key: String,
    /// A digest of the request it came with (route, user and body); the same key with a
    /// different request is refused.
    pub request_hash: String,
    /// When it was claimed.
    pub now: Timestamp,
    /// Keys claimed before this are forgotten (purged by the next claim).
    pub expire_before: Timestamp,
}

/// What a key was first used for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyRecord {
    /// The digest of the first request.
    pub request_hash: String,
    /// When it was claimed.
    pub created_at: Timestamp,
    /// The memories that request stored, in order.
    pub memory_ids: Vec<MemoryId>,
    /// The answer given to it (JSON), once recorded; `None` if the server stopped between
    /// storing and answering, or an erasure removed it because it quoted erased text.
    pub response: Option<String>,
}

/// The result of an idempotent insert.
#[derive(Debug, Clone)]
pub enum Insertion {
    /// Stored now, in input order.
    Stored(Vec<Memory>),
    /// The key was already used for the same request: nothing new was stored.
    Replayed(IdempotencyRecord),
}

/// A user's own settings and schedule, as exported and imported.
#[derive(Debug, Clone, PartialEq)]
pub struct UserState {
    /// The tenant.
    pub tenant: membank_core::TenantId,
    /// The user.
    pub user: membank_core::UserId,
    /// The IANA time zone its days are counted in.
    pub time_zone: String,
    /// When it was first written to.
    pub created_at: Timestamp,
    /// When its last maintenance cycle ran, if ever.
    pub maintained_at: Option<Timestamp>,
    /// Its summaries are due to be made again (an erasure reached them).
    pub resummarize_due: bool,
}

/// One row of a user's export, in the order [`crate::Store::export_user`] yields them:
/// the user, then its memories (oldest row first), its events (log order), its recent
/// recall queries (only with vectors).
#[derive(Debug, Clone)]
pub enum ExportRow {
    /// The user.
    User(UserState),
    /// A memory with all of its state, and its vector when asked for and present.
    Memory(Box<Memory>, Option<(EmbeddingModel, Vec<f32>)>),
    /// An event of its log.
    Event(membank_core::event::Event),
    /// A recent recall query's vector (FadeMem's relevance) and when it was asked.
    Query(Timestamp, Vec<f32>),
}

/// Everything of one user to import, ids kept.
#[derive(Debug, Clone)]
pub struct UserImport {
    /// The user.
    pub state: UserState,
    /// Its memories in order, each with its vector if it had one.
    pub memories: Vec<(Memory, Option<ModelVector>)>,
    /// Its events in log order.
    pub events: Vec<membank_core::event::Event>,
    /// Its recent recall queries, oldest first.
    pub queries: Vec<(Timestamp, Vec<f32>)>,
}

/// What an import stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportCounts {
    /// Users created (merged ones not counted).
    pub users_created: usize,
    /// Memories stored.
    pub memories: usize,
    /// Events stored.
    pub events: usize,
    /// Memories and events skipped because a merge found them already present.
    pub skipped: usize,
}

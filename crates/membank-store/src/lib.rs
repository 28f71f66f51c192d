//! Storage of memories, vectors, the full-text index and the event log, behind the
//! [`Store`] trait.
//!
//! This is the only crate that knows SQL. Its invariants:
//! - **Every operation names a scope.** The trait has no method that reads or writes
//!   across users; the SQL of each method filters by the user's row at the lowest layer,
//!   and the full-text index carries the user in a column the query must match.
//! - **No read path writes.** Opening, loading and searching never change data;
//!   recall strengthening and sweeps are explicit write methods.
//! - **Writes are transactional** and durable once acknowledged (WAL, `synchronous=FULL`).
//! - **One embedding model per store.** Vectors of another model or dimension are refused.
//! - **Bounded caches.** The per-user search caches of a store handle share one byte budget
//!   ([`StoreOptions`], `cache.rs`) with least-recently-used eviction; an evicted user is
//!   loaded again from the database, so eviction changes speed, never results.
//!
//! Backends: [`SqliteStore`] (one file, the default) and, behind the cargo feature
//! `postgres` (off by default in this crate; the CLI turns it on), `PgStore`: the same
//! traits on PostgreSQL with pgvector (`postgres/`). Both search through the same
//! in-process caches (`search/`). [`Backend`] and [`open`] pick one from a path or a
//! `postgres://` URL. One conformance suite (`tests/it/conformance.rs`) runs against both.
//!
//! It deliberately knows nothing of embeddings models, HTTP or the CLI.

mod backend;
mod cache;
mod erasure;
mod error;
mod idempotency;
mod kernels;
mod keys;
mod maintenance;
pub mod parallel;
#[cfg(feature = "postgres")]
pub mod postgres;
mod search;
pub mod sqlite;
mod types;
mod write;

#[cfg(feature = "postgres")]
pub use self::postgres::{PgOptions, PgStore};
pub use backend::{Backend, Location, open, redact};
pub use cache::{CacheCounters, CacheKind, CacheStats, DEFAULT_CACHE_MB, DenseScreen, FOUR_BIT_ROWS, StoreOptions};
pub use error::StoreError;
pub use kernels::{SCAN_KERNEL_ENV, ScanPath, best_scan_path, scan_path};
/// The scan kernels on a chosen path, for tests in other crates that compare the paths on
/// real vectors; not part of the store's interface.
#[doc(hidden)]
pub mod kernel_check {
    pub use crate::kernels::{PathScores, path_scores};
}
pub use keys::{ApiKeyRecord, ApiKeyStore, NewApiKey};
pub use sqlite::SqliteStore;
pub use types::*;

use membank_core::event::Event;
use membank_core::forgetting::ForgettingPolicy;
use membank_core::{Memory, MemoryId, Scope, Status, TenantId, Timestamp, UserId};

/// What [`Store::dense_search_tiers`] returns: the best hits under the filter, and the best
/// with archived and superseded memories admitted, each with its status.
pub type DenseTiers = (Vec<Hit>, Vec<(Hit, Status)>);

/// The storage operations the engine needs. All are scoped; all are synchronous (callers
/// on an async runtime run them on a blocking thread).
pub trait Store: Send + Sync {
    /// Finds the user, creating it with default settings if new.
    fn ensure_user(&self, tenant: &TenantId, user: &UserId, now: Timestamp) -> Result<UserRecord, StoreError>;
    /// Finds the user; `None` if it has never been written to.
    fn find_user(&self, tenant: &TenantId, user: &UserId) -> Result<Option<UserRecord>, StoreError>;
    /// Changes a user's time zone. Days of existing memories keep the zone they were stored under.
    fn set_time_zone(
        &self,
        tenant: &TenantId,
        user: &UserId,
        time_zone: &str,
        now: Timestamp,
    ) -> Result<UserRecord, StoreError>;
    /// The users of a tenant, in creation order.
    fn list_users(&self, tenant: &TenantId) -> Result<Vec<UserRecord>, StoreError>;

    /// Stores a new memory, its vector, its index row and its `created` event in one transaction.
    fn insert(&self, new: NewMemory) -> Result<Memory, StoreError>;
    /// Stores many memories in one transaction (imports, benchmarks): all or nothing.
    fn insert_many(&self, batch: Vec<NewMemory>) -> Result<usize, StoreError>;
    /// One memory of this scope; `NotFound` if it does not exist *or belongs to someone else*.
    fn get(&self, scope: &Scope, id: MemoryId) -> Result<Memory, StoreError>;
    /// The memories of this scope among `ids`, in the order of `ids`; ids of other scopes are skipped.
    fn get_many(&self, scope: &Scope, ids: &[MemoryId]) -> Result<Vec<Memory>, StoreError>;
    /// Memories of this scope, newest first by `occurred_at`, filtered and paged.
    fn list(&self, scope: &Scope, query: &ListQuery) -> Result<Vec<Memory>, StoreError>;
    /// How many memories of this scope are in each status.
    fn counts(&self, scope: &Scope) -> Result<StatusCounts, StoreError>;

    /// Exact cosine search over this scope's vectors (they are L2-normalised, so a dot
    /// product). Best first, at most `limit`.
    fn dense_search(
        &self,
        scope: &Scope,
        model: &EmbeddingModel,
        query: &[f32],
        filter: &SearchFilter,
        limit: usize,
    ) -> Result<Vec<Hit>, StoreError>;
    /// Two dense searches from one scan: the best `limit` under `filter` (as
    /// [`Store::dense_search`]), and the best `wide_limit` under `filter` with archived and
    /// superseded memories admitted, each with its status. A recall that may reminisce needs
    /// both.
    #[allow(clippy::too_many_arguments)]
    fn dense_search_tiers(
        &self,
        scope: &Scope,
        model: &EmbeddingModel,
        query: &[f32],
        filter: &SearchFilter,
        limit: usize,
        wide_limit: usize,
    ) -> Result<DenseTiers, StoreError>;
    /// BM25 search of index terms over this scope. Best first, at most `limit`; scores are
    /// positive, higher is better.
    fn lexical_search(
        &self,
        scope: &Scope,
        terms: &[String],
        filter: &SearchFilter,
        limit: usize,
    ) -> Result<Vec<Hit>, StoreError>;

    /// Logs `recalled` events and, when `strengthen` is given, strengthens each memory as
    /// the policy says (`S += 1`, or unchanged for a second recall in a day under spaced
    /// strengthening; `last_recalled_at = now`), under the write lock in one transaction.
    /// An archived result the recall found in the archive (`recall.reminisced`) is brought
    /// back to active with savings instead and logged as `reminisced`.
    fn record_recall(
        &self,
        scope: &Scope,
        recall: &RecallRecord,
        strengthen: Option<&ForgettingPolicy>,
    ) -> Result<Vec<Memory>, StoreError>;
    /// Strengthens memories confirmed as used (the `used` recall mode). One that is archived
    /// (a reminiscing recall returned it) comes back to active with savings instead, logged as
    /// `reminisced` with `confirmed_used`; superseded and erased memories are left as they are.
    fn confirm_used(
        &self,
        scope: &Scope,
        ids: &[MemoryId],
        query_id: Option<&str>,
        policy: &ForgettingPolicy,
        now: Timestamp,
    ) -> Result<Vec<Memory>, StoreError>;

    /// Archives an active memory at the person's or agent's request.
    fn archive(&self, scope: &Scope, id: MemoryId, reason: &str, now: Timestamp) -> Result<Memory, StoreError>;
    /// Restores an archived or superseded memory to active, with its recall clock reset to `now`
    /// so it is not archived again by the next sweep.
    fn restore(&self, scope: &Scope, id: MemoryId, now: Timestamp) -> Result<Memory, StoreError>;
    /// Pins or unpins a memory.
    fn set_pinned(&self, scope: &Scope, id: MemoryId, pinned: bool, now: Timestamp) -> Result<Memory, StoreError>;
    /// Removes a memory's content, vector and index row for good, leaving a content-free
    /// tombstone row and an `erased` event.
    fn erase(&self, scope: &Scope, id: MemoryId, now: Timestamp) -> Result<Memory, StoreError>;

    /// Runs the forgetting policy over the active memories of one scope, in one write
    /// transaction, and archives what it decides unless `dry_run`.
    fn sweep(
        &self,
        scope: &Scope,
        policy: &ForgettingPolicy,
        now: Timestamp,
        dry_run: bool,
    ) -> Result<SweepReport, StoreError>;

    /// The event log of this scope, oldest first, filtered and paged.
    fn events(&self, scope: &Scope, query: &EventQuery) -> Result<Vec<Event>, StoreError>;

    /// Edits with history kept: stores `new` (an edited copy of the active memory `old`)
    /// and marks `old` superseded by it, logging `edited` and `superseded`, in one
    /// transaction. Stores that cannot do this answer `Conflict`.
    fn supersede(&self, scope: &Scope, old: MemoryId, new: NewMemory) -> Result<Memory, StoreError> {
        let _ = (scope, new);
        Err(StoreError::Conflict(format!("this store cannot edit memory {old}")))
    }
    /// Stores a derived memory (summary, portrait) and marks each memory in `replaces`
    /// (of the same scope) as superseded by it, in one transaction. `Conflict` if one of
    /// them is already superseded or erased; nothing is deleted.
    fn insert_superseding(&self, new: NewMemory, replaces: &[MemoryId], now: Timestamp) -> Result<Memory, StoreError>;
    /// The values of one metadata key among this scope's memories (any status but erased),
    /// each with the memory carrying it. Imports use it to skip records they already stored.
    fn metadata_index(
        &self,
        scope: &Scope,
        key: &str,
    ) -> Result<std::collections::HashMap<String, MemoryId>, StoreError>;
    /// For each of `ids` (of this scope), the memory just before and just after it on the
    /// same day, in `(occurred_at, insertion)` order, among the memories that `filter`
    /// admits (its kinds and statuses; its day range is ignored). Ids not found are left out.
    /// Neighbour expansion uses it: the turn before an answer often names its subject.
    fn adjacent(&self, scope: &Scope, ids: &[MemoryId], filter: &SearchFilter) -> Result<Vec<Adjacent>, StoreError>;

    /// Those of `days` on which this scope has a memory that `filter` admits (its kinds and
    /// statuses; its day range is ignored), in no particular order. One indexed seek per
    /// day: a recall uses it to choose the year of a date named without one.
    fn days_with_memories(
        &self,
        scope: &Scope,
        days: &[chrono::NaiveDate],
        filter: &SearchFilter,
    ) -> Result<Vec<chrono::NaiveDate>, StoreError>;

    /// The stored vectors of these memories of this scope (ids without a vector, or of
    /// other scopes, are left out), in the order of `ids`.
    fn vectors(&self, scope: &Scope, ids: &[MemoryId]) -> Result<Vec<(MemoryId, Vec<f32>)>, StoreError>;
    /// The user's most recent recall query vectors, newest first, at most `limit`.
    fn recent_queries(&self, scope: &Scope, limit: usize) -> Result<Vec<Vec<f32>>, StoreError>;
    /// When the user's last maintenance cycle ran and how many turns came since.
    fn maintenance_state(&self, scope: &Scope) -> Result<MaintenanceState, StoreError>;
    /// The user's active memories that no maintenance cycle has compared yet (stored after
    /// the position the last cycle covered), in storage order, with their positions, and the
    /// position of the user's newest memory.
    fn unmaintained(&self, scope: &Scope) -> Result<Unmaintained, StoreError>;
    /// Users (of every tenant, oldest cycle first) whose last maintenance cycle (or, never
    /// maintained, their creation) is before `before`, or who have stored at least
    /// `every_turns` turns since it; at most `limit`. An operations read over the users
    /// table only: it returns who, never what they remember.
    fn users_due_for_maintenance(
        &self,
        before: Timestamp,
        every_turns: Option<u64>,
        limit: usize,
    ) -> Result<Vec<(TenantId, UserId)>, StoreError>;
    /// Applies one maintenance cycle's plan to one user in one transaction, logs every
    /// change as an event, and records the cycle (time, and the position up to which its
    /// comparisons covered the user's memories: [`MaintenancePlan::maintained_through`]).
    fn apply_maintenance(&self, scope: &Scope, plan: MaintenancePlan) -> Result<MaintenanceApplied, StoreError>;

    /// Stores all of `batch` (one user's memories) in one transaction, or none. With a
    /// claim, the key is recorded in that transaction with the ids stored; a key already
    /// used for the same request stores nothing and answers `Replayed`, one used for
    /// another request is refused (`Invalid`).
    fn insert_all(&self, batch: Vec<NewMemory>, claim: Option<&IdempotencyClaim>) -> Result<Insertion, StoreError>;
    /// What `key` was used for by this user, if it was claimed at or after `expire_before`.
    fn idempotency_record(
        &self,
        scope: &Scope,
        key: &str,
        expire_before: Timestamp,
    ) -> Result<Option<IdempotencyRecord>, StoreError>;
    /// Records the answer given to the request that claimed `key` (the first one wins).
    fn record_idempotent_response(&self, scope: &Scope, key: &str, response: &str) -> Result<(), StoreError>;
    /// Clears the user's `resummarize_due` mark (its summaries were made again).
    fn clear_resummarize_due(&self, scope: &Scope) -> Result<(), StoreError>;
    /// Streams one user's rows to `sink` from one consistent snapshot (see [`ExportRow`]);
    /// `false` if the user does not exist.
    fn export_user(
        &self,
        tenant: &TenantId,
        user: &UserId,
        vectors: bool,
        sink: &mut dyn FnMut(ExportRow) -> Result<(), StoreError>,
    ) -> Result<bool, StoreError>;
    /// Every user of every tenant, in creation order.
    fn all_users(&self) -> Result<Vec<(TenantId, UserId)>, StoreError>;
    /// Imports users with their ids, in one transaction. Without `merge` an existing user
    /// is refused (`Conflict`) before anything is written; with it, rows already present
    /// are skipped.
    fn import_users(&self, users: Vec<UserImport>, merge: bool) -> Result<ImportCounts, StoreError>;
    /// The model whose vectors the store holds, as recorded by its first vector; `None`
    /// while it holds none (a new store, or one with only vector-less rows).
    fn embedding_model(&self) -> Result<Option<EmbeddingModel>, StoreError>;
    /// Counts, over every user, the active memories and those written mostly in scripts
    /// other than Latin ([`membank_core::script`]), for `membank check`. An operations read
    /// like [`Store::users_due_for_maintenance`]: it returns numbers, never what anyone
    /// remembers.
    fn script_census(&self) -> Result<ScriptCensus, StoreError>;
}

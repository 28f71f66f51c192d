//! The server store: the same [`Store`] (and [`crate::ApiKeyStore`]) on PostgreSQL ≥ 15 with
//! pgvector, for several `membank serve` processes on one database and for more users
//! than one machine's SQLite file should hold.
//!
//! Every invariant of the SQLite store holds, by the following means:
//! - **Every statement is scoped to the user's row.** A user's key `uid` is a UUIDv5 of
//!   `(tenant, user)` (`user_uid`), and every statement about a user's data filters by
//!   it; there is no unscoped query but the operations reads the trait names as such. The
//!   schema keys every table by `uid` first, so it can be distributed with Citus
//!   (`postgres/schema.rs` has the DDL).
//! - **No read path writes.** Reads run in `READ ONLY` `REPEATABLE READ` transactions:
//!   one snapshot per operation, and the server refuses a write in them.
//! - **Each write is one transaction**, which first locks the user's row
//!   (`SELECT … FOR NO KEY UPDATE`). SQLite has one writer per file; here writes of one
//!   user are serialised by that lock and writes of different users run in parallel. So a
//!   sweep or a maintenance plan decides from rows no one else changes meanwhile, an
//!   erasure's closure cannot miss a memory derived concurrently, and two claims of one
//!   idempotency key cannot both store.
//! - **Strengthening is `strength = strength + n` in SQL**, never a value computed from an
//!   earlier read; FadeMem's age and frequency are computed from the row read under the
//!   user's lock in the same transaction.
//! - **One embedding model per database**, recorded in `store_meta` by the first vector
//!   stored; another is refused (`ModelMismatch`).
//! - **Erasure** sets content, texts and metadata to NULL and deletes the vector and the
//!   memory's index terms in one transaction (`postgres/erasure.rs`). PostgreSQL keeps dead row
//!   versions until VACUUM reclaims them and WAL until it is recycled: see that module.
//! - **Migrations are versioned** (`schema_version`); a newer schema is refused.
//! - **Events carry no content**, as in SQLite (the same event data is written).
//!
//! Search runs on the same in-process caches as SQLite's (`crate::search`: an exact dense
//! scan screened in int8, a BM25 index cut by the core's text rules), fed from this
//! database by `postgres/source.rs` and checked against it on every search (the user's
//! `revision`, the newest sequence numbers), so several servers on one database never
//! serve stale results; `source.rs` says why not SQL search, with numbers.
//!
//! TLS follows the URL's `sslmode` as libpq does (`prefer` by default; `require`,
//! `verify-ca`, `verify-full`, with `sslrootcert=PATH` for a private CA), over rustls
//! (`postgres/tls.rs`).

mod erasure;
mod error;
mod idempotency;
mod keys;
mod lookup;
mod maintain;
mod pool;
mod row;
mod schema;
mod source;
pub mod testing;
mod tls;
mod transfer;
mod txn;
mod vector;

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use chrono::{DateTime, NaiveDate};
use membank_core::event::{Event, NewEvent};
use membank_core::event_payload as payload;
use membank_core::event_payload::Reminiscence;
use membank_core::forgetting::ForgettingPolicy;
use membank_core::{EventId, ForgettingState, Memory, MemoryId, Scope, Status, Strength, TenantId, Timestamp, UserId};
use postgres::Row;
use uuid::Uuid;

pub use error::PgError;
pub use schema::CURRENT_VERSION;

use pool::{Pool, Tx};
use row::{col, memory_id, parse};
use source::PgSource;
use vector::VectorRef;

use crate::cache::{CacheBudget, CacheStats};
use crate::search::Labels;
use crate::search::terms::TermCache;
use crate::search::vectors::VectorCache;
use crate::types::*;
use crate::{Store, StoreError};

/// How a [`PgStore`] connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PgOptions {
    /// Most connections this handle opens at once (operations beyond wait for one).
    pub max_connections: usize,
    /// The in-process search caches' byte budget, as for SQLite ([`crate::StoreOptions`]).
    pub cache_budget: Option<u64>,
    /// How the dense scan screens a large user's rows, as for SQLite.
    pub dense_screen: crate::DenseScreen,
}

impl Default for PgOptions {
    fn default() -> Self {
        Self {
            max_connections: 16,
            cache_budget: crate::StoreOptions::default().cache_budget,
            dense_screen: crate::DenseScreen::default(),
        }
    }
}

/// How long opening one connection may take when the URL sets no `connect_timeout`.
pub const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The PostgreSQL implementation of [`Store`].
pub struct PgStore {
    /// The URL without its password, for messages.
    target: String,
    pool: Pool,
    /// The database's embedding model once known: it never changes after the first vector
    /// is stored, so it is read from `store_meta` once, not on every insert and search.
    model: OnceLock<EmbeddingModel>,
    /// The search caches' budget and the two caches in it, keyed by `users.row_seq`.
    cache: Arc<CacheBudget>,
    vectors: VectorCache,
    terms: TermCache,
    dense_screen: crate::DenseScreen,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("target", &self.target).finish_non_exhaustive()
    }
}

/// Namespace of the users' UUIDv5 keys (the bytes spell `membank users`).
const USER_NAMESPACE: Uuid = Uuid::from_u128(0x6d65_6d62_616e_6b20_7573_6572_7300_0001);

/// The key of a user's rows: a UUIDv5 of the tenant and the user, separated by a newline
/// (labels cannot hold control characters, so the name is unambiguous). Computed, never
/// looked up, so each statement names its user's rows directly and a distributed database
/// can route it by this key. A collision of two users' keys would fail on the users' primary
/// key when the second user is created ([`PgStore::ensure_user`] checks the stored names),
/// never merge them.
pub(crate) fn user_uid(tenant: &TenantId, user: &UserId) -> Uuid {
    Uuid::new_v5(&USER_NAMESPACE, format!("{}\n{}", tenant.as_str(), user.as_str()).as_bytes())
}

fn scope_uid(scope: &Scope) -> Uuid {
    user_uid(&scope.tenant, &scope.user)
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://USER@HOST:PORT/DB`, or key=value
    /// pairs) and brings its schema up to date, creating the `vector` extension if it is
    /// missing (that needs the right to create it once). Opening never changes memories.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        Self::open_with(url, PgOptions::default())
    }

    /// [`PgStore::open`] with these options.
    pub fn open_with(url: &str, options: PgOptions) -> Result<Self, StoreError> {
        let tls = tls::settings(url)?;
        let mut config = postgres::Config::from_str(&tls.rest)
            .map_err(|e| StoreError::Invalid(membank_core::InvalidInput::new("database URL", e.to_string())))?;
        config.ssl_mode(tls.ssl_mode());
        if config.get_application_name().is_none() {
            config.application_name("membank");
        }
        // Without a bound, connecting to a host that does not answer (a node gone from the
        // network) waits for the system's TCP timeout, minutes; a request should fail fast
        // (503 storage_unavailable) instead. The URL's own `connect_timeout` wins.
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        let target = describe(&config);
        let pool = Pool::new(config, options.max_connections, tls.connector()?);
        pool.with_client(schema::migrate)?;
        let cache = Arc::new(CacheBudget::new(options.cache_budget));
        let (vectors, terms) = (VectorCache::new(Arc::clone(&cache)), TermCache::new(Arc::clone(&cache)));
        Ok(Self { target, pool, model: OnceLock::new(), cache, vectors, terms, dense_screen: options.dense_screen })
    }

    /// The schema version of the database.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.pool.read(|tx| schema::version(&mut tx.inner))
    }

    /// The search caches' size, budget, hits, misses and evictions now (for metrics).
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// Consistency checks SQLite's `integrity_check` has counterparts of: vectors without a
    /// live memory of the same user or with a stale copy of its status, kind, day or labels,
    /// and events about a memory their user does not have. Empty: healthy.
    pub fn integrity_check(&self) -> Result<Vec<String>, StoreError> {
        self.pool.read(|tx| {
            let mut problems = Vec::new();
            let count = |tx: &mut Tx<'_>, sql: &str| -> Result<i64, StoreError> { col(&tx.query_one(sql, &[])?, 0) };
            let orphans = count(tx, "SELECT count(*) FROM embeddings e LEFT JOIN memories m ON m.uid = e.uid AND m.seq = e.seq WHERE m.seq IS NULL OR m.status = 'erased'")?;
            if orphans > 0 {
                problems.push(format!("{orphans} vectors without a live memory of the same user"));
            }
            let copies = count(
                tx,
                "SELECT count(*) FROM embeddings e JOIN memories m ON m.uid = e.uid AND m.seq = e.seq
                 WHERE (e.status, e.kind, e.day) IS DISTINCT FROM (m.status, m.kind, m.day) OR (e.agent, e.session) IS DISTINCT FROM (m.agent, m.session)",
            )?;
            if copies > 0 {
                problems.push(format!("{copies} vectors whose copy of their memory's status, kind, day or labels is stale"));
            }
            let stray = count(tx, "SELECT count(*) FROM events e WHERE e.memory_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.uid = e.uid AND m.id = e.memory_id)")?;
            if stray > 0 {
                problems.push(format!("{stray} events about a memory their user does not have"));
            }
            Ok(problems)
        })
    }

    /// The store's model (cached once known), or `None` while no vector is stored.
    fn stored_model(&self, tx: &mut Tx<'_>) -> Result<Option<EmbeddingModel>, StoreError> {
        if let Some(stored) = self.model.get() {
            return Ok(Some(stored.clone()));
        }
        let row = tx.query_one(
            "SELECT (SELECT value FROM store_meta WHERE key = 'embedding_model'), (SELECT value FROM store_meta WHERE key = 'embedding_dim')",
            &[],
        )?;
        let (Some(id), Some(dim)) = (col::<Option<String>>(&row, 0)?, col::<Option<String>>(&row, 1)?) else {
            return Ok(None);
        };
        let dim: usize = dim.parse().map_err(|_| StoreError::Corrupt("bad embedding_dim".into()))?;
        Ok(Some(self.model.get_or_init(|| EmbeddingModel { id, dim }).clone()))
    }

    /// Whether the store's model is `model`: `false` if no vector was stored yet,
    /// `ModelMismatch` if it is another one.
    fn check_model(&self, tx: &mut Tx<'_>, model: &EmbeddingModel) -> Result<bool, StoreError> {
        let Some(stored) = self.stored_model(tx)? else { return Ok(false) };
        if stored != *model {
            return Err(StoreError::ModelMismatch {
                store_model: stored.id,
                store_dim: stored.dim,
                given_model: model.id.clone(),
                given_dim: model.dim,
            });
        }
        Ok(true)
    }

    /// Records `model` as the store's if none is yet. Two first inserts racing with
    /// different models: the second waits on the first's key, inserts nothing, and its
    /// check then sees the first's model and refuses.
    fn claim_model(&self, tx: &mut Tx<'_>, model: &EmbeddingModel) -> Result<(), StoreError> {
        if self.check_model(tx, model)? {
            return Ok(());
        }
        tx.execute(
            "INSERT INTO store_meta (key, value) VALUES ('embedding_model', $1), ('embedding_dim', $2) ON CONFLICT (key) DO NOTHING",
            &[&model.id, &model.dim.to_string()],
        )?;
        if !self.check_model(tx, model)? {
            return Err(StoreError::Corrupt("the embedding model vanished after it was recorded".into()));
        }
        Ok(())
    }

    /// Runs `f` on the memory `id` of `scope` (its row and state) in a write transaction,
    /// then returns the memory as it is after `f`.
    fn mutate(
        &self,
        scope: &Scope,
        id: MemoryId,
        f: impl FnOnce(&mut Tx<'_>, Uuid, i64, &Memory) -> Result<(), StoreError>,
    ) -> Result<Memory, StoreError> {
        self.pool.write(|tx| {
            let uid = existing_user(tx, scope).map_err(not_found_as(id))?;
            let (seq, memory) = fetch_one(tx, uid, scope, id)?;
            f(tx, uid, seq, &memory)?;
            Ok(fetch_one(tx, uid, scope, id)?.1)
        })
    }

    /// Inserts one memory of the user `uid` with its vector and index terms, without an
    /// event (imports bring their own log), in the caller's transaction, which holds that
    /// user's lock; returns the memory's row and the memory.
    fn insert_row(&self, tx: &mut Tx<'_>, uid: Uuid, new: NewMemory) -> Result<(i64, Memory), StoreError> {
        let memory = new.memory;
        if scope_uid(&memory.scope) != uid {
            return Err(StoreError::Invalid(membank_core::InvalidInput::new(
                "memory",
                format!("memory {} belongs to another user than the operation", memory.id),
            )));
        }
        if let Some((model, vector)) = &new.embedding
            && (vector.len() != model.dim || vector.iter().any(|x| !x.is_finite()))
        {
            return Err(StoreError::Invalid(membank_core::InvalidInput::new(
                "embedding",
                format!("expected {} finite numbers, got {}", model.dim, vector.len()),
            )));
        }
        for text in [&memory.content, &memory.user_text, &memory.assistant_text].into_iter().flatten() {
            refuse_nul("content", text)?;
        }
        for (key, value) in &memory.metadata {
            refuse_nul("metadata", key)?;
            refuse_nul("metadata", value)?;
        }
        let derived: Vec<Uuid> = memory.derived_from.iter().map(MemoryId::as_uuid).collect();
        let metadata = serde_json::to_value(&memory.metadata).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let state = &memory.forgetting;
        let row = tx.query_one(
            "INSERT INTO memories (uid, id, agent, session, kind, source, content, user_text, assistant_text, occurred_at, recorded_at, day,
               strength, recall_count, last_recalled_at, pinned, layer, importance, status, superseded_by, derived_from, metadata,
               fade_age, access_frequency, base_importance, decay_factor)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26)
             RETURNING seq",
            &[
                &uid,
                &memory.id.as_uuid(),
                &memory.scope.agent.as_ref().map(|a| a.as_str()),
                &memory.scope.session.as_ref().map(|s| s.as_str()),
                &memory.kind.as_str(),
                &memory.source.as_str(),
                &memory.content,
                &memory.user_text,
                &memory.assistant_text,
                &millis(memory.occurred_at),
                &millis(memory.recorded_at),
                &memory.day,
                &state.strength.get(),
                &i64::from(state.recall_count),
                &millis(state.last_recalled_at),
                &state.pinned,
                &state.layer.as_str(),
                &state.importance,
                &memory.status.as_str(),
                &memory.superseded_by.map(|id| id.as_uuid()),
                &derived,
                &metadata,
                &finite_or(state.fade_age, 0.0).max(0.0),
                &finite_or(state.access_frequency, 0.0).max(0.0),
                &finite01(state.base_importance, 0.5),
                &finite_or(state.decay_factor, 1.0).max(f64::MIN_POSITIVE),
            ],
        )?;
        let seq: i64 = col(&row, 0)?;
        if let Some((model, vector)) = &new.embedding {
            self.claim_model(tx, model)?;
            tx.execute(
                "INSERT INTO embeddings (uid, seq, status, kind, day, agent, session, vector) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                &[&uid, &seq, &memory.status.as_str(), &memory.kind.as_str(), &memory.day, &memory.scope.agent.as_ref().map(|a| a.as_str()), &memory.scope.session.as_ref().map(|s| s.as_str()), &VectorRef(vector)],
            )?;
        }
        let mut stored = memory;
        stored.occurred_at = millis(stored.occurred_at);
        stored.recorded_at = millis(stored.recorded_at);
        stored.forgetting.last_recalled_at = millis(stored.forgetting.last_recalled_at);
        Ok((seq, stored))
    }

    /// Inserts one memory of the user `uid` with its vector and `created` event, in the caller's transaction (which holds the user's lock); returns its row.
    fn insert_in(&self, tx: &mut Tx<'_>, uid: Uuid, new: NewMemory) -> Result<(i64, MemoryId), StoreError> {
        let (seq, memory) = self.insert_row(tx, uid, new)?;
        append_events(tx, uid, &[created_event(&memory)])?;
        Ok((seq, memory.id))
    }
}

/// The `created` event of a memory being stored: where its forgetting clock started and
/// its first strength, so that with the recalls that follow in the log the whole curve can
/// be replayed from the log alone. Times are the stored ones (whole milliseconds).
fn created_event(memory: &Memory) -> NewEvent {
    payload::created(memory, millis)
}

/// The connection target without credentials, for `Debug`.
fn describe(config: &postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            postgres::config::Host::Tcp(name) => name.clone(),
            #[cfg(unix)]
            postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    format!("postgres://{}/{}", hosts.join(","), config.get_dbname().unwrap_or(""))
}

/// PostgreSQL's `text` and `jsonb` cannot hold the character U+0000 (SQLite's can): text
/// with one is refused as the caller's, before anything is written, rather than failing
/// inside the transaction as a database error.
fn refuse_nul(field: &'static str, text: &str) -> Result<(), StoreError> {
    if text.contains('\0') {
        return Err(StoreError::Invalid(membank_core::InvalidInput::new(
            field,
            "contains the character U+0000, which the PostgreSQL store cannot hold",
        )));
    }
    Ok(())
}

/// [`refuse_nul`] for every string and key of a JSON value.
fn refuse_nul_json(field: &'static str, value: &serde_json::Value) -> Result<(), StoreError> {
    match value {
        serde_json::Value::String(text) => refuse_nul(field, text),
        serde_json::Value::Array(items) => items.iter().try_for_each(|item| refuse_nul_json(field, item)),
        serde_json::Value::Object(map) => map.iter().try_for_each(|(key, item)| {
            refuse_nul(field, key)?;
            refuse_nul_json(field, item)
        }),
        _ => Ok(()),
    }
}

/// `t` cut to whole milliseconds: the SQLite store keeps milliseconds, and both backends
/// must give back the same instants.
fn millis(t: Timestamp) -> Timestamp {
    DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap_or(t)
}

fn finite_or(x: f64, default: f64) -> f64 {
    if x.is_finite() { x } else { default }
}

fn finite01(x: f64, default: f64) -> f64 {
    finite_or(x, default).clamp(0.0, 1.0)
}

/// The columns [`row_to_memory`] reads, in its order, on the alias `m`.
const MEMORY_COLUMNS: &str = "m.seq, m.id, m.agent, m.session, m.kind, m.source, m.content, m.user_text, m.assistant_text, m.occurred_at, m.recorded_at, \
    m.day, m.strength, m.recall_count, m.last_recalled_at, m.pinned, m.layer, m.importance, m.status, m.superseded_by, m.derived_from, m.metadata, \
    m.fade_age, m.access_frequency, m.base_importance, m.decay_factor";

/// How many columns [`MEMORY_COLUMNS`] has (an export's vector columns follow them).
const MEMORY_COLUMN_COUNT: usize = 26;

/// A memory of the user `tenant`/`user` from the [`MEMORY_COLUMNS`] of `row`, with its row.
fn row_to_memory(row: &Row, tenant: &TenantId, user: &UserId) -> Result<(i64, Memory), StoreError> {
    let label = |index: usize| -> Result<Option<membank_core::AgentLabel>, StoreError> {
        col::<Option<String>>(row, index)?
            .map(|l| membank_core::AgentLabel::new(&l).map_err(|e| StoreError::Corrupt(format!("bad label: {e}"))))
            .transpose()
    };
    let derived: Vec<Uuid> = col(row, 20)?;
    let metadata: serde_json::Value = col(row, 21)?;
    let memory = Memory {
        id: memory_id(col(row, 1)?)?,
        scope: Scope { tenant: tenant.clone(), user: user.clone(), agent: label(2)?, session: label(3)? },
        kind: parse("kind", &col::<String>(row, 4)?)?,
        source: parse("source", &col::<String>(row, 5)?)?,
        content: col(row, 6)?,
        user_text: col(row, 7)?,
        assistant_text: col(row, 8)?,
        occurred_at: col(row, 9)?,
        recorded_at: col(row, 10)?,
        day: col::<NaiveDate>(row, 11)?,
        forgetting: forgetting_state_at(row, 12, 22)?,
        status: parse("status", &col::<String>(row, 18)?)?,
        superseded_by: col::<Option<Uuid>>(row, 19)?.map(memory_id).transpose()?,
        derived_from: derived.into_iter().map(memory_id).collect::<Result<_, _>>()?,
        metadata: serde_json::from_value(metadata).map_err(|e| StoreError::Corrupt(format!("bad metadata: {e}")))?,
    };
    Ok((col(row, 0)?, memory))
}

/// The forgetting state from [`FORGETTING_COLUMNS`] read from position `first` on.
fn forgetting_state(row: &Row, first: usize) -> Result<ForgettingState, StoreError> {
    forgetting_state_at(row, first, first + 6)
}

/// The forgetting state from MemoryBank's six columns (strength, recall_count,
/// last_recalled_at, pinned, layer, importance) from `first` on and FadeMem's four
/// (fade_age, access_frequency, base_importance, decay_factor) from `fade` on.
fn forgetting_state_at(row: &Row, first: usize, fade: usize) -> Result<ForgettingState, StoreError> {
    let recall_count: i64 = col(row, first + 1)?;
    Ok(ForgettingState {
        strength: Strength::new(col(row, first)?).map_err(|e| StoreError::Corrupt(format!("bad strength: {e}")))?,
        recall_count: u32::try_from(recall_count.max(0)).unwrap_or(u32::MAX),
        last_recalled_at: col(row, first + 2)?,
        pinned: col(row, first + 3)?,
        layer: parse("layer", &col::<String>(row, first + 4)?)?,
        importance: col(row, first + 5)?,
        fade_age: col(row, fade)?,
        access_frequency: col(row, fade + 1)?,
        base_importance: col(row, fade + 2)?,
        decay_factor: col(row, fade + 3)?,
    })
}

/// The ten forgetting columns [`forgetting_state`] reads when they stand together.
const FORGETTING_COLUMNS: &str = "m.strength, m.recall_count, m.last_recalled_at, m.pinned, m.layer, m.importance, m.fade_age, m.access_frequency, m.base_importance, m.decay_factor";

/// SQL narrowing to the scope's agent and session labels, bound as `$n` and `$n+1`.
fn label_filter(n: usize) -> String {
    format!("AND (${n}::text IS NULL OR m.agent = ${n}) AND (${m}::text IS NULL OR m.session = ${m})", m = n + 1)
}

fn labels(scope: &Scope) -> (Option<&str>, Option<&str>) {
    (scope.agent.as_ref().map(|a| a.as_str()), scope.session.as_ref().map(|s| s.as_str()))
}

/// Locks the scope's user's row for the rest of the transaction and returns its key, or
/// `NotFound` if the user does not exist. Every write transaction starts here.
/// The user's key in the search caches (`row_seq`, unique and never reused) and its
/// revision in this snapshot; `None` when the user does not exist.
fn cache_key(tx: &mut Tx<'_>, uid: Uuid) -> Result<Option<(i64, i64)>, StoreError> {
    match tx.query_opt("SELECT row_seq, revision FROM users WHERE uid = $1", &[&uid])? {
        Some(row) => Ok(Some((col(&row, 0)?, col(&row, 1)?))),
        None => Ok(None),
    }
}

fn existing_user(tx: &mut Tx<'_>, scope: &Scope) -> Result<Uuid, StoreError> {
    let uid = scope_uid(scope);
    if lock_user(tx, uid)? { Ok(uid) } else { Err(StoreError::NotFound { what: format!("user {}", scope.user) }) }
}

/// A missing user reads as a missing memory (another user's id must look like no id).
fn not_found_as(id: MemoryId) -> impl Fn(StoreError) -> StoreError {
    move |err| match err {
        StoreError::NotFound { .. } => StoreError::memory_not_found(id),
        other => other,
    }
}

/// Locks the user's row; `false` if there is none.
fn lock_user(tx: &mut Tx<'_>, uid: Uuid) -> Result<bool, StoreError> {
    Ok(tx.query_opt("SELECT 1 FROM users WHERE uid = $1 FOR NO KEY UPDATE", &[&uid])?.is_some())
}

/// One memory of the scope (labels included) with its row; `NotFound` otherwise.
fn fetch_one(tx: &mut Tx<'_>, uid: Uuid, scope: &Scope, id: MemoryId) -> Result<(i64, Memory), StoreError> {
    let sql = format!("SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.uid = $1 AND m.id = $2 {}", label_filter(3));
    let (agent, session) = labels(scope);
    let row = tx
        .query_opt(&sql, &[&uid, &id.as_uuid(), &agent, &session])?
        .ok_or_else(|| StoreError::memory_not_found(id))?;
    row_to_memory(&row, &scope.tenant, &scope.user)
}

/// The memories of the scope among `ids`, in the order of `ids` (repeats repeated), those
/// of other scopes or unknown skipped; one statement.
fn fetch_many(tx: &mut Tx<'_>, uid: Uuid, scope: &Scope, ids: &[MemoryId]) -> Result<Vec<Memory>, StoreError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql =
        format!("SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.uid = $1 AND m.id = ANY($2) {}", label_filter(3));
    let (agent, session) = labels(scope);
    let list: Vec<Uuid> = ids.iter().map(MemoryId::as_uuid).collect();
    let mut found: HashMap<MemoryId, Memory> = HashMap::with_capacity(ids.len());
    for row in tx.query(&sql, &[&uid, &list, &agent, &session])? {
        let (_, memory) = row_to_memory(&row, &scope.tenant, &scope.user)?;
        found.insert(memory.id, memory);
    }
    Ok(ids.iter().filter_map(|id| found.get(id).cloned()).collect())
}

/// Appends events to the user's log in order, in one statement.
fn append_events(tx: &mut Tx<'_>, uid: Uuid, events: &[NewEvent]) -> Result<(), StoreError> {
    if events.is_empty() {
        return Ok(());
    }
    for event in events {
        refuse_nul_json("event data", &event.data)?;
    }
    let ids: Vec<Uuid> = events.iter().map(|e| EventId::generate(e.at).as_uuid()).collect();
    let memories: Vec<Option<Uuid>> = events.iter().map(|e| e.memory_id.map(|id| id.as_uuid())).collect();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    let ats: Vec<Timestamp> = events.iter().map(|e| millis(e.at)).collect();
    let data: Vec<&serde_json::Value> = events.iter().map(|e| &e.data).collect();
    // WITH ORDINALITY and ORDER BY: the log's sequence numbers follow the events' order.
    tx.execute(
        "INSERT INTO events (uid, id, memory_id, kind, at, data)
         SELECT $1, e.id, e.memory_id, e.kind, e.at, e.data
         FROM unnest($2::uuid[], $3::uuid[], $4::text[], $5::timestamptz[], $6::jsonb[]) WITH ORDINALITY AS e(id, memory_id, kind, at, data, n)
         ORDER BY e.n",
        &[&uid, &ids, &memories, &kinds, &ats, &data],
    )?;
    Ok(())
}

fn bump_revision(tx: &mut Tx<'_>, uid: Uuid) -> Result<(), StoreError> {
    tx.execute("UPDATE users SET revision = revision + 1 WHERE uid = $1", &[&uid])?;
    Ok(())
}

fn user_record(row: &Row) -> Result<UserRecord, StoreError> {
    Ok(UserRecord { user: col(row, 0)?, time_zone: col(row, 1)?, created_at: col(row, 2)? })
}

fn read_user(tx: &mut Tx<'_>, uid: Uuid) -> Result<Option<UserRecord>, StoreError> {
    tx.query_opt("SELECT user_key, time_zone, created_at FROM users WHERE uid = $1", &[&uid])?
        .map(|row| user_record(&row))
        .transpose()
}

/// `S` as the policy says (`S += 1`, or unchanged for a second recall in a day under spaced
/// strengthening), `recall_count += 1`, `last_recalled_at = max(last, now)` and FadeMem's
/// reinforcement for each of `ids` that is active (an id given twice is strengthened
/// twice, in order), with one `strengthened` event each, in the caller's transaction (user
/// lock held, rows `FOR UPDATE`). The new strength and FadeMem's numbers are computed by
/// [`ForgettingPolicy::strengthen`] from the rows read under the lock.
fn strengthen_all(
    tx: &mut Tx<'_>,
    uid: Uuid,
    ids: &[MemoryId],
    query_id: Option<&str>,
    policy: &ForgettingPolicy,
    now: Timestamp,
) -> Result<(), StoreError> {
    if ids.is_empty() {
        return Ok(());
    }
    let list: Vec<Uuid> = ids.iter().map(MemoryId::as_uuid).collect();
    let sql = format!(
        "SELECT m.id, {FORGETTING_COLUMNS} FROM memories m WHERE m.uid = $1 AND m.id = ANY($2) AND m.status = 'active' FOR UPDATE"
    );
    let mut states: HashMap<MemoryId, ForgettingState> = HashMap::new();
    for row in tx.query(&sql, &[&uid, &list])? {
        states.insert(memory_id(col(&row, 0)?)?, forgetting_state(&row, 1)?);
    }
    // Each occurrence in order: its state before and after, as sequential updates would see.
    let mut steps: Vec<(MemoryId, ForgettingState, ForgettingState)> = Vec::new();
    for id in ids {
        let Some(before) = states.get(id).copied() else { continue };
        let after = policy.strengthen(&before, now);
        states.insert(*id, after);
        steps.push((*id, before, after));
    }
    if steps.is_empty() {
        return Ok(());
    }
    let mut increments: Vec<(MemoryId, i64)> = Vec::new();
    for (id, _, _) in &steps {
        match increments.iter_mut().find(|(seen, _)| seen == id) {
            Some((_, n)) => *n += 1,
            None => increments.push((*id, 1)),
        }
    }
    let update_ids: Vec<Uuid> = increments.iter().map(|(id, _)| id.as_uuid()).collect();
    let counts: Vec<i64> = increments.iter().map(|(_, n)| *n).collect();
    // The rows are locked, so each one's last step is its state now.
    let strength: Vec<f64> = increments.iter().map(|(id, _)| states[id].strength.get()).collect();
    let fade: Vec<f64> = increments.iter().map(|(id, _)| states[id].fade_age).collect();
    let frequency: Vec<f64> = increments.iter().map(|(id, _)| states[id].access_frequency).collect();
    tx.execute(
        "UPDATE memories m SET strength = v.strength, recall_count = m.recall_count + v.n, last_recalled_at = greatest(m.last_recalled_at, $2),
           fade_age = v.fade, access_frequency = v.frequency
         FROM unnest($3::uuid[], $4::int8[], $5::float8[], $6::float8[], $7::float8[]) AS v(id, n, strength, fade, frequency)
         WHERE m.uid = $1 AND m.id = v.id",
        &[&uid, &millis(now), &update_ids, &counts, &strength, &fade, &frequency],
    )?;
    let mut events = Vec::with_capacity(steps.len());
    for (id, before, after_state) in &steps {
        let change = payload::Strengthening {
            query_id,
            strength_before: before.strength.get(),
            strength_after: after_state.strength.get(),
            v_before: policy.fademem.decay(before, now).strength,
            v_after: policy.fademem.decay(after_state, now).strength,
            frequency_after: after_state.access_frequency,
        };
        events.push(payload::strengthened(*id, now, &change));
    }
    append_events(tx, uid, &events)
}

/// Brings archived memories back to active with savings ([`ForgettingPolicy::reminisce`],
/// as from each one's last `archived` event) and logs each as `reminisced` with how it came
/// back (found by a recall at its rank with its score, or confirmed as used). One no longer
/// archived is left alone.
fn reminisce_all(
    tx: &mut Tx<'_>,
    uid: Uuid,
    found: &[(MemoryId, Reminiscence<'_>)],
    policy: &ForgettingPolicy,
    now: Timestamp,
) -> Result<(), StoreError> {
    if found.is_empty() {
        return Ok(());
    }
    let list: Vec<Uuid> = found.iter().map(|(id, _)| id.as_uuid()).collect();
    let sql = format!(
        "SELECT m.id, m.seq, {FORGETTING_COLUMNS} FROM memories m WHERE m.uid = $1 AND m.id = ANY($2) AND m.status = 'archived' FOR UPDATE"
    );
    let mut states: HashMap<MemoryId, (i64, ForgettingState)> = HashMap::new();
    for row in tx.query(&sql, &[&uid, &list])? {
        states.insert(memory_id(col(&row, 0)?)?, (col(&row, 1)?, forgetting_state(&row, 2)?));
    }
    let mut archived_at: HashMap<MemoryId, Timestamp> = HashMap::new();
    for row in tx.query(
        "SELECT DISTINCT ON (memory_id) memory_id, at FROM events WHERE uid = $1 AND memory_id = ANY($2) AND kind = 'archived' ORDER BY memory_id, seq DESC",
        &[&uid, &list],
    )? {
        archived_at.insert(memory_id(col(&row, 0)?)?, col(&row, 1)?);
    }
    let mut events = Vec::with_capacity(found.len());
    let mut seqs = Vec::with_capacity(found.len());
    for (id, how) in found {
        let Some((seq, before)) = states.get(id).copied() else { continue };
        let archived = archived_at.get(id).copied();
        let after = policy.reminisce(&before, archived, now);
        tx.execute(
            "UPDATE memories SET strength = $3, recall_count = $4, last_recalled_at = $5, fade_age = $6, access_frequency = $7 WHERE uid = $1 AND seq = $2",
            &[
                &uid,
                &seq,
                &after.strength.get(),
                &i64::from(after.recall_count),
                &millis(after.last_recalled_at),
                &after.fade_age,
                &after.access_frequency,
            ],
        )?;
        let data = policy.reminisce_event_data(&before, &after, archived, now);
        events.push(payload::reminisced(*id, now, *how, data));
        seqs.push(seq);
    }
    if seqs.is_empty() {
        return Ok(());
    }
    change_status(tx, uid, &seqs, Status::Active, None)?;
    bump_revision(tx, uid)?;
    append_events(tx, uid, &events)
}

/// Changes a memory's status and bumps the user's revision, in the caller's transaction.
fn set_status(tx: &mut Tx<'_>, uid: Uuid, seq: i64, status: Status) -> Result<(), StoreError> {
    change_status(tx, uid, &[seq], status, None)?;
    bump_revision(tx, uid)
}

/// Moves the user's memories `seqs` to `status` (and `superseded_by`, when given), with
/// the copies of the status their vector and their index terms carry, in the caller's
/// transaction. Every status change goes through here, so the copies never disagree with
/// the memory (`integrity_check` verifies it).
fn change_status(
    tx: &mut Tx<'_>,
    uid: Uuid,
    seqs: &[i64],
    status: Status,
    superseded_by: Option<MemoryId>,
) -> Result<(), StoreError> {
    let by = superseded_by.map(|id| id.as_uuid());
    tx.execute(
        "UPDATE memories SET status = $3, superseded_by = coalesce($4, superseded_by) WHERE uid = $1 AND seq = ANY($2)",
        &[&uid, &seqs, &status.as_str(), &by],
    )?;
    tx.execute("UPDATE embeddings SET status = $3 WHERE uid = $1 AND seq = ANY($2)", &[&uid, &seqs, &status.as_str()])?;
    Ok(())
}

fn read_event(row: &Row) -> Result<Event, StoreError> {
    Ok(Event {
        seq: col(row, 0)?,
        id: parse("event id", &col::<Uuid>(row, 1)?.hyphenated().to_string())?,
        memory_id: col::<Option<Uuid>>(row, 2)?.map(memory_id).transpose()?,
        kind: parse("event kind", &col::<String>(row, 3)?)?,
        at: col(row, 4)?,
        data: col(row, 5)?,
    })
}

/// A sweep's plan for one user: its key, each examined memory's row, the plan.
type PlannedSweep = (Uuid, Vec<(MemoryId, i64)>, membank_core::forgetting::SweepPlan);

impl PgStore {
    /// The shared part of the dense searches: checks the query's dimension, finds the
    /// user and the store's model (nothing to search without either, or with `wanted`
    /// false: the default, empty result), then lets `scan` search the user's cached vectors.
    fn with_vectors<R: Default>(
        &self,
        scope: &Scope,
        model: &EmbeddingModel,
        query: &[f32],
        wanted: bool,
        scan: impl FnOnce(&mut dyn crate::search::Source, i64, i64, &Labels<'_>) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        crate::search::check_query_dim(model, query)?;
        self.pool.read(|tx| {
            let uid = scope_uid(scope);
            let Some((row, revision)) = cache_key(tx, uid)? else { return Ok(R::default()) };
            if !self.check_model(tx, model)? || !wanted {
                return Ok(R::default());
            }
            scan(&mut PgSource { tx, uid }, row, revision, &Labels::of(scope))
        })
    }
}

impl Store for PgStore {
    fn ensure_user(&self, tenant: &TenantId, user: &UserId, now: Timestamp) -> Result<UserRecord, StoreError> {
        let uid = user_uid(tenant, user);
        if let Some(record) = self.pool.read(|tx| read_user(tx, uid))? {
            return Ok(record);
        }
        self.pool.write(|tx| {
            tx.execute(
                "INSERT INTO users (uid, tenant, user_key, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (uid) DO NOTHING",
                &[&uid, &tenant.as_str(), &user.as_str(), &millis(now)],
            )?;
            let row = tx.query_one("SELECT user_key, time_zone, created_at, tenant FROM users WHERE uid = $1", &[&uid])?;
            let (stored_tenant, stored_user): (String, String) = (col(&row, 3)?, col(&row, 0)?);
            if stored_tenant != tenant.as_str() || stored_user != user.as_str() {
                return Err(StoreError::Corrupt(format!("the key of user {user} collides with that of another user")));
            }
            user_record(&row)
        })
    }

    fn find_user(&self, tenant: &TenantId, user: &UserId) -> Result<Option<UserRecord>, StoreError> {
        let uid = user_uid(tenant, user);
        self.pool.read(|tx| read_user(tx, uid))
    }

    fn set_time_zone(
        &self,
        tenant: &TenantId,
        user: &UserId,
        time_zone: &str,
        now: Timestamp,
    ) -> Result<UserRecord, StoreError> {
        let zone = membank_core::time::UserTimeZone::parse(time_zone)?;
        self.ensure_user(tenant, user, now)?;
        let uid = user_uid(tenant, user);
        self.pool.write(|tx| {
            tx.execute("UPDATE users SET time_zone = $2 WHERE uid = $1", &[&uid, &zone.name()])?;
            read_user(tx, uid)?.ok_or_else(|| StoreError::NotFound { what: format!("user {user}") })
        })
    }

    fn list_users(&self, tenant: &TenantId) -> Result<Vec<UserRecord>, StoreError> {
        self.pool.read(|tx| {
            tx.query(
                "SELECT user_key, time_zone, created_at FROM users WHERE tenant = $1 ORDER BY row_seq",
                &[&tenant.as_str()],
            )?
            .iter()
            .map(user_record)
            .collect()
        })
    }

    fn insert(&self, new: NewMemory) -> Result<Memory, StoreError> {
        let scope = new.memory.scope.clone();
        self.pool.write(|tx| {
            let uid = existing_user(tx, &scope)?;
            let (_, id) = self.insert_in(tx, uid, new)?;
            Ok(fetch_one(tx, uid, &scope, id)?.1)
        })
    }

    fn insert_many(&self, batch: Vec<NewMemory>) -> Result<usize, StoreError> {
        let n = batch.len();
        self.pool.write(|tx| {
            // Users locked in one order, so two batches over the same users cannot deadlock.
            let mut scopes: Vec<(Uuid, &Scope)> =
                batch.iter().map(|m| (scope_uid(&m.memory.scope), &m.memory.scope)).collect();
            scopes.sort_by_key(|(uid, _)| *uid);
            scopes.dedup_by_key(|(uid, _)| *uid);
            for (_, scope) in scopes {
                existing_user(tx, scope)?;
            }
            // Each run of one user's memories (in batch order) in a few bulk statements, then
            // their `created` events in the same order.
            let mut rows = batch.into_iter().map(|new| (new.memory, new.embedding)).peekable();
            while let Some(first) = rows.next() {
                let uid = scope_uid(&first.0.scope);
                let mut run = vec![first];
                while run.len() < transfer::CHUNK {
                    match rows.next_if(|(memory, _)| scope_uid(&memory.scope) == uid) {
                        Some(next) => run.push(next),
                        None => break,
                    }
                }
                transfer::insert_memories(self, tx, uid, &run)?;
                append_events(tx, uid, &run.iter().map(|(memory, _)| created_event(memory)).collect::<Vec<_>>())?;
            }
            Ok(n)
        })
    }

    fn get(&self, scope: &Scope, id: MemoryId) -> Result<Memory, StoreError> {
        let uid = scope_uid(scope);
        self.pool.read(|tx| Ok(fetch_one(tx, uid, scope, id)?.1))
    }

    fn get_many(&self, scope: &Scope, ids: &[MemoryId]) -> Result<Vec<Memory>, StoreError> {
        let uid = scope_uid(scope);
        self.pool.read(|tx| fetch_many(tx, uid, scope, ids))
    }

    fn list(&self, scope: &Scope, query: &ListQuery) -> Result<Vec<Memory>, StoreError> {
        let uid = scope_uid(scope);
        let statuses: Vec<&str> = if query.statuses.is_empty() {
            vec!["active", "archived", "superseded"]
        } else {
            query.statuses.iter().map(|s| s.as_str()).collect()
        };
        let kinds: Vec<&str> = query.kinds.iter().map(|k| k.as_str()).collect();
        let order = if query.oldest_first { "m.occurred_at ASC, m.seq ASC" } else { "m.occurred_at DESC, m.seq DESC" };
        let columns = crate::types::select_columns(MEMORY_COLUMNS, query.without_text);
        let sql = format!(
            "SELECT {columns} FROM memories m WHERE m.uid = $1 {} AND m.status = ANY($4) AND (cardinality($5::text[]) = 0 OR m.kind = ANY($5))
             AND (NOT $6 OR m.pinned) AND ($7::date IS NULL OR m.day >= $7) AND ($8::date IS NULL OR m.day <= $8)
             ORDER BY {order} LIMIT $9 OFFSET $10",
            label_filter(2)
        );
        let (agent, session) = labels(scope);
        let (limit, offset) =
            (i64::try_from(query.limit).unwrap_or(i64::MAX), i64::try_from(query.offset).unwrap_or(i64::MAX));
        self.pool.read(|tx| {
            tx.query(
                &sql,
                &[
                    &uid,
                    &agent,
                    &session,
                    &statuses,
                    &kinds,
                    &query.pinned_only,
                    &query.day_from,
                    &query.day_to,
                    &limit,
                    &offset,
                ],
            )?
            .iter()
            .map(|row| Ok(row_to_memory(row, &scope.tenant, &scope.user)?.1))
            .collect()
        })
    }

    fn counts(&self, scope: &Scope) -> Result<StatusCounts, StoreError> {
        let uid = scope_uid(scope);
        let sql =
            format!("SELECT m.status, count(*) FROM memories m WHERE m.uid = $1 {} GROUP BY m.status", label_filter(2));
        let (agent, session) = labels(scope);
        self.pool.read(|tx| {
            let mut counts = StatusCounts::default();
            for row in tx.query(&sql, &[&uid, &agent, &session])? {
                let n = col::<i64>(&row, 1)?.max(0) as u64;
                match col::<String>(&row, 0)?.as_str() {
                    "active" => counts.active = n,
                    "archived" => counts.archived = n,
                    "superseded" => counts.superseded = n,
                    "erased" => counts.erased = n,
                    _ => {}
                }
            }
            Ok(counts)
        })
    }

    fn dense_search(
        &self,
        scope: &Scope,
        model: &EmbeddingModel,
        query: &[f32],
        filter: &SearchFilter,
        limit: usize,
    ) -> Result<Vec<Hit>, StoreError> {
        self.with_vectors(scope, model, query, limit > 0, |source, row, revision, labels| {
            let screen = self.dense_screen;
            self.vectors.search(source, row, revision, model.dim, query, filter, labels, limit, screen)
        })
    }

    fn dense_search_tiers(
        &self,
        scope: &Scope,
        model: &EmbeddingModel,
        query: &[f32],
        filter: &SearchFilter,
        limit: usize,
        wide_limit: usize,
    ) -> Result<crate::DenseTiers, StoreError> {
        self.with_vectors(scope, model, query, limit.max(wide_limit) > 0, |source, row, revision, labels| {
            let screen = self.dense_screen;
            self.vectors
                .search_tiers(source, row, revision, model.dim, query, filter, labels, limit, wide_limit, screen)
        })
    }

    fn lexical_search(
        &self,
        scope: &Scope,
        terms: &[String],
        filter: &SearchFilter,
        limit: usize,
    ) -> Result<Vec<Hit>, StoreError> {
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        self.pool.read(|tx| {
            let uid = scope_uid(scope);
            let Some((row, revision)) = cache_key(tx, uid)? else { return Ok(Vec::new()) };
            let labels = Labels::of(scope);
            self.terms.search(&mut PgSource { tx, uid }, row, revision, terms, filter, &labels, limit)
        })
    }

    fn record_recall(
        &self,
        scope: &Scope,
        recall: &RecallRecord,
        strengthen: Option<&ForgettingPolicy>,
    ) -> Result<Vec<Memory>, StoreError> {
        if recall.results.is_empty() {
            return Ok(Vec::new());
        }
        self.pool.write(|tx| {
            let uid = existing_user(tx, scope)?;
            // Re-read under the user's lock: a result archived or erased since the searches
            // read their snapshots is dropped here, not returned or strengthened.
            let ids: Vec<Uuid> = recall.results.iter().map(|(id, _)| id.as_uuid()).collect();
            let sql = format!(
                "SELECT m.id, m.status FROM memories m WHERE m.uid = $1 AND m.id = ANY($2) {}",
                label_filter(3)
            );
            let (agent, session) = labels(scope);
            let mut statuses: HashMap<MemoryId, Status> = HashMap::new();
            for row in tx.query(&sql, &[&uid, &ids, &agent, &session])? {
                statuses.insert(memory_id(col(&row, 0)?)?, parse("status", &col::<String>(&row, 1)?)?);
            }
            // An archived result the recall found in the archive (reminiscence) is eligible
            // too; in an audit recall nothing archived is brought back.
            let reminisced: std::collections::HashSet<MemoryId> = recall.reminisced.iter().copied().collect();
            let eligible: Vec<(MemoryId, f64)> = recall
                .results
                .iter()
                .filter(|(id, _)| match statuses.get(id) {
                    Some(Status::Active) => true,
                    Some(Status::Archived) => recall.include_archived || reminisced.contains(id),
                    Some(Status::Superseded) => recall.include_archived,
                    Some(Status::Erased) | None => false,
                })
                .copied()
                .collect();
            // The first occurrence of each: its place in `eligible`.
            let mut from_archive: Vec<(usize, MemoryId, f64)> = Vec::new();
            if !recall.include_archived {
                for (at, (id, score)) in eligible.iter().enumerate() {
                    if statuses.get(id) == Some(&Status::Archived)
                        && reminisced.contains(id)
                        && !from_archive.iter().any(|(_, seen, _)| seen == id)
                    {
                        from_archive.push((at, *id, *score));
                    }
                }
            }
            let events: Vec<NewEvent> = eligible
                .iter()
                .enumerate()
                .map(|(rank, (id, score))| payload::recalled(*id, recall.now, &recall.query_id, rank + 1, *score))
                .collect();
            append_events(tx, uid, &events)?;
            let ids: Vec<MemoryId> = eligible.iter().map(|(id, _)| *id).collect();
            if let Some(policy) = strengthen {
                // Each memory found in the archive comes back once, with savings; any later
                // occurrence of it in the results is an ordinary strengthening.
                let found: Vec<(MemoryId, Reminiscence<'_>)> = from_archive
                    .iter()
                    .map(|(at, id, score)| {
                        (*id, Reminiscence::Found { query_id: &recall.query_id, rank: at + 1, score: *score })
                    })
                    .collect();
                reminisce_all(tx, uid, &found, policy, recall.now)?;
                let others: Vec<MemoryId> = eligible
                    .iter()
                    .enumerate()
                    .filter(|(at, _)| !from_archive.iter().any(|(first, _, _)| first == at))
                    .map(|(_, (id, _))| *id)
                    .collect();
                strengthen_all(tx, uid, &others, Some(&recall.query_id), policy, recall.now)?;
            }
            if let Some(vector) = &recall.query_vector {
                let keep = strengthen
                    .map_or(membank_core::FadeMemParams::default().recent_queries, |p| p.fademem.recent_queries);
                maintain::remember_query(tx, uid, vector, recall.now, keep)?;
            }
            fetch_many(tx, uid, scope, &ids)
        })
    }

    fn confirm_used(
        &self,
        scope: &Scope,
        ids: &[MemoryId],
        query_id: Option<&str>,
        policy: &ForgettingPolicy,
        now: Timestamp,
    ) -> Result<Vec<Memory>, StoreError> {
        self.pool.write(|tx| {
            let uid = existing_user(tx, scope)?;
            let present = fetch_many(tx, uid, scope, ids)?;
            if let Some(missing) = ids.iter().find(|id| !present.iter().any(|m| m.id == **id)) {
                return Err(StoreError::memory_not_found(missing));
            }
            // A memory confirmed as used while archived was recalled for the reply (a
            // reminiscing recall returned it): its first mention brings it back with savings,
            // any later one is an ordinary strengthening, as in `record_recall`.
            let mut archived: Vec<MemoryId> = Vec::new();
            for id in ids {
                if present.iter().any(|m| m.id == *id && m.status == Status::Archived) && !archived.contains(id) {
                    archived.push(*id);
                }
            }
            let found: Vec<(MemoryId, Reminiscence<'_>)> =
                archived.iter().map(|id| (*id, Reminiscence::Used { query_id })).collect();
            reminisce_all(tx, uid, &found, policy, now)?;
            let mut others = ids.to_vec();
            for id in &archived {
                if let Some(first) = others.iter().position(|other| other == id) {
                    others.remove(first);
                }
            }
            strengthen_all(tx, uid, &others, query_id, policy, now)?;
            fetch_many(tx, uid, scope, ids)
        })
    }

    fn archive(&self, scope: &Scope, id: MemoryId, reason: &str, now: Timestamp) -> Result<Memory, StoreError> {
        self.mutate(scope, id, |tx, uid, seq, memory| {
            if memory.status != Status::Active {
                return Err(StoreError::Conflict(format!(
                    "memory {id} is {}, only an active memory can be forgotten",
                    memory.status
                )));
            }
            set_status(tx, uid, seq, Status::Archived)?;
            append_events(tx, uid, &[payload::archived_on_request(id, now, reason)])
        })
    }

    fn restore(&self, scope: &Scope, id: MemoryId, now: Timestamp) -> Result<Memory, StoreError> {
        self.mutate(scope, id, |tx, uid, seq, memory| {
            if !matches!(memory.status, Status::Archived | Status::Superseded) {
                return Err(StoreError::Conflict(format!("memory {id} is {}, only an archived or superseded memory can be restored", memory.status)));
            }
            set_status(tx, uid, seq, Status::Active)?;
            tx.execute("UPDATE memories SET last_recalled_at = greatest(last_recalled_at, $3), superseded_by = NULL WHERE uid = $1 AND seq = $2", &[&uid, &seq, &millis(now)])?;
            append_events(tx, uid, &[payload::restored(id, now, memory.status, memory.forgetting.last_recalled_at)])
        })
    }

    fn set_pinned(&self, scope: &Scope, id: MemoryId, pinned: bool, now: Timestamp) -> Result<Memory, StoreError> {
        self.mutate(scope, id, |tx, uid, seq, memory| {
            if memory.status == Status::Erased {
                return Err(StoreError::Conflict(format!("memory {id} is erased")));
            }
            if memory.forgetting.pinned == pinned {
                return Ok(());
            }
            tx.execute("UPDATE memories SET pinned = $3 WHERE uid = $1 AND seq = $2", &[&uid, &seq, &pinned])?;
            append_events(tx, uid, &[payload::pinned(id, now, pinned)])
        })
    }

    fn erase(&self, scope: &Scope, id: MemoryId, now: Timestamp) -> Result<Memory, StoreError> {
        erasure::erase(self, scope, id, now)
    }

    fn sweep(
        &self,
        scope: &Scope,
        policy: &ForgettingPolicy,
        now: Timestamp,
        dry_run: bool,
    ) -> Result<SweepReport, StoreError> {
        policy.validate()?;
        let uid = scope_uid(scope);
        let plan_in = |tx: &mut Tx<'_>| -> Result<PlannedSweep, StoreError> {
            let sql = format!(
                "SELECT m.seq, m.id, {FORGETTING_COLUMNS} FROM memories m WHERE m.uid = $1 AND m.status = 'active' {}",
                label_filter(2)
            );
            let (agent, session) = labels(scope);
            let mut rows: Vec<(i64, MemoryId, ForgettingState)> = Vec::new();
            for row in tx.query(&sql, &[&uid, &agent, &session])? {
                rows.push((col(&row, 0)?, memory_id(col(&row, 1)?)?, forgetting_state(&row, 2)?));
            }
            let plan = policy.plan_sweep(rows.iter().map(|(_, id, state)| (*id, state)), now);
            Ok((uid, rows.iter().map(|(seq, id, _)| (*id, *seq)).collect(), plan))
        };
        let report = |plan: membank_core::forgetting::SweepPlan| SweepReport {
            now,
            dry_run,
            examined: plan.examined,
            kept: plan.examined - plan.archive.len(),
            deferred: plan.deferred,
            archived: plan.archive,
        };
        if dry_run {
            return self.pool.read(|tx| Ok(report(plan_in(tx)?.2)));
        }
        self.pool.write(|tx| {
            if !lock_user(tx, uid)? {
                return Ok(report(Default::default()));
            }
            let (_, seqs, plan) = plan_in(tx)?;
            let seq_of: HashMap<MemoryId, i64> = seqs.into_iter().collect();
            let archived: Vec<i64> = plan.archive.iter().map(|a| seq_of[&a.id]).collect();
            if !archived.is_empty() {
                change_status(tx, uid, &archived, Status::Archived, None)?;
                bump_revision(tx, uid)?;
            }
            let mut events: Vec<NewEvent> =
                plan.archive.iter().map(|a| payload::archived(a.id, now, policy.archive_event_data(a))).collect();
            events.push(payload::swept(now, policy, plan.examined, plan.archive.len(), plan.deferred));
            append_events(tx, uid, &events)?;
            Ok(report(plan))
        })
    }

    fn events(&self, scope: &Scope, query: &EventQuery) -> Result<Vec<Event>, StoreError> {
        let uid = scope_uid(scope);
        let limit = if query.limit == 0 { 1000 } else { i64::try_from(query.limit).unwrap_or(i64::MAX) };
        let memory = query.memory_id.map(|id| id.as_uuid());
        let after = query.after_seq.unwrap_or(0);
        self.pool.read(|tx| {
            tx.query(
                "SELECT seq, id, memory_id, kind, at, data FROM events WHERE uid = $1 AND ($2::uuid IS NULL OR memory_id = $2) AND seq > $3 ORDER BY seq LIMIT $4",
                &[&uid, &memory, &after, &limit],
            )?
            .iter()
            .map(read_event)
            .collect()
        })
    }

    fn supersede(&self, scope: &Scope, old: MemoryId, new: NewMemory) -> Result<Memory, StoreError> {
        if new.memory.scope.tenant != scope.tenant || new.memory.scope.user != scope.user {
            return Err(StoreError::Invalid(membank_core::InvalidInput::new(
                "scope",
                "an edit must stay with the same user",
            )));
        }
        self.pool.write(|tx| {
            let uid = existing_user(tx, scope).map_err(not_found_as(old))?;
            let (old_seq, previous) = fetch_one(tx, uid, scope, old)?;
            if previous.status != Status::Active {
                return Err(StoreError::Conflict(format!(
                    "memory {old} is {}, only an active memory can be edited",
                    previous.status
                )));
            }
            let at = new.memory.recorded_at;
            let new_scope = new.memory.scope.clone();
            let (_, new_id) = self.insert_in(tx, uid, new)?;
            change_status(tx, uid, &[old_seq], Status::Superseded, Some(new_id))?;
            bump_revision(tx, uid)?;
            append_events(tx, uid, &[payload::edited(new_id, at, old), payload::superseded_by_edit(old, at, new_id)])?;
            Ok(fetch_one(tx, uid, &new_scope, new_id)?.1)
        })
    }

    fn insert_superseding(&self, new: NewMemory, replaces: &[MemoryId], now: Timestamp) -> Result<Memory, StoreError> {
        let scope = new.memory.scope.clone();
        let kind = new.memory.kind;
        let sources = new.memory.derived_from.len();
        self.pool.write(|tx| {
            let uid = existing_user(tx, &scope)?;
            let (_, id) = self.insert_in(tx, uid, new)?;
            let mut events = Vec::with_capacity(replaces.len() + 1);
            for old in replaces {
                let (seq, memory) = fetch_one(tx, uid, &scope, *old)?;
                if matches!(memory.status, Status::Superseded | Status::Erased) {
                    return Err(StoreError::Conflict(format!(
                        "memory {old} is {} and cannot be superseded again",
                        memory.status
                    )));
                }
                change_status(tx, uid, &[seq], Status::Superseded, Some(id))?;
                events.push(payload::superseded_by_summary(*old, now, id, memory.status));
            }
            if !replaces.is_empty() {
                bump_revision(tx, uid)?;
            }
            events.push(payload::summarized(id, now, kind, sources, replaces));
            append_events(tx, uid, &events)?;
            Ok(fetch_one(tx, uid, &scope, id)?.1)
        })
    }

    fn metadata_index(&self, scope: &Scope, key: &str) -> Result<HashMap<String, MemoryId>, StoreError> {
        lookup::metadata_index(self, scope, key)
    }

    fn adjacent(&self, scope: &Scope, ids: &[MemoryId], filter: &SearchFilter) -> Result<Vec<Adjacent>, StoreError> {
        lookup::adjacent(self, scope, ids, filter)
    }

    fn days_with_memories(
        &self,
        scope: &Scope,
        days: &[NaiveDate],
        filter: &SearchFilter,
    ) -> Result<Vec<NaiveDate>, StoreError> {
        lookup::days_with_memories(self, scope, days, filter)
    }

    fn vectors(&self, scope: &Scope, ids: &[MemoryId]) -> Result<Vec<(MemoryId, Vec<f32>)>, StoreError> {
        maintain::vectors(self, scope, ids)
    }

    fn recent_queries(&self, scope: &Scope, limit: usize) -> Result<Vec<Vec<f32>>, StoreError> {
        maintain::recent_queries(self, scope, limit)
    }

    fn maintenance_state(&self, scope: &Scope) -> Result<MaintenanceState, StoreError> {
        maintain::state(self, scope)
    }

    fn unmaintained(&self, scope: &Scope) -> Result<Unmaintained, StoreError> {
        maintain::unmaintained(self, scope)
    }

    fn users_due_for_maintenance(
        &self,
        before: Timestamp,
        every_turns: Option<u64>,
        limit: usize,
    ) -> Result<Vec<(TenantId, UserId)>, StoreError> {
        maintain::users_due(self, before, every_turns, limit)
    }

    fn apply_maintenance(&self, scope: &Scope, plan: MaintenancePlan) -> Result<MaintenanceApplied, StoreError> {
        maintain::apply(self, scope, plan)
    }

    fn insert_all(&self, batch: Vec<NewMemory>, claim: Option<&IdempotencyClaim>) -> Result<Insertion, StoreError> {
        idempotency::insert_all(self, batch, claim)
    }

    fn idempotency_record(
        &self,
        scope: &Scope,
        key: &str,
        expire_before: Timestamp,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        idempotency::record(self, scope, key, expire_before)
    }

    fn record_idempotent_response(&self, scope: &Scope, key: &str, response: &str) -> Result<(), StoreError> {
        idempotency::respond(self, scope, key, response)
    }

    fn clear_resummarize_due(&self, scope: &Scope) -> Result<(), StoreError> {
        let uid = scope_uid(scope);
        self.pool.write(|tx| {
            tx.execute("UPDATE users SET resummarize_due = false WHERE uid = $1", &[&uid])?;
            Ok(())
        })
    }

    fn export_user(
        &self,
        tenant: &TenantId,
        user: &UserId,
        vectors: bool,
        sink: &mut dyn FnMut(ExportRow) -> Result<(), StoreError>,
    ) -> Result<bool, StoreError> {
        transfer::export_user(self, tenant, user, vectors, sink)
    }

    fn all_users(&self) -> Result<Vec<(TenantId, UserId)>, StoreError> {
        transfer::all_users(self)
    }

    fn import_users(&self, users: Vec<UserImport>, merge: bool) -> Result<ImportCounts, StoreError> {
        transfer::import_users(self, users, merge)
    }

    fn embedding_model(&self) -> Result<Option<EmbeddingModel>, StoreError> {
        if let Some(model) = self.model.get() {
            return Ok(Some(model.clone()));
        }
        self.pool.read(|tx| self.stored_model(tx))
    }

    fn script_census(&self) -> Result<crate::ScriptCensus, StoreError> {
        self.pool.read(|tx| {
            let mut census = crate::ScriptCensus { model: self.stored_model(tx)?, ..Default::default() };
            let params: [&(dyn postgres::types::ToSql + Sync); 0] = [];
            let mut rows = tx.query_iter(
                "SELECT content, user_text, assistant_text FROM memories WHERE status = 'active'",
                &params,
            )?;
            while let Some(row) =
                postgres::fallible_iterator::FallibleIterator::next(&mut rows).map_err(PgError::from)?
            {
                let (content, user_text, assistant_text): (Option<String>, Option<String>, Option<String>) =
                    (col(&row, 0)?, col(&row, 1)?, col(&row, 2)?);
                census.count_memory(content.as_deref(), user_text.as_deref(), assistant_text.as_deref());
            }
            Ok(census)
        })
    }
}

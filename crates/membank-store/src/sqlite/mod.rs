//! The embedded store: one SQLite file in WAL mode.
//!
//! One writer connection behind a mutex (SQLite has one writer at a time anyway) and a
//! pool of `query_only` reader connections, so reads never block on writes and can never
//! write. Every statement filters by the user's row, resolved from `(tenant, user)` first.

mod derived;
mod edit;
mod erasure;
mod group_commit;
mod idempotency;
mod keys;
mod lookup;
mod maintain;
mod schema;
mod source;
mod transfer;
mod txn;
mod wal_purge;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, NaiveDate};
use membank_core::event::{Event, NewEvent};
use membank_core::event_payload as payload;
use membank_core::event_payload::Reminiscence;
use membank_core::forgetting::ForgettingPolicy;
use membank_core::{
    EventId, ForgettingState, Memory, MemoryId, Scope, Status, Strength, TenantId, Timestamp, UserId, text,
};
use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, params};

use group_commit::Tx;

pub use crate::keys::{ApiKeyRecord, ApiKeyStore, NewApiKey};
pub use schema::CURRENT_VERSION;
use source::SqliteSource;

use crate::search::terms::TermCache;
use crate::search::vectors::VectorCache;
use crate::search::{Labels, body_text};

use crate::cache::{CacheBudget, CacheStats, StoreOptions};
use crate::types::*;
use crate::{Store, StoreError};

/// The SQLite implementation of [`Store`].
pub struct SqliteStore {
    path: PathBuf,
    writer: Mutex<Connection>,
    /// Writes waiting for `writer`, committed in groups.
    group_commit: group_commit::GroupCommit,
    readers: Mutex<Vec<Connection>>,
    /// Where both caches keep their users, under one byte budget.
    cache: Arc<CacheBudget>,
    vectors: VectorCache,
    terms: TermCache,
    dense_screen: crate::DenseScreen,
    /// Finishes purges of the WAL that a reader kept an erasure from finishing.
    purger: wal_purge::WalPurger,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("path", &self.path).finish_non_exhaustive()
    }
}

const MEMORY_COLUMNS: &str = "m.seq, m.id, u.tenant, u.user_key, m.agent, m.session, m.kind, m.source, m.content, m.user_text, \
    m.assistant_text, m.occurred_at, m.recorded_at, m.day, m.strength, m.recall_count, m.last_recalled_at, m.pinned, m.layer, \
    m.importance, m.status, m.superseded_by, m.derived_from, m.metadata, m.fade_age, m.access_frequency, m.base_importance, m.decay_factor";

impl SqliteStore {
    /// Opens (creating if absent) the database at `path` and brings its schema up to date,
    /// with the default options (a cache budget of [`crate::DEFAULT_CACHE_MB`] MiB).
    /// Opening never changes memories: no sweep, no re-index.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, StoreOptions::default())
    }

    /// [`SqliteStore::open`] with these options. The cache budget is this handle's: two
    /// handles on one file (or two processes) each keep their own caches.
    pub fn open_with(path: impl AsRef<Path>, options: StoreOptions) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let mut writer = Connection::open(&path)?;
        configure(&writer, false)?;
        schema::migrate(&mut writer)?;
        let cache = Arc::new(CacheBudget::new(options.cache_budget));
        let (vectors, terms) = (VectorCache::new(Arc::clone(&cache)), TermCache::new(Arc::clone(&cache)));
        let purger = wal_purge::WalPurger::start(&path)?;
        Ok(Self {
            purger,
            path,
            writer: Mutex::new(writer),
            group_commit: group_commit::GroupCommit::default(),
            readers: Mutex::new(Vec::new()),
            cache,
            vectors,
            terms,
            dense_screen: options.dense_screen,
        })
    }

    /// The caches' size, budget, hits, misses and evictions now (for metrics).
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open file.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.read(|conn| Ok(conn.query_row("PRAGMA user_version", [], |row| row.get(0))?))
    }

    /// Writes a consistent copy of the database to `to` with `VACUUM INTO`, online: it
    /// reads one snapshot on a connection of its own, so this process's writer and other
    /// processes (a running `serve`) go on writing meanwhile (WAL: readers never block
    /// writers). `to` must not exist yet. The copy is compact and has no WAL of its own.
    pub fn backup(&self, to: &Path) -> Result<(), StoreError> {
        if to.exists() {
            return Err(StoreError::Conflict(format!(
                "{} exists already; a backup never overwrites a file",
                to.display()
            )));
        }
        let target = to.to_str().ok_or_else(|| StoreError::Corrupt("backup path is not UTF-8".into()))?;
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI,
        )?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.execute("VACUUM INTO ?1", [target])?;
        Ok(())
    }

    /// Checks the database file at `path` without opening it as a store (no migration, no
    /// change): its schema version and every check of [`SqliteStore::integrity_check`].
    /// Returns the version and the problems found (empty: healthy).
    pub fn check_file(path: &Path) -> Result<(i64, Vec<String>), StoreError> {
        if !path.is_file() {
            return Err(StoreError::NotFound { what: format!("database file {}", path.display()) });
        }
        let conn =
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(schema::not_a_database)?;
        if version == 0 {
            return Err(StoreError::Corrupt("the file holds no membank schema".into()));
        }
        if version > CURRENT_VERSION {
            return Err(StoreError::NewerSchema { found: version, supported: CURRENT_VERSION });
        }
        Ok((version, check_connection(&conn)?))
    }

    /// [`Store::script_census`] of a database file, read only, without migrating it (for
    /// `membank check FILE`).
    pub fn script_census_file(path: &Path) -> Result<crate::ScriptCensus, StoreError> {
        if !path.is_file() {
            return Err(StoreError::NotFound { what: format!("database file {}", path.display()) });
        }
        let conn =
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        script_census(&conn)
    }

    /// Runs SQLite's integrity check and FTS5's own; returns the problems found (empty: healthy).
    pub fn integrity_check(&self) -> Result<Vec<String>, StoreError> {
        // A fresh connection, not a pooled reader: FTS5's integrity check trusts the index
        // structure a connection has cached, and a pooled reader's cache may predate
        // segment merges made by the writer, which then reads as "corruption found reading
        // blob …" although the index is sound (seen intermittently in the isolation test).
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI,
        )?;
        // Not query_only: FTS5's integrity check is spelled as an INSERT (it changes nothing).
        configure(&conn, false)?;
        check_connection(&conn)
    }

    /// After an erasure committed (`due`: its count in the purge mark): copies the WAL into
    /// the database file and truncates it to zero bytes, so page images of erased content
    /// do not survive in `-wal`, then clears the mark. Waits briefly for readers; when one
    /// holds an older snapshot for longer, or the checkpoint fails (a full disk: copying
    /// the WAL back may need room), the purge thread finishes it later, and the log says
    /// so. It never turns a done erasure into an error that would read as "nothing was
    /// erased".
    pub(super) fn purge_wal(&self, due: i64) {
        let conn = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        // A checkpoint runs outside any transaction: one left open for queued writes
        // commits first.
        self.group_commit.end_open(&conn);
        let attempt = (|| {
            conn.busy_timeout(ERASURE_PURGE_WAIT)?;
            let done = wal_purge::checkpoint(&conn);
            conn.busy_timeout(BUSY_TIMEOUT)?;
            if done? {
                wal_purge::clear(&conn, due)?;
                return Ok(true);
            }
            Ok::<_, StoreError>(false)
        })();
        drop(conn);
        match attempt {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(
                    "erased; a reader holds a snapshot from before the erasure, so the erased text stays in -wal until that reader finishes, and is removed then"
                );
                self.purger.request();
            }
            Err(err) => {
                tracing::error!(error = %err, "erased, but the WAL could not be checkpointed and truncated yet; the erased text stays in -wal until a retry succeeds");
                self.purger.request();
            }
        }
    }

    pub(super) fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let conn = self.readers.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let conn = match conn {
            Some(conn) => conn,
            None => {
                let conn = Connection::open_with_flags(
                    &self.path,
                    OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI,
                )?;
                configure(&conn, true)?;
                conn
            }
        };
        // A deferred transaction gives the closure one consistent snapshot.
        conn.execute_batch("BEGIN")?;
        let result = f(&conn);
        let _ = conn.execute_batch("COMMIT");
        self.readers.lock().unwrap_or_else(|e| e.into_inner()).push(conn);
        result
    }

    /// Runs `f` in a write transaction, shared with the other writes waiting at that
    /// moment ([`group_commit`]); returns once its commit is on disk.
    fn write<T>(&self, f: impl FnOnce(&Tx<'_>) -> Result<T, StoreError>) -> Result<T, StoreError> {
        self.group_commit.write(&self.writer, f)
    }
}

/// Every consistency check of a database: SQLite's own (FTS5 included), vectors without a
/// live memory of the same user, events naming a memory of another user or none, and the
/// full-text index's own integrity check.
fn check_connection(conn: &Connection) -> Result<Vec<String>, StoreError> {
    let mut problems: Vec<String> = conn
        .prepare("PRAGMA integrity_check")?
        .query_map([], |row| row.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .filter(|line| line != "ok")
        .collect();
    let orphans: i64 = conn.query_row("SELECT count(*) FROM embeddings e LEFT JOIN memories m ON m.seq = e.memory_seq WHERE m.seq IS NULL OR m.user_row != e.user_row OR m.status = 'erased'", [], |r| r.get(0))?;
    if orphans > 0 {
        problems.push(format!("{orphans} vectors without a live memory of the same user"));
    }
    let stray: i64 = conn.query_row(
        "SELECT count(*) FROM events e WHERE e.memory_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = e.memory_id AND m.user_row = e.user_row)",
        [],
        |r| r.get(0),
    )?;
    if stray > 0 {
        problems.push(format!("{stray} events about a memory their user does not have"));
    }
    if let Err(err) = conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 0)", []) {
        problems.push(format!("full-text index: {err}"));
    }
    Ok(problems)
}

/// How long a statement waits for another connection's lock before it fails as busy.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// How long an erasure's own checkpoint waits for readers (the writer is held meanwhile);
/// a reader that takes longer leaves the purge to the purge thread.
const ERASURE_PURGE_WAIT: std::time::Duration = std::time::Duration::from_millis(250);

fn configure(conn: &Connection, reader: bool) -> Result<(), StoreError> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Room for every statement the store prepares (rusqlite keeps 16 by default): one
    // pushed out is parsed and planned again at its next use.
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.execute_batch("PRAGMA foreign_keys = ON;").map_err(schema::not_a_database)?;
    if reader {
        // Readers map the file instead of copying each page through read(2): a recall over a
        // large user touches thousands of index and row pages. Writes still go through the
        // writer's ordinary I/O and the WAL, so durability is unchanged.
        conn.execute_batch("PRAGMA query_only = ON; PRAGMA mmap_size = 1073741824;")?;
    } else {
        // WAL: readers never block the writer. FULL: a commit is on disk before we acknowledge it.
        let mode: String =
            conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)).map_err(schema::not_a_database)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Corrupt(format!("could not switch the journal to WAL (got {mode})")));
        }
        // secure_delete: freed space is zeroed, so erased text does not linger in free
        // pages or cells (see erasure.rs); the cost is a little write amplification.
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA secure_delete = ON;")?;
    }
    Ok(())
}

/// Prepared statements each connection keeps: more than the store has cached statements.
const STATEMENT_CACHE: usize = 96;

fn millis(t: Timestamp) -> i64 {
    t.timestamp_millis()
}

fn from_millis(ms: i64) -> Result<Timestamp, rusqlite::Error> {
    DateTime::from_timestamp_millis(ms).ok_or_else(|| rusqlite::Error::IntegralValueOutOfRange(0, ms))
}

fn corrupt<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> rusqlite::Error {
    move |e| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, format!("bad {what}: {e}").into())
    }
}

fn row_to_memory(row: &Row<'_>) -> rusqlite::Result<Memory> {
    let text = |i: usize| row.get::<_, String>(i);
    let derived: Vec<String> = serde_json::from_str(&text(22)?).map_err(corrupt("derived_from"))?;
    Ok(Memory {
        id: text(1)?.parse().map_err(corrupt("id"))?,
        scope: Scope {
            tenant: TenantId::new(&text(2)?).map_err(corrupt("tenant"))?,
            user: UserId::new(&text(3)?).map_err(corrupt("user"))?,
            agent: row
                .get::<_, Option<String>>(4)?
                .map(|a| membank_core::AgentLabel::new(&a))
                .transpose()
                .map_err(corrupt("agent"))?,
            session: row
                .get::<_, Option<String>>(5)?
                .map(|s| membank_core::AgentLabel::new(&s))
                .transpose()
                .map_err(corrupt("session"))?,
        },
        kind: text(6)?.parse().map_err(corrupt("kind"))?,
        source: text(7)?.parse().map_err(corrupt("source"))?,
        content: row.get(8)?,
        user_text: row.get(9)?,
        assistant_text: row.get(10)?,
        occurred_at: from_millis(row.get(11)?)?,
        recorded_at: from_millis(row.get(12)?)?,
        day: NaiveDate::parse_from_str(&text(13)?, "%Y-%m-%d").map_err(corrupt("day"))?,
        forgetting: ForgettingState {
            strength: Strength::new(row.get(14)?).map_err(corrupt("strength"))?,
            recall_count: row.get(15)?,
            last_recalled_at: from_millis(row.get(16)?)?,
            pinned: row.get(17)?,
            layer: text(18)?.parse().map_err(corrupt("layer"))?,
            importance: row.get(19)?,
            fade_age: row.get(24)?,
            access_frequency: row.get(25)?,
            base_importance: row.get(26)?,
            decay_factor: row.get(27)?,
        },
        status: text(20)?.parse().map_err(corrupt("status"))?,
        superseded_by: row
            .get::<_, Option<String>>(21)?
            .map(|s| s.parse())
            .transpose()
            .map_err(corrupt("superseded_by"))?,
        derived_from: derived.iter().map(|s| s.parse()).collect::<Result<_, _>>().map_err(corrupt("derived_from"))?,
        metadata: serde_json::from_str(&text(23)?).map_err(corrupt("metadata"))?,
    })
}

/// The user's row and revision, if the user exists.
pub(super) fn user_row(conn: &Connection, tenant: &TenantId, user: &UserId) -> Result<Option<(i64, i64)>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT id, revision FROM users WHERE tenant = ?1 AND user_key = ?2")?
        .query_row(params![tenant.as_str(), user.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?)
}

fn user_record(conn: &Connection, row: i64) -> Result<UserRecord, StoreError> {
    Ok(conn
        .prepare_cached("SELECT user_key, time_zone, created_at FROM users WHERE id = ?1")?
        .query_row([row], |r| {
            Ok(UserRecord { user: r.get(0)?, time_zone: r.get(1)?, created_at: from_millis(r.get(2)?)? })
        })?)
}

/// The row's owner, for statements that find their rows by id (`:user` bound by the caller).
///
/// The unary `+` keeps the planner from weighing the user's indexes for this term. Written
/// as a plain `m.user_row = :user`, SQLite (the bundled 3.54) marked the statement to be
/// compiled again whenever `:user` was bound, so every `get_many` of a recall parsed and
/// planned its SQL anew: 5 % of all CPU time of a server under 32 clients
/// (`sqlite3Reprepare` in a profile; the test below reads the statements' counters). The
/// id is unique, so the plan is one seek per id either way.
const SAME_USER: &str = "+m.user_row = :user";

/// A row by its id (`:id` bound by the caller). As a bare `m.id = :id`, the statement was
/// compiled again at every bind too (`fetch_one`, ten times in a strengthening recall's
/// write); as an expression, `+:id`, it is not, and the plan is still the id index's seek.
const BY_ID: &str = "m.id = +:id";

/// SQL narrowing to the scope's agent/session labels (`?A` and `?S` bound by the caller).
const LABEL_FILTER: &str = "AND (:agent IS NULL OR m.agent = :agent) AND (:session IS NULL OR m.session = :session)";

/// One memory by id `:id`, of the user `:user`, in the scope's labels (written once: it
/// runs ten times in a strengthening recall's write).
fn fetch_one_sql() -> &'static str {
    static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "SELECT {MEMORY_COLUMNS} FROM memories m JOIN users u ON u.id = m.user_row WHERE {BY_ID} AND {SAME_USER} {LABEL_FILTER}"
        )
    });
    &SQL
}

/// The memories of a JSON array of ids `:ids`, of the user `:user`, in the scope's labels.
/// CROSS JOIN keeps the id list as the outer loop: each id is one seek on the id index.
/// Left to itself the planner walked all of the user's rows.
fn get_many_sql() -> &'static str {
    static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "SELECT {MEMORY_COLUMNS} FROM json_each(:ids) j CROSS JOIN memories m ON m.id = j.value JOIN users u ON u.id = m.user_row
             WHERE {SAME_USER} {LABEL_FILTER}"
        )
    });
    &SQL
}

fn fetch_one(conn: &Connection, user: i64, scope: &Scope, id: MemoryId) -> Result<(i64, Memory), StoreError> {
    conn.prepare_cached(fetch_one_sql())?
        .query_row(
            rusqlite::named_params! { ":id": id.to_string(), ":user": user, ":agent": scope.agent.as_ref().map(|a| a.as_str()), ":session": scope.session.as_ref().map(|s| s.as_str()) },
            |row| Ok((row.get::<_, i64>(0)?, row_to_memory(row)?)),
        )
        .optional()?
        .ok_or_else(|| StoreError::memory_not_found(id))
}

fn append_event(tx: &Tx<'_>, user: i64, event: &NewEvent) -> Result<(), StoreError> {
    tx.prepare_cached("INSERT INTO events (id, user_row, memory_id, kind, at, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?
        .execute(params![
            EventId::generate(event.at).to_string(),
            user,
            event.memory_id.map(|id| id.to_string()),
            event.kind.as_str(),
            millis(event.at),
            event.data.to_string(),
        ])?;
    Ok(())
}

fn bump_revision(tx: &Tx<'_>, user: i64) -> Result<(), StoreError> {
    tx.prepare_cached("UPDATE users SET revision = revision + 1 WHERE id = ?1")?.execute([user])?;
    Ok(())
}

/// What the full-text index holds for a memory: for turns both sides without labels.
fn index_body(memory: &Memory) -> String {
    index_body_of(memory.content.as_deref(), memory.user_text.as_deref(), memory.assistant_text.as_deref())
}

/// The full-text index's body of a row with these texts. Erasure removes a row from the
/// (contentless) index by handing FTS5 this same body again, so it must stay what the row
/// was indexed with: a change to it (or to `text::index_text`) needs a migration that
/// rebuilds `memory_fts`, as v6 does (`schema::rebuild_fts`).
fn index_body_of(content: Option<&str>, user_text: Option<&str>, assistant_text: Option<&str>) -> String {
    text::index_text(&body_text(content, user_text, assistant_text))
}

fn scope_tag(user: i64) -> String {
    format!("u{user}")
}

/// The model recorded by the store's first vector, if any.
fn stored_model(conn: &Connection) -> Result<Option<EmbeddingModel>, StoreError> {
    let stored: Option<(String, String)> = conn
        .prepare_cached("SELECT (SELECT value FROM store_meta WHERE key = 'embedding_model'), (SELECT value FROM store_meta WHERE key = 'embedding_dim')")?
        .query_row([], |row| {
            Ok(row.get::<_, Option<String>>(0)?.zip(row.get::<_, Option<String>>(1)?))
        })?;
    stored
        .map(|(id, dim)| {
            Ok(EmbeddingModel { id, dim: dim.parse().map_err(|_| StoreError::Corrupt("bad embedding_dim".into()))? })
        })
        .transpose()
}

fn check_model(conn: &Connection, model: &EmbeddingModel) -> Result<bool, StoreError> {
    match stored_model(conn)? {
        None => Ok(false),
        Some(stored) => {
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
    }
}

/// [`Store::script_census`] on one connection: every active memory's texts, one pass.
fn script_census(conn: &Connection) -> Result<crate::ScriptCensus, StoreError> {
    let mut census = crate::ScriptCensus { model: stored_model(conn)?, ..Default::default() };
    let mut stmt = conn.prepare("SELECT content, user_text, assistant_text FROM memories WHERE status = 'active'")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let (content, user_text, assistant_text): (Option<String>, Option<String>, Option<String>) =
            (row.get(0)?, row.get(1)?, row.get(2)?);
        census.count_memory(content.as_deref(), user_text.as_deref(), assistant_text.as_deref());
    }
    Ok(census)
}

/// A sweep's plan for one user: the user's row, each examined memory's row, the plan.
type PlannedSweep = (i64, Vec<(MemoryId, i64)>, membank_core::forgetting::SweepPlan);

/// Changes a memory's status and logs why, in the caller's transaction.
fn set_status(tx: &Tx<'_>, user: i64, seq: i64, status: Status) -> Result<(), StoreError> {
    tx.prepare_cached("UPDATE memories SET status = ?1 WHERE seq = ?2 AND user_row = ?3")?.execute(params![
        status.as_str(),
        seq,
        user
    ])?;
    bump_revision(tx, user)
}

impl SqliteStore {
    /// Resolves the scope's user for a write, or fails with NotFound.
    fn existing_user(tx: &Connection, scope: &Scope) -> Result<i64, StoreError> {
        user_row(tx, &scope.tenant, &scope.user)?
            .map(|(row, _)| row)
            .ok_or_else(|| StoreError::NotFound { what: format!("user {}", scope.user) })
    }

    fn mutate(
        &self,
        scope: &Scope,
        id: MemoryId,
        f: impl FnOnce(&Tx<'_>, i64, i64, &Memory) -> Result<(), StoreError>,
    ) -> Result<Memory, StoreError> {
        self.write(|tx| {
            let user = Self::existing_user(tx, scope).map_err(|_| StoreError::memory_not_found(id))?;
            let (seq, memory) = fetch_one(tx, user, scope, id)?;
            f(tx, user, seq, &memory)?;
            Ok(fetch_one(tx, user, scope, id)?.1)
        })
    }
}

impl SqliteStore {
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
        self.read(|conn| {
            let Some((user, revision)) = user_row(conn, &scope.tenant, &scope.user)? else { return Ok(R::default()) };
            if !check_model(conn, model)? || !wanted {
                return Ok(R::default());
            }
            scan(&mut SqliteSource { conn, user_row: user }, user, revision, &Labels::of(scope))
        })
    }
}

impl Store for SqliteStore {
    fn ensure_user(&self, tenant: &TenantId, user: &UserId, now: Timestamp) -> Result<UserRecord, StoreError> {
        if let Some((row, _)) = self.read(|conn| user_row(conn, tenant, user))? {
            return self.read(|conn| user_record(conn, row));
        }
        self.write(|tx| {
            tx.prepare_cached("INSERT INTO users (tenant, user_key, created_at) VALUES (?1, ?2, ?3) ON CONFLICT (tenant, user_key) DO NOTHING")?
                .execute(params![tenant.as_str(), user.as_str(), millis(now)])?;
            let (row, _) = user_row(tx, tenant, user)?.ok_or_else(|| StoreError::Corrupt("user vanished after insert".into()))?;
            user_record(tx, row)
        })
    }

    fn find_user(&self, tenant: &TenantId, user: &UserId) -> Result<Option<UserRecord>, StoreError> {
        self.read(|conn| user_row(conn, tenant, user)?.map(|(row, _)| user_record(conn, row)).transpose())
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
        self.write(|tx| {
            tx.execute(
                "UPDATE users SET time_zone = ?1 WHERE tenant = ?2 AND user_key = ?3",
                params![zone.name(), tenant.as_str(), user.as_str()],
            )?;
            let (row, _) =
                user_row(tx, tenant, user)?.ok_or_else(|| StoreError::NotFound { what: format!("user {user}") })?;
            user_record(tx, row)
        })
    }

    fn list_users(&self, tenant: &TenantId) -> Result<Vec<UserRecord>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare("SELECT id FROM users WHERE tenant = ?1 ORDER BY id")?;
            let rows: Vec<i64> = stmt.query_map([tenant.as_str()], |r| r.get(0))?.collect::<Result<_, _>>()?;
            rows.into_iter().map(|row| user_record(conn, row)).collect()
        })
    }

    fn insert(&self, new: NewMemory) -> Result<Memory, StoreError> {
        self.write(|tx| {
            let (user, id) = insert_in(tx, new.clone())?;
            Ok(fetch_one(tx, user, &new.memory.scope, id)?.1)
        })
    }

    fn insert_many(&self, batch: Vec<NewMemory>) -> Result<usize, StoreError> {
        let n = batch.len();
        self.write(|tx| {
            for new in batch {
                insert_in(tx, new)?;
            }
            Ok(n)
        })
    }

    fn get(&self, scope: &Scope, id: MemoryId) -> Result<Memory, StoreError> {
        self.read(|conn| {
            let user = user_row(conn, &scope.tenant, &scope.user)?.ok_or_else(|| StoreError::memory_not_found(id))?.0;
            Ok(fetch_one(conn, user, scope, id)?.1)
        })
    }

    fn get_many(&self, scope: &Scope, ids: &[MemoryId]) -> Result<Vec<Memory>, StoreError> {
        self.read(|conn| {
            let Some((user, _)) = user_row(conn, &scope.tenant, &scope.user)? else { return Ok(Vec::new()) };
            // One statement for the whole list (ids travel as one JSON array parameter).
            let list = serde_json::to_string(&ids.iter().map(|id| id.to_string()).collect::<Vec<_>>()).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            let mut stmt = conn.prepare_cached(get_many_sql())?;
            let rows = stmt.query_map(
                rusqlite::named_params! { ":ids": list, ":user": user, ":agent": scope.agent.as_ref().map(|a| a.as_str()), ":session": scope.session.as_ref().map(|s| s.as_str()) },
                row_to_memory,
            )?;
            let mut found: std::collections::HashMap<MemoryId, Memory> = std::collections::HashMap::with_capacity(ids.len());
            for row in rows {
                let memory = row?;
                found.insert(memory.id, memory);
            }
            Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
        })
    }

    fn list(&self, scope: &Scope, query: &ListQuery) -> Result<Vec<Memory>, StoreError> {
        self.read(|conn| {
            let Some((user, _)) = user_row(conn, &scope.tenant, &scope.user)? else { return Ok(Vec::new()) };
            let columns = crate::types::select_columns(MEMORY_COLUMNS, query.without_text);
            let mut sql = format!("SELECT {columns} FROM memories m JOIN users u ON u.id = m.user_row WHERE m.user_row = :user {LABEL_FILTER}");
            let statuses: Vec<&str> = if query.statuses.is_empty() { vec!["active", "archived", "superseded"] } else { query.statuses.iter().map(|s| s.as_str()).collect() };
            sql.push_str(&format!(" AND m.status IN ({})", quoted_list(&statuses)));
            if !query.kinds.is_empty() {
                let kinds: Vec<&str> = query.kinds.iter().map(|k| k.as_str()).collect();
                sql.push_str(&format!(" AND m.kind IN ({})", quoted_list(&kinds)));
            }
            if query.pinned_only {
                sql.push_str(" AND m.pinned = 1");
            }
            // A day bound is written only when given: `(:from IS NULL OR m.day >= :from)` kept
            // the planner off the day index, so a day's summaries at 100k memories read all
            // of the person's rows (25 ms a recall with a time in its question).
            let (from, to) =
                (query.day_from.map(|d| d.format("%Y-%m-%d").to_string()), query.day_to.map(|d| d.format("%Y-%m-%d").to_string()));
            if from.is_some() {
                sql.push_str(" AND m.day >= :from");
            }
            if to.is_some() {
                sql.push_str(" AND m.day <= :to");
            }
            sql.push_str(if query.oldest_first { " ORDER BY m.occurred_at ASC, m.seq ASC" } else { " ORDER BY m.occurred_at DESC, m.seq DESC" });
            sql.push_str(" LIMIT :limit OFFSET :offset");
            let mut stmt = conn.prepare(&sql)?;
            let (agent, session) = (scope.agent.as_ref().map(|a| a.as_str()), scope.session.as_ref().map(|s| s.as_str()));
            let (limit, offset) = (query.limit as i64, query.offset as i64);
            let mut params: Vec<(&str, &dyn rusqlite::ToSql)> =
                vec![(":user", &user), (":agent", &agent), (":session", &session), (":limit", &limit), (":offset", &offset)];
            if let Some(from) = &from {
                params.push((":from", from));
            }
            if let Some(to) = &to {
                params.push((":to", to));
            }
            let rows = stmt.query_map(params.as_slice(), row_to_memory)?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }

    fn counts(&self, scope: &Scope) -> Result<StatusCounts, StoreError> {
        self.read(|conn| {
            let mut counts = StatusCounts::default();
            let Some((user, _)) = user_row(conn, &scope.tenant, &scope.user)? else { return Ok(counts) };
            let sql = format!("SELECT m.status, count(*) FROM memories m WHERE m.user_row = :user {LABEL_FILTER} GROUP BY m.status");
            let mut stmt = conn.prepare(&sql)?;
            let mut rows = stmt.query(rusqlite::named_params! { ":user": user, ":agent": scope.agent.as_ref().map(|a| a.as_str()), ":session": scope.session.as_ref().map(|s| s.as_str()) })?;
            while let Some(row) = rows.next()? {
                let n = row.get::<_, i64>(1)?.max(0) as u64;
                match row.get::<_, String>(0)?.as_str() {
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
        self.read(|conn| {
            let Some((user, revision)) = user_row(conn, &scope.tenant, &scope.user)? else { return Ok(Vec::new()) };
            let labels = Labels::of(scope);
            self.terms.search(&mut SqliteSource { conn, user_row: user }, user, revision, terms, filter, &labels, limit)
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
        self.write(|tx| {
            let user = Self::existing_user(tx, scope)?;
            // Re-read in the write transaction: a result archived or erased since the
            // searches read their snapshots is dropped here, not returned or strengthened.
            // An archived result the recall found in the archive (reminiscence) is eligible
            // too; in an audit recall nothing archived is brought back.
            let reminisced: std::collections::HashSet<MemoryId> = recall.reminisced.iter().copied().collect();
            let mut eligible = Vec::with_capacity(recall.results.len());
            let mut from_archive: Vec<(usize, MemoryId, f64)> = Vec::new();
            let sql = format!("SELECT m.status FROM memories m WHERE {BY_ID} AND {SAME_USER} {LABEL_FILTER}");
            for (id, score) in &recall.results {
                let status: Option<String> = tx
                    .prepare_cached(&sql)?
                    .query_row(
                        rusqlite::named_params! { ":id": id.to_string(), ":user": user, ":agent": scope.agent.as_ref().map(|a| a.as_str()), ":session": scope.session.as_ref().map(|s| s.as_str()) },
                        |row| row.get(0),
                    )
                    .optional()?;
                let Some(status) = status else { continue };
                let status = status.parse::<Status>().map_err(|_| StoreError::Corrupt(format!("bad status {status:?}")))?;
                let back = status == Status::Archived
                    && !recall.include_archived
                    && reminisced.contains(id)
                    && !from_archive.iter().any(|(_, seen, _)| seen == id);
                let ok = match status {
                    Status::Active => true,
                    Status::Archived => recall.include_archived || reminisced.contains(id),
                    Status::Superseded => recall.include_archived,
                    Status::Erased => false,
                };
                if back {
                    from_archive.push((eligible.len(), *id, *score));
                }
                if ok {
                    eligible.push((*id, *score));
                }
            }
            for (rank, (id, score)) in eligible.iter().enumerate() {
                append_event(tx, user, &payload::recalled(*id, recall.now, &recall.query_id, rank + 1, *score))?;
            }
            if let Some(policy) = strengthen {
                // Each memory found in the archive comes back once, with savings; any later
                // occurrence of it in the results is an ordinary strengthening.
                for (at, id, score) in &from_archive {
                    let found = Reminiscence::Found { query_id: &recall.query_id, rank: at + 1, score: *score };
                    reminisce_one(tx, user, *id, found, policy, recall.now)?;
                }
                let ids: Vec<MemoryId> = eligible
                    .iter()
                    .enumerate()
                    .filter(|(at, _)| !from_archive.iter().any(|(first, _, _)| first == at))
                    .map(|(_, (id, _))| *id)
                    .collect();
                strengthen_all(tx, user, &ids, Some(&recall.query_id), policy, recall.now)?;
            }
            if let Some(vector) = &recall.query_vector {
                let keep = strengthen.map_or(membank_core::FadeMemParams::default().recent_queries, |p| p.fademem.recent_queries);
                maintain::remember_query(tx, user, vector, recall.now, keep)?;
            }
            let mut out = Vec::new();
            for (id, _) in &eligible {
                out.push(fetch_one(tx, user, scope, *id)?.1);
            }
            Ok(out)
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
        self.write(|tx| {
            let user = Self::existing_user(tx, scope)?;
            // A memory confirmed as used while archived was recalled for the reply (a
            // reminiscing recall returned it): its first mention brings it back with savings,
            // any later one is an ordinary strengthening, as in `record_recall`.
            let mut archived = Vec::new();
            for id in ids {
                let (_, memory) = fetch_one(tx, user, scope, *id)?;
                if memory.status == Status::Archived && !archived.contains(id) {
                    archived.push(*id);
                }
            }
            for id in &archived {
                reminisce_one(tx, user, *id, Reminiscence::Used { query_id }, policy, now)?;
            }
            let mut others = ids.to_vec();
            for id in &archived {
                if let Some(first) = others.iter().position(|other| other == id) {
                    others.remove(first);
                }
            }
            strengthen_all(tx, user, &others, query_id, policy, now)?;
            ids.iter().map(|id| Ok(fetch_one(tx, user, scope, *id)?.1)).collect()
        })
    }

    fn archive(&self, scope: &Scope, id: MemoryId, reason: &str, now: Timestamp) -> Result<Memory, StoreError> {
        self.mutate(scope, id, |tx, user, seq, memory| {
            if memory.status != Status::Active {
                return Err(StoreError::Conflict(format!(
                    "memory {id} is {}, only an active memory can be forgotten",
                    memory.status
                )));
            }
            set_status(tx, user, seq, Status::Archived)?;
            append_event(tx, user, &payload::archived_on_request(id, now, reason))
        })
    }

    fn restore(&self, scope: &Scope, id: MemoryId, now: Timestamp) -> Result<Memory, StoreError> {
        self.mutate(scope, id, |tx, user, seq, memory| {
            if !matches!(memory.status, Status::Archived | Status::Superseded) {
                return Err(StoreError::Conflict(format!(
                    "memory {id} is {}, only an archived or superseded memory can be restored",
                    memory.status
                )));
            }
            set_status(tx, user, seq, Status::Active)?;
            tx.execute(
                "UPDATE memories SET last_recalled_at = max(last_recalled_at, ?1), superseded_by = NULL WHERE seq = ?2",
                params![millis(now), seq],
            )?;
            append_event(tx, user, &payload::restored(id, now, memory.status, memory.forgetting.last_recalled_at))
        })
    }

    fn set_pinned(&self, scope: &Scope, id: MemoryId, pinned: bool, now: Timestamp) -> Result<Memory, StoreError> {
        self.mutate(scope, id, |tx, user, seq, memory| {
            if memory.status == Status::Erased {
                return Err(StoreError::Conflict(format!("memory {id} is erased")));
            }
            if memory.forgetting.pinned == pinned {
                return Ok(());
            }
            tx.execute("UPDATE memories SET pinned = ?1 WHERE seq = ?2", params![pinned, seq])?;
            append_event(tx, user, &payload::pinned(id, now, pinned))
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
        let plan_in = |conn: &Connection| -> Result<Option<PlannedSweep>, StoreError> {
            let Some((user, _)) = user_row(conn, &scope.tenant, &scope.user)? else { return Ok(None) };
            let sql = format!(
                "SELECT m.seq, m.id, {FORGETTING_COLUMNS} FROM memories m
                 WHERE m.user_row = :user AND m.status = 'active' {LABEL_FILTER}"
            );
            let mut stmt = conn.prepare_cached(&sql)?;
            let rows = stmt.query_map(
                rusqlite::named_params! { ":user": user, ":agent": scope.agent.as_ref().map(|a| a.as_str()), ":session": scope.session.as_ref().map(|s| s.as_str()) },
                |row| {
                    let id: MemoryId = row.get::<_, String>(1)?.parse().map_err(corrupt("id"))?;
                    let state = forgetting_state(row, 2)?;
                    Ok((row.get::<_, i64>(0)?, id, state))
                },
            )?;
            let rows: Vec<(i64, MemoryId, ForgettingState)> = rows.collect::<Result<_, _>>()?;
            let plan = policy.plan_sweep(rows.iter().map(|(_, id, state)| (*id, state)), now);
            Ok(Some((user, rows.iter().map(|(seq, id, _)| (*id, *seq)).collect(), plan)))
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
            return self.read(|conn| Ok(report(plan_in(conn)?.map(|(_, _, plan)| plan).unwrap_or_default())));
        }
        self.write(|tx| {
            let Some((user, seqs, plan)) = plan_in(tx)? else { return Ok(report(Default::default())) };
            let seq_of: std::collections::HashMap<MemoryId, i64> = seqs.into_iter().collect();
            for assessment in &plan.archive {
                let seq = seq_of[&assessment.id];
                tx.prepare_cached("UPDATE memories SET status = 'archived' WHERE seq = ?1 AND user_row = ?2")?
                    .execute(params![seq, user])?;
                append_event(tx, user, &payload::archived(assessment.id, now, policy.archive_event_data(assessment)))?;
            }
            if !plan.archive.is_empty() {
                bump_revision(tx, user)?;
            }
            append_event(tx, user, &payload::swept(now, policy, plan.examined, plan.archive.len(), plan.deferred))?;
            Ok(report(plan))
        })
    }

    fn supersede(&self, scope: &Scope, old: MemoryId, new: NewMemory) -> Result<Memory, StoreError> {
        edit::supersede(self, scope, old, new)
    }

    fn events(&self, scope: &Scope, query: &EventQuery) -> Result<Vec<Event>, StoreError> {
        self.read(|conn| {
            let Some((user, _)) = user_row(conn, &scope.tenant, &scope.user)? else { return Ok(Vec::new()) };
            let limit = if query.limit == 0 { 1000 } else { query.limit };
            let mut stmt = conn.prepare_cached(
                "SELECT seq, id, memory_id, kind, at, data FROM events WHERE user_row = :user
                 AND (:memory IS NULL OR memory_id = :memory) AND seq > :after ORDER BY seq LIMIT :limit",
            )?;
            let rows = stmt.query_map(
                rusqlite::named_params! { ":user": user, ":memory": query.memory_id.map(|id| id.to_string()), ":after": query.after_seq.unwrap_or(0), ":limit": limit as i64 },
                |row| {
                    Ok(Event {
                        seq: row.get(0)?,
                        id: row.get::<_, String>(1)?.parse().map_err(corrupt("event id"))?,
                        memory_id: row.get::<_, Option<String>>(2)?.map(|s| s.parse()).transpose().map_err(corrupt("memory id"))?,
                        kind: row.get::<_, String>(3)?.parse().map_err(corrupt("event kind"))?,
                        at: from_millis(row.get(4)?)?,
                        data: serde_json::from_str(&row.get::<_, String>(5)?).map_err(corrupt("event data"))?,
                    })
                },
            )?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }

    fn insert_superseding(&self, new: NewMemory, replaces: &[MemoryId], now: Timestamp) -> Result<Memory, StoreError> {
        derived::insert_superseding(self, new, replaces, now)
    }

    fn metadata_index(
        &self,
        scope: &Scope,
        key: &str,
    ) -> Result<std::collections::HashMap<String, MemoryId>, StoreError> {
        lookup::metadata_index(self, scope, key)
    }

    fn adjacent(&self, scope: &Scope, ids: &[MemoryId], filter: &SearchFilter) -> Result<Vec<Adjacent>, StoreError> {
        lookup::adjacent(self, scope, ids, filter)
    }

    fn days_with_memories(
        &self,
        scope: &Scope,
        days: &[chrono::NaiveDate],
        filter: &SearchFilter,
    ) -> Result<Vec<chrono::NaiveDate>, StoreError> {
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
        self.write(|tx| {
            tx.execute(
                "UPDATE users SET resummarize_due = 0 WHERE tenant = ?1 AND user_key = ?2",
                params![scope.tenant.as_str(), scope.user.as_str()],
            )?;
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
        self.read(stored_model)
    }

    fn script_census(&self) -> Result<crate::ScriptCensus, StoreError> {
        self.read(script_census)
    }
}

/// Inserts one memory with its vector, index row and event, in the caller's transaction.
fn insert_in(tx: &Tx<'_>, new: NewMemory) -> Result<(i64, MemoryId), StoreError> {
    let (user, _, memory) = insert_row(tx, new)?;
    append_event(tx, user, &payload::created(&memory, |t| t))?;
    Ok((user, memory.id))
}

/// Inserts one memory with its vector and index row, without an event (imports bring
/// their own log); returns the user's row, the memory's row and the memory.
fn insert_row(tx: &Tx<'_>, new: NewMemory) -> Result<(i64, i64, Memory), StoreError> {
    let memory = new.memory;
    if let Some((model, vector)) = &new.embedding
        && (vector.len() != model.dim || vector.iter().any(|x| !x.is_finite()))
    {
        return Err(StoreError::Invalid(membank_core::InvalidInput::new(
            "embedding",
            format!("expected {} finite numbers, got {}", model.dim, vector.len()),
        )));
    }
    let user = SqliteStore::existing_user(tx, &memory.scope)?;
    let derived: Vec<String> = memory.derived_from.iter().map(ToString::to_string).collect();
    tx.prepare_cached(
        "INSERT INTO memories (id, user_row, agent, session, kind, source, content, user_text, assistant_text, occurred_at, recorded_at, day,
          strength, recall_count, last_recalled_at, pinned, layer, importance, status, superseded_by, derived_from, metadata,
          fade_age, access_frequency, base_importance, decay_factor)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26)",
    )?
    .execute(params![
        memory.id.to_string(),
        user,
        memory.scope.agent.as_ref().map(|a| a.as_str()),
        memory.scope.session.as_ref().map(|s| s.as_str()),
        memory.kind.as_str(),
        memory.source.as_str(),
        &memory.content,
        &memory.user_text,
        &memory.assistant_text,
        millis(memory.occurred_at),
        millis(memory.recorded_at),
        memory.day.format("%Y-%m-%d").to_string(),
        memory.forgetting.strength.get(),
        memory.forgetting.recall_count,
        millis(memory.forgetting.last_recalled_at),
        memory.forgetting.pinned,
        memory.forgetting.layer.as_str(),
        memory.forgetting.importance,
        memory.status.as_str(),
        memory.superseded_by.map(|id| id.to_string()),
        serde_json::to_string(&derived).map_err(|e| StoreError::Corrupt(e.to_string()))?,
        serde_json::to_string(&memory.metadata).map_err(|e| StoreError::Corrupt(e.to_string()))?,
        finite_or(memory.forgetting.fade_age, 0.0).max(0.0),
        finite_or(memory.forgetting.access_frequency, 0.0).max(0.0),
        finite01(memory.forgetting.base_importance, 0.5),
        finite_or(memory.forgetting.decay_factor, 1.0).max(f64::MIN_POSITIVE),
    ])?;
    let seq = tx.last_insert_rowid();
    if let Some((model, vector)) = &new.embedding {
        if !check_model(tx, model)? {
            tx.execute(
                "INSERT INTO store_meta (key, value) VALUES ('embedding_model', ?1), ('embedding_dim', ?2)",
                params![model.id, model.dim.to_string()],
            )?;
        }
        let blob: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
        tx.prepare_cached(
            "INSERT INTO embeddings (memory_seq, user_row, model, dim, vector) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![seq, user, model.id, model.dim as i64, blob])?;
    }
    if memory.status != Status::Erased {
        tx.prepare_cached("INSERT INTO memory_fts (rowid, scope_tag, body) VALUES (?1, ?2, ?3)")?.execute(params![
            seq,
            scope_tag(user),
            index_body(&memory)
        ])?;
    }
    Ok((user, seq, memory))
}

/// `S` as the policy says (`S += 1`, or unchanged for a second recall in a day under spaced
/// strengthening), `recall_count += 1`, `last_recalled_at = max(last, now)` and FadeMem's
/// reinforcement, one UPDATE per memory inside the caller's IMMEDIATE transaction. The new
/// strength, FadeMem's `v0` and frequency are computed by [`ForgettingPolicy::strengthen`]
/// from the row read in the same transaction, which holds the write lock, so concurrent
/// recalls (other threads or processes) never lose an update.
fn strengthen_all(
    tx: &Tx<'_>,
    user: i64,
    ids: &[MemoryId],
    query_id: Option<&str>,
    policy: &ForgettingPolicy,
    now: Timestamp,
) -> Result<(), StoreError> {
    for id in ids {
        let row = tx
            .prepare_cached(&format!(
                "SELECT seq, {FORGETTING_COLUMNS} FROM memories WHERE id = ?1 AND user_row = ?2 AND status = 'active'"
            ))?
            .query_row(params![id.to_string(), user], |row| Ok((row.get::<_, i64>(0)?, forgetting_state(row, 1)?)))
            .optional()?;
        let Some((seq, before)) = row else { continue };
        let after_state = policy.strengthen(&before, now);
        tx.prepare_cached(
                "UPDATE memories SET strength = ?5, recall_count = recall_count + 1, last_recalled_at = max(last_recalled_at, ?1),
                 fade_age = ?2, access_frequency = ?3 WHERE seq = ?4",
            )?
            .execute(params![
                millis(now),
                after_state.fade_age,
                after_state.access_frequency,
                seq,
                after_state.strength.get()
            ])?;
        let change = payload::Strengthening {
            query_id,
            strength_before: before.strength.get(),
            strength_after: after_state.strength.get(),
            v_before: policy.fademem.decay(&before, now).strength,
            v_after: policy.fademem.decay(&after_state, now).strength,
            frequency_after: after_state.access_frequency,
        };
        append_event(tx, user, &payload::strengthened(*id, now, &change))?;
    }
    Ok(())
}

/// Brings one archived memory a recall found in the archive (or a caller confirmed as used)
/// back to active with savings ([`ForgettingPolicy::reminisce`], as from its last `archived`
/// event) and logs it as `reminisced` with how it came back. Does nothing when it is no
/// longer archived.
fn reminisce_one(
    tx: &Tx<'_>,
    user: i64,
    id: MemoryId,
    how: Reminiscence<'_>,
    policy: &ForgettingPolicy,
    now: Timestamp,
) -> Result<(), StoreError> {
    let row = tx
        .prepare_cached(&format!(
            "SELECT seq, {FORGETTING_COLUMNS} FROM memories WHERE id = ?1 AND user_row = ?2 AND status = 'archived'"
        ))?
        .query_row(params![id.to_string(), user], |row| Ok((row.get::<_, i64>(0)?, forgetting_state(row, 1)?)))
        .optional()?;
    let Some((seq, before)) = row else { return Ok(()) };
    let archived_at: Option<i64> = tx
        .prepare_cached(
            "SELECT at FROM events WHERE memory_id = ?1 AND user_row = ?2 AND kind = 'archived' ORDER BY seq DESC LIMIT 1",
        )?
        .query_row(params![id.to_string(), user], |row| row.get(0))
        .optional()?;
    let archived_at = archived_at.map(from_millis).transpose()?;
    let after = policy.reminisce(&before, archived_at, now);
    set_status(tx, user, seq, Status::Active)?;
    tx.prepare_cached(
        "UPDATE memories SET strength = ?1, recall_count = ?2, last_recalled_at = ?3, fade_age = ?4, access_frequency = ?5 WHERE seq = ?6",
    )?
    .execute(params![
        after.strength.get(),
        after.recall_count,
        millis(after.last_recalled_at),
        after.fade_age,
        after.access_frequency,
        seq
    ])?;
    let data = policy.reminisce_event_data(&before, &after, archived_at, now);
    append_event(tx, user, &payload::reminisced(id, now, how, data))
}

/// The ten forgetting columns `FORGETTING_COLUMNS` selected from position `first` on.
fn forgetting_state(row: &Row<'_>, first: usize) -> rusqlite::Result<ForgettingState> {
    Ok(ForgettingState {
        strength: Strength::new(row.get(first)?).map_err(corrupt("strength"))?,
        recall_count: row.get(first + 1)?,
        last_recalled_at: from_millis(row.get(first + 2)?)?,
        pinned: row.get(first + 3)?,
        layer: row.get::<_, String>(first + 4)?.parse().map_err(corrupt("layer"))?,
        importance: row.get(first + 5)?,
        fade_age: row.get(first + 6)?,
        access_frequency: row.get(first + 7)?,
        base_importance: row.get(first + 8)?,
        decay_factor: row.get(first + 9)?,
    })
}

/// The columns [`forgetting_state`] reads, in its order.
const FORGETTING_COLUMNS: &str = "strength, recall_count, last_recalled_at, pinned, layer, importance, fade_age, access_frequency, base_importance, decay_factor";

fn finite_or(x: f64, default: f64) -> f64 {
    if x.is_finite() { x } else { default }
}

fn finite01(x: f64, default: f64) -> f64 {
    finite_or(x, default).clamp(0.0, 1.0)
}

fn quoted_list(values: &[&str]) -> String {
    // Only our own enum texts reach here, never user input.
    values.iter().map(|v| format!("'{v}'")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use membank_core::{Kind, Memory, Scope, TenantId, UserId};
    use rusqlite::StatementStatus;

    use super::*;
    use crate::{NewMemory, Store};

    /// A recall reads its candidates with `get_many`, a strengthening one its results with
    /// `fetch_one`: their statements must run again as they are, whatever ids and user are
    /// bound, not be parsed and planned anew at every use (as a bare `m.user_row = :user`
    /// or `m.id = :id` made them).
    #[test]
    fn reading_memories_by_id_never_compiles_its_statement_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("m.db")).unwrap();
        let at = Utc.with_ymd_and_hms(2024, 5, 4, 9, 0, 0).unwrap();
        let mut ids = Vec::new();
        let scopes: Vec<Scope> =
            ["ana", "bo"].iter().map(|u| Scope::user(TenantId::default_tenant(), UserId::new(u).unwrap())).collect();
        for scope in &scopes {
            store.ensure_user(&scope.tenant, &scope.user, at).unwrap();
            for i in 0..4 {
                let memory = Memory::fixture(scope, Kind::Note, format!("note {i}"), at + chrono::Duration::minutes(i));
                ids.push((scope, store.insert(NewMemory { memory, embedding: None }).unwrap().id));
            }
        }
        // Several rounds on one reader (the store keeps one while reads do not overlap),
        // alternating users and ids.
        for round in 0..3 {
            for (scope, _) in &ids {
                let mine: Vec<MemoryId> =
                    ids.iter().filter(|(s, _)| s == scope).map(|(_, id)| *id).skip(round).collect();
                assert_eq!(store.get_many(scope, &mine).unwrap().len(), mine.len());
                assert_eq!(store.get(scope, mine[0]).unwrap().id, mine[0]);
            }
        }
        store
            .read(|conn| {
                let stmt = conn.prepare_cached(get_many_sql())?;
                assert_eq!(stmt.get_status(StatementStatus::RePrepare), 0);
                assert!(stmt.get_status(StatementStatus::Run) >= 24, "get_many's statement did not run on this reader");
                // `fetch_one` runs through `query_row`, which the `Run` counter does not
                // count; its virtual machine steps say it ran here.
                let stmt = conn.prepare_cached(fetch_one_sql())?;
                assert_eq!(stmt.get_status(StatementStatus::RePrepare), 0);
                assert!(
                    stmt.get_status(StatementStatus::VmStep) > 0,
                    "fetch_one's statement did not run on this reader"
                );
                Ok(())
            })
            .unwrap();
    }
    /// Every search asks the caches' freshness question (the user's last row) first: its
    /// statements must run again as they are for any user, and stay one seek to the user's
    /// last row however many rows the user has.
    #[test]
    fn the_caches_freshness_check_never_compiles_again_and_stays_one_seek() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("m.db")).unwrap();
        let at = Utc.with_ymd_and_hms(2024, 5, 4, 9, 0, 0).unwrap();
        let model = crate::EmbeddingModel { id: "m".into(), dim: 4 };
        let scopes: Vec<Scope> =
            ["ana", "bo"].iter().map(|u| Scope::user(TenantId::default_tenant(), UserId::new(u).unwrap())).collect();
        // Ana has 3 rows, Bo 300: a scan of the user's rows would take a hundred times the steps.
        for (scope, rows) in scopes.iter().zip([3, 300]) {
            store.ensure_user(&scope.tenant, &scope.user, at).unwrap();
            let batch = (0..rows)
                .map(|i| {
                    let memory =
                        Memory::fixture(scope, Kind::Note, format!("note {i}"), at + chrono::Duration::minutes(i));
                    NewMemory { memory, embedding: Some((model.clone(), vec![0.5; 4])) }
                })
                .collect();
            store.insert_many(batch).unwrap();
        }
        let kinds = [crate::cache::CacheKind::Vectors, crate::cache::CacheKind::Terms];
        // The virtual machine steps each statement has run on the store's reader so far.
        let steps = || -> Vec<i32> {
            store
                .read(|conn| {
                    kinds
                        .iter()
                        .map(|k| Ok(conn.prepare_cached(source::max_seq_sql(*k))?.get_status(StatementStatus::VmStep)))
                        .collect()
                })
                .unwrap()
        };
        // Alternating users on one reader (the store keeps one while reads do not overlap):
        // the steps each search took, per statement.
        let mut per_search = Vec::new();
        for _ in 0..3 {
            for scope in &scopes {
                let before = steps();
                store.dense_search(scope, &model, &[0.5; 4], &SearchFilter::default(), 3).unwrap();
                store.lexical_search(scope, &["note".to_string()], &SearchFilter::default(), 3).unwrap();
                per_search.push(steps().iter().zip(&before).map(|(b, a)| b - a).collect::<Vec<_>>());
            }
        }
        store
            .read(|conn| {
                for kind in kinds {
                    let stmt = conn.prepare_cached(source::max_seq_sql(kind))?;
                    assert_eq!(stmt.get_status(StatementStatus::RePrepare), 0, "{}", source::max_seq_sql(kind));
                }
                Ok(())
            })
            .unwrap();
        // Bo's searches took as many steps as Ana's.
        assert!(per_search.iter().all(|s| s.iter().all(|&n| n > 0)), "a search did not ask: {per_search:?}");
        assert!(per_search.windows(2).all(|w| w[0] == w[1]), "steps differ between users: {per_search:?}");
    }
}

//! Versioned migrations, applied in order on open. The version lives in SQLite's
//! `user_version`. A file of a newer version is refused, never "repaired".
//!
//! A migration is never edited once released: add a new one. Each released version keeps
//! a fixture database in `tests/fixtures/` that the tests open and upgrade.

use rusqlite::Connection;

use crate::StoreError;

/// Migrations by target version (index 0 brings a new file to version 1).
const MIGRATIONS: &[&str] = &[
    // v1: users, memories, vectors, full-text index, event log.
    r#"
    CREATE TABLE store_meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) STRICT;

    CREATE TABLE users (
        id         INTEGER PRIMARY KEY,
        tenant     TEXT NOT NULL,
        user_key   TEXT NOT NULL,
        time_zone  TEXT NOT NULL DEFAULT 'UTC',
        created_at INTEGER NOT NULL,
        -- Bumped by every change that alters which vectors a dense search may return
        -- (status changes, erasure), so readers in any process know to reload.
        revision   INTEGER NOT NULL DEFAULT 0,
        UNIQUE (tenant, user_key)
    ) STRICT;

    CREATE TABLE memories (
        seq              INTEGER PRIMARY KEY AUTOINCREMENT,
        id               TEXT NOT NULL UNIQUE,
        user_row         INTEGER NOT NULL REFERENCES users(id),
        agent            TEXT,
        session          TEXT,
        kind             TEXT NOT NULL,
        source           TEXT NOT NULL,
        content          TEXT,
        user_text        TEXT,
        assistant_text   TEXT,
        occurred_at      INTEGER NOT NULL,
        recorded_at      INTEGER NOT NULL,
        day              TEXT NOT NULL,
        strength         REAL NOT NULL CHECK (strength > 0),
        recall_count     INTEGER NOT NULL DEFAULT 0,
        last_recalled_at INTEGER NOT NULL,
        pinned           INTEGER NOT NULL DEFAULT 0,
        layer            TEXT NOT NULL DEFAULT 'short',
        importance       REAL NOT NULL DEFAULT 0.5,
        status           TEXT NOT NULL DEFAULT 'active',
        superseded_by    TEXT,
        derived_from     TEXT NOT NULL DEFAULT '[]',
        metadata         TEXT NOT NULL DEFAULT '{}'
    ) STRICT;
    CREATE INDEX memories_by_user_time ON memories (user_row, occurred_at);
    CREATE INDEX memories_by_user_status ON memories (user_row, status);

    CREATE TABLE embeddings (
        memory_seq INTEGER PRIMARY KEY REFERENCES memories(seq),
        user_row   INTEGER NOT NULL REFERENCES users(id),
        model      TEXT NOT NULL,
        dim        INTEGER NOT NULL,
        vector     BLOB NOT NULL
    ) STRICT;
    CREATE INDEX embeddings_by_user ON embeddings (user_row, memory_seq);

    -- Contentless: the text lives in `memories`; rowid = memories.seq. `scope_tag` holds
    -- one token naming the user, and every query must match it.
    CREATE VIRTUAL TABLE memory_fts USING fts5 (
        scope_tag, body,
        content = '', contentless_delete = 1,
        tokenize = 'unicode61 remove_diacritics 2'
    );

    CREATE TABLE events (
        seq       INTEGER PRIMARY KEY AUTOINCREMENT,
        id        TEXT NOT NULL UNIQUE,
        user_row  INTEGER NOT NULL REFERENCES users(id),
        memory_id TEXT,
        kind      TEXT NOT NULL,
        at        INTEGER NOT NULL,
        data      TEXT NOT NULL
    ) STRICT;
    CREATE INDEX events_by_user ON events (user_row, seq);
    CREATE INDEX events_by_memory ON events (memory_id);
    "#,
    // v2: API keys of the REST/MCP server (only hashes are stored; see sqlite/keys.rs).
    r#"
    CREATE TABLE api_keys (
        id          INTEGER PRIMARY KEY,
        key_id      TEXT NOT NULL UNIQUE,
        hash        TEXT NOT NULL UNIQUE,
        tenant      TEXT NOT NULL,
        user_key    TEXT,
        admin       INTEGER NOT NULL DEFAULT 0,
        label       TEXT,
        created_at  INTEGER NOT NULL,
        revoked_at  INTEGER
    ) STRICT;
    "#,
    // v3: memories by day, in order. Listing a day and finding a memory's neighbours on its
    // day (neighbour expansion on every recall) otherwise walk all of a user's rows:
    // measured 90% of a 100k-memory recall's time.
    r#"
    CREATE INDEX memories_by_user_day ON memories (user_row, day, occurred_at, seq);
    -- The lexical index's freshness check: the newest row of a user in one seek.
    CREATE INDEX memories_by_user_seq ON memories (user_row, seq);
    "#,
    // v4: FadeMem (dual-layer forgetting with adaptive decay) and maintenance. A memory's FadeMem effective age kept
    // through its last access, its time-decayed recall frequency, its importance at ingestion and its own
    // decay-rate factor; each user's last maintenance cycle (time, and the newest memory it
    // covered, so "N new turns since" is one index range); the user's recent recall
    // queries, bounded per user, which FadeMem's relevance is measured against.
    r#"
    ALTER TABLE memories ADD COLUMN fade_age REAL NOT NULL DEFAULT 0.0;
    ALTER TABLE memories ADD COLUMN access_frequency REAL NOT NULL DEFAULT 0.0;
    ALTER TABLE memories ADD COLUMN base_importance REAL NOT NULL DEFAULT 0.5;
    ALTER TABLE memories ADD COLUMN decay_factor REAL NOT NULL DEFAULT 1.0;
    ALTER TABLE users ADD COLUMN maintained_at INTEGER;
    ALTER TABLE users ADD COLUMN maintained_seq INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE recent_queries (
        seq      INTEGER PRIMARY KEY AUTOINCREMENT,
        user_row INTEGER NOT NULL REFERENCES users(id),
        at       INTEGER NOT NULL,
        vector   BLOB NOT NULL
    ) STRICT;
    CREATE INDEX recent_queries_by_user ON recent_queries (user_row, seq);
    "#,
    // v5: idempotent writes and erasure that also erases what was derived. An
    // `Idempotency-Key` per user, the request it was first used with (a digest) and the
    // memories that request made, stored in the same transaction as those memories, and
    // the answer given once it is known; kept for a bounded time. A user whose summaries
    // or portraits were erased because a source was erased is due to have them made again.
    r#"
    CREATE TABLE idempotency_keys (
        user_row     INTEGER NOT NULL REFERENCES users(id),
        key          TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        created_at   INTEGER NOT NULL,
        memory_ids   TEXT NOT NULL,
        response     TEXT,
        PRIMARY KEY (user_row, key)
    ) STRICT;
    CREATE INDEX idempotency_keys_by_time ON idempotency_keys (created_at);
    ALTER TABLE users ADD COLUMN resummarize_due INTEGER NOT NULL DEFAULT 0;
    "#,
    // v6: erasure whose cost follows what is erased, and whose bytes go even past a slow
    // reader. Before, every erasure ran `optimize` over the whole full-text index under the
    // writer lock, because a DELETE on a `contentless_delete` table only records the rowid
    // as deleted and leaves its terms in the segments until a merge. Now the index is
    // contentless without `contentless_delete`, runs with FTS5's `secure-delete`, and
    // erasure removes a row with FTS5's 'delete' command and the row's own terms, which
    // takes them out of the index pages at once, at a cost that follows the row. The index
    // is rebuilt from the rows (`rebuild_fts`, after this SQL), so every row is indexed
    // with exactly the body erasure will hand back. `wal_purge` counts erasures whose WAL
    // was not yet checkpointed and truncated (see sqlite/wal_purge.rs).
    r#"
    DROP TABLE memory_fts;
    CREATE VIRTUAL TABLE memory_fts USING fts5 (
        scope_tag, body,
        content = '',
        tokenize = 'unicode61 remove_diacritics 2'
    );
    INSERT INTO memory_fts (memory_fts, rank) VALUES ('secure-delete', 1);
    CREATE TABLE wal_purge (
        id  INTEGER PRIMARY KEY CHECK (id = 1),
        due INTEGER NOT NULL
    ) STRICT;
    "#,
];

/// The schema version this build writes.
pub const CURRENT_VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings the database to [`CURRENT_VERSION`], one transaction per step.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let found: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0)).map_err(not_a_database)?;
    if found > CURRENT_VERSION {
        return Err(StoreError::NewerSchema { found, supported: CURRENT_VERSION });
    }
    if found == 0 {
        // A file at version 0 must be empty; anything else is not ours.
        let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get(0))?;
        if tables > 0 {
            return Err(StoreError::Corrupt("the file holds tables but no membank schema version".into()));
        }
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        let version = index as i64 + 1;
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        if version == 6 {
            rebuild_fts(&tx)?;
        }
        tx.pragma_update(None, "user_version", version)?;
        tx.commit()?;
        tracing::info!(version, "migrated database schema");
    }
    Ok(())
}

/// Indexes every row that is not erased into the (new, empty) full-text index, with the
/// body this build computes (`index_body_of`); one pass over the memories.
fn rebuild_fts(tx: &rusqlite::Transaction<'_>) -> Result<(), StoreError> {
    let mut rows =
        tx.prepare("SELECT seq, user_row, content, user_text, assistant_text FROM memories WHERE status != 'erased'")?;
    let mut insert = tx.prepare("INSERT INTO memory_fts (rowid, scope_tag, body) VALUES (?1, ?2, ?3)")?;
    let mut found = rows.query([])?;
    let mut indexed = 0u64;
    while let Some(row) = found.next()? {
        let (seq, user): (i64, i64) = (row.get(0)?, row.get(1)?);
        let (content, user_text, assistant_text): (Option<String>, Option<String>, Option<String>) =
            (row.get(2)?, row.get(3)?, row.get(4)?);
        let body = super::index_body_of(content.as_deref(), user_text.as_deref(), assistant_text.as_deref());
        insert.execute(rusqlite::params![seq, super::scope_tag(user), body])?;
        indexed += 1;
    }
    tracing::info!(memories = indexed, "rebuilt the full-text index");
    Ok(())
}

/// SQLite's "file is not a database" becomes our `Corrupt`.
pub(crate) fn not_a_database(err: rusqlite::Error) -> StoreError {
    match err.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => StoreError::Corrupt("the file is not an SQLite database".into()),
        _ => StoreError::Database(err),
    }
}

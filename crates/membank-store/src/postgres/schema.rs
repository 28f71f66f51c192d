//! The PostgreSQL schema and its versioned migrations, applied in order on open. The
//! version lives in `schema_version` (one row). A database of a newer version is refused,
//! never "repaired"; a migration is never edited once released: add a new one.
//!
//! # Keys, and distributing with Citus
//!
//! Every table that holds a user's data starts its primary key with `uid`, the user's key:
//! a UUIDv5 of `(tenant, user)` computed by the store ([`super::user_uid`]), never looked up
//! from another table. One user's rows therefore sit together in each table's primary key
//! index (a user's memories are one index range), and every table is hash-distributed by
//! `uid` when the database is a Citus coordinator, colocated, so every statement of an
//! operation (which names one user) is routed to the one worker that holds that user. A
//! tenant's users are spread over the workers, which is what a tenant with many users wants.
//!
//! When `citus` is among the database's extensions (`pg_extension`) and the database is
//! empty, the first migration creates the tables and, in the same transaction, distributes
//! them ([`DISTRIBUTION`]): the tenant-wide tables (`schema_version`, `store_meta`,
//! `api_keys`) become reference tables, copied to every node; the user tables are
//! distributed by `uid`, colocated with `users`. Every later open checks that the schema is
//! distributed exactly so ([`check_distribution`]) and refuses one that is half
//! distributed (some tables distributed, others not, or distributed otherwise), naming
//! the tables; a schema made by a plain-PostgreSQL membank before `citus` was created
//! (none distributed) is refused too, since its tables would all stay on the coordinator.
//!
//! Citus requires every primary key and unique constraint of a distributed table to
//! contain the distribution column, and foreign keys between distributed tables to include
//! it: all of ours do (`(uid, seq)`, `(uid, id)`, `(uid, key)`). The only statements that
//! span users are the operations reads that are meant to (`list_users` of a tenant,
//! `all_users`, `users_due_for_maintenance`, `check`) and an import's check that a memory
//! or event id is not already another user's; the coordinator runs those on every worker
//! and merges. Sequences (`seq`, `row_seq`) are `bigserial`s whose values the coordinator
//! draws, and the store relies only on each user's values rising in commit order, which
//! holds because every write transaction first locks its user's row. Row locks
//! (`FOR NO KEY UPDATE` of the user's row, `FOR UPDATE` of memories) name the user's `uid`,
//! so they are routed to that user's worker; the migration's advisory lock is taken on the
//! coordinator, which every client goes through.

use std::collections::HashMap;

use postgres::Client;

use super::error::PgError;
use crate::StoreError;

/// Migrations by target version (index 0 brings an empty database to version 1).
const MIGRATIONS: &[&str] = &[
    // v1: everything the SQLite schema v5 holds, keyed by user.
    r#"
    CREATE EXTENSION IF NOT EXISTS vector;

    CREATE TABLE store_meta (
        key   text PRIMARY KEY,
        value text NOT NULL
    );

    CREATE TABLE users (
        uid             uuid PRIMARY KEY,
        tenant          text NOT NULL,
        user_key        text NOT NULL,
        -- Creation order (list_users, all_users), which created_at cannot break ties of.
        row_seq         bigserial NOT NULL,
        time_zone       text NOT NULL DEFAULT 'UTC',
        created_at      timestamptz NOT NULL,
        -- Bumped by every change of which memories a search may return (status changes,
        -- erasure), so in-process caches in any server know to reload.
        revision        bigint NOT NULL DEFAULT 0,
        maintained_at   timestamptz,
        maintained_seq  bigint NOT NULL DEFAULT 0,
        resummarize_due boolean NOT NULL DEFAULT false,
        -- BM25's collection statistics of the user: documents (memories not erased) and
        -- their total length in terms. Kept by the writes that change them, so a search
        -- reads two numbers instead of counting the user's rows.
        lexical_docs    bigint NOT NULL DEFAULT 0,
        lexical_terms   bigint NOT NULL DEFAULT 0
    );
    CREATE INDEX users_by_tenant ON users (tenant, row_seq);

    CREATE TABLE memories (
        uid              uuid NOT NULL REFERENCES users (uid),
        seq              bigserial NOT NULL,
        id               uuid NOT NULL,
        agent            text,
        session          text,
        kind             text NOT NULL,
        source           text NOT NULL,
        content          text,
        user_text        text,
        assistant_text   text,
        occurred_at      timestamptz NOT NULL,
        recorded_at      timestamptz NOT NULL,
        day              date NOT NULL,
        strength         double precision NOT NULL CHECK (strength > 0),
        recall_count     bigint NOT NULL DEFAULT 0,
        last_recalled_at timestamptz NOT NULL,
        pinned           boolean NOT NULL DEFAULT false,
        layer            text NOT NULL DEFAULT 'short',
        importance       double precision NOT NULL DEFAULT 0.5,
        status           text NOT NULL DEFAULT 'active'
                         CHECK (status IN ('active', 'archived', 'superseded', 'erased')),
        superseded_by    uuid,
        derived_from     uuid[] NOT NULL DEFAULT '{}',
        metadata         jsonb NOT NULL DEFAULT '{}',
        fade_age         double precision NOT NULL DEFAULT 0,
        access_frequency double precision NOT NULL DEFAULT 0,
        base_importance  double precision NOT NULL DEFAULT 0.5,
        decay_factor     double precision NOT NULL DEFAULT 1,
        -- The memory's length in index terms (BM25's document length).
        term_count       integer NOT NULL DEFAULT 0,
        PRIMARY KEY (uid, seq),
        UNIQUE (uid, id)
    );
    CREATE INDEX memories_by_user_time ON memories (uid, occurred_at, seq);
    CREATE INDEX memories_by_user_day ON memories (uid, day, occurred_at, seq);
    CREATE INDEX memories_by_user_status ON memories (uid, status);
    -- Only an import asks whether an id is already another user's.
    CREATE INDEX memories_by_id ON memories (id);

    -- Vectors apart from the memories, so a recall's strengthening (an UPDATE of the
    -- memory) never rewrites 1.5 KB of vector. Each carries a copy of what a search filters
    -- on (status, kind, day, labels): a dense search then reads this table alone, measured
    -- 2.5 times faster than joining the memories (6.5 against 16 ms at 10k vectors). Kind,
    -- day and labels never change; status changes go through one function that updates all
    -- three tables.
    -- No dimension in the type: the store's model (store_meta) decides it; an ANN index
    -- would need one (ALTER COLUMN vector TYPE vector(384)).
    CREATE TABLE embeddings (
        uid     uuid NOT NULL,
        seq     bigint NOT NULL,
        status  text NOT NULL,
        kind    text NOT NULL,
        day     date NOT NULL,
        agent   text,
        session text,
        vector  vector NOT NULL,
        PRIMARY KEY (uid, seq),
        FOREIGN KEY (uid, seq) REFERENCES memories (uid, seq)
    );

    -- The lexical index: one row per (user, term, memory) with the term's frequency in the
    -- memory and the memory's length in terms. Terms are cut in Rust by the core's text rules
    -- (CJK bigrams), exactly as the SQLite store's in-process index cuts them, and BM25 is
    -- computed in SQL from these rows alone. Like the vectors, each row carries a copy of what
    -- a search filters on, so a search reads one index range per query term and joins the
    -- memories only for its best `limit` (a join of every posting was measured to be slower
    -- and, before the planner had statistics, to go quadratic). The index carries every column
    -- (INCLUDE), so once VACUUM has marked the pages all-visible a search reads no heap page.
    -- No foreign key: it would cost a lookup per term of every insert, and the rows are
    -- written and deleted only with their memory's.
    CREATE TABLE memory_terms (
        uid     uuid NOT NULL,
        term    text NOT NULL,
        seq     bigint NOT NULL,
        tf      integer NOT NULL,
        len     integer NOT NULL,
        status  text NOT NULL,
        kind    text NOT NULL,
        day     date NOT NULL,
        agent   text,
        session text,
        PRIMARY KEY (uid, term, seq) INCLUDE (tf, len, status, kind, day, agent, session)
    );
    -- Erasure and status changes reach a memory's terms without knowing them.
    CREATE INDEX memory_terms_by_memory ON memory_terms (uid, seq);

    CREATE TABLE events (
        uid       uuid NOT NULL REFERENCES users (uid),
        seq       bigserial NOT NULL,
        id        uuid NOT NULL,
        memory_id uuid,
        kind      text NOT NULL,
        at        timestamptz NOT NULL,
        data      jsonb NOT NULL,
        PRIMARY KEY (uid, seq)
    );
    CREATE INDEX events_by_memory ON events (uid, memory_id);
    CREATE INDEX events_by_id ON events (id);

    CREATE TABLE recent_queries (
        uid    uuid NOT NULL REFERENCES users (uid),
        seq    bigserial NOT NULL,
        at     timestamptz NOT NULL,
        vector vector NOT NULL,
        PRIMARY KEY (uid, seq)
    );

    CREATE TABLE idempotency_keys (
        uid          uuid NOT NULL REFERENCES users (uid),
        key          text NOT NULL,
        request_hash text NOT NULL,
        created_at   timestamptz NOT NULL,
        memory_ids   uuid[] NOT NULL,
        response     text,
        PRIMARY KEY (uid, key)
    );

    -- API keys of the REST/MCP server: hashes only (see keys.rs).
    CREATE TABLE api_keys (
        key_id     text PRIMARY KEY,
        row_seq    bigserial NOT NULL,
        hash       text NOT NULL UNIQUE,
        tenant     text NOT NULL,
        user_key   text,
        admin      boolean NOT NULL DEFAULT false,
        label      text,
        created_at timestamptz NOT NULL,
        revoked_at timestamptz
    );
    "#,
    // v2: search runs on the in-process caches (`postgres/source.rs`), fed from the memories'
    // text and the vectors; the lexical index in SQL and its statistics are no longer read,
    // and writing them was most of an insert's cost.
    r#"
    DROP TABLE memory_terms;
    ALTER TABLE users DROP COLUMN lexical_docs, DROP COLUMN lexical_terms;
    ALTER TABLE memories DROP COLUMN term_count;
    "#,
    // v3: every table has a primary key. Citus moves shards, and copies reference tables to
    // a worker added later, by logical replication, which refuses a table without a replica
    // identity: `citus_rebalance_start()` failed on `schema_version` (issue 26's rebalance
    // fault test found it). Its one row's version is the key.
    r#"
    ALTER TABLE schema_version ADD PRIMARY KEY (version);
    "#,
];

/// The schema version this build writes.
pub const CURRENT_VERSION: i64 = MIGRATIONS.len() as i64;

/// A fixed key for `pg_advisory_xact_lock`: two processes opening one database at once
/// migrate one after the other.
const MIGRATION_LOCK: i64 = 0x6d65_6d62_616e_6b31;

/// How the tables are spread over a Citus cluster: `None`, a reference table (a copy on
/// every node); `Some(column)`, hash-distributed by that column, colocated with `users`. In
/// the order they are distributed (a table before those whose foreign keys name it).
pub(super) const DISTRIBUTION: &[(&str, Option<&str>)] = &[
    ("schema_version", None),
    ("store_meta", None),
    ("api_keys", None),
    ("users", Some("uid")),
    ("memories", Some("uid")),
    ("embeddings", Some("uid")),
    ("events", Some("uid")),
    ("recent_queries", Some("uid")),
    ("idempotency_keys", Some("uid")),
];

/// Whether the database is a Citus coordinator (or a single-node Citus): the `citus`
/// extension is created in it.
pub(super) fn is_citus(client: &mut impl postgres::GenericClient) -> Result<bool, StoreError> {
    let found: bool = client
        .query_one("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')", &[])
        .map_err(PgError::from)?
        .get(0);
    Ok(found)
}

/// Distributes the freshly created tables ([`DISTRIBUTION`]), in the transaction that made them.
fn distribute(tx: &mut postgres::Transaction<'_>) -> Result<(), StoreError> {
    for (table, column) in DISTRIBUTION {
        // The names are this file's constants (and the functions take a regclass, which a
        // text parameter is not).
        let sql = match column {
            None => format!("SELECT create_reference_table('{table}')"),
            Some(column) if *table == "users" => format!("SELECT create_distributed_table('{table}', '{column}')"),
            Some(column) => {
                format!("SELECT create_distributed_table('{table}', '{column}', colocate_with => 'users')")
            }
        };
        tx.batch_execute(&sql).map_err(PgError::from)?;
    }
    tracing::info!("distributed the membank schema over the Citus cluster");
    Ok(())
}

/// On a Citus database with the membank schema: every table of [`DISTRIBUTION`] is
/// distributed as listed and the user tables are colocated, or the schema is refused with
/// what is wrong.
pub(super) fn check_distribution(client: &mut impl postgres::GenericClient) -> Result<(), StoreError> {
    // partmethod 'n' is a reference table, 'h' hash-distributed; column_to_column_name gives
    // the distribution column's name.
    let rows = client
        .query(
            "SELECT logicalrelid::regclass::text, partmethod::text,
                    CASE WHEN partmethod = 'h' THEN column_to_column_name(logicalrelid, partkey) END,
                    colocationid
               FROM pg_dist_partition",
            &[],
        )
        .map_err(PgError::from)?;
    let found: HashMap<String, (String, Option<String>, i32)> =
        rows.iter().map(|r| (r.get::<_, String>(0), (r.get(1), r.get(2), r.get(3)))).collect();
    let mut wrong = Vec::new();
    let mut colocation = None;
    for (table, column) in DISTRIBUTION {
        let how = found.get(*table);
        let ok = match (column, how) {
            (None, Some((method, _, _))) => method == "n",
            (Some(column), Some((method, Some(partkey), id))) => {
                let same_group = *colocation.get_or_insert(*id) == *id;
                method == "h" && partkey == column && same_group
            }
            _ => false,
        };
        if !ok {
            wrong.push(match column {
                None => format!("{table} (should be a reference table)"),
                Some(column) => format!("{table} (should be distributed by {column}, colocated with users)"),
            });
        }
    }
    if wrong.is_empty() {
        return Ok(());
    }
    let how = if wrong.len() == DISTRIBUTION.len() { "not distributed" } else { "half distributed" };
    Err(StoreError::Corrupt(format!(
        "the database has the citus extension but its membank schema is {how}: {}; \
         membank distributes the schema itself when it creates it on an empty Citus database \
         (migrate into a new one with `membank migrate --to`)",
        wrong.join(", ")
    )))
}

/// Brings the database to [`CURRENT_VERSION`], one transaction per step; on Citus, creates
/// the schema distributed and checks the distribution of an existing one.
pub(super) fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let citus = is_citus(client)?;
    loop {
        let mut tx = client.transaction().map_err(PgError::from)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).map_err(PgError::from)?;
        let found = version(&mut tx)?;
        if found > CURRENT_VERSION {
            return Err(StoreError::NewerSchema { found, supported: CURRENT_VERSION });
        }
        if citus && found > 0 {
            check_distribution(&mut tx)?;
        }
        if found == CURRENT_VERSION {
            return Ok(());
        }
        if found == 0 {
            let ours: bool =
                tx.query_one("SELECT to_regclass('memories') IS NOT NULL", &[]).map_err(PgError::from)?.get(0);
            if ours {
                return Err(StoreError::Corrupt(
                    "the database holds a memories table but no membank schema version".into(),
                ));
            }
            let available: bool = tx
                .query_one("SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')", &[])
                .map_err(PgError::from)?
                .get(0);
            if !available {
                return Err(StoreError::Corrupt(
                    "the server has no pgvector extension (install pgvector, then CREATE EXTENSION vector)".into(),
                ));
            }
            tx.batch_execute(
                "CREATE TABLE schema_version (version bigint NOT NULL); INSERT INTO schema_version VALUES (0);",
            )
            .map_err(PgError::from)?;
        }
        let next = found + 1;
        // One statement at a time: Citus forwards a DDL statement's whole query string to the
        // workers, and a worker refuses several commands in one (extended-protocol) string.
        for statement in statements(MIGRATIONS[found as usize]) {
            tx.batch_execute(statement).map_err(PgError::from)?;
        }
        if citus && found == 0 {
            distribute(&mut tx)?;
        }
        tx.execute("UPDATE schema_version SET version = $1", &[&next]).map_err(PgError::from)?;
        tx.commit().map_err(PgError::from)?;
        tracing::info!(version = next, "migrated PostgreSQL schema");
    }
}

/// A migration's statements: its text cut after each `;` that ends a line (no statement of
/// ours has one inside), without blank pieces.
fn statements(migration: &str) -> impl Iterator<Item = &str> {
    migration.split_inclusive(";\n").map(str::trim).filter(|s| !s.is_empty())
}

/// The schema version of the database (0: no membank schema).
pub(super) fn version(tx: &mut postgres::Transaction<'_>) -> Result<i64, StoreError> {
    let exists: bool =
        tx.query_one("SELECT to_regclass('schema_version') IS NOT NULL", &[]).map_err(PgError::from)?.get(0);
    if !exists {
        return Ok(0);
    }
    let row = tx.query_opt("SELECT version FROM schema_version", &[]).map_err(PgError::from)?;
    row.map(|r| r.try_get::<_, i64>(0))
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("bad schema_version: {e}")))
        .map(|v| v.unwrap_or(0))
}

//! Lossless export and import of users (the SQLite store's `transfer.rs` is the
//! reference): every memory with all of its state and optionally its vector, every event
//! with its id, the user's settings and recent recall queries.
//!
//! An export reads one snapshot and hands rows to the sink as the server sends them, so it
//! streams in constant memory; an import writes all users in one transaction, each user
//! locked (in key order, so two imports cannot deadlock) before anything is written.
//!
//! An import writes in bulk: a few statements per [`CHUNK`] rows instead of statements per
//! row (`membank migrate` of a million memories depends on it): memories, vectors and
//! events as multi-row `INSERT … SELECT` of column arrays (`unnest($n::…[])`), the index
//! terms (about 18 rows a memory, two thirds of the time) with a binary `COPY`, sorted in
//! index order. What it checks per row is what the single-row insert checks; which ids
//! are already stored is asked once per chunk.

use std::collections::{HashMap, HashSet};

use chrono::NaiveDate;
use membank_core::event::Event;
use membank_core::{Memory, TenantId, Timestamp, UserId};
use postgres::fallible_iterator::FallibleIterator;
use uuid::Uuid;

use super::pool::Tx;
use super::vector::{Vector, VectorRef};
use super::{
    MEMORY_COLUMN_COUNT, MEMORY_COLUMNS, PgError, PgStore, col, finite_or, finite01, millis, read_event, refuse_nul,
    refuse_nul_json, row_to_memory, scope_uid, user_uid,
};
use crate::StoreError;
use crate::types::{ExportRow, ImportCounts, ModelVector, UserImport, UserState};

/// Rows written per statement: large enough that round trips do not dominate, small enough
/// that one statement's arrays stay a few megabytes.
pub(super) const CHUNK: usize = 2000;

pub(super) fn export_user(
    store: &PgStore,
    tenant: &TenantId,
    user: &UserId,
    vectors: bool,
    sink: &mut dyn FnMut(ExportRow) -> Result<(), StoreError>,
) -> Result<bool, StoreError> {
    let uid = user_uid(tenant, user);
    store.pool.read(|tx| {
        let Some(row) = tx.query_opt("SELECT time_zone, created_at, maintained_at, resummarize_due FROM users WHERE uid = $1", &[&uid])? else { return Ok(false) };
        sink(ExportRow::User(UserState {
            tenant: tenant.clone(),
            user: user.clone(),
            time_zone: col(&row, 0)?,
            created_at: col(&row, 1)?,
            maintained_at: col(&row, 2)?,
            resummarize_due: col(&row, 3)?,
        }))?;

        let model = if vectors {
            let row = tx.query_one("SELECT (SELECT value FROM store_meta WHERE key = 'embedding_model'), (SELECT value FROM store_meta WHERE key = 'embedding_dim')", &[])?;
            match (col::<Option<String>>(&row, 0)?, col::<Option<String>>(&row, 1)?) {
                (Some(id), Some(dim)) => Some(crate::EmbeddingModel { id, dim: dim.parse().map_err(|_| StoreError::Corrupt("bad embedding_dim".into()))? }),
                _ => None,
            }
        } else {
            None
        };
        // Without the vectors, no join at all, rather than a join on a parameter (`AND $2`):
        // Citus plans a join condition that is not an equality of the distribution columns
        // as a cross-shard join, which it refuses.
        let sql = if vectors {
            format!("SELECT {MEMORY_COLUMNS}, e.vector FROM memories m LEFT JOIN embeddings e ON e.uid = m.uid AND e.seq = m.seq WHERE m.uid = $1 ORDER BY m.seq")
        } else {
            format!("SELECT {MEMORY_COLUMNS}, NULL::vector FROM memories m WHERE m.uid = $1 ORDER BY m.seq")
        };
        let params: [&(dyn postgres::types::ToSql + Sync); 1] = [&uid];
        let mut rows = tx.query_iter(&sql, &params)?;
        while let Some(row) = rows.next().map_err(PgError::from)? {
            let (_, memory) = row_to_memory(&row, tenant, user)?;
            let vector = match (col::<Option<Vector>>(&row, MEMORY_COLUMN_COUNT)?, &model) {
                (Some(vector), Some(model)) => Some((model.clone(), vector.0)),
                (Some(_), None) => return Err(StoreError::Corrupt("a vector is stored but no embedding model".into())),
                (None, _) => None,
            };
            sink(ExportRow::Memory(Box::new(memory), vector))?;
        }
        drop(rows);

        let params: [&(dyn postgres::types::ToSql + Sync); 1] = [&uid];
        let mut rows = tx.query_iter("SELECT seq, id, memory_id, kind, at, data FROM events WHERE uid = $1 ORDER BY seq", &params)?;
        while let Some(row) = rows.next().map_err(PgError::from)? {
            sink(ExportRow::Event(read_event(&row)?))?;
        }
        drop(rows);

        if vectors {
            for row in tx.query("SELECT at, vector FROM recent_queries WHERE uid = $1 ORDER BY seq", &[&uid])? {
                sink(ExportRow::Query(col(&row, 0)?, col::<Vector>(&row, 1)?.0))?;
            }
        }
        Ok(true)
    })
}

/// The users of every tenant, in creation order.
pub(super) fn all_users(store: &PgStore) -> Result<Vec<(TenantId, UserId)>, StoreError> {
    store.pool.read(|tx| {
        tx.query("SELECT tenant, user_key FROM users ORDER BY row_seq", &[])?
            .iter()
            .map(|row| {
                let (tenant, user): (String, String) = (col(row, 0)?, col(row, 1)?);
                Ok((
                    TenantId::new(&tenant).map_err(|e| StoreError::Corrupt(e.to_string()))?,
                    UserId::new(&user).map_err(|e| StoreError::Corrupt(e.to_string()))?,
                ))
            })
            .collect()
    })
}

pub(super) fn import_users(store: &PgStore, users: Vec<UserImport>, merge: bool) -> Result<ImportCounts, StoreError> {
    store.pool.write(|tx| {
        let mut counts = ImportCounts::default();
        // Existing users locked in key order (two imports cannot deadlock) before anything is
        // written, and refused without merge.
        let mut uids: Vec<Uuid> = users.iter().map(|u| user_uid(&u.state.tenant, &u.state.user)).collect();
        uids.sort();
        uids.dedup();
        // One statement per user: Citus routes a row lock only by an equality on `uid` (a lock
        // of `uid = ANY(...)` spans shards, which it refuses).
        let mut existing: HashSet<Uuid> = HashSet::new();
        for uid in &uids {
            if tx.query_opt("SELECT 1 FROM users WHERE uid = $1 FOR NO KEY UPDATE", &[uid])?.is_some() {
                existing.insert(*uid);
            }
        }
        if !merge && !existing.is_empty() {
            let mut taken: Vec<String> = users.iter().filter(|u| existing.contains(&user_uid(&u.state.tenant, &u.state.user))).map(|u| format!("{}/{}", u.state.tenant, u.state.user)).collect();
            taken.dedup();
            return Err(StoreError::Conflict(format!("these users already exist: {} (import with merge to add to them)", taken.join(", "))));
        }
        // The new users, in one statement and in the import's order: they are listed in the
        // order they were created, and a migration's concurrent batches create theirs within
        // moments of starting, so the target lists users as the source does.
        let mut created: HashSet<Uuid> = HashSet::new();
        let mut fresh: Vec<&UserState> = Vec::new();
        for import in &users {
            let uid = user_uid(&import.state.tenant, &import.state.user);
            if !existing.contains(&uid) && created.insert(uid) {
                membank_core::time::UserTimeZone::parse(&import.state.time_zone)?;
                fresh.push(&import.state);
            }
        }
        if !fresh.is_empty() {
            tx.execute(
                "INSERT INTO users (uid, tenant, user_key, time_zone, created_at, maintained_at, resummarize_due)
                 SELECT u.uid, u.tenant, u.user_key, u.time_zone, u.created_at, u.maintained_at, u.resummarize_due
                 FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[], $7::bool[])
                   WITH ORDINALITY AS u(uid, tenant, user_key, time_zone, created_at, maintained_at, resummarize_due, n)
                 ORDER BY u.n",
                &[
                    &fresh.iter().map(|s| user_uid(&s.tenant, &s.user)).collect::<Vec<Uuid>>(),
                    &fresh.iter().map(|s| s.tenant.as_str()).collect::<Vec<&str>>(),
                    &fresh.iter().map(|s| s.user.as_str()).collect::<Vec<&str>>(),
                    &fresh.iter().map(|s| s.time_zone.as_str()).collect::<Vec<&str>>(),
                    &fresh.iter().map(|s| millis(s.created_at)).collect::<Vec<Timestamp>>(),
                    &fresh.iter().map(|s| s.maintained_at.map(millis)).collect::<Vec<Option<Timestamp>>>(),
                    &fresh.iter().map(|s| s.resummarize_due).collect::<Vec<bool>>(),
                ],
            )?;
            counts.users_created = fresh.len();
        }
        for import in users {
            let state = &import.state;
            let uid = user_uid(&state.tenant, &state.user);
            // A user met again later in the same import is merged into, as if it had existed.
            let existed = !created.remove(&uid);
            if let Some((memory, _)) = import.memories.iter().find(|(m, _)| m.scope.tenant != state.tenant || m.scope.user != state.user) {
                return Err(StoreError::Invalid(membank_core::InvalidInput::new("memory", format!("memory {} belongs to another user than its section", memory.id))));
            }
            // Ids are unique across the store, as in SQLite: the one question an import asks
            // about other users' rows. An id seen twice in one import is stored once.
            let mut seen_memories: HashSet<Uuid> = HashSet::new();
            let mut memories = import.memories.into_iter().peekable();
            while memories.peek().is_some() {
                let chunk: Vec<(Memory, Option<ModelVector>)> = memories.by_ref().take(CHUNK).collect();
                let ids: Vec<Uuid> = chunk.iter().map(|(m, _)| m.id.as_uuid()).collect();
                let owners = owners(tx, "memories", &ids)?;
                let mut fresh = Vec::with_capacity(chunk.len());
                for (memory, vector) in chunk {
                    let id = memory.id.as_uuid();
                    match owners.get(&id) {
                        Some(owner) if *owner != uid => return Err(StoreError::Conflict(format!("memory {} already exists for another user", memory.id))),
                        Some(_) => counts.skipped += 1,
                        None if !seen_memories.insert(id) => counts.skipped += 1,
                        None => fresh.push((memory, vector)),
                    }
                }
                counts.memories += fresh.len();
                insert_memories(store, tx, uid, &fresh)?;
            }
            let mut seen_events: HashSet<Uuid> = HashSet::new();
            let mut events = import.events.into_iter().peekable();
            while events.peek().is_some() {
                let chunk: Vec<Event> = events.by_ref().take(CHUNK).collect();
                let ids: Vec<Uuid> = chunk.iter().map(|e| e.id.as_uuid()).collect();
                let owners = owners(tx, "events", &ids)?;
                let mut fresh = Vec::with_capacity(chunk.len());
                for event in chunk {
                    let id = event.id.as_uuid();
                    match owners.get(&id) {
                        Some(owner) if *owner != uid => return Err(StoreError::Conflict(format!("event {} already exists for another user", event.id))),
                        Some(_) => counts.skipped += 1,
                        None if !seen_events.insert(id) => counts.skipped += 1,
                        None => fresh.push(event),
                    }
                }
                counts.events += fresh.len();
                insert_events(tx, uid, &fresh)?;
            }
            // A merge keeps the user's own recent queries: importing them again would count
            // them twice.
            let queries = if existed { Vec::new() } else { import.queries };
            for (at, vector) in queries {
                if vector.is_empty() || vector.iter().any(|x| !x.is_finite()) {
                    return Err(StoreError::Invalid(membank_core::InvalidInput::new("query vector", "must be finite numbers")));
                }
                tx.execute("INSERT INTO recent_queries (uid, at, vector) VALUES ($1, $2, $3)", &[&uid, &millis(at), &VectorRef(&vector)])?;
            }
            // The last cycle covered everything imported: "turns since" counts new ones only.
            if state.maintained_at.is_some() {
                tx.execute("UPDATE users SET maintained_seq = (SELECT coalesce(max(seq), 0) FROM memories WHERE uid = $1) WHERE uid = $1", &[&uid])?;
            }
            tx.execute("UPDATE users SET revision = revision + 1 WHERE uid = $1", &[&uid])?;
        }
        Ok(counts)
    })
}

/// Which of `ids` are stored in `table` (`memories` or `events`), and whose they are.
fn owners(tx: &mut Tx<'_>, table: &'static str, ids: &[Uuid]) -> Result<HashMap<Uuid, Uuid>, StoreError> {
    let sql = format!("SELECT id, uid FROM {table} WHERE id = ANY($1)");
    tx.query(&sql, &[&ids])?.iter().map(|row| Ok((col(row, 0)?, col(row, 1)?))).collect()
}

/// Imported events with their own ids, at the end of the user's log in their order.
fn insert_events(tx: &mut Tx<'_>, uid: Uuid, events: &[Event]) -> Result<(), StoreError> {
    if events.is_empty() {
        return Ok(());
    }
    for event in events {
        refuse_nul_json("event data", &event.data)?;
    }
    let ids: Vec<Uuid> = events.iter().map(|e| e.id.as_uuid()).collect();
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

/// Stores `rows` (memories of the user `uid`, none stored yet) with their vectors, without
/// events, in the caller's transaction (which holds the user's lock): two statements,
/// whatever the number of rows. Rows are checked as [`PgStore::insert_row`]
/// checks one, and get sequence numbers in their order.
pub(super) fn insert_memories(
    store: &PgStore,
    tx: &mut Tx<'_>,
    uid: Uuid,
    rows: &[(Memory, Option<ModelVector>)],
) -> Result<(), StoreError> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut claimed: Vec<&crate::EmbeddingModel> = Vec::new();
    for (memory, embedding) in rows {
        if scope_uid(&memory.scope) != uid {
            return Err(StoreError::Invalid(membank_core::InvalidInput::new(
                "memory",
                format!("memory {} belongs to another user than the operation", memory.id),
            )));
        }
        if let Some((model, vector)) = embedding {
            if vector.len() != model.dim || vector.iter().any(|x| !x.is_finite()) {
                return Err(StoreError::Invalid(membank_core::InvalidInput::new(
                    "embedding",
                    format!("expected {} finite numbers, got {}", model.dim, vector.len()),
                )));
            }
            if !claimed.contains(&model) {
                store.claim_model(tx, model)?;
                claimed.push(model);
            }
        }
        for text in [&memory.content, &memory.user_text, &memory.assistant_text].into_iter().flatten() {
            refuse_nul("content", text)?;
        }
        for (key, value) in &memory.metadata {
            refuse_nul("metadata", key)?;
            refuse_nul("metadata", value)?;
        }
    }
    let label = |l: &Option<membank_core::AgentLabel>| l.as_ref().map(|a| a.as_str().to_string());
    let ids: Vec<Uuid> = rows.iter().map(|(m, _)| m.id.as_uuid()).collect();
    let agents: Vec<Option<String>> = rows.iter().map(|(m, _)| label(&m.scope.agent)).collect();
    let sessions: Vec<Option<String>> = rows.iter().map(|(m, _)| label(&m.scope.session)).collect();
    let kinds: Vec<&str> = rows.iter().map(|(m, _)| m.kind.as_str()).collect();
    let sources: Vec<&str> = rows.iter().map(|(m, _)| m.source.as_str()).collect();
    let contents: Vec<Option<&str>> = rows.iter().map(|(m, _)| m.content.as_deref()).collect();
    let user_texts: Vec<Option<&str>> = rows.iter().map(|(m, _)| m.user_text.as_deref()).collect();
    let assistant_texts: Vec<Option<&str>> = rows.iter().map(|(m, _)| m.assistant_text.as_deref()).collect();
    let occurred: Vec<Timestamp> = rows.iter().map(|(m, _)| millis(m.occurred_at)).collect();
    let recorded: Vec<Timestamp> = rows.iter().map(|(m, _)| millis(m.recorded_at)).collect();
    let days: Vec<NaiveDate> = rows.iter().map(|(m, _)| m.day).collect();
    let strengths: Vec<f64> = rows.iter().map(|(m, _)| m.forgetting.strength.get()).collect();
    let recall_counts: Vec<i64> = rows.iter().map(|(m, _)| i64::from(m.forgetting.recall_count)).collect();
    let last_recalled: Vec<Timestamp> = rows.iter().map(|(m, _)| millis(m.forgetting.last_recalled_at)).collect();
    let pinned: Vec<bool> = rows.iter().map(|(m, _)| m.forgetting.pinned).collect();
    let layers: Vec<&str> = rows.iter().map(|(m, _)| m.forgetting.layer.as_str()).collect();
    let importance: Vec<f64> = rows.iter().map(|(m, _)| m.forgetting.importance).collect();
    let statuses: Vec<&str> = rows.iter().map(|(m, _)| m.status.as_str()).collect();
    let superseded_by: Vec<Option<Uuid>> = rows.iter().map(|(m, _)| m.superseded_by.map(|id| id.as_uuid())).collect();
    // Arrays of arrays must be rectangular in PostgreSQL: each memory's sources travel as
    // the text of a uuid[] and are cast back row by row.
    let derived: Vec<String> = rows
        .iter()
        .map(|(m, _)| format!("{{{}}}", m.derived_from.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")))
        .collect();
    let metadata: Vec<serde_json::Value> = rows
        .iter()
        .map(|(m, _)| serde_json::to_value(&m.metadata).map_err(|e| StoreError::Corrupt(e.to_string())))
        .collect::<Result<_, _>>()?;
    let fade: Vec<f64> = rows.iter().map(|(m, _)| finite_or(m.forgetting.fade_age, 0.0).max(0.0)).collect();
    let frequency: Vec<f64> =
        rows.iter().map(|(m, _)| finite_or(m.forgetting.access_frequency, 0.0).max(0.0)).collect();
    let base: Vec<f64> = rows.iter().map(|(m, _)| finite01(m.forgetting.base_importance, 0.5)).collect();
    let decay: Vec<f64> =
        rows.iter().map(|(m, _)| finite_or(m.forgetting.decay_factor, 1.0).max(f64::MIN_POSITIVE)).collect();
    // WITH ORDINALITY and ORDER BY: sequence numbers follow the rows' order.
    let started = std::time::Instant::now();
    let returned = tx.query(
        "INSERT INTO memories (uid, id, agent, session, kind, source, content, user_text, assistant_text, occurred_at, recorded_at, day,
           strength, recall_count, last_recalled_at, pinned, layer, importance, status, superseded_by, derived_from, metadata,
           fade_age, access_frequency, base_importance, decay_factor)
         SELECT $1, r.id, r.agent, r.session, r.kind, r.source, r.content, r.user_text, r.assistant_text, r.occurred_at, r.recorded_at, r.day,
           r.strength, r.recall_count, r.last_recalled_at, r.pinned, r.layer, r.importance, r.status, r.superseded_by, r.derived_from::uuid[], r.metadata,
           r.fade_age, r.access_frequency, r.base_importance, r.decay_factor
         FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::timestamptz[], $11::timestamptz[],
           $12::date[], $13::float8[], $14::int8[], $15::timestamptz[], $16::bool[], $17::text[], $18::float8[], $19::text[], $20::uuid[], $21::text[],
           $22::jsonb[], $23::float8[], $24::float8[], $25::float8[], $26::float8[])
           WITH ORDINALITY AS r(id, agent, session, kind, source, content, user_text, assistant_text, occurred_at, recorded_at, day, strength, recall_count,
             last_recalled_at, pinned, layer, importance, status, superseded_by, derived_from, metadata, fade_age, access_frequency, base_importance,
             decay_factor, n)
         ORDER BY r.n
         RETURNING id, seq",
        &[
            &uid,
            &ids,
            &agents,
            &sessions,
            &kinds,
            &sources,
            &contents,
            &user_texts,
            &assistant_texts,
            &occurred,
            &recorded,
            &days,
            &strengths,
            &recall_counts,
            &last_recalled,
            &pinned,
            &layers,
            &importance,
            &statuses,
            &superseded_by,
            &derived,
            &metadata,
            &fade,
            &frequency,
            &base,
            &decay,
        ],
    )?;
    let seq_of: HashMap<Uuid, i64> =
        returned.iter().map(|row| Ok((col(row, 0)?, col(row, 1)?))).collect::<Result<_, StoreError>>()?;
    let seqs: Vec<i64> = ids
        .iter()
        .map(|id| seq_of.get(id).copied().ok_or_else(|| StoreError::Corrupt(format!("memory {id} was not stored"))))
        .collect::<Result<_, _>>()?;

    let memories_at = started.elapsed();
    // Vectors, each with the copy of what a search filters on.
    let with_vector: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].1.is_some()).collect();
    if !with_vector.is_empty() {
        let vectors: Vec<VectorRef<'_>> =
            with_vector.iter().filter_map(|&i| rows[i].1.as_ref().map(|(_, v)| VectorRef(v))).collect();
        tx.execute(
            "INSERT INTO embeddings (uid, seq, status, kind, day, agent, session, vector)
             SELECT $1, unnest($2::int8[]), unnest($3::text[]), unnest($4::text[]), unnest($5::date[]), unnest($6::text[]), unnest($7::text[]), unnest($8::vector[])",
            &[
                &uid,
                &with_vector.iter().map(|&i| seqs[i]).collect::<Vec<i64>>(),
                &with_vector.iter().map(|&i| statuses[i]).collect::<Vec<&str>>(),
                &with_vector.iter().map(|&i| kinds[i]).collect::<Vec<&str>>(),
                &with_vector.iter().map(|&i| days[i]).collect::<Vec<NaiveDate>>(),
                &with_vector.iter().map(|&i| agents[i].as_deref()).collect::<Vec<Option<&str>>>(),
                &with_vector.iter().map(|&i| sessions[i].as_deref()).collect::<Vec<Option<&str>>>(),
                &vectors,
            ],
        )?;
    }

    let vectors_at = started.elapsed();
    // Where a bulk write's time goes (MEMBANK_LOG=membank_store=debug).
    tracing::debug!(
        rows = rows.len(),
        memories_ms = memories_at.as_millis() as u64,
        vectors_ms = (vectors_at - memories_at).as_millis() as u64,
        "bulk insert of memories"
    );
    Ok(())
}

//! Lossless export and import of users: every memory with all of its state (ids, both
//! clocks, status, forgetting numbers, links, metadata, optionally its vector), every
//! event with its id, the user's settings and recent recall queries.
//!
//! An export reads one snapshot (one read transaction) and hands rows to a sink as it
//! goes, so it streams in constant memory and is consistent even while writes go on. An
//! import writes all users in one transaction: all of it or nothing. The file format
//! lives in the engine (`membank_engine::export`); this module only moves rows.

use membank_core::event::Event;
use membank_core::{TenantId, UserId};
use rusqlite::{OptionalExtension, params};

use super::{
    MEMORY_COLUMNS, SqliteStore, check_model, corrupt, from_millis, insert_row, millis, row_to_memory, user_row,
};
use crate::StoreError;
use crate::types::{EmbeddingModel, ExportRow, ImportCounts, UserImport, UserState};

pub(super) fn export_user(
    store: &SqliteStore,
    tenant: &TenantId,
    user: &UserId,
    vectors: bool,
    sink: &mut dyn FnMut(ExportRow) -> Result<(), StoreError>,
) -> Result<bool, StoreError> {
    store.read(|conn| {
        let Some((row, _)) = user_row(conn, tenant, user)? else { return Ok(false) };
        let state = conn.query_row(
            "SELECT time_zone, created_at, maintained_at, resummarize_due FROM users WHERE id = ?1",
            [row],
            |r| {
                Ok(UserState {
                    tenant: tenant.clone(),
                    user: user.clone(),
                    time_zone: r.get(0)?,
                    created_at: from_millis(r.get(1)?)?,
                    maintained_at: r.get::<_, Option<i64>>(2)?.map(from_millis).transpose()?,
                    resummarize_due: r.get(3)?,
                })
            },
        )?;
        sink(ExportRow::User(state))?;

        let sql = format!(
            "SELECT {MEMORY_COLUMNS}, e.model, e.dim, e.vector FROM memories m JOIN users u ON u.id = m.user_row
             LEFT JOIN embeddings e ON e.memory_seq = m.seq AND :vectors
             WHERE m.user_row = :user ORDER BY m.seq"
        );
        let mut stmt = conn.prepare(&sql)?;
        let mut rows = stmt.query(rusqlite::named_params! { ":user": row, ":vectors": vectors })?;
        while let Some(r) = rows.next()? {
            let memory = row_to_memory(r)?;
            let vector = match r.get::<_, Option<String>>(28)? {
                Some(model) => {
                    let dim: i64 = r.get(29)?;
                    let blob: Vec<u8> = r.get(30)?;
                    Some((EmbeddingModel { id: model, dim: dim as usize }, decode(&blob)))
                }
                None => None,
            };
            sink(ExportRow::Memory(Box::new(memory), vector))?;
        }

        let mut stmt =
            conn.prepare("SELECT seq, id, memory_id, kind, at, data FROM events WHERE user_row = ?1 ORDER BY seq")?;
        let mut rows = stmt.query([row])?;
        while let Some(r) = rows.next()? {
            let event = Event {
                seq: r.get(0)?,
                id: r.get::<_, String>(1)?.parse().map_err(corrupt("event id"))?,
                memory_id: r
                    .get::<_, Option<String>>(2)?
                    .map(|s| s.parse())
                    .transpose()
                    .map_err(corrupt("memory id"))?,
                kind: r.get::<_, String>(3)?.parse().map_err(corrupt("event kind"))?,
                at: from_millis(r.get(4)?)?,
                data: serde_json::from_str(&r.get::<_, String>(5)?).map_err(corrupt("event data"))?,
            };
            sink(ExportRow::Event(event))?;
        }

        if vectors {
            let mut stmt = conn.prepare("SELECT at, vector FROM recent_queries WHERE user_row = ?1 ORDER BY seq")?;
            let mut rows = stmt.query([row])?;
            while let Some(r) = rows.next()? {
                sink(ExportRow::Query(from_millis(r.get(0)?)?, decode(&r.get::<_, Vec<u8>>(1)?)))?;
            }
        }
        Ok(true)
    })
}

/// The users of every tenant, in creation order.
pub(super) fn all_users(store: &SqliteStore) -> Result<Vec<(TenantId, UserId)>, StoreError> {
    store.read(|conn| {
        let mut stmt = conn.prepare("SELECT tenant, user_key FROM users ORDER BY id")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
        let mut out = Vec::new();
        for row in rows {
            let (tenant, user) = row?;
            out.push((
                TenantId::new(&tenant).map_err(|e| StoreError::Corrupt(e.to_string()))?,
                UserId::new(&user).map_err(|e| StoreError::Corrupt(e.to_string()))?,
            ));
        }
        Ok(out)
    })
}

pub(super) fn import_users(
    store: &SqliteStore,
    users: Vec<UserImport>,
    merge: bool,
) -> Result<ImportCounts, StoreError> {
    store.write(|tx| {
        let mut counts = ImportCounts::default();
        // Refuse before writing anything: an existing user without --merge.
        if !merge {
            let mut taken = Vec::new();
            for u in &users {
                if user_row(tx, &u.state.tenant, &u.state.user)?.is_some() {
                    taken.push(format!("{}/{}", u.state.tenant, u.state.user));
                }
            }
            if !taken.is_empty() {
                return Err(StoreError::Conflict(format!("these users already exist: {} (import with merge to add to them)", taken.join(", "))));
            }
        }
        for import in users {
            let state = &import.state;
            let existed = user_row(tx, &state.tenant, &state.user)?;
            let row = match existed {
                Some((row, _)) => row,
                None => {
                    membank_core::time::UserTimeZone::parse(&state.time_zone)?;
                    tx.execute(
                        "INSERT INTO users (tenant, user_key, time_zone, created_at, maintained_at, resummarize_due) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                        params![state.tenant.as_str(), state.user.as_str(), state.time_zone, millis(state.created_at), state.maintained_at.map(millis), state.resummarize_due],
                    )?;
                    counts.users_created += 1;
                    tx.last_insert_rowid()
                }
            };
            for (memory, vector) in import.memories {
                if memory.scope.tenant != state.tenant || memory.scope.user != state.user {
                    return Err(StoreError::Invalid(membank_core::InvalidInput::new("memory", format!("memory {} belongs to another user than its section", memory.id))));
                }
                let owner: Option<i64> = tx.query_row("SELECT user_row FROM memories WHERE id = ?1", [memory.id.to_string()], |r| r.get(0)).optional()?;
                match owner {
                    Some(owner) if owner == row => {
                        counts.skipped += 1;
                        continue;
                    }
                    Some(_) => return Err(StoreError::Conflict(format!("memory {} already exists for another user", memory.id))),
                    None => {}
                }
                if let Some((model, _)) = &vector {
                    check_model(tx, model)?;
                }
                insert_row(tx, crate::NewMemory { memory, embedding: vector })?;
                counts.memories += 1;
            }
            for event in import.events {
                let owner: Option<i64> = tx.query_row("SELECT user_row FROM events WHERE id = ?1", [event.id.to_string()], |r| r.get(0)).optional()?;
                match owner {
                    Some(owner) if owner == row => {
                        counts.skipped += 1;
                        continue;
                    }
                    Some(_) => return Err(StoreError::Conflict(format!("event {} already exists for another user", event.id))),
                    None => {}
                }
                tx.prepare_cached("INSERT INTO events (id, user_row, memory_id, kind, at, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?.execute(params![
                    event.id.to_string(),
                    row,
                    event.memory_id.map(|id| id.to_string()),
                    event.kind.as_str(),
                    millis(event.at),
                    event.data.to_string()
                ])?;
                counts.events += 1;
            }
            // A merge keeps the user's own recent queries: importing them again would
            // count them twice.
            let queries = if existed.is_some() { Vec::new() } else { import.queries };
            for (at, vector) in queries {
                if vector.is_empty() || vector.iter().any(|x| !x.is_finite()) {
                    return Err(StoreError::Invalid(membank_core::InvalidInput::new("query vector", "must be finite numbers")));
                }
                let blob: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
                tx.prepare_cached("INSERT INTO recent_queries (user_row, at, vector) VALUES (?1, ?2, ?3)")?.execute(params![row, millis(at), blob])?;
            }
            // The last cycle covered everything imported: "turns since" counts new ones only.
            if state.maintained_at.is_some() {
                tx.execute("UPDATE users SET maintained_seq = (SELECT coalesce(max(seq), 0) FROM memories WHERE user_row = ?1) WHERE id = ?1", [row])?;
            }
            tx.execute("UPDATE users SET revision = revision + 1 WHERE id = ?1", [row])?;
        }
        Ok(counts)
    })
}

fn decode(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

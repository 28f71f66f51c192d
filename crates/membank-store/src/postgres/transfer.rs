//! Lossless export and import of users (the SQLite store's `transfer.rs` is the
//! reference): every memory with all of its state and optionally its vector, every event
//! with its id, the user's settings and recent recall queries.
//!
//! An export reads one snapshot and hands rows to the sink as the server sends them, so it
//! streams in constant memory; an import writes all users in one transaction, each user
//! locked (in key order, so two imports cannot deadlock) before anything is written.

use membank_core::event::Event;
use membank_core::{MemoryId, TenantId, UserId};
use postgres::fallible_iterator::FallibleIterator;
use uuid::Uuid;

use super::vector::{Vector, VectorRef};
use super::{MEMORY_COLUMN_COUNT, MEMORY_COLUMNS, PgError, PgStore, col, lock_user, millis, read_event, row_to_memory, user_uid};
use crate::StoreError;
use crate::types::{ExportRow, ImportCounts, NewMemory, UserImport, UserState};

pub(super) fn export_user(store: &PgStore, tenant: &TenantId, user: &UserId, vectors: bool, sink: &mut dyn FnMut(ExportRow) -> Result<(), StoreError>) -> Result<bool, StoreError> {
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
        let sql = format!("SELECT {MEMORY_COLUMNS}, e.vector FROM memories m LEFT JOIN embeddings e ON e.uid = m.uid AND e.seq = m.seq AND $2 WHERE m.uid = $1 ORDER BY m.seq");
        let params: [&(dyn postgres::types::ToSql + Sync); 2] = [&uid, &vectors];
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
                Ok((TenantId::new(&tenant).map_err(|e| StoreError::Corrupt(e.to_string()))?, UserId::new(&user).map_err(|e| StoreError::Corrupt(e.to_string()))?))
            })
            .collect()
    })
}

pub(super) fn import_users(store: &PgStore, users: Vec<UserImport>, merge: bool) -> Result<ImportCounts, StoreError> {
    store.pool.write(|tx| {
        let mut counts = ImportCounts::default();
        // Existing users locked in key order before anything is written, and refused
        // without merge.
        let mut keys: Vec<(Uuid, String)> = users.iter().map(|u| (user_uid(&u.state.tenant, &u.state.user), format!("{}/{}", u.state.tenant, u.state.user))).collect();
        keys.sort();
        keys.dedup();
        let mut taken = Vec::new();
        for (uid, name) in &keys {
            if lock_user(tx, *uid)? {
                taken.push(name.clone());
            }
        }
        if !merge && !taken.is_empty() {
            return Err(StoreError::Conflict(format!("these users already exist: {} (import with merge to add to them)", taken.join(", "))));
        }
        for import in users {
            let state = &import.state;
            let uid = user_uid(&state.tenant, &state.user);
            let existed = lock_user(tx, uid)?;
            if !existed {
                membank_core::time::UserTimeZone::parse(&state.time_zone)?;
                tx.execute(
                    "INSERT INTO users (uid, tenant, user_key, time_zone, created_at, maintained_at, resummarize_due) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                    &[&uid, &state.tenant.as_str(), &state.user.as_str(), &state.time_zone, &millis(state.created_at), &state.maintained_at.map(millis), &state.resummarize_due],
                )?;
                counts.users_created += 1;
            }
            for (memory, vector) in import.memories {
                if memory.scope.tenant != state.tenant || memory.scope.user != state.user {
                    return Err(StoreError::Invalid(membank_core::InvalidInput::new("memory", format!("memory {} belongs to another user than its section", memory.id))));
                }
                // Ids are unique across the store, as in SQLite: the one question an import
                // asks about other users' rows.
                let owner: Option<Uuid> = tx.query_opt("SELECT uid FROM memories WHERE id = $1 LIMIT 1", &[&memory.id.as_uuid()])?.map(|r| col(&r, 0)).transpose()?;
                match owner {
                    Some(owner) if owner == uid => {
                        counts.skipped += 1;
                        continue;
                    }
                    Some(_) => return Err(StoreError::Conflict(format!("memory {} already exists for another user", memory.id))),
                    None => {}
                }
                store.insert_row(tx, uid, NewMemory { memory, embedding: vector })?;
                counts.memories += 1;
            }
            for event in import.events {
                let owner: Option<Uuid> = tx.query_opt("SELECT uid FROM events WHERE id = $1 LIMIT 1", &[&event.id.as_uuid()])?.map(|r| col(&r, 0)).transpose()?;
                match owner {
                    Some(owner) if owner == uid => {
                        counts.skipped += 1;
                        continue;
                    }
                    Some(_) => return Err(StoreError::Conflict(format!("event {} already exists for another user", event.id))),
                    None => {}
                }
                insert_event(tx, uid, &event)?;
                counts.events += 1;
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

/// An imported event with its own id, at the end of the user's log.
fn insert_event(tx: &mut super::pool::Tx<'_>, uid: Uuid, event: &Event) -> Result<(), StoreError> {
    let memory: Option<Uuid> = event.memory_id.map(|id: MemoryId| id.as_uuid());
    tx.execute(
        "INSERT INTO events (uid, id, memory_id, kind, at, data) VALUES ($1, $2, $3, $4, $5, $6)",
        &[&uid, &event.id.as_uuid(), &memory, &event.kind.as_str(), &millis(event.at), &event.data],
    )?;
    Ok(())
}

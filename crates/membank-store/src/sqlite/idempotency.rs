//! All-or-nothing inserts with an optional `Idempotency-Key` in SQLite (the rules are in
//! `crate::idempotency`).
//!
//! The key is claimed in the same IMMEDIATE transaction that stores the memories, so a
//! request is stored at most once whatever happens between the two: a retry finds the
//! key and the ids it made, and nothing new is written. The writer mutex and the
//! IMMEDIATE lock serialise claims, so two concurrent requests with one key cannot both
//! store. The answer given to the first request is recorded afterwards (a second small
//! write); a retry that comes before it, or after a crash in between, is answered from the
//! stored ids. Keys older than the claim's `expire_before` are purged by later claims.

use membank_core::{MemoryId, Scope, Timestamp};
use rusqlite::{OptionalExtension, params};

use super::{SqliteStore, fetch_one, from_millis, insert_in, millis, user_row};
use crate::StoreError;
use crate::idempotency::{check_insert, check_key, replay};
use crate::types::{IdempotencyClaim, IdempotencyRecord, Insertion, NewMemory};

pub(super) fn insert_all(
    store: &SqliteStore,
    batch: Vec<NewMemory>,
    claim: Option<&IdempotencyClaim>,
) -> Result<Insertion, StoreError> {
    let Some(scope) = check_insert(&batch, claim)? else { return Ok(Insertion::Stored(Vec::new())) };
    store.write(|tx| {
        let user = SqliteStore::existing_user(tx, &scope)?;
        if let Some(claim) = claim {
            tx.prepare_cached("DELETE FROM idempotency_keys WHERE created_at < ?1")?.execute([millis(claim.expire_before)])?;
            if let Some(record) = lookup(tx, user, &claim.key)? {
                return replay(record, claim);
            }
        }
        let mut ids = Vec::with_capacity(batch.len());
        for new in batch {
            let memory_scope = new.memory.scope.clone();
            let (_, id) = insert_in(tx, new)?;
            ids.push((memory_scope, id));
        }
        if let Some(claim) = claim {
            let list: Vec<String> = ids.iter().map(|(_, id)| id.to_string()).collect();
            tx.prepare_cached("INSERT INTO idempotency_keys (user_row, key, request_hash, created_at, memory_ids) VALUES (?1, ?2, ?3, ?4, ?5)")?.execute(params![
                user,
                claim.key,
                claim.request_hash,
                millis(claim.now),
                serde_json::to_string(&list).map_err(|e| StoreError::Corrupt(e.to_string()))?
            ])?;
        }
        let memories = ids.iter().map(|(scope, id)| Ok(fetch_one(tx, user, scope, *id)?.1)).collect::<Result<Vec<_>, StoreError>>()?;
        Ok(Insertion::Stored(memories))
    })
}

pub(super) fn record(
    store: &SqliteStore,
    scope: &Scope,
    key: &str,
    expire_before: Timestamp,
) -> Result<Option<IdempotencyRecord>, StoreError> {
    check_key(key)?;
    store.read(|conn| {
        let Some((user, _)) = user_row(conn, &scope.tenant, &scope.user)? else { return Ok(None) };
        Ok(lookup(conn, user, key)?.filter(|r| r.created_at >= expire_before))
    })
}

pub(super) fn respond(store: &SqliteStore, scope: &Scope, key: &str, response: &str) -> Result<(), StoreError> {
    store.write(|tx| {
        let Some((user, _)) = user_row(tx, &scope.tenant, &scope.user)? else { return Ok(()) };
        // Only if none is recorded yet: the first answer is the one every retry gets.
        tx.prepare_cached(
            "UPDATE idempotency_keys SET response = ?3 WHERE user_row = ?1 AND key = ?2 AND response IS NULL",
        )?
        .execute(params![user, key, response])?;
        Ok(())
    })
}

fn lookup(conn: &rusqlite::Connection, user: i64, key: &str) -> Result<Option<IdempotencyRecord>, StoreError> {
    let row = conn
        .prepare_cached("SELECT request_hash, created_at, memory_ids, response FROM idempotency_keys WHERE user_row = ?1 AND key = ?2")?
        .query_row(params![user, key], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?, r.get::<_, Option<String>>(3)?)))
        .optional()?;
    let Some((request_hash, created_at, ids, response)) = row else { return Ok(None) };
    let ids: Vec<String> =
        serde_json::from_str(&ids).map_err(|e| StoreError::Corrupt(format!("bad idempotency ids: {e}")))?;
    let memory_ids = ids
        .iter()
        .map(|s| s.parse::<MemoryId>().map_err(|_| StoreError::Corrupt(format!("bad memory id {s:?}"))))
        .collect::<Result<_, _>>()?;
    Ok(Some(IdempotencyRecord { request_hash, created_at: from_millis(created_at)?, memory_ids, response }))
}

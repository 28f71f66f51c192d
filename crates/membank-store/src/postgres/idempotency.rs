//! All-or-nothing inserts with an optional `Idempotency-Key` in PostgreSQL (the rules are
//! in `crate::idempotency`).
//!
//! The key is claimed in the transaction that stores the memories, after the user's row is
//! locked: two requests with one key, on one server or two, are serialised by that lock, so
//! the second finds the first's claim (committed) and stores nothing. Expired keys are purged
//! per user, by that user's next claim: a claim never touches other users' rows (SQLite purges
//! every user's expired keys, which a distributed database would have to run everywhere).

use membank_core::{MemoryId, Scope, Timestamp};
use uuid::Uuid;

use super::pool::Tx;
use super::{PgStore, col, existing_user, fetch_one, memory_id, millis, scope_uid};
use crate::StoreError;
use crate::idempotency::{check_insert, check_key, replay};
use crate::types::{IdempotencyClaim, IdempotencyRecord, Insertion, NewMemory};

pub(super) fn insert_all(
    store: &PgStore,
    batch: Vec<NewMemory>,
    claim: Option<&IdempotencyClaim>,
) -> Result<Insertion, StoreError> {
    let Some(scope) = check_insert(&batch, claim)? else { return Ok(Insertion::Stored(Vec::new())) };
    store.pool.write(|tx| {
        let uid = existing_user(tx, &scope)?;
        if let Some(claim) = claim {
            tx.execute("DELETE FROM idempotency_keys WHERE uid = $1 AND created_at < $2", &[&uid, &millis(claim.expire_before)])?;
            if let Some(record) = lookup(tx, uid, &claim.key)? {
                return replay(record, claim);
            }
        }
        let mut ids = Vec::with_capacity(batch.len());
        for new in batch {
            let memory_scope = new.memory.scope.clone();
            let (_, id) = store.insert_in(tx, uid, new)?;
            ids.push((memory_scope, id));
        }
        if let Some(claim) = claim {
            let list: Vec<Uuid> = ids.iter().map(|(_, id)| id.as_uuid()).collect();
            tx.execute(
                "INSERT INTO idempotency_keys (uid, key, request_hash, created_at, memory_ids) VALUES ($1, $2, $3, $4, $5)",
                &[&uid, &claim.key, &claim.request_hash, &millis(claim.now), &list],
            )?;
        }
        let memories = ids.iter().map(|(scope, id)| Ok(fetch_one(tx, uid, scope, *id)?.1)).collect::<Result<Vec<_>, StoreError>>()?;
        Ok(Insertion::Stored(memories))
    })
}

pub(super) fn record(
    store: &PgStore,
    scope: &Scope,
    key: &str,
    expire_before: Timestamp,
) -> Result<Option<IdempotencyRecord>, StoreError> {
    check_key(key)?;
    let uid = scope_uid(scope);
    store.pool.read(|tx| Ok(lookup(tx, uid, key)?.filter(|r| r.created_at >= millis(expire_before))))
}

pub(super) fn respond(store: &PgStore, scope: &Scope, key: &str, response: &str) -> Result<(), StoreError> {
    super::refuse_nul("response", response)?;
    let uid = scope_uid(scope);
    store.pool.write(|tx| {
        // Only if none is recorded yet: the first answer is the one every retry gets.
        tx.execute(
            "UPDATE idempotency_keys SET response = $3 WHERE uid = $1 AND key = $2 AND response IS NULL",
            &[&uid, &key, &response],
        )?;
        Ok(())
    })
}

fn lookup(tx: &mut Tx<'_>, uid: Uuid, key: &str) -> Result<Option<IdempotencyRecord>, StoreError> {
    let Some(row) = tx.query_opt(
        "SELECT request_hash, created_at, memory_ids, response FROM idempotency_keys WHERE uid = $1 AND key = $2",
        &[&uid, &key],
    )?
    else {
        return Ok(None);
    };
    let ids: Vec<Uuid> = col(&row, 2)?;
    let memory_ids = ids.into_iter().map(memory_id).collect::<Result<Vec<MemoryId>, _>>()?;
    Ok(Some(IdempotencyRecord {
        request_hash: col(&row, 0)?,
        created_at: col(&row, 1)?,
        memory_ids,
        response: col(&row, 3)?,
    }))
}

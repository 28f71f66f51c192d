//! What maintenance cycles need from the store: a user's vectors and recent recall
//! queries (FadeMem's relevance), where the user stands in the schedule, who is due, and
//! applying one cycle's plan in one transaction, in PostgreSQL. The store decides nothing:
//! [`apply`] carries out the engine's plan by the rules of `crate::maintenance`.

use std::collections::HashMap;

use membank_core::{MemoryId, Scope, Status, TenantId, Timestamp, UserId};
use uuid::Uuid;

use super::pool::Tx;
use super::txn::UserWriter;
use super::vector::{Vector, VectorRef};
use super::{PgStore, change_status, col, existing_user, label_filter, labels, memory_id, millis, parse, scope_uid};
use crate::StoreError;
use crate::maintenance::{PlanTx, UpdateValues, apply_plan};
use crate::types::{MaintenanceApplied, MaintenancePlan, MaintenanceState, NewMemory, Unmaintained};

/// Keeps a recall query's vector among the user's recent ones, at most `keep` per user,
/// in the caller's (recall's) transaction.
pub(super) fn remember_query(
    tx: &mut Tx<'_>,
    uid: Uuid,
    vector: &[f32],
    at: Timestamp,
    keep: usize,
) -> Result<(), StoreError> {
    if vector.is_empty() || vector.iter().any(|x| !x.is_finite()) {
        return Err(StoreError::Invalid(membank_core::InvalidInput::new("query vector", "must be finite numbers")));
    }
    tx.execute(
        "INSERT INTO recent_queries (uid, at, vector) VALUES ($1, $2, $3)",
        &[&uid, &millis(at), &VectorRef(vector)],
    )?;
    let keep = i64::try_from(keep.max(1)).unwrap_or(i64::MAX);
    tx.execute(
        "DELETE FROM recent_queries WHERE uid = $1 AND seq < (SELECT min(seq) FROM (SELECT seq FROM recent_queries WHERE uid = $1 ORDER BY seq DESC LIMIT $2) AS kept)",
        &[&uid, &keep],
    )?;
    Ok(())
}

pub(super) fn vectors(
    store: &PgStore,
    scope: &Scope,
    ids: &[MemoryId],
) -> Result<Vec<(MemoryId, Vec<f32>)>, StoreError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let uid = scope_uid(scope);
    let sql = format!(
        "SELECT m.id, e.vector FROM memories m JOIN embeddings e ON e.uid = m.uid AND e.seq = m.seq WHERE m.uid = $1 AND m.id = ANY($2) {}",
        label_filter(3)
    );
    let list: Vec<Uuid> = ids.iter().map(MemoryId::as_uuid).collect();
    let (agent, session) = labels(scope);
    store.pool.read(|tx| {
        let mut found: HashMap<MemoryId, Vec<f32>> = HashMap::with_capacity(ids.len());
        for row in tx.query(&sql, &[&uid, &list, &agent, &session])? {
            found.insert(memory_id(col(&row, 0)?)?, col::<Vector>(&row, 1)?.0);
        }
        Ok(ids.iter().filter_map(|id| found.remove(id).map(|v| (*id, v))).collect())
    })
}

pub(super) fn recent_queries(store: &PgStore, scope: &Scope, limit: usize) -> Result<Vec<Vec<f32>>, StoreError> {
    let uid = scope_uid(scope);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    store.pool.read(|tx| {
        tx.query("SELECT vector FROM recent_queries WHERE uid = $1 ORDER BY seq DESC LIMIT $2", &[&uid, &limit])?
            .iter()
            .map(|row| Ok(col::<Vector>(row, 0)?.0))
            .collect()
    })
}

pub(super) fn unmaintained(store: &PgStore, scope: &Scope) -> Result<Unmaintained, StoreError> {
    let uid = scope_uid(scope);
    let sql = format!(
        "SELECT m.id, m.seq FROM memories m JOIN users u ON u.uid = m.uid
         WHERE m.uid = $1 AND m.seq > u.maintained_seq AND m.status = 'active' {} ORDER BY m.seq",
        label_filter(2)
    );
    let (agent, session) = labels(scope);
    store.pool.read(|tx| {
        let mut memories = Vec::new();
        for row in tx.query(&sql, &[&uid, &agent, &session])? {
            memories.push((memory_id(col(&row, 0)?)?, col::<i64>(&row, 1)?));
        }
        let newest =
            col::<i64>(&tx.query_one("SELECT coalesce(max(seq), 0)::int8 FROM memories WHERE uid = $1", &[&uid])?, 0)?;
        Ok(Unmaintained { memories, newest })
    })
}

pub(super) fn state(store: &PgStore, scope: &Scope) -> Result<MaintenanceState, StoreError> {
    let uid = scope_uid(scope);
    store.pool.read(|tx| {
        let row = tx.query_opt(
            "SELECT u.maintained_at, (SELECT count(*) FROM memories m WHERE m.uid = u.uid AND m.seq > u.maintained_seq AND m.kind = 'turn'), u.resummarize_due
             FROM users u WHERE u.uid = $1",
            &[&uid],
        )?;
        let Some(row) = row else { return Ok(MaintenanceState { maintained_at: None, new_turns: 0, resummarize_due: false }) };
        Ok(MaintenanceState { maintained_at: col(&row, 0)?, new_turns: col::<i64>(&row, 1)?.max(0) as u64, resummarize_due: col(&row, 2)? })
    })
}

pub(super) fn users_due(
    store: &PgStore,
    before: Timestamp,
    every_turns: Option<u64>,
    limit: usize,
) -> Result<Vec<(TenantId, UserId)>, StoreError> {
    let every = every_turns.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    store.pool.read(|tx| {
        // An operations read over every user (the one statement that is meant to span
        // users); it returns who is due, never what they remember. Users with nothing
        // active have nothing to maintain.
        let rows = tx.query(
            "SELECT u.tenant, u.user_key FROM users u
             WHERE EXISTS (SELECT 1 FROM memories m WHERE m.uid = u.uid AND m.status = 'active')
               AND (coalesce(u.maintained_at, u.created_at) < $1
                    OR ($2::int8 IS NOT NULL AND (SELECT count(*) FROM memories m WHERE m.uid = u.uid AND m.seq > u.maintained_seq AND m.kind = 'turn') >= $2))
             ORDER BY coalesce(u.maintained_at, 'epoch'::timestamptz), u.row_seq LIMIT $3",
            &[&millis(before), &every, &limit],
        )?;
        rows.iter()
            .map(|row| {
                let (tenant, user): (String, String) = (col(row, 0)?, col(row, 1)?);
                Ok((TenantId::new(&tenant).map_err(|e| StoreError::Corrupt(e.to_string()))?, UserId::new(&user).map_err(|e| StoreError::Corrupt(e.to_string()))?))
            })
            .collect()
    })
}

/// Carries out one cycle's plan under the user's lock (the rules are in `crate::maintenance`).
pub(super) fn apply(store: &PgStore, scope: &Scope, plan: MaintenancePlan) -> Result<MaintenanceApplied, StoreError> {
    store.pool.write(|tx| {
        let uid = existing_user(tx, scope)?;
        apply_plan(&mut UserWriter { store, tx, uid }, plan)
    })
}

impl PlanTx for UserWriter<'_, '_> {
    fn status_of(&mut self, id: MemoryId) -> Result<Option<(i64, Status)>, StoreError> {
        let row = self
            .tx
            .query_opt("SELECT seq, status FROM memories WHERE uid = $1 AND id = $2", &[&self.uid, &id.as_uuid()])?;
        row.map(|row| Ok((col(&row, 0)?, parse("status", &col::<String>(&row, 1)?)?))).transpose()
    }

    fn insert(&mut self, new: NewMemory) -> Result<MemoryId, StoreError> {
        Ok(self.store.insert_in(self.tx, self.uid, new)?.1)
    }

    fn update(&mut self, seq: i64, values: &UpdateValues<'_>) -> Result<(), StoreError> {
        self.tx.execute(
            "UPDATE memories SET importance = $3, layer = $4, base_importance = coalesce($5, base_importance),
               metadata = CASE WHEN $6::jsonb IS NULL THEN metadata ELSE jsonb_set(metadata, '{importance_source}', $6::jsonb) END,
               recall_count = recall_count + $7, access_frequency = access_frequency + $8, decay_factor = coalesce($9, decay_factor)
             WHERE uid = $1 AND seq = $2",
            &[
                &self.uid,
                &seq,
                &values.importance,
                &values.layer.as_str(),
                &values.base,
                // As a JSON string made here, not `to_jsonb($6)` in SQL: Citus refuses a
                // function that is not IMMUTABLE (to_jsonb is STABLE) inside a CASE.
                &values.source.map(|source| serde_json::Value::String(source.to_string())),
                &i64::from(values.add_recalls),
                &values.add_frequency,
                &values.decay_factor,
            ],
        )?;
        Ok(())
    }

    fn archive(&mut self, seq: i64) -> Result<(), StoreError> {
        change_status(self.tx, self.uid, &[seq], Status::Archived, None)
    }

    fn supersede(&mut self, seq: i64, by: MemoryId) -> Result<(), StoreError> {
        change_status(self.tx, self.uid, &[seq], Status::Superseded, Some(by))
    }

    fn mark_maintained(&mut self, now: Timestamp, through: Option<i64>) -> Result<(), StoreError> {
        self.tx.execute(
            "UPDATE users SET maintained_at = $2,
               maintained_seq = greatest(maintained_seq, coalesce($3, (SELECT coalesce(max(seq), 0) FROM memories WHERE uid = $1)))
             WHERE uid = $1",
            &[&self.uid, &millis(now), &through],
        )?;
        Ok(())
    }
}

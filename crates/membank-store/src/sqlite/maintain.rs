//! What maintenance cycles need from the store: a user's vectors and recent recall
//! queries (FadeMem's relevance), where the user stands in the schedule, who is due, and
//! applying one cycle's plan in one transaction, in SQLite. The store decides nothing:
//! [`apply`] carries out the engine's plan by the rules of `crate::maintenance`.

use membank_core::{MemoryId, Scope, Status, TenantId, Timestamp, UserId};
use rusqlite::{OptionalExtension, named_params, params};

use super::group_commit::Tx;

use super::txn::UserWriter;
use super::{LABEL_FILTER, SqliteStore, from_millis, insert_in, millis, user_row};
use crate::StoreError;
use crate::maintenance::{PlanTx, UpdateValues, apply_plan};
use crate::types::{MaintenanceApplied, MaintenancePlan, MaintenanceState, NewMemory, Unmaintained};

/// Keeps a recall query's vector among the user's recent ones, at most `keep` per user,
/// in the caller's (recall's) transaction.
pub(super) fn remember_query(
    tx: &Tx<'_>,
    user: i64,
    vector: &[f32],
    at: Timestamp,
    keep: usize,
) -> Result<(), StoreError> {
    if vector.is_empty() || vector.iter().any(|x| !x.is_finite()) {
        return Err(StoreError::Invalid(membank_core::InvalidInput::new("query vector", "must be finite numbers")));
    }
    let blob: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
    tx.prepare_cached("INSERT INTO recent_queries (user_row, at, vector) VALUES (?1, ?2, ?3)")?.execute(params![
        user,
        millis(at),
        blob
    ])?;
    tx.prepare_cached(
        "DELETE FROM recent_queries WHERE user_row = ?1 AND seq NOT IN
         (SELECT seq FROM recent_queries WHERE user_row = ?1 ORDER BY seq DESC LIMIT ?2)",
    )?
    .execute(params![user, keep.max(1) as i64])?;
    Ok(())
}

fn decode(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

pub(super) fn vectors(
    store: &SqliteStore,
    scope: &Scope,
    ids: &[MemoryId],
) -> Result<Vec<(MemoryId, Vec<f32>)>, StoreError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    store.read(|conn| {
        let Some((user, _)) = user_row(conn, &scope.tenant, &scope.user)? else { return Ok(Vec::new()) };
        let list = serde_json::to_string(&ids.iter().map(|id| id.to_string()).collect::<Vec<_>>()).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let sql = format!(
            "SELECT m.id, e.vector FROM json_each(:ids) j CROSS JOIN memories m ON m.id = j.value JOIN embeddings e ON e.memory_seq = m.seq
             WHERE m.user_row = :user AND e.user_row = :user {LABEL_FILTER}"
        );
        let mut stmt = conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(
            named_params! { ":ids": list, ":user": user, ":agent": scope.agent.as_ref().map(|a| a.as_str()), ":session": scope.session.as_ref().map(|s| s.as_str()) },
            |row| Ok((row.get::<_, String>(0)?, row.get::<_, Vec<u8>>(1)?)),
        )?;
        let mut found = std::collections::HashMap::with_capacity(ids.len());
        for row in rows {
            let (id, blob) = row?;
            let id: MemoryId = id.parse().map_err(|_| StoreError::Corrupt("bad memory id".into()))?;
            found.insert(id, decode(&blob));
        }
        Ok(ids.iter().filter_map(|id| found.remove(id).map(|v| (*id, v))).collect())
    })
}

pub(super) fn recent_queries(store: &SqliteStore, scope: &Scope, limit: usize) -> Result<Vec<Vec<f32>>, StoreError> {
    store.read(|conn| {
        let Some((user, _)) = user_row(conn, &scope.tenant, &scope.user)? else { return Ok(Vec::new()) };
        let mut stmt =
            conn.prepare_cached("SELECT vector FROM recent_queries WHERE user_row = ?1 ORDER BY seq DESC LIMIT ?2")?;
        let rows = stmt.query_map(params![user, limit as i64], |row| row.get::<_, Vec<u8>>(0))?;
        Ok(rows.map(|r| r.map(|b| decode(&b))).collect::<Result<_, _>>()?)
    })
}

pub(super) fn state(store: &SqliteStore, scope: &Scope) -> Result<MaintenanceState, StoreError> {
    store.read(|conn| {
        let Some((user, _)) = user_row(conn, &scope.tenant, &scope.user)? else { return Ok(MaintenanceState { maintained_at: None, new_turns: 0, resummarize_due: false }) };
        let (at, new_turns, due): (Option<i64>, i64, bool) = conn.query_row(
            "SELECT u.maintained_at, (SELECT count(*) FROM memories m WHERE m.user_row = u.id AND m.seq > u.maintained_seq AND m.kind = 'turn'), u.resummarize_due
             FROM users u WHERE u.id = ?1",
            [user],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )?;
        Ok(MaintenanceState { maintained_at: at.map(from_millis).transpose()?, new_turns: new_turns.max(0) as u64, resummarize_due: due })
    })
}

pub(super) fn unmaintained(store: &SqliteStore, scope: &Scope) -> Result<Unmaintained, StoreError> {
    store.read(|conn| {
        let Some((user, _)) = user_row(conn, &scope.tenant, &scope.user)? else { return Ok(Unmaintained::default()) };
        let sql = format!(
            "SELECT m.id, m.seq FROM memories m JOIN users u ON u.id = m.user_row
             WHERE m.user_row = :user AND m.seq > u.maintained_seq AND m.status = 'active' {LABEL_FILTER} ORDER BY m.seq"
        );
        let mut stmt = conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(
            named_params! { ":user": user, ":agent": scope.agent.as_ref().map(|a| a.as_str()), ":session": scope.session.as_ref().map(|s| s.as_str()) },
            |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)),
        )?;
        let mut memories = Vec::new();
        for row in rows {
            let (id, seq) = row?;
            memories.push((id.parse().map_err(|_| StoreError::Corrupt("bad memory id".into()))?, seq));
        }
        let newest = conn.query_row("SELECT COALESCE(max(seq), 0) FROM memories WHERE user_row = ?1", [user], |row| row.get(0))?;
        Ok(Unmaintained { memories, newest })
    })
}

pub(super) fn users_due(
    store: &SqliteStore,
    before: Timestamp,
    every_turns: Option<u64>,
    limit: usize,
) -> Result<Vec<(TenantId, UserId)>, StoreError> {
    store.read(|conn| {
        // Users with nothing active have nothing to maintain. The turn count walks only the
        // rows after the user's watermark, on the (user_row, seq) index.
        let mut stmt = conn.prepare_cached(
            "SELECT u.tenant, u.user_key FROM users u
             WHERE EXISTS (SELECT 1 FROM memories m WHERE m.user_row = u.id AND m.status = 'active')
               AND (COALESCE(u.maintained_at, u.created_at) < :before
                    OR (:every IS NOT NULL AND (SELECT count(*) FROM memories m WHERE m.user_row = u.id AND m.seq > u.maintained_seq AND m.kind = 'turn') >= :every))
             ORDER BY COALESCE(u.maintained_at, 0), u.id LIMIT :limit",
        )?;
        let rows = stmt.query_map(named_params! { ":before": millis(before), ":every": every_turns.map(|n| n.min(i64::MAX as u64) as i64), ":limit": limit.min(i64::MAX as usize) as i64 }, |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (tenant, user) = row?;
            out.push((TenantId::new(&tenant).map_err(|e| StoreError::Corrupt(e.to_string()))?, UserId::new(&user).map_err(|e| StoreError::Corrupt(e.to_string()))?));
        }
        Ok(out)
    })
}

/// Carries out one cycle's plan in one transaction (the rules are in `crate::maintenance`).
pub(super) fn apply(
    store: &SqliteStore,
    scope: &Scope,
    plan: MaintenancePlan,
) -> Result<MaintenanceApplied, StoreError> {
    store.write(|tx| {
        let user = SqliteStore::existing_user(tx, scope)?;
        apply_plan(&mut UserWriter { tx, user }, plan)
    })
}

impl PlanTx for UserWriter<'_, '_> {
    fn status_of(&mut self, id: MemoryId) -> Result<Option<(i64, Status)>, StoreError> {
        let row = self
            .tx
            .prepare_cached("SELECT seq, status FROM memories WHERE id = ?1 AND user_row = ?2")?
            .query_row(params![id.to_string(), self.user], |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?)))
            .optional()?;
        row.map(|(seq, status)| {
            Ok((seq, status.parse().map_err(|_| StoreError::Corrupt(format!("bad status {status:?}")))?))
        })
        .transpose()
    }

    fn insert(&mut self, new: NewMemory) -> Result<MemoryId, StoreError> {
        Ok(insert_in(self.tx, new)?.1)
    }

    fn update(&mut self, seq: i64, values: &UpdateValues<'_>) -> Result<(), StoreError> {
        self.tx
            .prepare_cached(
                "UPDATE memories SET importance = :importance, layer = :layer,
                   base_importance = COALESCE(:base, base_importance),
                   metadata = CASE WHEN :source IS NULL THEN metadata ELSE json_set(metadata, '$.importance_source', :source) END,
                   recall_count = recall_count + :recalls, access_frequency = access_frequency + :frequency,
                   decay_factor = COALESCE(:decay, decay_factor)
                 WHERE seq = :seq",
            )?
            .execute(named_params! {
                ":importance": values.importance,
                ":layer": values.layer.as_str(),
                ":base": values.base,
                ":source": values.source,
                ":recalls": values.add_recalls,
                ":frequency": values.add_frequency,
                ":decay": values.decay_factor,
                ":seq": seq,
            })?;
        Ok(())
    }

    fn archive(&mut self, seq: i64) -> Result<(), StoreError> {
        self.tx.prepare_cached("UPDATE memories SET status = 'archived' WHERE seq = ?1")?.execute([seq])?;
        Ok(())
    }

    fn supersede(&mut self, seq: i64, by: MemoryId) -> Result<(), StoreError> {
        self.tx
            .prepare_cached("UPDATE memories SET status = 'superseded', superseded_by = ?1 WHERE seq = ?2")?
            .execute(params![by.to_string(), seq])?;
        Ok(())
    }

    fn mark_maintained(&mut self, now: Timestamp, through: Option<i64>) -> Result<(), StoreError> {
        self.tx
            .prepare_cached(
                "UPDATE users SET maintained_at = ?1,
                   maintained_seq = max(maintained_seq, COALESCE(?3, (SELECT COALESCE(max(seq), 0) FROM memories WHERE user_row = ?2)))
                 WHERE id = ?2",
            )?
            .execute(params![millis(now), self.user, through])?;
        Ok(())
    }
}

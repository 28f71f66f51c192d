//! What maintenance cycles need from the store: a user's vectors and recent recall
//! queries (FadeMem's relevance), where the user stands in the schedule, who is due, and
//! applying one cycle's plan in one transaction. The SQLite store's `maintain.rs` is the
//! reference; as there, the store decides nothing: [`apply`] carries a plan out under the
//! user's lock and skips every item whose memory stopped being active meanwhile.

use std::collections::HashMap;

use membank_core::event::{EventKind, NewEvent};
use membank_core::{MemoryId, Scope, Status, TenantId, Timestamp, UserId};
use serde_json::json;
use uuid::Uuid;

use super::pool::Tx;
use super::vector::{Vector, VectorRef};
use super::{
    PgStore, append_events, bump_revision, change_status, col, existing_user, label_filter, labels, memory_id, millis,
    parse, scope_uid,
};
use crate::StoreError;
use crate::types::{MaintenanceApplied, MaintenancePlan, MaintenanceState, Replacement};

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

/// The memory's row and status, if it belongs to the user.
fn status_of(tx: &mut Tx<'_>, uid: Uuid, id: MemoryId) -> Result<Option<(i64, Status)>, StoreError> {
    let row = tx.query_opt("SELECT seq, status FROM memories WHERE uid = $1 AND id = $2", &[&uid, &id.as_uuid()])?;
    row.map(|row| Ok((col(&row, 0)?, parse("status", &col::<String>(&row, 1)?)?))).transpose()
}

pub(super) fn apply(store: &PgStore, scope: &Scope, plan: MaintenancePlan) -> Result<MaintenanceApplied, StoreError> {
    store.pool.write(|tx| {
        let uid = existing_user(tx, scope)?;
        let now = plan.now;
        let mut applied = MaintenanceApplied::default();
        let mut status_changed = false;

        // New memories first, so supersessions can point at them.
        let mut inserted: Vec<Option<MemoryId>> = Vec::with_capacity(plan.insert.len());
        for (new, kind, data) in plan.insert {
            // A fusion of sources that are no longer all active is not made.
            let mut sources_active = true;
            for source in &new.memory.derived_from {
                if !matches!(status_of(tx, uid, *source)?, Some((_, Status::Active))) {
                    sources_active = false;
                }
            }
            if !sources_active {
                applied.skipped += 1;
                inserted.push(None);
                continue;
            }
            let (_, id) = store.insert_in(tx, uid, new)?;
            append_events(tx, uid, &[NewEvent::about(id, kind, now, data)])?;
            applied.inserted += 1;
            inserted.push(Some(id));
        }

        for update in plan.updates {
            let Some((seq, Status::Active)) = status_of(tx, uid, update.id)? else {
                applied.skipped += 1;
                continue;
            };
            let (base, source) = match &update.base_importance {
                Some((value, source)) => (Some(value.clamp(0.0, 1.0)), Some(source.as_str())),
                None => (None, None),
            };
            let importance = if update.importance.is_finite() { update.importance.clamp(0.0, 1.0) } else { 0.0 };
            let frequency = if update.add_frequency.is_finite() { update.add_frequency.max(0.0) } else { 0.0 };
            let decay = update.decay_factor.filter(|v| v.is_finite() && *v > 0.0);
            tx.execute(
                "UPDATE memories SET importance = $3, layer = $4, base_importance = coalesce($5, base_importance),
                   metadata = CASE WHEN $6::text IS NULL THEN metadata ELSE jsonb_set(metadata, '{importance_source}', to_jsonb($6::text)) END,
                   recall_count = recall_count + $7, access_frequency = access_frequency + $8, decay_factor = coalesce($9, decay_factor)
                 WHERE uid = $1 AND seq = $2",
                &[&uid, &seq, &importance, &update.layer.as_str(), &base, &source, &i64::from(update.add_recalls), &frequency, &decay],
            )?;
            let events: Vec<NewEvent> = update.events.into_iter().map(|(kind, data)| NewEvent::about(update.id, kind, now, data)).collect();
            append_events(tx, uid, &events)?;
        }

        for (id, data) in plan.archive {
            let Some((seq, Status::Active)) = status_of(tx, uid, id)? else {
                applied.skipped += 1;
                continue;
            };
            change_status(tx, uid, &[seq], Status::Archived, None)?;
            append_events(tx, uid, &[NewEvent::about(id, EventKind::Archived, now, data)])?;
            applied.archived += 1;
            status_changed = true;
        }

        for supersession in plan.supersede {
            let by = match supersession.by {
                Replacement::Existing(id) => Some(id),
                Replacement::Inserted(index) => inserted.get(index).copied().flatten(),
            };
            let Some(by) = by else {
                applied.skipped += 1;
                continue;
            };
            let old = status_of(tx, uid, supersession.old)?;
            let winner = status_of(tx, uid, by)?;
            let (Some((seq, Status::Active)), Some((_, Status::Active))) = (old, winner) else {
                applied.skipped += 1;
                continue;
            };
            change_status(tx, uid, &[seq], Status::Superseded, Some(by))?;
            let mut data = supersession.data;
            if let Some(object) = data.as_object_mut() {
                object.insert("by".into(), json!(by.to_string()));
                object.insert("previous_status".into(), json!("active"));
            }
            append_events(tx, uid, &[NewEvent::about(supersession.old, EventKind::Superseded, now, data)])?;
            applied.superseded += 1;
            status_changed = true;
        }

        if status_changed {
            bump_revision(tx, uid)?;
        }
        tx.execute(
            "UPDATE users SET maintained_at = $2, maintained_seq = (SELECT coalesce(max(seq), 0) FROM memories WHERE uid = $1) WHERE uid = $1",
            &[&uid, &millis(now)],
        )?;
        let mut summary = plan.summary;
        if let Some(object) = summary.as_object_mut() {
            object.insert("skipped_items".into(), json!(applied.skipped));
        }
        append_events(tx, uid, &[NewEvent { memory_id: None, kind: EventKind::Maintained, at: now, data: summary }])?;
        Ok(applied)
    })
}

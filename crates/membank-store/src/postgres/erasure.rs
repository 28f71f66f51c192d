//! Erasure: a memory, and transitively every memory made from it (`derived_from` names
//! it) or replaced by it (`superseded_by` it), loses its content, texts, metadata and
//! vector in one transaction, keeps a content-free tombstone and an `erased`
//! event naming the memory whose erasure reached it, exactly as in the SQLite store
//! (`sqlite/erasure.rs`, whose rules this mirrors: LLM-written `reason`s are removed from
//! its events, stored idempotent answers that quoted it are dropped, a user whose summary
//! was erased this way is marked `resummarize_due`).
//!
//! What is not the same: the bytes. SQLite zeroes freed space (`secure_delete`) and
//! truncates its WAL; PostgreSQL keeps the old row versions (with the text) in the table
//! files until VACUUM — autovacuum, or an operator's — removes them, and in WAL segments
//! and base backups until those are recycled. After a commit no query, index or search can
//! return the text (each server's search cache reloads a user after an erasure), but a file-level copy taken before VACUUM can still hold it. An
//! operator who must guarantee physical removal runs `VACUUM memories, embeddings,
//! events` after erasures and keeps WAL archives and backups under the same
//! retention rule.

use std::collections::{BTreeSet, VecDeque};

use membank_core::event::{EventKind, NewEvent};
use membank_core::{Kind, Memory, MemoryId, Scope, Status, Timestamp};
use serde_json::json;
use uuid::Uuid;

use super::pool::Tx;
use super::{PgStore, append_events, bump_revision, col, existing_user, fetch_one, memory_id, not_found_as, parse};
use crate::StoreError;

/// Erases `id` and everything that reached it; returns the root's tombstone.
pub(super) fn erase(store: &PgStore, scope: &Scope, id: MemoryId, now: Timestamp) -> Result<Memory, StoreError> {
    store.pool.write(|tx| {
        let uid = existing_user(tx, scope).map_err(not_found_as(id))?;
        let (seq, root) = fetch_one(tx, uid, scope, id)?;
        if root.status == Status::Erased {
            return Ok(root);
        }
        let closure = reached_from(tx, uid, (seq, id, root.status, root.kind))?;
        let cascaded: Vec<String> = closure.iter().skip(1).map(|(_, id, _, _)| id.to_string()).collect();
        let mut derived_erased = false;
        let mut events = Vec::with_capacity(closure.len());
        for (index, (seq, memory_id, status, kind)) in closure.iter().enumerate() {
            erase_row(tx, uid, *seq, *memory_id)?;
            derived_erased |= index > 0 && is_summary(*kind);
            let data = if index == 0 {
                json!({ "previous_status": status.as_str(), "cascaded": cascaded })
            } else {
                json!({ "previous_status": status.as_str(), "cascade_of": id.to_string() })
            };
            events.push(NewEvent::about(*memory_id, EventKind::Erased, now, data));
        }
        append_events(tx, uid, &events)?;
        if derived_erased {
            tx.execute("UPDATE users SET resummarize_due = true WHERE uid = $1", &[&uid])?;
        }
        bump_revision(tx, uid)?;
        Ok(fetch_one(tx, uid, scope, id)?.1)
    })
}

/// Kinds that `summarize` makes and would make again.
fn is_summary(kind: Kind) -> bool {
    matches!(kind, Kind::DailySummary | Kind::DailyPortrait | Kind::GlobalSummary | Kind::GlobalPortrait)
}

/// The root and every memory reached from it through `derived_from` or `superseded_by`,
/// breadth first, each once, erased ones skipped.
fn reached_from(
    tx: &mut Tx<'_>,
    uid: Uuid,
    root: (i64, MemoryId, Status, Kind),
) -> Result<Vec<(i64, MemoryId, Status, Kind)>, StoreError> {
    let mut out = vec![root];
    let mut seen: BTreeSet<MemoryId> = BTreeSet::from([root.1]);
    let mut queue = VecDeque::from([root.1]);
    while let Some(current) = queue.pop_front() {
        let rows = tx.query(
            "SELECT m.seq, m.id, m.status, m.kind FROM memories m
             WHERE m.uid = $1 AND m.status <> 'erased' AND (m.superseded_by = $2 OR m.derived_from @> ARRAY[$2]::uuid[])
             ORDER BY m.seq",
            &[&uid, &current.as_uuid()],
        )?;
        for row in rows {
            let found = memory_id(col(&row, 1)?)?;
            if seen.insert(found) {
                out.push((
                    col(&row, 0)?,
                    found,
                    parse("status", &col::<String>(&row, 2)?)?,
                    parse("kind", &col::<String>(&row, 3)?)?,
                ));
                queue.push_back(found);
            }
        }
    }
    Ok(out)
}

fn erase_row(tx: &mut Tx<'_>, uid: Uuid, seq: i64, id: MemoryId) -> Result<(), StoreError> {
    tx.execute(
        "UPDATE memories SET content = NULL, user_text = NULL, assistant_text = NULL, metadata = '{}', status = 'erased' WHERE uid = $1 AND seq = $2",
        &[&uid, &seq],
    )?;
    tx.execute("DELETE FROM embeddings WHERE uid = $1 AND seq = $2", &[&uid, &seq])?;
    // Events are content-free but for reasons an LLM wrote (conflicts), which may quote it.
    tx.execute(
        "UPDATE events SET data = data - 'reason' WHERE uid = $1 AND memory_id = $2 AND data ? 'reason'",
        &[&uid, &id.as_uuid()],
    )?;
    // A stored idempotent answer that quoted it: the ids stay (a retry still stores
    // nothing), the answer is rebuilt from the tombstones.
    tx.execute(
        "UPDATE idempotency_keys SET response = NULL WHERE uid = $1 AND response IS NOT NULL AND $2 = ANY(memory_ids)",
        &[&uid, &id.as_uuid()],
    )?;
    Ok(())
}

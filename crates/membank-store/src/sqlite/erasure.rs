//! Erasure that leaves no copy behind. Erasing a memory also erases, transitively, every
//! memory made from it (summaries and portraits whose `derived_from` names it, fused
//! memories) and every older version it replaced (`superseded_by` it: the text before an
//! edit, a summary's earlier versions, near-duplicates merged into it), because each of
//! them may quote the erased text. Each loses its content, metadata, vector and index
//! entry and keeps a tombstone and an `erased` event naming the memory whose erasure
//! reached it.
//!
//! The bytes go too, not only the rows: the writer runs with `secure_delete` (freed
//! space is zeroed), the full-text index is optimised after an erasure (FTS5 keeps a
//! deleted row's terms in its segments until they are merged, and `optimize` merges them
//! all), stored idempotent answers that quoted an erased memory are dropped, LLM-written
//! reasons in its events are removed, and the WAL is checkpointed and truncated once the
//! transaction commits, so no older page image survives in `-wal`.
//!
//! A user whose summary or portrait was erased this way is marked `resummarize_due`: the
//! next summarize run (or maintenance cycle with an LLM) makes them again from what remains.

use std::collections::{BTreeSet, VecDeque};

use membank_core::event::{EventKind, NewEvent};
use membank_core::{Kind, Memory, MemoryId, Scope, Status, Timestamp};
use rusqlite::{Transaction, params};
use serde_json::json;

use super::{SqliteStore, append_event, bump_revision, fetch_one};
use crate::StoreError;

/// Erases `id` and everything that reached it; returns the root's tombstone.
pub(super) fn erase(store: &SqliteStore, scope: &Scope, id: MemoryId, now: Timestamp) -> Result<Memory, StoreError> {
    let (memory, erased) = store.write(|tx| {
        let user = SqliteStore::existing_user(tx, scope).map_err(|_| StoreError::memory_not_found(id))?;
        let (seq, root) = fetch_one(tx, user, scope, id)?;
        if root.status == Status::Erased {
            return Ok((root, 0));
        }
        let closure = reached_from(tx, user, seq, id)?;
        let mut derived_erased = false;
        let cascaded: Vec<String> = closure.iter().skip(1).map(|(_, id, _, _)| id.to_string()).collect();
        for (index, (seq, memory_id, status, kind)) in closure.iter().enumerate() {
            erase_row(tx, user, *seq, *memory_id)?;
            derived_erased |= index > 0 && is_summary(*kind);
            let data = if index == 0 {
                json!({ "previous_status": status.as_str(), "cascaded": cascaded })
            } else {
                json!({ "previous_status": status.as_str(), "cascade_of": id.to_string() })
            };
            append_event(tx, user, &NewEvent::about(*memory_id, EventKind::Erased, now, data))?;
        }
        if derived_erased {
            tx.prepare_cached("UPDATE users SET resummarize_due = 1 WHERE id = ?1")?.execute([user])?;
        }
        // FTS5 keeps a deleted row's terms in its segments until they are merged.
        tx.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')", [])?;
        bump_revision(tx, user)?;
        Ok((fetch_one(tx, user, scope, id)?.1, closure.len()))
    })?;
    if erased > 0 {
        store.checkpoint_truncate()?;
    }
    Ok(memory)
}

/// Kinds that `summarize` makes and would make again.
fn is_summary(kind: Kind) -> bool {
    matches!(kind, Kind::DailySummary | Kind::DailyPortrait | Kind::GlobalSummary | Kind::GlobalPortrait)
}

/// The root and every memory reached from it through `derived_from` (memories made from
/// it) or `superseded_by` (versions it replaced), breadth first, each once, erased ones
/// skipped.
fn reached_from(
    tx: &Transaction<'_>,
    user: i64,
    seq: i64,
    id: MemoryId,
) -> Result<Vec<(i64, MemoryId, Status, Kind)>, StoreError> {
    let root: (String, String) =
        tx.query_row("SELECT status, kind FROM memories WHERE seq = ?1", [seq], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let parse = |status: String, kind: String| -> Result<(Status, Kind), StoreError> {
        Ok((
            status.parse().map_err(|_| StoreError::Corrupt(format!("bad status {status:?}")))?,
            kind.parse().map_err(|_| StoreError::Corrupt(format!("bad kind {kind:?}")))?,
        ))
    };
    let (status, kind) = parse(root.0, root.1)?;
    let mut out = vec![(seq, id, status, kind)];
    let mut seen: BTreeSet<MemoryId> = BTreeSet::from([id]);
    let mut queue = VecDeque::from([id]);
    while let Some(current) = queue.pop_front() {
        let mut stmt = tx.prepare_cached(
            "SELECT m.seq, m.id, m.status, m.kind FROM memories m
             WHERE m.user_row = ?1 AND m.status != 'erased'
               AND (m.superseded_by = ?2 OR EXISTS (SELECT 1 FROM json_each(m.derived_from) j WHERE j.value = ?2))",
        )?;
        let rows = stmt.query_map(params![user, current.to_string()], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?))
        })?;
        for row in rows {
            let (seq, found, status, kind) = row?;
            let found: MemoryId = found.parse().map_err(|_| StoreError::Corrupt(format!("bad memory id {found:?}")))?;
            if seen.insert(found) {
                let (status, kind) = parse(status, kind)?;
                out.push((seq, found, status, kind));
                queue.push_back(found);
            }
        }
    }
    Ok(out)
}

fn erase_row(tx: &Transaction<'_>, user: i64, seq: i64, id: MemoryId) -> Result<(), StoreError> {
    tx.prepare_cached("UPDATE memories SET content = NULL, user_text = NULL, assistant_text = NULL, metadata = '{}', status = 'erased' WHERE seq = ?1 AND user_row = ?2")?
        .execute(params![seq, user])?;
    tx.prepare_cached("DELETE FROM embeddings WHERE memory_seq = ?1")?.execute([seq])?;
    tx.prepare_cached("DELETE FROM memory_fts WHERE rowid = ?1")?.execute([seq])?;
    // Events are content-free but for reasons an LLM wrote (conflicts), which may quote it.
    tx.prepare_cached("UPDATE events SET data = json_remove(data, '$.reason') WHERE user_row = ?1 AND memory_id = ?2 AND json_extract(data, '$.reason') IS NOT NULL")?
        .execute(params![user, id.to_string()])?;
    // A stored idempotent answer that quoted it: the ids stay (a retry still stores
    // nothing), the answer is rebuilt from the tombstones.
    tx.prepare_cached("UPDATE idempotency_keys SET response = NULL WHERE user_row = ?1 AND response IS NOT NULL AND EXISTS (SELECT 1 FROM json_each(memory_ids) j WHERE j.value = ?2)")?
        .execute(params![user, id.to_string()])?;
    Ok(())
}
